"""Weather: what the sea and the air do, as immutable specs (the vessel profile says how they
act on the hull). hild/profiles/weather.py reads them from the presets' TOML files."""

from __future__ import annotations

from dataclasses import dataclass, replace

GUST_MODELS = ("none", "harris", "forristall", "vrx", "random_walk")
WAVE_SPECTRA = ("none", "ittc", "bretschneider", "jonswap", "torsethaugen")


@dataclass(frozen=True)
class GaussMarkov:
    """A first-order Gauss-Markov process around a mean, saturated (thesis 2.44-2.45, 2.75-2.78).

    ``sigma`` is the stationary standard deviation and ``time_constant`` is 1/mu;
    the white-noise intensity follows as 2 sigma^2 / time_constant. The value is
    held within ``mean +- max_deviation`` (and at or above ``floor``).
    """

    sigma: float = 0.0
    time_constant: float = 600.0  # [s]
    max_deviation: float = 0.0

    @property
    def active(self) -> bool:
        return self.sigma > 0.0 and self.max_deviation > 0.0


@dataclass(frozen=True)
class GustSpec:
    """The rapidly varying part of the wind speed, one of GUST_MODELS."""

    model: str = "none"
    # harris (thesis eqs 2.46-2.48)
    length: float = 1800.0  # scaling length L [m]
    kappa: float = 0.0026  # sea-surface drag coefficient
    # harris and forristall: the spectral representation's upper frequency and period
    f_max: float = 0.0  # [Hz]; 0 keeps every frequency up to the step's Nyquist frequency
    period: float = 3600.0  # [s]; the realization repeats after this (wind note eq. 20)
    # forristall (wind note eqs 1-15)
    a: float = 42.0
    b: float = 63.0
    wave_factor: float = 1.0  # w of eq. 9; 1 for a developed sea
    # vrx first-order gust (VRX paper eqs 12-15)
    sigma: float = 0.0  # [m/s]
    time_constant: float = 2.0  # tau_g [s]
    # random walk (student notes): +-step each interval, held within +-max_deviation
    step: float = 0.009  # [m/s]
    interval: float = 0.1  # [s]
    max_deviation: float = 5.0  # [m/s]


@dataclass(frozen=True)
class WindSpec:
    speed: float = 0.0  # mean at the 10 m reference height [m/s]
    from_deg: float = 0.0  # where the wind comes from, clockwise from north
    slow: GaussMarkov = GaussMarkov()  # slow variation of the mean speed [m/s]
    direction: GaussMarkov = GaussMarkov()  # slow variation of the direction [deg]
    gust: GustSpec = GustSpec()


@dataclass(frozen=True)
class CurrentSpec:
    speed: float = 0.0  # [m/s]
    to_deg: float = 0.0  # where the current sets to, clockwise from north
    slow: GaussMarkov = GaussMarkov()  # [m/s]
    direction: GaussMarkov = GaussMarkov()  # [deg]


@dataclass(frozen=True)
class WaveSpec:
    spectrum: str = "none"
    hs: float = 0.0  # significant wave height [m]
    omega_peak: float = 0.0  # peak frequency [rad/s]
    gamma: float = 3.3  # JONSWAP peak enhancement
    from_deg: float = 0.0  # where the waves come from, clockwise from north
    components: int = 32  # wave components in the elevation (thesis eq. 2.84)
    spreading: bool = False  # directional spreading (VRX paper eqs 7-11)
    damping: float = 0.1  # lambda of the wave-force transfer functions (thesis eqs 3.28-3.30)

    @property
    def active(self) -> bool:
        return self.spectrum != "none" and self.hs > 0.0


@dataclass(frozen=True)
class Weather:
    """One weather: wind, current and waves, and the air they act through."""

    preset: str
    description: str = ""
    source: str = ""
    air_density: float = 1.225  # [kg/m^3], ISA sea level
    wind: WindSpec = WindSpec()
    current: CurrentSpec = CurrentSpec()
    waves: WaveSpec = WaveSpec()
    moved: tuple[str, ...] = ()  # the means a bench moved away from the preset's

    def with_means(
        self,
        wind_speed: float | None = None,
        wind_from_deg: float | None = None,
        current_speed: float | None = None,
        current_to_deg: float | None = None,
        hs: float | None = None,
    ) -> Weather:
        """The same weather around other mean values (bench-file overrides)."""
        wind, current, waves = self.wind, self.current, self.waves
        if wind_speed is not None:
            wind = replace(wind, speed=wind_speed)
        if wind_from_deg is not None:
            wind = replace(wind, from_deg=wind_from_deg)
        if current_speed is not None:
            current = replace(current, speed=current_speed)
        if current_to_deg is not None:
            current = replace(current, to_deg=current_to_deg)
        if hs is not None:
            waves = replace(waves, hs=hs)
        given = {
            "wind speed": wind_speed,
            "wind direction": wind_from_deg,
            "current speed": current_speed,
            "current direction": current_to_deg,
            "Hs": hs,
        }
        moved = tuple(name for name, value in given.items() if value is not None)
        return replace(
            self,
            wind=wind,
            current=current,
            waves=waves,
            moved=tuple(dict.fromkeys(self.moved + moved)),
        )
