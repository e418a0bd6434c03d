"""Bench files: which vessel, weather, place and time, and which devices on which ports.

``load_bench`` reads and checks everything (``hild check``); errors name the file,
the key, the value and what was expected, and all of them are reported at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hild.bus.models import COMMAND_MODELS
from hild.clock import MAX_TIME_SCALE, MIN_TIME_SCALE, TIME_SCALE_EXPECTED
from hild.config import (
    ConfigError,
    MultipleConfigError,
    NotFoundError,
    Problems,
    Section,
    load_toml,
)
from hild.environment.weather import Weather
from hild.mirror.config import MirrorConfig, read_mirror
from hild.model.layout import METHODS
from hild.model.stability import step_limit
from hild.model.vessel import Vessel
from hild.names import is_name
from hild.profiles import BENCHES
from hild.profiles.vessel import load_profile
from hild.profiles.weather import PRESETS, load_weather
from hild.record.config import RecordConfig, read_record
from hild.rundir import DEFAULT_RUN_DIR, RUN_DIR_EXPECTED, usable_run_dir_name
from hild.sensors.catalog import (
    MAX_RATE_HZ,
    MIN_RATE_HZ,
    SETTING_CHOICES,
    SETTING_LIMITS,
    DeviceType,
    available_device_types,
    load_device_type,
    sentence_list,
    talker,
)
from hild.sensors.device import DeviceConfig
from hild.sensors.factory import build_device
from hild.sensors.faults import FAULT_KINDS, FaultSpec
from hild.sensors.geodesy import DEFAULT_ORIGIN, Origin
from hild.sensors.noise import NoiseSpec
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
    mqtt: MirrorConfig | None = None  # the [mqtt] table: the mirror is on when present
    record: RecordConfig | None = None  # the [record] table: recording is on when present


def resolve_bench(name_or_path: str | None) -> Path:
    """A bench file from a path, or a built-in name from ``profiles/bench/``."""
    try:
        return BENCHES.resolve(name_or_path or DEFAULT_BENCH)
    except ConfigError as e:
        raise BenchError([e]) from None


def load_bench(name_or_path: str | None = None, **overrides: Any) -> Bench:
    """Read and check a bench file; ``overrides`` replace [bench] keys (from the command line)."""
    path = resolve_bench(name_or_path)
    root = Section(load_toml(path), path)
    problems = Problems()
    errors, attempt = problems.errors, problems.attempt

    general = attempt(_general, root, overrides, default={})
    vessel_part = attempt(_vessel, root, default=None)
    origin = attempt(_origin, root, default=Origin(0.0, 0.0))
    weather = attempt(_weather, root, default=Weather("calm"))
    mqtt = attempt(_mqtt, root, default=None)
    record = attempt(_record, root, general.get("rate_hz", 100.0), default=None)
    run_dir = Path(overrides.get("run_dir") or general.get("run_dir", DEFAULT_RUN_DIR))
    devices: list[DeviceConfig] = []
    for section in attempt(root.tables, "device", default=[]) or []:
        name = section.data.get("name")
        if is_name(name):  # errors say which device by its name, not its place
            section.prefix = f"device ({name})"
        config = attempt(_device, section, run_dir, default=None)
        if config is not None:
            devices.append(config)
    attempt(root.finish)
    loop_rate = general.get("rate_hz", 100.0)
    for d in devices:
        if d.rate_hz > loop_rate:
            errors.append(
                ConfigError(
                    path,
                    f"device ({d.name}).rate_hz",
                    d.rate_hz,
                    f"at most the loop rate, bench.rate_hz = {loop_rate:g} Hz",
                )
            )
    names = [d.name for d in devices]
    for name in {n for n in names if names.count(n) > 1}:
        errors.append(ConfigError(path, "device.name", name, "a name used by one device only"))
    vessel = vessel_part[0] if vessel_part is not None else None
    if vessel is not None:
        # a sensor sits on the hull or its mast: within a hull length of the body origin
        # (the vessel's centre of origin, near midships), or 10 m for the smallest boats
        reach = max(vessel.length, 10.0)
        for d in devices:
            if any(abs(c) > reach for c in d.lever_arm):
                errors.append(ConfigError(
                    path, f"device ({d.name}).position", list(d.lever_arm),
                    f"a position [x, y, z] within {reach:g} m of {vessel.name}'s body origin "
                    "on each axis (metres forward, starboard, down)",
                ))  # fmt: skip
    if vessel_part is not None and "rate_hz" in general:
        errors.extend(_step_errors(path, vessel_part[0], vessel_part[2], general["rate_hz"],
                                   overrides.get("rate_hz") is not None))  # fmt: skip
    budgets: list[PortBudget] = []
    command_errors = _command_device_errors(path, devices, vessel)
    errors.extend(command_errors)
    errors.extend(_shared_command_port_errors(path, devices, run_dir))
    if not command_errors:
        budgets, budget_errors = _budgets(path, devices, origin, run_dir, vessel)
        errors.extend(budget_errors)
    if errors:
        raise BenchError(errors)
    assert vessel_part is not None
    vessel, profile, method, heading_deg, speed, commands = vessel_part
    return Bench(
        file=str(path),
        name=general["name"],
        vessel=vessel,
        profile=profile,
        method=method,
        weather=weather,
        origin=origin,
        start_time=general["start_time"],
        seed=general["seed"],
        rate_hz=general["rate_hz"],
        time_scale=general["time_scale"],
        run_dir=run_dir,
        stats_interval=general["stats_interval"],
        heading_deg=heading_deg,
        speed=speed,
        commands=commands,
        devices=tuple(devices),
        budgets=tuple(budgets),
        mqtt=mqtt,
        record=record,
    )


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


def _general(root: Section, overrides: dict[str, Any]) -> dict[str, Any]:
    bench = root.table("bench") or Section({}, root.file, "bench")
    for key, value in overrides.items():
        if value is not None:
            bench.data[key] = value
    start = bench.raw("start_time", "wall")
    try:
        start_time = parse_start_time(start)
    except ValueError as e:
        raise bench.error("start_time", start, str(e)) from None
    result = {
        "name": bench.name("name", Path(root.file).stem, default_from="file's name"),
        "start_time": start_time,
        "seed": bench.integer("seed", 0, lo=0),
        "rate_hz": bench.number("rate_hz", 100.0, lo=1.0, hi=2000.0, unit="Hz"),
        "time_scale": _time_scale(bench),
        "run_dir": _run_dir(bench),
        "stats_interval": bench.number("stats_interval", 10.0, lo=0.01, hi=86400.0, unit="s"),
    }
    bench.finish()
    return result


def _time_scale(bench: Section) -> float:
    scale = bench.number("time_scale", 1.0)
    if not MIN_TIME_SCALE <= scale <= MAX_TIME_SCALE:
        raise bench.error("time_scale", scale, TIME_SCALE_EXPECTED)
    return scale


def _step_errors(
    path: Path, vessel: Vessel, method: str, rate_hz: float, from_option: bool
) -> list[ConfigError]:
    """The loop's step, 1 / rate_hz, against the longest step ``method`` takes stably."""
    limit = step_limit(vessel, method)
    problem = limit.problem(1.0 / rate_hz)
    if not problem:
        return []
    where, key = ("command line", "--rate") if from_option else (path, "bench.rate_hz")
    return [ConfigError(where, key, rate_hz, f"a rate of at least {1.0 / limit.dt:.3g} Hz: a "
                        f"step of 1/rate_hz must be {problem}")]  # fmt: skip


def _vessel(root: Section):
    vessel_section = root.table("vessel", required=True)
    profile = vessel_section.string("profile")
    try:
        vessel = load_profile(profile)
    except NotFoundError as e:  # say where in the bench file it was asked for
        raise vessel_section.error("profile", profile, e.expected) from None
    method = vessel_section.string("method", "rk4", choices=tuple(sorted(METHODS)))
    heading_deg = vessel_section.number("heading_deg", 0.0, lo=-360.0, hi=360.0, unit="deg")
    speed = vessel_section.number("speed", 0.0, lo=-20.0, hi=30.0, unit="m/s")
    commands: dict[str, float] = {}
    table = vessel_section.table("commands")
    if table is not None:
        for name in list(table.data):
            value = table.number(name)
            problem = vessel.command_problem(name, value)
            if problem:
                raise table.error(name, value, problem)
            commands[name] = value
        table.finish()
    vessel_section.finish()
    return vessel, profile, method, heading_deg, speed, commands


def _origin(root: Section) -> Origin:
    section = root.table("origin") or Section({}, root.file, "origin")
    origin = Origin(
        section.number(
            "latitude", DEFAULT_ORIGIN.latitude_deg, lo=-89.0, hi=89.0, unit="degrees north"
        ),
        section.number(
            "longitude", DEFAULT_ORIGIN.longitude_deg, lo=-180.0, hi=180.0, unit="degrees east"
        ),
        section.number("height", 0.0, lo=-500.0, hi=9000.0, unit="m"),
    )
    section.finish()
    return origin


def _weather(root: Section) -> Weather:
    section = root.table("weather") or Section({}, root.file, "weather")
    preset = section.string("preset", "calm")
    try:
        weather = load_weather(preset)
    except NotFoundError:  # (one that exists but is malformed is reported as it is)
        names = PRESETS.listing()
        raise section.error("preset", preset, f"a weather file or one of: {names}") from None
    # The bench file may move the preset's mean wind and current.
    weather = weather.with_means(
        wind_speed=_maybe(section, "wind_speed", lo=0.0, hi=80.0, unit="m/s"),
        wind_from_deg=_maybe(section, "wind_from_deg", lo=-360.0, hi=360.0, unit="deg"),
        current_speed=_maybe(section, "current_speed", lo=0.0, hi=10.0, unit="m/s"),
        current_to_deg=_maybe(section, "current_to_deg", lo=-360.0, hi=360.0, unit="deg"),
        hs=_maybe(section, "hs", lo=0.0, hi=30.0, unit="m"),
    )
    if weather.waves.hs > 0.0 and weather.waves.spectrum == "none":
        raise section.error("hs", weather.waves.hs, f"0: the preset {preset!r} has no wave "
                            "spectrum (use a preset with [waves])")  # fmt: skip
    section.finish()
    return weather


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
    result: dict[str, NoiseSpec] = {}
    if section is None:
        return result
    for quantity in list(section.data):
        if quantity not in quantities:
            allowed = ", ".join(f"{q} [{u}]" for q, u in quantities.items()) or "none"
            raise section.error(
                quantity, section.data[quantity], f"a quantity of this device: {allowed}"
            )
        table = section.table(quantity)
        assert table is not None
        result[quantity] = NoiseSpec(
            white=table.number("white", 0.0, lo=0.0, hi=MAX_ERROR),
            bias=table.number("bias", 0.0, lo=-MAX_ERROR, hi=MAX_ERROR),
            random_walk=table.number("random_walk", 0.0, lo=0.0, hi=MAX_ERROR),
            quantization=table.number("quantization", 0.0, lo=0.0, hi=MAX_ERROR),
        )
        table.finish()
    return result


def read_faults(sections: list[Section], quantities: dict[str, str]) -> tuple[FaultSpec, ...]:
    faults = []
    for s in sections:
        kind = s.string("kind", choices=FAULT_KINDS)
        start = s.number("start", lo=0.0, unit="s")
        end = s.number("end", unit="s") if s.raw("end", None) is not None else math.inf
        if end <= start:
            raise s.error("end", end, f"a time after start ({start:g} s)")
        quantity, value = "", 0.0
        if kind == "bias_jump":
            quantity = s.string("quantity", choices=tuple(quantities))
            value = s.number("value", lo=-MAX_ERROR, hi=MAX_ERROR)
        s.finish()
        faults.append(FaultSpec(kind, start, end, quantity, value))
    return tuple(faults)


def _device(section: Section, run_dir: Path) -> DeviceConfig:
    """One [[device]]: its type's defaults, overridden by the bench's keys."""
    type_name = section.string("type")
    dtype = _device_type(section, type_name)
    config = DeviceConfig(
        name=section.name("name", type_name, default_from="device type"),
        type=type_name,
        model=dtype.model.model,
        talker=talker(section, "talker", dtype.talker),
        rate_hz=section.number("rate_hz", dtype.rate_hz, lo=MIN_RATE_HZ, hi=MAX_RATE_HZ, unit="Hz"),
        baud=_baud(section, dtype.baud),
        sentences=sentence_list(
            section, "sentences", dtype.model.sentences_available, list(dtype.sentences)
        ),
        lever_arm=tuple(section.array("position", (3,), list(dtype.position)).tolist()),
        ports=_device_ports(section, run_dir),
        noise=_noise(section.table("noise"), dtype.quantity_units),
        faults=read_faults(section.tables("fault"), dtype.quantity_units),
        settings=_device_settings(section.table("settings"), dtype.settings),
    )
    section.finish()
    return config


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
    for key in list(table.data):
        if key not in settings:
            raise table.error(
                key, table.data[key], "a setting of this device type: " + ", ".join(settings)
            )
        default = settings[key]
        if isinstance(default, list):
            settings[key] = _string_list(table, key)
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
        else:
            settings[key] = table.string(key, choices=SETTING_CHOICES.get(key, ()))
    table.finish()
    return settings


def _string_list(section: Section, key: str) -> list[str]:
    value = section.raw(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise section.error(key, value, "a list of strings")
    return value


def _string_table(section: Section, key: str) -> dict[str, str]:
    value = section.raw(key)
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise section.error(key, value, 'a table of names, e.g. { 1 = "starboard" }')
    return value


def _command_device_errors(path: Path, devices: list[DeviceConfig], vessel) -> list[ConfigError]:
    """What each command device's settings cannot do with the bench's vessel."""
    errors = []
    for d in devices:
        model = COMMAND_MODELS.get(d.model)
        if model is None or vessel is None:
            continue
        for problem in model.check(d, vessel):
            key = "type" if problem.key == "type" else f"settings.{problem.key}"
            errors.append(ConfigError(path, f"device ({d.name}).{key}", problem.value,
                                      problem.expected))  # fmt: skip
    return errors


def _shared_command_port_errors(
    path: Path, devices: list[DeviceConfig], run_dir: Path
) -> list[ConfigError]:
    """Command devices sharing a port each decode every line it brings, so a sentence two of
    them take would move the actuators from both: refused unless their protocols are
    disjoint (the bench says which sentences each takes)."""
    by_port: dict[tuple, list[tuple[str, DeviceConfig]]] = {}
    for d in devices:
        if d.model not in COMMAND_MODELS:
            continue
        for url in d.ports:
            spec = parse_port_url(url, run_dir)  # checked with the device
            by_port.setdefault(spec.identity, []).append((url, d))
    errors = []
    for sharing in by_port.values():
        for i, (url, a) in enumerate(sharing):
            for _, b in sharing[i + 1 :]:
                theirs = _protocols(b)
                both = [p for p in _protocols(a) if p in theirs]
                if not both:
                    continue
                errors.append(ConfigError(
                    path, f"device ({a.name}, {b.name}) on {url}", both,
                    f"one command device per port, or protocols that do not overlap: both "
                    f"devices decode every line of {url}, so each {both[0]} would move the "
                    f"actuators from {a.name} and from {b.name}; give each device its own port, "
                    f"or split the sentences between them with settings.protocols (each "
                    f"protocol in one device's list)",
                ))  # fmt: skip
    return errors


def _protocols(config: DeviceConfig) -> list[str]:
    protocols = config.settings.get("protocols")
    return [p for p in protocols if isinstance(p, str)] if isinstance(protocols, list) else []


def _budgets(
    path: Path, devices: list[DeviceConfig], origin: Origin, run_dir: Path, vessel: Vessel | None
) -> tuple[list[PortBudget], list[ConfigError]]:
    """Check that every serial line (and pty standing in for one) can carry its sentences: each
    device is built as the run would build it and measured at a worst-case instant."""
    by_port: dict[str, tuple[PortSpec, list[DeviceConfig]]] = {}
    for d in devices:
        for url in d.ports:
            spec = parse_port_url(url, run_dir)
            if spec.scheme in ("serial", "pty"):
                key = spec.path or url
                by_port.setdefault(key, (spec, []))[1].append(d)
    budgets, errors = [], []
    utc = datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC)
    for spec, configs in by_port.values():
        bauds = {spec.baud or d.baud for d in configs}
        if len(bauds) > 1:
            errors.append(
                ConfigError(
                    path,
                    "device.baud",
                    sorted(bauds),
                    f"one baud rate for the devices sharing {spec.url}",
                )
            )
            continue
        baud = bauds.pop()
        if vessel is None and any(d.model in COMMAND_MODELS for d in configs):
            continue  # the vessel's own error is reported; feedback cannot be sized without it
        load = sum(d.rate_hz * build_device(d, 0, origin, vessel).epoch_bytes(utc) for d in configs)
        budget = PortBudget(spec.url, baud, tuple(d.name for d in configs), load)
        budgets.append(budget)
        if budget.load > 1.0:
            errors.append(over_budget_error(path, budget, configs))
    return budgets, errors


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
