"""The environment of one run: a weather and a vessel turned into the compiled step's arrays.

Each random process draws from its own stream, derived from the run's seed and
the process' name, so the same seed gives the same wind whatever else (waves,
sensors, another vessel) is configured.
"""

from __future__ import annotations

import math
import zlib
from typing import Protocol

import numpy as np

from hild.environment import layout as EL
from hild.environment import spectra
from hild.environment.representation import band_edges, harmonic_table, wave_components
from hild.environment.weather import GaussMarkov, Weather
from hild.environment.wind import REFERENCE_HEIGHT, height_factor

NOISE_BLOCK = 1000  # steps of white noise drawn at a time per channel
SLOW_PERIOD = 0.1  # [s] between moves of the slow Gauss-Markov processes (minutes-long)
MAX_TABLE_STEPS = 1 << 23  # longest gust table (64 MiB) before the period is capped


def stream(seed: int, name: str) -> np.random.Generator:
    """The random stream of one named process of a run."""
    return np.random.default_rng(
        np.random.SeedSequence(seed, spawn_key=(zlib.crc32(b"env:" + name.encode()),))
    )


def wind_ned_of(out: np.ndarray) -> tuple[float, float]:
    """Air velocity at 10 m, north and east [m/s], from an environment's outputs (``O``, or a
    copy of them taken in a tick: the recorder's sample)."""
    to = float(out[EL.O_WIND_FROM]) + math.pi  # (Python floats: numpy's scalars' arithmetic,
    s = float(out[EL.O_WIND_SPEED])  # the same to the bit, is several times slower)
    return s * math.cos(to), s * math.sin(to)


def current_ned_of(out: np.ndarray) -> tuple[float, float]:
    """Water velocity, north and east [m/s], from an environment's outputs (``O``)."""
    s = float(out[EL.O_CUR_SPEED])
    to = float(out[EL.O_CUR_TO])
    return s * math.cos(to), s * math.sin(to)


def in_radians(direction: GaussMarkov) -> GaussMarkov:
    """A direction process given in degrees, in radians."""
    return GaussMarkov(
        math.radians(direction.sigma),
        direction.time_constant,
        math.radians(direction.max_deviation),
    )


class WindLoad(Protocol):
    """What the wind-force models read of a hull's wind-load data (a profile's WindLoad has
    it): Blendermann's (thesis eqs 2.57-2.61), the symmetric (2.62-2.67) or VRX's (eqs 23-25)."""

    @property
    def model(self) -> str: ...
    @property
    def height(self) -> float: ...
    @property
    def length(self) -> float: ...
    @property
    def frontal_area(self) -> float: ...
    @property
    def lateral_area(self) -> float: ...
    @property
    def c_x(self) -> float: ...
    @property
    def c_y(self) -> float: ...
    @property
    def c_n(self) -> float: ...
    @property
    def side_centre_height(self) -> float: ...
    @property
    def side_centre_ahead(self) -> float: ...
    @property
    def cd_transverse(self) -> float: ...
    @property
    def cd_lateral_head(self) -> float: ...
    @property
    def cd_lateral_tail(self) -> float: ...
    @property
    def delta(self) -> float: ...
    @property
    def kappa(self) -> float: ...


class Hull(Protocol):
    """What the environment needs of a vessel (a profile's Vessel has it): the wind-load data
    (None for none), the length, the wave-force gains in surge, sway and yaw, the mass matrix
    M = M_RB + M_A and the restoring matrix G (for the wave forces' scales)."""

    @property
    def wind(self) -> WindLoad | None: ...
    @property
    def length(self) -> float: ...
    @property
    def wave_gains(self) -> tuple[float, float, float]: ...
    @property
    def G(self) -> np.ndarray: ...
    @property
    def M(self) -> np.ndarray: ...


class Environment:
    """Wind, current and waves for one vessel at one step size, ready for the compiled loop."""

    def __init__(
        self,
        weather: Weather,
        vessel: Hull,
        dt: float,
        seed: int = 0,
        duration: float | None = None,
    ):
        self.weather = weather
        self.vessel = vessel
        self.dt = float(dt)
        self.seed = int(seed)
        self.notes: list[str] = []  # what a user should know about this realization
        self.gust_period: float | None = None  # [s] of a spectral gust's table
        self.gust_variance = 0.0  # the table's mean square [(m/s)^2]
        self.wave_variance = 0.0  # sum of A_i^2 / 2 over the wave components [m^2]
        w = weather.wind
        has_table = w.gust.model in ("harris", "forristall") and w.speed > 0.0
        self._allocate(self._gust_table(duration) if has_table else np.zeros(1))
        self.W = np.zeros((EL.W_ROWS, 0))
        self.noise = np.zeros((EL.N_CHANNELS, NOISE_BLOCK))
        self.cursor = NOISE_BLOCK  # empty: the first request refills
        self._streams: dict[int, np.random.Generator] = {}
        # the largest divisor of the noise block that keeps the slow period
        self.slow_every = max(
            d
            for d in range(1, NOISE_BLOCK + 1)
            if NOISE_BLOCK % d == 0 and d * self.dt <= SLOW_PERIOD + 1e-12 or d == 1
        )
        self.E[EL.E_SLOW_EVERY] = self.slow_every
        self._build_wind()
        self._build_current()
        self._build_wind_force()
        self._build_waves()

    def _allocate(self, gust: np.ndarray) -> None:
        """One buffer B for the kernels; E, S, O and the gust table are views into it."""
        o0 = EL.E_SIZE + EL.S_SIZE
        g0 = o0 + EL.O_SIZE
        self.B = np.zeros(g0 + len(gust))
        self.E = self.B[: EL.E_SIZE]
        self.S = self.B[EL.E_SIZE : o0]
        self.O = self.B[o0:g0]
        self.gust = self.B[g0:]
        self.gust[:] = gust
        self.E[EL.E_GUST_N] = len(gust)
        self.S[EL.S_OUT_K] = -1.0
        # no direction's unit vector is cached yet (NaN equals no angle)
        self.S[EL.S_WIND_ANGLE] = math.nan
        self.S[EL.S_CUR_ANGLE] = math.nan

    # --- building ---------------------------------------------------------------------
    def _gauss_markov(
        self, base: int, mean: float, gm: GaussMarkov, floor: float | None, channel: int
    ) -> None:
        """Fill one process' parameters; a mean-only process draws no noise."""
        self.E[base + EL.GM_MEAN] = mean
        if not gm.active:
            return
        a = math.exp(-self.slow_every * self.dt / gm.time_constant)
        self.E[base + EL.GM_A] = a
        self.E[base + EL.GM_B] = gm.sigma * math.sqrt(1.0 - a * a)
        lo = -gm.max_deviation if floor is None else -min(gm.max_deviation, mean - floor)
        self.E[base + EL.GM_LO] = lo
        self.E[base + EL.GM_HI] = gm.max_deviation
        self._streams[channel] = stream(self.seed, EL.NOISE_STREAMS[channel])

    def _build_wind(self) -> None:
        w = self.weather.wind
        self._gauss_markov(EL.E_WIND, w.speed, w.slow, 0.0, EL.N_WIND)
        self._gauss_markov(
            EL.E_WDIR, math.radians(w.from_deg), in_radians(w.direction), None, EL.N_WDIR
        )
        g = w.gust
        if g.model == "none" or w.speed <= 0.0:
            return
        if g.model in ("harris", "forristall"):
            self.E[EL.E_GUST_KIND] = EL.GUST_TABLE  # the table is in B already
        elif g.model == "vrx":
            self.E[EL.E_GUST_KIND] = EL.GUST_VRX
            self.E[EL.E_GUST_A] = self.dt / g.time_constant
            self.E[EL.E_GUST_B] = g.sigma * math.sqrt(2.0 * g.time_constant / self.dt)  # eq. 15
            self._streams[EL.N_GUST] = stream(self.seed, EL.NOISE_STREAMS[EL.N_GUST])
        elif g.model == "random_walk":
            self.E[EL.E_GUST_KIND] = EL.GUST_RANDOM_WALK
            self.E[EL.E_GUST_A] = g.step
            self.E[EL.E_GUST_B] = max(1, round(g.interval / self.dt))
            self.E[EL.E_GUST_C] = g.max_deviation
            self._streams[EL.N_GUST] = stream(self.seed, EL.NOISE_STREAMS[EL.N_GUST])

    def gust_spectrum(self):
        """The one-sided gust spectrum S(f) [(m/s)^2/Hz] of the weather's table model."""
        w = self.weather.wind
        g = w.gust
        if g.model == "harris":
            return lambda f: spectra.harris(f, w.speed, g.length, g.kappa)
        return lambda f: spectra.forristall(f, w.speed, REFERENCE_HEIGHT, g.a, g.b, g.wave_factor)

    def _gust_table(self, duration: float | None) -> np.ndarray:
        g = self.weather.wind.gust
        period = g.period
        if duration is not None and duration > period:
            period = duration  # the realization must not repeat within the run
        steps = max(4, math.ceil(period / self.dt - 1e-9))
        if steps > MAX_TABLE_STEPS:
            steps = MAX_TABLE_STEPS
        period = steps * self.dt
        if duration is None or duration > period:
            self.notes.append(
                f"the {g.model} gust repeats every {period:.0f} s (wind note eq. 20); "
                "set [wind.gust] period to lengthen it"
            )
        f_max = g.f_max if g.f_max > 0.0 else None
        table, variance = harmonic_table(
            self.gust_spectrum(), period, self.dt, stream(self.seed, "wind.gust.phases"), f_max
        )
        self.gust_period = period
        self.gust_variance = variance
        return table

    def _build_current(self) -> None:
        c = self.weather.current
        self._gauss_markov(EL.E_CUR, c.speed, c.slow, 0.0, EL.N_CUR)
        self._gauss_markov(
            EL.E_CDIR, math.radians(c.to_deg), in_radians(c.direction), None, EL.N_CDIR
        )

    def _build_wind_force(self) -> None:
        E = self.E
        E[EL.E_RHO_AIR] = self.weather.air_density
        load = self.vessel.wind
        if load is None:
            return
        E[EL.E_FORCE_KIND] = {
            "blendermann": EL.FORCE_BLENDERMANN,
            "symmetric": EL.FORCE_SYMMETRIC,
            "vrx": EL.FORCE_VRX,
        }[load.model]
        E[EL.E_HEIGHT_FACTOR] = height_factor(load.height)
        E[EL.E_LOA] = load.length
        E[EL.E_CX], E[EL.E_CY], E[EL.E_CN] = load.c_x, load.c_y, load.c_n
        if load.model == "vrx":
            return
        E[EL.E_AF] = load.frontal_area
        E[EL.E_AL] = load.lateral_area
        if load.model == "symmetric":
            return
        E[EL.E_HL] = load.side_centre_height
        E[EL.E_SL] = load.side_centre_ahead
        E[EL.E_CDT] = load.cd_transverse
        E[EL.E_CDL_HEAD] = load.cd_lateral_head
        E[EL.E_CDL_TAIL] = load.cd_lateral_tail
        E[EL.E_DELTA] = load.delta
        E[EL.E_KAPPA] = load.kappa

    def wave_spectrum(self):
        """The one-sided wave spectrum S(omega) [m^2 s/rad] of the weather."""
        w = self.weather.waves
        if w.spectrum == "ittc":
            return lambda om: spectra.ittc(om, w.hs, w.omega_peak)
        if w.spectrum == "bretschneider":
            return lambda om: spectra.bretschneider(om, w.hs, w.omega_peak)
        if w.spectrum == "jonswap":
            return lambda om: spectra.jonswap(om, w.hs, w.omega_peak, w.gamma)
        return lambda om: spectra.torsethaugen(om, w.hs, 2.0 * math.pi / w.omega_peak)

    def _build_waves(self) -> None:
        w = self.weather.waves
        if not w.active:
            return
        E = self.E
        spectrum = self.wave_spectrum()
        w0 = w.omega_peak
        lo, hi = band_edges(spectrum, 12.0 * w0)
        to = math.radians(w.from_deg + 180.0)
        c = wave_components(
            spectrum,
            w.components,
            lo,
            hi,
            stream(self.seed, "waves.components"),
            to,
            w0,
            w.spreading,
        )
        W = np.zeros((EL.W_ROWS, len(c.amplitude)))
        W[EL.C_AMPLITUDE] = c.amplitude
        W[EL.C_OMEGA] = c.omega
        W[EL.C_KN] = c.k * np.cos(c.direction)
        W[EL.C_KE] = c.k * np.sin(c.direction)
        # phases stand at t = 0 at the vessel's starting point, the origin
        W[EL.W_THETA] = c.phase % (2.0 * math.pi)
        W[EL.W_COS] = np.cos(W[EL.W_THETA])
        W[EL.W_SIN] = np.sin(W[EL.W_THETA])
        self.W = W
        E[EL.E_WAVE_OMEGA_MAX] = float(np.max(c.omega))
        E[EL.E_WAVE_K_MAX] = float(np.max(c.k))
        grid = np.linspace(0.2 * w0, 5.0 * w0, 4001)
        sigma = math.sqrt(float(np.max(spectrum(grid))))
        E[EL.E_WAVE_ON] = 1.0
        E[EL.E_WAVE_OMEGA0] = w0
        E[EL.E_WAVE_LAMBDA] = w.damping
        E[EL.E_WAVE_KW] = 2.0 * w.damping * w0 * sigma  # Fossen (2011), thesis 3.28-3.31
        E[EL.E_WAVE_TO_COS] = math.cos(to)
        E[EL.E_WAVE_TO_SIN] = math.sin(to)
        # Long-wave (Froude-Krylov plus added mass) scale of the horizontal force
        # per metre of elevation, (m + A_ii) omega_0^2, and of the yaw moment from
        # its phase lag along the hull, (m + A_22) omega_0^2 k_0 L^2 / 24; the
        # profile's gains multiply these.
        v = self.vessel
        M = v.M
        k0 = w0 * w0 / spectra.G
        gains = v.wave_gains
        E[EL.E_WAVE_GAIN] = gains[0] * M[0, 0] * w0 * w0
        E[EL.E_WAVE_GAIN + 1] = gains[1] * M[1, 1] * w0 * w0
        E[EL.E_WAVE_GAIN + 2] = gains[2] * M[1, 1] * w0 * w0 * k0 * v.length**2 / 24.0
        E[EL.E_WAVE_G : EL.E_WAVE_G + 9] = v.G[2:5, 2:5].ravel()
        for channel in range(EL.N_TF, EL.N_TF + 3):
            self._streams[channel] = stream(self.seed, EL.NOISE_STREAMS[channel])
        self.wave_variance = float(np.sum(c.amplitude**2) / 2.0)

    def continue_from(self, old: Environment) -> None:
        """Take over a running environment's processes: a weather change in the middle of a run.

        The slow processes keep their deviations, the filters their states and the noise its
        streams; a sea whose spectrum did not change keeps its components and their phases.
        Called at the tick boundary that swaps this environment in (it only copies arrays and
        hands over the noise streams); building it is done off the tick.
        """
        if old.dt != self.dt or old.vessel is not self.vessel:
            raise ValueError("the environment was built for another step or vessel")
        self.S[:] = old.S
        self.O[:] = old.O
        if self.weather.waves == old.weather.waves:
            self.W = old.W
        for channel in self._streams:
            if channel in old._streams:
                self._streams[channel] = old._streams[channel]
        self.cursor = NOISE_BLOCK  # draw fresh noise at the next step

    # --- the shell's side of the noise -----------------------------------------------------
    def noise_window(self, n_steps: int) -> tuple[int, int]:
        """The first noise column for the next steps and how many steps it covers (>= 1)."""
        if self.cursor >= NOISE_BLOCK:
            for channel, rng in self._streams.items():
                n = NOISE_BLOCK // self.slow_every if channel in EL.SLOW_CHANNELS else NOISE_BLOCK
                rng.standard_normal(out=self.noise[channel, :n])
            self.cursor = 0
        return self.cursor, min(n_steps, NOISE_BLOCK - self.cursor)

    # --- what the shell reads ------------------------------------------------------------------
    @property
    def wind_ned(self) -> tuple[float, float]:
        """Air velocity at 10 m, north and east [m/s]."""
        return wind_ned_of(self.O)

    @property
    def current_ned(self) -> tuple[float, float]:
        return current_ned_of(self.O)

    @property
    def elevation(self) -> float:
        """Sea-surface elevation at the vessel, up positive [m]."""
        return float(self.O[EL.O_ELEVATION])

    def summary(self) -> dict:
        """What this realization is, for logs and run summaries."""
        w = self.weather
        out = {
            "preset": w.preset,
            "wind_speed": w.wind.speed,
            "wind_from_deg": w.wind.from_deg,
            "gust": w.wind.gust.model,
            "current_speed": w.current.speed,
            "current_to_deg": w.current.to_deg,
            "waves": w.waves.spectrum if w.waves.active else "none",
            "hs": w.waves.hs,
            "wind_force": "none" if self.vessel.wind is None else self.vessel.wind.model,
        }
        return out
