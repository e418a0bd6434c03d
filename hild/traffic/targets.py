"""A traffic target as a bench or a traffic file describes it: who it is (what its AIS
transponder says), how it moves, how it behaves towards the own ship, how a ship of its kind
answers its helm. Frozen records: the control queue carries new ones, never changes to these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

KNOT = 1852.0 / 3600.0  # m/s

AIS_CLASSES = ("A", "B")
BEHAVIOURS = ("hold", "colreg")
# Named COLREG situations, from the own ship's side (the controller under test), as test
# suites name them: in "crossing-give-way" the own ship must give way (the target comes from
# its starboard side), in "crossing-stand-on" the target must (it comes from the port side).
SITUATIONS = ("head-on", "crossing-give-way", "crossing-stand-on", "overtaking", "overtaken")
PASSING_SIDES = ("ahead", "astern", "port", "starboard")
# The most targets a run has: a bench's [[traffic]] (hild/traffic/read.py) and the targets
# added while it runs (hild/runtime.py) alike. Far more than a receiver shows a bench's
# controller; a typo's guard, and what bounds the traffic's arrays and reports.
MAX_TARGETS = 200


@dataclass(frozen=True)
class Identity:
    """What the target's AIS transponder says of it (ITU-R M.1371-5, messages 5 and 24)."""

    mmsi: int  # 9 digits
    name: str  # up to 20 characters of the AIS 6-bit alphabet
    callsign: str = ""  # up to 7 characters
    ship_type: int = 70  # AIS ship and cargo type: 70 cargo, 80 tanker, 60 passenger, 37 pleasure
    to_bow: int = 0  # A: antenna to bow [m]
    to_stern: int = 0  # B: antenna to stern [m]
    to_port: int = 0  # C: antenna to port side [m]
    to_starboard: int = 0  # D: antenna to starboard side [m]
    nav_status: int = 0  # 0 under way using engine, 1 at anchor, 5 moored, 8 sailing, 15 default
    ais_class: str = "A"  # "A" or "B"
    imo: int = 0  # IMO number (0: none)
    destination: str = ""  # up to 20 characters
    draught: float = 0.0  # m, 0.1 m resolution

    @property
    def length(self) -> float:
        return float(self.to_bow + self.to_stern)

    @property
    def beam(self) -> float:
        return float(self.to_port + self.to_starboard)


@dataclass(frozen=True)
class Waypoint:
    north: float  # m from the run's origin
    east: float  # m
    speed: float  # speed on the leg towards this waypoint [m/s]


@dataclass(frozen=True)
class Route:
    """Sail from waypoint to waypoint (the first is the start), each leg at its speed."""

    waypoints: tuple[Waypoint, ...]
    loop: bool = False  # after the last, back to the first; else stop at the last
    acceptance_m: float = 0.0  # 0: the turning radius


@dataclass(frozen=True)
class Course:
    """A constant course and speed from a start point."""

    north: float  # m from the run's origin
    east: float  # m
    course: float  # rad, true, 0 .. 2 pi
    speed: float  # m/s


@dataclass(frozen=True)
class Encounter:
    """Placed relative to the own ship so that, if both hold course and speed, the closest
    point of approach is ``cpa_m`` at ``tcpa_s`` after the start: by a named situation (which
    fixes the target's course relative to the own ship's), by a course relative to the own
    ship's, or by the relative bearing the target is first seen at."""

    cpa_m: float
    tcpa_s: float
    speed: float  # the target's speed [m/s]
    situation: str = ""  # one of SITUATIONS, or ""
    relative_course: float | None = None  # target course minus own course [rad]
    relative_bearing: float | None = None  # of the target from the own ship at the start [rad]
    passes: str = ""  # where the target is at the CPA, seen from the own ship (PASSING_SIDES)
    own_speed: float | None = None  # the own ship's speed to reckon with [m/s]; None: the bench's
    boat: str = ""  # a fleet's: the boat it is placed against, at its start ("": the first)


Motion = Route | Course | Encounter


@dataclass(frozen=True)
class Behaviour:
    """How the target answers the own ship. ``hold``: never manoeuvres for it. ``colreg``: when
    it is the give-way vessel (COLREG rules 13-15) and a collision threatens (the CPA under
    ``safe_cpa_m``), it turns ``turn_deg`` to starboard once the own ship is within
    ``act_range_m`` or the TCPA within ``act_tcpa_s``, and comes back to its course once
    clear (the range beyond ``safe_cpa_m`` and, on the course it comes back to, the CPA
    passed or no nearer than ``safe_cpa_m``); it stands on otherwise (rule 17). It judges an
    encounter once, when the collision first threatens, and keeps to it until clear."""

    kind: str = "hold"  # one of BEHAVIOURS
    turn_deg: float = 60.0
    act_range_m: float = 1852.0
    act_tcpa_s: float = 360.0
    safe_cpa_m: float = 500.0


@dataclass(frozen=True)
class ShipDynamics:
    """How the ship answers its helm and telegraph: first-order speed and yaw rate, a yaw
    rate no higher than speed over turning radius."""

    speed_time_constant_s: float = 60.0
    yaw_time_constant_s: float = 10.0
    turning_radius_m: float = 300.0


@dataclass(frozen=True)
class Target:
    """One traffic target: its ``name`` is unique in the run (topics, control, recordings)."""

    name: str
    identity: Identity
    motion: Motion
    behaviour: Behaviour = field(default_factory=Behaviour)
    dynamics: ShipDynamics = field(default_factory=ShipDynamics)
