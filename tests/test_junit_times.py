"""JUnit times from the runs' wall time (issue 55: the sweep's report had time="0.000" for
every case and the suite).

A sweep's case has its run's wall time in its worker, its suite the invocation's elapsed
time; a run read back from the table (--resume) was not run now: 0, and its output says so.
The table itself stays free of wall times (the same sweep gives the same file anywhere).
`hild scenario run --junit` has the run's wall time in its one case and its suite.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pyarrow.parquet as pq
import pytest
from sweep_scenarios import tiny_scenario

from hild.scenario.criteria import METRICS
from hild.sweep.junit import READ_BACK
from tests.forked_cli import run_hild

COLUMNS = [
    "index",
    "weather.wind_speed",
    "mission.acceptance_m",
    "seed",
    "passed",
    "ended",
    "duration_s",
    *METRICS,
    "failed",
    "failures",
    "margin",
    "hild_version",
]


@pytest.fixture(autouse=True)
def local_cluster(monkeypatch):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)


def suite_of(path) -> ET.Element:
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    return suite


def times(suite: ET.Element) -> list[float]:
    return [float(case.get("time", "nan")) for case in suite.findall("testcase")]


def sweep(*args: object) -> None:
    run = run_hild("sweep", *map(str, args), "--workers", "1", "--no-progress", timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


def test_a_sweeps_cases_have_their_runs_wall_time_and_resumed_ones_zero(tmp_path):
    scenario, out = tiny_scenario(tmp_path), tmp_path / "t.parquet"
    first, resumed = tmp_path / "first.xml", tmp_path / "resumed.xml"
    sweep(scenario, "--runs", 2, "--out", out, "--junit", first)

    suite = suite_of(first)
    cases = times(suite)
    assert len(cases) == 2 and all(t > 0 for t in cases), cases
    elapsed = float(suite.get("time", "nan"))
    assert elapsed >= sum(cases) > 0  # (one worker: the runs one after the other)
    assert not suite.findall("testcase/system-out")

    # resumed: the two runs in the table are read back (time 0, said so), the third is run
    sweep(scenario, "--runs", 3, "--out", out, "--resume", "--junit", resumed)
    suite = suite_of(resumed)
    assert times(suite)[:2] == [0.0, 0.0] and times(suite)[2] > 0, times(suite)
    outputs = [case.findtext("system-out") for case in suite.findall("testcase")]
    assert outputs == [READ_BACK, READ_BACK, None]
    assert float(suite.get("time", "nan")) >= times(suite)[2]

    # the table has no wall time: its columns are as ever
    assert pq.read_table(out).column_names == COLUMNS


def test_scenario_run_junit_has_the_runs_wall_time(tmp_path):
    report = tmp_path / "v.xml"
    run = run_hild(
        "scenario", "run", str(tiny_scenario(tmp_path)), "--json", "--junit", str(report)
    )
    assert run.returncode == 0, run.stderr[-2000:]
    wall_s = json.loads(run.stdout)["wall_s"]
    suite = suite_of(report)
    assert wall_s > 0
    assert times(suite) == [pytest.approx(wall_s, abs=1e-3)]
    assert float(suite.get("time", "nan")) == pytest.approx(wall_s, abs=1e-3)
