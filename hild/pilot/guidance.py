"""Line-of-sight guidance along straight legs between waypoints (thesis ch. 5, Fossen 2011).

Positions are NED metres relative to the first fix. A leg runs from one
waypoint (or the start) to the next; the vessel steers for a point
``lookahead_m`` ahead of its projection on the leg. The target switches to the
next waypoint when the vessel is inside the acceptance circle, or when its
along-track distance passes the waypoint, so a missed circle never hangs the
mission.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from hild.pilot.angles import wrap

Point = tuple[float, float]  # (north, east) [m]


@dataclass(frozen=True)
class GuidanceConfig:
    # Delta, about two of Odin's hull lengths (Fossen 2011 suggests 2-5), tuned with the gains.
    lookahead_m: float = 20.0
    # Odin turns 90 degrees at 5 m/s on a radius of about 15 m under the heading PID, so the
    # turn starts where a circle of that radius inscribed in the corner meets the leg (thesis
    # Fig. 5.1), and at 5 m between 1 Hz fixes a fix always lands inside a pass within 14 m.
    acceptance_radius_m: float = 15.0


@dataclass(frozen=True)
class LegGeometry:
    """Where the vessel is relative to one leg."""

    path_angle: float  # alpha: direction of the leg from north [rad]
    along_m: float  # s: distance along the leg from its start
    cross_m: float  # e: cross-track error, positive to starboard of the path (right of it)
    length_m: float


def leg_geometry(start: Point, end: Point, position: Point) -> LegGeometry:
    """Along- and cross-track distances of ``position`` on the leg ``start`` -> ``end``."""
    dn, de = end[0] - start[0], end[1] - start[1]
    alpha = math.atan2(de, dn)  # path-tangential angle, Fossen (2011) sec. 10.3.2
    pn, pe = position[0] - start[0], position[1] - start[1]
    c, s = math.cos(alpha), math.sin(alpha)
    # rotate the offset into the path frame: s along, e across (Fossen 2011 sec. 10.3.2)
    return LegGeometry(alpha, pn * c + pe * s, -pn * s + pe * c, math.hypot(dn, de))


def los_course(geometry: LegGeometry, lookahead_m: float) -> float:
    """Desired course chi_d = alpha + atan(-e / Delta) (lookahead-based LOS, Fossen 2011)."""
    return wrap(geometry.path_angle + math.atan(-geometry.cross_m / lookahead_m))


@dataclass(frozen=True)
class WaypointReached:
    """A waypoint of the mission switched past."""

    index: int  # which of the mission's waypoints
    lap: int
    t: float  # sentence time of the fix that switched [s]
    closest_m: float  # the closest of the fixes while it was the target
    by: str  # "radius" (inside the acceptance circle) or "passed" (along-track)


class WaypointTracker:
    """The active leg of a mission of ``waypoints`` repeated ``laps`` times."""

    def __init__(
        self, waypoints: Sequence[Point], laps: int, start: Point, acceptance_radius_m: float
    ):
        if not waypoints:
            raise ValueError("a mission needs at least one waypoint")
        if laps < 1:
            raise ValueError(f"laps must be at least 1, not {laps}")
        self.waypoints = [(float(n), float(e)) for n, e in waypoints]
        self.laps = laps
        self.radius = acceptance_radius_m
        self.step = 0  # index of the target in the flattened route
        self.leg_start: Point = (float(start[0]), float(start[1]))
        self.closest = math.inf

    @property
    def total(self) -> int:
        return len(self.waypoints) * self.laps

    @property
    def finished(self) -> bool:
        return self.step >= self.total

    @property
    def target_index(self) -> int:
        return self.step % len(self.waypoints)

    @property
    def lap(self) -> int:
        return self.step // len(self.waypoints)

    @property
    def target(self) -> Point:
        return self.waypoints[self.target_index]

    def update(self, t: float, position: Point) -> tuple[LegGeometry | None, list[WaypointReached]]:
        """Switch past every waypoint this fix reaches; the active leg's geometry after it."""
        reached: list[WaypointReached] = []
        while not self.finished:
            target = self.target
            geometry = leg_geometry(self.leg_start, target, position)
            distance = math.hypot(position[0] - target[0], position[1] - target[1])
            self.closest = min(self.closest, distance)
            if distance <= self.radius:
                by = "radius"
            elif geometry.along_m >= geometry.length_m:
                by = "passed"
            else:
                return geometry, reached
            reached.append(WaypointReached(self.target_index, self.lap, t, self.closest, by))
            self.leg_start = target
            self.step += 1
            self.closest = math.inf
        return None, reached
