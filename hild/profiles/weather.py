"""Weather presets: TOML files in profiles/weather/ read into checked, immutable specs.

Every error names the file, the key, the value and what was expected; every problem of a file
is reported at once.
"""

from __future__ import annotations

import math

from hild.builtin import builtin_candidates, builtin_folder
from hild.config import FileKind, Problems, Reading, Section, load_toml
from hild.environment.weather import (
    GUST_MODELS,
    WAVE_SPECTRA,
    CurrentSpec,
    GaussMarkov,
    GustSpec,
    WaveSpec,
    Weather,
    WindSpec,
)

WEATHER_DIR = builtin_folder("profiles/weather")


PRESETS = FileKind(
    "weather",
    "preset",
    WEATHER_DIR,
    "HILD_WEATHER_PATH",
    "weather preset",
    searched=builtin_candidates("profiles/weather"),
)


def load_weather(name_or_path: str) -> Weather:
    """Read and check a weather preset."""
    path = PRESETS.resolve(name_or_path)
    root = Section(load_toml(path), path)
    return read_weather(root, path.stem, str(path))


def read_weather(root: Section, name: str, source: str) -> Weather:
    """A Weather from an open TOML table (a preset file), with every problem reported at once."""

    def table(name: str) -> Section:
        return root.table(name) or Section({}, root.file, name)

    problems = Problems()
    description = problems.attempt(root.string, "description", "", default="")
    air_density = problems.attempt(_air_density, table("air"), default=1.225)
    wind = problems.attempt(_wind, table("wind"), default=WindSpec())
    current = problems.attempt(_current, table("current"), default=CurrentSpec())
    waves = problems.attempt(_waves, table("waves"), wind.from_deg, default=WaveSpec())
    problems.attempt(root.finish)
    problems.raise_any()
    return Weather(
        preset=name,
        description=description,
        source=source,
        air_density=air_density,
        wind=wind,
        current=current,
        waves=waves,
    )


def _air_density(air: Section) -> float:
    density = air.number("density", 1.225, lo=0.9, hi=1.5, unit="kg/m^3")
    air.finish()
    return density


def _gauss_markov(s: Section | None, unit: str, deg: bool = False) -> GaussMarkov:
    if s is None:
        return GaussMarkov()
    suffix = "_deg" if deg else ""
    hi = 180.0 if deg else 50.0
    sigma = s.number(f"sigma{suffix}", 0.0, lo=0.0, hi=hi, unit=unit)
    gm = GaussMarkov(
        sigma=sigma,
        time_constant=s.number("time_constant", 600.0, positive=True, unit="s"),
        max_deviation=s.number(f"max_deviation{suffix}", 3.0 * sigma, lo=0.0, hi=hi, unit=unit),
    )
    s.finish()
    return gm


def _wind(s: Section) -> WindSpec:
    """The [wind] table: the mean, its slow changes and its gusts, each read on its own."""
    problems = Problems()
    r = Reading(problems)
    speed = r.get("speed", s.number, "speed", 0.0, lo=0.0, hi=80.0, unit="m/s", default=0.0)
    from_deg = r.get(
        "from_deg", s.number, "from_deg", 0.0, lo=-360.0, hi=360.0, unit="deg", default=0.0
    )
    slow = r.get("slow", lambda: _gauss_markov(s.table("slow"), "m/s"), default=GaussMarkov())
    direction = r.get(
        "direction",
        lambda: _gauss_markov(s.table("direction"), "deg", deg=True),
        default=GaussMarkov(),
    )
    gust = r.get("gust", _gust, s, default=GustSpec())
    problems.attempt(s.finish)
    problems.raise_any()
    return WindSpec(speed=speed, from_deg=from_deg, slow=slow, direction=direction, gust=gust)


def _gust(s: Section) -> GustSpec:
    g = s.table("gust")
    gust = GustSpec()
    if g is not None:
        model = g.string("model", "none", choices=GUST_MODELS)
        values: dict[str, float] = {}
        if model == "harris":
            values["length"] = g.number("length", 1800.0, positive=True, unit="m")
            values["kappa"] = g.number("kappa", 0.0026, positive=True)
        if model == "forristall":
            values["a"] = g.number("a", 42.0, positive=True)
            values["b"] = g.number("b", 63.0, positive=True)
            values["wave_factor"] = g.number("wave_factor", 1.0, positive=True)
            if abs(values["a"] - 2.0 * values["b"] / 3.0) > 1e-6 * values["b"]:
                raise g.error(
                    "a",
                    values["a"],
                    f"A = 2B/3 = {2 * values['b'] / 3:g} (wind note "
                    "eq. 3: otherwise the variance is not sigma^2)",
                )
        if model in ("harris", "forristall"):
            values["f_max"] = g.number("f_max", 0.0, lo=0.0, unit="Hz")
            values["period"] = g.number("period", 3600.0, lo=10.0, hi=86400.0, unit="s")
        if model == "vrx":
            values["sigma"] = g.number("sigma", positive=True, unit="m/s")
            values["time_constant"] = g.number("time_constant", 2.0, positive=True, unit="s")
        if model == "random_walk":
            values["step"] = g.number("step", 0.009, positive=True, unit="m/s")
            values["interval"] = g.number("interval", 0.1, positive=True, unit="s")
            values["max_deviation"] = g.number("max_deviation", 5.0, positive=True, unit="m/s")
        g.finish()
        gust = GustSpec(model=model, **values)
    return gust


def _current(s: Section) -> CurrentSpec:
    problems = Problems()
    r = Reading(problems)
    spec = CurrentSpec(
        speed=r.get("speed", s.number, "speed", 0.0, lo=0.0, hi=10.0, unit="m/s", default=0.0),
        to_deg=r.get(
            "to_deg", s.number, "to_deg", 0.0, lo=-360.0, hi=360.0, unit="deg", default=0.0
        ),
        slow=r.get("slow", lambda: _gauss_markov(s.table("slow"), "m/s"), default=GaussMarkov()),
        direction=r.get(
            "direction",
            lambda: _gauss_markov(s.table("direction"), "deg", deg=True),
            default=GaussMarkov(),
        ),
    )
    problems.attempt(s.finish)
    problems.raise_any()
    return spec


# the keys of [waves] that shape a sea whose height hs gives
WAVE_SETTINGS = (
    "spectrum",
    "omega_peak",
    "peak_period",
    "gamma",
    "from_deg",
    "components",
    "spreading",
    "damping",
)


def _waves(s: Section, wind_from_deg: float) -> WaveSpec:
    hs = s.number("hs", 0.0, lo=0.0, hi=30.0, unit="m")
    if hs == 0.0:
        _no_settings_without_height(s)
    spectrum = s.string("spectrum", "ittc" if hs > 0.0 else "none", choices=WAVE_SPECTRA)
    omega_peak = 0.0
    if s.has("peak_period") and s.has("omega_peak"):
        raise s.error("peak_period", s.raw("peak_period"), "either omega_peak or peak_period")
    if s.has("peak_period"):
        omega_peak = 2.0 * math.pi / s.number("peak_period", lo=1.0, hi=30.0, unit="s")
    elif s.has("omega_peak") or (spectrum != "none" and hs > 0.0):
        omega_peak = s.number("omega_peak", lo=0.2, hi=6.3, unit="rad/s")
    spec = WaveSpec(
        spectrum=spectrum,
        hs=hs,
        omega_peak=omega_peak,
        gamma=s.number("gamma", 3.3, lo=1.0, hi=10.0),
        from_deg=s.number("from_deg", wind_from_deg, lo=-360.0, hi=360.0, unit="deg"),
        components=s.integer("components", 32, lo=1),
        spreading=s.boolean("spreading", False),
        damping=s.number("damping", 0.1, positive=True, hi=1.0),
    )
    if spec.components > 512:
        raise s.error("components", spec.components, "at most 512 wave components")
    s.finish()
    return spec


def _no_settings_without_height(s: Section) -> None:
    """[waves] without a height has no waves: a setting of theirs would change nothing, so
    it is refused (as a bench's hs is on a preset without a wave spectrum), each one named;
    ``spectrum = "none"`` says there are none and may stay."""
    problems = Problems()
    for key in WAVE_SETTINGS:
        if s.has(key) and not (key == "spectrum" and s.data[key] == "none"):
            problems.add(
                s.error(
                    key,
                    s.data[key],
                    f"a wave height with it ({s.key('hs')} "
                    "greater than 0): waves need one, and without it this "
                    "changes nothing",
                )
            )
    s.skip(*WAVE_SETTINGS)  # (read next, when none is refused)
    problems.attempt(s.finish)
    problems.raise_any()
