"""Fleet scenarios and sweeps (hild/scenario/fleet.py, fleet_lockstep.py): a mission and a
controller per boat, each boat judged on its own criteria, the fleet on its boats' separation.

The oracle for a fleet run is each boat run alone: with no traffic and no interaction between
hulls (hild models none), a boat in a fleet must sail exactly as it sails alone from the same
start, under the same controller, with the same devices (bit for bit: one weather, one seed,
one clock); the fleet's separation is then the closest the two lone tracks come at one
instant.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from hild.scenario.file import ScenarioError, load_scenario
from hild.scenario.fleet_lockstep import run_fleet_lockstep
from hild.scenario.lockstep import run_lockstep
from hild.scenario.runs import run_scenario
from tests.forked_cli import run_hild

BOATS = {  # name: (north, east, heading_deg, waypoint north, east)
    "alpha": (0.0, 0.0, 0.0, 300.0, 0.0),
    "bravo": (150.0, -150.0, 90.0, 150.0, 150.0),
}


def boat_table(name: str) -> str:
    north, east, heading, _, _ = BOATS[name]
    mmsi = 257000001 + list(BOATS).index(name)
    return f"""
[[boat]]
name = "{name}"
profile = "otter"
north = {north}
east = {east}
heading_deg = {heading}
mmsi = {mmsi}
class = "B"
"""


def devices(name: str) -> str:
    return "".join(
        f"""
[[device]]
name = "{name}-{kind}"
type = "{kind}"
boat = "{name}"
ports = ["pty://{name}-{kind}"]  # (a lockstep run opens no port)
"""
        for kind in ("gps", "heading", "thruster-controller")
    )


HEAD = """
[scenario]
name = "{name}"
duration_s = 260

[bench]
rate_hz = 50
seed = 7

[origin]
latitude = 59.41
longitude = 10.48

[weather]
preset = "calm"
"""


def fleet_file(tmp_path, criteria: str = "", speeds=(1.5, 1.5), controller: str = "") -> str:
    text = HEAD.format(name="pair")
    text += "".join(boat_table(b) + devices(b) for b in BOATS)
    text += "\n[mission]\nacceptance_m = 10\n"
    for (name, (_, _, _, wn, we)), speed in zip(BOATS.items(), speeds, strict=True):
        text += f"\n[mission.{name}]\nspeed = {speed}\nwaypoints = [[{wn}, {we}]]\n"
    text += controller or "\n[controller]\npilot = true\n"
    text += "\n[criteria]\nall_waypoints = true\nmin_separation_m = 10\n" + criteria
    path = tmp_path / "pair.toml"
    path.write_text(text)
    return str(path)


def alone_file(tmp_path, name: str, speed: float) -> str:
    """Boat ``name`` alone: a bench of its one [[boat]] table, its devices, its mission."""
    _, _, _, wn, we = BOATS[name]
    text = HEAD.format(name=name) + boat_table(name) + devices(name)
    text += f"\n[mission]\nacceptance_m = 10\nspeed = {speed}\nwaypoints = [[{wn}, {we}]]\n"
    text += "\n[controller]\npilot = true\n\n[criteria]\nall_waypoints = true\n"
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("speeds", [(1.5, 1.5), (1.5, 1.25)])
def test_each_boat_sails_as_it_would_alone_and_the_fleet_is_judged_on_their_separation(
    tmp_path, speeds
):
    """At one speed the two reference pilots (which know nothing of each other) reach the
    crossing together: the separation criterion fails; at 1.25 m/s bravo crosses astern."""
    result = run_fleet_lockstep(load_scenario(fleet_file(tmp_path, speeds=speeds)), keep_track=True)
    tracks = {}
    for name, speed in zip(BOATS, speeds, strict=True):
        alone = run_lockstep(load_scenario(alone_file(tmp_path, name, speed)), keep_track=True)
        boat = result.boats[name]
        # the fleet ends when its last boat is done: the lone run may end before it
        n = len(alone.track)
        assert len(boat.track) >= n
        np.testing.assert_array_equal(boat.track[:n], alone.track)  # bit for bit
        assert boat.reached == alone.reached
        tracks[name] = alone.track
    # the separation: the closest the two boats' tracks come at one instant (the tracks are
    # the lone runs' while those last, checked above; the fleet's run goes on until both are
    # done, the first to arrive holding station)
    a, b = (result.boats[name].track for name in BOATS)
    closest = float(np.min(np.hypot(a[:, 1] - b[:, 1], a[:, 2] - b[:, 2])))
    assert result.metrics["min_separation_m"] == pytest.approx(closest, rel=1e-12)
    separation = next(c for c in result.criteria if c.name == "min_separation_m")
    if speeds[0] == speeds[1]:
        # the same hull, the same distance to the crossing, the same speed: together there
        assert result.metrics["min_separation_m"] < 1.0
        assert not separation.passed and not result.passed
        assert result.closest_pair == ("alpha", "bravo")
    else:
        # bravo at 1.25 m/s is 30 m short of the crossing when alpha is on it (150 m at
        # 1.5 m/s vs 1.25 m/s, both from rest, the same lag): well clear of 10 m
        assert result.metrics["min_separation_m"] > 15.0
        assert separation.passed and result.passed
    names = [c.name for c in result.criteria]
    assert names == [
        "alpha.all_waypoints",
        "alpha.no_divergence",
        "bravo.all_waypoints",
        "bravo.no_divergence",
        "min_separation_m",
    ]
    assert result.metrics["waypoints_total"] == 2.0  # the fleet's: both boats' waypoints


def test_every_problem_of_a_fleet_scenario_is_named_at_once(tmp_path):
    path = fleet_file(tmp_path, controller="\n[controller.alpha]\npilot = true\n")
    with open(path) as f:
        text = f.read().replace("[mission.bravo]", "[mission.charlie]")
    (tmp_path / "bad.toml").write_text(text)
    with pytest.raises(ScenarioError) as e:
        load_scenario(str(tmp_path / "bad.toml"))
    said = str(e.value)
    # bravo's mission has the shared acceptance_m but no waypoints; its controller nothing
    assert "mission.bravo.waypoints" in said
    assert "controller.bravo" in said
    assert "every boat of a fleet scenario has its controller" in said
    assert "mission.charlie" in said and "a boat of the bench (alpha, bravo)" in said


def test_a_fleet_criterion_on_a_one_boat_scenario_is_refused(tmp_path):
    path = alone_file(tmp_path, "alpha", 1.5)
    with open(path, "a") as f:
        f.write("min_separation_m = 10\n")
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    assert "criteria.min_separation_m" in str(e.value)
    assert "a fleet's criterion" in str(e.value)


def test_a_boat_s_controller_that_raises_fails_the_fleet_s_run_with_its_name(tmp_path):
    controller = """
[controller.alpha]
pilot = true

[controller.bravo]
python = "tests.controllers:misbehaves"
options = { mode = "raises", after_s = 5.0 }
"""
    result = run_fleet_lockstep(load_scenario(fleet_file(tmp_path, controller=controller)))
    assert result.ended == "controller_error" and not result.passed
    assert "misbehaves" in result.fault and "ZeroDivisionError" in result.fault
    assert 5.0 <= result.duration_s < 5.2  # ended at its first bad step (10 Hz)


def test_the_fleet_scenario_and_its_sweep_through_the_cli(tmp_path):
    """The built-in fleet-crossing: the verdict names each boat's criteria and the fleet's;
    the sweep's table has the separation and each boat's metrics, a row per run."""
    page = tmp_path / "page.png"
    run = run_hild(
        "scenario", "run", "fleet-crossing", "--json", "--report", str(page), timeout=300
    )
    assert run.returncode == 1, run.stderr  # the reference pilots collide at one speed
    verdict = json.loads(run.stdout)
    assert verdict["metrics"]["min_separation_m"] < 1.0
    assert {c["name"] for c in verdict["criteria"] if not c["passed"]} == {"min_separation_m"}
    assert page.stat().st_size > 10_000  # the page with both boats' tracks
    out = tmp_path / "sweep.parquet"
    sweep = run_hild(
        "sweep",
        "fleet-crossing",
        "--workers",
        "1",
        "--no-progress",
        "--runs",
        "3",  # (1.0, 1.25 and 1.5 m/s: two that pass, the one that fails)
        "--out",
        str(out),
        cwd=tmp_path,
        timeout=600,
    )
    assert sweep.returncode == 1, sweep.stderr  # one run (equal speeds) fails
    # each boat's all_waypoints is pass-or-fail, no share of a threshold (not "0% short")
    assert "FAILED min_separation_m" in sweep.stdout and "(0% short" not in sweep.stdout
    import pyarrow.parquet as pq

    table = pq.read_table(out).to_pydict()
    speeds = table["mission.bravo.speed"]
    assert speeds == [1.0, 1.25, 1.5]
    assert table["passed"] == [s != 1.5 for s in speeds]
    for key in ("min_separation_m", "alpha.time_to_complete_s", "bravo.time_to_complete_s"):
        assert key in table
    # bravo's time to its waypoint falls as its speed rises; alpha's does not change
    assert len(set(table["alpha.time_to_complete_s"])) == 1
    times = table["bravo.time_to_complete_s"]
    assert all(a > b for a, b in zip(times, times[1:], strict=False))
    assert all(not math.isnan(v) for v in table["min_separation_m"])


PROGRAM = Path(__file__).resolve().parent / "programs" / "nmea_controller.py"


def test_a_fleet_of_external_controllers_each_on_its_own_ports_is_judged_between_boats(tmp_path):
    """Two Odins, each flown by its own program (tests/programs/nmea_controller.py: GGA and
    HDT in, $PHLDC out) over its own UDP ports, moved off the bench's well-known ones; each
    boat judged on its mission, the fleet on the closest the two came (checked against the
    boats' own tracks)."""
    boats = {"alpha": (0.0, 0.0, 0.0, "160,0"), "bravo": (80.0, -120.0, 90.0, "80,60")}
    text = HEAD.format(name="odins").replace("duration_s = 260", "duration_s = 90")
    for i, (name, (north, east, heading, _)) in enumerate(boats.items()):
        text += (
            f'\n[[boat]]\nname = "{name}"\nprofile = "odin"\nnorth = {north}\neast = {east}\n'
            f"heading_deg = {heading}\nmmsi = {257000011 + i}\n"
        )
        text += (
            f'\n[[device]]\nname = "{name}-gps"\ntype = "gps"\nboat = "{name}"\n'
            f'ports = ["udp://127.0.0.1:{10110 + 10 * i}"]\n'
            f'\n[[device]]\nname = "{name}-jets"\ntype = "jet-controller"\nboat = "{name}"\n'
            f'ports = ["udp://127.0.0.1:{10112 + 10 * i}?listen=1"]\n'
        )
    text += "\n[mission]\nacceptance_m = 15\n"
    for name, (_, _, _, waypoint) in boats.items():
        text += f"\n[mission.{name}]\nwaypoints = [[{waypoint}]]\n"
    # x4: a lease of 0.5 s is 125 ms of wall time, which a program on a busy machine keeps
    # (at x10 it was 50 ms, and a stalled program latched its jets now and then)
    text += "\n[controller]\ntime_scale = 4.0\nstop_timeout_s = 2\n"
    for name in boats:
        text += (
            f"\n[controller.{name}]\n"
            f'command = ["{{python}}", "{PROGRAM}", "--nmea", "{{url:{name}-gps}}", '
            f'"--commands", "{{url:{name}-jets}}", "--origin", "{{latitude}},{{longitude}}", '
            f'"--waypoints", "{{waypoints}}", "--acceptance", "{{acceptance_m}}", '
            f'"--rate", "{{wall_rate_hz}}"]\n'
        )
    text += "\n[criteria]\nall_waypoints = true\nno_watchdog_trip = true\nmin_separation_m = 5\n"
    path = tmp_path / "odins.toml"
    path.write_text(text)
    out = tmp_path / "out"
    result = run_scenario(load_scenario(str(path)), keep_track=True, output_dir=out)
    for name in boats:  # each program ran on its own boat's ports, its output in its folder
        c = result.controller[name]
        assert c["output_dir"] == str(out / name)
        assert (out / name / "controller.stdout").exists()
        assert c["stopped_by"] == "SIGTERM" and not c["exited_early"], c
        ports = " ".join(c["argv"])
        assert all(f":{p}" not in ports for p in (10110, 10112, 10120, 10122))
    assert result.ended == "completed", result.failed
    for name in boats:
        assert result.boats[name].passed, (name, result.boats[name].failed)
    a, b = (result.boats[name].track for name in boats)
    n = min(len(a), len(b))
    closest = float(np.min(np.hypot(a[:n, 1] - b[:n, 1], a[:n, 2] - b[:n, 2])))
    assert result.metrics["min_separation_m"] == pytest.approx(closest, rel=1e-12)
    assert [c.name for c in result.criteria][-1] == "min_separation_m"


def test_each_boat_s_cpa_is_its_own_closest_approach_to_the_traffic(tmp_path):
    """A target on a course (no COLREG: a straight line at one speed) passing bravo's track:
    each boat's min_cpa_m is the closest the target came to that boat, against the target's
    line worked out here and the boat's own track; the fleet's is the smaller."""
    path = fleet_file(tmp_path, speeds=(1.5, 1.25))
    north0, east0, course_deg, speed_kn = 315.0, -60.0, 180.0, 4.0
    with open(path, "a") as f:
        f.write(
            f'\n[[traffic]]\nname = "skiff"\nmmsi = 257000099\n[traffic.course]\n'
            f"north = {north0}\neast = {east0}\ncourse_deg = {course_deg}\n"
            f"speed_kn = {speed_kn}\n"
        )
    result = run_fleet_lockstep(load_scenario(path), keep_track=True)
    speed = speed_kn * 1852.0 / 3600.0
    course = math.radians(course_deg)
    cpas = {}
    for name in BOATS:
        track = result.boats[name].track
        t = track[:, 0]
        tn, te = north0 + speed * math.cos(course) * t, east0 + speed * math.sin(course) * t
        distance = np.hypot(track[:, 1] - tn, track[:, 2] - te)
        cpas[name] = float(distance.min())
        got = result.boats[name].traffic["skiff"]
        # (the target's line in the kernel is exact to the last bits of its sums: 1 mm)
        assert result.metrics[f"{name}.min_cpa_m"] == pytest.approx(cpas[name], abs=1e-3)
        assert got["min_range_m"] == result.metrics[f"{name}.min_cpa_m"]
        assert got["at_s"] == pytest.approx(float(t[distance.argmin()]), abs=0.05)
    assert cpas["bravo"] < 30.0 < 55.0 < cpas["alpha"]  # it crosses bravo's track near it
    assert result.metrics["min_cpa_m"] == min(
        result.metrics["alpha.min_cpa_m"], result.metrics["bravo.min_cpa_m"]
    )
