"""The Clearpath Heron frontseat protocol as MOOS-IvP backseat drivers (iM200) speak it.

Layouts: shared/reference/protocols.md (heron_nmea REFERENCE.md, MOOS-IvP lib_NMEAParse).
``$PYDIR,<left>,<right>`` sets the two motors' thrust in per cent (-100 .. 100). ``PYDEV``
(heading and speed) and ``PYDEP`` (yaw rate and thrust) need the frontseat's own inner loops,
which hild does not run: they are counted as unsupported.
"""

from __future__ import annotations

from hild.bus.mapping import ActuatorMap, Demand
from hild.bus.sentence import Rejected, Sentence, expect_fields, number


def decode_pydir(s: Sentence, amap: ActuatorMap) -> tuple[Demand, ...]:
    expect_fields(s, 2)
    left_pct = number(s.fields[0], "left thrust")
    right_pct = number(s.fields[1], "right thrust")
    left, right = sides(amap)
    demands = []
    for a, pct in ((left, left_pct), (right, right_pct)):
        if pct is not None:
            demands.append(Demand(a.index, speed=amap.speed_percent(a, pct)))
    if not demands:
        raise Rejected("empty", "PYDIR carries no thrust")
    return tuple(demands)


def sides(amap: ActuatorMap):
    """The left (port-most) and right (starboard-most) motors of a twin-thruster boat."""
    ordered = sorted(amap.actuators, key=lambda a: a.y)
    return ordered[0], ordered[-1]


def decode_unsupported(s: Sentence, amap: ActuatorMap) -> tuple[Demand, ...]:
    raise Rejected("unsupported", f"{s.address}: the frontseat runs no heading or speed loops")
