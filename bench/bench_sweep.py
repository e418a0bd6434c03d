"""Benchmark: how hild sweep scales over workers, and what Dask costs it.

One sweep of short lockstep runs (square-calm's boat and pilot on a two-leg mission of 20 s,
the wind swept over 0..10 m/s, many seeds) on a local Dask cluster with one worker, then on
one with two, in the same process. For each: runs per second on the warm cluster (each
worker has run one run first: hild imported, the compiled kernels loaded), from the first
task submitted to the last batch back, with the time including the cluster's start, warm-up
and stop beside it; and Dask's overhead as a share of the workers' time: 1 - (the runs' wall
times inside the workers, summed) / (wall time x workers). Goal (issue 26): two workers at
least 1.8 times one on a two-core machine. A run's time in its worker is printed too: if it
grows with two workers, the cores were busy with something else (the load average before
each is shown).

    python bench/bench_sweep.py [--runs 240]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from hild.scenario.file import load_scenario
from hild.sweep.cluster import cluster_spec, connected
from hild.sweep.plan import check_runs, plan_sweep
from hild.sweep.runner import RunnerStats, run_all
from hild.sweep.worker import run_batch, sweep_job

SCENARIO = """
[scenario]
name = "bench-sweep"
bench = "default"
duration_s = 20
stop_when_complete = false

[mission]
speed = 5.0
acceptance_m = 15
waypoints = [{{ north = 40, east = 0 }}, {{ north = 40, east = 40 }}]

[controller]
pilot = true

[criteria]
xte_max_m = 50

[sweep]
seed = 1
seeds = {seeds}

[sweep.parameters]
"weather.wind_speed" = {{ from = 0, to = 10, step = 2 }}
"""
WIND_VALUES = 6


def measure(path: Path, workers: int, runs: int) -> tuple[RunnerStats, float]:
    """The sweep on a warm cluster (each worker has run one run: hild imported, the kernels
    loaded), and the time with the cluster's start and warm-up and stop."""
    scenario = load_scenario(str(path))
    plan = plan_sweep(scenario)
    check_runs(scenario, plan)
    job = sweep_job(scenario)
    start = time.perf_counter()
    with connected(cluster_spec(None, workers, {})) as client:
        client.run(run_batch, job, plan.runs[-1:])  # on every worker
        stats = run_all(client, job, list(plan.runs[:runs]), {}, lambda _: None)
    return stats, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=240)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench-sweep.toml"
        path.write_text(SCENARIO.format(seeds=-(-args.runs // WIND_VALUES)))
        rates = {}
        for workers in (1, 2):
            load = os.getloadavg()[0]
            stats, total = measure(path, workers, args.runs)
            rates[workers] = stats.runs / stats.wall_s
            overhead = 1.0 - stats.work_s / (stats.wall_s * stats.workers)
            print(
                f"{workers} worker(s): {stats.runs} runs in {stats.wall_s:.2f} s "
                f"({rates[workers]:.1f} runs/s; {stats.batches} batches; with the cluster's "
                f"start, warm-up and stop: {total:.2f} s), a run "
                f"{stats.work_s / stats.runs * 1e3:.0f} ms in its worker, Dask's overhead "
                f"{overhead:.1%} of the workers' "
                f"time (load average before: {load:.2f})"
            )
    print(f"2 workers / 1 worker: {rates[2] / rates[1]:.2f}x (goal: at least 1.8x)")


if __name__ == "__main__":
    main()
