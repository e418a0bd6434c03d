"""A python controller is judged, not trusted (hild/scenario/judge.py): one that raises,
overruns a time limit, floods or answers garbage fails its run with its own message, where
it did it, and never hangs the run nor reads as hild's internal error. The limits are small
here so that each run ends quickly; the controllers sleep far longer (30 s) than any test."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hild.scenario.file import STEP_TIMEOUT_S, ScenarioError, load_scenario
from hild.scenario.judge import ControllerLimits
from hild.scenario.lockstep import run_lockstep
from hild.scenario.track import RunResult
from tests import controllers

REPO = Path(__file__).resolve().parents[1]
NAMED = f"the controller tests.controllers:misbehaves ({REPO / 'tests' / 'controllers.py'}) failed"

# The thesis' small square with a controller of tests/controllers.py and tight limits.
SCENARIO = """
[scenario]
name = "judged"
bench = "default"
duration_s = 10

[mission]
speed = 5.0
acceptance_m = 15
waypoints = [[100, 0], [100, 100], [0, 100], [0, 0]]

[controller]
python = "tests.controllers:{factory}"
{limits}

[controller.options]
mode = "{mode}"
after_s = 1.0
{options}

[criteria]
xte_max_m = 50
"""
TIGHT = "step_timeout_s = 0.2"


def scenario_file(
    tmp_path: Path,
    mode: str = "ok",
    *,
    factory: str = "misbehaves",
    limits: str = TIGHT,
    options: str = "",
) -> Path:
    path = tmp_path / "judged.toml"
    path.write_text(SCENARIO.format(mode=mode, factory=factory, limits=limits, options=options))
    return path


def run(path: Path) -> RunResult:
    return run_lockstep(load_scenario(str(path)))


def failed_by_its_controller(result: RunResult, at_s: float) -> str:
    """The run failed, ended where its controller failed it, and says so: the message."""
    assert not result.passed and result.ended == "controller_error", result.fault
    assert result.duration_s == pytest.approx(at_s)
    assert result.fault is not None and result.fault.startswith(NAMED), result.fault
    assert result.controller == {}  # (a failed controller's summary is not asked for)
    return result.fault


def test_a_controller_within_the_limits_passes_with_its_summary(tmp_path):
    result = run(scenario_file(tmp_path, "ok"))
    assert result.passed and result.ended == "duration" and result.fault is None
    assert result.controller == {"steps": 101}  # every 0.1 s for 10 s, the end included


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("sleeps", "its step at t=1.00 s took longer than 0.2 s (controller.step_timeout_s)"),
        ("spins", "its step at t=1.00 s took longer than 0.2 s (controller.step_timeout_s)"),
        (
            "raises",
            "its step at t=1.00 s raised ZeroDivisionError: integer division or modulo by zero",
        ),
        (
            "floods",
            "its step at t=1.00 s returned 100000 lines in one step, the limit is 1000 "
            "(controller.max_lines_per_step)",
        ),
        (
            "streams",
            "its step at t=1.00 s returned more than 1000 lines in one step, the limit "
            "is 1000 (controller.max_lines_per_step)",
        ),
        ("number", "its step at t=1.00 s returned an int, not lines"),
        ("text", "its step at t=1.00 s returned a str, not lines"),
        ("texts", "its step at t=1.00 s returned a str as line 0, not bytes"),
    ],
)
def test_a_step_that_misbehaves_fails_the_run_there_with_its_own_message(tmp_path, mode, says):
    result = run(scenario_file(tmp_path, mode))
    fault = failed_by_its_controller(result, at_s=1.0)
    assert fault == f"{NAMED}: {says}" or fault.startswith(f"{NAMED}: {says}"), fault
    # judged as far as it went: the criteria hold on the first second's track
    assert all(c.passed for c in result.criteria)


def test_a_step_that_answers_none_sends_nothing_as_it_always_did(tmp_path):
    result = run(scenario_file(tmp_path, "none"))
    assert result.fault is None and result.ended != "controller_error", result.fault


@pytest.mark.parametrize("mode", ["sleeps", "spins"])
def test_a_run_ends_while_its_controller_is_still_stuck_in_the_step(tmp_path, mode):
    """The run is given up while the step still sleeps or loops (30 s), not once it returns;
    a loop of Python is then stopped by the exception raised into it."""
    controllers.MADE.clear()
    failed_by_its_controller(run(scenario_file(tmp_path, mode)), at_s=1.0)
    (controller,) = controllers.MADE
    assert not controller.woke
    if mode == "spins":
        for _ in range(200):  # (at its next turn of the loop)
            if controller.stopped:
                break
            time.sleep(0.05)
        assert controller.stopped and not controller.woke


def test_steps_that_each_keep_their_limit_but_not_all_together_fail_by_the_total(tmp_path):
    limits = "step_timeout_s = 5\ntotal_timeout_s = 0.3"
    path = scenario_file(tmp_path, "sleeps", limits=limits, options="sleep_s = 0.05")
    result = run(path)
    fault = failed_by_its_controller(result, at_s=result.duration_s)
    assert (
        "its calls took longer than 0.3 s in all (controller.total_timeout_s); the last was "
        "its step at t=" in fault
    )
    assert 1.0 < result.duration_s < 2.0  # ~6 steps of 0.05 s after t = 1 s, at 10 Hz


def test_a_factory_that_raises_or_hangs_fails_the_run_at_its_start(tmp_path):
    result = run(scenario_file(tmp_path, factory="factory_raises"))
    assert result.ended == "controller_error" and not result.passed
    assert result.duration_s == 0.0
    assert result.fault == (
        "the controller tests.controllers:factory_raises ("
        f"{REPO / 'tests' / 'controllers.py'}) failed: its factory raised "
        "KeyError: 'no such vessel model'"
    )
    slow = run(scenario_file(tmp_path, factory="factory_sleeps"))
    assert slow.ended == "controller_error" and slow.duration_s == 0.0
    assert slow.fault is not None
    assert slow.fault.endswith(
        "failed: its factory took longer than 0.2 s (controller.step_timeout_s)"
    )


def test_a_summary_that_raises_fails_a_run_that_went_to_its_end(tmp_path):
    result = run(scenario_file(tmp_path, "summary"))
    fault = failed_by_its_controller(result, at_s=10.0)
    assert fault == f"{NAMED}: its summary() raised RuntimeError: no summary today"


def test_the_line_limit_is_the_scenarios(tmp_path):
    """hild's pilot sends a few sentences a step (7 at most here: a neutral set, then the
    commands and an HSC)."""
    result = run(scenario_file(tmp_path, "ok", limits=f"{TIGHT}\nmax_lines_per_step = 2"))
    fault = failed_by_its_controller(result, at_s=0.0)
    assert "its step at t=0.00 s returned " in fault
    assert fault.endswith(" lines in one step, the limit is 2 (controller.max_lines_per_step)")
    assert run(scenario_file(tmp_path, "ok", limits="max_lines_per_step = 7")).passed


def test_an_observed_run_whose_controller_hangs_ends_and_stops_its_observers(tmp_path):
    from hild.observers import TickObserver

    class Seen(TickObserver):
        def __init__(self) -> None:
            self.ticks = 0
            self.stopped = False

        def on_tick(self, daemon, t: float) -> None:
            self.ticks += 1

        async def stop(self, daemon) -> None:
            self.stopped = True

    seen = Seen()
    scenario = load_scenario(str(scenario_file(tmp_path, "sleeps")))
    result = run_lockstep(scenario, observers=[seen])
    failed_by_its_controller(result, at_s=1.0)
    assert seen.stopped and seen.ticks == 100  # 100 Hz for the first second


def test_the_limits_default_far_above_a_real_controller_and_the_total_follows_the_run(tmp_path):
    scenario = load_scenario(str(scenario_file(tmp_path, limits="")))
    assert ControllerLimits.of(scenario) == ControllerLimits(STEP_TIMEOUT_S, 60.0, 1000)
    long = scenario.with_values({"scenario.duration_s": 600})
    assert ControllerLimits.of(long).total_s == 600.0
    set_ = scenario.with_values({"controller.total_timeout_s": 5})
    assert ControllerLimits.of(set_).total_s == 5.0


@pytest.mark.parametrize(
    ("limits", "key", "value", "expected"),
    [
        (
            "step_timeout_s = 0",
            "controller.step_timeout_s",
            0,
            "a number in seconds greater than 0",
        ),
        (
            "step_timeout_s = 7200",
            "controller.step_timeout_s",
            7200,
            "a number in seconds of at most 3600",
        ),
        ('total_timeout_s = "long"', "controller.total_timeout_s", "long", "a number in seconds"),
        (
            "max_lines_per_step = 0",
            "controller.max_lines_per_step",
            0,
            "an integer from 1 to 1000000",
        ),
        ("max_lines_per_step = 2.5", "controller.max_lines_per_step", 2.5, "an integer"),
        ("step_timeout = 1", "controller.step_timeout", 1, "did you mean 'step_timeout_s'"),
    ],
)
def test_bad_limits_name_the_file_key_value_and_what_was_expected(
    tmp_path, limits, key, value, expected
):
    path = scenario_file(tmp_path, limits=limits)
    with pytest.raises(ScenarioError) as e:
        load_scenario(str(path))
    (error,) = [err for err in e.value.errors if err.key == key]
    assert error.file == str(path) and error.value == value and expected in error.expected


# --- the command line -------------------------------------------------------------------------


def hild(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "hild.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
    )


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("sleeps", "its step at t=1.00 s took longer than 0.2 s (controller.step_timeout_s)"),
        ("raises", "its step at t=1.00 s raised ZeroDivisionError"),
    ],
)
def test_cli_a_controller_that_fails_exits_1_with_its_message(tmp_path, mode, says):
    """Reproduces: a step that raised was "hild: internal error" (exit 1); one that slept held
    `hild scenario run` for as long as it slept (for ever, for a controller that hangs)."""
    path = scenario_file(tmp_path, mode)
    done = hild("scenario", "run", str(path), "--junit", "v.xml", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert f"hild: {path}: {NAMED}: {says}" in done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert done.stdout.startswith("FAIL  scenario 'judged' seed 0: controller_error at t=1.0 s")
    assert f"  FAIL  {NAMED}: {says}" in done.stdout
    failure = ET.parse(tmp_path / "v.xml").getroot().find("testsuite/testcase/failure")
    assert failure.get("message") == failure.get("type") == "controller_error"
    assert says in failure.text

    as_json = hild("scenario", "run", str(path), "--json", cwd=tmp_path)
    assert as_json.returncode == 1
    result = json.loads(as_json.stdout)
    assert result["ended"] == "controller_error" and result["passed"] is False
    assert says in result["fault"]


def test_no_watched_thread_is_left_by_runs_that_end_well(tmp_path):
    before = {t.ident for t in threading.enumerate()}
    assert run(scenario_file(tmp_path, "ok")).passed
    left = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    for t in left:
        t.join(5.0)
    assert not [t for t in left if t.is_alive()]
