"""What hild sweep prints (progress without a terminal, the summary's pass rates) and how it
chooses its cluster."""

from __future__ import annotations

import io
import os

import pytest
from sweep_scenarios import tiny_scenario

from hild.config import ConfigError
from hild.scenario.criteria import CriterionResult
from hild.scenario.file import load_scenario
from hild.sweep import progress
from hild.sweep.cluster import ClusterSpec, cluster_spec
from hild.sweep.plan import plan_sweep
from hild.sweep.summary import summary_text
from hild.sweep.worker import margin_of


def test_without_a_terminal_progress_is_a_plain_line_now_and_then(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.0)
    with progress.SweepProgress(10, 2, 1, bar=True, quiet=False, stream=stream) as shown:
        assert shown.bar is None  # no terminal: no bar
        shown.advance(4, 4)
    assert stream.getvalue().splitlines() == [
        "hild sweep: 6/10 runs, passed: 83%",
        "hild sweep: 6/10 runs, passed: 83%",
    ]
    quiet = io.StringIO()
    with progress.SweepProgress(10, 0, 0, bar=False, quiet=True, stream=quiet) as shown:
        shown.advance(10, 10)
    assert quiet.getvalue() == ""


def test_the_summary_gives_pass_rates_by_value_and_the_worst_runs(tmp_path):
    plan = plan_sweep(load_scenario(str(tiny_scenario(tmp_path))))
    rows = []
    for run in plan.runs:
        values = dict(run.values)
        passed = values["weather.wind_speed"] == 0 or values["mission.acceptance_m"] == 20
        rows.append(
            {
                "index": run.index,
                "seed": run.seed,
                **values,
                "passed": passed,
                "failed": "" if passed else "xte_max_m",
                "margin": -0.5 if passed else 0.1 * run.index,
            }
        )
    text = summary_text(plan, rows, "tiny.toml")
    assert text.startswith("sweep tiny: 12 of 12 runs, 8/12 passed (67%)\n")
    assert "         0  6/6 passed (100%)\n" in text
    assert "         8  2/6 passed (33%)\n" in text
    assert "        20  4/4 passed (100%)\n" in text
    worst = [line for line in text.splitlines() if line.startswith("  run ")]
    assert worst[0] == "  run 9: FAILED xte_max_m (90% past a threshold)"
    assert [w.split(":")[0] for w in worst] == [
        "  run 9",
        "  run 8",
        "  run 7",
        "  run 6",
        "  run 0",
    ]


def test_a_failed_pass_or_fail_criterion_is_not_called_a_share_of_a_threshold(tmp_path):
    plan = plan_sweep(load_scenario(str(tiny_scenario(tmp_path))))
    one_trip = CriterionResult("no_watchdog_trip", 0.0, 1.0, False, 1.0, 12.0, "trips")
    xte = CriterionResult("xte_max_m", 10.0, 13.0, False, 3.0, 40.0, "m")
    near = CriterionResult("xte_max_m", 10.0, 9.0, True, -1.0, 40.0, "m")
    outcomes = {0: (one_trip,), 1: (xte, one_trip), 2: (xte,), 3: (near, one_trip), 4: (near,)}
    rows = []
    for run in plan.runs[:5]:
        criteria = outcomes[run.index]
        failed = ",".join(c.name for c in criteria if not c.passed)
        rows.append(
            {
                "index": run.index,
                "seed": run.seed,
                **dict(run.values),
                "passed": not failed,
                "failed": failed,
                "margin": margin_of(criteria),
            }
        )
    assert [r["margin"] for r in rows] == [2.0, 2.0, pytest.approx(0.3), 2.0, pytest.approx(-0.1)]
    worst = [
        line
        for line in summary_text(plan, rows, "tiny.toml").splitlines()
        if line.startswith("  run ")
    ]
    assert worst == [
        "  run 0: FAILED no_watchdog_trip",  # one trip: not "200% past a threshold"
        "  run 1: FAILED xte_max_m,no_watchdog_trip",
        "  run 3: FAILED no_watchdog_trip",
        "  run 2: FAILED xte_max_m (30% past a threshold)",
        "  run 4: passed (90% of the way to its nearest threshold)",
    ]


def test_workers_size_a_local_cluster_only(monkeypatch):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    assert cluster_spec(None, None, {}).workers == (os.cpu_count() or 1)
    assert cluster_spec(None, 3, {"rig-a": 1.0}) == ClusterSpec(None, 3, {"rig-a": 1.0})
    with pytest.raises(ConfigError) as caught:
        cluster_spec("tcp://127.0.0.1:9", 2, {})
    assert caught.value.file == "--workers" and "--scheduler" in caught.value.expected
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:9")
    assert cluster_spec(None, None, {}).scheduler == "tcp://127.0.0.1:9"
    with pytest.raises(ConfigError):
        cluster_spec(None, 2, {})
