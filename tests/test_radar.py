"""The ARPA radar (hild/sensors/radar.py) driven in simulated time.

Targets move on straight lines computed here, not by the traffic kernel. Every TTM is parsed
by pynmea2 with its checksum checked; its fields are compared with what is computed here by
other means: the antenna's position from a yaw rotation written out, the range and bearing
from plain NED differences, the CPA and its time by sampling both straight tracks every
0.05 s (no closed form). Tolerances are half the last printed digit (0.005 nm, 0.05 deg,
0.05 kn, 0.05 min) plus what the sampling leaves (0.025 s of TCPA).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pynmea2
import pytest

from hild.devices.catalog import load_device_type
from hild.geodesy import Origin
from hild.nmea import sentences as s
from hild.sensors.device import DeviceConfig
from hild.sensors.faults import FaultSpec
from hild.sensors.noise import NoiseSpec
from hild.sensors.radar import NM, Radar
from hild.sensors.truth import Truth
from hild.traffic.layout import T_EAST, T_HEADING, T_NORTH, T_SIZE, T_SPEED
from hild.traffic.targets import KNOT, Course, Identity, Target
from hild.traffic.view import TrafficView

ORIGIN = Origin(59.41, 10.48)
START = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
RATE_HZ = 0.4
LEVER = (2.0, 1.0, -4.0)  # antenna 2 m forward, 1 m to starboard, 4 m up


@dataclass(frozen=True)
class Line:
    """A straight track: from (north, east) at t = 0 on a course [deg] at a speed [kn]."""

    north: float
    east: float
    course_deg: float
    speed_kn: float

    def at(self, t):
        v = self.speed_kn * KNOT
        c = math.radians(self.course_deg)
        return self.north + v * t * math.cos(c), self.east + v * t * math.sin(c)


@dataclass(frozen=True)
class Mover:
    target: Target
    line: Line


def mover(name: str, north: float, east: float, course_deg: float, speed_kn: float) -> Mover:
    ident = Identity(
        mmsi=257000000 + len(name),
        name=f"MV {name.upper()} OF OSLO",
        to_bow=90,
        to_stern=20,
        to_port=10,
        to_starboard=10,
    )
    motion = Course(north, east, math.radians(course_deg), speed_kn * KNOT)
    return Mover(Target(name, ident, motion), Line(north, east, course_deg, speed_kn))


def device(seed=7, faults=(), noise=None, rate_hz=RATE_HZ, **settings) -> Radar:
    dtype = load_device_type("radar")  # devices/radar.toml's settings, overridden
    config = DeviceConfig(
        name="radar",
        type="radar",
        model="radar",
        talker="RA",
        rate_hz=rate_hz,
        baud=38400,
        sentences=("TTM",),
        lever_arm=LEVER,
        ports=(),
        faults=tuple(faults),
        noise=noise or {},
        settings={**dtype.settings, **settings},
    )
    return Radar(config, seed, ORIGIN)


def rotation_z(psi: float) -> np.ndarray:
    c, s_ = math.cos(psi), math.sin(psi)
    return np.array([[c, -s_, 0.0], [s_, c, 0.0], [0.0, 0.0, 1.0]])


@dataclass(frozen=True)
class Own:
    """The own ship on a straight line, heading = course (no drift), level."""

    course_deg: float = 30.0
    speed_kn: float = 8.0
    north: float = 0.0
    east: float = 0.0

    def line(self) -> Line:
        return Line(self.north, self.east, self.course_deg, self.speed_kn)

    def truth(self, t: float, movers: list[Mover], targets=None) -> Truth:
        n, e = self.line().at(t)
        psi = math.radians(self.course_deg)
        state = np.zeros((len(movers), T_SIZE))
        for i, m in enumerate(movers):
            state[i, T_NORTH], state[i, T_EAST] = m.line.at(t)
            state[i, T_HEADING] = math.radians(m.line.course_deg) % (2 * math.pi)
            state[i, T_SPEED] = m.line.speed_kn * KNOT
        return Truth(
            t=t,
            utc=START + timedelta(seconds=t),
            eta=np.array([n, e, 0.0, 0.0, 0.0, psi]),
            nu=np.array([self.speed_kn * KNOT, 0.0, 0.0, 0.0, 0.0, 0.0]),
            traffic=TrafficView(
                tuple(m.target for m in movers) if targets is None else targets, state
            ),
        )

    def antenna(self, t: float) -> tuple[float, float]:
        n, e = self.line().at(t)
        arm = rotation_z(math.radians(self.course_deg)) @ np.array(LEVER)
        return n + arm[0], e + arm[1]


def parsed(line: bytes) -> pynmea2.TTM:
    assert line.startswith(b"$RATTM,") and line.endswith(b"\r\n") and len(line) <= 82, line
    msg = pynmea2.parse(line.decode("ascii").strip(), check=True)
    assert isinstance(msg, pynmea2.TTM)
    return msg


def run(dev: Radar, movers: list[Mover], seconds: float, own: Own = Own(), t0: float = 0.0):
    """Sample ``dev`` at its rate: (t, TTM) of every line."""
    out = []
    for k in range(round(seconds * dev.config.rate_hz)):
        t = t0 + k / dev.config.rate_hz
        out += [(t, parsed(line)) for line in dev.sample(own.truth(t, movers))]
    return out


def cpa_by_sampling(own: Line, target: Line, t: float, span_s: float = 4 * 3600.0):
    """The closest approach of two straight tracks from ``t``: (distance [m], time from t [s]),
    the smallest of samples every 0.05 s over +-span."""
    tau = np.arange(-span_s, span_s, 0.05)
    on, oe = own.at(t + tau)
    tn, te = target.at(t + tau)
    d = np.hypot(tn - on, te - oe)
    i = int(np.argmin(d))
    return float(d[i]), float(tau[i])


# --- the fields, against an independent computation --------------------------------------------


def test_every_field_equals_the_geometry():
    own = Own(course_deg=30.0, speed_kn=8.0)
    movers = [
        mover("ahead", 4000.0, 2500.0, 210.0, 12.0),  # closing, nearly head-on
        mover("crossing", 1500.0, -3000.0, 90.0, 15.0),  # from port, crossing ahead
        mover("passed", -2500.0, -600.0, 200.0, 10.0),  # astern, drawing away: TCPA < 0
        mover("still", 3000.0, 8000.0, 0.0, 0.0),  # at anchor
    ]
    dev = device()
    lines = run(dev, movers, 60.0, own)
    by_number = {dev.tracks[m.target.name].number: m for m in movers}  # kept throughout
    for t, msg in lines:
        m = by_number[int(msg.target_number)]
        an, ae = own.antenna(t)
        tn, te = m.line.at(t)
        rng, brg = math.hypot(tn - an, te - ae), math.degrees(math.atan2(te - ae, tn - an))
        assert abs(float(msg.distance) - rng / NM) <= 0.005 + 1e-9
        assert angle_diff(float(msg.bearing), brg) <= 0.05 + 1e-9
        assert abs(float(msg.speed) - m.line.speed_kn) <= 0.05 + 1e-9
        if m.line.speed_kn:
            assert angle_diff(float(msg.cog), m.line.course_deg) <= 0.05 + 1e-9
        # the antenna moves with the own ship's velocity (no yaw rate: the body origin's)
        cpa, tcpa = cpa_by_sampling(
            Line(*own.antenna(0.0), own.course_deg, own.speed_kn), m.line, t
        )
        assert abs(float(msg.dist_cpa) - cpa / NM) <= 0.005 + 1e-6
        assert abs(float(msg.time_cpa) - tcpa / 60.0) <= 0.05 + 0.025 / 60 + 1e-9
        assert (msg.brg_ref, msg.cog_unit, msg.dist_unit, msg.status) == ("T", "T", "N", "T")
        assert (msg.name, msg.reference, msg.acquisition) == ("", "", "A")
        assert msg.timestamp == (START + timedelta(seconds=t)).timetz()
    assert len(lines) == 4 * 24  # every target, every 2.5 s
    passed = [msg for _, msg in run(device(), movers, 2.5, own) if float(msg.time_cpa) < 0]
    assert len(passed) == 1


def test_the_base_api_gives_the_nearest_track_as_its_ttm():
    own = Own()
    movers = [mover("far", 6000.0, 0.0, 90.0, 5.0), mover("near", 0.0, 2000.0, 180.0, 7.0)]
    dev = device()
    truth = own.truth(0.0, movers)
    assert all(math.isnan(v) for v in dev.measure(truth).values())  # nothing tracked yet
    lines = dev.sample(truth)
    nearest = min(lines, key=lambda line: float(parsed(line).distance))
    assert dev.encode(dev.measure(truth), truth.utc, True) == [nearest]


def number_of(dev: Radar, m: Mover) -> int:
    return dev.tracks[m.target.name].number


def angle_diff(a: float, b: float) -> float:
    return abs((a - b + 180.0) % 360.0 - 180.0)


def test_units_km_and_statute_miles_and_the_names_of_a_fused_arpa():
    own = Own(course_deg=0.0, speed_kn=0.0)
    m = mover("far", 5000.0, 0.0, 180.0, 10.0)  # 10 kn towards the own ship
    an, _ = own.antenna(0.0)
    for unit, metres in (("K", 1000.0), ("S", 1609.344)):
        (_, msg), *_ = run(device(units=unit, names=True), [m], 2.5, own)
        assert msg.dist_unit == unit
        assert abs(float(msg.distance) - (5000.0 - an) / metres) <= 0.005 + 1e-9
        assert abs(float(msg.speed) - 10.0 * 1852.0 / metres) <= 0.05 + 1e-9
        assert msg.name == "MV FAR O"  # "MV FAR OF OSLO" in the 8 characters left
    assert (
        82 - len(s.ttm("RA", 99, 999.99, 359.9, 999.9, 359.9, 999.99, -99.9, "N", "", "T", START))
        == s.TTM_NAME_CHARS
    )


# --- noise -------------------------------------------------------------------------------------


def test_noise_statistics_within_their_sampling_bounds():
    """White noise of 30 m and 1 deg on range and bearing, 2 deg and 0.5 m/s on the target's
    course and speed: over N = 4000 reports of a still geometry, the mean error is within
    5 sigma / sqrt(N) (plus half the rounding step: a constant true value rounds to one side),
    and the standard deviation within 8 % of sqrt(sigma^2 + step^2 / 12) (its own sampling
    error is 1 / sqrt(2N) = 1.1 %, so 7 of them)."""
    noise = {
        "range": NoiseSpec(white=30.0),
        "bearing": NoiseSpec(white=1.0),
        "course": NoiseSpec(white=2.0),
        "speed": NoiseSpec(white=0.5),
    }
    own = Own(course_deg=0.0, speed_kn=0.0)
    m = mover("still", 3000.0, 4000.0, 90.0, 10.0)
    dev = device(noise=noise, rate_hz=1.0)
    n = 4000
    errors = {"range": [], "bearing": [], "course": [], "speed": []}
    for k in range(n):
        (line,) = dev.sample(truth_at(own, m, k))
        msg = parsed(line)
        an, ae = own.antenna(0.0)
        errors["range"].append(float(msg.distance) * NM - math.hypot(3000.0 - an, 4000.0 - ae))
        brg = math.degrees(math.atan2(4000.0 - ae, 3000.0 - an))
        errors["bearing"].append((float(msg.bearing) - brg + 180.0) % 360.0 - 180.0)
        errors["course"].append((float(msg.cog) - 90.0 + 180.0) % 360.0 - 180.0)
        errors["speed"].append((float(msg.speed) - 10.0) * KNOT)
    steps = {"range": 0.01 * NM, "bearing": 0.1, "course": 0.1, "speed": 0.1 * KNOT}
    sigmas = {"range": 30.0, "bearing": 1.0, "course": 2.0, "speed": 0.5}
    for q, e in errors.items():
        e = np.array(e)
        sigma = math.hypot(sigmas[q], steps[q] / math.sqrt(12))
        assert abs(e.mean()) <= 5 * sigma / math.sqrt(n) + steps[q] / 2, q
        assert abs(e.std() / sigma - 1.0) <= 0.08, (q, e.std(), sigma)


def truth_at(own: Own, m: Mover, k: int) -> Truth:
    """The still geometry at t = k s (the target at its t = 0 place, for the noise's sake)."""
    truth = own.truth(0.0, [m])
    return Truth(
        t=float(k),
        utc=START + timedelta(seconds=k),
        eta=truth.eta,
        nu=truth.nu,
        traffic=truth.traffic,
    )


def test_cpa_is_computed_from_the_noisy_values():
    """A bias on bearing turns the relative position: the CPA of a target coming straight at
    the own ship grows from 0 to range x sin(bias), as an ARPA with a misaligned heading
    would report it."""
    own = Own(course_deg=0.0, speed_kn=0.0)
    an, ae = own.antenna(0.0)
    m = mover("collision", an + 6000.0, ae, 180.0, 12.0)
    (_, clean), *_ = run(device(), [m], 2.5, own)
    (_, biased), *_ = run(device(noise={"bearing": NoiseSpec(bias=5.0)}), [m], 2.5, own)
    assert float(clean.dist_cpa) == 0.0
    assert abs(float(biased.dist_cpa) - 6000.0 * math.sin(math.radians(5.0)) / NM) <= 0.006
    assert abs(float(biased.bearing) - 5.0) <= 0.05


# --- detection: range and the radar horizon -----------------------------------------------------


@pytest.mark.parametrize(
    ("target_height", "limit_nm"),
    [
        # 4 m antenna, 10 m target: 2.21 (2 + sqrt 10) = 11.41 nm, within the 12 nm range
        (10.0, 2.21 * (2.0 + math.sqrt(10.0))),
        # a 25 m target is seen to 15.47 nm: the 12 nm range cuts first
        (25.0, 12.0),
    ],
)
def test_targets_beyond_the_horizon_or_the_range_are_not_tracked(target_height, limit_nm):
    own = Own(course_deg=0.0, speed_kn=0.0)
    an, ae = own.antenna(0.0)
    inside = mover("inside", an + (limit_nm - 0.02) * NM, ae, 0.0, 0.0)
    outside = mover("outside", an, ae + (limit_nm + 0.02) * NM, 0.0, 0.0)
    lines = run(device(target_height_m=target_height), [inside, outside], 25.0, own)
    assert len(lines) == 10 and {float(msg.distance) for _, msg in lines} == {
        round(limit_nm - 0.02, 2)
    }
    # a higher antenna sees further: 9 m up (origin 5 m above the sea) is 2.21 (3 + sqrt 10)
    far = mover("far", an, ae + 12.5 * NM, 0.0, 0.0)
    assert not run(device(), [far], 2.5, own)
    assert run(device(origin_height_m=5.0, range_nm=20.0), [far], 2.5, own)


# --- target numbers ------------------------------------------------------------------------------


def test_numbers_are_kept_and_a_target_that_comes_back_gets_a_new_one():
    """Four targets in the 3 nm range from the start, numbered nearest first; the fourth is
    beyond it from 100 s to 150 s: reported lost once (L, its last values), then back under
    the next number, 5; the others keep theirs throughout."""
    own = Own(course_deg=0.0, speed_kn=0.0)
    an, ae = own.antenna(0.0)
    a, b, c = (
        mover("a", an + 1000.0, ae, 0.0, 0.0),
        mover("b", an + 2000.0, ae, 0.0, 0.0),
        mover("c", an, ae - 3000.0, 0.0, 0.0),
    )
    dev = device(range_nm=3.0)
    epochs = []
    for k in range(120):
        t = k / RATE_HZ
        away = 1000.0 if 100.0 <= t < 150.0 else -500.0
        d = mover("d", an, ae + 3 * NM + away + t, 0.0, 0.0)  # creeping east, 1 m/s
        msgs = list(map(parsed, dev.sample(own.truth(t, [b, d, a, c]))))
        epochs.append((t, [(int(m.target_number), m.status) for m in msgs], msgs))
    for t, reports, msgs in epochs:
        if t < 100.0:
            assert reports == [(1, "T"), (2, "T"), (3, "T"), (4, "T")]
        elif t == 100.0:
            assert reports == [(1, "T"), (2, "T"), (3, "T"), (4, "L")]
            assert msgs[3].data[1:11] == epochs[k_at(97.5)][2][3].data[1:11]  # its last values
        elif t < 150.0:
            assert reports == [(1, "T"), (2, "T"), (3, "T")]
        else:
            assert reports == [(1, "T"), (2, "T"), (3, "T"), (5, "T")]
    assert [round(float(m.distance) * NM) for m in epochs[0][2][:3]] == [1000, 2000, 3000]
    assert {k: v for k, v in dev.summary().items() if k in ("acquired", "lost", "tracked")} == {
        "acquired": 5,
        "lost": 1,
        "tracked": 4,
    }


def k_at(t: float) -> int:
    return round(t * RATE_HZ)


def test_numbers_run_to_99_then_start_again_skipping_live_tracks():
    own = Own(course_deg=0.0, speed_kn=0.0)
    an, ae = own.antenna(0.0)
    keeper = mover("keeper", an + 1000.0, ae, 0.0, 0.0)
    dev = device()
    given = []
    for k in range(110):  # a new target every interval, each gone by the next
        fleeting = mover(f"f{k}", an - 1000.0, ae, 0.0, 0.0)
        t = k / RATE_HZ
        for msg in map(parsed, dev.sample(own.truth(t, [keeper, fleeting]))):
            if msg.status == "T" and float(msg.bearing) > 90.0:
                given.append(int(msg.target_number))
    assert dev.tracks["keeper"].number == 1
    assert given[:98] == list(range(2, 100)) and given[98:] == list(range(2, 14))


def test_capacity_tracks_the_nearest_and_the_rest_wait():
    own = Own(course_deg=0.0, speed_kn=0.0)
    an, ae = own.antenna(0.0)
    movers = [mover(f"t{i}", an + 500.0 * (i + 1), ae, 0.0, 0.0) for i in range(5)]
    lines = run(device(capacity=3), list(reversed(movers)), 2.5, own)
    assert [int(msg.target_number) for _, msg in lines] == [1, 2, 3]
    assert [round(float(msg.distance) * NM / 500.0) for _, msg in lines] == [1, 2, 3]


def test_acquiring_targets_report_range_and_bearing_only():
    own = Own(course_deg=0.0, speed_kn=5.0)
    m = mover("new", 3000.0, 3000.0, 270.0, 10.0)
    lines = run(device(acquire_s=30.0), [m], 40.0, own)
    statuses = [(t, msg.status) for t, msg in lines]
    assert all(st == ("Q" if t < 30.0 else "T") for t, st in statuses)
    for t, msg in lines:
        empty = (msg.speed, msg.cog, msg.dist_cpa, msg.time_cpa)
        assert (empty == (None,) * 4) == (t < 30.0) and msg.distance and msg.bearing


# --- faults ----------------------------------------------------------------------------------


def test_faults():
    own = Own(course_deg=0.0, speed_kn=6.0)
    movers = [mover("x", 3000.0, 1000.0, 270.0, 12.0), mover("y", -2000.0, 500.0, 10.0, 9.0)]
    faults = [
        FaultSpec("dropout", 10.0, 20.0),
        FaultSpec("freeze", 30.0, 40.0),
        FaultSpec("invalid", 50.0, 60.0),
        FaultSpec("bias_jump", 70.0, 80.0, "range", 100.0),
        FaultSpec("bias_jump", 70.0, 80.0, "bearing", 5.0),
    ]
    faulty = run(device(faults=faults), movers, 90.0, own)
    clean = run(device(), movers, 90.0, own)
    by_t = {}
    for t, msg in faulty:
        by_t.setdefault(t, []).append(msg)
    ref = {}
    for t, msg in clean:
        ref.setdefault(t, []).append(msg)
    for t, msgs in ref.items():
        got = by_t.get(t, [])
        if 10.0 <= t < 20.0:
            assert not got  # silent
        elif 30.0 <= t < 40.0:  # the last values before the freeze, the current time
            assert [g.data[:13] for g in got] == [r.data[:13] for r in ref[27.5]]
            assert [g.timestamp for g in got] == [r.timestamp for r in msgs]
        elif 50.0 <= t < 60.0:  # lost while invalid, numbers kept, no values
            assert [(g.target_number, g.status) for g in got] == [(1, "L"), (2, "L")]
            assert all(g.distance is None and g.bearing is None for g in got)
        elif 70.0 <= t < 80.0:
            for g, r in zip(got, msgs, strict=True):
                assert abs(float(g.distance) - float(r.distance) - 100.0 / NM) <= 0.0101
                assert abs(angle_diff(float(g.bearing), float(r.bearing)) - 5.0) <= 0.11
        else:
            assert [g.data for g in got] == [r.data for r in msgs]
    assert by_t[60.0][0].status == "T"  # tracked again once valid, same numbers


# --- repeatability and the serial budget ------------------------------------------------------


def test_same_seed_same_bytes():
    noise = {"range": NoiseSpec(white=20.0, random_walk=1.0), "bearing": NoiseSpec(white=0.5)}
    own = Own()
    movers = [mover("a", 4000.0, 2500.0, 210.0, 12.0), mover("b", 1500.0, -3000.0, 90.0, 15.0)]

    def lines(seed):
        dev = device(seed=seed, noise=noise)
        return [line for k in range(40) for line in dev.sample(own.truth(k / RATE_HZ, movers))]

    assert lines(3) == lines(3) and lines(3) != lines(4)


def test_the_budget_counts_the_widest_ttm_per_target_per_scan():
    dev = device(names=True, budget_targets=10)
    widest = len(dev.sentence("TTM", dict(Radar.worst_case), START, True)[0])
    assert widest == 82  # a full name takes every character the line has
    targets = tuple(mover(f"t{i}", 1000.0 * i, 0.0, 0.0, 0.0).target for i in range(25))
    assert dev.bytes_per_s(START, targets) == RATE_HZ * 25 * widest
    assert dev.bytes_per_s(START) == RATE_HZ * 10 * widest == RATE_HZ * dev.epoch_bytes(START)
    # devices/radar.toml: 40 tracks of 74 bytes every 2.5 s need 38400 baud, not 4800
    default = device()
    assert default.bytes_per_s(START) == 0.4 * 40 * 74 > 4800 / 10
    # every TTM a run sends is within the widest
    movers = [mover(f"m{i}", 800.0 * i - 3000.0, 500.0 * i, 37.0 * i, 3.0 * i) for i in range(8)]
    sent = [line for k in range(20) for line in dev.sample(Own().truth(k / RATE_HZ, movers))]
    assert sent and max(map(len, sent)) <= widest
