"""Bench files: which vessel, weather, place and time, and which devices on which ports.

``load_bench`` reads and checks everything (``hild check``); errors name the file,
the key, the value and what was expected, and all of them are reported at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from hild.clock import MAX_TIME_SCALE, MIN_TIME_SCALE, TIME_SCALE_EXPECTED
from hild.config import (
    ConfigError,
    FileKind,
    MultipleConfigError,
    NotFoundError,
    Problems,
    Reading,
    Section,
    beside,
    load_toml,
    located,
    not_regular,
)
from hild.devices.catalog import (
    MAX_RATE_HZ,
    MIN_RATE_HZ,
    SETTING_CHOICES,
    SETTING_FILES,
    SETTING_LIMITS,
    DeviceType,
    available_device_types,
    load_device_type,
    read_sentences,
    talker,
)
from hild.devices.registry import COMMANDS, FRAMES, KINDS, build_device, models, speaks_n2k
from hild.environment.weather import Weather
from hild.fleet import (
    Boat,
    BoatTable,
    Placed,
    default_dimensions,
    fleet_errors,
    own_identity_settings,
)
from hild.geodesy import DEFAULT_ORIGIN, Origin
from hild.mirror.config import MirrorConfig, read_mirror
from hild.model.layout import METHODS
from hild.model.stability import StepLimit, remembered_step_limit, step_limit
from hild.model.vessel import Vessel
from hild.n2k.bus import BUS_BITS_PER_S, BusLoad
from hild.names import is_name
from hild.profiles import BENCHES
from hild.profiles.vessel import load_profile
from hild.profiles.weather import PRESETS, load_weather
from hild.record.config import RecordConfig, read_record
from hild.rundir import DEFAULT_RUN_DIR, RUN_DIR_EXPECTED, usable_run_dir_name
from hild.sensors.device import DeviceConfig
from hild.sensors.faults import FAULT_KINDS, FaultSpec
from hild.sensors.noise import NoiseSpec
from hild.traffic.read import position_of, read_identity, read_traffic
from hild.traffic.targets import Target
from hild.transport.url import PortSpec, PortUrlError, parse_port_url

DEFAULT_BENCH = "default"
BITS_PER_BYTE = 10  # start + 8 data + stop bits on an asynchronous serial line
MAX_BAUD = 4_000_000  # the fastest rate Linux's termios names (B4000000)
# Start times a run can mean: GPS time begins 1980-01-06; RMC carries a two-digit year and
# the date must stay representable for any run length (datetime ends at 9999).
EARLIEST_START = datetime(1980, 1, 6, tzinfo=UTC)
LATEST_START = datetime(2199, 12, 31, tzinfo=UTC)
# Noise, biases and bias jumps beyond this, in the quantity's own unit (m, deg, m/s, kn),
# describe no instrument: they only overflow the sentence fields.
MAX_ERROR = 1e4


class BenchError(MultipleConfigError):
    """Everything wrong with a bench file, one ConfigError per problem."""


@dataclass(frozen=True)
class PortBudget:
    """Bytes per second a serial line must carry against what its baud rate allows."""

    url: str
    baud: int
    devices: tuple[str, ...]
    bytes_per_s: float

    @property
    def capacity_bytes_per_s(self) -> float:
        return self.baud / BITS_PER_BYTE

    @property
    def load(self) -> float:
        return self.bytes_per_s / self.capacity_bytes_per_s


@dataclass(frozen=True)
class Bench:
    """A checked bench: everything ``hild run`` needs."""

    file: str
    name: str
    vessel: Vessel
    profile: str
    method: str
    weather: Weather
    origin: Origin
    start_time: datetime | None  # None: the wall clock when the run starts
    seed: int
    rate_hz: float
    time_scale: float
    run_dir: Path
    stats_interval: float
    heading_deg: float
    speed: float
    commands: dict[str, float]
    devices: tuple[DeviceConfig, ...]
    budgets: tuple[PortBudget, ...] = field(default=())
    buses: tuple[BusLoad, ...] = field(default=())  # the NMEA 2000 buses (hild/n2k/bus.py)
    mqtt: MirrorConfig | None = None  # the [mqtt] table: the mirror is on when present
    record: RecordConfig | None = None  # the [record] table: recording is on when present
    traffic: tuple[Target, ...] = ()  # the [[traffic]] tables' targets
    # a fleet's [[boat]] tables (hild/fleet.py; the fields above from vessel to commands are
    # then its first boat's); empty for a one-boat bench, whose [vessel] is all there is
    boats: tuple[Boat, ...] = ()


def resolve_bench(name_or_path: str | None) -> Path:
    """A bench file from a path, or a built-in name from ``profiles/bench/``."""
    try:
        return BENCHES.resolve(name_or_path or DEFAULT_BENCH)
    except ConfigError as e:
        raise BenchError([e]) from None


@dataclass
class _Vessel:
    """The [vessel] table as far as it could be read: ``vessel`` is None when the profile
    is wrong, ``unusable`` names the keys whose values are stand-ins."""

    vessel: Vessel | None
    profile: str = ""
    method: str = "rk4"
    heading_deg: float = 0.0
    speed: float = 0.0
    commands: dict[str, float] = field(default_factory=dict)
    unusable: frozenset[str] = frozenset()

    def usable(self, *keys: str) -> bool:
        return not self.unusable.intersection(keys)


@dataclass
class _Device:
    """One [[device]] as far as it could be read: its table, its configuration with stand-ins
    for the keys named in ``unusable``."""

    section: Section
    config: DeviceConfig
    unusable: frozenset[str]

    def usable(self, *keys: str) -> bool:
        return not self.unusable.intersection(keys)

    def error(self, key: str, value: Any, expected: str) -> ConfigError:
        return self.section.error(key, value, expected)

    def end(self) -> tuple[int, ...]:
        """After the device's keys: where a problem of the device as a whole goes."""
        return (*self.section.order, len(self.section.data))


def load_bench(
    name_or_path: str | None = None, *, check_step: bool = True, **overrides: Any
) -> Bench:
    """Read and check a bench file; ``overrides`` replace [bench] keys (from the command line).

    Every key is read even after another failed (with a stand-in value), and every rule
    across keys runs on what could be read, skipped only when a key it needs is wrong: one
    run lists every problem, each once, in the order of the keys in the file.

    ``check_step=False`` checks the loop's step against the vessel's step limit only when an
    earlier run has worked the limit out (working it out compiles the core): every other
    problem of the file, in milliseconds.
    """
    path = resolve_bench(name_or_path)
    return bench_from_document(load_toml(path), path, check_step=check_step, **overrides)


def bench_from_document(
    document: dict[str, Any],
    path: Path,
    *,
    check_step: bool = True,
    other_tables: tuple[str, ...] = (),
    **overrides: Any,
) -> Bench:
    """Check a bench already read as a TOML document (``path`` names it in messages): what
    ``load_bench`` does after reading, and what a scenario does with the bench it builds
    (``other_tables``: the file's tables that are not the bench's, read elsewhere, which an
    unknown table's error lists with the bench's)."""
    root = Section(document, path)
    root.skip(*other_tables)
    problems = Problems()
    general, bench_table = _general(root, overrides, problems)
    origin = _origin(root, problems)
    boats: list[BoatTable] = []
    if root.has("boat"):  # a fleet: the first boat stands for "the vessel" below
        if root.has("vessel"):
            root.skip("vessel")
            expected = "either a [vessel] table (one boat) or [[boat]] tables (a fleet), not both"
            problems.add(root.error("vessel", "a table", expected))
        boats, part = _boats(root, origin, problems)
    else:
        part = _vessel(root, problems)
    weather = _weather(root, problems)
    own = None
    if part.usable("heading_deg", "speed"):  # encounters are placed against these
        own = (math.radians(part.heading_deg), part.speed)
    starts = {  # a fleet's encounters may be placed against any boat's start
        t.boat.name: (t.boat.north, t.boat.east, math.radians(t.boat.heading_deg), t.boat.speed)
        for t in boats
    }
    traffic = read_traffic(root, origin, problems, own, starts or None)
    mqtt = problems.attempt(_mqtt, root)
    # a wrong loop rate is its own problem: the recording's rate is then held to the highest
    record = problems.attempt(_record, root, general.get("rate_hz", 2000.0))
    run_dir = Path(overrides.get("run_dir") or general.get("run_dir", DEFAULT_RUN_DIR))
    read = _devices(root, run_dir, problems)
    problems.attempt(root.finish)
    if boats:
        read = [_with_boat_identity(d, boats) for d in read]
    vessel_of = _vessel_of(part, boats, read)
    _device_rules(read, general, vessel_of, problems, fleet=bool(boats))
    if boats:
        for e in _fleet_errors(boats, read, traffic, run_dir):
            problems.add(e)
    elif any(d.config.boat for d in read):
        for d in read:
            if d.config.boat:
                expected = "a key of a fleet's devices ([[boat]] tables); this bench has one boat"
                problems.add(d.error("boat", d.config.boat, expected))
    if part.vessel is not None and part.usable("method") and "rate_hz" in general:
        from_option = overrides.get("rate_hz") is not None
        limit = (
            step_limit(part.vessel, part.method)
            if check_step
            else remembered_step_limit(part.vessel, part.method)
        )
        for e in _step_errors(path, limit, general["rate_hz"], from_option):
            problems.add(e, at=bench_table.position("rate_hz"))
    budgets = _port_rules(read, origin, run_dir, vessel_of, traffic, problems)
    buses, bus_errors = n2k_buses(read, origin, run_dir)
    for e in bus_errors:
        problems.add(e)
    if problems.errors:
        raise BenchError(problems.in_order())
    assert part.vessel is not None
    return Bench(
        file=str(path),
        name=general["name"],
        vessel=part.vessel,
        profile=part.profile,
        method=part.method,
        weather=weather,
        origin=origin,
        start_time=general["start_time"],
        seed=general["seed"],
        rate_hz=general["rate_hz"],
        time_scale=general["time_scale"],
        run_dir=run_dir,
        stats_interval=general["stats_interval"],
        heading_deg=part.heading_deg,
        speed=part.speed,
        commands=part.commands,
        devices=tuple(d.config for d in read),
        budgets=tuple(budgets),
        buses=tuple(buses),
        mqtt=mqtt,
        record=record,
        traffic=tuple(traffic),
        boats=tuple(t.boat for t in boats),
    )


def _devices(root: Section, run_dir: Path, problems: Problems) -> list[_Device]:
    read: list[_Device] = []
    for section in problems.attempt(root.tables, "device", default=[]) or []:
        name = section.data.get("name")
        if is_name(name):  # errors say which device by its name, not its place
            section.prefix = f"device ({name})"
        read.append(_device(section, run_dir, problems))
    return read


def _vessel_of(
    part: _Vessel, boats: list[BoatTable], read: list[_Device]
) -> Callable[[_Device], Vessel | None]:
    """Each device's vessel: its boat's in a fleet (None for a device on no boat of it, whose
    own error is reported), the bench's vessel otherwise."""
    if not boats:
        return lambda d: part.vessel
    by_name = {t.boat.name: t.boat.vessel for t in boats}
    return lambda d: by_name.get(d.config.boat)


def _with_boat_identity(d: _Device, boats: list[BoatTable]) -> _Device:
    """A fleet's AIS device reports its boat's identity as its own (VDO), in each own_*
    setting the bench does not give itself."""
    boat = next((t.boat for t in boats if t.boat.name == d.config.boat), None)
    if boat is None or not d.usable("settings"):
        return d
    given = d.section.data.get("settings")
    given = given if isinstance(given, dict) else {}
    own = {
        k: v
        for k, v in own_identity_settings(boat).items()
        if k in d.config.settings and k not in given
    }
    if not own:
        return d
    config = replace(d.config, settings={**d.config.settings, **own})
    return _Device(d.section, config, d.unusable)


def _fleet_errors(
    boats: list[BoatTable], read: list[_Device], traffic: list[Target], run_dir: Path
) -> list[ConfigError]:
    """hild/fleet.py's rules on what could be read of the boats and devices."""
    placed = []
    for d in read:
        if not d.usable("name", "boat"):
            continue
        ports = []
        if d.usable("ports"):
            ports = [(url, parse_port_url(url, run_dir).identity) for url in d.config.ports]
        placed.append(Placed(d.config.name, d.config.boat, d.config.model, tuple(ports), d.error))
    mmsis = [t.identity.mmsi for t in traffic]
    return fleet_errors(boats, placed, mmsis, models(FRAMES))


def _boats(root: Section, origin: Origin, problems: Problems) -> tuple[list[BoatTable], _Vessel]:
    """The [[boat]] tables as far as they could be read, and the first boat's [vessel] part
    (what a one-boat bench's [vessel] is to the rest of the bench)."""
    boats: list[BoatTable] = []
    first: _Vessel | None = None
    for section in problems.attempt(root.tables, "boat", default=[]) or []:
        name = section.data.get("name")
        if is_name(name):
            section.prefix = f"boat ({name})"
        r = Reading(problems)
        name = r.get("name", section.name, "name")
        part = _vessel_part(section, problems)
        first = first or part
        start_key = "latitude" if section.has("latitude") else "north"
        what = f"boat {name}'s start"
        start = r.get("north", position_of, section, origin, what, at=section.position(start_key))
        identity = read_identity(section, str(name or "boat"), r)
        problems.attempt(section.finish)
        if part.vessel is None or name is None or start is None or identity is None:
            continue
        if not section.has("dimensions"):
            a, b, c, d = default_dimensions(part.vessel)
            identity = replace(identity, to_bow=a, to_stern=b, to_port=c, to_starboard=d)
        boat = Boat(
            name,
            part.vessel,
            part.profile,
            part.method,
            start[0],
            start[1],
            part.heading_deg,
            part.speed,
            identity,
            part.commands,
        )
        boats.append(BoatTable(boat, section.error, start_key))
    if first is None:
        expected = "at least one [[boat]] table, each a boat with its name and profile"
        problems.add(root.error("boat", [], expected))
        first = _Vessel(None, unusable=frozenset({"profile", "method"}))
    return boats, first


def _device_rules(
    read: list[_Device],
    general: dict[str, Any],
    vessel_of: Callable[[_Device], Vessel | None],
    problems: Problems,
    fleet: bool = False,
) -> None:
    """The rules across a device's keys and the bench's: its rate against the loop's, its
    name against the others', its position against its boat's hull (a fleet's autopilot
    links are one per boat: hild/fleet.py)."""
    loop_rate = general.get("rate_hz")
    for d in read:
        if loop_rate is not None and d.usable("rate_hz") and d.config.rate_hz > loop_rate:
            problems.add(
                d.error(
                    "rate_hz",
                    d.config.rate_hz,
                    f"at most the loop rate, bench.rate_hz = {loop_rate:g} Hz",
                )
            )
    links = [d for d in read if d.config.model in models(FRAMES)]
    for d in [] if fleet else links[1:]:  # one autopilot paces the loop
        expected = (
            f"one {d.config.model} device per bench ({links[0].config.name} is "
            "one already): its frames pace the loop"
        )
        problems.add(d.error("type", d.config.type, expected))
    seen: set[str] = set()
    for d in read:
        if d.usable("name") and d.config.name in seen:
            problems.add(d.error("name", d.config.name, "a name used by one device only"))
        seen.add(d.config.name)
    # a sensor sits on the hull or its mast: within a hull length of the body origin
    # (the vessel's centre of origin, near midships), or 10 m for the smallest boats
    for d in read:
        vessel = vessel_of(d)
        if vessel is None:
            continue
        reach = max(vessel.length, 10.0)
        if d.usable("position") and any(abs(c) > reach for c in d.config.lever_arm):
            problems.add(
                d.error(
                    "position",
                    list(d.config.lever_arm),
                    f"a position [x, y, z] within {reach:g} m of {vessel.name}'s body origin "
                    "on each axis (metres forward, starboard, down)",
                )
            )


def _port_rules(
    read: list[_Device],
    origin: Origin,
    run_dir: Path,
    vessel_of: Callable[[_Device], Vessel | None],
    traffic: list[Target],
    problems: Problems,
) -> list[PortBudget]:
    """What the devices ask of their vessels and of the lines they share; the byte budgets."""
    refused: set[int] = set()  # devices the vessel cannot serve: their feedback is not sized
    for i, d in enumerate(read):
        for e in _command_device_errors(d, vessel_of(d)):
            problems.add(e)
            refused.add(i)
    for e in _shared_command_port_errors(read, run_dir):
        problems.add(e)
    sized = [d for i, d in enumerate(read) if i not in refused]
    budgets, errors = _budgets(sized, origin, run_dir, vessel_of, traffic)
    for e in errors:
        problems.add(e)
    return budgets


START_TIME_EXPECTED = (
    "'wall' or a time from 1980-01-06 (GPS time begins) to 2199-12-31 such as "
    "2026-06-01T12:00:00Z (UTC) or 2026-06-01T14:00:00+02:00"
)


def parse_start_time(value: Any) -> datetime | None:
    """A run's start: None for 'wall' (the clock), else an aware time; a time without an
    offset is UTC. ValueError says what was expected."""
    if value == "wall":
        return None
    if isinstance(value, datetime):
        start = value
    else:
        try:
            start = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(START_TIME_EXPECTED) from None
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    if not (EARLIEST_START <= start <= LATEST_START):
        raise ValueError(START_TIME_EXPECTED)
    return start.astimezone(UTC)


def _table(root: Section, name: str, problems: Problems) -> Section:
    """The table ``name``, or an empty stand-in when it is absent or no table (a problem)."""
    return problems.attempt(root.table, name) or root.child(name)


def _general(
    root: Section, overrides: dict[str, Any], problems: Problems
) -> tuple[dict[str, Any], Section]:
    """The [bench] table's values that could be read (a wrong key is absent) and the table."""
    bench = _table(root, "bench", problems)
    for key, value in overrides.items():
        if value is not None:
            bench.data[key] = value
    r = Reading(problems)
    result = {
        "start_time": r.get("start_time", _start_time, bench),
        "name": r.get("name", bench.name, "name", Path(root.file).stem, default_from="file's name"),
        "seed": r.get("seed", bench.integer, "seed", 0, lo=0),
        "rate_hz": r.get("rate_hz", bench.number, "rate_hz", 100.0, lo=1.0, hi=2000.0, unit="Hz"),
        "time_scale": r.get("time_scale", _time_scale, bench),
        "run_dir": r.get("run_dir", _run_dir, bench),
        "stats_interval": r.get(
            "stats_interval", bench.number, "stats_interval", 10.0, lo=0.01, hi=86400.0, unit="s"
        ),
    }
    problems.attempt(bench.finish)
    return {k: v for k, v in result.items() if r.usable(k)}, bench


def _start_time(bench: Section) -> datetime | None:
    start = bench.raw("start_time", "wall")
    try:
        return parse_start_time(start)
    except ValueError as e:
        raise bench.error("start_time", start, str(e)) from None


def _time_scale(bench: Section) -> float:
    scale = bench.number("time_scale", 1.0)
    if not MIN_TIME_SCALE <= scale <= MAX_TIME_SCALE:
        raise bench.error("time_scale", scale, TIME_SCALE_EXPECTED)
    return scale


def _step_errors(
    path: Path, limit: StepLimit | None, rate_hz: float, from_option: bool
) -> list[ConfigError]:
    """The loop's step, 1 / rate_hz, against the longest step the vessel's method takes
    stably (``limit``; None: not known yet, nothing to say)."""
    if limit is None:
        return []
    problem = limit.problem(1.0 / rate_hz)
    if not problem:
        return []
    where, key = ("command line", "--rate") if from_option else (path, "bench.rate_hz")
    return [
        ConfigError(
            where,
            key,
            rate_hz,
            f"a rate of at least {1.0 / limit.dt:.3g} Hz: a step of 1/rate_hz must be {problem}",
        )
    ]


def _vessel(root: Section, problems: Problems) -> _Vessel:
    section = problems.attempt(lambda: root.table("vessel", required=True))
    if section is None:
        return _Vessel(None, unusable=frozenset({"profile", "method"}))
    part = _vessel_part(section, problems)
    problems.attempt(section.finish)
    return part


def _vessel_part(section: Section, problems: Problems) -> _Vessel:
    """A vessel's keys of a [vessel] or [[boat]] table: profile, method, initial heading and
    speed, held commands."""
    r = Reading(problems)
    profile = r.get("profile", section.string, "profile")
    vessel = None
    if profile is not None:  # the profile file's own problems are placed at this key
        vessel = r.get("profile", _profile, section, profile, at=section.position("profile"))
    methods = tuple(sorted(METHODS))
    part = _Vessel(
        vessel,
        profile or "",
        r.get("method", section.string, "method", "rk4", choices=methods, default="rk4"),
        r.get(
            "heading_deg",
            section.number,
            "heading_deg",
            0.0,
            lo=-360.0,
            hi=360.0,
            unit="deg",
            default=0.0,
        ),
        r.get("speed", section.number, "speed", 0.0, lo=-20.0, hi=30.0, unit="m/s", default=0.0),
        _commands(section, vessel, problems),
        frozenset(r.unusable),
    )
    return part


def _profile(section: Section, profile: str) -> Vessel:
    try:
        return load_profile(profile)
    except NotFoundError as e:  # say where in the bench file it was asked for
        raise section.error("profile", profile, e.expected) from None


def _commands(section: Section, vessel: Vessel | None, problems: Problems) -> dict[str, float]:
    """[vessel.commands]: each a number, and one the vessel takes (when the profile is right)."""
    commands: dict[str, float] = {}
    table = problems.attempt(section.table, "commands")
    if table is None:
        return commands
    for name in list(table.data):
        value = problems.attempt(table.number, name)
        if value is None:
            continue
        problem = vessel.command_problem(name, value) if vessel is not None else None
        if problem:
            problems.add(table.error(name, value, problem))
        else:
            commands[name] = value
    problems.attempt(table.finish)
    return commands


def _origin(root: Section, problems: Problems) -> Origin:
    section = _table(root, "origin", problems)
    r = Reading(problems)
    default = DEFAULT_ORIGIN
    origin = Origin(
        r.get(
            "latitude",
            section.number,
            "latitude",
            default.latitude_deg,
            lo=-89.0,
            hi=89.0,
            unit="degrees north",
            default=default.latitude_deg,
        ),
        r.get(
            "longitude",
            section.number,
            "longitude",
            default.longitude_deg,
            lo=-180.0,
            hi=180.0,
            unit="degrees east",
            default=default.longitude_deg,
        ),
        r.get("height", section.number, "height", 0.0, lo=-500.0, hi=9000.0, unit="m", default=0.0),
    )
    problems.attempt(section.finish)
    return origin


# The bench file may move the preset's mean wind and current: each key's limits.
MEANS: dict[str, dict[str, Any]] = {
    "wind_speed": {"lo": 0.0, "hi": 80.0, "unit": "m/s"},
    "wind_from_deg": {"lo": -360.0, "hi": 360.0, "unit": "deg"},
    "current_speed": {"lo": 0.0, "hi": 10.0, "unit": "m/s"},
    "current_to_deg": {"lo": -360.0, "hi": 360.0, "unit": "deg"},
    "hs": {"lo": 0.0, "hi": 30.0, "unit": "m"},
}


def _weather(root: Section, problems: Problems) -> Weather:
    section = _table(root, "weather", problems)
    r = Reading(problems)
    preset = r.get("preset", section.string, "preset", "calm")
    weather = None
    if preset is not None:  # the preset file's own problems are placed at this key
        weather = r.get("preset", _preset, section, preset, at=section.position("preset"))
    means = {key: r.get(key, _maybe, section, key, **MEANS[key]) for key in MEANS}
    problems.attempt(section.finish)
    if weather is None:
        return Weather("calm")
    weather = weather.with_means(**{k: v for k, v in means.items() if r.usable(k)})
    if r.usable("hs") and weather.waves.hs > 0.0 and weather.waves.spectrum == "none":
        problems.add(
            section.error(
                "hs",
                weather.waves.hs,
                f"0: the preset {preset!r} has no wave spectrum (use a preset with [waves])",
            )
        )
    return weather


def _preset(section: Section, preset: str) -> Weather:
    try:
        return load_weather(preset)
    except NotFoundError:  # (one that exists but is malformed is reported as it is)
        names = PRESETS.listing()
        raise section.error("preset", preset, f"a weather file or one of: {names}") from None


def _run_dir(bench: Section) -> str:
    value = bench.string("run_dir", DEFAULT_RUN_DIR)
    if not usable_run_dir_name(value):
        raise bench.error("run_dir", value, RUN_DIR_EXPECTED)
    return value


def _within(table: Section, key: str, value: float) -> None:
    limits = SETTING_LIMITS.get(key)
    if limits is not None and not (limits[0] <= value <= limits[1]):
        raise table.error(key, value, f"a value from {limits[0]:g} to {limits[1]:g}")


def _baud(section: Section, default: int) -> int:
    baud = section.integer("baud", default, lo=300)
    if baud > MAX_BAUD:
        raise section.error("baud", baud, f"a baud rate from 300 to {MAX_BAUD}")
    return baud


def _mqtt(root: Section) -> MirrorConfig | None:
    section = root.table("mqtt")
    return None if section is None else read_mirror(section)


def _record(root: Section, loop_rate_hz: float) -> RecordConfig | None:
    section = root.table("record")
    return None if section is None else read_record(section, loop_rate_hz)


def _maybe(section: Section, key: str, **limits) -> float | None:
    """An optional number: None when absent (the key still counts as known for typos)."""
    return section.number(key, **limits) if section.raw(key, None) is not None else None


def _noise(section: Section | None, quantities: dict[str, str]) -> dict[str, NoiseSpec]:
    """Every quantity's noise; the problems of all of them at once."""
    result: dict[str, NoiseSpec] = {}
    if section is None:
        return result
    problems = Problems()
    for quantity in list(section.data):
        spec = problems.attempt(_quantity_noise, section, quantity, quantities)
        if spec is not None:
            result[quantity] = spec
    problems.raise_any()
    return result


def _quantity_noise(section: Section, quantity: str, quantities: dict[str, str]) -> NoiseSpec:
    if quantity not in quantities:
        section.skip(quantity)
        allowed = ", ".join(f"{q} [{u}]" for q, u in quantities.items()) or "none"
        raise section.error(
            quantity, section.data[quantity], f"a quantity of this device: {allowed}"
        )
    table = section.table(quantity)
    assert table is not None
    problems = Problems()
    r = Reading(problems)
    spec = NoiseSpec(
        white=r.get("white", table.number, "white", 0.0, lo=0.0, hi=MAX_ERROR, default=0.0),
        bias=r.get("bias", table.number, "bias", 0.0, lo=-MAX_ERROR, hi=MAX_ERROR, default=0.0),
        random_walk=r.get(
            "random_walk", table.number, "random_walk", 0.0, lo=0.0, hi=MAX_ERROR, default=0.0
        ),
        quantization=r.get(
            "quantization", table.number, "quantization", 0.0, lo=0.0, hi=MAX_ERROR, default=0.0
        ),
    )
    problems.attempt(table.finish)
    problems.raise_any()
    return spec


def read_faults(sections: list[Section], quantities: dict[str, str]) -> tuple[FaultSpec, ...]:
    """Every fault; the problems of all of them at once."""
    problems = Problems()
    faults = [problems.attempt(_fault, s, quantities) for s in sections]
    problems.raise_any()
    return tuple(f for f in faults if f is not None)


def _fault(s: Section, quantities: dict[str, str]) -> FaultSpec:
    """One [[device.fault]], every key read on its own."""
    problems = Problems()
    r = Reading(problems)
    kind = r.get("kind", s.string, "kind", choices=FAULT_KINDS, default="")
    start = r.get("start", s.number, "start", lo=0.0, unit="s", default=0.0)
    end = r.get("end", _fault_end, s, default=math.inf)
    if r.usable("start", "end") and end <= start:
        problems.add(s.error("end", end, f"a time after start ({start:g} s)"))
    quantity, value = "", 0.0
    if kind == "bias_jump":
        quantity = r.get("quantity", s.string, "quantity", choices=tuple(quantities), default="")
        value = r.get("value", s.number, "value", lo=-MAX_ERROR, hi=MAX_ERROR, default=0.0)
    elif not kind:
        s.skip("quantity", "value")  # whether they belong depends on the kind
    else:  # keys of the table (an unknown key's error lists them), not of this kind
        for key in ("quantity", "value"):
            if s.has(key):
                s.skip(key)
                problems.add(
                    s.error(key, s.data[key], f"kind = 'bias_jump' with it (a {kind} has no {key})")
                )
    problems.attempt(s.finish)
    problems.raise_any()
    return FaultSpec(kind, start, end, quantity, value)


def _fault_end(s: Section) -> float:
    return s.number("end", unit="s") if s.raw("end", None) is not None else math.inf


DEVICE_TYPE_KEYS = ("sentences", "noise", "fault", "settings")  # read against the type


def _device(section: Section, run_dir: Path, problems: Problems) -> _Device:
    """One [[device]]: its type's defaults, overridden by the bench's keys. Without its type
    the keys that need it are left unread, and those that are absent are unusable."""
    r = Reading(problems)
    type_name = r.get("type", section.string, "type", default="")
    dtype = None
    if type_name:  # the type file's own problems are placed at this key
        dtype = r.get("type", _device_type, section, type_name, at=section.position("type"))
    if dtype is None:
        section.skip(*DEVICE_TYPE_KEYS)
        r.unusable.update(k for k in ("rate_hz", "baud", "position") if not section.has(k))
        r.unusable.update(("sentences", "settings"))
    config = DeviceConfig(
        name=r.get(
            "name",
            section.name,
            "name",
            type_name,
            default_from="device type",
            default=section.prefix,
        ),
        type=type_name,
        model=dtype.model.model if dtype else "",
        talker=r.get(
            "talker", talker, section, "talker", dtype.talker if dtype else "GP", default="GP"
        ),
        rate_hz=r.get(
            "rate_hz",
            section.number,
            "rate_hz",
            dtype.rate_hz if dtype else 1.0,
            lo=MIN_RATE_HZ,
            hi=MAX_RATE_HZ,
            unit="Hz",
            default=1.0,
        ),
        baud=r.get("baud", _baud, section, dtype.baud if dtype else 4800, default=4800),
        sentences=_sentences(section, dtype, r),
        lever_arm=tuple(
            r.get(
                "position",
                section.array,
                "position",
                (3,),
                list(dtype.position) if dtype else [0.0, 0.0, 0.0],
                default=np.zeros(3),
            ).tolist()
        ),
        ports=r.get("ports", _device_ports, section, run_dir, default=()),
        noise=(
            r.get("noise", lambda: _noise(section.table("noise"), dtype.quantity_units), default={})
            if dtype
            else {}
        ),
        faults=(
            r.get(
                "fault",
                lambda: read_faults(section.tables("fault"), dtype.quantity_units),
                default=(),
            )
            if dtype
            else ()
        ),
        settings=(
            r.get(
                "settings",
                lambda: _device_settings(section.table("settings"), dtype.settings),
                default={},
            )
            if dtype
            else {}
        ),
        boat=r.get("boat", section.name, "boat", default="") if section.has("boat") else "",
    )
    problems.attempt(section.finish)
    return _Device(section, config, frozenset(r.unusable))


def _sentences(section: Section, dtype: DeviceType | None, r: Reading) -> tuple[str, ...]:
    """The device's known sentences: a name that is no sentence is a problem, and the rest
    are still what the line's budget is reckoned from."""
    if dtype is None:
        return ()
    if not dtype.model.sentences_available:  # it sends no sentences (ArduPilot's link)
        section.skip("sentences")
        return ()
    read = r.get(
        "sentences",
        read_sentences,
        section,
        "sentences",
        dtype.model.sentences_available,
        list(dtype.sentences),
    )
    if read is None:
        return ()
    sentences, problem = read
    if problem is not None:
        r.problems.add(problem)
    return sentences


def _device_type(section: Section, type_name: str) -> DeviceType:
    try:
        return load_device_type(type_name)
    except NotFoundError:  # (one that exists but is malformed is reported as it is)
        raise section.error(
            "type", type_name, "a device type: " + ", ".join(available_device_types())
        ) from None


def _device_ports(section: Section, run_dir: Path) -> tuple[str, ...]:
    """``ports = [...]`` or ``port = "..."``, each a valid port URL."""
    if section.has("port") and section.has("ports"):
        raise section.error("ports", section.data["ports"], "either port or ports, not both")
    value = section.raw("ports") if section.has("ports") else [section.raw("port")]
    if not isinstance(value, list) or not value or not all(isinstance(p, str) for p in value):
        raise section.error("ports", value, "a list of port URLs such as 'pty://gps'")
    for i, url in enumerate(value):
        try:
            parse_port_url(url, run_dir)
        except PortUrlError as e:
            key = f"ports[{i}]" if section.has("ports") else "port"  # the key the user wrote
            raise section.error(key, url, str(e)) from None
    return tuple(value)


def _device_settings(table: Section | None, defaults: dict[str, Any]) -> dict[str, Any]:
    """The type's settings, each overridden value of the type of its default."""
    settings = dict(defaults)
    if table is None:
        return settings
    problems = Problems()
    for key in list(table.data):
        problems.attempt(_setting, table, key, settings)
    problems.attempt(table.finish)
    problems.raise_any()
    return settings


def _setting(table: Section, key: str, settings: dict[str, Any]) -> None:
    """One overridden setting into ``settings``, of the type of its default."""
    if key not in settings:
        table.skip(key)
        raise table.error(
            key, table.data[key], "a setting of this device type: " + ", ".join(settings)
        )
    default = settings[key]
    if isinstance(default, list):
        settings[key] = _string_list(table, key)
    elif key == "pgn_rates":
        settings[key] = _pgn_rates(table, key)
    elif isinstance(default, dict):
        settings[key] = _string_table(table, key)
    elif isinstance(default, bool):
        settings[key] = table.boolean(key)
    elif isinstance(default, int):
        settings[key] = table.integer(key, lo=0)
        _within(table, key, settings[key])
    elif isinstance(default, float):
        settings[key] = table.number(key)
        _within(table, key, settings[key])
    elif key in SETTING_FILES:
        settings[key] = _setting_file(table, key, SETTING_FILES[key])
    else:
        settings[key] = table.string(key, choices=SETTING_CHOICES.get(key, ()))


def _setting_file(table: Section, key: str, kind: FileKind) -> str:
    """A setting that names a file: "" (none), a built-in one's name, or a path relative to
    the bench; the path of an existing regular file."""
    value = table.string(key)
    if not value:
        return ""
    if value in kind.names():  # (a name has no separator and no suffix)
        return str(kind.builtin_path(value))
    path = beside(table.file, value)
    try:
        problem = not_regular(path.stat().st_mode)
    except OSError as e:
        problem = f"not readable ({e.strerror})"
    if problem:
        expected = (
            f"the path of an {kind.kind} (relative to the bench) or the name of a built-in one "
            f"({kind.listing()}); {path} is {problem}"
        )
        raise table.error(key, value, expected)
    return str(path)


def _string_list(section: Section, key: str) -> list[str]:
    value = section.raw(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise section.error(key, value, "a list of strings")
    return value


def _pgn_rates(section: Section, key: str) -> dict[str, float]:
    """An NMEA 2000 device's slower PGNs' rates: PGN (a quoted number) to Hz, from once a
    minute to the device's epoch rate (hild/n2k/device.py)."""
    value = section.raw(key)
    expected = 'a table of PGNs and their rates in Hz, e.g. { "129029" = 1.0 }'
    if not isinstance(value, dict):
        raise section.error(key, value, expected)
    for pgn, rate in value.items():
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 1 / 60 <= rate <= 100:
            raise section.error(f"{key}.{pgn}", rate, "a rate from 1/60 to 100 Hz")
        if not str(pgn).isdigit():
            raise section.error(key, value, expected)
    return {str(k): float(v) for k, v in value.items()}


def _string_table(section: Section, key: str) -> dict[str, str]:
    value = section.raw(key)
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise section.error(key, value, 'a table of names, e.g. { 1 = "starboard" }')
    return value


def _command_device_errors(d: _Device, vessel: Vessel | None) -> list[ConfigError]:
    """What a command device's settings cannot do with the bench's vessel."""
    kind = KINDS.get(d.config.model)
    if kind is None or not kind.needs_vessel:  # (its settings checked against the vessel)
        return []
    if vessel is None or not d.usable("type", "settings", "ports"):
        return []
    errors = []
    for problem in kind.load().check(d.config, vessel):
        key = problem.key if problem.key in ("type", "ports") else f"settings.{problem.key}"
        error = ConfigError(d.section.file, d.section.key(key), problem.value, problem.expected)
        errors.append(located(error, d.section.position(key.split(".")[0])))
    return errors


def _shared_command_port_errors(read: list[_Device], run_dir: Path) -> list[ConfigError]:
    """Command devices sharing a port each decode every line it brings, so a sentence two of
    them take would move the actuators from both: refused unless their protocols are
    disjoint (the bench says which sentences each takes)."""
    by_port: dict[tuple, list[tuple[str, _Device]]] = {}
    for d in read:
        if d.config.model not in models(COMMANDS) or not d.usable("ports", "settings"):
            continue
        for url in d.config.ports:
            spec = parse_port_url(url, run_dir)  # checked with the device
            by_port.setdefault(spec.identity, []).append((url, d))
    errors = []
    for sharing in by_port.values():
        for i, (url, first) in enumerate(sharing):
            for _, second in sharing[i + 1 :]:
                a, b = first.config, second.config
                theirs = _protocols(b)
                both = [p for p in _protocols(a) if p in theirs]
                if not both:
                    continue
                errors.append(
                    located(
                        ConfigError(
                            first.section.file,
                            f"device ({a.name}, {b.name}) on {url}",
                            both,
                            f"one command device per port, or protocols that do not overlap: "
                            f"both devices decode every line of {url}, so each {both[0]} would "
                            f"move the actuators from {a.name} and from {b.name}; give each "
                            f"device its own port, or split the sentences between them with "
                            f"settings.protocols (each protocol in one device's list)",
                        ),
                        second.end(),
                    )
                )
    return errors


def _protocols(config: DeviceConfig) -> list[str]:
    protocols = config.settings.get("protocols")
    return [p for p in protocols if isinstance(p, str)] if isinstance(protocols, list) else []


BUDGET_KEYS = ("type", "rate_hz", "baud", "sentences", "ports", "settings")


def _budgets(
    read: list[_Device],
    origin: Origin,
    run_dir: Path,
    vessel_of: Callable[[_Device], Vessel | None],
    traffic: list[Target],
) -> tuple[list[PortBudget], list[ConfigError]]:
    """Check that every serial line (and pty standing in for one) can carry its sentences: each
    device is built as the run would build it and measured at a worst-case instant. A line
    with a device whose keys the budget needs are wrong is not reckoned."""
    by_port: dict[str, tuple[PortSpec, list[_Device]]] = {}
    for d in read:
        if not d.usable("ports") or speaks_n2k(d.config.model):
            continue  # (an NMEA 2000 node's load is its bus's: n2k_buses)
        for url in d.config.ports:
            spec = parse_port_url(url, run_dir)
            if spec.scheme in ("serial", "pty"):
                key = spec.path or url
                by_port.setdefault(key, (spec, []))[1].append(d)
    budgets, errors = [], []
    utc = datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC)
    for spec, sharing in by_port.values():
        if not all(d.usable(*BUDGET_KEYS) for d in sharing):
            continue  # the wrong key is reported; the line's load cannot be known without it
        configs = [d.config for d in sharing]
        bauds = {spec.baud or c.baud for c in configs}
        if len(bauds) > 1:
            errors.append(
                located(
                    ConfigError(
                        sharing[-1].section.file,
                        "device.baud",
                        sorted(bauds),
                        f"one baud rate for the devices sharing {spec.url}",
                    ),
                    sharing[-1].end(),
                )
            )
            continue
        baud = bauds.pop()
        vessels = [vessel_of(d) for d in sharing]
        if any(
            v is None and KINDS[d.config.model].needs_vessel
            for v, d in zip(vessels, sharing, strict=True)
        ):
            continue  # the vessel's own error is reported; feedback cannot be sized without it
        load = sum(
            build_device(d.config, 0, origin, v).bytes_per_s(utc, traffic)
            for v, d in zip(vessels, sharing, strict=True)
        )
        budget = PortBudget(spec.url, baud, tuple(c.name for c in configs), load)
        budgets.append(budget)
        if budget.load > 1.0:
            error = over_budget_error(Path(sharing[-1].section.file), budget, configs)
            errors.append(located(error, sharing[-1].end()))
    return budgets, errors


def n2k_buses(
    read: list[_Device], origin: Origin, run_dir: Path
) -> tuple[list[BusLoad], list[ConfigError]]:
    """Each NMEA 2000 bus (the N2K devices sharing a port: one gateway) and its load against
    250 kbit/s; a bus over it, two nodes with one source address on a bus, and an N2K device
    sharing a port with an NMEA 0183 one are errors."""
    by_port: dict[tuple, tuple[PortSpec, list[_Device]]] = {}
    for d in read:
        if not d.usable("ports", "name"):
            continue
        for url in d.config.ports:
            spec = parse_port_url(url, run_dir)
            by_port.setdefault(spec.identity, (spec, []))[1].append(d)
    buses, errors = [], []
    for d in read:  # a node speaks one framing on all its ports (hild/n2k/device.py N2kNode)
        if d.usable("ports") and speaks_n2k(d.config.model):
            framings = sorted(
                {parse_port_url(u, run_dir).framing or "ydraw" for u in d.config.ports}
            )
            if len(framings) > 1:
                errors.append(
                    d.error(
                        "ports",
                        ", ".join(d.config.ports),
                        f"one framing on all of a node's ports (these name {', '.join(framings)};"
                        " a plain port is ydraw): a node that one gateway hears in YDRAW and"
                        " another in Actisense ASCII is two devices",
                    )
                )
    utc = datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC)
    for spec, sharing in by_port.values():
        nodes = [d for d in sharing if speaks_n2k(d.config.model)]
        if not nodes:
            continue
        others = [d for d in sharing if not speaks_n2k(d.config.model)]
        if others:
            errors.append(
                nodes[-1].error(
                    "ports",
                    spec.url,
                    f"a port of NMEA 2000 devices only: {', '.join(o.config.name for o in others)} "
                    "sends NMEA 0183 there (a gateway's lines are CAN frames)",
                )
            )
            continue
        if not all(d.usable(*BUDGET_KEYS) for d in nodes):
            continue
        built = [build_device(d.config, 0, origin) for d in nodes]
        sources: dict[int, str] = {}
        for d, device in zip(nodes, built, strict=True):
            source = device.node.source
            if source in sources:
                errors.append(
                    d.error(
                        "settings.source",
                        source,
                        f"a source address no other node on {spec.url} has ({sources[source]} "
                        "has it): each node on a bus claims its own",
                    )
                )
            sources.setdefault(source, d.config.name)
        bits = sum(device.bus_bits_per_s(utc) for device in built)
        bus = BusLoad(spec.url, tuple(d.config.name for d in nodes), bits)
        buses.append(bus)
        if bus.load > 1.0:
            detail = "; ".join(
                f"{d.config.name}: {d.config.rate_hz:g} Hz x {', '.join(d.config.sentences)}"
                for d in nodes
            )
            errors.append(
                nodes[-1].error(
                    "ports",
                    spec.url,
                    f"a bus within NMEA 2000's {BUS_BITS_PER_S // 1000} kbit/s: its nodes send "
                    f"{bits / 1000:.0f} kbit/s ({100 * bus.load:.0f} %; {detail}); send fewer "
                    "PGNs, lower rate_hz or pgn_rates, or put nodes on another bus",
                )
            )
    return buses, errors


def over_budget_error(path: Path, budget: PortBudget, configs: list[DeviceConfig]) -> ConfigError:
    """The error a newcomer needs: what is sent, what fits, by how much it is over, what to do."""
    capacity = budget.capacity_bytes_per_s
    detail = "; ".join(f"{d.name}: {d.rate_hz:g} Hz x {', '.join(d.sentences)}" for d in configs)
    faster = next(
        (
            b
            for b in (4800, 9600, 19200, 38400, 57600, 115200)
            if b / BITS_PER_BYTE >= budget.bytes_per_s
        ),
        None,
    )
    advice = "send fewer sentences, lower rate_hz"
    if faster:
        advice += f", or raise the baud rate to {faster}"
    return ConfigError(
        path,
        f"device ({', '.join(budget.devices)}) on {budget.url}",
        f"{budget.bytes_per_s:.0f} bytes/s",
        f"at most {capacity:.0f} bytes/s, what {budget.baud} baud carries at "
        f"{BITS_PER_BYTE} bits per byte; over budget by "
        f"{budget.bytes_per_s - capacity:.0f} bytes/s "
        f"({100 * (budget.load - 1):.0f} % too much) [{detail}]: {advice}",
    )
