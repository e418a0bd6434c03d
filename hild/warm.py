"""`hild warm [BENCH ...]`: compile the kernels a run of each bench needs, and cache them.

The set-up step of the README's `make run` calls it after installing, so that a newcomer's
first `hild run` loads the vessel model from the cache (under a second to the first sentence)
instead of compiling it (seconds here, up to a minute on a Raspberry Pi) with the boat silent.
It does what a run does before its clock starts (``Daemon._warm_up``: the bench's vessel and
weather stepped, every device sampled, every controller's neutral line applied) on throwaway
copies, so the cache holds exactly what that run loads. Kernels are cached per set of the
compiled core's sources (hild/kernel_cache.py): a change to the core, or an upgrade, makes the
next run (or the next ``hild warm``) compile afresh.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from hild.kernel_cache import kernels_cached, mark_announced
from hild.log import write_or_drop


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """`hild warm`'s parser, on the subparsers ``sub`` of `hild`."""
    parser = sub.add_parser(
        "warm",
        help="compile and cache the vessel model a bench's run needs (the set-up does it)",
        description="Compile the kernels that running each bench needs (the vessel model, its "
        "weather, every device) and cache them, so that the first hild run starts at once "
        "instead of compiling with the boat silent (seconds; up to a minute on a Raspberry Pi). "
        "make run's set-up calls it. The cache follows hild's sources: after an upgrade the "
        "next run, or hild warm, compiles afresh.",
    )
    parser.add_argument(
        "benches",
        nargs="*",
        metavar="BENCH",
        help="bench files or built-in bench names (default: the default bench)",
    )
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """`hild warm`."""
    return warm(args.benches)


def say(text: str) -> None:
    write_or_drop(sys.stderr, text)


def warm(benches: list[str]) -> int:
    """Compile and cache what running each of ``benches`` (none: the default) needs. A bench
    that does not load raises its BenchError (the command line prints its problems, exit 2)."""
    from hild.bench import load_bench
    from hild.world.rehearsal import warm_up as warm_run

    mark_announced()
    names: list[str | None] = list(benches) or [None]
    for name in names:
        verb = "preparing" if kernels_cached() else "compiling"  # (what is missing compiles)
        say(f"hild: {verb} the vessel model for {name or 'the default bench'} ...")
        started = time.monotonic()
        bench = load_bench(name)  # (its step limit steps the compiled model: compiles it)
        warm_run(bench)
        if bench.traffic:
            from hild.traffic.kernel import warm_up

            warm_up()
        say(
            f" done in {time.monotonic() - started:.1f} s ({bench.profile}, {bench.method}, "
            f"{bench.weather.preset})\n"
        )
    return 0
