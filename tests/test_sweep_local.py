"""hild sweep on local Dask clusters (real worker processes on 127.0.0.1): the table is the
same whatever the workers and after a resume; exit status, JUnit report, plots."""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET

import pyarrow.parquet as pq
import pytest
from sweep_scenarios import tiny_scenario

from hild.cli import main
from hild.scenario.criteria import METRICS
from hild.scenario.file import load_scenario
from hild.sweep.plan import plan_sweep


@pytest.fixture(autouse=True)
def local_cluster(monkeypatch):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)


def sweep(*args) -> int:
    return main(["sweep", *map(str, args), "--no-progress"])


def test_the_table_is_the_same_with_one_or_two_workers_and_when_resumed(tmp_path, capsys):
    scenario = tiny_scenario(tmp_path)
    one, two, resumed = tmp_path / "one.parquet", tmp_path / "two.parquet", tmp_path / "r.parquet"
    assert sweep(scenario, "--workers", 1, "--out", one) == 0
    assert sweep(scenario, "--workers", 2, "--out", two) == 0
    assert sweep(scenario, "--workers", 1, "--out", resumed, "--runs", 5) == 0
    assert len(pq.read_table(resumed)) == 5
    assert sweep(scenario, "--workers", 2, "--out", resumed, "--resume") == 0
    printed = capsys.readouterr().out
    assert "12 of 12 runs, 12/12 passed" in printed
    assert "(7 runs run now, 5 read back)" in printed

    table = pq.read_table(one)
    assert table.equals(pq.read_table(two)) and table.equals(pq.read_table(resumed))
    assert one.read_bytes() == two.read_bytes() == resumed.read_bytes()
    assert not (tmp_path / "r.parquet.parts").exists()

    plan = plan_sweep(load_scenario(str(scenario)))
    assert table.column_names == [
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
    rows = table.to_pylist()
    assert [r["index"] for r in rows] == list(range(12))
    assert [r["seed"] for r in rows] == [r.seed for r in plan.runs]
    assert [(r["weather.wind_speed"], r["mission.acceptance_m"]) for r in rows] == [
        tuple(v for _, v in run.values) for run in plan.runs
    ]
    assert all(r["ended"] == "completed" and 0 < r["duration_s"] <= 20 for r in rows)
    assert all(r["failed"] == "" and r["margin"] < 0 for r in rows)
    # the values reach the runs: the wind, and the acceptance radius, change the track
    assert len({r["xte_max_m"] for r in rows}) == 6


def test_a_failed_run_exits_1_with_a_junit_report_plots_and_commands(tmp_path, capsys):
    scenario = tiny_scenario(tmp_path, xte_max_m=0.001)
    junit, plots = tmp_path / "report.xml", tmp_path / "plots"
    out = tmp_path / "failing.parquet"
    assert (
        sweep(
            scenario, "--workers", 1, "--runs", 3, "--out", out, "--junit", junit, "--plots", plots
        )
        == 1
    )
    printed = capsys.readouterr().out
    assert "3 of 12 runs, 0/3 passed (0%)" in printed
    assert f"hild scenario run {scenario} --seed " in printed

    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "3"
    cases = suite.findall("testcase")
    assert (
        cases[0]
        .get("name")
        .startswith("run 00: weather.wind_speed=0, mission.acceptance_m=10, seed=")
    )
    failure = cases[0].find("failure")
    assert failure.get("message") == "failed: xte_max_m"
    assert failure.text.startswith("FAIL  xte_max_m:") and "against 0.001 m" in failure.text

    rows = pq.read_table(out).to_pylist()
    assert all(r["failed"] == "xte_max_m" and r["margin"] > 0 for r in rows)
    assert not math.isnan(rows[0]["xte_max_m"])
    assert (plots / "xte_max_m-vs-weather.wind_speed.png").stat().st_size > 1000

    # an existing table is not replaced: it is resumed or removed
    assert sweep(scenario, "--out", out) == 2
    assert "--resume continues" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("controller", "options", "says"),
    [
        ('python = "nosuchmod:factory"', (), "controller.python = 'nosuchmod:factory'"),
        ('python = "json:__version__"', (), "json:__version__ is a str, not a callable"),
        ('command = ["true"]', (), "a controller that runs in lockstep"),
        (
            "pilot = true",
            ("--scheduler", "notaurl"),
            "--scheduler = 'notaurl': expected a Dask scheduler's address, tcp://HOST:PORT",
        ),
    ],
)
def test_bad_input_is_refused_before_any_run_and_writes_nothing(
    tmp_path, capsys, controller, options, says
):
    """Reproduces: a controller that cannot be loaded made every run a FAILED error (exit 1),
    an external one too, and a scheduler's address without a port an internal error."""
    scenario = tiny_scenario(tmp_path)
    scenario.write_text(scenario.read_text().replace("pilot = true", controller))
    out = tmp_path / "t.parquet"
    assert sweep(scenario, "--out", out, *options) == 2
    err = capsys.readouterr().err
    assert says in err and "internal error" not in err
    assert list(tmp_path.iterdir()) == [scenario]  # no table, no parts


def test_a_scheduler_address_from_the_environment_is_named_as_such(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "lab-1")
    assert sweep(tiny_scenario(tmp_path), "--out", tmp_path / "t.parquet") == 2
    assert "$DASK_SCHEDULER_ADDRESS = 'lab-1': expected" in capsys.readouterr().err


def test_more_workers_than_four_per_core_are_refused_at_once(tmp_path, capsys):
    most = 4 * (os.cpu_count() or 1)
    scenario, out = tiny_scenario(tmp_path), tmp_path / "t.parquet"
    with pytest.raises(SystemExit) as stopped:  # (were it taken, the sweep would just run)
        sweep(scenario, "--workers", most + 1, "--runs", 1, "--out", out)
    assert stopped.value.code == 2
    expected = f"--workers: expected a number of worker processes, a whole number from 1 to {most}"
    assert expected in capsys.readouterr().err


def test_runs_whose_controller_fails_them_are_rows_and_the_sweep_goes_on(tmp_path, capsys):
    """A python controller that raises or hangs in a worker fails its run, not the sweep:
    the row's ``ended`` is ``controller_error`` and its failure says what it did."""
    scenario = tiny_scenario(
        tmp_path,
        sweep="seeds = 1",
        parameters='"controller.options.mode" = ["sleeps", "ok", "raises"]',
    )
    scenario.write_text(
        scenario.read_text().replace(
            "pilot = true\n",
            """\
python = "tests.controllers:misbehaves"
step_timeout_s = 0.2
[controller.options]
after_s = 1.0
""",
        )
    )
    out = tmp_path / "t.parquet"
    junit = tmp_path / "t.xml"
    assert sweep(scenario, "--workers", 1, "--out", out, "--junit", junit) == 1
    printed = capsys.readouterr().out
    assert "3 of 3 runs, 1/3 passed (33%)" in printed
    for index in (0, 2):
        assert f"run {index}: FAILED controller_error\n" in printed
    rows = pq.read_table(out).to_pylist()
    assert [r["ended"] for r in rows] == ["controller_error", "completed", "controller_error"]
    assert [r["passed"] for r in rows] == [False, True, False]
    assert "its step at t=1.00 s took longer than 0.2 s" in rows[0]["failures"]
    assert "its step at t=1.00 s raised ZeroDivisionError" in rows[2]["failures"]
    assert rows[0]["margin"] is not None and math.isinf(rows[0]["margin"])
    failures = ET.parse(junit).getroot().findall("testsuite/testcase/failure")
    assert [f.get("type") for f in failures] == ["controller_error", "controller_error"]


def test_a_stop_whose_interrupt_a_finalizer_swallowed_still_stops_the_sweep():
    """SIGTERM landing while Python runs a finalizer (a Dask future's ``__del__``, seen in CI):
    its KeyboardInterrupt is printed and dropped there, and the sweep ran on to the end with
    exit 0. The handler's flag keeps the stop: the next batch, or the end, raises it."""
    import gc
    import os
    import signal
    import sys

    from hild.sweep.command import _terminate_as_interrupt

    class Finalized:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10_000):  # (the handler runs here, inside the finalizer)
                pass

    dropped = []
    before = signal.getsignal(signal.SIGTERM)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: dropped.append(unraisable.exc_type)
    try:
        with _terminate_as_interrupt() as stop:
            Finalized()  # (made and dropped at once: its __del__ runs now)
            gc.collect()
            assert dropped == [KeyboardInterrupt]  # swallowed, as it was in CI
            with pytest.raises(KeyboardInterrupt):
                stop.check()
    finally:
        sys.unraisablehook = previous_hook
    assert signal.getsignal(signal.SIGTERM) is before  # (the handlers put back)
