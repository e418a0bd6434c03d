"""A fleet's run judged: each boat on its own track and criteria, and the fleet between its boats.

A fleet scenario (a bench of several ``[[boat]]`` tables, hild/scenario/file.py ``BoatPlan``)
runs one world with a controller per boat. ``FleetTrack`` keeps a ``RunTrack`` per boat (each
judged exactly as a one-boat run on its own mission and criteria, against its own closest
approaches to the traffic) and the closest the fleet's own boats come to each other: the
smallest distance between any two boats' reference points, tick by tick, as ``min_cpa_m`` is
the closest a target's reference point comes to the boat's. The fleet's result holds every
boat's result, each criterion under the boat's name (``alpha.all_waypoints``), the fleet's own
(``min_separation_m``), and the metrics a sweep tabulates: each boat's under its name and the
fleet's worst of each (the smallest CPA, the largest cross-track error ...).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from hild.scenario.criteria import METRICS, CriterionResult
from hild.scenario.file import Scenario
from hild.scenario.track import RunResult, RunTrack, approaches_of_boat

if TYPE_CHECKING:
    from hild.world.world import World

# Each metric's fleet value from its boats' (NaN where a boat has none: nan-aware where a
# boat without the metric does not spoil it, plain where the fleet has it only if all do).
WORST: dict[str, Callable[[np.ndarray], float]] = {
    "min_cpa_m": np.nanmin,
    "xte_rms_m": np.nanmax,
    "xte_max_m": np.nanmax,
    "waypoints_reached": np.sum,
    "waypoints_total": np.sum,
    "time_to_complete_s": np.max,  # the fleet is complete when its last boat is
    "geofence_outside_m": np.nanmax,
    "max_roll_deg": np.nanmax,
    "watchdog_trips": np.sum,
    "command_rate_hz": np.min,
    "max_command_age_s": np.max,
    "diverged": np.max,
}
SEPARATION = "min_separation_m"


def boat_scenario(scenario: Scenario, boat: int) -> Scenario:
    """The fleet scenario as boat ``boat`` (its index) is judged: its mission, controller
    and criteria in the one-boat places."""
    plan = scenario.plans[boat]
    boat_ = scenario.bench.boats[boat]
    return dataclasses.replace(
        scenario,
        bench=dataclasses.replace(scenario.bench, vessel=boat_.vessel, profile=boat_.profile),
        mission=plan.mission,
        controller=plan.controller,
        criteria=plan.criteria,
        plans=(),
    )


def fleet_metric_names(scenario: Scenario) -> tuple[str, ...]:
    """The metrics a fleet's result has beyond METRICS (a sweep table's further columns):
    the separation, then each boat's metrics under its name."""
    if not scenario.is_fleet:
        return ()
    return (SEPARATION, *(f"{p.boat}.{m}" for p in scenario.plans for m in METRICS))


def boats_outcome(world: World) -> tuple[list[dict], list[int]]:
    """What ``FleetTrack.result`` takes of a fleet's world beside the tracks, per boat in the
    bench's order: its closest approaches to the traffic and its command devices' watchdog
    trips."""
    trips = [0] * len(world.sims)
    for d in world.command_devices:
        trips[world.boat_of.get(d.config.name, 0)] += d.watchdog.trips
    traffic = world.sim.traffic
    return [approaches_of_boat(traffic, i) for i in range(len(world.sims))], trips


class FleetTrack:
    """Every boat's track and the fleet's separation, fed after every tick."""

    def __init__(self, scenario: Scenario, dt: float):
        self.scenario = scenario
        self.names = tuple(p.boat for p in scenario.plans)
        self.tracks = [RunTrack(boat_scenario(scenario, i), dt) for i in range(len(self.names))]
        self.separation = math.inf
        self.separation_t: float | None = None
        self.closest_pair: tuple[str, str] | None = None

    @property
    def complete(self) -> bool:
        return all(t.walk.complete for t in self.tracks)

    def record(self, t: float, states: Sequence[np.ndarray]) -> None:
        """Every boat's state after a tick (the first call: the start), in the bench's order."""
        for track, x in zip(self.tracks, states, strict=True):
            track.record(t, x)
        for i, a in enumerate(states):
            for j in range(i + 1, len(states)):
                b = states[j]
                d = math.hypot(float(a[0] - b[0]), float(a[1] - b[1]))
                if d < self.separation:
                    self.separation, self.separation_t = d, t
                    self.closest_pair = (self.names[i], self.names[j])

    def command_at(self, boat: int, t: float) -> None:
        self.tracks[boat].command_at(t)

    def result(
        self,
        ended: str,
        approaches: Sequence[dict],
        watchdog_trips: Sequence[int],
        controllers: Sequence[dict],
        wall_s: float,
        keep_track: bool = False,
        fault: str | None = None,
    ) -> RunResult:
        """Each boat judged on its own track, and the fleet on all: passed only if every
        boat's criteria and the fleet's hold (and no controller failed the run)."""
        boats = {
            name: track.result(ended, near, trips, summary, wall_s, keep_track, fault)
            for name, track, near, trips, summary in zip(
                self.names, self.tracks, approaches, watchdog_trips, controllers, strict=True
            )
        }
        metrics: dict[str, float] = {}
        for metric in METRICS:
            values = np.array([r.metrics[metric] for r in boats.values()], dtype=float)
            metrics[metric] = math.nan if np.isnan(values).all() else float(WORST[metric](values))
        metrics[SEPARATION] = self.separation
        for name, r in boats.items():
            metrics.update({f"{name}.{m}": v for m, v in r.metrics.items()})
        criteria = [
            dataclasses.replace(c, name=f"{name}.{c.name}")
            for name, r in boats.items()
            for c in r.criteria
        ]
        threshold = self.scenario.fleet_criteria.min_separation_m
        if threshold is not None:
            value = self.separation
            criteria.append(
                CriterionResult(
                    SEPARATION,
                    threshold,
                    value,
                    value >= threshold,
                    threshold - value,
                    self.separation_t,
                    "m",
                )
            )
        first = next(iter(boats.values()))
        return RunResult(
            scenario=self.scenario.name,
            seed=self.scenario.seed,
            passed=fault is None and all(c.passed for c in criteria),
            ended=ended,
            duration_s=first.duration_s,
            metrics=metrics,
            criteria=tuple(criteria),
            reached=first.reached,
            controller={name: r.controller for name, r in boats.items()},
            wall_s=wall_s,
            track=first.track,
            traffic={name: r.traffic for name, r in boats.items()},
            fault=fault,
            boats=boats,
            closest_pair=self.closest_pair,
        )
