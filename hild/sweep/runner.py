"""The runs, in batches on the cluster's workers, collected as each batch finishes.

A task is a batch of runs (hild.sweep.worker.run_batch), so that each carries about
``TARGET_BATCH_S`` of work and Dask's cost per task stays a small share. The first batches
are single runs, one or two per worker, which load the compiled kernels in each worker and
measure a run's wall time; later batches are sized from the runs measured so far (the median
of runs in warm workers), and near the end smaller so the last runs spread over all workers.
About two batches per worker are in flight, so a worker never waits for the next one.
"""

from __future__ import annotations

import math
import statistics
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from distributed import Client, as_completed

from hild.sweep.cluster import worker_count
from hild.sweep.plan import Run
from hild.sweep.worker import RunOutcome, SweepJob, run_batch

TARGET_BATCH_S = 1.5
IN_FLIGHT_PER_WORKER = 2
MAX_BATCH_RUNS = 1000
MEASURED_RUNS_KEPT = 200


@dataclass(frozen=True)
class RunnerStats:
    runs: int
    workers: int
    wall_s: float  # from the first submission to the last batch back
    work_s: float  # the runs' wall times inside the workers, summed
    batches: int


class BatchSizer:
    """How many runs the next batch gets, from the runs' wall times seen so far."""

    def __init__(self, workers: int):
        self.workers = workers
        self.warm: deque[float] = deque(maxlen=MEASURED_RUNS_KEPT)

    def learn(self, outcomes: list[RunOutcome]) -> None:
        self.warm.extend(o.wall_s for o in outcomes if o.warm)

    def size(self, remaining: int) -> int:
        if not self.warm:
            return 1
        per_run = max(statistics.median(self.warm), 1e-4)
        wanted = math.ceil(TARGET_BATCH_S / per_run)
        fair_share = math.ceil(remaining / (self.workers * IN_FLIGHT_PER_WORKER))
        return max(1, min(wanted, fair_share, MAX_BATCH_RUNS))


def run_all(
    client: Client,
    job: SweepJob,
    runs: list[Run],
    resources: dict[str, float],
    on_batch: Callable[[list[RunOutcome]], None],
) -> RunnerStats:
    """Run ``runs`` on the cluster; ``on_batch`` gets each batch's outcomes as it finishes."""
    workers = worker_count(client)
    sizer = BatchSizer(workers)
    pending = deque(runs)
    token = uuid.uuid4().hex[:12]
    job_future = client.scatter(job, broadcast=True, hash=False)
    finished = as_completed()
    outstanding: set = set()
    batches = 0
    work_s = 0.0
    start = time.perf_counter()

    def submit() -> None:
        nonlocal batches
        batch = tuple(pending.popleft() for _ in range(min(sizer.size(len(pending)), len(pending))))
        future = client.submit(
            run_batch,
            job_future,
            batch,
            key=f"hild-sweep-{token}-{batch[0].index}",
            resources=resources or None,
            pure=False,
        )
        finished.add(future)
        outstanding.add(future)
        batches += 1

    try:
        while pending and len(outstanding) < workers * IN_FLIGHT_PER_WORKER:
            submit()
        for future in finished:
            outcomes = future.result()
            outstanding.discard(future)
            sizer.learn(outcomes)
            work_s += sum(o.wall_s for o in outcomes)
            on_batch(outcomes)
            while pending and len(outstanding) < workers * IN_FLIGHT_PER_WORKER:
                submit()
    except BaseException:
        client.cancel(list(outstanding))
        raise
    return RunnerStats(len(runs), workers, time.perf_counter() - start, work_s, batches)
