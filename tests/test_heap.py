"""A run's loop freezes the objects made before it and unfreezes them when it ends: no tick
scans them, and what a run leaves behind in cycles is collected in a process that goes on
(a sweep's worker runs thousands of runs)."""

from __future__ import annotations

import asyncio
import gc
import weakref

from hild.bench import load_bench
from hild.drivers.realtime import Daemon
from hild.heap import frozen_heap
from hild.observers import TickObserver
from hild.scenario.file import load_scenario
from hild.scenario.lockstep import LockstepRun
from tests.endpoints import free_udp_port
from tests.test_daemon import default_bench_on_free_ports


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


class FreezeSeen(TickObserver):
    def __init__(self) -> None:
        self.counts: list[int] = []

    def on_tick(self, daemon, t: float) -> None:
        self.counts.append(gc.get_freeze_count())


def test_what_the_block_froze_is_collected_after_it():
    gc.unfreeze()
    node = Node()
    ref = weakref.ref(node)
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        del node
        gc.collect()
        assert ref() is not None  # frozen: no collection looks at it
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert ref() is None


def test_a_daemon_run_freezes_during_its_loop_and_not_after(tmp_path):
    gc.unfreeze()
    seen = FreezeSeen()
    bench = default_bench_on_free_ports(tmp_path, free_udp_port(), free_udp_port())
    daemon = Daemon(load_bench(bench, run_dir=str(tmp_path / "run")), 0.2, [seen])
    daemon_ref = weakref.ref(daemon)
    asyncio.run(daemon.run())
    assert seen.counts and min(seen.counts) > 10_000  # hild, numpy, numba: all frozen
    assert gc.get_freeze_count() == 0
    del daemon, seen
    gc.collect()
    assert daemon_ref() is None


def test_a_lockstep_run_freezes_during_its_loop_and_not_after():
    gc.unfreeze()
    seen = FreezeSeen()
    scenario = load_scenario("square-calm").with_values({"scenario.duration_s": 2.0})
    LockstepRun(scenario, observers=[seen]).run()
    assert seen.counts and min(seen.counts) > 10_000
    assert gc.get_freeze_count() == 0
