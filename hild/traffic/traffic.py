"""The traffic around the own ship: the targets' records and the arrays the compiled core
steps (hild/traffic/kernel.py). ``step`` runs inside a tick and allocates nothing; ``add``,
``remove`` and ``retask`` run between ticks (from the control queue).

The arrays have room for MAX_TARGETS rows from the start (the kernel steps the first ``n``),
so a target joining a running run costs no reallocation: its rows are built off the tick
(``prepare``: an encounter placed, its parameters and waypoints laid out) and ``append``
copies them in between two ticks."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hild.traffic.encounter import place
from hild.traffic.kernel import (
    traffic_fleet_tick,
    traffic_geometry,
    traffic_step,
    traffic_tick,
)
from hild.traffic.layout import (
    BEHAVIOUR_COLREG,
    BEHAVIOUR_HOLD,
    MODE_SAIL,
    MODE_STOPPED,
    MOTION_COURSE,
    MOTION_ROUTE,
    P_ACCEPTANCE,
    P_ACT_RANGE,
    P_ACT_TCPA,
    P_BEHAVIOUR,
    P_MOTION,
    P_SAFE_CPA,
    P_SIZE,
    P_SPEED_TAU,
    P_TURN,
    P_TURN_RADIUS,
    P_WP_COUNT,
    P_WP_FIRST,
    P_WP_LOOP,
    P_YAW_TAU,
    SIT_NONE,
    T_BASE_COURSE,
    T_COURSE_CMD,
    T_CPA,
    T_EAST,
    T_ENGAGED,
    T_HEADING,
    T_MIN_RANGE,
    T_MIN_RANGE_T,
    T_MODE,
    T_NORTH,
    T_RANGE,
    T_SITUATION,
    T_SIZE,
    T_SPEED,
    T_SPEED_CMD,
    T_TCPA,
    T_WAYPOINT,
    T_YAW_RATE,
    WP_SIZE,
)
from hild.traffic.targets import (
    BEHAVIOURS,
    MAX_TARGETS,
    Behaviour,
    Course,
    Encounter,
    Motion,
    Route,
    Target,
)
from hild.traffic.view import TrafficView

TWO_PI = 2.0 * math.pi
WAYPOINT_ROOM = 64  # rows of waypoints the arrays start with room for; doubled when short


def _bearing(n0: float, e0: float, n1: float, e1: float) -> float:
    return math.atan2(e1 - e0, n1 - n0) % TWO_PI


def own_course(own_x: np.ndarray) -> tuple[float, float, float, float]:
    """North, east, course and speed of the own ship as an encounter reckons with them."""
    return float(own_x[0]), float(own_x[1]), float(own_x[5]) % TWO_PI, float(own_x[6])


@dataclass(frozen=True, slots=True)
class PreparedTarget:
    """A target with its rows built, ready to join the traffic between two ticks
    (``Traffic.append``): ``row`` and ``params`` (layout.py's T_* and P_*), its route's
    ``waypoints`` (k x WP_SIZE). Read-only arrays: the control queue carries it as a record."""

    target: Target
    row: np.ndarray
    params: np.ndarray
    waypoints: np.ndarray


def prepare(
    target: Target, own_x: np.ndarray, t: float = 0.0, motion: Motion | None = None
) -> PreparedTarget:
    """``target``'s rows at the run's time ``t``, sailing ``motion`` (an encounter's placed
    course, say) or its own (an encounter placed against ``own_x``). ValueError when it
    cannot be set up. Pure: runs anywhere, off the tick."""
    row, params, waypoints = _rows(target, own_x, t, motion)
    for array in (row, params, waypoints):
        array.setflags(write=False)
    return PreparedTarget(target, row, params, waypoints)


class Traffic:
    """The targets of a run and their state, one row each in ``T`` and ``P`` (layout.py).

    ``own_x`` is the own ship's state vector (hild's: north, east, ..., heading at 5, surge
    and sway at 6 and 7), against which encounters are placed (its heading as the course,
    its surge as the speed, unless an encounter gives ``own_speed``) and the geometry is
    judged; ``t`` the run's time now, when the targets' records start.

    In a fleet (``tick_fleet``) the targets judge every boat (each the one that threatens it
    most: hild/traffic/kernel.py), the rows' geometry stays against the first boat, and
    ``range_by_boat``, ``min_range_by_boat`` and ``min_range_t_by_boat`` (n x boats, views of
    arrays with room for every target, like ``T``) hold each boat's range to each target now,
    the smallest so far and when."""

    def __init__(self, targets: Sequence[Target], own_x: np.ndarray, t: float = 0.0) -> None:
        self.t = float(t)
        names = [target.name for target in targets]
        dup = sorted({name for name in names if names.count(name) > 1})
        if dup:
            raise ValueError(f"traffic target names must be unique: {', '.join(dup)} repeated")
        rows = [_rows(target, own_x, t) for target in targets]
        room = max(len(rows), MAX_TARGETS)  # rows for every target a run may have
        self._T = np.zeros((room, T_SIZE))
        self._P = np.zeros((room, P_SIZE))
        for i, (row, params, _) in enumerate(rows):
            self._T[i], self._P[i] = row, params
        self._WP = np.zeros((WAYPOINT_ROOM, WP_SIZE))
        self.WP = self._WP[:0]
        # A fleet's (several boats, ``use_boats``): per target and boat, the range now, the
        # smallest so far and when (room x boats; no columns until then)
        self.boats = 0
        self._R = np.zeros((room, 0))
        self._RMIN = np.zeros((room, 0))
        self._RMINT = np.zeros((room, 0))
        self.targets: tuple[Target, ...] = tuple(targets)
        self._waypoints: list[np.ndarray] = [wp for _, _, wp in rows]  # each target's route
        self._show(len(rows))
        self._pack_waypoints()
        self._geometry(own_x, t)

    def _show(self, n: int) -> None:
        """``T`` and ``P``: the first ``n`` rows of the arrays (views: no copy)."""
        self.T = self._T[:n]
        self.P = self._P[:n]
        self.range_by_boat = self._R[:n]  # (a fleet's: n x boats, see use_boats)
        self.min_range_by_boat = self._RMIN[:n]
        self.min_range_t_by_boat = self._RMINT[:n]

    @property
    def n(self) -> int:
        return len(self.targets)

    # --- the tick ------------------------------------------------------------------------
    def step(self, own_x: np.ndarray, dt: float, t: float) -> None:
        """Advance every target from t to t + dt against the own ship's state at t."""
        traffic_step(self.T, self.P, self.WP, self.n, own_x, dt, t)
        self.t = t + dt

    def tick(
        self, own_before: np.ndarray, own_after: np.ndarray, dt: float, t: float, t_after: float
    ) -> None:
        """``step`` against the own ship at t, then ``measure`` against it at ``t_after``
        (t + dt), in one compiled call (the loop's: no allocation)."""
        traffic_tick(self.T, self.P, self.WP, self.n, own_before, own_after, dt, t, t_after)
        self.t = t_after

    def tick_fleet(
        self, before: np.ndarray, after: np.ndarray, dt: float, t: float, t_after: float
    ) -> None:
        """``tick`` for a fleet: ``before`` and ``after`` the boats' state vectors at t and at
        ``t_after`` (m x state size, row 0 the first boat), each target judging the boat that
        threatens it most (hild/traffic/kernel.py traffic_fleet_tick); the rows' geometry stays
        against the first boat, each boat's ranges go in the ``*_by_boat`` arrays. One compiled
        call, no allocation (but the first time for a number of boats: ``use_boats``)."""
        if before.shape[0] != self.boats:
            self.use_boats(before.shape[0])
        n = self.n
        traffic_fleet_tick(
            self.T,
            self.P,
            self.WP,
            n,
            self.range_by_boat,
            self.min_range_by_boat,
            self.min_range_t_by_boat,
            before,
            after,
            dt,
            t,
            t_after,
        )
        self.t = t_after

    def use_boats(self, boats: int) -> None:
        """Columns for ``boats`` boats in the per-boat arrays (between ticks; what the first
        boat's column holds is the rows' record, the others' start afresh: their range unknown
        until the next step, which reckons them)."""
        room = len(self._T)
        self.boats = int(boats)
        self._R = np.full((room, self.boats), math.nan)
        self._RMIN = np.full((room, self.boats), math.inf)
        self._RMINT = np.zeros((room, self.boats))
        self._RMINT[: self.n] = self.t
        if self.boats:
            self._R[: self.n, 0] = self.T[:, T_RANGE]
            self._RMIN[: self.n, 0] = self.T[:, T_MIN_RANGE]
            self._RMINT[: self.n, 0] = self.T[:, T_MIN_RANGE_T]
        self._show(self.n)

    def measure(self, own_x: np.ndarray, t: float) -> None:
        """Range, bearing, CPA, TCPA and the smallest range against the own ship at t, once
        both have stepped to t (what is reported is then of one instant). No allocation."""
        traffic_geometry(self.T, self.n, own_x, t)

    def view(self) -> TrafficView:
        return TrafficView(self.targets, self.T[: self.n].copy())

    # --- between ticks ---------------------------------------------------------------------
    def index(self, name: str) -> int:
        """The row of the target named ``name`` in T and P (KeyError if there is none)."""
        for i, target in enumerate(self.targets):
            if target.name == name:
                return i
        known = ", ".join(t.name for t in self.targets) or "none"
        raise KeyError(f"no traffic target named {name!r} (targets: {known})")

    def add(self, target: Target, own_x: np.ndarray, t: float = 0.0) -> None:
        """A new target (placed against ``own_x`` if an encounter) at the run's time t."""
        self._check_joins(target)
        self.append(prepare(target, own_x, t), own_x, t)

    def append(self, prepared: PreparedTarget, own_x: np.ndarray, t: float = 0.0) -> None:
        """A target whose rows were built off the tick (``prepare``) joins at the run's time
        t: its rows copied in, no reallocation (but of the waypoints' array, when a long
        route outgrows it: doubled). ValueError for a name the traffic has, or a target
        beyond MAX_TARGETS."""
        target = prepared.target
        self._check_joins(target)
        i, first, k = self.n, len(self.WP), len(prepared.waypoints)
        self._T[i] = prepared.row
        self._T[i, T_MIN_RANGE_T] = t
        self._P[i] = prepared.params
        self._P[i, P_WP_FIRST], self._P[i, P_WP_COUNT] = first, k
        self._R[i], self._RMIN[i], self._RMINT[i] = math.nan, math.inf, t  # (a fleet's)
        self._room_for_waypoints(first + k)
        self._WP[first : first + k] = prepared.waypoints
        self.WP = self._WP[: first + k]
        self.targets = (*self.targets, target)
        self._waypoints.append(prepared.waypoints)
        self._show(i + 1)
        self._geometry(own_x, t)
        if self.boats:  # the first boat's, as the row's; the others' at the next step
            self._R[i, 0], self._RMIN[i, 0] = self._T[i, T_RANGE], self._T[i, T_MIN_RANGE]
            self._RMINT[i, 0] = self._T[i, T_MIN_RANGE_T]

    def _check_joins(self, target: Target) -> None:
        if any(existing.name == target.name for existing in self.targets):
            raise ValueError(
                f"a traffic target named {target.name!r} is already in the run; remove it "
                f"first or give the new one another name"
            )
        if self.n >= MAX_TARGETS:
            raise ValueError(
                f"traffic target {target.name!r}: the run has {self.n} targets, at most "
                f"{MAX_TARGETS}; remove one first"
            )

    def remove(self, name: str) -> None:
        """Take a target out of the run (KeyError if there is none of that name)."""
        i = self.index(name)
        n = self.n
        self._T[i : n - 1] = self._T[i + 1 : n]  # (overlapping: numpy copies as it must)
        self._P[i : n - 1] = self._P[i + 1 : n]
        self._T[n - 1], self._P[n - 1] = 0.0, 0.0
        for by_boat in (self._R, self._RMIN, self._RMINT):  # (a fleet's)
            by_boat[i : n - 1] = by_boat[i + 1 : n]
        self.targets = self.targets[:i] + self.targets[i + 1 :]
        del self._waypoints[i]
        self._show(n - 1)
        self._pack_waypoints()

    def retask(
        self,
        name: str,
        motion: Motion | None = None,
        behaviour: Behaviour | None = None,
        own_x: np.ndarray | None = None,
        t: float = 0.0,
    ) -> None:
        """Give a target a new motion, a new behaviour, or both. A Course keeps its present
        position and takes the new course and speed; a Route sails from where it is to the
        route's waypoints in turn; an Encounter is placed anew against ``own_x``. A target
        giving way goes back to sailing. ``t``: the run's time now (kept for the records of
        the smallest range, which go on across a retask)."""
        i = self.index(name)
        target = self.targets[i]
        T = self.T.copy()
        P = self.P.copy()
        waypoints = self._waypoints[i]
        if behaviour is not None:
            _behaviour_params(P[i], behaviour, name)
        if motion is not None:
            if isinstance(motion, Encounter):
                if own_x is None:
                    raise ValueError(
                        f"retasking {name!r} with an encounter needs the own ship's state "
                        f"(own_x) to place it against"
                    )
                row, params, waypoints = _rows(dataclasses.replace(target, motion=motion), own_x, t)
                for k in (T_MIN_RANGE, T_MIN_RANGE_T, T_SITUATION):  # the run's record
                    row[k] = T[i, k]
                T[i] = row
                P[i, P_MOTION] = params[P_MOTION]
            elif isinstance(motion, Course):
                _check_course(motion, name)
                P[i, P_MOTION] = MOTION_COURSE
                course = motion.course % TWO_PI
                T[i, T_COURSE_CMD] = course
                T[i, T_BASE_COURSE] = course
                T[i, T_SPEED_CMD] = motion.speed
                T[i, T_WAYPOINT] = 0.0
                waypoints = np.zeros((0, WP_SIZE))
                # the record says where it sails from: here
                motion = dataclasses.replace(
                    motion, north=float(T[i, T_NORTH]), east=float(T[i, T_EAST])
                )
            elif isinstance(motion, Route):
                waypoints = _route_array(motion, name, from_here=True)
                P[i, P_MOTION] = MOTION_ROUTE
                P[i, P_WP_LOOP] = 1.0 if motion.loop else 0.0
                P[i, P_ACCEPTANCE] = motion.acceptance_m or P[i, P_TURN_RADIUS]
                first = waypoints[0]
                course = _bearing(T[i, T_NORTH], T[i, T_EAST], first[0], first[1])
                T[i, T_WAYPOINT] = 0.0
                T[i, T_COURSE_CMD] = course
                T[i, T_BASE_COURSE] = course
                T[i, T_SPEED_CMD] = first[2]
            else:
                raise TypeError(f"retask {name!r}: {motion!r} is not a Route, Course or Encounter")
        # whatever changed, a target giving way sails again (its course motion back to base)
        T[i, T_ENGAGED] = 0.0  # judges the next encounter afresh
        if T[i, T_MODE] != MODE_STOPPED or motion is not None:
            T[i, T_MODE] = MODE_SAIL
            if P[i, P_MOTION] == MOTION_COURSE:
                T[i, T_COURSE_CMD] = T[i, T_BASE_COURSE]
        self.T[:], self.P[:] = T, P
        self._waypoints[i] = waypoints
        self.targets = (
            *self.targets[:i],
            dataclasses.replace(
                target,
                motion=motion if motion is not None else target.motion,
                behaviour=behaviour if behaviour is not None else target.behaviour,
            ),
            *self.targets[i + 1 :],
        )
        self._pack_waypoints()
        if own_x is not None:
            self._geometry(own_x, t)

    def summary(self) -> dict[str, dict]:
        """Per target: its MMSI, the smallest range so far and when, the CPA and TCPA as last
        judged (metres to 0.1 m, seconds to 0.1 s; None before the first step)."""
        out = {}
        for i, target in enumerate(self.targets):
            row = self.T[i]
            seen = math.isfinite(row[T_MIN_RANGE])
            out[target.name] = {
                "mmsi": target.identity.mmsi,
                "min_range_m": round(float(row[T_MIN_RANGE]), 1) if seen else None,
                "min_range_t": round(float(row[T_MIN_RANGE_T]), 1) if seen else None,
                "cpa_m": round(float(row[T_CPA]), 1),
                "tcpa_s": round(float(row[T_TCPA]), 1),
            }
        return out

    # --- packing ---------------------------------------------------------------------------
    def _pack_waypoints(self) -> None:
        """Every target's waypoints one after another in ``WP``, each target's first and
        count in its parameters."""
        first = 0
        for i, wp in enumerate(self._waypoints):
            self.P[i, P_WP_FIRST] = first
            self.P[i, P_WP_COUNT] = len(wp)
            first += len(wp)
        self._room_for_waypoints(first)
        if first:
            self._WP[:first] = np.vstack(self._waypoints)
        self.WP = self._WP[:first]

    def _room_for_waypoints(self, rows: int) -> None:
        """The waypoints' array with room for ``rows``: doubled when short (what it holds is
        kept)."""
        if rows > len(self._WP):
            grown = np.zeros((max(rows, 2 * len(self._WP)), WP_SIZE))
            grown[: len(self.WP)] = self.WP
            self._WP = grown
            self.WP = grown[: len(self.WP)]

    def _geometry(self, own_x: np.ndarray, t: float) -> None:
        """Every target's range, bearing, CPA and TCPA against the own ship now, by the
        compiled pass the ticks use (a target just placed has its smallest range so far)."""
        traffic_geometry(self.T, self.n, np.asarray(own_x, dtype=np.float64), t)


def _rows(
    target: Target, own_x: np.ndarray, t: float = 0.0, motion: Motion | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A target's state row, parameter row and waypoints at its start, sailing ``motion``
    (default: its own, an encounter placed against ``own_x``)."""
    T = np.zeros(T_SIZE)
    P = np.zeros(P_SIZE)
    _dynamics_params(P, target)
    _behaviour_params(P, target.behaviour, target.name)
    motion = target.motion if motion is None else motion
    if isinstance(motion, Encounter):
        n, e, c, u = own_course(own_x)
        try:
            motion = place(motion, n, e, c, u)
        except ValueError as err:
            raise ValueError(f"traffic target {target.name!r}: {err}") from None
    waypoints = np.zeros((0, WP_SIZE))
    if isinstance(motion, Course):
        _check_course(motion, target.name)
        P[P_MOTION] = MOTION_COURSE
        course = motion.course % TWO_PI
        T[T_NORTH], T[T_EAST] = motion.north, motion.east
        T[T_SPEED] = T[T_SPEED_CMD] = motion.speed
        T[T_WAYPOINT] = 0.0
    elif isinstance(motion, Route):
        waypoints = _route_array(motion, target.name)
        P[P_MOTION] = MOTION_ROUTE
        P[P_WP_LOOP] = 1.0 if motion.loop else 0.0
        P[P_ACCEPTANCE] = motion.acceptance_m or target.dynamics.turning_radius_m
        T[T_NORTH], T[T_EAST] = waypoints[0, 0], waypoints[0, 1]
        if len(waypoints) > 1:  # heading for the second at its speed
            course = _bearing(*waypoints[0, :2], *waypoints[1, :2])
            T[T_SPEED] = T[T_SPEED_CMD] = waypoints[1, 2]
            T[T_WAYPOINT] = 1.0
        else:  # a route of one point: there already
            course = 0.0
            T[T_MODE] = MODE_STOPPED
    else:
        raise TypeError(
            f"traffic target {target.name!r}: motion {motion!r} is not a Route, Course or Encounter"
        )
    T[T_HEADING] = T[T_COURSE_CMD] = T[T_BASE_COURSE] = course
    T[T_YAW_RATE] = 0.0
    T[T_MIN_RANGE] = math.inf
    T[T_MIN_RANGE_T] = t
    T[T_SITUATION] = SIT_NONE
    return T, P, waypoints


def _dynamics_params(P: np.ndarray, target: Target) -> None:
    d = target.dynamics
    for value, what in (
        (d.speed_time_constant_s, "speed_time_constant_s"),
        (d.yaw_time_constant_s, "yaw_time_constant_s"),
        (d.turning_radius_m, "turning_radius_m"),
    ):
        if not (value > 0.0 and math.isfinite(value)):
            raise ValueError(
                f"traffic target {target.name!r}: dynamics {what} = {value}; give a positive number"
            )
    P[P_SPEED_TAU] = d.speed_time_constant_s
    P[P_YAW_TAU] = d.yaw_time_constant_s
    P[P_TURN_RADIUS] = d.turning_radius_m


def _check_course(course: Course, name: str) -> None:
    values = (course.north, course.east, course.course, course.speed)
    if not all(math.isfinite(v) for v in values) or course.speed < 0.0:
        raise ValueError(
            f"traffic target {name!r}: course {course} needs finite numbers and a speed of "
            f"0 m/s or more"
        )


def _route_array(route: Route, name: str, from_here: bool = False) -> np.ndarray:
    """The route's waypoints (k x WP_SIZE); ``from_here``: the target sails to the first
    too (a retask), so it needs a speed like the others."""
    if not route.waypoints:
        raise ValueError(f"traffic target {name!r}: a route needs at least one waypoint")
    wp = np.array([(w.north, w.east, w.speed) for w in route.waypoints], dtype=np.float64)
    if not np.isfinite(wp).all() or (wp[:, 2] < 0.0).any():
        raise ValueError(
            f"traffic target {name!r}: route waypoints need finite positions and speeds of "
            f"0 m/s or more"
        )
    # the first is the start, unless it loops or the target is retasked to sail to it
    sailed = wp[:, 2] if route.loop or from_here else wp[1:, 2]
    if (sailed <= 0.0).any():
        k = int(np.flatnonzero(wp[:, 2] <= 0.0)[-1])
        raise ValueError(
            f"traffic target {name!r}: route waypoint {k} has speed 0, so the target would "
            f"stop on the leg towards it and never get there; give it a speed above 0 m/s"
            + (
                " (a looping route, or a target retasked to a route, sails to the first "
                "waypoint at that one's speed)"
                if k == 0
                else ""
            )
        )
    if route.acceptance_m < 0.0:
        raise ValueError(
            f"traffic target {name!r}: route acceptance_m = {route.acceptance_m}; give 0 (the "
            f"turning radius) or a positive distance"
        )
    return wp


def _behaviour_params(P: np.ndarray, behaviour: Behaviour, name: str = "") -> None:
    if behaviour.kind not in BEHAVIOURS:
        raise ValueError(
            f"traffic target {name!r}: behaviour {behaviour.kind!r} is not one of "
            f"{', '.join(BEHAVIOURS)}"
        )
    P[P_BEHAVIOUR] = BEHAVIOUR_COLREG if behaviour.kind == "colreg" else BEHAVIOUR_HOLD
    P[P_TURN] = math.radians(behaviour.turn_deg)
    P[P_ACT_RANGE] = behaviour.act_range_m
    P[P_ACT_TCPA] = behaviour.act_tcpa_s
    P[P_SAFE_CPA] = behaviour.safe_cpa_m
