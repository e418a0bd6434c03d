"""ArduPilot's SITL link without a running loop: the frame and the answer on the wire, the
servo mapping of each profile's default, and the bench's rules for the device."""

from __future__ import annotations

import json
import math
import struct

import pytest

from hild.ardupilot.howto import home, instance, sitl_commands
from hild.ardupilot.link import ArduPilotSitl
from hild.ardupilot.protocol import (
    MAGIC_16,
    MAGIC_32,
    FrameError,
    PhysicsState,
    ServoFrame,
    encode_frame,
    encode_state,
    parse_frame,
)
from hild.ardupilot.servos import build_mapping
from hild.bench import BenchError, load_bench
from hild.devices.catalog import load_device_type
from hild.model import layout as L
from tests.ardupilot_client import AnswerError, frame, parse_answer
from tests.conftest import vessel

DEFAULTS = load_device_type("ardupilot-sitl").settings


# --- the wire -------------------------------------------------------------------------------
def test_a_frame_as_sitl_packs_it_parses():
    pwm = tuple(range(1000, 1016))
    parsed = parse_frame(frame(77, pwm, rate=400))  # packed by the test client, not by hild
    assert parsed == ServoFrame(400, 77, pwm)
    assert len(frame(0, ())) == 40  # 2 + 2 + 4 + 16 * 2 bytes, as ArduPilot's struct


def test_a_32_channel_frame_parses_and_round_trips():
    pwm = tuple(1100 + i for i in range(32))
    data = struct.pack("<HHI32H", MAGIC_32, 1200, 5, *pwm)
    parsed = parse_frame(data)
    assert parsed.pwm == pwm and parsed.frame_count == 5
    assert encode_frame(parsed) == data


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"\x1aH", "shorter than a frame's 8-byte header"),
        (struct.pack("<HHI16H", 1234, 1200, 0, *[1500] * 16), "magic 1234, expected 18458"),
        (struct.pack("<HHI8H", MAGIC_16, 1200, 0, *[1500] * 8), "24 bytes with magic 18458"),
        (b"$GPGGA,123519,4807.038,N*47\r\n", "expected 18458"),
    ],
)
def test_what_is_no_frame_says_why(data, needle):
    with pytest.raises(FrameError, match=needle):
        parse_frame(data)


STATE = PhysicsState(
    timestamp=12.345678901234,
    gyro=(0.01, -0.02, 0.125),
    accel_body=(0.1, -0.2, -9.81),
    position=(1234.5, -20.25, -0.01),
    velocity=(3.5, -0.5, 1e-05),
    attitude=(0.05, -0.01, -2.5),
    velocity_wind=(-7.0, 2.5, 0.0),
    windvane=(0.75, 9.5),
)


def test_the_answer_reads_back_as_ardupilot_reads_it():
    data = encode_state(STATE)
    assert data.startswith(b"\n") and data.endswith(b"\n") and data.count(b"\n") == 2
    values = parse_answer(data.decode().strip("\n"))
    assert values["timestamp"] == STATE.timestamp  # full double precision (atof into a double)
    assert values["gyro"] == STATE.gyro and values["accel_body"] == STATE.accel_body
    assert values["position"] == STATE.position and values["velocity"] == STATE.velocity
    assert values["attitude"] == STATE.attitude
    assert values["velocity_wind"] == STATE.velocity_wind
    assert values["windvane.direction"] == 0.75 and values["windvane.speed"] == 9.5


def test_the_answer_is_json_as_any_json_reader_reads_it():
    """Formatted by hand for speed: Python's json module (another reader than ArduPilot's)
    reads the same values and keys."""
    document = json.loads(encode_state(STATE))
    assert document == {
        "timestamp": STATE.timestamp,
        "imu": {"gyro": list(STATE.gyro), "accel_body": list(STATE.accel_body)},
        "position": list(STATE.position),
        "attitude": list(STATE.attitude),
        "velocity": list(STATE.velocity),
        "velocity_wind": list(STATE.velocity_wind),
        "windvane": {"direction": 0.75, "speed": 9.5},
    }


def test_velocity_is_found_before_velocity_wind():
    """A search for "velocity" finds whichever comes first: it must be the velocity."""
    text = encode_state(STATE).decode()
    assert text.index('"velocity"') < text.index('"velocity_wind"')


def test_a_space_after_the_colon_would_not_parse():
    """The client is as strict as ArduPilot's sscanf: the reason the answer is compact."""
    with pytest.raises(AnswerError, match="no vector"):
        parse_answer(
            '{"timestamp": 1, "imu": {"gyro": [0, 0, 0], "accel_body": [0, 0, 0]}, '
            '"position": [0, 0, 0], "attitude": [0, 0, 0], "velocity": [0, 0, 0]}'
        )


def test_a_state_that_is_not_finite_is_never_sent():
    bad = PhysicsState(1.0, (math.nan, 0, 0), (0, 0, -9.81), (0, 0, 0), (0, 0, 0), (0, 0, 0))
    with pytest.raises(ValueError, match="not finite"):
        encode_state(bad)


# --- the servo mapping of each profile's default ----------------------------------------------
def pwm(**outputs: int) -> tuple[int, ...]:
    """16 outputs, SERVOn given as sN=us, the rest 1500 (trim)."""
    values = [1500] * 16
    for name, us in outputs.items():
        values[int(name[1:]) - 1] = us
    return tuple(values)


def commanded(profile: str, outputs: tuple[int, ...], **settings) -> dict[str, tuple]:
    """Each actuator's (speed, angle [deg], deflector) for the outputs; None: left alone."""
    v = vessel(profile)
    mapping = build_mapping({**DEFAULTS, **settings}, v)
    out = {}
    for d in mapping.demands(outputs):
        angle = None if d.angle is None else round(math.degrees(d.angle), 9)
        out[v.actuators[d.actuator].name] = (d.speed, angle, d.deflector)
    return out


def test_odin_default_is_throttle_and_steering_on_servo_1_and_3():
    mapping = build_mapping(DEFAULTS, vessel("odin"))
    assert mapping.kind == "throttle-steering"
    assert mapping.functions == {1: 26, 3: 70}


@pytest.mark.parametrize(
    ("outputs", "expected"),
    [
        # trim: idle (400 rpm), deflector neutral, nozzles centred
        (pwm(), (400.0, 0.0, 0.0)),
        # full throttle: 2000 rpm, deflector full ahead
        (pwm(s3=2000), (2000.0, 0.0, 1.0)),
        # a fifth of the throttle: the bucket full ahead at idle (the single lever's first 20 %)
        (pwm(s3=1600), (400.0, 0.0, 1.0)),
        # 60 %: half the engine's travel above the bucket, 400 + 0.5 * 1600 = 1200 rpm
        (pwm(s3=1800), (1200.0, 0.0, 1.0)),
        # full astern: 2000 rpm, deflector full astern (a jet never turns backwards)
        (pwm(s3=1000), (2000.0, 0.0, -1.0)),
        # full right: both nozzles 27 deg, turning the bow to starboard
        (pwm(s1=2000), (400.0, 27.0, 0.0)),
        (pwm(s1=1250), (400.0, -13.5, 0.0)),
    ],
)
def test_odin_jets_follow_throttle_and_steering(outputs, expected):
    got = commanded("odin", outputs)
    assert got["port"] == pytest.approx(expected) and got["starboard"] == pytest.approx(expected)


def test_no_signal_is_neutral_not_full_astern():
    """ArduPilot sends 0 us on every output for its first seconds (measured)."""
    zeros = (0,) * 16
    assert commanded("odin", zeros)["port"] == pytest.approx((400.0, 0.0, 0.0))
    assert commanded("otter", zeros)["port"] == pytest.approx((0.0, None, None))


def test_without_reverse_a_throttle_below_trim_is_neutral():
    assert commanded("odin", pwm(s3=1000), reverse=False)["port"] == pytest.approx(
        (400.0, 0.0, 0.0)
    )


@pytest.mark.parametrize(
    ("profile", "full_ahead", "full_astern"),
    [
        ("jolner", 3000.0, -3000.0),  # rpm, +-3000 (profiles/jolner.toml)
        ("otter", 992.467, -971.514),  # rpm, the Otter's asymmetric range (profiles/otter.toml)
        ("wamv", 1.0, -1.0),  # VRX's normalized command
    ],
)
def test_twin_thruster_defaults_are_skid_steering(profile, full_ahead, full_astern):
    mapping = build_mapping(DEFAULTS, vessel(profile))
    assert mapping.kind == "skid" and mapping.functions == {1: 73, 3: 74}
    got = commanded(profile, pwm(s1=2000, s3=1000))  # left ahead, right astern: spin right
    assert got["port"][0] == pytest.approx(full_ahead)
    assert got["starboard"][0] == pytest.approx(full_astern)
    half = commanded(profile, pwm(s1=1750, s3=1750))
    assert half["port"][0] == pytest.approx(full_ahead / 2) == half["starboard"][0]
    if profile == "wamv":  # azimuth thrusters hold their centre under skid steering
        assert got["port"][1] == 0.0 and got["starboard"][1] == 0.0


def test_wamv_steers_its_azimuths_when_asked_to():
    """An azimuth aft turns the bow to starboard by thrusting to port: the order negated."""
    got = commanded("wamv", pwm(s1=2000, s3=2000), mapping="throttle-steering")
    assert got["port"] == pytest.approx((1.0, -90.0, None))


def test_channels_and_pulse_ranges_follow_the_settings():
    got = commanded(
        "odin",
        pwm(s5=1900, s6=1100),
        steering_channel=5,
        throttle_channel=6,
        pwm_min=1100,
        pwm_trim=1500,
        pwm_max=1900,
    )
    assert got["port"] == pytest.approx((2000.0, 27.0, -1.0))


def test_a_32_channel_frame_and_an_output_beyond_16():
    outputs = (1500,) * 20 + (2000,) + (1500,) * 11
    got = commanded("odin", outputs, throttle_channel=21)
    assert got["port"] == pytest.approx((2000.0, 0.0, 1.0))
    assert commanded("odin", (1500,) * 16, throttle_channel=21)["port"][2] == 0.0  # no signal


# --- the bench's rules --------------------------------------------------------------------
BENCH = """
[bench]
name = "ap"
rate_hz = 1200
[vessel]
profile = "{profile}"
[origin]
latitude = 59.41
longitude = 10.48
[[device]]
name = "autopilot"
type = "ardupilot-sitl"
port = "{port}"
{extra}
"""


def bench_file(tmp_path, profile="odin", port="udp://127.0.0.1:9002?listen=1", extra=""):
    path = tmp_path / "bench.toml"
    path.write_text(BENCH.format(profile=profile, port=port, extra=extra))
    return path


def problems(path) -> str:
    with pytest.raises(BenchError) as info:
        load_bench(path)
    return str(info.value)


def test_a_good_bench_loads(tmp_path):
    bench = load_bench(bench_file(tmp_path))
    (config,) = bench.devices
    assert config.model == "ardupilot-sitl" and config.sentences == ()


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        (
            {"profile": "otter", "extra": '[device.settings]\nmapping = "throttle-steering"'},
            "device (autopilot).settings.mapping = 'throttle-steering': expected skid: no actuator "
            "of otter steers",
        ),
        (
            {"extra": "[device.settings]\nthrottle_channel = 1"},
            "settings.throttle_channel = 1: expected an output of its own (steering is on SERVO1",
        ),
        ({"extra": '[device.settings]\nmapping = "tank"'}, "settings.mapping = 'tank'"),
        (
            {"extra": "[device.settings]\npwm_trim = 2000"},
            "settings.pwm_trim = 2000: expected between pwm_min (1000) and pwm_max (2000)",
        ),
        (
            {"port": "udp://127.0.0.1:9002"},
            "device (autopilot).ports = 'udp://127.0.0.1:9002': expected udp://HOST:PORT?listen=1",
        ),
        ({"port": "tcp://127.0.0.1:9002"}, "expected udp://HOST:PORT?listen=1"),
        (
            {
                "extra": '[[device]]\nname = "second"\ntype = "ardupilot-sitl"\n'
                'port = "udp://127.0.0.1:9012?listen=1"'
            },
            "device (second).type = 'ardupilot-sitl': expected one ardupilot-sitl device per bench",
        ),
    ],
)
def test_bench_problems_name_the_key(tmp_path, kwargs, needle):
    assert needle in problems(bench_file(tmp_path, **kwargs))


def test_the_start_command_names_home_instance_and_parameters(tmp_path):
    bench = load_bench(bench_file(tmp_path, port="udp://127.0.0.1:9012?listen=1"))
    link = ArduPilotSitl(bench.devices[0], 0, bench.origin, bench.vessel)
    text = "\n".join(sitl_commands(bench, link))
    assert home(bench) == "59.4100000,10.4800000,0,0"
    assert (
        "ardurover --model JSON:127.0.0.1 --home 59.4100000,10.4800000,0,0 --defaults "
        "odin.parm -I1" in text
    )
    assert "SERVO1_FUNCTION 26, SERVO3_FUNCTION 70" in text
    assert "mavproxy.py --master tcp:127.0.0.1:5770" in text  # the instance's MAVLink port
    assert (instance(9002), instance(9032), instance(9005), instance(10110)) == (0, 3, None, None)


def test_the_start_command_gives_the_vehicle_s_own_file_to_ardupilot_too(tmp_path):
    own = tmp_path / "mine.params"
    own.write_text("SERVO1_FUNCTION 73\nSERVO3_FUNCTION 74\n")
    bench = load_bench(bench_file(tmp_path, profile="otter", extra=PARAMS.format(own)))
    link = ArduPilotSitl(bench.devices[0], 0, bench.origin, bench.vessel)
    text = "\n".join(sitl_commands(bench, link))
    assert f"--defaults {own}" in text and "hild show ardupilot" not in text
    built_in = load_bench(bench_file(tmp_path, profile="otter", extra=PARAMS.format("otter")))
    link = ArduPilotSitl(built_in.devices[0], 0, built_in.origin, built_in.vessel)
    text = "\n".join(sitl_commands(built_in, link))
    assert "hild show ardupilot otter > otter.parm" in text and "--defaults otter.parm" in text


PARAMS = """[device.settings]
params = "{}"
"""


def test_restart_record_puts_the_vessel_back(tmp_path):
    """The record a SITL restart queues restores state and actuators, nothing else."""
    from hild.control import Restart
    from hild.world.build import initial_simulation

    bench = load_bench(bench_file(tmp_path))
    sim = initial_simulation(bench)
    start = (tuple(sim.x), tuple(sim.act_state), tuple(sim.act_cmd))
    sim.set_command("port.rpm", 1800)
    sim.set_command("port.deflector", 1.0)
    for _ in range(500):
        sim.tick()
    assert sim.x[0] > 0.0

    class Run:
        def sim_of(self, device: str):  # (a fleet's: the boat the device flies)
            return sim

    run = Run()
    Restart("autopilot", *start).apply(run)
    assert tuple(sim.x) == start[0] and tuple(sim.act_cmd) == start[2]
    assert sim.act_cmd[L.S_SPEED] == 400.0 and sim.t == pytest.approx(500 / 1200)  # time runs on
