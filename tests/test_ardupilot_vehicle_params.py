"""The vehicle's own ArduPilot parameter file as the servo mapping (``params = "FILE"``).

ArduPilot's side is written here from ArduPilot's own rules, not from hild's mapping: an output
of function f carries the function's value x (-1 .. 1) as SERVOn_TRIM + x (SERVOn_MAX -
SERVOn_TRIM) above zero and SERVOn_TRIM + x (SERVOn_TRIM - SERVOn_MIN) below, x negated first
when SERVOn_REVERSED is 1 (SRV_Channel's pwm_from_angle; Rover sets its throttles and steering
as angle outputs). Blue Robotics' BlueBoat file (tests/data/ardupilot/BlueBoat120.params, as
shipped in BlueOS's parameter repository) is used unedited.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hild.ardupilot.paramfile import parse_params, read_params
from hild.ardupilot.servos import build_mapping, params_problems
from hild.bench import BenchError, load_bench
from hild.config import ConfigError
from hild.profiles.vessel import load_profile
from tests.ardupilot_client import Sitl
from tests.endpoints import Daemon, free_udp_port, write_bench
from tests.test_ardupilot import bench_file

BLUEOS_FILE = Path(__file__).parent / "data" / "ardupilot" / "BlueBoat120.params"
THROTTLE_LEFT, THROTTLE_RIGHT, STEERING, THROTTLE = 73, 74, 26, 70


def ardupilot_pulses(params: dict[str, float], **values: float) -> list[int]:
    """The 16 outputs ArduPilot sends for its functions' values (``left``, ``right``,
    ``steering``, ``throttle``; the others 0), by the file's SERVOn_* (ArduPilot's own defaults
    1100, 1500, 1900 where it sets none)."""
    function_of = {
        "left": THROTTLE_LEFT,
        "right": THROTTLE_RIGHT,
        "steering": STEERING,
        "throttle": THROTTLE,
    }
    pwm = [1500] * 16
    for n in range(1, 17):
        function = params.get(f"SERVO{n}_FUNCTION", 0)
        name = next((k for k, f in function_of.items() if f == function), None)
        if name is None:
            continue
        x = values.get(name, 0.0)
        if params.get(f"SERVO{n}_REVERSED", 0) == 1:
            x = -x
        low = params.get(f"SERVO{n}_MIN", 1100)
        trim = params.get(f"SERVO{n}_TRIM", 1500)
        high = params.get(f"SERVO{n}_MAX", 1900)
        pwm[n - 1] = round(trim + x * (high - trim if x >= 0 else trim - low))
    return pwm


def variant(**changes: float) -> str:
    """BlueOS's BlueBoat file with some parameters changed (a user's own boat)."""
    lines = []
    for line in BLUEOS_FILE.read_text().splitlines():
        name = line.split()[0] if line.strip() and not line.startswith("#") else ""
        lines.append(f"{name} {changes.pop(name)}" if name in changes else line)
    return "\n".join(lines + [f"{k} {v}" for k, v in changes.items()]) + "\n"


SWAPPED = {"SERVO1_FUNCTION": 73, "SERVO3_FUNCTION": 74, "SERVO1_REVERSED": 1, "SERVO3_REVERSED": 0}


# --- reading the file ---------------------------------------------------------------------------
def test_the_layouts_ardupilot_s_tools_write_are_read():
    text = (
        "# MAVProxy / BlueOS\nSERVO1_FUNCTION  74\nSERVO1_MIN\t1100 # a comment\n"
        "SERVO1_TRIM,1510\n"  # Mission Planner's .param
        "1\t1\tSERVO1_MAX\t1900\t4\n"  # QGroundControl's .params
        "SERVO1_REVERSED 0\nSERVO1_REVERSED 1\n\n"  # set twice: the last, as ArduPilot's loader
    )
    params = parse_params(text, "x.params")
    assert params.values == {
        "SERVO1_FUNCTION": 74.0,
        "SERVO1_MIN": 1100.0,
        "SERVO1_TRIM": 1510.0,
        "SERVO1_MAX": 1900.0,
        "SERVO1_REVERSED": 1.0,
    }
    assert params.where("SERVO1_REVERSED") == "SERVO1_REVERSED = 1 (line 7)"


@pytest.mark.parametrize(
    "line", ["SERVO1_FUNCTION", "SERVO1_FUNCTION seventy", "servo1 74", "A B C"]
)
def test_a_line_that_is_no_parameter_is_named_with_its_file_and_line(line):
    with pytest.raises(ConfigError) as info:
        parse_params(f"SERVO1_MIN 1100\n{line}\n", "boat.params")
    message = str(info.value)
    assert message.startswith("boat.params: line 2") and "NAME VALUE" in message


def test_blueos_s_blueboat_file_unedited_gives_its_own_outputs():
    """SERVO1 ThrottleRight, SERVO3 ThrottleLeft reversed, 1100-1900 us about 1510."""
    params = read_params(BLUEOS_FILE)
    mapping = build_mapping({}, load_profile("blueboat"), params)
    assert mapping.kind == "skid"
    assert mapping.functions == {1: THROTTLE_RIGHT, 3: THROTTLE_LEFT}
    left, right = mapping.outputs["left"], mapping.outputs["right"]
    assert (left.reversed, right.reversed) == (True, False)
    assert (left.pulses.low, left.pulses.trim, left.pulses.high) == (1100, 1510, 1900)
    assert params_problems(params, load_profile("blueboat"), {}) == []


def speeds(mapping, pwm) -> tuple[float, float]:
    """The port and starboard thrusters' commanded speeds for a frame."""
    demands = {d.actuator: d.speed for d in mapping.demands(pwm)}
    vessel = mapping.amap.actuators
    port = next(a.index for a in vessel if a.y < 0)
    starboard = next(a.index for a in vessel if a.y > 0)
    return demands[port], demands[starboard]


@pytest.mark.parametrize(
    "changes",
    [{}, SWAPPED, {"SERVO3_REVERSED": 0}, {"SERVO1_MIN": 1000, "SERVO1_MAX": 2000}],
    ids=["blueos", "swapped", "unreversed", "wider"],
)
def test_what_ardupilot_asks_through_any_file_is_what_the_boat_does(changes):
    """Whatever the file says, ArduPilot's ThrottleLeft drives the port thruster and its
    ThrottleRight the starboard one, each ahead for a positive value: the boat it configured."""
    text = variant(**changes)
    params = parse_params(text, "boat.params")
    mapping = build_mapping({}, load_profile("blueboat"), params)
    full = max(a.speed_range[1] for a in mapping.amap.actuators)
    ahead = speeds(mapping, ardupilot_pulses(params.values, left=1.0, right=1.0))
    assert ahead == pytest.approx((full, full))
    pivot = speeds(mapping, ardupilot_pulses(params.values, left=1.0, right=-1.0))
    assert pivot[0] == pytest.approx(full) and pivot[1] < 0.0  # port ahead, starboard astern


def test_the_same_pulses_through_a_swapped_file_mirror_the_boat():
    """The file is the wiring: BlueOS's pulses for 'left ahead' read through a file with the
    thrusters swapped and unreversed drive the starboard thruster astern."""
    blueos = read_params(BLUEOS_FILE)
    swapped = parse_params(variant(**SWAPPED), "swapped.params")
    pwm = ardupilot_pulses(blueos.values, left=1.0)
    mapping = build_mapping({}, load_profile("blueboat"), swapped)
    port, starboard = speeds(mapping, pwm)
    assert port == 0.0 and starboard < 0.0


# --- what cannot work: every problem at once -------------------------------------------------
def with_params(params: str) -> str:
    """The autopilot's settings naming a parameter file (for test_ardupilot's bench_file)."""
    return f'[device.settings]\nparams = "{params}"'


def bench_with(tmp_path: Path, params_text: str, profile: str = "blueboat") -> Path:
    (tmp_path / "boats").mkdir(exist_ok=True)
    (tmp_path / "boats" / "mine.params").write_text(params_text)
    return bench_file(tmp_path, profile=profile, extra=with_params("boats/mine.params"))


def test_a_file_hild_cannot_follow_is_named_with_every_problem(tmp_path):
    text = variant(SERVO5_FUNCTION=33, SERVO1_FUNCTION=0, SERVO6_FUNCTION=26, MOT_PWM_TYPE=3)
    with pytest.raises(BenchError) as info:
        load_bench(bench_with(tmp_path, text))
    message = str(info.value)
    where = str(tmp_path / "boats" / "mine.params")
    assert "settings.params" in message and where in message
    line = 1 + next(i for i, x in enumerate(text.splitlines()) if x.startswith("SERVO5_FUNC"))
    assert f"SERVO5_FUNCTION = 33 (line {line}): Motor1" in message
    assert "ThrottleRight (74) beside ThrottleLeft (73)" in message and "starboard" in message
    assert "no GroundSteering (26), not on SERVO6" in message
    assert "MOT_PWM_TYPE = 3" in message and "BrushedWithRelay" in message
    assert message.count("settings.params") == 4  # each its own line, all at once


def test_hild_check_names_them_too(tmp_path):
    bench = bench_with(tmp_path, variant(SERVO3_FUNCTION=0))
    done = subprocess.run(
        [sys.executable, "-m", "hild.cli", "check", str(bench)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "ThrottleLeft (73) beside ThrottleRight (74)" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_a_jet_boat_file_must_steer_its_nozzles(tmp_path):
    text = "FRAME_CLASS 2\nSERVO3_FUNCTION 70\n"
    problems = params_problems(parse_params(text, "odin.params"), load_profile("odin"), {})
    assert [p.expected for p in problems] == [
        "GroundSteering (26) beside Throttle (70): without it nothing steers odin's port, starboard"
    ]


def test_outputs_beyond_16_need_servo_32_enable():
    text = "SERVO17_FUNCTION 73\nSERVO18_FUNCTION 74\n"
    vessel = load_profile("blueboat")
    problems = params_problems(parse_params(text, "wide.params"), vessel, {})
    assert problems and all("SERVO_32_ENABLE 1" in p.expected for p in problems)
    wide = parse_params(text + "SERVO_32_ENABLE 1\n", "wide.params")
    assert build_mapping({}, vessel, wide).functions == {17: 73, 18: 74}


def test_the_file_is_found_beside_the_bench_or_by_a_built_in_name(tmp_path):
    bench = load_bench(bench_with(tmp_path, BLUEOS_FILE.read_text()))
    (device,) = bench.devices
    assert Path(device.settings["params"]) == tmp_path / "boats" / "mine.params"
    (device,) = load_bench(bench_file(tmp_path, "blueboat", extra=with_params("blueboat"))).devices
    assert Path(device.settings["params"]).name == "blueboat.parm"
    missing = bench_file(tmp_path, "blueboat", extra=with_params("nowhere.params"))
    with pytest.raises(BenchError) as info:
        load_bench(missing)
    assert "settings.params = 'nowhere.params'" in str(info.value)
    assert str(tmp_path / "nowhere.params") in str(info.value)


def test_a_blueboat_without_a_file_gets_its_own_outputs_not_the_settings(tmp_path):
    """A BlueBoat comes with its own outputs (profile_params): a bench that names no file still
    reads them, so ArduPilot with `hild show ardupilot blueboat` or BlueOS's file agrees."""
    from hild.ardupilot.link import ArduPilotSitl

    bench = load_bench(bench_file(tmp_path, "blueboat"))
    link = ArduPilotSitl(bench.devices[0], 0, bench.origin, bench.vessel)
    assert link.mapping.functions == {1: THROTTLE_RIGHT, 3: THROTTLE_LEFT}
    assert link.mapping.outputs["left"].reversed
    assert Path(link.mapping.source).name == "blueboat.parm"


# --- through the link, as ArduPilot's SITL drives it -----------------------------------------
@pytest.mark.parametrize("changes", [{}, SWAPPED], ids=["blueos", "swapped"])
def test_ardupilot_s_throttles_through_the_owner_s_file_move_the_blueboat_as_asked(
    tmp_path, changes
):
    """A client faithful to SIM_JSON's parser, with the boat's file as the device's: forward
    throttle on ThrottleLeft and ThrottleRight moves the boat ahead (north at heading 0), the
    left side faster turns it to starboard (a positive yaw rate on the gyro's z, down)."""
    text = variant(**changes)
    (tmp_path / "boat.params").write_text(text)
    values = parse_params(text, "boat.params").values
    port, rate = free_udp_port(), 50
    bench = tmp_path / "bb.toml"
    write_bench(
        bench,
        "bb",
        tmp_path / "run",
        f"""[weather]
preset = "calm"
[[device]]
name = "autopilot"
type = "ardupilot-sitl"
port = "udp://127.0.0.1:{port}?listen=1"
[device.settings]
params = "boat.params"
""",
        rate_hz=rate,
        profile="blueboat",
    )
    daemon, sitl = Daemon(str(bench), tmp=tmp_path), Sitl(port)
    try:
        ahead = ardupilot_pulses(values, left=0.6, right=0.6)
        states = [sitl.step(i, ahead, rate) for i in range(10 * rate)]
        turn = ardupilot_pulses(values, left=0.6, right=0.2)
        turning = [sitl.step(i, turn, rate) for i in range(10 * rate, 14 * rate)]
    finally:
        sitl.close()
    summary = daemon.stop()
    velocity, attitude = states[-1]["velocity"], states[-1]["attitude"]
    assert velocity[0] > 1.0 and abs(velocity[1]) < 0.05 and abs(attitude[2]) < 0.01
    assert turning[-1]["gyro"][2] > 0.1  # rad/s, to starboard
    assert summary["devices"]["autopilot"]["params"] == str(tmp_path / "boat.params")
