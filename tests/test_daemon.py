"""The real daemon as a subprocess against real ptys, UDP and TCP sockets on 127.0.0.1."""

from __future__ import annotations

import math
import os
import textwrap
import time
import tomllib
import tty
from datetime import UTC, datetime

import numpy as np
import pytest
from endpoints import (
    Daemon,
    PtyClient,
    TcpClient,
    UdpClient,
    free_tcp_port,
    free_udp_port,
    on_free_ports,
    rate_hz,
)

from hild.bench import resolve_bench

START = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
MS_PER_KN = 1852 / 3600  # the international knot: 1852 m an hour
KMH_PER_KN = 1.852
EPS = 1e-9  # floating-point slack on a bound that a rounded value can reach exactly

BENCH = """
[bench]
rate_hz = 100
seed = 3
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"
stats_interval = 1.0

[origin]
latitude = 59.41
longitude = 10.48

[vessel]
profile = "odin"
heading_deg = 30.0
speed = 2.0
[vessel.commands]
"port.rpm" = 1200
"starboard.rpm" = 1200
"port.deflector" = 1
"starboard.deflector" = 1
"port.nozzle_deg" = 8
"starboard.nozzle_deg" = 8

[weather]
wind_speed = 8.0
wind_from_deg = 250.0
current_speed = 0.4
current_to_deg = 90.0

[[device]]
name = "gps"
type = "gps"
rate_hz = 10
baud = 115200
position = [1.0, 0.2, -2.0]
ports = ["pty://gps", "udp://127.0.0.1:{udp_port}"]

[[device]]
name = "heading"
type = "heading"
position = [0.0, 0.0, 0.0]
port = "tcp://127.0.0.1:{tcp_port}"

[[device]]
name = "wind"
type = "anemometer"
rate_hz = 2
position = [-2.0, 0.0, -3.0]
port = "pty://wind"

[[device]]
name = "speed"
type = "speed-log"
position = [0.0, 0.0, 0.5]
port = "pty://speed"
"""

# --- Oracles written out here, independently of hild ----------------------------------------

WGS84_A = 6378137.0  # semi-major axis [m]: WGS-84's defining constants
WGS84_F = 1 / 298.257223563  # flattening


def metres_per_minute(lat_deg: float) -> tuple[float, float]:
    """Metres in one minute of arc of latitude and of longitude at lat_deg (WGS-84 ellipsoid):
    the meridian radius a (1 - e^2) / W^3 and the parallel's radius a cos(lat) / W, with
    W = sqrt(1 - e^2 sin^2 lat)."""
    e2 = WGS84_F * (2 - WGS84_F)
    lat = math.radians(lat_deg)
    w = math.sqrt(1 - e2 * math.sin(lat) ** 2)
    minute = math.radians(1 / 60)
    return WGS84_A * (1 - e2) / w**3 * minute, WGS84_A * math.cos(lat) / w * minute


def arc_minutes(field: str, hemisphere: str) -> float:
    """ddmm.mmmmm (or dddmm.mmmmm) as signed minutes of arc."""
    whole = field.index(".") - 2  # the degrees' digits
    value = int(field[:whole]) * 60 + float(field[whole:])
    return -value if hemisphere in ("S", "W") else value


def wind_at_height(u10: float, height: float) -> float:
    """The mean wind over the sea at height [m], from the one at 10 m: the logarithmic profile
    U(z) = (u*/k) ln(z/z0) with von Karman's k = 0.4 and the roughness length z0 for which the
    drag coefficient at 10 m, (k / ln(10 m / z0))^2, is the thesis' 0.0026 (eq. 2.43)."""
    log_10 = 0.4 / math.sqrt(0.0026)  # ln(10 m / z0)
    return u10 * (log_10 + math.log(height / 10.0)) / log_10


def wrap180(deg: float) -> float:
    return (deg + 180.0) % 360.0 - 180.0


def to_body(north: float, east: float, heading_deg: float) -> np.ndarray:
    """A horizontal vector given north and east, in the heading's axes: (ahead, to starboard)."""
    psi = math.radians(heading_deg)
    return np.array(
        [
            north * math.cos(psi) + east * math.sin(psi),
            -north * math.sin(psi) + east * math.cos(psi),
        ]
    )


def tilt_error(speed: float, roll_deg: float, pitch_deg: float) -> float:
    """How far the body frame's x and y components of a velocity [m/s] (what a sensor on the
    hull measures) can be from its horizontal components in the heading's axes (what the test
    computes): the horizontal part foreshortened and mixed by roll and pitch, and a vertical
    velocity of up to 0.1 m/s leaking in. The sensors are at most 2 m fore or aft and 0.2 m
    abeam of the body origin, so roll and pitch rates under 0.03 rad/s move them up or down
    at under 0.07 m/s; the body origin heaves within a centimetre (PASHR), at periods of
    seconds, so at well under 0.03 m/s."""
    phi, theta = math.radians(roll_deg), math.radians(pitch_deg)
    leak = 1 - math.cos(phi) * math.cos(theta) + abs(math.sin(phi) * math.sin(theta))
    return speed * leak + 0.1 * (abs(math.sin(phi)) + abs(math.sin(theta)))


def sim_time(msg) -> float:
    stamp = datetime.combine(START.date(), msg.timestamp)
    return (stamp - START).total_seconds()


def grouped(client, first: str) -> list[dict]:
    """A device's sentences in epochs, each starting at a `first`; MWV by its reference
    (MWVR relative, MWVT true), PASHR as pynmea2 names it (ASHRATT)."""
    out: list[dict] = []
    for _, msg in client.sentences():
        name = getattr(msg, "sentence_type", None) or type(msg).__name__
        if name == "MWV":
            name += msg.reference
        if name == first:
            out.append({})
        if out:
            out[-1][name] = msg
    return out


def device(bench: dict, name: str) -> dict:
    return next(d for d in bench["device"] if d["name"] == name)


@pytest.fixture
def running(tmp_path):
    udp = UdpClient().start()
    tcp_port = free_tcp_port()
    path = tmp_path / "bench.toml"
    path.write_text(BENCH.format(run_dir=tmp_path / "run", udp_port=udp.port, tcp_port=tcp_port))
    daemon = Daemon(str(path), tmp=tmp_path)
    clients = {
        "gps": PtyClient(tmp_path / "run" / "gps").start(),
        "wind": PtyClient(tmp_path / "run" / "wind").start(),
        "speed": PtyClient(tmp_path / "run" / "speed").start(),
        "heading": TcpClient(tcp_port).start(),
        "heading2": TcpClient(tcp_port).start(),
        "udp": udp,
    }
    yield daemon, clients, path
    for c in clients.values():
        c.close()
    if daemon.proc.poll() is None:
        daemon.proc.kill()


# Bounds on the vessel's motion that the checks below rely on, each checked on the run's own
# output (so a run that breaks one fails, rather than passing on a wrong premise): A_MAX on the
# antenna's horizontal acceleration, J_MAX on its jerk, RDOT_MAX on the yaw acceleration.
# Odin's jets spin up from 400 to the commanded 1200 rpm with a 0.4 s time constant
# (profiles/odin.toml): the thrust of both, 2 k n^2 each, rises by at most
# 2 * 2k * 600 rpm * (600 rpm / 0.4 s) = 9 kN/s on 6.5 t (mass and surge added mass), 1.4 m/s^3,
# towards 7.2 kN, 1.1 m/s^2; A_MAX and J_MAX allow about twice that for the turn and the roll.
# The turn-in reaches about 4.5 deg/s^2 in ROT; RDOT_MAX allows a third more. They only bound
# what a trapezoidal rule misses: 3 mm of position and 0.01 deg of heading here.
A_MAX = 2.0  # m/s^2
J_MAX = 3.0  # m/s^3
RDOT_MAX = 6.0  # deg/s^2
# What the body rates worked out from PASHR's roll and pitch may be off by (the norm of the
# error of (p, q, r), rad/s): the attitude is printed to 0.01 deg, so a central difference over
# 0.2 s is within 0.05 deg/s (8.7e-4 rad/s) from the rounding, plus (h^2/6) times the roll's
# third derivative: roll rates under 2 deg/s at a roll period of 2 s or more make that under
# 20 deg/s^3, 6e-4 rad/s. Both p and q: sqrt(2) * 1.5e-3 < 2.2e-3. ROT's 0.1 deg/min adds 1e-5.
OMEGA_ERR = 2.2e-3


def test_sensors_agree_with_the_simulated_vessel(running):
    """Each sensor against physics worked out from the other sensors' output and the bench.

    No oracle here runs hild's code: positions are differenced and velocities integrated,
    lever arms and vectors added, with formulas written out in this file. Every tolerance is
    the sum of the worst cases of what goes into the comparison: a printed value is within
    half its last digit of the one it was printed from, and where a derivative or an integral
    is taken from samples, what the samples can miss is bounded by the motion bounds above.
    """
    daemon, clients, path = running
    assert str(path.parent / "run" / "gps") in daemon.banner
    clients["gps"].write(b"$ECAPB,A,A,0.10,L,N,V,V,011,M,DEST,011,M,011,M*00\r\n")
    time.sleep(6.0)
    summary = daemon.stop()
    for c in clients.values():
        c.close()
    # Jitter and overruns are measured by bench/bench_daemon.py, not asserted here.
    assert summary["reason"] == "SIGTERM" and summary["ticks"] == round(summary["t"] * 100)
    assert summary["received_lines"] == 1
    check_sensors(tomllib.loads(path.read_text()), clients)


def check_sensors(bench: dict, clients: dict) -> None:
    """The checks of test_sensors_agree_with_the_simulated_vessel on what the clients got."""
    # Rates (arrival times on this machine's clock) within 2 %.
    gga = clients["gps"].sentences("GGA")
    assert len(gga) > 40
    assert rate_hz([t for t, _ in gga]) == pytest.approx(10.0, rel=0.02)
    hdt_tcp = clients["heading"].sentences("HDT")
    assert rate_hz([t for t, _ in hdt_tcp]) == pytest.approx(10.0, rel=0.02)
    assert len(clients["heading2"].sentences("HDT")) >= len(hdt_tcp) - 2
    mwv = [m for m in clients["wind"].sentences("MWV") if m[1].reference == "R"]
    assert rate_hz([t for t, _ in mwv]) == pytest.approx(2.0, rel=0.02)
    vhw = clients["speed"].sentences("VHW")
    assert rate_hz([t for t, _ in vhw]) == pytest.approx(1.0, rel=0.02)

    # Every sentence on the pty also went out on UDP, one datagram each.
    udp_gga = clients["udp"].sentences("GGA")
    assert {m.timestamp for _, m in gga} <= {m.timestamp for _, m in udp_gga}

    # --- GPS: an epoch every h = 0.1 s from t = 0 (the pty keeps what was sent before the
    # client opened it), its sentences back to back, in order, about one fix.
    h = 0.1
    epochs = clients["gps"].epochs()
    assert len(epochs) == len(gga)
    for epoch in epochs:
        assert list(epoch) == ["GGA", "RMC", "VTG", "ZDA", "HDT"]
        fix, rmc, vtg = epoch["GGA"], epoch["RMC"], epoch["VTG"]
        assert rmc.timestamp == epoch["ZDA"].timestamp == fix.timestamp
        assert (rmc.lat, rmc.lat_dir, rmc.lon, rmc.lon_dir) == (
            fix.lat,
            fix.lat_dir,
            fix.lon,
            fix.lon_dir,
        )
        assert vtg.true_track == rmc.true_course
        assert float(vtg.spd_over_grnd_kts) == rmc.spd_over_grnd
        # km/h from the same speed: each printed to 0.01, so within 0.005 * 1.852 + 0.005.
        kmh_error = vtg.spd_over_grnd_kmph - rmc.spd_over_grnd * KMH_PER_KN
        assert abs(kmh_error) <= 0.005 * KMH_PER_KN + 0.005 + EPS
    t = np.array([sim_time(e["GGA"]) for e in epochs])
    assert t[0] == 0.0 and np.allclose(np.diff(t), h, rtol=0, atol=1e-6)
    # Positions in metres from the origin, by the WGS-84 radii at the origin (over the tens of
    # metres travelled the parallel's radius changes by 5 parts in a million, under 0.1 mm).
    # GGA prints 1e-5 minutes: a fix is within half of that, 9.3 mm north and 4.7 mm east here.
    lat0, lon0 = bench["origin"]["latitude"], bench["origin"]["longitude"]
    per_min_n, per_min_e = metres_per_minute(lat0)
    half_n, half_e = 0.5e-5 * per_min_n, 0.5e-5 * per_min_e
    north = np.array([arc_minutes(e["GGA"].lat, e["GGA"].lat_dir) for e in epochs])
    north = (north - 60 * lat0) * per_min_n
    east = np.array([arc_minutes(e["GGA"].lon, e["GGA"].lon_dir) for e in epochs])
    east = (east - 60 * lon0) * per_min_e
    # Velocity over ground from RMC. SOG is printed to 0.01 kn and COG to 0.1 deg, so each
    # component of the velocity is within e_v of the one printed from.
    sog = np.array([e["RMC"].spd_over_grnd for e in epochs]) * MS_PER_KN
    cog = np.radians([e["RMC"].true_course for e in epochs])
    v = np.column_stack([sog * np.cos(cog), sog * np.sin(cog)])
    e_v = 0.005 * MS_PER_KN + sog * math.radians(0.05)
    hdt = np.array([float(e["HDT"].heading) for e in epochs])

    # At t = 0 the vessel is as the bench puts it: the body origin at the origin, heading
    # 30 deg, upright, surging at 2 m/s over ground and not turning. The antenna is at its
    # lever arm turned by the heading, moving with the body origin.
    vessel = bench["vessel"]
    arm = np.array(device(bench, "gps")["position"])
    psi0 = math.radians(vessel["heading_deg"])
    n0 = arm[0] * math.cos(psi0) - arm[1] * math.sin(psi0)
    e0 = arm[0] * math.sin(psi0) + arm[1] * math.cos(psi0)
    assert abs(north[0] - n0) <= half_n + EPS and abs(east[0] - e0) <= half_e + EPS
    assert abs(epochs[0]["GGA"].altitude - -arm[2]) <= 0.05 + EPS  # 0.1 m, geoid separation 0
    assert abs(sog[0] - vessel["speed"]) <= 0.005 * MS_PER_KN + EPS
    assert abs(wrap180(math.degrees(cog[0]) - vessel["heading_deg"])) <= 0.05 + EPS
    assert abs(wrap180(hdt[0] - vessel["heading_deg"])) <= 0.005 + EPS
    # It really speeds up and turns (nozzles at 8 deg), so the checks below mean something.
    assert sog[-1] - sog[0] > 1.0 and wrap180(hdt[-1] - hdt[0]) > 20.0

    # The motion bounds hold: RMC's velocity changes by no more than A_MAX allows between
    # epochs (the mean acceleration over one, plus the rounding of both ends and what the
    # jerk adds to the peak), and is smooth: its second difference is h^2 times the jerk, and
    # at most h^2 J_MAX plus the rounding of the three velocities.
    step_accel = np.abs(np.diff(v, axis=0)).max() / h
    assert step_accel + 2 * e_v.max() / h + J_MAX * h / 2 <= A_MAX
    second = np.abs(v[2:] - 2 * v[1:-1] + v[:-2])
    rounding = (e_v[2:] + 2 * e_v[1:-1] + e_v[:-2])[:, None]
    assert (second <= h * h * J_MAX + rounding + EPS).all(), second.max()

    # Velocity against position: the antenna's displacement between two fixes is the integral
    # of its velocity, here by the trapezoidal rule over the RMC velocities in between. The
    # rule misses (h^2/12)(a(t_b) - a(t_a)) (to leading order; the next term is h^4/720 times
    # the change of the third derivative), at most h^2 A_MAX / 6 = 3 mm; the velocities are
    # within e_v each, and each fix within half its last digit.
    def displacement_agrees(a: int, b: int) -> None:
        w = np.full(b - a + 1, h)
        w[[0, -1]] = h / 2
        common = w @ e_v[a : b + 1] + h * h * A_MAX / 6
        d_north = north[b] - north[a] - w @ v[a : b + 1, 0]
        d_east = east[b] - east[a] - w @ v[a : b + 1, 1]
        assert abs(d_north) <= 2 * half_n + common + EPS, (a, b, d_north, 2 * half_n + common)
        assert abs(d_east) <= 2 * half_e + common + EPS, (a, b, d_east, 2 * half_e + common)

    for a in range(len(t) - 10):  # every second: the mean velocity to within about 2.5 cm/s
        displacement_agrees(a, a + 10)
    displacement_agrees(0, len(t) - 1)  # the whole run: to within about 1 cm/s

    # --- The heading sensor (TCP, 10 Hz): HDT, THS, ROT, PASHR, keyed by PASHR's time.
    heading = {}
    for epoch in grouped(clients["heading"], "HDT"):
        if "ASHRATT" in epoch:  # (the last may have been cut off by the stop)
            assert list(epoch) == ["HDT", "THS", "ROT", "ASHRATT"]
            heading[round(sim_time(epoch["ASHRATT"]) / h)] = epoch
    assert len(heading) >= len(epochs) - 10  # the TCP clients connect within a second
    # The compass and the GPS read the heading at the same tick: the same digits.
    for k, epoch in heading.items():
        if k < len(epochs):
            values = (
                float(epoch["HDT"].heading),
                epoch["THS"].heading,
                epoch["ASHRATT"].true_heading,
            )
            assert values == (hdt[k],) * 3, (k, values, hdt[k])
    # ROT [deg/min] is the heading's rate: the heading turned in 1 s is its trapezoidal
    # integral. HDT is printed to 0.01 deg (0.005 at each end), ROT to 0.1 deg/min; the rule
    # misses (h^2/12)(psi''(t_b) - psi''(t_a)), at most h^2 RDOT_MAX / 6 = 0.01 deg.
    rot = {k: float(e["ROT"].rate_of_turn) / 60.0 for k, e in heading.items()}  # deg/s
    # (the premise: the mean yaw acceleration over a step, plus ROT's rounding at both ends,
    # plus what the yaw jerk, from second differences and their rounding, adds to the peak)
    accel = max(abs(rot[k + 1] - rot[k]) / h for k in rot if k + 1 in rot) + 0.1 / 60 / h
    jerk = (
        max(
            abs(rot[k + 1] - 2 * rot[k] + rot[k - 1]) / h**2
            for k in rot
            if k - 1 in rot and k + 1 in rot
        )
        + 0.2 / 60 / h**2
    )
    assert accel + jerk * h / 2 <= RDOT_MAX
    windows = 0
    for a in heading:
        if all(a + j in heading for j in range(11)):
            w = np.full(11, h)
            w[[0, -1]] = h / 2
            turned = wrap180(
                heading[a + 10]["ASHRATT"].true_heading - heading[a]["ASHRATT"].true_heading
            )
            integral = w @ [rot[a + j] for j in range(11)]
            tolerance = 0.01 + w.sum() * 0.05 / 60.0 + h * h * RDOT_MAX / 6
            assert abs(turned - integral) <= tolerance + EPS, (a, turned, integral)
            windows += 1
    assert windows >= len(epochs) - 20

    def attitude(k: int) -> tuple[float, float, float]:
        """Roll and pitch [deg] and heave [m] at epoch k: PASHR's, or the bench's at t = 0."""
        if k == 0:
            return 0.0, 0.0, 0.0
        pashr = heading[k]["ASHRATT"]
        return pashr.roll, pashr.pitch, pashr.heave

    def body_rates(k: int) -> np.ndarray | None:
        """(p, q, r) [rad/s] at epoch k: the Euler angles' rates (roll and pitch differenced
        over k - 1 .. k + 1, psi' from ROT) through the inverse of the thesis' eq. 2.4:
        p = phi' - psi' sin(theta), q = theta' cos(phi) + psi' cos(theta) sin(phi),
        r = -theta' sin(phi) + psi' cos(theta) cos(phi). None without the epochs around k."""
        if k == 0:
            return np.zeros(3)  # the bench starts the vessel with no rotation
        if not all(j in heading for j in (k - 1, k, k + 1)):
            return None
        before, now, after = (heading[j]["ASHRATT"] for j in (k - 1, k, k + 1))
        phi, theta = math.radians(now.roll), math.radians(now.pitch)
        d_phi = math.radians(after.roll - before.roll) / (2 * h)
        d_theta = math.radians(after.pitch - before.pitch) / (2 * h)
        d_psi = math.radians(rot[k])
        return np.array(
            [
                d_phi - d_psi * math.sin(theta),
                d_theta * math.cos(phi) + d_psi * math.cos(theta) * math.sin(phi),
                -d_theta * math.sin(phi) + d_psi * math.cos(theta) * math.cos(phi),
            ]
        )

    # What tilt_error, OMEGA_ERR and the anemometer's height assume: roll and pitch within
    # 2 deg, roll and pitch rates under 0.03 rad/s, heave within a centimetre.
    for k in heading:
        roll, pitch, heave = attitude(k)
        assert abs(roll) < 2.0 and abs(pitch) < 2.0 and abs(heave) <= 0.01, (k, roll, pitch)
        rates = body_rates(k)
        assert rates is None or (np.abs(rates[:2]) < 0.03).all(), (k, rates)

    # --- The anemometer (2 Hz): MWV R, MWV T, MWD. MWV has no time field: match by order.
    # The anemometer samples at t = 0, 0.5, 1.0, ... and the pty keeps what was sent before
    # the client opened it, so none is missing.
    weather = bench["weather"]
    wind = device(bench, "wind")
    lever = np.array(wind["position"]) - arm  # from the antenna to the anemometer
    wind_epochs = grouped(clients["wind"], "MWVR")
    assert len(wind_epochs) == len(mwv)
    checked = 0
    for i, epoch in enumerate(wind_epochs):
        assert list(epoch) == ["MWVR", "MWVT", "MWD"]
        k = 5 * i  # the GPS epoch at the same time
        rates = body_rates(k) if k < len(epochs) else None
        if rates is None:
            continue
        roll, pitch, heave = attitude(k)
        psi = hdt[k]
        mwd, true, relative = epoch["MWD"], epoch["MWVT"], epoch["MWVR"]
        # The true wind is the bench's: from where it says, at the log profile's speed at the
        # sensor's height. That height is the mast's 3 m plus the heave (PASHR, at the body
        # origin, printed to 1 cm), give or take what roll and pitch do to a point 2 m aft
        # and 3 m up: |2 sin(theta)| + 3 (1 - cos(phi) cos(theta)).
        height = -wind["position"][2] + heave
        dz = 0.005 + abs(2 * math.sin(math.radians(pitch)))
        dz += 3 * (1 - math.cos(math.radians(roll)) * math.cos(math.radians(pitch)))
        expected = wind_at_height(weather["wind_speed"], height)
        slack = expected - wind_at_height(weather["wind_speed"], height - dz)  # the steeper side
        assert abs(wrap180(float(mwd.direction_true) - weather["wind_from_deg"])) <= 0.05 + EPS
        assert abs(float(mwd.wind_speed_knots) * MS_PER_KN - expected) <= (
            0.05 * MS_PER_KN + slack + EPS
        )
        assert abs(float(mwd.wind_speed_meters) - expected) <= 0.05 + slack + EPS
        # MWV T: the same wind, its angle from the bow (HDT to 0.01 deg, the angle to 0.1).
        assert abs(wrap180(float(true.wind_angle) + psi - weather["wind_from_deg"])) <= (
            0.05 + 0.005 + EPS
        )
        assert abs(float(true.wind_speed) - expected) <= 0.05 + slack + EPS
        # MWV R: the air's velocity relative to the moving sensor, in the hull's axes: the true
        # wind (MWD's speed in knots, the finer field, and its direction) less the sensor's
        # velocity over ground, which is the antenna's (RMC) plus omega x (the lever arm from
        # the antenna to the sensor). Where the wind comes from is opposite to where the air
        # goes, for both the true and the relative wind.
        speed_true = float(mwd.wind_speed_knots) * MS_PER_KN
        from_true = math.radians(float(mwd.direction_true))
        air_true = to_body(
            -speed_true * math.cos(from_true), -speed_true * math.sin(from_true), psi
        )
        sensor = to_body(v[k, 0], v[k, 1], psi) + np.cross(rates, lever)[:2]
        air = air_true - sensor
        speed_rel = float(relative.wind_speed)
        angle_rel = math.radians(float(relative.wind_angle))
        seen = -speed_rel * np.array([math.cos(angle_rel), math.sin(angle_rel)])
        tolerance = (
            0.05
            + speed_rel * math.radians(0.05)  # MWV R: 0.1 m/s, 0.1 deg
            + 0.05 * MS_PER_KN
            + speed_true * math.radians(0.05)  # MWD: 0.1 kn, 0.1 deg
            + e_v[k]  # RMC
            + np.linalg.norm(air) * math.radians(0.005)  # HDT turns both vectors
            + OMEGA_ERR * np.linalg.norm(lever)
            + tilt_error(np.linalg.norm(air), roll, pitch)
        )
        assert np.linalg.norm(seen - air) <= tolerance, (i, seen, air, tolerance)
        checked += 1
    assert checked >= len(wind_epochs) - 2

    # --- The speed log (1 Hz, t = 0, 1, 2, ...): VHW and VBW, matched by order as MWV is.
    # Over ground (VBW), the transducer moves as the antenna does (RMC) plus omega x (the lever
    # arm between them), in the hull's axes; through the water (VBW, VHW), less the bench's
    # current. VBW and VHW print knots to 0.01.
    log = device(bench, "speed")
    lever = np.array(log["position"]) - arm
    to = math.radians(weather["current_to_deg"])
    current = weather["current_speed"] * np.array([math.cos(to), math.sin(to)])
    log_epochs = grouped(clients["speed"], "VHW")
    assert len(log_epochs) == len(vhw)
    checked = 0
    for i, epoch in enumerate(log_epochs):
        assert list(epoch) == ["VHW", "VBW"]
        vbw, vhw_i = epoch["VBW"], epoch["VHW"]
        # VHW's speed through water is VBW's longitudinal one; km/h as VTG's.
        assert vhw_i.water_speed_knots == vbw.lon_water_spd and vhw_i.heading_true is None
        kmh_error = float(vhw_i.water_speed_km) - float(vhw_i.water_speed_knots) * KMH_PER_KN
        assert abs(kmh_error) <= 0.005 * KMH_PER_KN + 0.005 + EPS
        k = 10 * i
        rates = body_rates(k) if k < len(epochs) else None
        if rates is None:
            continue
        roll, pitch, _ = attitude(k)
        psi = hdt[k]
        ground = to_body(v[k, 0], v[k, 1], psi) + np.cross(rates, lever)[:2]
        water = ground - to_body(current[0], current[1], psi)
        tolerance = (
            0.005 * MS_PER_KN  # VBW
            + e_v[k]  # RMC
            + np.linalg.norm(ground) * math.radians(0.005)  # HDT
            + OMEGA_ERR * np.linalg.norm(lever)
            + tilt_error(np.linalg.norm(ground) + np.linalg.norm(current), roll, pitch)
        )
        seen_ground = np.array([float(vbw.lon_grnd_spd), float(vbw.trans_grnd_spd)]) * MS_PER_KN
        seen_water = np.array([float(vbw.lon_water_spd), float(vbw.trans_water_spd)]) * MS_PER_KN
        assert (np.abs(seen_ground - ground) <= tolerance).all(), (i, seen_ground, ground)
        water_tolerance = tolerance + np.linalg.norm(current) * math.radians(0.005)
        assert (np.abs(seen_water - water) <= water_tolerance).all(), (i, seen_water, water)
        checked += 1
    assert checked >= len(log_epochs) - 1


def default_bench_on_free_ports(tmp_path, udp_port: int, command_port: int) -> str:
    """The built-in default bench with its UDP ports moved to free ones: a test never takes
    10110 or 10112, which the user's own hild or chart plotter may hold."""
    text = resolve_bench(None).read_text()
    assert "udp://127.0.0.1:10110" in text and "udp://127.0.0.1:10112?listen=1" in text
    text = on_free_ports(text, {10110: udp_port, 10112: command_port})
    path = tmp_path / "default.toml"
    path.write_text(text)
    return str(path)


def test_default_run_prints_where_to_connect(tmp_path):
    """`hild run` with no bench: Odin off Horten, ptys named gps, wind, speed and jets, UDP."""
    assert resolve_bench(None).name == "default.toml"
    udp = UdpClient().start()
    commands = free_udp_port()
    bench = default_bench_on_free_ports(tmp_path, udp.port, commands)
    daemon = Daemon(bench, "--run-dir", str(tmp_path / "run"), tmp=tmp_path)
    try:
        for name in ("gps", "wind", "speed", "jets"):
            link = tmp_path / "run" / name
            assert link.is_symlink() and str(link) in daemon.banner
            assert os.path.realpath(link).startswith("/dev/pts/")
        assert f"udp 127.0.0.1:{udp.port}" in daemon.banner
        assert f"udp 127.0.0.1:{commands} (listening" in daemon.banner
        drive = daemon.banner.split("Drive jets", 1)[1]  # (test_quickstart.py runs them)
        assert f"{commands}" in drive and str(tmp_path / "run" / "jets") in drive
        assert "59.41000 N 10.48000 E" in daemon.banner
        client = PtyClient(tmp_path / "run" / "gps").start()
        time.sleep(2.5)
        client.close()
        gga = [m for _, m in client.sentences("GGA")]
        assert gga and gga[-1].latitude == pytest.approx(59.41, abs=1e-4)
        assert gga[-1].longitude == pytest.approx(10.48, abs=1e-4)
        kinds = {type(m).__name__ for _, m in udp.sentences()}
        assert {"GGA", "RMC", "VTG", "ZDA", "HDT", "MWV", "MWD", "VHW", "VBW"} <= kinds
        # The wall clock: ZDA's date and time are within a couple of seconds of now.
        zda = [m for _, m in client.sentences("ZDA")][-1]
        assert abs(zda.datetime.timestamp() - time.time()) < 3.0
    finally:
        udp.close()
        summary = daemon.stop()
    assert summary["reason"] == "SIGTERM"
    assert not (tmp_path / "run" / "gps").exists()  # symlinks removed on shutdown


def test_a_serial_device_that_disappears_is_reopened(tmp_path):
    link = tmp_path / "ttyUSB0"

    def plug():
        master, slave = os.openpty()
        tty.setraw(slave)
        if link.is_symlink():
            link.unlink()
        link.symlink_to(os.ttyname(slave))
        os.set_blocking(master, False)
        return master, slave

    def read_all(fd, seconds):
        data, end = b"", time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                data += os.read(fd, 4096)
            except BlockingIOError:
                time.sleep(0.05)
        return data

    master, slave = plug()
    bench = tmp_path / "bench.toml"
    bench.write_text(
        textwrap.dedent(f"""
        [bench]
        run_dir = "{tmp_path / "run"}"
        [vessel]
        profile = "otter"
        [weather]
        wind_speed = 8.0
        [[device]]
        type = "heading"
        rate_hz = 20
        port = "serial://{link}?baud=115200"
    """)
    )
    daemon = Daemon(str(bench), tmp=tmp_path)
    try:
        # the banner: the weather as the bench moved it, the serial line's speed said once
        assert "otter in calm weather (wind speed set by the bench) at" in daemon.banner
        assert "Weather: wind 8 m/s from 0 deg" in daemon.banner
        assert f"{link} at 115200 baud (connected)" in daemon.banner
        assert daemon.banner.count("115200 baud") == 1, daemon.banner
        # The wall-clock start waits for the next whole second before the first tick.
        assert b"HEHDT" in read_all(master, 2.0)
        os.close(master)  # the USB adapter is pulled out
        os.close(slave)
        link.unlink()
        time.sleep(1.0)
        master, slave = plug()  # ... and plugged back in
        assert b"HEHDT" in read_all(master, 4.0)
    finally:
        summary = daemon.stop()
        os.close(master)
        os.close(slave)
    port = summary["ports"][f"serial://{link}?baud=115200"]
    assert port["reopens"] >= 1


def test_duration_and_time_scale(tmp_path):
    """--time-scale 10 runs 20 simulated seconds in 2 wall seconds of loop."""
    text = resolve_bench("example").read_text()
    assert "udp://127.0.0.1:10110" in text and "tcp://127.0.0.1:10111" in text
    example = tmp_path / "example.toml"  # the built-in example, off the well-known ports
    example.write_text(
        text.replace("127.0.0.1:10110", f"127.0.0.1:{free_udp_port()}").replace(
            "127.0.0.1:10111", f"127.0.0.1:{free_tcp_port()}"
        )
    )
    daemon = Daemon(
        str(example),
        "--run-dir",
        str(tmp_path / "run"),
        "--time-scale",
        "10",
        "--duration",
        "20",
        tmp=tmp_path,
    )
    summary = daemon.wait(60)
    assert summary["reason"] == "duration" and summary["t"] == pytest.approx(20.0)
    assert summary["ticks"] == 2000
    assert summary["devices"]["gps"]["epochs"] == 201
    assert [e["time_scale"] for e in daemon.events("run.start")] == [10.0]
    # the loop's own wall time: absolute deadlines are never met early, so never under 2 s (a
    # scale of 20 would give 1 s); how late a busy machine makes it is bench/'s to measure
    assert summary["loop_wall_s"] >= 1.99, summary["loop_wall_s"]


def test_a_time_scale_or_ticks_the_machine_cannot_hold_are_said(tmp_path):
    """2000 steps per simulated second at 1000 times real time is two million ticks a second:
    no Python loop holds it (about 100x is reached here), and the run says so in a warning
    with the scale it reached, rather than in an info line; and, once, that its ticks overran
    (loop.overruns)."""
    bench = tmp_path / "b.toml"
    bench.write_text('[bench]\nname = "b"\n[vessel]\nprofile = "otter"\n')
    daemon = Daemon(
        str(bench),
        "--rate",
        "2000",
        "--time-scale",
        "1000",
        "--duration",
        "20",
        "--stats-interval",
        "5",
        tmp=tmp_path,
    )
    summary = daemon.wait(60)
    assert summary["reason"] == "duration"
    (warning, *_) = daemon.events("loop.time_scale_not_held")
    assert warning["level"] == "warning" and warning["wanted"] == 1000.0
    assert 0.0 < warning["achieved"] < 900.0, warning
    # its ticks came late in every window (a wall period of 0.5 us), and that is said once,
    # with the share and what helps; loop.stats counts each window's
    windows = daemon.events("loop.stats")
    assert len(windows) == 4 and all(w["overruns"] > 0.01 * w["ticks"] for w in windows)
    (overruns,) = daemon.events("loop.overruns")
    assert overruns["level"] == "warning" and overruns["ticks"] == windows[0]["ticks"]
    assert overruns["share"] == round(windows[0]["overruns"] / windows[0]["ticks"], 3)
    for helps in ("fewer devices", "a lower --rate or --time-scale", "a quieter machine"):
        assert helps in overruns["hint"]


def test_a_port_that_cannot_be_opened_is_named(tmp_path):
    import socket
    import subprocess
    import sys

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        bench = tmp_path / "bench.toml"
        bench.write_text(
            textwrap.dedent(f"""
            [vessel]
            profile = "otter"
            [[device]]
            type = "heading"
            port = "tcp://127.0.0.1:{port}"
        """)
        )
        result = subprocess.run(
            [sys.executable, "-m", "hild.cli", "run", str(bench)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 2  # an address in use is the bench's to fix
    assert f"hild: error: device heading, port tcp://127.0.0.1:{port}" in result.stderr
    # (refused before anything compiles, by the probe of the bench's ports: a device's single
    # `port` key is probed as its `ports` are)
    assert f"cannot bind 127.0.0.1:{port}" in result.stderr, result.stderr
    assert "address already in use" in result.stderr.lower() and "[Errno" not in result.stderr


def test_ports_are_keyed_by_their_whole_url_options_included(tmp_path):
    """Reproduces: URLs that differ only in ?ttl= or ?bind= were merged onto one port (keyed by
    scheme, host, port and path), so one device's options silently applied to the other's."""
    import asyncio

    from hild.bench import load_bench
    from hild.drivers.realtime import Daemon as InProcessDaemon

    target, bind_a, bind_b = free_udp_port(), free_udp_port(), free_udp_port()
    urls = {
        "gps": f"udp://127.0.0.1:{target}?ttl=1",
        "wind": f"udp://127.0.0.1:{target}?ttl=2",
        "speed": f"udp://127.0.0.1:{target}?bind=127.0.0.1:{bind_a}",
        "heading": f"udp://127.0.0.1:{target}?bind=127.0.0.1:{bind_b}",
        "gps2": f"udp://127.0.0.1:{target}?ttl=1",  # the very same URL as gps: shared
    }
    types = {
        "gps": "gps",
        "wind": "anemometer",
        "speed": "speed-log",
        "heading": "heading",
        "gps2": "gps",
    }
    bench = tmp_path / "bench.toml"
    bench.write_text(
        '[vessel]\nprofile = "otter"\n'
        + "".join(
            f'[[device]]\nname = "{name}"\ntype = "{types[name]}"\nport = "{url}"\n'
            for name, url in urls.items()
        )
    )
    daemon = InProcessDaemon(load_bench(str(bench)))

    async def opened() -> dict:
        await daemon.open()  # no clock, no ticks: only the ports are wanted
        try:
            return {rt.device.config.name: rt.ports[0] for rt in daemon.world.devices}
        finally:
            await daemon.close()

    ports = asyncio.run(opened())
    assert len(daemon.world.ports) == 4
    assert ports["gps"] is ports["gps2"]
    assert len({id(ports[n]) for n in ("gps", "wind", "speed", "heading")}) == 4
    assert {n: port.spec.url for n, port in ports.items()} == urls
    assert ports["speed"].local_address[1] == bind_a
    assert ports["heading"].local_address[1] == bind_b


def test_the_first_epoch_goes_out_at_its_whole_second_of_utc_not_before(tmp_path):
    """On the wall clock, step 0 is the next whole second of UTC: its epoch (the GPS's GGA
    stamped hhmmss.00, as a receiver's first fix) goes out at that second and never before it
    (the tick thread waits for it on its own clock, then sends the epoch and ticks on)."""
    client = UdpClient().start()
    try:
        bench = tmp_path / "b.toml"
        bench.write_text(
            f'[bench]\nname = "b"\nrun_dir = "{tmp_path / "run"}"\n[vessel]\nprofile = "otter"\n'
            f'[[device]]\ntype = "gps"\nrate_hz = 1\nport = "udp://127.0.0.1:{client.port}"\n'
        )
        wall_minus_monotonic = time.time() - time.monotonic()
        daemon = Daemon(str(bench), "--duration", "1.5", tmp=tmp_path)
        summary = daemon.wait(60)
        deadline = time.monotonic() + 5.0
        while len(client.sentences("GGA")) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        client.close()
    assert summary["reason"] == "duration" and summary["devices"]["gps"]["epochs"] == 2
    (start,) = daemon.events("run.start")
    start_utc = datetime.fromisoformat(start["utc"])
    assert start_utc.microsecond == 0  # a whole second
    (arrived, first), _ = client.sentences("GGA")[:2]
    assert first.timestamp == start_utc.time().replace(tzinfo=UTC)
    # arrival against the start second on the same machine's clocks (their offset is read a
    # few microseconds apart here and in the daemon: 1 ms covers it); a first epoch sent when
    # the run began, not at its second, would arrive up to a second early
    assert arrived + wall_minus_monotonic >= start_utc.timestamp() - 1e-3
