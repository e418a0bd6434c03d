"""What a run did, tick by tick, and the metrics and verdict worked out from it.

``RunTrack`` is fed the simulated truth after every tick (position, roll), the instants at
which a command was applied, and at the end the traffic's closest approaches and the
watchdogs' trips; ``result`` judges the scenario's criteria on it. The lockstep runner and
the daemon's observer (an external controller) feed it the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hild.scenario.criteria import (
    CriterionResult,
    MissionWalk,
    TrackMetrics,
    judge,
    outside_distance,
)
from hild.scenario.file import Scenario
from hild.traffic.layout import T_MIN_RANGE, T_MIN_RANGE_T

TRACK_COLUMNS = ("t", "north", "east", "down", "roll")  # a run's track, one row per tick


@dataclass(frozen=True)
class RunResult:
    """One run: its verdict, metrics and criteria, and what it was."""

    scenario: str
    seed: int
    passed: bool
    ended: str  # completed, duration, diverged, controller_error (external: controller-exited)
    duration_s: float  # simulated
    metrics: dict[str, float]
    criteria: tuple[CriterionResult, ...]
    reached: tuple[tuple[int, int, float], ...]
    controller: dict = field(default_factory=dict)  # the controller's own summary
    wall_s: float = 0.0
    track: np.ndarray | None = None  # TRACK_COLUMNS by tick, when asked for
    traffic: dict = field(default_factory=dict)  # name -> closest approach, when, mmsi
    fault: str | None = None  # what the controller did when it failed the run (judge.py)
    # a fleet's (hild/scenario/fleet.py): each boat's own result, and the two boats that came
    # closest to each other; controller and traffic then hold each boat's under its name
    boats: dict[str, RunResult] = field(default_factory=dict)
    closest_pair: tuple[str, str] | None = None

    @property
    def failed(self) -> tuple[CriterionResult, ...]:
        return tuple(c for c in self.criteria if not c.passed)


def approaches(traffic) -> dict:
    """Each target's closest approach to the own ship so far, and when (a Traffic or None)."""
    if traffic is None:
        return {}
    view = traffic.view()
    return {
        target.name: {
            "mmsi": target.identity.mmsi,
            "min_range_m": float(row[T_MIN_RANGE]),
            "at_s": float(row[T_MIN_RANGE_T]),
        }
        for target, row in zip(view.targets, view.state, strict=True)
    }


def approaches_of_boat(traffic, boat: int) -> dict:
    """A fleet boat's closest approach to each target (its index in the bench's boats; the
    first boat's is ``approaches``): the traffic keeps each boat's (hild/traffic/traffic.py)."""
    if traffic is None or boat == 0:
        return approaches(traffic)
    ranges, times = traffic.min_range_by_boat, traffic.min_range_t_by_boat
    return {
        target.name: {
            "mmsi": target.identity.mmsi,
            "min_range_m": float(ranges[i, boat]),
            "at_s": float(times[i, boat]),
        }
        for i, target in enumerate(traffic.targets)
    }


class RunTrack:
    """The truth of one run, tick by tick, in a preallocated array."""

    def __init__(self, scenario: Scenario, dt: float):
        self.scenario = scenario
        self.dt = dt
        n = int(math.floor(scenario.duration_s / dt + 1e-9)) + 1
        self.rows = np.empty((n, len(TRACK_COLUMNS)))
        self.k = -1  # the last row written
        self.walk = MissionWalk(scenario.mission)
        self.command_times: list[float] = []

    @property
    def full(self) -> bool:
        return self.k >= len(self.rows) - 1

    def record(self, t: float, x: np.ndarray) -> None:
        """The state after a tick (the first call: the start)."""
        if self.full:
            return
        self.k += 1
        row = self.rows[self.k]
        row[0] = t
        row[1:4] = x[:3]
        row[4] = x[3]
        if not self.walk.done:
            self.walk.feed(t, float(x[0]), float(x[1]))

    def written(self, n: int) -> None:
        """The next n rows were written in place (``rows[k + 1 : k + 1 + n]``, by a compiled
        stretch of ticks): take them in as n calls of ``record`` would."""
        rows = self.rows[self.k + 1 : self.k + 1 + n]
        self.k += len(rows)
        self.walk.feed_rows(rows)

    def command_at(self, t: float) -> None:
        self.command_times.append(t)

    def result(
        self,
        ended: str,
        approaches: dict,
        watchdog_trips: int,
        controller: dict,
        wall_s: float,
        keep_track: bool = False,
        fault: str | None = None,
    ) -> RunResult:
        """The run judged on its track; one whose controller failed it (``fault``) fails."""
        scenario = self.scenario
        track = self.rows[: self.k + 1]
        metrics = self.metrics(track, ended, approaches, watchdog_trips)
        criteria = judge(scenario.criteria, metrics, float(track[-1, 0]))
        return RunResult(
            scenario=scenario.name,
            seed=scenario.seed,
            passed=fault is None and all(c.passed for c in criteria),
            ended=ended,
            duration_s=float(track[-1, 0]),
            metrics=metrics.values,
            criteria=tuple(criteria),
            reached=metrics.reached,
            controller=controller,
            wall_s=wall_s,
            track=track.copy() if keep_track else None,
            traffic=approaches,
            fault=fault,
        )

    def metrics(
        self, track: np.ndarray, ended: str, approaches: dict, watchdog_trips: int
    ) -> TrackMetrics:
        mission, criteria = self.scenario.mission, self.scenario.criteria
        t, north, east, roll = track[:, 0], track[:, 1], track[:, 2], track[:, 4]
        values: dict[str, float] = {}
        when: dict[str, float] = {}
        if approaches:
            name = min(approaches, key=lambda n: approaches[n]["min_range_m"])
            values["min_cpa_m"] = approaches[name]["min_range_m"]
            when["min_cpa_m"] = approaches[name]["at_s"]
        else:
            values["min_cpa_m"] = math.nan
        reached = self.walk.reached
        rms, worst, worst_t = self.walk.xte()
        values["xte_rms_m"], values["xte_max_m"] = rms, worst
        if worst_t is not None:
            when["xte_max_m"] = worst_t
        total = len(mission.waypoints) * mission.laps
        values["waypoints_reached"] = float(len(reached))
        values["waypoints_total"] = float(total)
        complete = len(reached) == total
        values["time_to_complete_s"] = float(reached[-1][2]) if complete else math.nan
        if reached:
            when["waypoints_reached"] = float(reached[-1][2])
        if criteria.geofence is not None:
            outside = outside_distance(north, east, criteria.geofence)
            values["geofence_outside_m"] = float(outside.max())
            if values["geofence_outside_m"] > 0.0:
                when["geofence_outside_m"] = float(t[np.argmax(outside > 0.0)])
        else:
            values["geofence_outside_m"] = math.nan
        i = int(np.argmax(np.abs(roll)))
        values["max_roll_deg"] = math.degrees(abs(float(roll[i])))
        when["max_roll_deg"] = float(t[i])
        values["watchdog_trips"] = float(watchdog_trips)
        values.update(self._command_metrics(float(t[-1]), when))
        values["diverged"] = 1.0 if ended == "diverged" else 0.0
        if ended == "diverged":
            when["diverged"] = float(t[-1])
        return TrackMetrics(values, when, tuple(reached))

    def _command_metrics(self, end: float, when: dict[str, float]) -> dict[str, float]:
        """Commands applied per second, and the longest any went without a fresh one, both
        from the first command applied to the end (before it, nothing was yet expected). The
        sentences of one command set, applied at one instant, count as one command."""
        instants = sorted(set(self.command_times))
        if not instants:
            return {"command_rate_hz": 0.0, "max_command_age_s": math.inf}
        span = end - instants[0]
        rate = (len(instants) - 1) / span if span > 0 else math.nan
        edges = np.diff(np.array([*instants, end]))
        i = int(np.argmax(edges))
        when["max_command_age_s"] = instants[i] + float(edges[i])
        return {"command_rate_hz": rate, "max_command_age_s": float(edges[i])}
