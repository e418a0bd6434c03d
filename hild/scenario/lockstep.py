"""One scenario run in one process, in lockstep: the simulation, the bench's devices and the
controller under test, stepped as fast as the machine goes, on simulated time only.

This is the lockstep driver: it steps the run's world (hild/world/world.py) with the world's
own tick, the one the real-time driver uses: apply the control queue (the watchdogs polled at
the tick's time), step the simulation, let each device whose epoch has come sample the truth.
Between events it steps quiet stretches in one compiled call. The sentences go to the
controller instead of to ports, and its answers go
through the command device (decoded, leased, refused) onto the control queue, applied
before the next step: a command sent in answer to an epoch acts one tick later, as on a
bench where it arrives between two ticks. Same scenario, same seed: the same run, bit for bit.

A python controller is judged, not trusted (hild/scenario/judge.py): its run goes in a thread
of its own, watched from the caller's; a call into it that raises, overruns a time limit or
answers a flood or garbage ends the run there (``controller_error``). hild's pilot is
stepped in the caller's thread, as it always was.
"""

from __future__ import annotations

import asyncio
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from hild.bench import Bench
from hild.bus.watchdog import ACTIVE
from hild.heap import frozen_heap
from hild.observers import TickObserver
from hild.scenario.controller import (
    Controller,
    ControllerContext,
    ControllerWaypoint,
    PilotController,
    make_controller,
)
from hild.scenario.file import Scenario
from hild.scenario.judge import (
    CONTROLLER_ERROR,
    ControllerError,
    ControllerLimits,
    Judge,
    run_watched,
)
from hild.scenario.track import RunResult, RunTrack, approaches
from hild.transport.base import Inbound
from hild.world.world import Outbox, World

CONTROLLER_PORT = "scenario:controller"  # the port name a lockstep controller's lines carry
TRACK_COLUMNS = ("t", "north", "east", "down", "roll")  # a run's track, one row per tick


def controller_context(scenario: Scenario) -> ControllerContext:
    bench, spec = scenario.bench, scenario.controller
    waypoints = []
    for w in scenario.mission.waypoints:
        lat, lon, _ = bench.origin.to_geodetic(w.north, w.east, 0.0)
        waypoints.append(ControllerWaypoint(lat, lon, w.north, w.east, w.speed))
    return ControllerContext(
        profile=bench.profile,
        vessel=bench.vessel,
        protocol=spec.protocol,
        origin=bench.origin,
        waypoints=tuple(waypoints),
        acceptance_m=scenario.mission.acceptance_m,
        laps=scenario.mission.laps,
        rate_hz=spec.rate_hz,
        heading_reference=spec.heading_reference,
        options=dict(spec.options),
    )


def build_controller(
    scenario: Scenario, judge: Judge | None = None, context: ControllerContext | None = None
) -> Controller:
    """The run's controller; a python one's factory called through ``judge`` if given."""
    spec = scenario.controller
    context = controller_context(scenario) if context is None else context
    if spec.kind == "pilot":
        return PilotController(context)
    if spec.kind == "python":
        assert isinstance(spec.target, str)
        if judge is None:
            return make_controller(spec.target, context, scenario.file)
        return make_controller(
            spec.target, context, scenario.file, lambda make: judge.call("its factory", make)
        )
    raise ValueError(f"a {spec.kind} controller does not run in lockstep (hild.scenario.external)")


def judged_step(
    judge: Judge, controller: Controller, context: ControllerContext
) -> Callable[[float, Sequence[bytes]], Iterable[bytes]]:
    """A python controller's step: its context's kit fed with the lines (hild's work, outside
    the judge's time), then the controller's step, judged."""
    own, ais = context.own, context.ais

    def step(t: float, lines: Sequence[bytes]) -> Iterable[bytes]:
        own.feed(t, lines)
        ais.feed(t, lines)
        return judge.step(controller, t, lines)

    return step


def judge_of(scenario: Scenario) -> Judge | None:
    """A python controller's judge (hild's pilot is trusted: its faults are hild's)."""
    spec = scenario.controller
    if spec.kind != "python":
        return None
    assert isinstance(spec.target, str)
    return Judge(spec.target, ControllerLimits.of(scenario))


class LockstepRun:
    """The lockstep driver: a scenario's world stepped as fast as the machine goes, its
    controller in process, on simulated time only (a ``ControlTarget`` is its world)."""

    def __init__(
        self,
        scenario: Scenario,
        keep_track: bool = False,
        observers: Sequence[TickObserver] = (),
        stretches: bool = True,
    ):
        self.scenario = scenario
        bench: Bench = scenario.bench
        self.bench = bench
        assert bench.start_time is not None  # a scenario's bench always has a fixed start
        self.world = World(bench, scenario.duration_s, observers)
        self.dt = self.world.dt
        self.sim = self.world.sim
        self.target = next(
            (d for d in self.world.command_devices if d.config.name == scenario.controller.device),
            None,
        )
        self.judge = judge_of(scenario)
        self.controller: Controller  # made as the run starts (a python one: judged)
        self.fault: str | None = None  # what the controller did, when it failed the run
        self.track = RunTrack(scenario, self.dt)
        self.world.on_command = lambda _record, t: self.track.command_at(t)
        self.keep_track = keep_track
        self.stretches = stretches  # False: tick by tick (the reference the stretches equal)
        self.ended = "duration"
        self.stop_reason = "duration"

    @property
    def observers(self) -> list[TickObserver]:
        return self.world.observers

    def run(self) -> RunResult:
        with frozen_heap():  # (no gc.collect first: hild/heap.py)
            started = time.perf_counter()
            if self.judge is None:
                return self._run(started)
            return run_watched(
                self.judge, lambda: self._run(started), lambda fault: self._given_up(fault, started)
            )

    def _run(self, started: float) -> RunResult:
        self.track.record(0.0, self.sim.x)
        try:
            self.context = controller_context(self.scenario)
            self.controller = build_controller(self.scenario, self.judge, self.context)
            self._loop(self._stepper())
            summary = self._summary()
        except ControllerError as fault:
            return self._given_up(fault, started)
        self.stop_reason = self.ended
        return self._result(time.perf_counter() - started, summary)

    def _stepper(self) -> Callable[[float, Sequence[bytes]], Iterable[bytes]]:
        """The controller's step: judged (a python controller's) or as it is (the pilot's)."""
        judge, controller = self.judge, self.controller
        if judge is None:
            return controller.step
        return judged_step(judge, controller, self.context)

    def _loop(self, step: Callable[[float, Sequence[bytes]], Iterable[bytes]]) -> None:
        scenario, world = self.scenario, self.world
        last_k = len(self.track.rows) - 1
        step_every = 1.0 / scenario.controller.rate_hz
        next_step = 0.0
        lines = _controller_lines(world.first_epoch())
        stretch = self.stretches and not world.observers  # observers see every tick

        def advance(k: int) -> int:
            """Step from tick k to the next at which anything but the step happens."""
            n = self._quiet_ticks(k, last_k, next_step) if stretch else 1
            if n == 1:
                world.sim.tick()
                self.track.record((k + 1) * self.dt, world.sim.x)
                return 1
            n = world.sim.tick_track(n, self.track.rows, k + 1, self._stop_point())
            self.track.written(n)
            return n

        while True:
            t = world.t
            if lines or t + 1e-9 >= next_step:
                self._command(t, step(t, lines))
                next_step = t + step_every
            if world.k >= last_k:
                break
            lines = _controller_lines(world.tick(advance))
            if world.stopped:  # (diverged)
                self.ended = world.stop_reason
                break
            if scenario.stop_when_complete and self.track.walk.complete:
                self.ended = "completed"
                break

    # --- the quiet stretches between events --------------------------------------------------
    def _quiet_ticks(self, k: int, last_k: int, next_step: float) -> int:
        """How many ticks from tick k to the next at which anything but the step happens (a
        device's epoch, the controller's step, a watchdog's trip, a state check, the end):
        every tick in between is ``sim.tick()`` and ``track.record`` alone."""
        world = self.world
        check_every = world.check_every
        end = min(last_k, (k // check_every + 1) * check_every)
        end = min(end, self._first_tick(k, next_step))
        for rt in world.devices:
            end = min(end, self._first_tick(k, rt.next_due_s))
        for device in world.command_devices:
            watchdog = device.watchdog
            if watchdog.state == ACTIVE:
                end = min(end, self._first_tick_after(k, watchdog.lease_until))
        return end - k

    def _first_tick(self, k: int, due: float) -> int:
        """The first tick after k whose time is due (``t + 1e-9 >= due``, as the loop asks)."""
        dt = self.dt
        if due == math.inf:
            return sys.maxsize
        j = max(k + 1, math.ceil((due - 1e-9) / dt) - 2)
        while j * dt + 1e-9 < due:
            j += 1
        return j

    def _first_tick_after(self, k: int, limit: float) -> int:
        """The first tick after k whose time is past ``limit`` (a lease runs out)."""
        dt = self.dt
        j = max(k + 1, math.floor(limit / dt) - 2)
        while not j * dt > limit:
            j += 1
        return j

    def _stop_point(self) -> tuple[float, float, float] | None:
        """Where a stretch must stop to let a run end when its mission is complete: the last
        target, reached only within its acceptance radius (None: no such end)."""
        walk = self.track.walk
        if not self.scenario.stop_when_complete or walk.done:
            return None
        _, _, north, east = walk.targets[-1]
        return north, east, walk.r2

    # --- the controller's lines --------------------------------------------------------------
    def _command(self, t: float, lines: Iterable[bytes]) -> None:
        target = self.target
        if target is None or not lines:
            return
        deliver = self.world.dispatcher.deliver
        for line in lines:
            deliver(target, Inbound(bytes(line).rstrip(b"\r\n"), CONTROLLER_PORT, None, t))

    # --- the end ----------------------------------------------------------------------------
    def _summary(self) -> dict:
        if self.judge is not None:
            return self.judge.summary(self.controller)
        summary = getattr(self.controller, "summary", None)
        return summary() if callable(summary) else {}

    def _given_up(self, fault: ControllerError, started: float) -> RunResult:
        """The run as far as it went when its controller failed it (in the run's thread, or
        in the watcher's while the run's is stuck in the controller: it touches nothing)."""
        self.fault = str(fault)
        self.ended = self.stop_reason = CONTROLLER_ERROR
        return self._result(time.perf_counter() - started, {})

    def _result(self, wall_s: float, summary: dict) -> RunResult:
        trips = sum(d.watchdog.trips for d in self.world.command_devices)
        return self.track.result(
            self.ended,
            approaches(self.sim.traffic),
            trips,
            summary,
            wall_s,
            self.keep_track,
            self.fault,
        )


def run_lockstep(
    scenario: Scenario, keep_track: bool = False, observers: Sequence[TickObserver] = ()
) -> RunResult:
    """Run the scenario once in this process, its controller in lockstep; ``observers`` (tick
    observers: a recorder, say) are started before and stopped after."""
    run = LockstepRun(scenario, keep_track, observers)
    if not observers:
        return run.run()
    return asyncio.run(observed(run))


class ObservedRun(Protocol):
    """A lockstep run with observers (one boat's or a fleet's)."""

    world: World
    stop_reason: str

    @property
    def observers(self) -> list[TickObserver]: ...

    def run(self) -> RunResult: ...


async def observed(run: ObservedRun) -> RunResult:
    """``run.run()`` between its observers' start and stop (which see its world's view)."""
    for observer in run.observers:
        await observer.start(run.world.view)
    try:
        return run.run()
    finally:
        run.world.stop_reason = run.stop_reason
        for observer in run.observers:
            await observer.stop(run.world.view)


def _controller_lines(out: Outbox) -> list[bytes]:
    """A tick's lines as a lockstep controller reads them: every device's, without CR LF."""
    return [line.rstrip(b"\r\n") for _, lines in out for line in lines]
