"""The mission: waypoints in NED metres from the first fix, the default one and parsing.

The default is thesis ch. 5's four-waypoint mission laid out around the
vessel's start: a 200 m x 200 m square entered straight ahead, turning to
starboard at each corner, and closing at the start so that laps repeat it:

    WP0 200 m ahead, WP1 200 m ahead and 200 m to starboard,
    WP2 200 m to starboard, WP3 the start itself.

Odin turns at 5 m/s on a radius of about 25 m with 5 degrees of nozzle, so a
200 m side leaves it several hull lengths of straight leg after each
90-degree turn.
"""

from __future__ import annotations

import math
import re

from hild.pilot.guidance import Point
from hild.traffic.read import MAX_DISTANCE_M

DEFAULT_SIDE_M = 200.0
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_PAIR = re.compile(rf"\s*({_NUMBER})\s*,\s*({_NUMBER})\s*")


def default_waypoints(heading: float, side_m: float = DEFAULT_SIDE_M) -> list[Point]:
    """The default square for a start heading ``heading`` [rad] (see the module docstring)."""
    ahead = (math.cos(heading), math.sin(heading))  # NED unit vector along the heading
    starboard = (-math.sin(heading), math.cos(heading))
    corners = ((side_m, 0.0), (side_m, side_m), (0.0, side_m), (0.0, 0.0))
    return [(f * ahead[0] + s * starboard[0], f * ahead[1] + s * starboard[1]) for f, s in corners]


def parse_waypoints(text: str) -> list[Point]:
    """``"N,E;N,E;..."`` (metres north and east of the start) -> [(north, east), ...]."""
    parts = [p for p in text.split(";") if p.strip()]
    if not parts:
        raise ValueError(f"no waypoints in {text!r}; expected N,E;N,E;N,E;N,E in metres")
    points = []
    for part in parts:
        match = _PAIR.fullmatch(part)
        if match is None:
            raise ValueError(
                f"waypoint {part.strip()!r} in {text!r} is not N,E; "
                "expected N,E;N,E;N,E;N,E in metres from the start, e.g. 200,0;200,200;0,200;0,0"
            )
        north, east = float(match.group(1)), float(match.group(2))
        if not (math.isfinite(north) and math.isfinite(east)):
            raise ValueError(f"waypoint {part.strip()!r} is not finite")
        if math.hypot(north, east) > MAX_DISTANCE_M:
            limit_km = MAX_DISTANCE_M / 1000
            raise ValueError(
                f"waypoint {part.strip()!r} is farther than {limit_km:g} km "
                "from the start (a scenario's limit)"
            )
        points.append((north, east))
    return points
