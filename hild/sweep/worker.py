"""What a Dask worker runs: a batch of a sweep's runs, one after the other, in its process.

The scenario travels as its merged document (no file needs to exist on the worker) and is
read once per process and document; each run sets its values and seed on it
(``Scenario.with_values``) and runs in lockstep. A run that raises is a failed run whose
``ended`` is ``error`` and whose failure says what was raised; a run whose controller failed it
(raised, overran a time limit, flooded: hild/scenario/judge.py) is a failed run whose
``ended`` is ``controller_error`` and whose first failure says what the controller did. Either
way the batch goes on.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hild
from hild.scenario.criteria import METRICS, CriterionResult, pass_or_fail
from hild.scenario.file import Scenario, scenario_from_document
from hild.scenario.report import failed_names, failure_sentences
from hild.sweep.plan import Run

_SCENARIOS: dict[str, Scenario] = {}  # this process's scenarios, by their document's digest
_RUNS_DONE = 0  # runs this process has run (its first pays for loading the compiled kernels)


@dataclass(frozen=True)
class SweepJob:
    """What every batch of one sweep shares: the scenario's file name and merged document."""

    file: str
    document: dict[str, Any]
    digest: str


@dataclass(frozen=True)
class RunOutcome:
    index: int
    seed: int  # the bench seed the run had
    passed: bool
    ended: str
    duration_s: float  # simulated
    metrics: dict[str, float]
    failed: tuple[str, ...]  # the failed criteria's names
    failures: tuple[str, ...]  # their sentences (or the error raised)
    margin: float  # see margin_of
    hild_version: str
    wall_s: float  # this run's wall time in the worker, with_values included
    warm: bool  # the process had run one before (no kernel loading in wall_s)


def sweep_job(scenario: Scenario) -> SweepJob:
    text = json.dumps(scenario.document, sort_keys=True, default=str)
    return SweepJob(scenario.file, scenario.document, hashlib.sha256(text.encode()).hexdigest())


def hild_version() -> str:
    return hild.__version__


def controller_problem(target: str, file: str) -> str | None:
    """Why a python controller's factory does not load in this process (a worker started
    apart, without the controller's module on its path), or None."""
    from hild.scenario.controller import ControllerLoadError, load_factory

    try:
        load_factory(target, file)
    except ControllerLoadError as e:
        return e.problem
    return None


def runs_done() -> int:
    """How many runs this process has run (which workers ran a sweep's runs)."""
    return _RUNS_DONE


def run_batch(job: SweepJob, runs: tuple[Run, ...]) -> list[RunOutcome]:
    scenario = _scenario(job)
    return [run_one(scenario, run) for run in runs]


def run_one(scenario: Scenario, run: Run) -> RunOutcome:
    from hild.scenario.fleet_lockstep import run_fleet_lockstep
    from hild.scenario.lockstep import run_lockstep

    global _RUNS_DONE
    warm = _RUNS_DONE > 0
    _RUNS_DONE += 1
    start = time.perf_counter()
    try:
        varied = scenario.with_values(run.settings())
        result = (run_fleet_lockstep if varied.is_fleet else run_lockstep)(varied)
    except Exception as e:
        wall = time.perf_counter() - start
        nan = dict.fromkeys(METRICS, math.nan)
        message = f"error: {type(e).__name__}: {e}"
        return RunOutcome(
            run.index,
            run.seed,
            False,
            "error",
            0.0,
            nan,
            ("error",),
            (message,),
            math.inf,
            hild.__version__,
            wall,
            warm,
        )
    wall = time.perf_counter() - start
    # a run its controller failed is no share of a threshold: no margin (as a run that raised)
    margin = margin_of(result.criteria) if result.fault is None else math.inf
    return RunOutcome(
        index=run.index,
        seed=result.seed,
        passed=result.passed,
        ended=result.ended,
        duration_s=result.duration_s,
        metrics=dict(result.metrics),  # (a fleet's: its separation and each boat's too)
        failed=failed_names(result),
        failures=failure_sentences(result),
        margin=margin,
        hild_version=hild.__version__,
        wall_s=wall,
        warm=warm,
    )


def margin_of(criteria: tuple[CriterionResult, ...]) -> float:
    """How close a run came to failing, as a share of the thresholds: the largest of each
    criterion's ``by`` over its threshold (positive: failed by that share; the closer to 0 from
    below, the nearer a pass came to failing). Criteria with a threshold of 0 (no trips, no
    divergence, no metre outside) are pass or fail only and count when they fail (as 1 + by)."""
    worst = -math.inf
    for c in criteria:
        if c.threshold != 0.0 and not pass_or_fail(c.name):
            share = c.by / abs(c.threshold)
        elif not c.passed:
            share = 1.0 + c.by
        else:
            continue
        worst = max(worst, share if not math.isnan(share) else math.inf)
    return worst if worst != -math.inf else math.nan


def _scenario(job: SweepJob) -> Scenario:
    scenario = _SCENARIOS.get(job.digest)
    if scenario is None:
        _SCENARIOS.clear()
        scenario = scenario_from_document(job.document, Path(job.file))
        _SCENARIOS[job.digest] = scenario
    return scenario
