"""A fleet scenario in lockstep: one world of several boats, a controller per boat, stepped as
fast as the machine goes on simulated time only.

The one-boat lockstep driver's order (hild/scenario/lockstep.py), per boat: each controller is
stepped with its own boat's lines (the sentences of the devices on that boat) when they come
or at its own rate, its answer goes through its boat's command device onto the world's
control queue, applied before the next tick, to that boat's actuators. The world steps tick
by tick (every boat in each tick: a fleet has no quiet stretch of one boat alone), and after
each tick every boat's state feeds the fleet's track (hild/scenario/fleet.py). Same scenario,
same seed: the same run, bit for bit. Python controllers are judged as in one-boat runs (a
call that raises, overruns or floods ends the run there), all watched as one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence

from hild.heap import frozen_heap
from hild.observers import TickObserver
from hild.scenario.controller import Controller
from hild.scenario.file import Scenario
from hild.scenario.fleet import FleetTrack, boat_scenario, boats_outcome
from hild.scenario.judge import CONTROLLER_ERROR, ControllerError, Judge, Judges, run_watched
from hild.scenario.lockstep import (
    CONTROLLER_PORT,
    build_controller,
    controller_context,
    judge_of,
    judged_step,
    observed,
)
from hild.scenario.track import RunResult
from hild.transport.base import Inbound
from hild.world.world import Outbox, World

Step = Callable[[float, Sequence[bytes]], Iterable[bytes]]


class FleetLockstepRun:
    """The lockstep driver of a fleet scenario (its world a ``ControlTarget`` as any run's)."""

    def __init__(
        self, scenario: Scenario, keep_track: bool = False, observers: Sequence[TickObserver] = ()
    ):
        assert scenario.is_fleet and scenario.bench.start_time is not None
        self.scenario = scenario
        self.world = World(scenario.bench, scenario.duration_s, observers)
        self.dt = self.world.dt
        # every boat's state, in the bench's order (arrays stepped in place: listed once)
        self.states = [sim.x for sim in self.world.sims]
        self.boats = [boat_scenario(scenario, i) for i in range(len(scenario.plans))]
        devices = {d.config.name: d for d in self.world.command_devices}
        self.targets = [devices.get(b.controller.device or "") for b in self.boats]
        self.judges: list[Judge | None] = [judge_of(b) for b in self.boats]
        self.controllers: list[Controller] = []  # made as the run starts
        self.track = FleetTrack(scenario, self.dt)
        boat_of = self.world.boat_of
        self.world.on_command = lambda record, t: self.track.command_at(
            boat_of.get(record.source, 0), t
        )
        self.keep_track = keep_track
        self.fault: str | None = None
        self.ended = self.stop_reason = "duration"

    @property
    def observers(self) -> list[TickObserver]:
        return self.world.observers

    def run(self) -> RunResult:
        with frozen_heap():
            started = time.perf_counter()
            judges = [j for j in self.judges if j is not None]
            if not judges:
                return self._run(started)
            return run_watched(
                Judges(judges),
                lambda: self._run(started),
                lambda fault: self._given_up(fault, started),
            )

    def _run(self, started: float) -> RunResult:
        self.track.record(0.0, self.states)
        try:
            self.contexts = [controller_context(b) for b in self.boats]
            self.controllers = [
                build_controller(b, j, c)
                for b, j, c in zip(self.boats, self.judges, self.contexts, strict=True)
            ]
            self._loop([self._stepper(i) for i in range(len(self.boats))])
            summaries = [self._summary(i) for i in range(len(self.boats))]
        except ControllerError as fault:
            return self._given_up(fault, started)
        self.stop_reason = self.ended
        return self._result(time.perf_counter() - started, summaries)

    def _stepper(self, boat: int) -> Step:
        judge, controller = self.judges[boat], self.controllers[boat]
        if judge is None:
            return controller.step
        return judged_step(judge, controller, self.contexts[boat])

    def _loop(self, steps: list[Step]) -> None:
        world, track = self.world, self.track
        last_k = len(track.tracks[0].rows) - 1
        every = [1.0 / b.controller.rate_hz for b in self.boats]
        next_step = [0.0] * len(steps)
        lines = self._boat_lines(world.first_epoch())
        complete_ends = self.scenario.stop_when_complete
        while True:
            t = world.t
            for i, step in enumerate(steps):
                if lines[i] or t + 1e-9 >= next_step[i]:
                    self._command(i, t, step(t, lines[i]))
                    next_step[i] = t + every[i]
            if world.k >= last_k:
                break
            lines = self._boat_lines(world.tick())
            track.record(world.t, self.states)
            if world.stopped:  # (diverged)
                self.ended = world.stop_reason
                break
            if complete_ends and track.complete:
                self.ended = "completed"
                break

    def _boat_lines(self, out: Outbox) -> list[list[bytes]]:
        """A tick's lines as each boat's controller reads them: its own boat's devices'."""
        per: list[list[bytes]] = [[] for _ in self.boats]
        for rt, lines in out:
            per[rt.boat].extend(line.rstrip(b"\r\n") for line in lines)
        return per

    def _command(self, boat: int, t: float, lines: Iterable[bytes]) -> None:
        target = self.targets[boat]
        if target is None or not lines:
            return
        deliver = self.world.dispatcher.deliver
        for line in lines:
            deliver(target, Inbound(bytes(line).rstrip(b"\r\n"), CONTROLLER_PORT, None, t))

    def _summary(self, boat: int) -> dict:
        judge, controller = self.judges[boat], self.controllers[boat]
        if judge is not None:
            return judge.summary(controller)
        summary = getattr(controller, "summary", None)
        return summary() if callable(summary) else {}

    def _given_up(self, fault: ControllerError, started: float) -> RunResult:
        self.fault = str(fault)
        self.ended = self.stop_reason = CONTROLLER_ERROR
        return self._result(time.perf_counter() - started, [{} for _ in self.boats])

    def _result(self, wall_s: float, summaries: list[dict]) -> RunResult:
        near, trips = boats_outcome(self.world)
        return self.track.result(
            self.ended, near, trips, summaries, wall_s, self.keep_track, self.fault
        )


def run_fleet_lockstep(
    scenario: Scenario, keep_track: bool = False, observers: Sequence[TickObserver] = ()
) -> RunResult:
    """Run the fleet scenario once in this process, its controllers in lockstep."""
    run = FleetLockstepRun(scenario, keep_track, observers)
    if not observers:
        return run.run()
    return asyncio.run(observed(run))
