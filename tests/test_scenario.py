"""Scenarios: the file, the lockstep run, each criterion failing and passing on purpose, the
in-process controller protocol, and `hild scenario run`.

The metrics are checked against tracks whose answer is known by construction (a straight
run 3 m off its line, a fence the square leaves), not against a copy of the code.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from hild.config import ConfigError
from hild.scenario.command import parse_settings
from hild.scenario.criteria import MissionWalk, outside_distance
from hild.scenario.file import Mission, ScenarioError, Waypoint, load_scenario
from hild.scenario.lockstep import run_lockstep
from tests import controllers

REPO = Path(__file__).resolve().parents[1]

# A 100 m square, Odin from rest in calm water, hild's pilot: about 85 s of simulated time.
SQUARE = """
[scenario]
name = "small-square"
bench = "default"
duration_s = {duration}

[mission]
speed = 5.0
acceptance_m = 15
waypoints = [[100, 0], [100, 100], [0, 100], [0, 0]]

[controller]
{controller}

[criteria]
{criteria}
"""


def scenario_file(
    tmp_path: Path,
    criteria: str = "",
    controller: str = "pilot = true",
    duration: float = 200.0,
    extra: str = "",
) -> Path:
    path = tmp_path / "scenario.toml"
    text = SQUARE.format(duration=duration, controller=controller, criteria=criteria)
    path.write_text(text + extra)
    return path


def run(path: Path, **values):
    scenario = load_scenario(str(path))
    if values:
        scenario = scenario.with_values(values)
    return run_lockstep(scenario, keep_track=True)


def criterion(result, name):
    (c,) = [c for c in result.criteria if c.name == name]
    return c


# --- the metrics against tracks with a known answer ------------------------------------------


def test_cross_track_error_of_a_run_beside_its_line():
    """A boat 3 m to starboard of a 100 m leg north: RMS and max 3 m; the waypoint is reached
    (3 m is inside a 15 m circle) when it first comes within 15 m of it."""
    mission = Mission((Waypoint(100.0, 0.0, 5.0),), acceptance_m=15.0)
    walk = MissionWalk(mission)
    walk.feed(0.0, 0.0, 0.0)  # the start: the leg runs from here
    for k in range(1, 200):
        walk.feed(float(k), float(k), 3.0)
    rms, worst, _ = walk.xte()
    # samples at k = 0 (on the line) and k = 1 .. 85 (3 m off) while the leg is sailed
    assert rms == pytest.approx(3.0 * math.sqrt(85 / 86), rel=1e-12)
    assert worst == pytest.approx(3.0, abs=1e-12)
    # first within 15 m: north n with (100 - n)^2 + 9 <= 225, n >= 85.30: k = 86
    assert walk.reached == [(0, 0, 86.0)]
    assert walk.complete


def test_a_waypoint_passed_outside_its_circle_is_missed_not_reached():
    mission = Mission((Waypoint(100.0, 0.0, 5.0), Waypoint(200.0, 0.0, 5.0)), acceptance_m=10.0)
    walk = MissionWalk(mission)
    for k in range(0, 300):
        walk.feed(float(k), float(k), 20.0)  # 20 m off: never within 10 m of either
    assert walk.reached == [] and walk.done and not walk.complete


def test_distance_outside_a_polygon():
    square = [(0.0, 0.0), (10.0, 0.0), (10.0, 10.0), (0.0, 10.0)]
    north = np.array([5.0, 12.0, -3.0, 5.0, 14.0])  # the last 4 and 3 beyond the corner
    east = np.array([5.0, 5.0, 5.0, 13.0, 13.0])
    got = outside_distance(north, east, square)
    assert got == pytest.approx([0.0, 2.0, 3.0, 3.0, 5.0])  # inside, edges, a 3-4-5 corner


# --- a run and its criteria ------------------------------------------------------------------


def test_the_pilot_sails_the_small_square_and_every_criterion_holds(tmp_path):
    path = scenario_file(
        tmp_path,
        """
        all_waypoints = true
        complete_within_s = 150
        xte_max_m = 25
        max_roll_deg = 15
        no_watchdog_trip = true
        min_command_rate_hz = 5
        max_command_age_s = 0.5
    """,
    )
    result = run(path)
    assert result.passed, [c.sentence() for c in result.failed]
    assert result.ended == "completed" and result.duration_s < 150.0
    assert [i for i, _, _ in result.reached] == [0, 1, 2, 3]
    # the pilot re-sends at 10 Hz and on each 10 Hz fix: a command every 0.1 s of sim time
    assert result.metrics["command_rate_hz"] == pytest.approx(10.0, rel=0.01)
    assert result.metrics["max_command_age_s"] == pytest.approx(0.1, abs=1e-9)
    # the track is the truth: the last waypoint reached within its circle at the end
    end = result.track[-1]
    assert math.hypot(end[1], end[2]) <= 15.0


def test_the_same_seed_repeats_bit_for_bit_and_another_differs_in_waves(tmp_path):
    path = scenario_file(tmp_path, "max_roll_deg = 45", extra='\n[weather]\npreset = "gale-hs1"\n')
    a, b = run(path), run(path)
    assert np.array_equal(a.track, b.track) and a.metrics == b.metrics
    c = run(path, **{"bench.seed": 7})
    assert c.seed == 7 and not np.array_equal(a.track[:100], c.track[:100])


def test_a_mission_that_cannot_be_completed_in_time_fails_by_its_overrun(tmp_path):
    path = scenario_file(tmp_path, "complete_within_s = 40\nall_waypoints = true")
    result = run(path)
    late = criterion(result, "complete_within_s")
    assert not late.passed and not result.passed
    assert late.by == pytest.approx(result.metrics["time_to_complete_s"] - 40.0)
    assert criterion(result, "all_waypoints").passed  # it did finish, only too late


def test_a_mission_cut_short_has_no_completion_time_and_misses_waypoints(tmp_path):
    path = scenario_file(tmp_path, "complete_within_s = 300\nall_waypoints = true", duration=50)
    result = run(path)
    assert result.ended == "duration" and result.duration_s == pytest.approx(50.0)
    assert math.isnan(result.metrics["time_to_complete_s"])
    assert not criterion(result, "complete_within_s").passed
    missed = criterion(result, "all_waypoints")
    assert not missed.passed and missed.value < 4 and missed.by == 4 - missed.value


def test_a_geofence_crossed_fails_with_how_far_and_when(tmp_path):
    # the square's east side runs at east = 100: a fence at east = 60 is crossed on leg 2
    fence = (
        "geofence = ["
        + ", ".join(
            f"{{ north = {n}, east = {e} }}"
            for n, e in [(-50, -50), (150, -50), (150, 60), (-50, 60)]
        )
        + "]"
    )
    result = run(scenario_file(tmp_path, fence))
    crossed = criterion(result, "geofence")
    assert not crossed.passed
    # it went out to about the east side (100 m) and back: 40 m beyond the fence, within the
    # 15 m acceptance circle and the turn's overshoot
    assert 30.0 < crossed.by < 60.0
    out_at = crossed.at_s
    row = result.track[np.searchsorted(result.track[:, 0], out_at)]
    assert row[2] > 60.0 and result.track[result.track[:, 0] < out_at, 2].max() <= 60.0


def test_roll_within_and_beyond_its_limit(tmp_path):
    path = scenario_file(tmp_path, "max_roll_deg = 0.01")
    result = run(path)
    roll = criterion(result, "max_roll_deg")
    assert not roll.passed and roll.value > 0.01
    assert roll.value == pytest.approx(np.degrees(np.abs(result.track[:, 4]).max()))
    assert run(scenario_file(tmp_path, f"max_roll_deg = {roll.value + 0.5}")).passed


def test_a_controller_that_goes_silent_trips_the_watchdog_and_fails(tmp_path):
    controller = (
        'python = "tests.controllers:falls_silent"\n[controller.options]\nsilent_after_s = 20.0'
    )
    criteria = "no_watchdog_trip = true\nmax_command_age_s = 1.0\nmin_command_rate_hz = 5"
    result = run(scenario_file(tmp_path, criteria, controller=controller, duration=60))
    trip, age = criterion(result, "no_watchdog_trip"), criterion(result, "max_command_age_s")
    assert not trip.passed and trip.value == 1.0  # the lease ran out once, and stays out
    assert not age.passed
    # silent from t = 20 s (its last command at 19.9 s) to the end at 60 s
    assert age.value == pytest.approx(60.0 - 19.9, abs=1e-6)
    assert result.controller == {"steps": pytest.approx(601, abs=1), "silent_after_s": 20.0}
    # the jets idle after the trip: the boat slows (Odin coasts down within 40 s)
    assert criterion(result, "min_command_rate_hz").value < 5


def test_a_python_controller_gets_the_sentences_the_wires_carry(tmp_path):
    controllers.RECORDERS.clear()
    path = scenario_file(
        tmp_path, "", controller='python = "tests.controllers:recorder"', duration=2.0
    )
    result = run(path)
    (rec,) = controllers.RECORDERS
    assert rec.context.profile == "odin" and rec.context.protocol == "iec"
    assert [(w.north, w.east) for w in rec.context.waypoints][:2] == [(100.0, 0.0), (100.0, 100.0)]
    times = [t for t, _ in rec.calls]
    assert times[0] == 0.0 and len(times) == 21  # every 0.1 s: the GPS epochs and the re-sends
    first = rec.calls[0][1]
    kinds = [line[3:6] for line in first]
    assert kinds[:5] == [b"GGA", b"RMC", b"VTG", b"ZDA", b"HDT"]  # the GNSS compass' epoch
    assert all(not line.endswith(b"\n") for line in first)
    assert result.metrics["command_rate_hz"] == 0.0  # it sent nothing


def test_a_target_run_into_fails_min_cpa_and_one_that_gives_way_passes():
    """The built-in encounters with the reference pilot, which keeps its line: where the own
    ship must give way nobody does (a near-collision), where the target must, it does."""
    give_way = run_lockstep(load_scenario("crossing-give-way"))
    cpa = criterion(give_way, "min_cpa_m")
    assert not cpa.passed and cpa.value < 20.0  # CPA 0 m in 300 s, as the traffic file sets it
    assert cpa.at_s == pytest.approx(300.0, abs=10.0)
    stand_on = run_lockstep(load_scenario("crossing-stand-on"))
    assert stand_on.passed and criterion(stand_on, "min_cpa_m").value > 100.0


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "key", "says"),
    [
        ({"criteria": "max_rol_deg = 10"}, "criteria.max_rol_deg", "a known key"),
        ({"controller": 'pilot = true\npython = "a.b:c"'}, "controller.python", "exactly one"),
        ({"controller": 'python = "not a factory"'}, "controller.python", "package.module:factory"),
        ({"controller": ""}, "controller.pilot", "exactly one"),  # said "pilot = None" before
        ({"criteria": "geofence = [{ north = 0, east = 0 }]"}, "criteria.geofence", "at least 3"),
        ({"duration": -5}, "scenario.duration_s", "greater than 0"),
        # every criterion is a known key, the ones the file left out too
        ({"criteria": "min_cpa = 100"}, "criteria.min_cpa", "did you mean 'min_cpa_m'"),
        ({"criteria": "xte_rms = 5"}, "criteria.xte_rms", "max_roll_deg, min_command_rate_hz"),
        # and the scenario's own tables are known beside the bench's
        ({"extra": "\n[criterias]\nxte_max_m = 5\n"}, "criterias", "did you mean 'criteria'"),
    ],
)
def test_bad_scenarios_name_the_file_key_and_what_was_expected(tmp_path, change, key, says):
    path = scenario_file(tmp_path, **change)
    with pytest.raises(ScenarioError) as e:
        load_scenario(str(path))
    errors = [err for err in e.value.errors if err.key == key]
    assert errors and says in errors[0].expected and errors[0].file == str(path)
    assert " = None" not in str(errors[0])  # a value the file does not have is not shown


def test_laps_no_run_could_sail_are_refused_before_they_fill_memory(tmp_path):
    """A billion laps filled 9 GB in 30 s listing their waypoints; refused at the file."""
    path = scenario_file(tmp_path)
    path.write_text(
        path.read_text().replace("acceptance_m = 15", "acceptance_m = 15\nlaps = 1000000000")
    )
    with pytest.raises(ScenarioError) as e:
        load_scenario(str(path))
    (error,) = [err for err in e.value.errors if err.key == "mission.laps"]
    assert error.expected == "an integer from 1 to 10000" and error.value == 1_000_000_000
    path.write_text(path.read_text().replace("laps = 1000000000", "laps = 10000"))
    assert load_scenario(str(path)).mission.laps == 10_000


@pytest.mark.parametrize("depth", [40, 3000])  # 3000: tomllib itself runs out of recursion
def test_a_set_value_nested_too_deeply_is_refused_as_a_file_would_be(depth):
    with pytest.raises(ConfigError) as e:
        parse_settings([f"mission.speed={'[' * depth}{']' * depth}"])
    assert (e.value.file, e.value.key) == ("--set", "mission.speed")
    assert "at most 32" in e.value.expected
    assert parse_settings(["mission.speed=7", "weather.preset=calm"]) == {
        "mission.speed": 7,
        "weather.preset": "calm",
    }


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("nosuchmod:factory", "cannot import 'nosuchmod': ModuleNotFoundError"),
        ("json:nosuch", "'json' has no 'nosuch'"),
        ("json:__version__", "json:__version__ is a str, not a callable"),
        ("builtins:str", "it returned a str, which has no step(t, lines) method"),
    ],
)
def test_a_python_controller_that_cannot_be_made_is_bad_input(tmp_path, target, problem):
    """Reproduces: `hild scenario run` ended in "internal error: ControllerLoadError", exit 1
    (a failed verdict's status). The check before a run and the run itself (the Python API)
    say the file, the key, the value and what was expected."""
    path = scenario_file(tmp_path, controller=f'python = "{target}"')
    scenario = load_scenario(str(path))
    with pytest.raises(ConfigError) as caught:
        run_lockstep(scenario)
    message = str(caught.value)
    assert f"{path}: controller.python = '{target}': expected \"package.module:factory\"" in message
    assert problem in message


def test_a_bench_problem_in_a_scenario_is_reported_with_its_own(tmp_path):
    path = scenario_file(tmp_path, "max_roll_deg = -1", extra='\n[weather]\npreset = "storm"\n')
    with pytest.raises(ScenarioError) as e:
        load_scenario(str(path))
    assert {err.key for err in e.value.errors} >= {"weather.preset", "criteria.max_roll_deg"}


def test_a_key_path_that_leads_nowhere_is_refused(tmp_path):
    scenario = load_scenario(str(scenario_file(tmp_path)))
    with pytest.raises(ConfigError, match="device.radar"):
        scenario.with_values({"device.radar.rate_hz": 2})
    with pytest.raises(ConfigError, match="a path through tables"):
        scenario.with_values({"bench.seed.x": 2})
    assert scenario.with_values({"device.gps.rate_hz": 0.5}).bench.devices[0].rate_hz == 0.5


# --- the command line -------------------------------------------------------------------------


def hild(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hild.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=_env(),
    )


def _env() -> dict:
    import os

    return {**os.environ, "PYTHONPATH": str(REPO)}


def test_a_recorded_scenario_keeps_its_benchs_record_table_and_every_message(tmp_path):
    """``hild scenario run --record`` records as ``hild run --record`` does: the file named on
    the command line, at the bench's [record] rate and with its choice of Signal K log; and,
    lossless, every sample of the run (the sampling of hild run: every 20th tick at 5 Hz of a
    100 Hz bench, the first at 0.2 s); without a [record] table, the default 20 Hz and the log
    beside the file."""
    from hild.record import channels
    from hild.record.reader import messages

    table = '\n[record]\nfile = "not-this.mcap"\nrate_hz = 5\nnmea_log = false\n'
    for name, extra, rate_hz, log in (("table", table, 5, False), ("plain", "", 20, True)):
        path = scenario_file(tmp_path, duration=10.0, extra=extra)
        record = tmp_path / f"{name}.mcap"
        done = hild("scenario", "run", str(path), "--record", str(record), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        times = [m.payload["t"] for m in messages(record, [channels.STATE])]
        assert times == [round(k / rate_hz, 6) for k in range(1, 10 * rate_hz + 1)], name
        assert record.with_name(f"{name}.nmea.log").exists() == log, name
        assert not (tmp_path / "not-this.mcap").exists()


def test_cli_pass_fail_and_bad_input_exit_codes_and_reports(tmp_path):
    good = scenario_file(tmp_path, "all_waypoints = true")
    done = hild(
        "scenario", "run", str(good), "--junit", "ok.xml", "--report", "ok.png", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("PASS  scenario 'small-square' seed 0: completed")
    assert (tmp_path / "ok.png").stat().st_size > 20_000
    suite = ET.parse(tmp_path / "ok.xml").getroot().find("testsuite")
    assert suite.get("tests") == "1" and suite.get("failures") == "0"

    slow = hild(
        "scenario",
        "run",
        str(good),
        "--set",
        "criteria.complete_within_s=30",
        "--json",
        "--junit",
        "bad.xml",
        "--report",
        "pages/slow.PDF",
        cwd=tmp_path,
    )
    assert slow.returncode == 1, slow.stderr
    assert (tmp_path / "pages" / "slow.PDF").read_bytes().startswith(b"%PDF")  # by its suffix
    result = json.loads(slow.stdout)
    assert result["passed"] is False
    (late,) = [c for c in result["criteria"] if not c["passed"]]
    assert late["name"] == "complete_within_s" and late["by"] > 0
    failure = ET.parse(tmp_path / "bad.xml").getroot().find("testsuite/testcase/failure")
    assert failure.get("message") == "complete_within_s"

    wrong = hild("scenario", "run", str(good), "--set", "mission.acceptance_m=-3", cwd=tmp_path)
    assert wrong.returncode == 2
    assert (
        f"{good}: mission.acceptance_m = -3.0: expected" in wrong.stderr
        or f"{good}: mission.acceptance_m = -3: expected" in wrong.stderr
    )
    assert "Traceback" not in wrong.stderr


def test_cli_json_of_a_run_judged_on_its_track_is_strict_json(tmp_path):
    """Reproduces: a cross-track criterion's verdict was numpy's bool (the metric is computed
    by numpy), and `--json` stopped on it with an internal error. Every verdict is a JSON
    boolean and every number a number (no NaN or Infinity tokens)."""
    path = scenario_file(tmp_path, "all_waypoints = true\nxte_rms_m = 50.0\nxte_max_m = 60.0")
    done = hild("scenario", "run", str(path), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr

    def not_json(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    result = json.loads(done.stdout, parse_constant=not_json)
    criteria = {c["name"]: c for c in result["criteria"]}
    assert {"xte_rms_m", "xte_max_m", "all_waypoints"} <= set(criteria), criteria
    assert all(c["passed"] is True for c in criteria.values()), criteria
    assert 0.0 < criteria["xte_rms_m"]["value"] <= criteria["xte_max_m"]["value"] < 60.0
    assert isinstance(criteria["xte_max_m"]["at_s"], float)


def test_cli_check_and_show_know_scenarios(tmp_path):
    check = hild("check", "square-calm", cwd=tmp_path)
    assert check.returncode == 0 and "scenario 'square-calm'" in check.stdout
    # a name both a bench and a scenario carry checks the bench, and points at the scenario
    both = hild("check", "overtaking", cwd=tmp_path)
    assert both.returncode == 0 and "profiles/bench/overtaking.toml: OK" in both.stdout
    assert "also a built-in scenario: hild check " in both.stdout
    swept = hild("check", "square-gale", cwd=tmp_path)
    assert "sweep 'square-gale': 12 run(s)" in swept.stdout
    show = hild("show", "scenario", cwd=tmp_path)
    assert {"square-calm", "square-gale", "head-on", "crossing-give-way"} <= set(
        show.stdout.split()
    )


def test_an_observed_run_is_the_same_run(tmp_path):
    """Observers see every tick (no stretches stepped in one call): the run stays the same."""
    from hild.observers import TickObserver
    from hild.scenario.command import TargetTracks

    scenario = load_scenario("crossing-stand-on").with_values({"scenario.duration_s": 60.0})
    plain = run_lockstep(scenario, keep_track=True)
    tracks = TargetTracks()
    observed = run_lockstep(scenario, keep_track=True, observers=[TickObserver(), tracks])
    assert np.array_equal(plain.track, observed.track) and plain.metrics == observed.metrics
    (rows,) = tracks.arrays().values()
    assert len(rows[0]) == 61  # a position a second, t = 0 .. 60
