"""One scenario run with an external controller: ``[controller] command = [...]``.

The program under test (any language, or a bridge to real hardware) talks to the real daemon
over real ports, as it would on a bench; hild runs at the scenario's time scale and judges
the run exactly as a lockstep one (``RunTrack``). Per run:

1. the bench's ports move where nothing else is (hild/scenario/wiring.py: free UDP/TCP ports
   on 127.0.0.1, pty links in a private directory) and the command's placeholders are filled
   in (hild/scenario/placeholders.py); an unknown one, or a program that cannot be started,
   stops here, before anything starts;
2. the daemon opens the ports; the program starts (hild/scenario/process.py), its stdout and
   stderr to files in the output directory, and the daemon's log to ``hild.log`` there;
3. every tick feeds the track, and the ticks at which commands were applied; the run ends at
   ``duration_s``, when the mission is complete (``stop_when_complete``), when the state
   diverged, or ``EXIT_GRACE_S`` after the program ended by itself (long enough for its
   silence to show: the watchdog trips, the command age grows);
4. the program is stopped (SIGTERM, ``stop_timeout_s``, SIGKILL), the ports closed, the
   private directory removed; the output directory is kept.

A fleet scenario (a ``command`` per boat, hild/scenario/fleet.py) starts one program per boat,
each with its own boat's placeholders (its mission, its command device, ``{boat}``) and its
output in ``OUTPUT_DIR/BOAT/``; every boat's state feeds the fleet's track, and the run ends
``EXIT_GRACE_S`` after the last program ended by itself.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from hild.drivers.realtime import Daemon
from hild.log import routed_to
from hild.observers import RunView, TickObserver
from hild.scenario.file import Scenario
from hild.scenario.fleet import FleetTrack, boat_scenario, boats_outcome
from hild.scenario.placeholders import RunFacts, check_program, expand_command
from hild.scenario.process import ControllerProcess
from hild.scenario.track import RunResult, RunTrack, approaches
from hild.scenario.wiring import RunWiring, wire_run

LOG_FILE = "hild.log"
EXIT_GRACE_S = 5.0  # simulated seconds a run goes on after its controller ended by itself
ENDED_BY_EXIT = "controller-exited"


class TrackFeed(TickObserver):
    """Feeds the run's track after every tick (and the instants commands were applied), and
    stops the daemon when the run is over. In the tick thread: it only copies and compares."""

    def __init__(self, scenario: Scenario, track: RunTrack, stop: Callable[[str], None]):
        self.scenario = scenario
        self.track = track
        self.stop_run = stop  # the daemon's stop(reason)
        self.commands = 0  # the arbiter's count of applied commands at the last tick
        self.stop_at_s: float | None = None  # set (on the loop) when the controller ended

    async def start(self, run: RunView) -> None:
        self.track.record(0.0, run.x)
        self.commands = run.commands_applied

    def on_tick(self, run: RunView, t: float) -> None:
        self.track.record(t, run.x)
        applied = run.commands_applied
        if applied != self.commands:  # applied between the last tick and this one
            self.commands = applied
            self.track.command_at(t - run.dt)
        if self.scenario.stop_when_complete and self.track.walk.complete:
            self.stop_run("completed")
        elif self.stop_at_s is not None and t + 1e-9 >= self.stop_at_s:
            self.stop_run(ENDED_BY_EXIT)


class FleetFeed(TickObserver):
    """A fleet's TrackFeed: every boat's state after every tick (read-only views of their
    simulations, read without a copy), the instants each boat's command devices took a
    command, and the end (complete when every boat's mission is)."""

    def __init__(self, scenario: Scenario, track: FleetTrack, stop: Callable[[str], None]):
        self.scenario = scenario
        self.track = track
        self.stop_run = stop
        self.stop_at_s: float | None = None
        self.states: list = []
        self.devices: list[list] = []  # each boat's command devices (views)
        self.commands: list[int] = []

    async def start(self, run: RunView) -> None:
        names = list(run.boats)
        self.states = [run.boat(i).x for i in range(len(names))]
        self.devices = [[] for _ in names]
        for device in run.command_devices:
            self.devices[names.index(device.config.boat)].append(device)
        self.commands = [self._taken(i) for i in range(len(names))]
        self.track.record(0.0, self.states)

    def _taken(self, boat: int) -> int:
        return sum(d.commands for d in self.devices[boat])

    def on_tick(self, run: RunView, t: float) -> None:
        self.track.record(t, self.states)
        for i in range(len(self.commands)):
            taken = self._taken(i)
            if taken != self.commands[i]:  # taken between the last tick and this one
                self.commands[i] = taken
                self.track.command_at(i, t - run.dt)
        if self.scenario.stop_when_complete and self.track.complete:
            self.stop_run("completed")
        elif self.stop_at_s is not None and t + 1e-9 >= self.stop_at_s:
            self.stop_run(ENDED_BY_EXIT)


class ProgramRunner(TickObserver):
    """Starts the controller once the ports are open, stops it before they close (a fleet's:
    every boat's; the run ends a grace after the last one ended by itself)."""

    def __init__(self, process: ControllerProcess, feed: TrackFeed | FleetFeed):
        self.processes = [process]
        self.feed = feed
        self.exited_at_s: float | None = None
        self.exits: list[float | None] = []

    @classmethod
    def of(cls, processes: Sequence[ControllerProcess], feed: FleetFeed) -> ProgramRunner:
        runner = cls(processes[0], feed)
        runner.processes = list(processes)
        return runner

    @property
    def process(self) -> ControllerProcess:
        return self.processes[0]

    async def start(self, run: RunView) -> None:
        grace = exit_grace_s(run)
        self.exits = [None] * len(self.processes)

        def exited(i: int) -> Callable[[int], None]:
            def one(_code: int) -> None:
                self.exits[i] = run.t
                if all(e is not None for e in self.exits):
                    self.exited_at_s = run.t
                    self.feed.stop_at_s = run.t + grace

            return one

        for i, process in enumerate(self.processes):
            process.start(exited(i))

    async def stop(self, run: RunView) -> None:
        for process in self.processes:
            await process.stop()


def exit_grace_s(run: RunView) -> float:
    """Simulated seconds to go on after the controller's exit: EXIT_GRACE_S, and at least two
    of the command watchdogs' leases (simulated seconds, as every timer of the world) so that
    a trip shows."""
    leases = [d.lease_s for d in run.command_devices]
    return max([EXIT_GRACE_S, *(2.0 * lease for lease in leases)])


def run_external(
    scenario: Scenario,
    *,
    keep_track: bool = False,
    output_dir: Path | str | None = None,
    observers: Sequence[TickObserver] = (),
) -> RunResult:
    """Run the scenario once with its ``command`` controller against the real daemon, watched
    by ``observers`` as well (the report's target tracks, a recorder)."""
    spec = scenario.controller  # (a fleet's: every boat's is a command)
    if spec.kind != "command":
        raise ValueError(f"run_external runs command controllers, not {spec.kind!r}")
    made_output = output_dir is None
    if output_dir is None:
        out = Path(tempfile.mkdtemp(prefix=f"hild-{scenario.name}-"))
    else:
        out = Path(output_dir)
    run_dir = Path(tempfile.mkdtemp(prefix="hild-run-"))
    try:
        time_scale = spec.time_scale or scenario.bench.time_scale
        wiring = wire_run(scenario.bench, run_dir, time_scale)
        boats = [boat_scenario(scenario, i) for i in range(len(scenario.plans))]
        names = [p.boat for p in scenario.plans]  # (a fleet's: "" for one boat)
        outs = [out / name for name in names]  # (a fleet's: a folder per boat)
        try:
            argvs = []
            for each, where, name in zip(
                boats or [scenario], outs or [out], names or [""], strict=True
            ):
                argv = expand_command(each, wiring, RunFacts(where, time_scale, name))
                check_program(each, argv)
                argvs.append(argv)
        except Exception:
            if made_output:
                shutil.rmtree(out, ignore_errors=True)
            raise
        for where in [out, *outs]:
            where.mkdir(parents=True, exist_ok=True)
        with routed_to(out / LOG_FILE) as logged:
            log_file = str(out / LOG_FILE) if logged else None
            if scenario.is_fleet:
                return _run_fleet(scenario, wiring, argvs, outs, keep_track, log_file, observers)
            return _run(scenario, wiring, argvs[0], out, keep_track, log_file, observers)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _run(
    scenario: Scenario,
    wiring: RunWiring,
    argv: tuple[str, ...],
    out: Path,
    keep_track: bool,
    log_file: str | None,
    observers: Sequence[TickObserver],
) -> RunResult:
    started = time.perf_counter()
    bench = wiring.bench
    track = RunTrack(scenario, 1.0 / bench.rate_hz)
    process = ControllerProcess(argv, out, scenario.controller.stop_timeout_s)
    daemon = Daemon(bench, scenario.duration_s, list(observers))
    feed = TrackFeed(scenario, track, daemon.stop)
    program = ProgramRunner(process, feed)
    daemon.observers.extend([feed, program])  # (neither listens to received lines)
    summary = asyncio.run(daemon.run())
    ended = daemon.stop_reason
    trips = sum(d.watchdog.trips for d in daemon.world.command_devices)
    controller = {
        **process.summary(),
        "exited_at_s": program.exited_at_s,
        "output_dir": str(out),
        "log": log_file,
        "time_scale": bench.time_scale,
        "ports": wiring.urls(),
        "daemon": {k: summary[k] for k in DAEMON_KEYS if k in summary},
    }
    return track.result(
        ended,
        approaches(daemon.world.sim.traffic),
        trips,
        controller,
        time.perf_counter() - started,
        keep_track,
    )


def _run_fleet(
    scenario: Scenario,
    wiring: RunWiring,
    argvs: Sequence[tuple[str, ...]],
    outs: Sequence[Path],
    keep_track: bool,
    log_file: str | None,
    observers: Sequence[TickObserver],
) -> RunResult:
    started = time.perf_counter()
    bench = wiring.bench
    track = FleetTrack(scenario, 1.0 / bench.rate_hz)
    processes = [
        ControllerProcess(argv, where, plan.controller.stop_timeout_s)
        for argv, where, plan in zip(argvs, outs, scenario.plans, strict=True)
    ]
    daemon = Daemon(bench, scenario.duration_s, list(observers))
    feed = FleetFeed(scenario, track, daemon.stop)
    program = ProgramRunner.of(processes, feed)
    daemon.observers.extend([feed, program])
    summary = asyncio.run(daemon.run())
    near, trips = boats_outcome(daemon.world)
    daemon_part = {k: summary[k] for k in DAEMON_KEYS if k in summary}
    controllers = [
        {
            **process.summary(),
            "exited_at_s": exit_s,
            "output_dir": str(where),
            "log": log_file,
            "time_scale": bench.time_scale,
            "ports": wiring.urls(),
            "daemon": daemon_part,
        }
        for process, exit_s, where in zip(processes, program.exits, outs, strict=True)
    ]
    return track.result(
        daemon.stop_reason, near, trips, controllers, time.perf_counter() - started, keep_track
    )


# What of the daemon's summary a result keeps: what the controller sent, and the clock.
DAEMON_KEYS = (
    "received_lines",
    "commands_applied",
    "commands_rejected",
    "loop_wall_s",
    "overruns",
    "jitter_max_ms",
)
