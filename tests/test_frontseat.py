"""The Heron frontseat as heron_nmea speaks: its fields, its rates, and a minute in a gale
through the real daemon with a backseat turning the boat.

Expected values come from heron/heron_robot's heron_nmea (REFERENCE.md, nodes/nav_publisher,
nodes/imu_publisher, launch/nmea_if.launch) as devices/frontseat.toml quotes them.
"""

from __future__ import annotations

import math
import textwrap
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import numpy as np
import pynmea2
import pytest
from endpoints import Daemon, Repeater, TcpClient, free_tcp_port
from structlog.testing import capture_logs

from hild.bench import BenchError, load_bench
from hild.devices.catalog import load_device_type
from hild.devices.registry import build_device
from hild.geodesy import Origin
from hild.mirror import payloads
from hild.nmea import extra_types  # noqa: F401  (the CP sentences)
from hild.profiles.vessel import load_profile
from hild.sensors.device import DeviceConfig
from hild.sensors.truth import Truth

ORIGIN = Origin(59.41, 10.48)
UTC0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
G = 9.81
FIVE_HZ = ("NVG", "NVR", "IMU", "RCM", "RMC", "GGA")  # nmea_if.launch: nav and IMU at 5 Hz
EVERY_2_S = ("RBS", "ALT")  # battery and lights at 0.5 Hz


def frontseat(**settings):
    dtype = load_device_type("frontseat")
    config = DeviceConfig(
        name="frontseat",
        type="frontseat",
        model="frontseat",
        talker=dtype.talker,
        rate_hz=dtype.rate_hz,
        baud=dtype.baud,
        sentences=dtype.sentences,
        lever_arm=(0.0, 0.0, 0.0),
        ports=(),
        settings={**dtype.settings, **settings},
    )
    return build_device(config, 0, ORIGIN, load_profile("otter"))


def truth(t=0.0, heading_deg=0.0, nu=(0, 0, 0, 0, 0, 0), roll_deg=0.0, pitch_deg=0.0):
    eta = [
        0.0,
        0.0,
        0.0,
        math.radians(roll_deg),
        math.radians(pitch_deg),
        math.radians(heading_deg),
    ]
    return Truth(t, UTC0 + timedelta(seconds=t), np.array(eta), np.array(nu, float))


def by_type(lines: list[bytes]) -> dict[str, pynmea2.NMEASentence]:
    out = {}
    for line in lines:
        assert len(line) <= 82, line
        msg = pynmea2.parse(line.decode("ascii").strip(), check=True)
        out[msg.sentence_type] = msg
    return out


def test_default_sentences_are_the_herons():
    assert load_device_type("frontseat").sentences == (
        "CPNVG",
        "CPNVR",
        "CPIMU",
        "CPRCM",
        "CPRBS",
        "CPALT",
        "GPRMC",
        "GPGGA",
    )


@pytest.mark.parametrize(
    ("heading_deg", "cprcm_deg"),
    # REFERENCE.md: zero facing south, increasing counter-clockwise (seen from above)
    [(180.0, 0.0), (90.0, 90.0), (0.0, 180.0), (270.0, 270.0), (135.0, 45.0), (200.0, 340.0)],
)
def test_cprcm_heading_is_zero_facing_south_and_counter_clockwise(heading_deg, cprcm_deg):
    rcm = by_type(frontseat().sample(truth(heading_deg=heading_deg)))["RCM"]
    assert rcm.heading == pytest.approx(cprcm_deg, abs=0.05)  # printed to 0.1 deg
    assert rcm.compass_id == "0"  # imu_publisher's


def test_cprcm_pitch_is_positive_bow_down_and_roll_starboard_down():
    # Fossen: theta > 0 bow up, phi > 0 starboard down; imu_publisher negates the pitch
    rcm = by_type(frontseat().sample(truth(roll_deg=3.0, pitch_deg=5.0)))["RCM"]
    assert (rcm.pitch, rcm.roll) == (pytest.approx(-5.0, abs=0.05), pytest.approx(3.0, abs=0.05))


def test_cpnvg_heading_is_the_compass_slow_and_the_gps_course_above_0_2_m_s():
    # heading 10 deg, the boat drifting to starboard: over ground it goes 10 + 90 deg
    slow = by_type(frontseat().sample(truth(heading_deg=10.0, nu=(0, 0.15, 0, 0, 0, 0))))
    fast = by_type(frontseat().sample(truth(heading_deg=10.0, nu=(0, 0.25, 0, 0, 0, 0))))
    assert slow["NVG"].heading == pytest.approx(10.0, abs=0.05)
    assert fast["NVG"].heading == pytest.approx(100.0, abs=0.05)
    assert fast["RMC"].true_course == pytest.approx(100.0, abs=0.05)
    compass = frontseat(cpnvg_heading="compass")
    assert by_type(compass.sample(truth(heading_deg=10.0, nu=(0, 0.25, 0, 0, 0, 0))))[
        "NVG"
    ].heading == pytest.approx(10.0, abs=0.05)


def test_cpnvg_reports_roll_pitch_altitude_and_depth_as_0_as_the_heron():
    nvg = by_type(frontseat().sample(truth(roll_deg=-12.0, pitch_deg=-7.0)))["NVG"]
    assert (nvg.roll, nvg.pitch, nvg.altitude, nvg.depth) == (0.0, 0.0, 0.0, 0.0)


def test_cpnvr_and_cpimu_carry_the_body_rates_and_the_imu_reads_gravity():
    device = frontseat()
    p, q, r = 2.0, -3.0, 4.0  # deg/s
    nu = (0, 0, 0, math.radians(p), math.radians(q), math.radians(r))
    out = by_type(device.sample(truth(nu=nu)))
    nvr, imu = out["NVR"], out["IMU"]
    assert (nvr.pitch_rate, nvr.roll_rate, nvr.yaw_rate) == (q, p, r)
    assert (imu.rate_x, imu.rate_y, imu.rate_z) == (p, q, r)
    # at rest and level the accelerometer's specific force points up: -g along z (down)
    assert (imu.accel_x, imu.accel_y) == (0.0, 0.0) and imu.accel_z == pytest.approx(-G)


def test_cpimu_surge_acceleration_from_one_epoch_to_the_next():
    device = frontseat()
    device.sample(truth(t=0.0))
    imu = by_type(device.sample(truth(t=0.2, nu=(1.0, 0, 0, 0, 0, 0))))["IMU"]
    assert imu.accel_x == pytest.approx(1.0 / 0.2)  # 1 m/s gained in one 0.2 s epoch


def test_rates_are_the_herons():
    device = frontseat()
    counts: Counter = Counter()
    for k in range(50):  # 10 s at the device's 5 Hz
        counts.update(by_type([line]).popitem()[0] for line in device.sample(truth(t=k / 5)))
    assert {name: counts[name] for name in FIVE_HZ} == dict.fromkeys(FIVE_HZ, 50)
    assert {name: counts[name] for name in EVERY_2_S} == dict.fromkeys(EVERY_2_S, 5)


def test_gprmc_holds_the_last_course_at_rest():
    device = frontseat()
    first = by_type(device.sample(truth(t=0.0)))["RMC"]
    assert first.true_course is None  # never moved: no course to hold
    device.sample(truth(t=0.2, nu=(1.0, 0, 0, 0, 0, 0), heading_deg=45.0))
    stopped = by_type(device.sample(truth(t=0.4, heading_deg=300.0)))
    assert stopped["RMC"].true_course == pytest.approx(45.0) and stopped["RMC"].spd_over_grnd == 0
    empty = frontseat(cog_at_rest="empty")
    empty.sample(truth(t=0.0, nu=(1.0, 0, 0, 0, 0, 0), heading_deg=45.0))
    assert by_type(empty.sample(truth(t=0.2)))["RMC"].true_course is None


def test_a_sentence_that_cannot_be_encoded_costs_only_itself():
    device = frontseat(battery_voltage="not a number")  # CPRBS cannot be built
    with capture_logs() as logs:
        lines = device.sample(truth())
        device.sample(truth(t=10.0))  # epoch 1: no CPRBS due
    sent = sorted(by_type(lines))
    assert sent == ["ALT", "GGA", "IMU", "NVG", "NVR", "RCM", "RMC"]
    assert device.summary()["sentences_failed"] == {"CPRBS": 1}
    failed = [e for e in logs if e["event"] == "device.sentence_failed"]
    assert len(failed) == 1 and failed[0]["sentence"] == "CPRBS"
    assert failed[0]["device"] == "frontseat" and "ValueError" in failed[0]["error"]
    # and on MQTT, bus/<device> flattened for dashboards
    assert payloads.bus(0.0, UTC0, device.summary())["sentences_failed.CPRBS"] == 1


# --- a minute in a gale through the daemon, a backseat turning the boat -------------------

BENCH = """
[bench]
name = "frontseat-gale"
rate_hz = 100
seed = 3
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"
stats_interval = 10.0

[vessel]
profile = "otter"
heading_deg = 0.0
speed = 1.0

[origin]
latitude = 59.41
longitude = 10.48

[weather]
preset = "gale-hs1"

[[device]]
name = "frontseat"
type = "frontseat"
port = "tcp://127.0.0.1:{port}"
"""
TIME_SCALE = 4.0  # a simulated minute in 15 s; the loop keeps up (checked: no lost epochs)


def test_a_minute_in_a_gale_turning_sends_every_sentence_of_every_epoch(tmp_path):
    port = free_tcp_port()
    bench = tmp_path / "bench.toml"
    bench.write_text(textwrap.dedent(BENCH).format(run_dir=tmp_path / "run", port=port))
    daemon = Daemon(str(bench), "--time-scale", str(TIME_SCALE), "--duration", "60", tmp=tmp_path)
    backseat = TcpClient(port).start()
    # as iM200 sends it (a bare '*'), 10 times a (wall) second: more thrust to port turns the
    # bow to starboard
    sender = Repeater(backseat.sock.sendall, hz=10).start(b"$PYDIR,80,20*\r\n")
    summary = daemon.wait(60 + 60 / TIME_SCALE)
    time.sleep(0.3)  # the last lines in flight
    sender.stop()
    backseat.close()

    assert not daemon.events("device.sample_failed") and not daemon.events("device.sentence_failed")
    fs = summary["devices"]["frontseat"]
    assert fs["failures"] == 0 and fs["sentences_failed"] == {}
    # 60 s at 5 Hz, the epoch at t = 0 included (and the one at 60 s if the run reached it)
    assert fs["epochs"] in (300, 301)
    every_2_s = math.ceil(fs["epochs"] / 10)
    assert fs["sentences"] == 6 * fs["epochs"] + 2 * every_2_s
    tcp = summary["ports"][f"tcp://127.0.0.1:{port}"]
    assert tcp["dropped_lines"] == 0 and tcp["errors"] == 0

    # what the backseat received (each line within 82 characters and parsed), from the first
    # epoch after it connected (the lines before had nowhere to go) to the last
    received = [msg for _, msg in backseat.sentences()]
    assert len(received) == tcp["sent_lines"]
    kinds = Counter(msg.sentence_type for msg in received)
    first_epoch = received[0].timestamp
    assert received[0].sentence_type == "NVG"  # a whole epoch at a time, from the first
    # every 5 Hz epoch since the backseat connected, each 0.2 s after the one before
    for kind in FIVE_HZ:
        stamps = [
            datetime.combine(UTC0.date(), m.timestamp) for m in received if m.sentence_type == kind
        ]
        steps = {round((b - a).total_seconds(), 3) for a, b in pairwise(stamps)}
        assert steps == {0.2}, (kind, steps)
        assert stamps[-1] - datetime.combine(UTC0.date(), first_epoch) == timedelta(
            seconds=0.2 * (kinds[kind] - 1)
        )
        assert kinds[kind] == kinds["NVG"]
    assert kinds["NVG"] >= 200  # connected within 20 s of simulated time (5 s of wall)
    since = round((datetime.combine(UTC0.date(), first_epoch) - UTC0).total_seconds() * 5)
    due = [e for e in range(since, fs["epochs"]) if e % 10 == 0]  # the 2 s epochs seen
    assert kinds["RBS"] == kinds["ALT"] == len(due)
    assert len(received) == 6 * (fs["epochs"] - since) + 2 * len(due)  # every one since

    # the boat turned to starboard, against the gale and its waves: through more than a
    # quarter circle in the minute (117 deg with this seed)
    rcm = [m.heading for m in received if m.sentence_type == "RCM"]
    headings = [(180.0 - h) % 360.0 for h in rcm]  # back to clockwise from north
    turned = sum((b - a + 180.0) % 360.0 - 180.0 for a, b in pairwise(headings))
    assert turned > 90.0
    # underway CPNVG's heading is the GPS course: RMC's, from the same instant
    nvg = [m for m in received if m.sentence_type == "NVG"]
    rmc = [m for m in received if m.sentence_type == "RMC"]
    moving = [
        (a.heading, b.true_course) for a, b in zip(nvg, rmc, strict=True) if b.spd_over_grnd > 0.5
    ]
    assert moving and all(abs((a - b + 180) % 360 - 180) <= 0.1 for a, b in moving)


def test_a_bench_naming_no_such_behaviour_is_refused(tmp_path):
    bench = tmp_path / "bench.toml"
    bench.write_text(
        textwrap.dedent(f"""
        [bench]
        run_dir = "{tmp_path / "run"}"
        [vessel]
        profile = "otter"
        [[device]]
        name = "fs"
        type = "frontseat"
        port = "tcp://127.0.0.1:1"
        [device.settings]
        cpnvg_heading = "gps"
        [[device]]
        name = "gps"
        type = "gps"
        port = "udp://127.0.0.1:1"
        [device.settings]
        cog_at_rest = "frozen"
    """)
    )
    with pytest.raises(BenchError) as error:
        load_bench(str(bench))
    text = str(error.value)
    assert "cpnvg_heading = 'gps': expected one of 'heron', 'compass'" in text
    assert "cog_at_rest = 'frozen': expected one of 'empty', 'hold'" in text
