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

import sys
import time

from hild.kernel_cache import kernels_cached, mark_announced
from hild.log import write_or_drop


def say(text: str) -> None:
    write_or_drop(sys.stderr, text)


def warm(benches: list[str]) -> int:
    """Compile and cache what running each of ``benches`` (none: the default) needs. A bench
    that does not load raises its BenchError (the command line prints its problems, exit 2)."""
    from hild.bench import load_bench
    from hild.daemon import Daemon

    mark_announced()
    names: list[str | None] = list(benches) or [None]
    for name in names:
        verb = "preparing" if kernels_cached() else "compiling"  # (what is missing compiles)
        say(f"hild: {verb} the vessel model for {name or 'the default bench'} ...")
        started = time.monotonic()
        bench = load_bench(name)  # (its step limit steps the compiled model: compiles it)
        Daemon(bench)._warm_up()
        if bench.traffic:
            from hild.traffic.kernel import warm_up

            warm_up()
        say(f" done in {time.monotonic() - started:.1f} s ({bench.profile}, {bench.method}, "
            f"{bench.weather.preset})\n")  # fmt: skip
    return 0
