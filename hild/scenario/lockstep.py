"""One scenario run in one process, in lockstep: the simulation, the bench's devices and the
controller under test, stepped as fast as the machine goes, on simulated time only.

Each tick does what the daemon's tick does (hild/daemon.py), in the same order, with the
simulated time where the daemon reads its clock: apply the control queue (the watchdogs
polled at the tick's time), step the simulation, let each device whose epoch has come sample
the truth. The sentences go to the controller instead of to ports, and its answers go
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
import functools
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta

from hild.bench import Bench
from hild.bus.arbiter import Arbiter
from hild.bus.device import CommandDevice
from hild.bus.dispatch import Dispatcher
from hild.bus.watchdog import ACTIVE
from hild.clock import JitterStats
from hild.control import ActuatorCommand, ControlQueue
from hild.daemon import STATE_CHECK_S, initial_simulation
from hild.device_runtime import DeviceRuntime
from hild.heap import frozen_heap
from hild.observers import TickObserver
from hild.runtime import RuntimeControl
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
from hild.sensors.factory import build_device
from hild.sensors.truth import Truth
from hild.transport.base import Inbound, Port

CONTROLLER_PORT = "scenario:controller"  # the port name a lockstep controller's lines carry
TRACK_COLUMNS = ("t", "north", "east", "down", "roll")  # a run's track, one row per tick


def controller_context(scenario: Scenario) -> ControllerContext:
    bench, spec = scenario.bench, scenario.controller
    waypoints = []
    for w in scenario.mission.waypoints:
        lat, lon, _ = bench.origin.to_geodetic(w.north, w.east, 0.0)
        waypoints.append(ControllerWaypoint(lat, lon, w.north, w.east, w.speed))
    return ControllerContext(
        profile=bench.profile, vessel=bench.vessel, protocol=spec.protocol,
        origin=bench.origin, waypoints=tuple(waypoints),
        acceptance_m=scenario.mission.acceptance_m, laps=scenario.mission.laps,
        rate_hz=spec.rate_hz, heading_reference=spec.heading_reference,
        options=dict(spec.options),
    )  # fmt: skip


def build_controller(scenario: Scenario, judge: Judge | None = None) -> Controller:
    """The run's controller; a python one's factory called through ``judge`` if given."""
    spec = scenario.controller
    context = controller_context(scenario)
    if spec.kind == "pilot":
        return PilotController(context)
    if spec.kind == "python":
        assert isinstance(spec.target, str)
        if judge is None:
            return make_controller(spec.target, context, scenario.file)
        return make_controller(spec.target, context, scenario.file,
                               lambda make: judge.call("its factory", make))  # fmt: skip
    raise ValueError(f"a {spec.kind} controller does not run in lockstep (hild.scenario.external)")


def judge_of(scenario: Scenario) -> Judge | None:
    """A python controller's judge (hild's pilot is trusted: its faults are hild's)."""
    spec = scenario.controller
    if spec.kind != "python":
        return None
    assert isinstance(spec.target, str)
    return Judge(spec.target, ControllerLimits.of(scenario))


class LockstepRun:
    """The loop's parts without its clock or ports (a ``ControlTarget`` for the records)."""

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
        self.dt = 1.0 / bench.rate_hz
        self.sim = initial_simulation(bench, scenario.duration_s)
        self.queue = ControlQueue()
        self.arbiter = Arbiter(bench.vessel.actuators, self.sim.act_cmd, self.sim.act_state)
        self.devices: list[DeviceRuntime] = []
        self.command_devices: list[CommandDevice] = []
        self.target: CommandDevice | None = None
        for config in bench.devices:
            device = build_device(config, bench.seed, bench.origin, bench.vessel)
            if isinstance(device, CommandDevice):
                self.command_devices.append(device)
                if config.name == scenario.controller.device:
                    self.target = device
            self.devices.append(DeviceRuntime(device, [], 1.0 / config.rate_hz))
        assert bench.start_time is not None  # a scenario's bench always has a fixed start
        self.start_utc: datetime | None = bench.start_time
        self.judge = judge_of(scenario)
        self.controller: Controller  # made as the run starts (a python one: judged)
        self.fault: str | None = None  # what the controller did, when it failed the run
        self.track = RunTrack(scenario, self.dt)
        self.keep_track = keep_track
        self.stretches = stretches  # False: tick by tick (the reference the stretches equal)
        self.ended = "duration"
        # what a tick observer may see of a run (hild.observers.RunningDaemon): no clock, no
        # ports; a recorder or a plot follows a lockstep run as it follows the daemon
        self.observers: list[TickObserver] = list(observers)
        self.duration: float | None = scenario.duration_s
        self.tick_period_s = self.dt
        self.ports: dict[tuple, Port] = {}
        self.dispatcher = Dispatcher(self.queue)
        self.jitter = JitterStats()
        self.late_s = 0.0
        self.stop_reason = "duration"

    def truth(self, t: float) -> Truth:
        assert self.start_utc is not None
        return Truth.of(self.sim, t, self.start_utc + timedelta(seconds=t))

    @functools.cached_property
    def runtime_control(self) -> RuntimeControl:
        """(A RunningDaemon's; no front end takes requests in a lockstep run today.)"""
        return RuntimeControl(self)

    def run(self) -> RunResult:
        with frozen_heap():  # (no gc.collect first: hild/heap.py)
            started = time.perf_counter()
            if self.judge is None:
                return self._run(started)
            return run_watched(self.judge, lambda: self._run(started),
                               lambda fault: self._given_up(fault, started))  # fmt: skip

    def _run(self, started: float) -> RunResult:
        self.track.record(0.0, self.sim.x)
        try:
            self.controller = build_controller(self.scenario, self.judge)
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
        return lambda t, lines: judge.step(controller, t, lines)

    def _loop(self, step: Callable[[float, Sequence[bytes]], Iterable[bytes]]) -> None:
        scenario, sim = self.scenario, self.sim
        last_k = len(self.track.rows) - 1
        check_every = max(1, round(STATE_CHECK_S / self.dt))
        step_every = 1.0 / scenario.controller.rate_hz
        next_step = 0.0
        lines = self._emit(0.0)
        k = 0
        while True:
            t = k * self.dt
            if lines or t + 1e-9 >= next_step:
                self._command(t, step(t, lines))
                next_step = t + step_every
            if k >= last_k:
                break
            self._apply(t)
            stretch = self.stretches and not self.observers  # observers see every tick
            n = self._quiet_ticks(k, last_k, next_step, check_every) if stretch else 1
            if n == 1:
                sim.tick()
                k += 1
                self.track.record(k * self.dt, sim.x)
            else:
                n = sim.tick_track(n, self.track.rows, k + 1, self._stop_point())
                self.track.written(n)
                k += n
            t = k * self.dt
            lines = self._emit(t)
            for observer in self.observers:
                observer.on_tick(self, t)
            if k % check_every == 0 and sim.state_problem():
                self.ended = "diverged"
                break
            if scenario.stop_when_complete and self.track.walk.complete:
                self.ended = "completed"
                break

    # --- the quiet stretches between events --------------------------------------------------
    def _quiet_ticks(self, k: int, last_k: int, next_step: float, check_every: int) -> int:
        """How many ticks from tick k to the next at which anything but the step happens (a
        device's epoch, the controller's step, a watchdog's trip, a state check, the end):
        every tick in between is ``sim.tick()`` and ``track.record`` alone."""
        end = min(last_k, (k // check_every + 1) * check_every)
        end = min(end, self._first_tick(k, next_step))
        for rt in self.devices:
            end = min(end, self._first_tick(k, rt.next_due_s))
        for device in self.command_devices:
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

    # --- a tick's parts ---------------------------------------------------------------------
    def _apply(self, t: float) -> None:
        for device in self.command_devices:
            device.poll(t, self.queue.put)
        if not self.queue:
            return
        for record in self.queue.drain():
            record.apply(self)
            if isinstance(record, ActuatorCommand):
                self.track.command_at(t)
            else:
                for observer in self.observers:
                    observer.on_control(self, record)

    def _emit(self, t: float) -> list[bytes]:
        truth = None
        out: list[bytes] = []
        for rt in self.devices:
            if t + 1e-9 < rt.next_due_s:
                continue
            rt.next_due_s += rt.period_s
            truth = truth or self.truth(t)
            lines = rt.device.sample(truth)
            for line in lines:
                out.append(line.rstrip(b"\r\n"))
            if lines:
                for observer in self.observers:
                    observer.on_sentences(rt.device.config.name, lines)
        return out

    def _command(self, t: float, lines: Iterable[bytes]) -> None:
        target = self.target
        if target is None or not lines:
            return
        for line in lines:
            inbound = Inbound(bytes(line).rstrip(b"\r\n"), CONTROLLER_PORT, None, t)
            record = target.receive(inbound)
            if record is not None:
                self.queue.put(record)
            for observer in self.observers:
                command = record if isinstance(record, ActuatorCommand) else None
                observer.on_received(target.config.name, inbound, command, target.last_rejection)

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
        trips = sum(d.watchdog.trips for d in self.command_devices)
        return self.track.result(self.ended, approaches(self.sim.traffic), trips, summary,
                                 wall_s, self.keep_track, self.fault)  # fmt: skip


def run_lockstep(
    scenario: Scenario, keep_track: bool = False, observers: Sequence[TickObserver] = ()
) -> RunResult:
    """Run the scenario once in this process, its controller in lockstep; ``observers`` (tick
    observers: a recorder, say) are started before and stopped after."""
    run = LockstepRun(scenario, keep_track, observers)
    if not observers:
        return run.run()
    return asyncio.run(_observed(run))


async def _observed(run: LockstepRun) -> RunResult:
    for observer in run.observers:
        await observer.start(run)
    try:
        return run.run()
    finally:
        for observer in run.observers:
            await observer.stop(run)
