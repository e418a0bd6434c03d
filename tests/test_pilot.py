"""`hild pilot`: the control law, its sentences, the closed loop on Odin, and the CLI.

The closed-loop tests fly the real vessel model in-process, the pilot updated
at 1 Hz (the default bench's GPS rate) from the true state; the end-to-end
test runs `hild pilot` as a subprocess against a stand-in for the daemon on
UDP, in lock step, so nothing depends on the wall clock.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pynmea2
import pytest

from hild.coupled.simulation import Simulation
from hild.environment.environment import Environment
from hild.geodesy import Origin
from hild.nmea import sentences as s
from hild.nmea.decode import SentenceDecoder
from hild.pilot.actuation import Actuation, Setpoint
from hild.pilot.angles import wrap
from hild.pilot.autopilot import Autopilot, NavFix, PilotConfig
from hild.pilot.control import Pid, PidGains
from hild.pilot.fixes import FixAssembler
from hild.pilot.guidance import WaypointTracker, leg_geometry, los_course
from hild.pilot.links import LineBuffer, LinkError, parse_endpoint
from hild.pilot.mission import default_waypoints, parse_waypoints
from hild.pilot.wire import ProtocolError, encoder_for, hsc, iec, phldc, pydir
from hild.profiles.vessel import load_profile
from hild.profiles.weather import load_weather
from hild.units import KNOTS_PER_MS
from tests.endpoints import free_udp_port
from tests.forked_cli import run_hild

ODIN = load_profile("odin")
START = datetime(2026, 6, 1, 23, 59, 30, tzinfo=UTC)  # the mission crosses midnight UTC


# --- angles, guidance, control --------------------------------------------------------------
def test_wrap_into_minus_pi_to_pi():
    assert wrap(math.pi) == pytest.approx(-math.pi)
    assert wrap(-math.pi) == pytest.approx(-math.pi)
    assert wrap(1.5 * math.pi) == pytest.approx(-0.5 * math.pi)
    assert wrap(-1.5 * math.pi) == pytest.approx(0.5 * math.pi)
    assert wrap(7.0) == pytest.approx(7.0 - 2.0 * math.pi)
    for a in np.linspace(-20.0, 20.0, 101):
        assert -math.pi <= wrap(a) < math.pi
        assert math.sin(wrap(a)) == pytest.approx(math.sin(a), abs=1e-12)


def test_cross_track_is_positive_to_starboard_and_los_steers_back():
    north = leg_geometry((0.0, 0.0), (100.0, 0.0), (40.0, 5.0))  # east of a northbound leg
    assert (north.along_m, north.cross_m, north.length_m) == pytest.approx((40.0, 5.0, 100.0))
    assert los_course(north, 20.0) == pytest.approx(math.atan(-5.0 / 20.0))  # turn to port
    east = leg_geometry((0.0, 0.0), (0.0, 100.0), (3.0, 60.0))  # north of an eastbound leg
    assert east.path_angle == pytest.approx(math.pi / 2)
    assert east.cross_m == pytest.approx(-3.0)  # to port of the leg
    assert los_course(east, 20.0) > math.pi / 2  # steer to starboard, back towards it
    on = leg_geometry((10.0, 10.0), (-90.0, 10.0), (-40.0, 10.0))  # southbound, on the leg
    assert on.path_angle == pytest.approx(math.pi)
    assert on.cross_m == pytest.approx(0.0, abs=1e-12)
    assert abs(wrap(los_course(on, 20.0) - math.pi)) < 1e-12


def test_waypoint_switches_inside_the_circle_or_once_passed():
    tracker = WaypointTracker([(100.0, 0.0), (100.0, 100.0)], 1, (0.0, 0.0), 10.0)
    _, reached = tracker.update(0.0, (80.0, 0.0))
    assert reached == [] and tracker.target_index == 0
    geometry, reached = tracker.update(1.0, (91.0, 1.0))  # inside the 10 m circle
    assert [(r.index, r.lap, r.by) for r in reached] == [(0, 0, "radius")]
    assert reached[0].closest_m == pytest.approx(math.hypot(9.0, 1.0))
    assert geometry is not None and geometry.path_angle == pytest.approx(math.pi / 2)
    # the circle of the next one is missed by 30 m, but its along-track distance passes it
    _, reached = tracker.update(2.0, (130.0, 95.0))
    assert reached == []
    geometry, reached = tracker.update(3.0, (130.0, 101.0))
    assert [(r.index, r.by) for r in reached] == [(1, "passed")]
    assert geometry is None and tracker.finished


def test_laps_repeat_the_waypoints_in_order():
    square = [(10.0, 0.0), (10.0, 10.0), (0.0, 10.0), (0.0, 0.0)]
    tracker = WaypointTracker(square, 2, (0.0, 0.0), 1.0)
    seen = []
    for k, point in enumerate(square * 2):
        _, reached = tracker.update(float(k), point)
        seen += [(r.index, r.lap) for r in reached]
    assert seen == [(i, lap) for lap in (0, 1) for i in range(4)]
    assert tracker.finished


def test_pid_holds_its_integral_while_saturated_and_recovers_at_once():
    pid = Pid(PidGains(kp=0.5, ki=0.5), 0.0, 1.0)
    for _ in range(100):
        out = pid.update(0.5, 1.0)  # below the reference for 100 s, output saturated
    assert out == 1.0
    assert pid.integral == pytest.approx(0.75, abs=0.25)  # held; plain integration: 25
    assert pid.update(-0.1, 1.0) < 1.0  # the reference is passed: out of saturation at once
    assert Pid(PidGains(kp=0.5, ki=0.5), 0.0, 1.0).update(5.0, 1.0) == 1.0
    steer = Pid(PidGains(kp=1.0, ki=0.2, kd=1.0), -1.0, 1.0, -0.3, 0.3)
    for _ in range(50):
        steer.update(-0.5, 1.0)  # a steady moment to hold: the integral takes it, up to 0.3
    assert steer.integral == pytest.approx(-0.3)
    assert steer.update(0.0, 0.0, measurement_rate=0.5) == pytest.approx(-0.3 - 0.5)
    assert steer.update(0.0, 0.0, measurement_rate=-5.0) == 1.0  # output clipped to [-1, 1]
    assert steer.integral == pytest.approx(-0.3)  # dt = 0: no integration
    banded = Pid(PidGains(kp=1.0, ki=1.0), -1.0, 1.0, -0.3, 0.3, integral_band=0.2)
    banded.update(0.5, 1.0)  # a turn: outside the band the integral learns nothing
    assert banded.integral == 0.0
    banded.update(0.1, 1.0)
    assert banded.integral == pytest.approx(0.1)


def test_speed_and_heading_demands_have_the_right_signs():
    pilot = Autopilot(PilotConfig(), [(0.0, 200.0)], 1)  # due east of the start
    step = pilot.update(NavFix(0.0, 0.0, 0.0, heading=0.0, sog=0.0))
    assert step.demand.steer > 0.0  # heading north, the target is to starboard
    assert step.demand.thrust > 0.0
    pilot = Autopilot(PilotConfig(), [(0.0, 200.0)], 1)
    step = pilot.update(NavFix(0.0, 0.0, 0.0, heading=math.pi, sog=8.0))
    assert step.demand.steer < 0.0  # heading south: turn to port
    assert step.demand.thrust < 0.5  # too fast


def test_default_mission_is_a_square_ahead_and_to_starboard():
    north = default_waypoints(0.0)
    square = [(200.0, 0.0), (200.0, 200.0), (0.0, 200.0), (0.0, 0.0)]
    assert np.array(north) == pytest.approx(np.array(square))
    east = default_waypoints(math.pi / 2)  # ahead is east, starboard is south
    assert np.array(east) == pytest.approx(
        np.array([(0.0, 200.0), (-200.0, 200.0), (-200.0, 0.0), (0.0, 0.0)]), abs=1e-9
    )
    assert parse_waypoints(" 1,2 ; -3.5,4e1;5,6;7,8 ") == [(1, 2), (-3.5, 40), (5, 6), (7, 8)]
    for bad in ("", "1,2;3", "a,b", "1,2,3;4,5", "nan,1"):
        with pytest.raises(ValueError):
            parse_waypoints(bad)


# --- actuation and sentences ---------------------------------------------------------------
def parse(line: bytes) -> pynmea2.NMEASentence:
    assert line.endswith(b"\r\n") and line.count(b"\r\n") == 1
    assert len(line) <= 82
    return pynmea2.parse(line.decode("ascii").strip(), check=True)


@contextlib.contextmanager
def registered(*classes: tuple[str, tuple]):
    """pynmea2 types for TRC and ROR, for the length of one test only."""
    types = pynmea2.TalkerSentence.sentence_types
    saved = {name: types.get(name) for name, _ in classes}
    try:
        for name, fields in classes:
            type(name, (pynmea2.TalkerSentence,), {"fields": fields})
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                types.pop(name, None)
            else:
                types[name] = old


TRC_FIELDS = (
    ("Number", "number", int),
    ("RPM demand", "rpm", float),
    ("RPM mode", "rpm_mode"),
    ("Pitch demand", "pitch", float),
    ("Pitch mode", "pitch_mode"),
    ("Azimuth demand", "azimuth", float),
    ("Location", "location"),
    ("Status", "status"),
)
ROR_FIELDS = (
    ("Starboard order", "starboard", float),
    ("Starboard status", "starboard_status"),
    ("Port order", "port", float),
    ("Port status", "port_status"),
    ("Source", "source"),
)


def odin_setpoints(thrust: float, steer: float) -> list[Setpoint]:
    from hild.pilot.autopilot import Demand

    return Actuation(ODIN).setpoints(Demand(thrust, steer))


def test_iec_sentences_for_odin():
    with registered(("TRC", TRC_FIELDS), ("ROR", ROR_FIELDS)):
        lines = iec(odin_setpoints(0.5, 0.5))
        trc1, trc2, ror = (parse(line) for line in lines)
        assert lines[0].startswith(b"$APTRC,1,")  # starboard first (IEC: odd starboard)
        for trc, n in ((trc1, 1), (trc2, 2)):
            assert trc.talker == "AP" and trc.number == n
            assert (trc.rpm, trc.rpm_mode, trc.pitch, trc.pitch_mode) == (1200.0, "R", 100.0, "P")
            assert (trc.azimuth, trc.location, trc.status) == (None, "B", "C")
        assert (ror.starboard, ror.port) == (13.5, 13.5)  # half of +-27 deg, bow to starboard
        assert (ror.starboard_status, ror.port_status, ror.source) == ("A", "A", "B")
        neutral = [parse(line) for line in iec(Actuation(ODIN).neutral())]
        assert [(t.rpm, t.pitch) for t in neutral[:2]] == [(400.0, 0.0), (400.0, 0.0)]
        assert (neutral[2].starboard, neutral[2].port) == (0.0, 0.0)
    for line in lines + phldc(odin_setpoints(0.123, -0.456)):
        body = line.decode().split("*")[0]
        assert all(re.fullmatch(r"-?\d+(\.\d)?|[A-Z$]*[A-Z]*", f) for f in body.split(","))


def test_hsc_carries_the_heading_to_steer_in_degrees_true():
    assert hsc(math.radians(45.0)) == b"$APHSC,45.0,T,,M*4F\r\n"  # docs/controller-bus.md
    # pynmea2's own HSC type reads it, checksum checked; 0.0 .. 359.9 as the pilot prints it
    for deg, text in ((45.0, "45.0"), (-90.0, "270.0"), (359.96, "0.0"), (123.44, "123.4")):
        m = pynmea2.parse(hsc(math.radians(deg)).decode().strip(), check=True)
        assert (m.talker, m.true, m.heading_magnetic, m.magnetic) == ("AP", "T", None, "M")
        assert str(m.heading_true) == text, deg


def test_phldc_maps_odins_ranges_to_plus_minus_100():
    starboard, port = (parse(line) for line in phldc(odin_setpoints(0.25, -1.0)))
    assert starboard.manufacturer == "HLD" and starboard.data[0] == "C"  # $PHLDC
    # number, rpm (400 + 0.25 * 1600 = 800 rpm -> -50), nozzle (-27 deg -> -100), deflector
    assert starboard.data[1:] == ["1", "-50.0", "-100.0", "100.0"]
    assert port.data[1:] == ["2", "-50.0", "-100.0", "100.0"]
    neutral = [parse(line).data[1:] for line in phldc(Actuation(ODIN).neutral())]
    assert neutral == [["1", "-100.0", "0.0", "0.0"], ["2", "-100.0", "0.0", "0.0"]]


def test_thrusters_steer_by_differential_thrust():
    jolner = load_profile("jolner")
    from hild.pilot.autopilot import Demand

    setpoints = Actuation(jolner).setpoints(Demand(0.6, 0.4))
    by_number = {p.number: p for p in setpoints}
    assert by_number[2].spec.name == "port" and by_number[1].spec.name == "starboard"
    assert by_number[2].level == pytest.approx(0.8)  # port pushes harder: bow to starboard
    assert by_number[1].level == pytest.approx(0.4)
    (line,) = pydir(setpoints)
    msg = parse(line)
    assert msg.manufacturer == "YDI" and msg.data == ["R", "80.0", "40.0"]  # $PYDIR,left,right
    trc = [parse(x) for x in iec(setpoints)]
    assert len(trc) == 2  # fixed thrusters: no ROR
    assert [t.data[:5] for t in trc] == [["1", "40.0", "P", "", "V"], ["2", "80.0", "P", "", "V"]]
    assert [parse(x).data for x in phldc(setpoints)] == [
        ["T", "1", "40.0", "0.0"],
        ["T", "2", "80.0", "0.0"],
    ]


def test_pydir_refuses_waterjets_and_azimuth_thrusters():
    for name in ("odin", "wamv"):
        with pytest.raises(ProtocolError, match="pydir"):
            encoder_for("pydir", load_profile(name))
    assert encoder_for("iec", load_profile("wamv")) is iec


def test_model_sign_conventions_match_the_pilot():
    """A positive steer turns Odin's bow to starboard in the model itself."""
    sim = Simulation(ODIN, dt=0.01)
    sim.x[6] = 5.0
    apply(sim, odin_setpoints(0.75, 0.3))
    sim.advance(300)
    assert sim.x[11] > 0.05  # r > 0: turning to starboard
    assert sim.x[5] > 0.1


# --- sentences in ------------------------------------------------------------------------------
def epoch(utc: datetime, lat: float, lon: float, heading_deg: float, sog: float, cog_deg: float):
    kn = sog * KNOTS_PER_MS
    return [
        s.gga("GP", utc, lat, lon, 1, 10, 0.8, 2.0, 40.0),
        s.rmc("GP", utc, True, lat, lon, kn, cog_deg),
        s.vtg("GP", cog_deg, kn),
        s.zda("GP", utc),
        s.hdt("GP", heading_deg),
    ]


def test_decoder_reads_position_motion_heading_and_counts_the_rest():
    decoder = SentenceDecoder()
    utc = datetime(2026, 6, 1, 12, 0, 1, 500000, tzinfo=UTC)
    gga, rmc, vtg, zda, hdt = (
        decoder.decode(x.decode()) for x in epoch(utc, 59.41, 10.48, 93.5, 5.0, 91.0)
    )
    assert gga.time_s == pytest.approx(43201.5) and gga.latitude_deg == pytest.approx(59.41)
    assert rmc.sog == pytest.approx(5.0, abs=0.01) and rmc.cog == pytest.approx(math.radians(91.0))
    assert vtg.sog == pytest.approx(5.0, abs=0.01) and vtg.time_s is None
    assert zda is None  # well-formed, not needed
    assert hdt.heading == pytest.approx(math.radians(93.5))
    nvg = decoder.decode(
        nmea("CPNVG,120002.000,5924.600,N,01028.800,E,1,,0.0,45.0,0.0,0.0,120002.000")
    )
    assert nvg.time_s == pytest.approx(43202.0) and nvg.heading == pytest.approx(math.pi / 4)
    assert nvg.longitude_deg == pytest.approx(10.48)
    assert (decoder.used, decoder.ignored, decoder.malformed) == (5, 1, 0)
    good = epoch(utc, 59.41, 10.48, 93.5, 5.0, 91.0)[0].decode().strip()
    bad = [
        good[:-2] + "00",  # checksum
        good.split("*")[0],  # no checksum
        good[:30],  # truncated
        "\x00\xffgarbage",
        nmea("GPGGA,1200xx,5924.6,N,01028.8,E,1,08,1.0,0.0,M,0.0,M,,"),  # bad time
        nmea("GPRMC,120001.00,A,5924.6,X,01028.8,E,1.0,2.0,010626,,,A"),  # bad hemisphere
        nmea("GPHDT,,T"),
    ]
    for line in bad:
        assert decoder.decode(line) is None
    assert decoder.malformed == len(bad)
    assert decoder.decode(nmea("RCTRD,1,400.0,R,,V,")) is None  # feedback: ignored
    assert (
        decoder.decode(s.rmc("GP", utc, False, None, None, None, None).decode()).has_position
        is False
    )


def nmea(body: str) -> str:
    checksum = 0
    for ch in body.encode():
        checksum ^= ch
    return f"${body}*{checksum:02X}"


def feed(assembler: FixAssembler, lines: list[bytes], now: float) -> list[list]:
    """Each line's fixes, in order (lines the decoder does not use give [])."""
    decoder = SentenceDecoder()
    out = []
    for line in lines:
        reading = decoder.decode(line.decode())
        out.append([] if reading is None else assembler.add(reading, now))
    return out


def test_a_fix_goes_out_with_the_last_sentence_of_its_burst_across_midnight():
    assembler = FixAssembler()
    fixes = []
    for k in range(4):
        utc = START + timedelta(seconds=28 + k)  # 23:59:58 .. 00:00:01
        out = feed(assembler, epoch(utc, 59.41, 10.48, 10.0 * k, 5.0, 0.0), float(k))
        assert [len(x) for x in out] == [0, 0, 0, 0, 1]  # at HDT, the burst's last sentence
        fixes += out[-1]
    assert np.diff([f.time_s for f in fixes]) == pytest.approx([1.0, 1.0, 1.0])
    assert np.degrees([f.heading for f in fixes]) == pytest.approx([0.0, 10.0, 20.0, 30.0])
    assert fixes[1].sog == pytest.approx(5.0, abs=0.01)


def test_an_incomplete_burst_goes_out_after_settling_or_at_the_next_time():
    assembler = FixAssembler(settle_s=0.25)
    first = epoch(START, 59.41, 10.48, 45.0, 5.0, 40.0)
    assert feed(assembler, first, 0.0)[-1] != []
    second = epoch(START + timedelta(seconds=1), 59.41, 10.48, 50.0, 5.0, 40.0)[:4]  # HDT lost
    assert all(x == [] for x in feed(assembler, second, 1.0))
    assert assembler.poll(1.1) == []
    (fix,) = assembler.poll(1.3)  # the settling time has passed
    assert fix.heading == pytest.approx(math.radians(45.0))  # carried from 1 s before
    assert fix.time_s == pytest.approx(86371.0)
    gga_only = FixAssembler()
    for k in range(3):
        utc = START + timedelta(seconds=k)
        out = feed(gga_only, epoch(utc, 59.41, 10.48, 0.0, 0.0, 0.0)[:1], float(k))
        # the first waits for a burst that never completes, then flushes at the next time;
        # from then on a GGA alone is a whole epoch
        assert [len(x) for x in out] == [0 if k == 0 else 1 + (k == 1)]


# --- links ---------------------------------------------------------------------------------------
def test_endpoints_and_lines():
    assert parse_endpoint("udp://127.0.0.1:10110").kind == "udp"
    assert parse_endpoint("tcp://:29500").host == "127.0.0.1"
    serial_url = parse_endpoint("serial:///dev/ttyUSB0?baud=38400")
    assert (serial_url.kind, serial_url.path, serial_url.baud) == ("serial", "/dev/ttyUSB0", 38400)
    assert parse_endpoint("/tmp/hild/gps").path == "/tmp/hild/gps"
    for bad in ("ftp://x:1", "udp://127.0.0.1", "udp://127.0.0.1:0", "tcp://h:1?ttl=2"):
        with pytest.raises(LinkError):
            parse_endpoint(bad)
    buffer = LineBuffer()
    assert buffer.feed(b"$A*00\r\n$B") == ["$A*00"]
    assert buffer.feed(b"*11\n\n") == ["$B*11"]
    buffer.feed(b"x" * 5000)
    assert buffer.overlong == 1 and buffer.feed(b"$C\r\n") == ["$C"]


# --- the closed loop on Odin, in-process -------------------------------------------------------
# Acceptance radius: the pilot's default, 15 m. Odin turns 90 degrees at 5 m/s on a radius of
# about 15 m under the heading PID, so the turn starts where a circle of that radius inscribed
# in the corner touches the incoming leg (thesis Fig. 5.1), and fixes 5 m apart at 1 Hz put
# one inside the circle on any pass within 14 m.
RADIUS = PilotConfig().guidance.acceptance_radius_m


def apply(sim: Simulation, setpoints: list[Setpoint]) -> None:
    for p in setpoints:
        sim.set_command(f"{p.spec.name}.rpm", p.rpm)
        sim.set_command(f"{p.spec.name}.nozzle_deg", p.angle_deg)
        sim.set_command(f"{p.spec.name}.deflector", p.deflector)


def true_fix(sim: Simulation) -> NavFix:
    """Heading, position and speed over ground of the body origin (nu is over ground)."""
    psi, u, v = sim.x[5], sim.x[6], sim.x[7]
    vn, ve = u * math.cos(psi) - v * math.sin(psi), u * math.sin(psi) + v * math.cos(psi)
    return NavFix(sim.t, sim.x[0], sim.x[1], psi, math.hypot(vn, ve), math.atan2(ve, vn))


def fly(weather: str, rate_hz: float, t_max: float = 400.0):
    dt = 0.01
    env = Environment(load_weather(weather), ODIN, dt, seed=0, duration=None)
    sim = Simulation(ODIN, dt=dt, method="rk4", environment=env)
    actuation = Actuation(ODIN)
    waypoints = default_waypoints(sim.x[5])
    pilot = Autopilot(PilotConfig(), waypoints, laps=1)
    steps = round(1.0 / (rate_hz * dt))
    rows, speeds = [], []
    while sim.t < t_max and not pilot.finished:
        fix = true_fix(sim)
        step = pilot.update(fix)
        speeds.append((fix.t, fix.sog))
        apply(sim, actuation.setpoints(step.demand))
        rows.append(sim.advance(steps, record_every=10))
    return pilot, waypoints, np.concatenate(rows), np.array(speeds)


@pytest.mark.parametrize("weather", ["calm", "gale-calm-sea"])
@pytest.mark.parametrize("rate_hz", [1.0, 10.0])
def test_odin_sails_the_four_waypoint_mission(weather, rate_hz):
    pilot, waypoints, track, speeds = fly(weather, rate_hz)
    assert pilot.finished, pilot.summary()
    reached = pilot.reached
    assert [(r.index, r.lap) for r in reached] == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert all(r.by == "radius" for r in reached), pilot.summary()
    t_prev = 0.0
    for r in reached:  # the true track (10 Hz) comes within the radius of each waypoint
        while_active = (track[:, 0] >= t_prev) & (track[:, 0] <= r.t + 0.1)
        north, east = waypoints[r.index]
        closest = np.hypot(track[while_active, 1] - north, track[while_active, 2] - east).min()
        assert closest <= RADIUS, (r, closest)
        t_prev = r.t
    assert 120.0 < reached[-1].t < 220.0  # 4 x 200 m at 5 m/s, less the corners
    # speed over ground settles near 5 m/s: away from the start and the turns
    turns = [r.t for r in reached]
    straight = [(t >= 20.0) and all(not (0.0 <= t - tt < 15.0) for tt in turns) for t, _ in speeds]
    sog = speeds[np.array(straight), 1]
    assert abs(sog.mean() - 5.0) < 0.1 and np.abs(sog - 5.0).max() < 0.5
    summary = pilot.summary()
    assert summary["completed"] and summary["xte_rms_m"] < 5.0
    assert summary["xte_max_m"] < RADIUS + 5.0  # the offset to the next leg at the switch


# --- the CLI ---------------------------------------------------------------------------------
def hild(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return run_hild(*args, timeout=timeout)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--laps", "0"], "laps"),
        (["--waypoints", "1,2;three,4"], "waypoint"),
        (["--heading-gains", "1,2"], "KP,KI,KD"),
        (["--speed-gains", "1,-2"], "gain"),
        (["--rate", "0"], "rate"),
        (["--speed", "nan"], "speed"),
        (["--speed", "1e9"], "to 30.8667 (a scenario's limit, 60 kn)"),
        (["--waypoints", "1e300,0;0,0"], "farther than 200 km from the start"),
        (["--protocol", "nmea2000"], "protocol"),
        (["--protocol", "pydir"], "pydir drives twin fixed thrusters"),
        (["--profile", "no-such-boat"], "no-such-boat"),
        (["--nmea", "ftp://127.0.0.1:1"], "ftp"),
        (["--commands", "udp://127.0.0.1"], "port"),
    ],
)
def test_cli_refuses_bad_arguments(args, says):
    p = hild("pilot", *args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert says in p.stderr and "error" in p.stderr
    assert "Traceback" not in p.stderr and p.stdout == ""


def udp_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def decode_commands(lines: list[str]) -> dict[str, float]:
    """The daemon's side of the contract, for Odin: TRC (rpm, deflector) and ROR (nozzles)."""
    commands: dict[str, float] = {}
    names = {1: "starboard", 2: "port"}
    for line in lines:
        f = pynmea2.parse(line, check=True).data  # checksum, framing; TRC and ROR by field
        if line.startswith("$APTRC"):
            name = names[int(f[0])]
            assert f[2] == "R" and f[4] == "P" and f[7] == "C"
            commands[f"{name}.rpm"] = float(f[1])
            commands[f"{name}.deflector"] = float(f[3]) / 100.0
        elif line.startswith("$APROR"):
            commands["starboard.nozzle_deg"], commands["port.nozzle_deg"] = float(f[0]), float(f[2])
    return commands


def test_the_cli_sails_a_small_mission_against_a_daemon_on_udp():
    """`hild pilot` in its own process; a stand-in daemon in lock step: an epoch, an answer."""
    sensors = free_udp_port()
    bus = udp_socket()
    origin = Origin(59.41, 10.48)
    args = [
        sys.executable,
        "-m",
        "hild.cli",
        "pilot",
        "--nmea",
        f"udp://127.0.0.1:{sensors}",
        "--commands",
        f"udp://127.0.0.1:{bus.getsockname()[1]}",
        "--timeout",
        "200",
        "--waypoints",
        "80,0;80,80;0,80;0,0",
    ]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    gps = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sim = Simulation(ODIN, dt=0.01)
    received: list[str] = []
    try:
        with registered(("TRC", TRC_FIELDS), ("ROR", ROR_FIELDS)):
            deadline = time.monotonic() + 30.0
            while proc.poll() is None and time.monotonic() < deadline and sim.t < 200.0:
                fix = true_fix(sim)
                lat, lon, _ = origin.to_geodetic(fix.north, fix.east)
                utc = START + timedelta(seconds=sim.t)
                burst = epoch(
                    utc,
                    lat,
                    lon,
                    math.degrees(fix.heading) % 360.0,
                    fix.sog,
                    math.degrees(fix.cog) % 360.0,
                )
                received += drain(bus, 0.0)  # re-sent commands from before this epoch
                for line in burst:
                    gps.sendto(line, ("127.0.0.1", sensors))
                answer = wait_for_commands(bus, proc)
                received += answer
                if answer:
                    for name, value in decode_commands(answer).items():
                        sim.set_command(name, value)
                sim.advance(100)
            if proc.poll() is None:
                proc.terminate()  # SIGTERM: the pilot sends neutral and reports, too
            out, err = proc.communicate(timeout=10.0)
            received += drain(bus, 0.2)
            final = decode_commands(received[-3:])
    finally:
        if proc.poll() is None:
            proc.kill()
        gps.close()
        bus.close()
    assert proc.returncode == 0, (out[-2000:], err[-2000:])
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["event"] == "pilot.summary" and summary["completed"] is True
    assert [(w["index"], w["lap"]) for w in summary["waypoints"]] == [(i, 0) for i in range(4)]
    assert all(w["closest_m"] <= RADIUS for w in summary["waypoints"])
    assert summary["malformed"] == 0 and summary["fixes"] >= 30
    assert "pilot: start: origin 59.410000 10.480000" in out
    assert "waypoint 3 lap 0 reached" in out
    # the last commands are neutral: idle RPM, deflector at zero thrust, nozzles amidships
    neutral = {"rpm": 400.0, "deflector": 0.0, "nozzle_deg": 0.0}
    assert final == {f"{side}.{k}": v for side in ("starboard", "port") for k, v in neutral.items()}
    assert all(len(line) + 2 <= 82 for line in received)
    # with the commands, the heading to steer (HSC), which a neutral set goes without
    references = [pynmea2.parse(x, check=True) for x in received if x.startswith("$APHSC,")]
    assert 0 < len(references) <= summary["references_sent"], summary
    assert all(0.0 <= float(r.heading_true) < 360.0 for r in references)
    assert not received[-1].startswith("$APHSC")


def wait_for_commands(bus: socket.socket, proc: subprocess.Popen) -> list[str]:
    """The first complete command set (two TRC and a ROR) after an epoch; [] if none comes."""
    bus.settimeout(2.0)
    lines: list[str] = []
    while proc.poll() is None:
        try:
            data, _ = bus.recvfrom(4096)
        except TimeoutError:
            return []
        lines += data.decode("ascii").split()
        if lines[-1].startswith("$APROR"):
            return lines[-3:]
    return []


def drain(bus: socket.socket, wait_s: float) -> list[str]:
    """Whatever is waiting on the command socket (and arrives within ``wait_s``)."""
    if wait_s > 0.0:
        bus.settimeout(wait_s)
    else:
        bus.setblocking(False)
    lines: list[str] = []
    with contextlib.suppress(TimeoutError, BlockingIOError):
        while True:
            data, _ = bus.recvfrom(4096)
            lines += data.decode("ascii").split()
    return lines


def test_ais_on_the_sensor_line_is_ignored_and_watched_for_stop_cpa():
    """`hild pilot` among traffic: an AIS sentence is no malformed line, and --stop-cpa's
    watch finds a target that would pass too close. The oracle is the geometry worked by
    hand: own ship at the origin heading north at 5 m/s; a target 2000 m due east heading
    west at 5 m/s (10 kn = 5.144 m/s in AIS's 0.1 kn) meets it: relative velocity (-5, -5.144)
    from (0, 2000), so TCPA = 2000 * 5.144 / (25 + 5.144^2) = 197 s, CPA = 2000 * 5 /
    sqrt(25 + 5.144^2) = 1394 m."""
    from hild.geodesy import Origin
    from hild.nmea.decode import SentenceDecoder
    from hild.pilot.traffic_watch import TrafficWatch
    from hild.traffic import ais

    origin = Origin(59.41, 10.48)
    lat, lon, _ = origin.to_geodetic(0.0, 2000.0)
    report = ais.Dynamic(lat, lon, 10.0, 270.0, 270.0, 0.0, 12, True)
    (line,) = ais.position_report_a(1, 257000001, 0, report, "A")
    heard = []
    decoder = SentenceDecoder(heard.append)
    assert decoder.decode(line.decode()) is None
    assert (decoder.used, decoder.ignored, decoder.malformed) == (0, 1, 0)
    assert heard == [line.decode().strip()]
    v = 10.0 * 1852 / 3600
    tcpa = 2000.0 * v / (25.0 + v * v)
    cpa = 2000.0 * 5.0 / math.sqrt(25.0 + v * v)
    watch = TrafficWatch(limit_m=1500.0, horizon_s=300.0)
    watch.feed(heard[0], t=0.0)
    found = watch.closest(origin, 0.0, 0.0, 5.0, 0.0, t=0.0)
    assert found is not None and found.mmsi == 257000001
    # AIS carries the position to 1/10000 min (0.19 m of latitude) and the course to 0.1 deg
    assert found.cpa_m == pytest.approx(cpa, abs=1.0) and found.tcpa_s == pytest.approx(
        tcpa, abs=0.5
    )
    assert TrafficWatch(1000.0, 300.0).closest(origin, 0.0, 0.0, 5.0, 0.0, 0.0) is None
    narrow = TrafficWatch(1000.0, 300.0)  # the same target passes 1394 m off: not under 1000
    narrow.feed(heard[0], 0.0)
    assert narrow.closest(origin, 0.0, 0.0, 5.0, 0.0, 0.0) is None
    short = TrafficWatch(1500.0, 100.0)  # under the limit, but 197 s away: beyond 100 s
    short.feed(heard[0], 0.0)
    assert short.closest(origin, 0.0, 0.0, 5.0, 0.0, 0.0) is None
    assert decoder.decode("!AIVDM,1,1,,A,garbage,0*00") is None and decoder.malformed == 0


def test_the_pilot_reads_the_time_scale_from_its_fixes_and_re_sends_on_their_time():
    """Fixes a second apart in their own time, a tenth of a second apart on the pilot's clock:
    a run at 10x, so the 10 Hz re-send is every 10 ms of wall time (the lease is the run's)."""
    from hild.pilot.fixes import GeoFix
    from hild.pilot.runner import PilotOptions, PilotSession

    # (links are opened by run(), never here: the URLs name a free port all the same)
    url = f"udp://127.0.0.1:{free_udp_port()}"
    session = PilotSession(PilotOptions(nmea=url, commands=url), lambda _: None)
    assert not session.commands.is_open and session._period() == pytest.approx(0.1)  # 1x
    wall = 100.0
    for i in range(6):
        session._on_fix(GeoFix(50_000.0 + i, 59.41, 10.48, 0.0, 0.0, 0.0), wall + 0.1 * i)
    assert session.time_scale == pytest.approx(10.0)
    assert session._period() == pytest.approx(0.01)
    given = PilotSession(PilotOptions(nmea=url, commands=url, time_scale=5.0), lambda _: None)
    given._on_fix(GeoFix(50_000.0, 59.41, 10.48, 0.0, 0.0, 0.0), wall)
    given._on_fix(GeoFix(50_001.0, 59.41, 10.48, 0.0, 0.0, 0.0), wall + 0.1)
    assert given.time_scale == 5.0  # given: kept, whatever the fixes say
