"""External controllers (``[controller] command = [...]``): a real program on the run's real
ports, the daemon at the scenario's time scale, the verdict as for a lockstep run.

The controllers are real programs: tests/programs/nmea_controller.py (NMEA in, PHLDC out,
told to misbehave by its options) and `hild pilot`. No port of the bench's is bound: every
run's ports are picked free (which the tests check).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from hild.config import ConfigError
from hild.scenario.file import load_scenario
from hild.scenario.placeholders import RunFacts, expand_command
from hild.scenario.runs import run_scenario
from hild.scenario.wiring import wire_run

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "programs" / "nmea_controller.py"
WELL_KNOWN = {10110, 10111, 10112, 29500}


def devices(gps_port: str, jets_port: str) -> str:
    """A GNSS compass and the jets' controller on the given ports (the run moves them)."""
    return (
        f'\n[[device]]\nname = "gps"\ntype = "gps"\nports = ["{gps_port}"]\n\n'
        f'[[device]]\nname = "jets"\ntype = "jet-controller"\nports = ["{jets_port}"]\n'
    )


UDP_DEVICES = devices("udp://127.0.0.1:10110", "udp://127.0.0.1:10112?listen=1")
PTY_DEVICES = devices("pty://gps", "pty://jets")
OWN_CONTROLLER = (
    '["{python}", "' + str(PROGRAM) + '", "--nmea", "{url:gps}", "--commands", "{url:jets}", '
    '"--origin", "{latitude},{longitude}", "--waypoints", "{waypoints}", '
    '"--acceptance", "{acceptance_m}", "--rate", "{wall_rate_hz}"'
)
PILOT = (
    '["{python}", "-m", "hild.cli", "pilot", "--nmea", "{url:gps}", "--commands", '
    '"{url:jets}", "--profile", "{profile}", "--protocol", "{protocol}", "--waypoints", '
    '"{waypoints}", "--acceptance-radius", "{acceptance_m}", "--speed", "{speed}", '
    '"--rate", "{rate_hz}", "--time-scale", "{time_scale}", "--timeout", "{duration}"]'
)


def scenario_file(
    tmp_path: Path,
    command: str,
    devices: str = UDP_DEVICES,
    duration_s: float = 60.0,
    time_scale: float = 10.0,
) -> Path:
    """A two-leg mission (about 40 s) for Odin in calm water, judged on the mission and on
    the commands; ``command`` is the TOML array."""
    text = (
        textwrap.dedent(f"""
        [scenario]
        name = "two-legs"
        bench = "default"
        duration_s = {duration_s}

        [bench]
        rate_hz = 50
        """)
        + devices
        + textwrap.dedent(f"""
        [mission]
        acceptance_m = 15
        waypoints = [{{ north = 80, east = 0 }}, {{ north = 80, east = 80 }}]

        [controller]
        command = {command}
        time_scale = {time_scale}
        stop_timeout_s = 2

        [criteria]
        all_waypoints = true
        no_watchdog_trip = true
        max_command_age_s = 1.0
        xte_max_m = 30
        """)
    )
    path = tmp_path / "two-legs.toml"
    path.write_text(text)
    return path


def failed_names(result) -> set[str]:
    return {c.name for c in result.failed}


def test_an_external_controller_flies_the_mission_and_passes(tmp_path):
    scenario = load_scenario(str(scenario_file(tmp_path, OWN_CONTROLLER + "]")))
    result = run_scenario(scenario, output_dir=tmp_path / "out")
    stdout = (tmp_path / "out" / "controller.stdout").read_text()
    assert result.passed, (result.failed, stdout, result.controller)
    assert result.ended == "completed"
    assert result.metrics["watchdog_trips"] == 0
    c = result.controller
    # stopped cleanly at the end, and its output kept
    assert c["exited_early"] is False and c["stopped_by"] == "SIGTERM" and c["exit_code"] == 0
    assert "waypoint 0 reached" in stdout and "stopped by SIGTERM" in stdout
    assert c["stdout"] == str(tmp_path / "out" / "controller.stdout")
    # the run's own ports, none of the bench's well-known ones
    gps, jets = c["ports"]["gps"][0], c["ports"]["jets"][0]
    for url in (gps, jets):
        assert url.startswith("udp://127.0.0.1:")
        assert int(url.rsplit(":", 1)[1]) not in WELL_KNOWN
    assert gps != jets
    assert c["argv"][c["argv"].index("--nmea") + 1] == gps
    assert c["daemon"]["commands_applied"] > 0


def test_a_controller_that_goes_silent_fails_the_command_criteria(tmp_path):
    command = OWN_CONTROLLER + ', "--go-silent-after", "10"]'
    path = scenario_file(tmp_path, command, devices=PTY_DEVICES, duration_s=25.0)
    result = run_scenario(load_scenario(str(path)), output_dir=tmp_path / "out")
    stdout = (tmp_path / "out" / "controller.stdout").read_text()
    assert not result.passed
    assert {"no_watchdog_trip", "max_command_age_s", "all_waypoints"} <= failed_names(result)
    assert result.metrics["watchdog_trips"] >= 1
    assert result.metrics["max_command_age_s"] > 10.0  # silent from t = 10 s to the end
    assert result.ended == "duration" and result.duration_s == pytest.approx(25.0)
    # the ptys were the run's own, in a private directory removed at the end
    pty = result.controller["ports"]["gps"][0]
    assert pty.startswith("pty:///") and not pty.startswith("pty:///tmp/hild/")
    assert not Path(pty[len("pty://") :]).parent.exists()
    assert "controller: sensors" in stdout


def test_a_controller_that_steers_away_fails_the_mission(tmp_path):
    command = OWN_CONTROLLER + ', "--steer-away"]'
    path = scenario_file(tmp_path, command, duration_s=20.0)
    result = run_scenario(load_scenario(str(path)), output_dir=tmp_path / "out")
    assert not result.passed
    assert "all_waypoints" in failed_names(result)
    assert "no_watchdog_trip" not in failed_names(result)  # it never stopped talking
    assert result.track is None


def test_a_crashed_controller_is_reported_and_the_run_still_judged(tmp_path):
    command = OWN_CONTROLLER + ', "--exit-after", "5"]'
    path = scenario_file(tmp_path, command, duration_s=60.0)
    result = run_scenario(load_scenario(str(path)), keep_track=True, output_dir=tmp_path / "o")
    c = result.controller
    assert result.ended == "controller-exited"
    assert c["exited_early"] is True and c["exit_code"] == 3 and c["stopped_by"] is None
    assert 4.0 <= c["exited_at_s"] <= 15.0
    # the run went on long enough for the silence to show, not to the duration
    # (to the tick whose time is due within 1e-9 s, as the feed asks: 6.1 + 5.0 is a hair
    # above the tick at 11.1 s)
    assert c["exited_at_s"] + 5.0 <= result.duration_s + 1e-9 and result.duration_s < 60.0
    assert not result.passed
    assert {"no_watchdog_trip", "max_command_age_s", "all_waypoints"} <= failed_names(result)
    assert result.track is not None and result.track[-1, 0] == pytest.approx(result.duration_s)
    assert "exiting as told" in (tmp_path / "o" / "controller.stdout").read_text()


def test_a_controller_that_ignores_sigterm_is_killed_after_the_stop_timeout(tmp_path):
    command = OWN_CONTROLLER + ', "--ignore-sigterm"]'
    path = scenario_file(tmp_path, command, duration_s=5.0)
    path.write_text(path.read_text().replace("stop_timeout_s = 2", "stop_timeout_s = 0.5"))
    result = run_scenario(load_scenario(str(path)), output_dir=tmp_path / "out")
    c = result.controller
    assert c["stopped_by"] == "SIGKILL" and c["exit_code"] == -9
    assert "controller: sensors" in (tmp_path / "out" / "controller.stdout").read_text()


def test_hild_pilot_as_the_external_controller_passes_the_mission(tmp_path):
    path = scenario_file(tmp_path, PILOT, time_scale=5.0)
    result = run_scenario(load_scenario(str(path)), output_dir=tmp_path / "out")
    stdout = (tmp_path / "out" / "controller.stdout").read_text()
    assert result.passed, (result.failed, stdout, result.controller)
    assert result.ended == "completed"
    assert "waypoint 0 lap 0 reached" in stdout
    assert result.controller["time_scale"] == 5.0


def test_the_pilot_scenario_still_runs_in_lockstep(tmp_path):
    path = scenario_file(tmp_path, "[]")
    text = path.read_text().replace("command = []", "pilot = true")
    text = text.replace("time_scale = 10.0\n", "").replace("stop_timeout_s = 2\n", "")
    path.write_text(text)
    result = run_scenario(load_scenario(str(path)))
    assert result.passed, result.failed
    assert result.controller.get("stdout") is None  # nothing external was started


@pytest.mark.parametrize(
    ("argument", "problem"),
    [
        ("{nosuch}", "unknown placeholder {nosuch}"),
        ("{url:radar}", "no device 'radar'"),
        ("{pty:gps}", "device 'gps' has no pty port"),
        ("{port:gps:pty}", "UDP or TCP"),
        ("--json={", "a lone '{'"),
    ],
)
def test_a_bad_placeholder_is_a_config_error_before_anything_starts(tmp_path, argument, problem):
    path = scenario_file(tmp_path, f'["{PROGRAM}", "{argument}"]')
    scenario = load_scenario(str(path))
    out = tmp_path / "out"
    with pytest.raises(ConfigError) as caught:
        run_scenario(scenario, output_dir=out)
    message = str(caught.value)
    assert str(path) in message and "controller.command" in message and problem in message
    assert "{url:DEVICE}" in message  # what was expected
    assert not out.exists()  # nothing ran


@pytest.mark.parametrize(
    ("program", "problem"),
    [
        ("/nonexistent/prog", "no file '/nonexistent/prog'"),
        ("hild-no-such-program", "no program 'hild-no-such-program' on $PATH"),
        ("{scenario_dir}/absent.sh", "no file '{tmp}/absent.sh'"),
        ("{scenario_dir}/two-legs.toml", "'{tmp}/two-legs.toml' is not executable"),
        ("{scenario_dir}", "'{tmp}' is a folder"),
    ],
)
def test_a_program_that_cannot_be_started_is_a_config_error_before_anything_starts(
    tmp_path, program, problem
):
    """Reproduces: the run went on to its verdict ("controller-exited"), the cause only in
    controller.stderr of a temporary folder."""
    path = scenario_file(tmp_path, f'["{program}", "--nmea", "{{url:gps}}"]')
    out = tmp_path / "out"
    with pytest.raises(ConfigError) as caught:
        run_scenario(load_scenario(str(path)), output_dir=out)
    message = str(caught.value)
    assert f"{path}: controller.command = ['{program}', '--nmea', '{{url:gps}}']" in message
    assert "a program that can be started" in message
    assert problem.replace("{tmp}", str(tmp_path)) in message
    assert not out.exists()  # nothing ran


def test_placeholders_fill_in_the_run_s_ports_and_the_mission(tmp_path):
    command = (
        '["prog", "{udp:gps}", "{port:gps}", "{url:jets}", "{port:jets:udp}", '
        '"{{literal}}", "wp={waypoints}", "{seed}/{duration}/{time_scale}", '
        '"{rate_hz}/{wall_rate_hz}", "{profile}", "{run_dir}", "{output_dir}"]'
    )
    scenario = load_scenario(str(scenario_file(tmp_path, command, time_scale=4.0)))
    wiring = wire_run(scenario.bench, tmp_path / "run", 4.0)
    argv = expand_command(scenario, wiring, RunFacts(tmp_path / "out", 4.0))
    gps = wiring.ports["gps"][0]
    jets = wiring.ports["jets"][0]
    assert argv == (
        "prog",
        f"127.0.0.1:{gps.port}",
        str(gps.port),
        f"udp://127.0.0.1:{jets.port}",
        str(jets.port),
        "{literal}",
        "wp=80,0;80,80",
        "0/60/4",
        "10/40",
        "odin",
        str(tmp_path / "run"),
        str(tmp_path / "out"),
    )


def test_the_bench_s_ports_move_to_free_ones_and_shared_ports_stay_shared(tmp_path):
    scenario = load_scenario("square-calm")  # the default bench: ptys and well-known ports
    wiring = wire_run(scenario.bench, tmp_path, 3.0)
    ports = {name: ports for name, ports in wiring.ports.items()}
    udp = {name: next(p for p in ps if p.scheme == "udp") for name, ps in ports.items()}
    assert all(p.port not in WELL_KNOWN and p.host == "127.0.0.1" for p in udp.values())
    assert udp["gps"].port == udp["wind"].port == udp["speed"].port  # one bench port, one here
    assert udp["jets"].port != udp["gps"].port
    assert udp["jets"].url.endswith("?listen=1")
    ptys = [p for ps in ports.values() for p in ps if p.scheme == "pty"]
    assert {Path(p.path).parent for p in ptys} == {tmp_path}
    assert wiring.bench.run_dir == tmp_path and wiring.bench.time_scale == 3.0
    assert scenario.bench.devices[0].ports != wiring.bench.devices[0].ports  # a copy moved


LOGGED_RUN = """
import sys
from pathlib import Path
from hild.log import configure_logging
from hild.scenario.file import load_scenario
from hild.scenario.runs import run_scenario
configure_logging("json", "info")
result = run_scenario(load_scenario(sys.argv[1]), output_dir=Path(sys.argv[2]))
print(result.controller["log"])
"""


def test_the_daemon_s_log_goes_to_the_output_directory_not_the_terminal(tmp_path):
    command = OWN_CONTROLLER + ', "--exit-after", "1"]'
    path = scenario_file(tmp_path, command, duration_s=30.0)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", LOGGED_RUN, str(path), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out / "hild.log")
    assert "run.start" not in done.stderr
    events = [json.loads(line)["event"] for line in (out / "hild.log").read_text().splitlines()]
    assert "run.start" in events and "run.summary" in events


def test_a_run_goes_in_a_thread_other_than_the_main_one(tmp_path):
    """As a sweep's worker runs it: the daemon leaves the signals to the main thread."""
    command = OWN_CONTROLLER + ', "--exit-after", "1"]'
    scenario = load_scenario(str(scenario_file(tmp_path, command, duration_s=30.0)))
    results = []
    worker = threading.Thread(target=lambda: results.append(run_scenario(scenario)))
    worker.start()
    worker.join(timeout=120)
    assert len(results) == 1
    assert results[0].ended == "controller-exited" and results[0].controller["exit_code"] == 3
    output = Path(results[0].controller["output_dir"])
    assert (output / "controller.stdout").exists()  # a temporary output directory, kept
    shutil.rmtree(output)
