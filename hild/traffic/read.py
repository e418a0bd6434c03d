"""Reading traffic: the ``[[traffic]]`` tables of a bench or of a traffic file, into Target
records, every problem at once with the file, the key, the value and what was expected.

A ``[[traffic]]`` table is either one target or ``file = "NAME"``: every target of a traffic
file (a path, or a name in $HILD_TRAFFIC_PATH or the built-in ``profiles/traffic/``). A
target has an identity (what its AIS transponder says), exactly one motion table
(``[traffic.route]``, ``[traffic.course]`` or ``[traffic.encounter]``), and optionally a
behaviour (``behaviour = "colreg"`` or a ``[traffic.behaviour]`` table) and ship dynamics.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hild.builtin import builtin_candidates, builtin_folder
from hild.config import (
    ConfigError,
    FileKind,
    NotFoundError,
    Problems,
    Reading,
    Section,
    load_toml,
)
from hild.geodesy import Origin
from hild.names import is_name
from hild.traffic.targets import (
    AIS_CLASSES,
    BEHAVIOURS,
    KNOT,
    MAX_TARGETS,
    PASSING_SIDES,
    SITUATIONS,
    Behaviour,
    Course,
    Encounter,
    Identity,
    Motion,
    Route,
    ShipDynamics,
    Target,
    Waypoint,
)

TRAFFIC = FileKind(
    "traffic",
    "file",
    builtin_folder("profiles/traffic"),
    "HILD_TRAFFIC_PATH",
    "traffic file",
    searched=builtin_candidates("profiles/traffic"),
)

MAX_WAYPOINTS = 1000
MAX_DISTANCE_M = 200_000.0  # a target this far from the origin is out of any AIS range
MAX_SPEED_KN = 60.0  # the fastest ships (fast ferries, patrol craft) stay under this
# Navigational status (ITU-R M.1371-5, message 1 field 4): the names a file may use.
NAV_STATUS = {
    "under-way-using-engine": 0,
    "at-anchor": 1,
    "not-under-command": 2,
    "restricted-manoeuvrability": 3,
    "constrained-by-draught": 4,
    "moored": 5,
    "aground": 6,
    "fishing": 7,
    "under-way-sailing": 8,
    "not-defined": 15,
}
# The AIS 6-bit text alphabet (ITU-R M.1371-5, table 47): upper case, digits, some signs.
AIS_TEXT = set("@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_ !\"#$%&'()*+,-./0123456789:;<=>?")
MOTIONS = ("route", "course", "encounter")


class TrafficError(ConfigError):
    """(re-raised as the bench's problems; a separate type only for callers that care)"""


def read_traffic(
    root: Section,
    origin: Origin,
    problems: Problems,
    own: tuple[float, float] | None = None,
    boats: Mapping[str, tuple[float, float, float, float]] | None = None,
) -> list[Target]:
    """Every target of the ``[[traffic]]`` tables of ``root`` (a bench or a traffic file's
    root), files included; each problem into ``problems``; names and MMSIs unique. With
    ``own`` (the own ship's initial course [rad] and speed [m/s]) every encounter is placed,
    and one that cannot be is a problem of its table; ``boats`` (a fleet's: each boat's start
    north, east [m], course [rad] and speed [m/s]) for an encounter placed against a boat."""
    targets: list[tuple[Target, Section]] = []
    seen: list[tuple[object, object, Section]] = []  # (name, mmsi, table) of every target
    for section in problems.attempt(root.tables, "traffic", default=[]) or []:
        if section.has("file"):
            for found in problems.attempt(_included, section, origin, default=[]) or []:
                targets.append((found, section))
                seen.append((found.name, found.identity.mmsi, section))
            continue
        name = section.data.get("name")
        if is_name(name):
            section.prefix = f"traffic ({name})"
        seen.append((name, section.data.get("mmsi"), section))
        target = read_target(section, origin, problems)
        if target is not None:
            targets.append((target, section))
    if len(seen) > MAX_TARGETS:
        problems.add(root.error("traffic", f"{len(seen)} targets", f"at most {MAX_TARGETS}"))
    _unique(seen, problems)
    if own is not None:
        for target, section in targets:
            if isinstance(target.motion, Encounter):
                problems.attempt(_placeable, target, section, own, boats)
    return [t for t, _ in targets]


def _unique(seen: list[tuple[object, object, Section]], problems: Problems) -> None:
    """Names and MMSIs each once (as far as they are valid: a bad one is its own problem)."""
    names: dict[object, str] = {}
    mmsis: dict[object, str] = {}
    for name, mmsi, section in seen:
        in_file = section.has("file")
        if is_name(name):
            if name in names:
                key = "file" if in_file else "name"
                taken = f"({name!r} is taken by {names[name]})"
                problems.add(
                    section.error(key, section.data.get(key), f"a name no other target has {taken}")
                )
            names.setdefault(name, section.key("name"))
        if isinstance(mmsi, int) and not isinstance(mmsi, bool):
            if mmsi in mmsis:
                key = "file" if in_file else "mmsi"
                problems.add(
                    section.error(
                        key,
                        section.data.get(key),
                        f"an MMSI no other target has ({mmsi} is taken by {mmsis[mmsi]})",
                    )
                )
            mmsis.setdefault(mmsi, str(name))


def _placeable(
    target: Target,
    section: Section,
    own: tuple[float, float],
    boats: Mapping[str, tuple[float, float, float, float]] | None,
) -> None:
    """Whether the encounter can be set up against the own ship's initial course and speed
    (a fleet's named boat's start)."""
    encounter = target.motion
    assert isinstance(encounter, Encounter)
    start = (0.0, 0.0, own[0], own[1])
    if encounter.boat:
        where = "encounter" if section.has("encounter") else "file"
        if not boats:
            raise section.error(
                f"{where}.boat" if where == "encounter" else where,
                encounter.boat,
                "no boat: a fleet bench's key (its [[boat]] tables' names); a one-boat bench "
                "places every encounter against its vessel",
            )
        if encounter.boat not in boats:
            raise section.error(
                f"{where}.boat" if where == "encounter" else where,
                encounter.boat,
                f"a boat of the bench: {', '.join(boats)}",
            )
        start = boats[encounter.boat]
    try:
        placed(encounter, *start)
    except ValueError as e:
        key = "encounter" if section.has("encounter") else "file"
        raise section.error(
            key, section.data.get(key), f"an encounter that can be set up: {e}"
        ) from None


def placed(
    encounter: Encounter, own_north: float, own_east: float, own_course: float, own_speed: float
) -> Course:
    """The encounter's start and course against the own ship (hild.traffic.encounter.place),
    held to the distance from the origin a course's start is held to (MAX_DISTANCE_M): a long
    tcpa_s at a high closing speed may put the start thousands of km away. ValueError, naming
    what takes it there, for one that cannot be set up."""
    from hild.traffic.encounter import place  # (its solver is needed only here)

    start = place(encounter, own_north, own_east, own_course, own_speed)
    distance = math.hypot(start.north, start.east)
    if distance <= MAX_DISTANCE_M:
        return start
    # from the own ship: the CPA square to the relative motion over tcpa_s (encounter.py)
    away = math.hypot(start.north - own_north, start.east - own_east)
    closing = math.sqrt(max(away**2 - encounter.cpa_m**2, 0.0))
    speed = closing / encounter.tcpa_s if encounter.tcpa_s > 0.0 else 0.0
    why = [
        f"tcpa_s = {encounter.tcpa_s:g} at a closing speed of {speed:.2f} m/s "
        f"({closing / 1000:.1f} km)"
    ]
    if encounter.cpa_m > 0.0:
        why.append(f"cpa_m = {encounter.cpa_m:g} across that")
    own = math.hypot(own_north, own_east)
    if own >= 1000.0:
        why.append(f"from the own ship {own / 1000:.1f} km from the origin")
    raise ValueError(
        f"its start within {MAX_DISTANCE_M / 1000:g} km of the origin, as a course's: "
        f"{', '.join(why)} put it {distance / 1000:.1f} km from the origin (give a shorter "
        "tcpa_s)"
    )


def _included(section: Section, origin: Origin) -> list[Target]:
    """``file = NAME``: the file's targets (its own problems raised as they are)."""
    name = section.string("file")
    section.finish()
    try:
        path = TRAFFIC.resolve(name)
    except NotFoundError as e:
        raise section.error("file", name, e.expected) from None
    return load_traffic_file(path, origin)


def load_traffic_file(name_or_path: str | Path, origin: Origin) -> list[Target]:
    """A traffic file's targets: ``description`` and ``[[traffic]]`` target tables (no
    ``file`` entries: one level of inclusion)."""
    path = TRAFFIC.resolve(str(name_or_path))
    root = Section(load_toml(path), path)
    problems = Problems()
    problems.attempt(root.string, "description", "")
    for section in problems.attempt(root.tables, "traffic", default=[]) or []:
        if section.has("file"):
            section.skip(*section.data)
            problems.add(
                section.error(
                    "file",
                    section.data["file"],
                    "a target: a traffic file's entries are targets, not other files",
                )
            )
    targets: list[Target] = []
    if not problems.errors:
        targets = read_traffic(root, origin, problems)
    problems.attempt(root.finish)
    problems.raise_any()
    return targets


def read_target(section: Section, origin: Origin, problems: Problems) -> Target | None:
    """One target table; None (with its problems kept) when it cannot be used."""
    found = len(problems.errors)
    r = Reading(problems)
    name = r.get("name", section.name, "name")
    identity = _identity(section, name or "", r)
    motions = [m for m in MOTIONS if section.has(m)]
    motion: Motion | None = None
    if len(motions) != 1:
        section.skip(*MOTIONS)
        value = motions or "none"
        problems.add(
            section.error(
                motions[1] if len(motions) > 1 else "course",
                value,
                "exactly one motion table: [traffic.route], "
                "[traffic.course] or [traffic.encounter]",
            )
        )
    else:
        reader = {"route": read_route, "course": _course, "encounter": _encounter}[motions[0]]
        motion = problems.attempt(reader, section.table(motions[0], required=True), origin)
    behaviour = r.get("behaviour", read_behaviour, section, default=Behaviour())
    dynamics = r.get("dynamics", _dynamics, section, default=ShipDynamics())
    problems.attempt(section.finish)
    if len(problems.errors) > found or motion is None or identity is None:
        return None
    return Target(str(name), identity, motion, behaviour, dynamics)


def read_identity(section: Section, name: str, r: Reading) -> Identity | None:
    """A ship's AIS identity from its table's keys (mmsi, ship_name, callsign, ship_type,
    dimensions, nav_status, class, imo, destination, draught): a traffic target's or a fleet's
    boat's; None when its MMSI is unusable."""
    return _identity(section, name, r)


def _identity(section: Section, name: str, r: Reading) -> Identity | None:
    dims = r.get("dimensions", _dimensions, section, default=(0, 0, 0, 0))
    identity = Identity(
        mmsi=r.get("mmsi", _mmsi, section),
        name=r.get("ship_name", _ais_text, section, "ship_name", 20, name.upper()[:20], default=""),
        callsign=r.get("callsign", _ais_text, section, "callsign", 7, "", default=""),
        ship_type=r.get(
            "ship_type",
            _bounded_integer,
            section,
            "ship_type",
            70,
            0,
            99,
            "an AIS ship and cargo type from 0 to 99 (e.g. 70 cargo, 80 tanker, "
            "60 passenger, 37 pleasure craft)",
            default=0,
        ),
        to_bow=dims[0],
        to_stern=dims[1],
        to_port=dims[2],
        to_starboard=dims[3],
        nav_status=r.get("nav_status", _nav_status, section, default=0),
        ais_class=r.get("class", section.string, "class", "A", choices=AIS_CLASSES, default="A"),
        imo=r.get(
            "imo",
            _bounded_integer,
            section,
            "imo",
            0,
            0,
            999_999_999,
            "an IMO number (7 digits) or 0 for none",
            default=0,
        ),
        destination=r.get("destination", _ais_text, section, "destination", 20, "", default=""),
        draught=r.get(
            "draught", section.number, "draught", 0.0, lo=0.0, hi=25.5, unit="m", default=0.0
        ),
    )
    if not r.usable("mmsi"):
        return None
    return identity


def _mmsi(section: Section) -> int:
    value = section.raw("mmsi")
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not (100_000_000 <= value <= 999_999_999)
    ):
        raise section.error(
            "mmsi",
            value,
            "a 9-digit MMSI such as 257012340 (its first three "
            "digits the country's MID, 2xx-7xx for ships)",
        )
    return value


def _ais_text(section: Section, key: str, length: int, default: str) -> str:
    value = section.string(key, default).upper()
    bad = sorted(set(value) - AIS_TEXT)
    if len(value) > length or bad:
        raise section.error(
            key,
            section.data.get(key, default),
            f"at most {length} characters "
            "of AIS text (letters, digits, space and ordinary signs; no '~', "
            "no lower-case after upper-casing)",
        )
    return value


def _bounded_integer(
    section: Section, key: str, default: int, lo: int, hi: int, expected: str
) -> int:
    value = section.raw(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise section.error(key, value, expected)
    return value


def _dimensions(section: Section) -> tuple[int, int, int, int]:
    value = section.raw("dimensions", [0, 0, 0, 0])
    expected = (
        "[A, B, C, D]: whole metres from the AIS antenna to the bow, stern, port and "
        "starboard sides (A and B up to 511, C and D up to 63), e.g. [80, 20, 8, 8]"
    )
    if (
        not isinstance(value, list)
        or len(value) != 4
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
        or value[0] > 511
        or value[1] > 511
        or value[2] > 63
        or value[3] > 63
    ):
        raise section.error("dimensions", value, expected)
    return value[0], value[1], value[2], value[3]


def _nav_status(section: Section) -> int:
    value = section.raw("nav_status", 0)
    if isinstance(value, str) and value in NAV_STATUS:
        return NAV_STATUS[value]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 15:
        return value
    raise section.error(
        "nav_status", value, "a navigational status from 0 to 15 or one of " + ", ".join(NAV_STATUS)
    )


def speed_of(
    section: Section, required: bool = True, default: float = 0.0, key: str = "speed"
) -> float:
    """``<key>_kn`` (knots) or ``<key>`` (m/s), not both: in m/s."""
    knots = f"{key}_kn"
    if section.has(knots) and section.has(key):
        section.skip(key, knots)  # (this problem, not also two unknown keys)
        raise section.error(key, section.data[key], f"either {knots} or {key}, not both")
    if section.has(key):
        section.skip(knots)
        return section.number(key, lo=0.0, hi=MAX_SPEED_KN * KNOT, unit="m/s")
    if section.has(knots) or required:
        section.skip(key)
        return section.number(knots, lo=0.0, hi=MAX_SPEED_KN, unit="knots") * KNOT
    section.skip(key, knots)
    return default


def position_of(section: Section, origin: Origin, what: str) -> tuple[float, float]:
    """``north``/``east`` [m from the origin] or ``latitude``/``longitude`` [deg]."""
    if section.has("latitude") or section.has("longitude"):
        section.skip("north", "east")
        lat = section.number("latitude", lo=-89.0, hi=89.0, unit="degrees north")
        lon = section.number("longitude", lo=-180.0, hi=180.0, unit="degrees east")
        north, east, _ = origin.to_ned(lat, lon)
        if math.hypot(north, east) > MAX_DISTANCE_M:
            raise section.error(
                "latitude",
                lat,
                f"{what} within {MAX_DISTANCE_M / 1000:g} km "
                f"of the origin ({origin.latitude_deg:g}, "
                f"{origin.longitude_deg:g})",
            )
        return north, east
    section.skip("latitude", "longitude")
    problems = Problems()
    north, east = (
        problems.attempt(
            lambda key=key: section.number(
                key, lo=-MAX_DISTANCE_M, hi=MAX_DISTANCE_M, unit="m from the origin"
            )
        )
        for key in ("north", "east")
    )
    problems.raise_any()
    return north, east


def _course(section: Section, origin: Origin) -> Course:
    problems = Problems()
    where = problems.attempt(position_of, section, origin, "a start")
    course = problems.attempt(lambda: section.number("course_deg", lo=-360.0, hi=360.0, unit="deg"))
    speed = problems.attempt(speed_of, section)
    problems.attempt(section.finish)
    problems.raise_any()
    return Course(where[0], where[1], math.radians(course) % (2 * math.pi), speed)


def read_route(section: Section, origin: Origin, from_here: bool = False) -> Route:
    """A route table; ``from_here``: a target retasked to it sails to the first waypoint too."""
    problems = Problems()
    points = problems.attempt(section.tables, "waypoint", default=[]) or []
    if section.has("waypoints"):  # an inline array of tables: the same thing
        points = problems.attempt(section.tables, "waypoints", default=[]) or []
    loop = section.data.get("loop") is True
    waypoints = []
    for i, p in enumerate(points):
        where = problems.attempt(position_of, p, origin, "a waypoint")
        # the first is the start: its speed is the one it starts at (the second's by default)
        speed = problems.attempt(speed_of, p, i > 0, math.nan)
        if speed == 0.0 and (i > 0 or loop or from_here):  # a leg sailed at it: never arrives
            key = "speed" if p.has("speed") else "speed_kn"
            problems.add(
                p.error(
                    key,
                    p.data.get(key),
                    "a speed above 0 (the target sails the "
                    "leg to this waypoint at it; a route without loop stops at "
                    "its last waypoint)",
                )
            )
        problems.attempt(p.finish)
        if where is not None and speed is not None:
            waypoints.append(Waypoint(where[0], where[1], speed))
    key = "waypoints" if section.has("waypoints") else "waypoint"
    if not 2 <= len(points) <= MAX_WAYPOINTS:
        problems.add(
            section.error(
                key,
                f"{len(points)} waypoints",
                f"from 2 to {MAX_WAYPOINTS} "
                "waypoints ([[traffic.route.waypoint]] tables, the first "
                "the start)",
            )
        )
    loop = problems.attempt(section.boolean, "loop", False)
    acceptance = problems.attempt(
        lambda: section.number("acceptance_m", 0.0, lo=0.0, hi=10_000.0, unit="m")
    )
    problems.attempt(section.finish)
    problems.raise_any()
    if waypoints and math.isnan(waypoints[0].speed):
        first = waypoints[0]
        waypoints[0] = Waypoint(first.north, first.east, waypoints[1].speed)
    for a, b in zip(waypoints, waypoints[1:], strict=False):
        if math.hypot(b.north - a.north, b.east - a.east) < 1.0:
            raise section.error(
                key,
                [[a.north, a.east], [b.north, b.east]],
                "waypoints at least 1 m apart (two in one place give no course)",
            )
    return Route(tuple(waypoints), loop, acceptance)


def _encounter(section: Section, origin: Origin) -> Encounter:
    problems = Problems()
    r = Reading(problems)
    situation = r.get("situation", _situation, section)
    given = [
        k for k in ("situation", "relative_course_deg", "relative_bearing_deg") if section.has(k)
    ]
    if len(given) != 1:
        problems.add(
            section.error(
                given[1] if len(given) > 1 else "situation",
                given or "none",
                "exactly one of situation (" + ", ".join(SITUATIONS) + "), relative_course_deg or "
                "relative_bearing_deg",
            )
        )
    angle = {"lo": -360.0, "hi": 360.0, "unit": "deg"}
    course = r.get("relative_course_deg", _maybe_angle, section, "relative_course_deg", angle)
    bearing = r.get("relative_bearing_deg", _maybe_angle, section, "relative_bearing_deg", angle)
    own = None
    if section.has("own_speed_kn") or section.has("own_speed"):
        own = r.get("own_speed", lambda: speed_of(section, key="own_speed"))
    else:
        section.skip("own_speed_kn", "own_speed")
    encounter = Encounter(
        cpa_m=r.get(
            "cpa_m", section.number, "cpa_m", 0.0, lo=0.0, hi=50_000.0, unit="m", default=0.0
        ),
        tcpa_s=r.get(
            "tcpa_s", section.number, "tcpa_s", lo=1.0, hi=86_400.0, unit="s", default=600.0
        ),
        speed=r.get("speed", speed_of, section, default=0.0),
        situation=situation or "",
        relative_course=course,
        relative_bearing=bearing,
        passes=r.get(
            "passes", section.string, "passes", "", choices=("", *PASSING_SIDES), default=""
        ),
        own_speed=own,
        boat=r.get("boat", section.string, "boat", "", default=""),
    )
    problems.attempt(section.finish)
    problems.raise_any()
    return encounter


def _situation(section: Section) -> str:
    value = section.string("situation", "")
    if section.has("situation") and value not in SITUATIONS:
        raise section.error(
            "situation",
            value,
            "one of " + ", ".join(SITUATIONS) + " (named "
            "from the own ship's side: in crossing-give-way the own ship gives "
            "way)",
        )
    return value


def _maybe_angle(section: Section, key: str, limits: dict[str, Any]) -> float | None:
    if not section.has(key):
        section.skip(key)
        return None
    return math.radians(section.number(key, **limits))


def read_behaviour(section: Section) -> Behaviour:
    value = section.raw("behaviour", "hold")
    if isinstance(value, str):
        if value not in BEHAVIOURS:
            raise section.error(
                "behaviour",
                value,
                "one of " + ", ".join(map(repr, BEHAVIOURS)) + " or a [traffic.behaviour] table",
            )
        return Behaviour(value)
    table = section.table("behaviour", required=True)
    problems = Problems()
    r = Reading(problems)
    default = Behaviour()
    number: Callable[..., float] = table.number
    behaviour = Behaviour(
        kind=r.get("kind", table.string, "kind", "hold", choices=BEHAVIOURS, default="hold"),
        turn_deg=r.get(
            "turn_deg",
            number,
            "turn_deg",
            default.turn_deg,
            lo=5.0,
            hi=120.0,
            unit="deg",
            default=default.turn_deg,
        ),
        act_range_m=r.get(
            "act_range_m",
            number,
            "act_range_m",
            default.act_range_m,
            lo=0.0,
            hi=50_000.0,
            unit="m",
            default=default.act_range_m,
        ),
        act_tcpa_s=r.get(
            "act_tcpa_s",
            number,
            "act_tcpa_s",
            default.act_tcpa_s,
            lo=0.0,
            hi=7200.0,
            unit="s",
            default=default.act_tcpa_s,
        ),
        safe_cpa_m=r.get(
            "safe_cpa_m",
            number,
            "safe_cpa_m",
            default.safe_cpa_m,
            lo=1.0,
            hi=20_000.0,
            unit="m",
            default=default.safe_cpa_m,
        ),
    )
    problems.attempt(table.finish)
    problems.raise_any()
    return behaviour


def _dynamics(section: Section) -> ShipDynamics:
    table = section.table("dynamics")
    default = ShipDynamics()
    if table is None:
        return default
    problems = Problems()
    r = Reading(problems)
    dynamics = ShipDynamics(
        speed_time_constant_s=r.get(
            "speed_time_constant_s",
            table.number,
            "speed_time_constant_s",
            default.speed_time_constant_s,
            lo=1.0,
            hi=3600.0,
            unit="s",
            default=default.speed_time_constant_s,
        ),
        yaw_time_constant_s=r.get(
            "yaw_time_constant_s",
            table.number,
            "yaw_time_constant_s",
            default.yaw_time_constant_s,
            lo=0.5,
            hi=600.0,
            unit="s",
            default=default.yaw_time_constant_s,
        ),
        turning_radius_m=r.get(
            "turning_radius_m",
            table.number,
            "turning_radius_m",
            default.turning_radius_m,
            lo=5.0,
            hi=10_000.0,
            unit="m",
            default=default.turning_radius_m,
        ),
    )
    problems.attempt(table.finish)
    problems.raise_any()
    return dynamics
