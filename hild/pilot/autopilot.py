"""The control law: LOS guidance feeding a PID heading and a PI speed controller (thesis ch. 5).

``Autopilot.update`` takes one navigation fix (NED metres from the first fix,
radians, seconds of sentence time) and returns a thrust demand in [0, 1] and a
steering demand in [-1, 1] (positive turns the bow to starboard). It is pure:
no I/O, no clock, so the tests close the loop on the vessel model with it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from hild.pilot.angles import wrap
from hild.pilot.control import Pid, PidGains
from hild.pilot.guidance import (
    GuidanceConfig,
    Point,
    WaypointReached,
    WaypointTracker,
    los_course,
)

# Tuned on Odin in-process, updated at 1 Hz and at 10 Hz from the true state, in calm and in
# gale-calm-sea (tests/test_pilot.py). Odin's yaw is quick (3 deg of nozzle turns it at about
# 8 deg/s at 5 m/s) and the nozzles lag by 1 s, so at 1 Hz the derivative carries the damping;
# the integral holds the nozzle against the gale's steady yaw moment.
# Steering demand per rad of heading error, per rad s, per rad/s of yaw rate:
HEADING_GAINS = PidGains(kp=1.3, ki=0.1, kd=1.4)
# Thrust demand per m/s of speed error and per m (m/s times s); ~0.78 holds 5 m/s in calm:
SPEED_GAINS = PidGains(kp=0.2, ki=0.15)


@dataclass(frozen=True)
class PilotConfig:
    speed_ref: float = 5.0  # [m/s], thesis ch. 5
    guidance: GuidanceConfig = field(default_factory=GuidanceConfig)
    heading: PidGains = HEADING_GAINS
    speed: PidGains = SPEED_GAINS
    heading_integral_limit: float = 0.3  # of the steering demand
    heading_integral_band: float = math.radians(15.0)  # integrate only closer than this
    min_speed_for_course: float = 1.0  # [m/s]: below it course over ground means nothing
    max_gap_s: float = 5.0  # a longer gap between fixes skips integration and rate estimates


@dataclass(frozen=True)
class NavFix:
    """One navigation fix in the pilot's frame; ``None`` where the sensors said nothing."""

    t: float  # sentence time [s]
    north: float  # [m] from the first fix
    east: float
    heading: float | None = None  # psi [rad]
    sog: float | None = None  # speed over ground [m/s]
    cog: float | None = None  # course over ground chi [rad]


@dataclass(frozen=True)
class Demand:
    thrust: float  # [0, 1]
    steer: float  # [-1, 1], positive turns the bow to starboard


NEUTRAL = Demand(0.0, 0.0)


@dataclass(frozen=True)
class PilotStep:
    """What one fix produced: the demand and what the guidance saw."""

    demand: Demand
    reached: tuple[WaypointReached, ...] = ()
    cross_track_m: float | None = None
    heading_ref: float | None = None
    heading: float = 0.0
    speed: float = 0.0
    finished: bool = False


class Autopilot:
    """LOS waypoint guidance, heading PID and speed PI, one update per fix."""

    def __init__(self, config: PilotConfig, waypoints: Sequence[Point], laps: int = 1):
        self.config = config
        self.waypoints = list(waypoints)
        self.laps = laps
        self.tracker: WaypointTracker | None = None
        limit = config.heading_integral_limit
        self.heading_pid = Pid(
            config.heading, -1.0, 1.0, -limit, limit, config.heading_integral_band
        )
        self.speed_pid = Pid(config.speed, 0.0, 1.0)
        self.reached: list[WaypointReached] = []
        self._last: NavFix | None = None
        self._heading: float | None = None
        self._rate: tuple[float, float] | None = None  # last backward difference: (rate, dt)
        self._xte_sq = 0.0
        self._xte_max = 0.0
        self._xte_n = 0

    @property
    def finished(self) -> bool:
        return self.tracker is not None and self.tracker.finished

    def update(self, fix: NavFix) -> PilotStep:
        cfg = self.config
        last = self._last
        dt = 0.0 if last is None else fix.t - last.t
        fresh = 0.0 < dt <= cfg.max_gap_s  # rates and integrals only over a sane step
        speed = self._speed(fix, last, dt if fresh else 0.0)
        heading = self._heading_of(fix, speed)
        yaw_rate = self._yaw_rate(heading, dt if fresh else 0.0)
        self._last = fix
        self._heading = heading

        position = (fix.north, fix.east)
        if self.tracker is None:
            self.tracker = WaypointTracker(
                self.waypoints, self.laps, position, cfg.guidance.acceptance_radius_m
            )
        geometry, reached = self.tracker.update(fix.t, position)
        self.reached.extend(reached)
        if geometry is None:
            return PilotStep(NEUTRAL, tuple(reached), None, None, heading, speed, True)

        self._record_xte(geometry.cross_m)
        heading_ref = los_course(geometry, cfg.guidance.lookahead_m)  # steered as the heading
        step_dt = dt if fresh else 0.0
        steer = self.heading_pid.update(wrap(heading_ref - heading), step_dt, yaw_rate)
        thrust = self.speed_pid.update(cfg.speed_ref - speed, step_dt)
        return PilotStep(
            Demand(thrust, steer), tuple(reached), geometry.cross_m, heading_ref, heading, speed
        )

    def _speed(self, fix: NavFix, last: NavFix | None, dt: float) -> float:
        """Speed over ground as reported, else from the change of position."""
        if fix.sog is not None:
            return fix.sog
        if last is not None and dt > 0.0:
            return math.hypot(fix.north - last.north, fix.east - last.east) / dt
        return 0.0

    def _yaw_rate(self, heading: float, dt: float) -> float:
        """psi_dot at this fix from the last three headings: a second-order backward difference.

        The plain difference is the mean rate over the last interval, half an
        interval late (0.5 s at 1 Hz); extrapolating the last two differences
        removes that lag (three-point backward formula for uneven steps).
        """
        if dt <= 0.0 or self._heading is None:
            self._rate = None
            return 0.0
        rate = wrap(heading - self._heading) / dt
        previous, self._rate = self._rate, (rate, dt)
        if previous is None:
            return rate
        rate_before, dt_before = previous
        return rate + (rate - rate_before) * dt / (dt + dt_before)

    def _heading_of(self, fix: NavFix, speed: float) -> float:
        """The heading; without a heading sensor the course over ground, else the last one."""
        if fix.heading is not None:
            return wrap(fix.heading)
        if fix.cog is not None and speed >= self.config.min_speed_for_course:
            return wrap(fix.cog)
        return 0.0 if self._heading is None else self._heading

    def _record_xte(self, cross_m: float) -> None:
        self._xte_sq += cross_m * cross_m
        self._xte_n += 1
        self._xte_max = max(self._xte_max, abs(cross_m))

    def summary(self) -> dict:
        """The mission so far, for the final JSON line."""
        n = self._xte_n
        return {
            "completed": self.finished,
            "laps": self.laps,
            "waypoints": [
                {
                    "index": r.index,
                    "lap": r.lap,
                    "closest_m": round(r.closest_m, 1),
                    "t": round(r.t, 1),
                    "by": r.by,
                }
                for r in self.reached
            ],
            "xte_rms_m": round(math.sqrt(self._xte_sq / n), 2) if n else None,
            "xte_max_m": round(self._xte_max, 2) if n else None,
        }
