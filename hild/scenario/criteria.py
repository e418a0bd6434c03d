"""A run's metrics from what the boat did (the simulated truth), and the verdict on them.

The metrics are worked out from the true track, not from what the controller believed:
a controller that thinks it is on its line while its GNSS drifts fails here. Each criterion
of the scenario's ``[criteria]`` table is one threshold on one metric; the verdict passes
only if every criterion holds, and says for each how far it was from its threshold and when.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from hild.scenario.file import Criteria, Mission

# The metrics every run reports (the sweep table's columns, in this order); NaN: not defined
# for this run (no traffic, no command, a mission not completed).
METRICS = (
    "min_cpa_m",
    "xte_rms_m",
    "xte_max_m",
    "waypoints_reached",
    "waypoints_total",
    "time_to_complete_s",
    "geofence_outside_m",
    "max_roll_deg",
    "watchdog_trips",
    "command_rate_hz",
    "max_command_age_s",
    "diverged",
)

# The criteria that hold or fail with no threshold to measure a distance against (their
# thresholds are 0, or the mission's own waypoint count): a sweep's margin counts them only
# when they fail, and says no share of a threshold for them.
PASS_OR_FAIL = ("all_waypoints", "geofence", "no_watchdog_trip", "no_divergence")


def pass_or_fail(name: str) -> bool:
    """Whether the criterion ``name`` is one of PASS_OR_FAIL (a fleet boat's criterion is
    named ``BOAT.name``: hild/scenario/fleet.py)."""
    return name.rsplit(".", 1)[-1] in PASS_OR_FAIL


@dataclass(frozen=True)
class CriterionResult:
    name: str  # the [criteria] key
    threshold: float
    value: float  # the metric (NaN when the run gave none)
    passed: bool
    by: float  # how far past the threshold (positive: failed by that much, in its unit)
    at_s: float | None  # when it was worst or first failed [s of simulated time]
    unit: str

    def sentence(self) -> str:
        verdict = "pass" if self.passed else "FAIL"
        when = f" at t={self.at_s:.1f} s" if self.at_s is not None else ""
        value = "none" if math.isnan(self.value) else f"{self.value:.3g}"
        margin = "" if self.passed else f", by {self.by:.3g} {self.unit}".rstrip()
        return (
            f"{verdict}  {self.name}: {value} against {self.threshold:g} {self.unit}"
            f"{margin}{when}".rstrip()
        )


@dataclass(frozen=True)
class TrackMetrics:
    """The metrics and when each was reached (for the report)."""

    values: dict[str, float]
    when: dict[str, float]
    reached: tuple[tuple[int, int, float], ...]  # (waypoint index, lap, t) in order


def judge(criteria: Criteria, metrics: TrackMetrics, duration_s: float) -> list[CriterionResult]:
    """Each criterion of the scenario against the run's metrics, in [criteria]'s order."""
    v, w = metrics.values, metrics.when
    out: list[CriterionResult] = []

    def at_most(name: str, metric: str, threshold: float | None, unit: str) -> None:
        if threshold is None:
            return
        value = v[metric]
        passed = not math.isnan(value) and value <= threshold
        by = (value - threshold) if not math.isnan(value) else math.inf
        out.append(CriterionResult(name, threshold, value, passed, by, w.get(metric), unit))

    def at_least(
        name: str, metric: str, threshold: float | None, unit: str, none_passes: bool = False
    ) -> None:
        if threshold is None:
            return
        value = v[metric]
        if math.isnan(value):
            passed, by = none_passes, (0.0 if none_passes else math.inf)
        else:
            passed, by = value >= threshold, threshold - value
        out.append(CriterionResult(name, threshold, value, passed, by, w.get(metric), unit))

    # no target in the run: nothing came close
    at_least("min_cpa_m", "min_cpa_m", criteria.min_cpa_m, "m", none_passes=True)
    at_most("xte_rms_m", "xte_rms_m", criteria.xte_rms_m, "m")
    at_most("xte_max_m", "xte_max_m", criteria.xte_max_m, "m")
    if criteria.all_waypoints:
        total = v["waypoints_total"]
        reached = v["waypoints_reached"]
        out.append(
            CriterionResult(
                "all_waypoints",
                total,
                reached,
                reached >= total,
                total - reached,
                w.get("waypoints_reached"),
                "waypoints",
            )
        )
    at_most("complete_within_s", "time_to_complete_s", criteria.complete_within_s, "s")
    if criteria.geofence is not None:
        at_most("geofence", "geofence_outside_m", 0.0, "m outside")
    at_most("max_roll_deg", "max_roll_deg", criteria.max_roll_deg, "deg")
    if criteria.no_watchdog_trip:
        at_most("no_watchdog_trip", "watchdog_trips", 0.0, "trips")
    at_least("min_command_rate_hz", "command_rate_hz", criteria.min_command_rate_hz, "Hz")
    at_most("max_command_age_s", "max_command_age_s", criteria.max_command_age_s, "s")
    if criteria.no_divergence:
        at_most("no_divergence", "diverged", 0.0, "")
    return out


# --- the metrics ------------------------------------------------------------------------------


class MissionWalk:
    """Walk the true track along the mission, one position at a time: the waypoints reached
    (index, lap, t), the cross-track error's RMS and maximum over the legs sailed [m], and
    when the maximum was.

    Leg k runs from the previous waypoint (the start position for the first) to waypoint k;
    the target moves on when the boat comes within the acceptance radius (reached), or when
    it passes the waypoint (along-track beyond its end: missed), as a waypoint tracker does.
    The cross-track error is the distance to the leg's line while the leg is sailed.
    """

    def __init__(self, mission: Mission):
        self.targets = [
            (i, lap, w.north, w.east)
            for lap in range(mission.laps)
            for i, w in enumerate(mission.waypoints)
        ]
        self.r2 = mission.acceptance_m**2
        self.reached: list[tuple[int, int, float]] = []
        self.k = 0  # the target's place in targets
        self.a: tuple[float, float] | None = None  # the leg's start
        self.sq, self.n, self.worst = 0.0, 0, 0.0
        self.worst_t: float | None = None
        self._lengths: np.ndarray | None = None  # each leg's, once the start is known
        self._target_array = np.zeros((0, 2))

    @property
    def complete(self) -> bool:
        return self.k >= len(self.targets) and len(self.reached) == len(self.targets)

    @property
    def done(self) -> bool:
        return self.k >= len(self.targets)

    def feed(self, t: float, north: float, east: float) -> None:
        if self.a is None:
            self.a = (north, east)
        targets = self.targets
        while self.k < len(targets):
            index, lap, bn, be = targets[self.k]
            dn, de = north - bn, east - be
            if dn * dn + de * de <= self.r2:
                self.reached.append((index, lap, t))
            else:
                ln, le = bn - self.a[0], be - self.a[1]
                length2 = ln * ln + le * le
                if length2 == 0.0 or (north - self.a[0]) * ln + (east - self.a[1]) * le < length2:
                    break  # still on this leg
            self.a = (bn, be)
            self.k += 1
        if self.k >= len(targets):
            return
        _, _, bn, be = targets[self.k]
        ln, le = bn - self.a[0], be - self.a[1]
        rn, re = north - self.a[0], east - self.a[1]
        length = math.hypot(ln, le)
        cross = abs(ln * re - le * rn) / length if length else math.hypot(rn, re)
        self.sq += cross * cross
        self.n += 1
        if cross > self.worst:
            self.worst, self.worst_t = cross, t

    def feed_rows(self, rows: np.ndarray) -> None:
        """``feed`` each row (t, north, east, ...) in order, in one compiled call once the
        first position is in and every leg has a length (else row by row, as ``feed``)."""
        if self.done or not len(rows):
            return
        if self.a is None:
            self.feed(float(rows[0, 0]), float(rows[0, 1]), float(rows[0, 2]))
            rows = rows[1:]
        lengths = self._leg_lengths()
        if lengths is None:
            for t, north, east in rows[:, :3].tolist():
                if self.done:
                    break
                self.feed(t, north, east)
            return
        assert self.a is not None
        state = np.array([self.k, self.sq, self.n, self.worst, _NO_TIME, self.a[0], self.a[1]])
        if self.worst_t is not None:
            state[4] = self.worst_t
        reached = np.empty((len(self.targets), 2))
        got = walk_rows(rows, self._target_array, lengths, self.r2, state, reached)
        for k, t in reached[:got].tolist():
            index, lap, _, _ = self.targets[int(k)]
            self.reached.append((index, lap, t))
        self.k, self.sq, self.n, self.worst = int(state[0]), state[1], int(state[2]), state[3]
        self.worst_t = None if math.isnan(state[4]) else state[4]
        self.a = (state[5], state[6])

    def _leg_lengths(self) -> np.ndarray | None:
        """Each leg's length as ``feed`` works it out (None while a leg has none)."""
        if self._lengths is None:
            assert self.a is not None
            starts = [self.a, *((bn, be) for _, _, bn, be in self.targets[:-1])]
            self._lengths = np.array(
                [
                    math.hypot(bn - an, be - ae)
                    for (an, ae), (_, _, bn, be) in zip(starts, self.targets, strict=True)
                ]
            )
            self._target_array = np.array([(bn, be) for _, _, bn, be in self.targets])
            self._target_array = self._target_array.reshape(-1, 2)
        return self._lengths if bool(np.all(self._lengths > 0.0)) else None

    def xte(self) -> tuple[float, float, float | None]:
        """RMS and maximum cross-track error [m] (NaN before any leg), and when the maximum."""
        if not self.n:
            return math.nan, math.nan, None
        # (Python floats, as every metric is: the compiled walk leaves numpy's in its state,
        # and a verdict compared from them was numpy's bool, which --json could not write)
        at = None if self.worst_t is None else float(self.worst_t)
        return math.sqrt(self.sq / self.n), float(self.worst), at


_NO_TIME = math.nan  # worst_t before any cross-track error


@njit(cache=True)
def walk_rows(rows, targets, lengths, r2, state, reached):
    """MissionWalk.feed over rows, the same arithmetic in the same order. ``state`` holds
    the walk's target, sum of squares, count, worst, its time and the leg's start (north,
    east) and is updated; each target reached is written to ``reached`` (its place, t).
    Returns the number reached."""
    k, sq, n, worst, worst_t = int(state[0]), state[1], state[2], state[3], state[4]
    a0, a1 = state[5], state[6]
    total = targets.shape[0]
    got = 0
    for r in range(rows.shape[0]):
        if k >= total:
            break
        t, north, east = rows[r, 0], rows[r, 1], rows[r, 2]
        while k < total:
            bn, be = targets[k, 0], targets[k, 1]
            dn, de = north - bn, east - be
            if dn * dn + de * de <= r2:
                reached[got, 0] = k
                reached[got, 1] = t
                got += 1
            else:
                ln, le = bn - a0, be - a1
                length2 = ln * ln + le * le
                if length2 == 0.0 or (north - a0) * ln + (east - a1) * le < length2:
                    break
            a0, a1 = bn, be
            k += 1
        if k >= total:
            break
        bn, be = targets[k, 0], targets[k, 1]
        ln, le = bn - a0, be - a1
        rn, re = north - a0, east - a1
        cross = abs(ln * re - le * rn) / lengths[k]
        sq += cross * cross
        n += 1
        if cross > worst:
            worst, worst_t = cross, t
    state[0], state[1], state[2], state[3], state[4] = k, sq, n, worst, worst_t
    state[5], state[6] = a0, a1
    return got


def outside_distance(north: np.ndarray, east: np.ndarray, polygon) -> np.ndarray:
    """How far each point is outside the polygon [m] (0 inside): even-odd ray casting for
    inside, the nearest edge's distance for outside."""
    poly = np.asarray(polygon, dtype=float)
    inside = np.zeros(len(north), dtype=bool)
    nearest = np.full(len(north), np.inf)
    for (n1, e1), (n2, e2) in zip(poly, np.roll(poly, -1, axis=0), strict=True):
        crosses = (e1 > east) != (e2 > east)
        with np.errstate(divide="ignore", invalid="ignore"):
            at = n1 + (east - e1) * (n2 - n1) / (e2 - e1)
        inside ^= crosses & (north < at)
        dn, de = n2 - n1, e2 - e1
        length2 = dn * dn + de * de
        s = np.clip(((north - n1) * dn + (east - e1) * de) / length2, 0.0, 1.0)
        nearest = np.minimum(nearest, np.hypot(north - (n1 + s * dn), east - (e1 + s * de)))
    return np.where(inside, 0.0, nearest)
