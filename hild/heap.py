"""The collector during a run: what exists when the run's loop starts is frozen for the loop.

A run's loop (the daemon's ticks, a replay's sentences, a lockstep run) allocates little that
lives; a collection of the oldest generation would still scan every object made before it
(numba's, numpy's, the bench's: some 140,000), a pause of tens of milliseconds in a tick.
Frozen (``gc.freeze``), they are left out of every collection until the run ends; then they
are unfrozen, so that what the run leaves behind in cycles (its event loop, its ports) is
collected in a process that goes on: a sweep's worker, the tests, ``hild scenario run``.

The daemon and a replay collect the garbage (``gc.collect``) before their ports open, so that
no client told they are ready waits for it; a lockstep run, started many times a second in a
sweep, does not (what garbage it freezes is collected after its loop).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def frozen_heap() -> Iterator[None]:
    """The objects that exist now frozen for the ``with`` block, unfrozen after it."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
