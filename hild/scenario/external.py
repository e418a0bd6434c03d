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


class ProgramRunner(TickObserver):
    """Starts the controller once the ports are open, stops it before they close."""

    def __init__(self, process: ControllerProcess, feed: TrackFeed):
        self.process = process
        self.feed = feed
        self.exited_at_s: float | None = None

    async def start(self, run: RunView) -> None:
        grace = exit_grace_s(run)

        def exited(_code: int) -> None:
            self.exited_at_s = run.t
            self.feed.stop_at_s = run.t + grace

        self.process.start(exited)

    async def stop(self, run: RunView) -> None:
        await self.process.stop()


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
    spec = scenario.controller
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
        try:
            argv = expand_command(scenario, wiring, RunFacts(out, time_scale))
            check_program(scenario, argv)
        except Exception:
            if made_output:
                shutil.rmtree(out, ignore_errors=True)
            raise
        out.mkdir(parents=True, exist_ok=True)
        with routed_to(out / LOG_FILE) as logged:
            log_file = str(out / LOG_FILE) if logged else None
            return _run(scenario, wiring, argv, out, keep_track, log_file, observers)
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


# What of the daemon's summary a result keeps: what the controller sent, and the clock.
DAEMON_KEYS = (
    "received_lines",
    "commands_applied",
    "commands_rejected",
    "loop_wall_s",
    "overruns",
    "jitter_max_ms",
)
