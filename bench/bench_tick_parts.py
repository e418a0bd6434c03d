"""Benchmark: where a plain `hild run` tick's CPU goes, part by part.

Runs the built-in default bench (100 Hz; its UDP ports moved to free ones) in this process for
``--duration`` seconds, with each part of the tick thread's work wrapped in a timer of the
thread's own CPU time (``time.thread_time_ns``): the whole tick (its wait on the clock
included), and within it the watchdogs and the control queue, the compiled step, the devices'
sampling, the hand-over of their lines to the loop and the paced writes to the ptys. Prints
each part's CPU per tick and what that is in per cent of one core at the loop's rate, and
what one timer costs (each wrapped part pays two), measured in the same run, hot, and what a
timed part that does nothing costs in the tick, cold (the hand-over on the ticks with nothing
to hand over): the timing's own share of each part's figure.

What it shows on a VM: a tick's parts cost several times their hot cost, as the thread comes
back from its 10 ms sleep with the caches cold (a function that checks one watchdog and an
empty queue takes tens of microseconds), so the daemon's CPU is more the number of wake-ups
and of distinct steps in a tick than the arithmetic.

With ``--record`` the run records (MCAP and the Signal K log in a temporary folder), and the
recorder's part of each tick (``Recorder.on_tick``: its sample of the truth every fourth tick,
copied for the writer's thread) is timed too.

    python bench/bench_tick_parts.py [--duration 20] [--record]
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_daemon import default_bench_on  # noqa: E402
from common import free_port  # noqa: E402

from hild import daemon as daemon_module  # noqa: E402
from hild.cli import main as hild_main  # noqa: E402
from hild.coupled.simulation import Simulation  # noqa: E402
from hild.record.observer import Recorder  # noqa: E402
from hild.transport.pacer import TickPacer  # noqa: E402

PARTS = (  # (the name printed, the class, its method)
    ("the whole tick, its wait included", daemon_module.Daemon, "_tick"),
    ("  after the wait: controls to pacing", daemon_module.Daemon, "_step"),
    ("    watchdogs and control queue", daemon_module.Daemon, "apply_controls"),
    ("    the compiled step (Simulation.tick)", Simulation, "tick"),
    ("    devices sampled (emit_due)", daemon_module.Daemon, "emit_due"),
    ("    lines handed to the loop", daemon_module.Daemon, "hand_over"),
    ("    paced pty writes", TickPacer, "after_tick"),
    ("    the recorder (with --record)", Recorder, "on_tick"),
)


IDLE = "idle"  # the calls of the hand-over that found nothing to hand over


def timed(
    cpu_ns: dict[str, int],
    calls: dict[str, int],
    name: str,
    method: Callable,
    idle: Callable[..., bool] | None = None,
) -> Callable:
    """``method`` timed into ``name``; with ``idle`` (given the call's arguments), the calls it
    finds idle are also counted under IDLE: what a timed part costs when it does nothing."""

    def wrapper(*args, **kwargs):
        nothing_to_do = idle is not None and idle(*args)
        started = time.thread_time_ns()
        try:
            return method(*args, **kwargs)
        finally:
            spent = time.thread_time_ns() - started
            cpu_ns[name] += spent
            calls[name] += 1
            if nothing_to_do:
                cpu_ns[IDLE] += spent
                calls[IDLE] += 1

    return wrapper


def outbox_empty(daemon: daemon_module.Daemon) -> bool:
    """The hand-over's idle calls (most ticks): a function that only tests a list."""
    return not daemon._outbox


def timer_cost_ns() -> float:
    """What a pair of thread_time_ns calls costs here (each wrapped part pays one pair)."""
    n = 20_000
    started = time.thread_time_ns()
    for _ in range(n):
        time.thread_time_ns()
        time.thread_time_ns()
    return (time.thread_time_ns() - started) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of run (20)")
    parser.add_argument("--record", action="store_true", help="the run records, too")
    args = parser.parse_args()
    cpu_ns = dict.fromkeys((*(name for name, _, _ in PARTS), IDLE), 0)
    calls = dict.fromkeys(cpu_ns, 0)
    for name, owner, attribute in PARTS:
        idle = outbox_empty if attribute == "hand_over" else None
        setattr(owner, attribute, timed(cpu_ns, calls, name, getattr(owner, attribute), idle))
    with tempfile.TemporaryDirectory() as folder:
        bench = default_bench_on(Path(folder), free_port(socket.SOCK_DGRAM))
        run_dir = str(Path(folder) / "run")
        record = ["--record", str(Path(folder) / "run.mcap")] if args.record else []
        status = hild_main(
            [
                "run",
                str(bench),
                "--duration",
                str(args.duration),
                "--quiet",
                "--run-dir",
                run_dir,
                "--log-format",
                "json",
                *record,
            ]
        )
    if status != 0:
        sys.exit(f"hild run ended with status {status}")
    ticks = calls["  after the wait: controls to pacing"]
    rate_hz = ticks / args.duration
    what = "hild run --record" if args.record else "hild run"
    print(
        f"{what}, the default bench, {args.duration:g} s, {ticks} ticks ({rate_hz:.0f} Hz); "
        "the tick thread's CPU per tick:"
    )
    print(f"{'part':42} {'us/tick':>8} {'% of a core':>12}")
    for name, _, _ in PARTS:
        if not calls[name]:
            continue
        per_tick_us = cpu_ns[name] / 1e3 / ticks
        print(f"{name:42} {per_tick_us:8.1f} {per_tick_us * rate_hz / 1e4:11.2f} %")
    print(
        f"(a pair of timer calls costs {timer_cost_ns() / 1e3:.2f} us here, hot; each part "
        "above includes one pair of its own and those of the parts within it)"
    )
    if calls[IDLE]:
        idle_us = cpu_ns[IDLE] / 1e3 / calls[IDLE]
        print(
            f"(cold, in the tick, a timed part that does nothing costs {idle_us:.1f} us: the "
            f"hand-over of an empty outbox, {calls[IDLE]} of {ticks} ticks; each part above "
            "carries that much of its own timing, so read a few-microsecond part as at most "
            "its figure, and compare a part between two checkouts timed alike)"
        )


if __name__ == "__main__":
    main()
