"""Scenario files: a bench, a mission, the controller under test, a duration and criteria.

A scenario file is a bench file with four more tables (``[scenario]``, ``[mission]``,
``[controller]``, ``[criteria]``, and ``[sweep]`` for ``hild sweep``). ``[scenario] bench``
names a bench (a file or a built-in name) to start from: a table of the scenario is merged
into the bench's table of that name key by key, an array of tables (``[[device]]``,
``[[traffic]]``) replaces the bench's. The merged document is kept (``Scenario.document``):
a sweep sets values in it by key path (``with_values``) and reads it again, so a swept
value is checked exactly as the same value written in the file.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hild.bench import Bench, BenchError, bench_from_document, resolve_bench
from hild.config import (
    MISSING,
    ConfigError,
    MultipleConfigError,
    Problems,
    Section,
    deep_merge,
    load_toml,
)
from hild.devices.registry import COMMANDS, models
from hild.geodesy import Origin
from hild.pilot.wire import PROTOCOLS
from hild.profiles import SCENARIOS
from hild.traffic.read import position_of, speed_of

SCENARIO_TABLES = ("scenario", "mission", "controller", "criteria", "sweep")
# A scenario repeats exactly only on a fixed clock: a bench on the wall clock starts here.
DEFAULT_START_TIME = "2026-06-01T12:00:00Z"
MAX_DURATION_S = 7 * 86400.0
# A mission's laps: every lap's waypoints are listed to be judged (criteria.MissionWalk), so a
# count no run can sail only fills memory (a billion: 9 GB in 30 s). 10,000 is more than the
# longest run sails round a real course (a 100 m square at 5 m/s: 80 s a lap, 7,560 a week).
MAX_LAPS = 10_000
DEFAULT_SPEED = 5.0  # [m/s]: the thesis' speed reference (hild/pilot/autopilot.py)
CONTROLLER_KINDS = ("pilot", "python", "command")
# An in-process (python) controller's limits (hild/scenario/judge.py), far above what a real
# controller does. A call (the factory, a step, summary) may take STEP_TIMEOUT_S: on a bench a
# controller answers within its command period (0.1 s at 10 Hz) or misses its deadlines, and
# ten seconds leave room for a first call that loads a model or compiles a kernel.
STEP_TIMEOUT_S = 10.0
# All its calls together may take the run's simulated duration, and at least this: on a bench
# a controller keeps pace with the clock, so one that needs more wall time than the time it
# controls could not sail the boat; the floor leaves a short run room for its start-up.
TOTAL_TIMEOUT_FLOOR_S = 60.0
# A step answers with a command set: a few sentences (a TRC per jet, PRC, ROR, an HSC). A
# 115,200 baud line carries about 14 sentences of 82 characters in a 0.1 s step; 1000 in one
# step is a flood, not a command.
MAX_LINES_PER_STEP = 1000


class ScenarioError(MultipleConfigError):
    """Every problem of a scenario file (its own tables and the bench they make)."""


@dataclass(frozen=True)
class Waypoint:
    north: float  # [m from the bench's origin]
    east: float
    speed: float  # [m/s] on the leg to this waypoint


@dataclass(frozen=True)
class Mission:
    waypoints: tuple[Waypoint, ...]
    acceptance_m: float
    laps: int = 1


@dataclass(frozen=True)
class ControllerSpec:
    """The controller under test: ``kind`` and its ``target`` (the factory "module:name" of
    a python controller, the argv of a command, None for the pilot)."""

    kind: str
    target: str | tuple[str, ...] | None = None
    protocol: str = "iec"
    device: str | None = None  # the bench's command device it talks to (None: the only one)
    rate_hz: float = 10.0  # how often it is stepped without new sentences (re-sends)
    heading_reference: bool = True  # the pilot's HSC with each command set
    options: dict[str, Any] = field(default_factory=dict)  # [controller.options], as read
    time_scale: float | None = None  # command: the daemon's time scale (None: the bench's)
    stop_timeout_s: float = 5.0  # command: SIGTERM to SIGKILL at the end
    step_timeout_s: float = STEP_TIMEOUT_S  # python: each call into it [wall s]
    total_timeout_s: float | None = None  # python: all calls together (None: from duration_s)
    max_lines_per_step: int = MAX_LINES_PER_STEP  # python: lines one step may answer

    def total_limit_s(self, duration_s: float) -> float:
        """The wall seconds all of a python controller's calls may take in a run."""
        if self.total_timeout_s is not None:
            return self.total_timeout_s
        return max(TOTAL_TIMEOUT_FLOOR_S, duration_s)


@dataclass(frozen=True)
class Criteria:
    """Thresholds; None: the criterion is not judged. Geofence vertices in NED metres."""

    min_cpa_m: float | None = None
    xte_rms_m: float | None = None
    xte_max_m: float | None = None
    all_waypoints: bool = False
    complete_within_s: float | None = None
    geofence: tuple[tuple[float, float], ...] | None = None
    max_roll_deg: float | None = None
    no_watchdog_trip: bool = False
    min_command_rate_hz: float | None = None
    max_command_age_s: float | None = None
    no_divergence: bool = True


# The keys of a scenario's tables whose values are tables of their own (not a fleet boat's).
TABLE_KEYS = {"mission": (), "controller": ("options",), "criteria": ()}
# A fleet's criteria, judged between its own boats (in [criteria] beside the boats' tables).
FLEET_CRITERIA = ("min_separation_m",)


@dataclass(frozen=True)
class FleetCriteria:
    """Between a fleet's own boats; None: not judged."""

    min_separation_m: float | None = None  # the closest any two boats' reference points come


@dataclass(frozen=True)
class BoatPlan:
    """A fleet boat's part of a scenario: its mission, its controller and its criteria."""

    boat: str
    mission: Mission
    controller: ControllerSpec
    criteria: Criteria


@dataclass(frozen=True)
class Scenario:
    file: str
    name: str
    description: str
    duration_s: float
    stop_when_complete: bool  # end the run once the mission is complete
    bench: Bench
    mission: Mission
    controller: ControllerSpec
    criteria: Criteria
    resources: dict[str, float]  # Dask worker resources a run needs (sweeps)
    document: dict[str, Any]  # the merged TOML document the scenario was read from
    # A fleet's: each boat's plan in the bench's order (mission, controller and criteria
    # above are the first boat's), and the criteria between its boats; none for one boat.
    plans: tuple[BoatPlan, ...] = ()
    fleet_criteria: FleetCriteria = FleetCriteria()

    @property
    def seed(self) -> int:
        return self.bench.seed

    @property
    def is_fleet(self) -> bool:
        return bool(self.plans)

    @property
    def controllers(self) -> tuple[ControllerSpec, ...]:
        """Every controller of the run (one per boat of a fleet)."""
        return tuple(p.controller for p in self.plans) or (self.controller,)

    def with_values(self, values: dict[str, Any]) -> Scenario:
        """This scenario with values set at dotted key paths (``weather.wind_speed``,
        ``device.gps.rate_hz``, ``traffic.tanker.encounter.cpa_m``, ``bench.seed``), read
        and checked again; a path that leads nowhere is a ConfigError."""
        document = copy.deepcopy(self.document)
        for path, value in values.items():
            set_key_path(document, path, value, self.file)
        return scenario_from_document(document, Path(self.file))


def set_key_path(document: dict[str, Any], path: str, value: Any, file: str) -> None:
    """Set ``value`` at a dotted key path; a part that meets an array of tables picks the
    table by index (``device.0``) or by its ``name`` (``device.gps``). Missing tables on the
    way are created; a path through a value that is not a table is a ConfigError."""
    parts = path.split(".")
    if not path or any(not p for p in parts):
        raise ConfigError(file, path, value, "a dotted key path such as weather.wind_speed")
    node: Any = document
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        where = ".".join(parts[: i + 1])
        if isinstance(node, list):
            chosen = _pick(node, part)
            if chosen is None:
                names = [t.get("name") for t in node if isinstance(t, dict) and "name" in t]
                raise ConfigError(
                    file,
                    where,
                    value,
                    f"an index below {len(node)} or a name "
                    f"in [[{'.'.join(parts[:i])}]] ({', '.join(map(str, names))})",
                )
            if last:
                raise ConfigError(file, where, value, "a key path to a value, not a whole table")
            node = chosen
            continue
        if not isinstance(node, dict):
            raise ConfigError(
                file, where, value, f"a path through tables ({'.'.join(parts[:i])} is a value)"
            )
        if last:
            node[part] = value
        else:
            node = node.setdefault(part, {})


def _pick(tables: list, part: str) -> dict | None:
    if part.isdigit():
        index = int(part)
        return tables[index] if index < len(tables) else None
    for t in tables:
        if isinstance(t, dict) and t.get("name") == part:
            return t
    return None


def attempt(problems: Problems, fn, *args: Any, default: Any = None, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, or ``default`` with its ConfigError kept in ``problems``."""
    return problems.attempt(lambda: fn(*args, **kwargs), default=default)


def resolve_scenario(name_or_path: str) -> Path:
    try:
        return SCENARIOS.resolve(name_or_path)
    except ConfigError as e:
        raise ScenarioError([e]) from None


def load_scenario(name_or_path: str) -> Scenario:
    """Read and check a scenario file (a path, or a built-in name from profiles/scenarios/)."""
    path = resolve_scenario(name_or_path)
    document = load_toml(path)
    return scenario_from_document(merged_document(document, path), path)


def merged_document(document: dict[str, Any], path: Path) -> dict[str, Any]:
    """The scenario's tables over its bench's (``[scenario] bench``); the result names no bench."""
    head = document.get("scenario")
    if not isinstance(head, dict) or "bench" not in head:
        return document
    name = head["bench"]
    if not isinstance(name, str) or not name:
        raise ScenarioError(
            [ConfigError(path, "scenario.bench", name, "a bench file or a built-in bench name")]
        )
    base = load_toml(resolve_bench(name))
    merged = deep_merge(base, {k: v for k, v in document.items() if k != "scenario"})
    merged["scenario"] = {k: v for k, v in head.items() if k != "bench"}
    return merged


def scenario_from_document(document: dict[str, Any], path: Path) -> Scenario:
    """Check a merged scenario document: every problem, its own and its bench's, at once."""
    problems = Problems()
    root = Section(document, path)
    head = attempt(problems, root.table, "scenario", required=True) or root.child("scenario")
    name = attempt(problems, head.name, "name", path.stem, default_from="file's name")
    description = attempt(problems, head.string, "description", "")
    duration = attempt(
        problems, head.number, "duration_s", positive=True, hi=MAX_DURATION_S, unit="seconds"
    )
    stop = attempt(problems, head.boolean, "stop_when_complete", True)
    resources = attempt(problems, _resources, head, default={})
    attempt(problems, head.finish)

    bench_doc = {k: v for k, v in document.items() if k not in SCENARIO_TABLES}
    bench_table = bench_doc.setdefault("bench", {})
    if isinstance(bench_table, dict):
        bench_table.setdefault("name", name if isinstance(name, str) else path.stem)
        if bench_table.get("start_time", "wall") == "wall":
            bench_table["start_time"] = DEFAULT_START_TIME
    bench = None
    try:
        bench = bench_from_document(bench_doc, path, other_tables=SCENARIO_TABLES)
    except BenchError as e:
        for error in e.errors:
            problems.add(error)
    origin = bench.origin if bench is not None else Origin(0.0, 0.0)

    plans: tuple[BoatPlan, ...] = ()
    fleet = FleetCriteria()
    boats = tuple(b.name for b in bench.boats) if bench is not None else ()
    if len(boats) > 1:
        assert bench is not None
        plans = attempt(problems, _plans, root, bench, default=())
        fleet = attempt(problems, _fleet_criteria, root, default=fleet)
        for key in ("mission", "controller", "criteria"):
            root.skip(key)
    if plans:
        mission, controller, criteria = plans[0].mission, plans[0].controller, plans[0].criteria
    else:
        mission = attempt(problems, _mission, root.table("mission", required=True), origin)
        controller = attempt(problems, _controller, root.table("controller", required=True), bench)
        criteria_table = root.table("criteria")
        for key in FLEET_CRITERIA:
            if criteria_table is not None and criteria_table.has(key):
                criteria_table.skip(key)
                problems.add(
                    criteria_table.error(
                        key,
                        criteria_table.raw(key),
                        "a fleet's criterion: a bench with several [[boat]] tables (this one "
                        "has one boat)",
                    )
                )
        criteria = attempt(problems, _criteria, criteria_table, origin)
    for key in ("sweep",):
        root.skip(key)  # read by hild.sweep
    if problems.errors:
        raise ScenarioError(problems.in_order())
    assert bench is not None
    return Scenario(
        file=str(path),
        name=name,
        description=description,
        duration_s=duration,
        stop_when_complete=stop,
        bench=bench,
        mission=mission,
        controller=controller,
        criteria=criteria,
        resources=resources,
        document=document,
        plans=plans,
        fleet_criteria=fleet,
    )


def _plans(root: Section, bench: Bench) -> tuple[BoatPlan, ...]:
    """A fleet's plan per boat. ``[mission]``, ``[controller]`` and ``[criteria]`` each hold a
    table per boat (``[mission.alpha]``); their other keys are shared by every boat, under the
    boat's own (``[controller] pilot = true`` drives every boat with hild's pilot, each on its
    boat's command device). A boat without a mission or a controller is named."""
    problems = Problems()
    names = [b.name for b in bench.boats]
    tables: dict[str, dict[str, Any]] = {}
    for key in ("mission", "controller", "criteria"):
        raw = root.raw(key, {})
        if not isinstance(raw, dict):
            problems.add(root.error(key, raw, "a table"))
            raw = {}
        for name, value in raw.items():
            if isinstance(value, dict) and name not in names and name not in TABLE_KEYS[key]:
                problems.add(
                    root.error(
                        f"{key}.{name}",
                        value,
                        f"a boat of the bench ({', '.join(names)}): [{key}.BOAT] is that "
                        f"boat's {key}",
                    )
                )
        tables[key] = {k: v for k, v in raw.items() if k in names or not isinstance(v, dict)}
        if key == "controller" and "options" in raw:
            tables[key]["options"] = raw["options"]
    plans = []
    for boat in names:
        per: dict[str, Section | None] = {}
        for key, raw in tables.items():
            shared = {k: v for k, v in raw.items() if k not in names and k not in FLEET_CRITERIA}
            own = raw.get(boat, {})
            if not isinstance(own, dict):
                problems.add(root.error(f"{key}.{boat}", own, f"a table: {boat}'s {key}"))
                own = {}
            if not own and not shared and key != "criteria":
                problems.add(
                    root.error(
                        f"{key}.{boat}",
                        MISSING,
                        f"[{key}.{boat}] (or shared keys in [{key}]): every boat of a fleet "
                        f"scenario has its {key} ({', '.join(names)})",
                    )
                )
                per[key] = None
                continue
            per[key] = Section(deep_merge(shared, own), root.file, f"{key}.{boat}")
        mission_s, controller_s, criteria_s = per["mission"], per["controller"], per["criteria"]
        mission = (
            attempt(problems, _mission, mission_s, bench.origin) if mission_s is not None else None
        )
        controller = (
            attempt(problems, _controller, controller_s, bench, boat)
            if controller_s is not None
            else None
        )
        criteria = attempt(problems, _criteria, criteria_s, bench.origin)
        if mission is not None and controller is not None and criteria is not None:
            plans.append(BoatPlan(boat, mission, controller, criteria))
    problems.raise_any()
    in_lockstep = {p.controller.kind != "command" for p in plans}
    if len(in_lockstep) > 1:
        kinds = ", ".join(f"{p.boat}: {p.controller.kind}" for p in plans)
        raise root.error(
            "controller",
            kinds,
            "one kind of run for every boat: all in process (pilot, python) or all commands "
            "(each its own program on its own ports)",
        )
    return tuple(plans)


def _fleet_criteria(root: Section) -> FleetCriteria:
    section = root.table("criteria")
    if section is None or not section.has("min_separation_m"):
        return FleetCriteria()
    return FleetCriteria(
        min_separation_m=section.number("min_separation_m", positive=True, unit="m")
    )


def _resources(head: Section) -> dict[str, float]:
    table = head.table("resources")
    if table is None:
        return {}
    out = {}
    for key in list(table.data):
        out[key] = table.number(key, positive=True, unit="units of the resource")
    return out


def _mission(section: Section, origin: Origin) -> Mission:
    problems = Problems()
    speed = attempt(problems, speed_of, section, False, DEFAULT_SPEED, default=DEFAULT_SPEED)
    acceptance = attempt(
        problems, section.number, "acceptance_m", 10.0, positive=True, hi=5000.0, unit="m"
    )
    laps = attempt(problems, section.integer, "laps", 1, lo=1, hi=MAX_LAPS, default=1)
    waypoints: list[Waypoint] = []
    raw = section.raw("waypoints")
    if not isinstance(raw, list) or not raw:
        problems.add(
            section.error(
                "waypoints",
                raw,
                "a list of waypoints: tables with north "
                "and east [m] or latitude and longitude [deg], and "
                "optionally speed_kn",
            )
        )
        raw = []
    for i, item in enumerate(raw):
        key = f"waypoints[{i}]"
        if isinstance(item, list) and len(item) == 2:
            item = {"north": item[0], "east": item[1]}
        wp = Section(item, section.file, section.key(key), section.position("waypoints"))
        try:
            north, east = position_of(wp, origin, "a waypoint")
            leg_speed = speed_of(wp, False, speed if isinstance(speed, float) else DEFAULT_SPEED)
            wp.finish()
            waypoints.append(Waypoint(north, east, leg_speed))
        except ConfigError as e:
            problems.add(e)
    attempt(problems, section.finish)
    problems.raise_any()
    return Mission(tuple(waypoints), acceptance, laps)


def _controller(section: Section, bench: Bench | None, boat: str | None = None) -> ControllerSpec:
    """The controller under test (``boat``: a fleet boat's, on that boat's command device)."""
    problems = Problems()
    given = [k for k in CONTROLLER_KINDS if section.has(k)]
    if given[:1] == ["pilot"] and len(given) == 2 and section.raw("pilot") is False:
        # `--set controller.pilot=false --set controller.python=...`: another controller in a
        # scenario written for the pilot (a built-in one), without a copy of its file
        section.skip("pilot")
        given = given[1:]
    if len(given) != 1:
        section.skip(*CONTROLLER_KINDS)
        raise section.error(
            given[1] if given else "pilot",
            _pick_value(section, given),
            'exactly one of pilot = true, python = "package.module:factory" '
            'or command = ["program", "arg", ...]',
        )
    kind = given[0]
    target: str | tuple[str, ...] | None = None
    if kind == "pilot":
        if section.raw("pilot") is not True:
            problems.add(section.error("pilot", section.data["pilot"], "true"))
    elif kind == "python":
        target = attempt(problems, section.string, "python")
        if isinstance(target, str) and not _is_factory(target):
            problems.add(section.error("python", target, '"package.module:factory"'))
    else:
        argv = section.raw("command")
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) and a for a in argv)):
            problems.add(
                section.error("command", argv, "a list of strings: the program and its arguments")
            )
        else:
            target = tuple(argv)
    protocol = attempt(problems, section.string, "protocol", "iec", choices=PROTOCOLS)
    device = attempt(problems, section.string, "device", None) if section.has("device") else None
    rate = attempt(problems, section.number, "rate_hz", 10.0, lo=0.1, hi=100.0, unit="Hz")
    reference = attempt(problems, section.boolean, "heading_reference", True)
    scale = None
    if section.has("time_scale"):
        scale = attempt(problems, section.number, "time_scale", positive=True, hi=100.0)
    stop_timeout = attempt(
        problems, section.number, "stop_timeout_s", 5.0, positive=True, hi=600.0, unit="seconds"
    )
    limits = _limits(section, problems)
    options_table = section.table("options")
    options = dict(options_table.data) if options_table is not None else {}
    attempt(problems, section.finish)
    if bench is not None and not problems.errors:
        names = [
            d.name
            for d in bench.devices
            if d.model in models(COMMANDS) and (boat is None or d.boat == boat)
        ]
        if device is None and len(names) != 1:
            problems.add(
                section.error(
                    "device",
                    None,
                    f"the command device the controller talks to: one of {', '.join(names)}"
                    if names
                    else (f"boat {boat} with" if boat else "a bench with")
                    + " a command device ([[device]] of type "
                    "jet-controller or thruster-controller)",
                )
            )
        elif device is not None and device not in names:
            problems.add(
                section.error(
                    "device",
                    device,
                    (
                        f"a command device on boat {boat}: "
                        if boat
                        else "a command device of the bench: "
                    )
                    + (", ".join(names) or "it has none"),
                )
            )
        elif device is None:
            device = names[0]
    problems.raise_any()
    return ControllerSpec(
        kind, target, protocol, device, rate, reference, options, scale, stop_timeout, *limits
    )


def _limits(section: Section, problems: Problems) -> tuple[float, float | None, int]:
    """An in-process controller's limits: a call's time, all calls' time, a step's lines."""
    step = attempt(
        problems,
        section.number,
        "step_timeout_s",
        STEP_TIMEOUT_S,
        positive=True,
        hi=3600.0,
        unit="seconds",
        default=STEP_TIMEOUT_S,
    )
    total = None
    if section.has("total_timeout_s"):
        total = attempt(
            problems,
            section.number,
            "total_timeout_s",
            positive=True,
            hi=MAX_DURATION_S,
            unit="seconds",
        )
    lines = attempt(
        problems,
        section.integer,
        "max_lines_per_step",
        MAX_LINES_PER_STEP,
        lo=1,
        hi=1_000_000,
        default=MAX_LINES_PER_STEP,
    )
    return step, total, lines


def _pick_value(section: Section, given: list[str]) -> Any:
    """The second controller's value, or none to show when there is no controller at all."""
    return section.data.get(given[1]) if len(given) > 1 else MISSING


def _is_factory(text: str) -> bool:
    module, _, name = text.partition(":")
    return bool(module and name) and all(p.isidentifier() for p in [*module.split("."), name])


def _criteria(section: Section | None, origin: Origin) -> Criteria:
    if section is None:
        return Criteria()
    problems = Problems()

    def maybe(key: str, **limits: Any) -> float | None:
        if not section.has(key):
            return None
        return attempt(problems, section.number, key, **limits)

    out = Criteria(
        min_cpa_m=maybe("min_cpa_m", lo=0.0, unit="m"),
        xte_rms_m=maybe("xte_rms_m", positive=True, unit="m"),
        xte_max_m=maybe("xte_max_m", positive=True, unit="m"),
        all_waypoints=attempt(problems, section.boolean, "all_waypoints", False, default=False),
        complete_within_s=maybe("complete_within_s", positive=True, unit="seconds"),
        geofence=attempt(problems, _geofence, section, origin),
        max_roll_deg=maybe("max_roll_deg", positive=True, hi=90.0, unit="degrees"),
        no_watchdog_trip=attempt(
            problems, section.boolean, "no_watchdog_trip", False, default=False
        ),
        min_command_rate_hz=maybe("min_command_rate_hz", positive=True, unit="Hz"),
        max_command_age_s=maybe("max_command_age_s", positive=True, unit="seconds"),
        no_divergence=attempt(problems, section.boolean, "no_divergence", True, default=True),
    )
    attempt(problems, section.finish)
    problems.raise_any()
    return out


def _geofence(section: Section, origin: Origin) -> tuple[tuple[float, float], ...] | None:
    """A polygon of at least 3 vertices: tables of north/east [m] or latitude/longitude."""
    if not section.has("geofence"):
        return None
    raw = section.raw("geofence")
    expected = (
        "a list of at least 3 vertices, each a table with north and east [m] or "
        "latitude and longitude [deg]"
    )
    if not isinstance(raw, list) or len(raw) < 3:
        raise section.error("geofence", raw, expected)
    out = []
    for i, item in enumerate(raw):
        vertex = Section(
            item, section.file, section.key(f"geofence[{i}]"), section.position("geofence")
        )
        north, east = position_of(vertex, origin, "a geofence vertex")
        vertex.finish()
        out.append((north, east))
    area = 0.5 * sum(a[0] * b[1] - b[0] * a[1] for a, b in zip(out, out[1:] + out[:1], strict=True))
    if math.isclose(area, 0.0, abs_tol=1.0):
        raise section.error("geofence", raw, expected + ", enclosing an area")
    return tuple(out)
