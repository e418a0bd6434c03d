"""The AIS receiver (hild/sensors/ais.py, hild/traffic/ais.py) driven in simulated time.

Targets move on lines (and circles) computed here, not by the traffic kernel; the sentences
are decoded by gpsd's ``gpsdecode`` (a C decoder that shares nothing with pyais, which
encodes them), and the reporting schedule is measured on a small header reader written here.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import reduce

import numpy as np
import pytest

from hild.geodesy import Origin
from hild.sensors.ais import NM, Ais
from hild.sensors.device import DeviceConfig
from hild.sensors.faults import FaultSpec
from hild.sensors.noise import NoiseSpec
from hild.sensors.truth import Truth
from hild.traffic import ais
from hild.traffic.layout import T_EAST, T_HEADING, T_NORTH, T_SIZE, T_SPEED, T_YAW_RATE
from hild.traffic.targets import KNOT, Course, Identity, Target
from hild.traffic.view import TrafficView

ORIGIN = Origin(59.41, 10.48)
START = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
RATE_HZ = 10.0
GPSDECODE = shutil.which("gpsdecode")
needs_gpsdecode = pytest.mark.skipif(
    GPSDECODE is None, reason="gpsdecode (gpsd-clients) is not installed: no independent decoder"
)


@dataclass(frozen=True)
class Mover:
    """A target on a line (yaw rate 0) or a circle, from (north, east) at t = 0."""

    target: Target
    north: float
    east: float
    course_deg: float
    speed_kn: float
    rot_deg_per_min: float = 0.0
    turn_from: float = 0.0  # s: straight until then

    def at(self, t: float) -> tuple[float, float, float, float, float]:
        """north, east [m], course [rad], speed [m/s], yaw rate [rad/s] at ``t``."""
        v = self.speed_kn * KNOT
        c0 = math.radians(self.course_deg)
        r = math.radians(self.rot_deg_per_min / 60.0)
        straight = min(t, self.turn_from) if r else t
        n = self.north + v * straight * math.cos(c0)
        e = self.east + v * straight * math.sin(c0)
        if not r or t < self.turn_from:
            return n, e, c0 % (2 * math.pi), v, 0.0
        tau = t - self.turn_from
        c = c0 + r * tau  # on a circle of radius v / r
        n += v / r * (math.sin(c) - math.sin(c0))
        e += v / r * (math.cos(c0) - math.cos(c))
        return n, e, c % (2 * math.pi), v, r


def mover(
    name,
    mmsi,
    speed_kn,
    course=45.0,
    rot=0.0,
    north=500.0,
    east=-300.0,
    ais_class="A",
    nav_status=0,
    turn_from=0.0,
) -> Mover:
    ident = Identity(
        mmsi=mmsi,
        name=name.upper(),
        callsign=f"LA{mmsi % 10000}",
        ship_type=70,
        to_bow=120,
        to_stern=30,
        to_port=12,
        to_starboard=14,
        nav_status=nav_status,
        ais_class=ais_class,
        imo=9000000 + mmsi % 1000,
        destination="OSLO",
        draught=7.3,
    )
    target = Target(name, ident, Course(north, east, math.radians(course), speed_kn * KNOT))
    return Mover(target, north, east, course, speed_kn, rot, turn_from)


def device(sentences=("VDM",), seed=7, faults=(), noise=None, **settings) -> Ais:
    config = DeviceConfig(
        name="ais",
        type="ais",
        model="ais",
        talker="AI",
        rate_hz=RATE_HZ,
        baud=38400,
        sentences=sentences,
        lever_arm=(0.0, 0.0, 0.0),
        ports=(),
        faults=tuple(faults),
        noise=noise or {},
        settings={
            "range_nm": 20.0,
            "class_b_range_nm": 8.0,
            "drop_rate": 0.0,
            "own_mmsi": 257000001,
            "own_name": "HILD USV",
            "own_callsign": "LH1",
            "own_ship_type": 90,
            "own_to_bow": 3,
            "own_to_stern": 2,
            "own_to_port": 1,
            "own_to_starboard": 1,
            **settings,
        },
    )
    return Ais(config, seed, ORIGIN)


def run(dev: Ais, movers: list[Mover], seconds: float, own_speed: float = 0.0):
    """Sample ``dev`` at its rate for ``seconds``: the lines, each with its time."""
    targets = tuple(m.target for m in movers)
    out: list[tuple[float, bytes]] = []
    for k in range(round(seconds * RATE_HZ)):
        t = k / RATE_HZ
        state = np.zeros((len(movers), T_SIZE))
        for i, m in enumerate(movers):
            state[i, [T_NORTH, T_EAST, T_HEADING, T_SPEED, T_YAW_RATE]] = m.at(t)
        truth = Truth(
            t=t,
            utc=START + timedelta(seconds=t),
            eta=np.array([own_speed * t, 0, 0, 0, 0, 0.0]),
            nu=np.array([own_speed, 0, 0, 0, 0, 0.0]),
            traffic=TrafficView(targets, state) if movers else None,
        )
        out += [(t, line) for line in dev.sample(truth)]
    return out


# --- a small reader of the envelope and the header bits (not a decoder of the fields) --------
@dataclass
class Message:
    t: float
    lines: list[bytes]
    sentence: str  # VDM or VDO
    channel: str
    seq: str
    payload: str
    fill: int

    @property
    def bits(self) -> str:
        def six(c: str) -> int:
            v = ord(c) - 48
            return v - 8 if v > 40 else v

        return "".join(f"{six(c):06b}" for c in self.payload)

    @property
    def type(self) -> int:
        return int(self.bits[:6], 2)

    @property
    def mmsi(self) -> int:
        return int(self.bits[8:38], 2)

    @property
    def kind(self) -> str:
        if self.type == 24:
            return "24A" if self.bits[38:40] == "00" else "24B"
        return str(self.type)


def messages(lines: list[tuple[float, bytes]]) -> list[Message]:
    """Group the fragments of each message (checking their counts and numbers)."""
    out: list[Message] = []
    pending: list[tuple[float, bytes]] = []
    for t, line in lines:
        body = line.decode("ascii").rstrip("\r\n")
        f = body[1 : body.index("*")].split(",")
        count, number = int(f[1]), int(f[2])
        assert number == len(pending) + 1 <= count, line
        pending.append((t, line))
        if number < count:
            continue
        parts = [p[1].decode().split("*")[0].split(",") for p in pending]
        assert len({p[3] for p in parts}) == 1 and len({p[4] for p in parts}) == 1  # seq, channel
        assert all(p[6] == "0" for p in parts[:-1])  # fill bits only in the last fragment
        out.append(
            Message(
                pending[0][0],
                [p[1] for p in pending],
                f[0][2:],
                f[4],
                f[3],
                "".join(p[5] for p in parts),
                int(f[6]),
            )
        )
        pending = []
    assert not pending
    return out


def gpsdecode(msgs: list[Message]) -> list[dict]:
    """Every message as gpsd decodes it, unscaled (-u: lat/lon in 1/600000 deg, speed and
    course in tenths), type 24 parts apart (-s); one JSON object per message, in order."""
    text = b"".join(line for m in msgs for line in m.lines)
    run_ = subprocess.run(
        [GPSDECODE, "-j", "-u", "-s"], input=text, capture_output=True, check=True, timeout=60
    )
    decoded = [json.loads(s) for s in run_.stdout.decode().splitlines() if s.strip()]
    assert len(decoded) == len(msgs), run_.stderr
    return decoded


# --- the field codes --------------------------------------------------------------------------
def test_rate_of_turn_code():
    assert ais.rot_field(None) == -128
    assert ais.rot_field(0.0) == 0
    assert ais.rot_field(0.01) == 0  # 4.733 * 0.1 rounds to 0: not turning
    assert ais.rot_field(60.0) == round(4.733 * math.sqrt(60.0)) == 37
    assert ais.rot_field(-60.0) == -37
    assert ais.rot_field(708.0) == 126 and ais.rot_field(5000.0) == 126  # capped
    assert ais.rot_field(-5000.0) == -126


def test_speed_course_heading_codes():
    assert ais.sog_field(12.34) == 123 and ais.sog_field(200.0) == 1022
    assert ais.sog_field(math.nan) == 1023
    assert ais.cog_field(359.96) == 0 and ais.cog_field(math.nan) == 3600
    assert ais.heading_field(359.6) == 0 and ais.heading_field(None) == 511


def test_class_a_intervals_follow_itu_table_1():
    assert ais.class_a_interval(1.0, 1, 0.0) == 180.0  # at anchor
    assert ais.class_a_interval(5.0, 5, 0.0) == 10.0  # moored but moving faster than 3 kn
    assert ais.class_a_interval(10.0, 0, 0.0) == 10.0
    assert ais.class_a_interval(10.0, 0, 30.0) == pytest.approx(10 / 3)
    assert ais.class_a_interval(18.0, 0, 0.0) == 6.0
    assert ais.class_a_interval(18.0, 0, -30.0) == 2.0  # ITU's case the issue left out
    assert ais.class_a_interval(30.0, 0, 0.0) == 2.0
    assert ais.class_b_interval(2.0) == 180.0 and ais.class_b_interval(2.1) == 30.0


# --- the sentences, decoded by gpsd ----------------------------------------------------------
def checksum_ok(line: bytes) -> bool:
    body, _, tail = line.decode("ascii").rstrip("\r\n")[1:].partition("*")
    return reduce(lambda a, c: a ^ ord(c), body, 0) == int(tail, 16)


# bits in each message as sent: 1/3/18 are 168; 5 is 424; pyais sends 24A with the 8 spare
# bits of its 168-bit layout (ITU gives 160; gpsd reads either)
BITS = {"1": 168, "3": 168, "18": 168, "5": 424, "24A": 168, "24B": 168}

MOVERS = [
    mover("straight", 257100001, 12.0, course=45.0),
    mover("turning", 257100002, 9.0, course=300.0, rot=-60.0, north=-800.0),
    mover("fast", 257100003, 31.5, course=181.0, east=900.0),
    mover("sailor", 257100004, 6.2, course=95.0, ais_class="B", north=-200.0),
]


@pytest.fixture(scope="module")
def traffic_run():
    dev = device(sentences=("VDM", "VDO"))
    lines = run(dev, MOVERS, 400.0, own_speed=3.0)
    return dev, lines, messages(lines)


def test_every_sentence_is_well_formed(traffic_run):
    _, lines, msgs = traffic_run
    for _, line in lines:
        assert line.endswith(b"\r\n") and len(line) <= 82 + 2, line
        assert line.startswith((b"!AIVDM,", b"!AIVDO,")) and checksum_ok(line), line
    for m in msgs:
        # 6 bits a character, the last padded with the fill bits
        assert 6 * len(m.payload) - m.fill == BITS[m.kind], (m.kind, m.payload, m.fill)
        assert 0 <= m.fill <= 5 and len(m.lines) == (2 if m.kind == "5" else 1)
        assert m.seq == "" if len(m.lines) == 1 else m.seq in "0123456789"


@needs_gpsdecode
def test_gpsdecode_reads_what_the_targets_are(traffic_run):
    dev, _, msgs = traffic_run
    decoded = gpsdecode(msgs)
    by_mmsi = {m.target.identity.mmsi: m for m in MOVERS}
    seen = set()
    for m, d in zip(msgs, decoded, strict=True):
        assert d["type"] == m.type and d["mmsi"] == m.mmsi
        if m.sentence == "VDO":
            assert m.mmsi == 257000001
            north, east, course, speed, rate = 3.0 * m.t, 0.0, 0.0, 3.0, 0.0
            ident = dev.own_identity()
        else:
            mv = by_mmsi[m.mmsi]
            north, east, course, speed, rate = mv.at(m.t)
            ident = mv.target.identity
        seen.add((m.sentence, m.kind))
        if m.type in (1, 3, 18):
            lat, lon, _ = ORIGIN.to_geodetic(north, east)
            # positions are rounded to 1/600000 deg (0.19 m): the decoded integer is ours,
            # within one unit for the rounding of a float that sits on a half
            assert abs(d["lat"] - lat * 600000) <= 1 and abs(d["lon"] - lon * 600000) <= 1
            # SOG in 0.1 kn and COG in 0.1 deg, rounded: within half a step of the truth
            assert abs(d["speed"] - speed / KNOT * 10) <= 0.5 + 1e-6
            cog_err = (d["course"] - math.degrees(course) * 10 + 1800) % 3600 - 1800
            assert abs(cog_err) <= 0.5 + 1e-6
            # the heading in whole degrees (the targets' heading is their course)
            heading = math.degrees(course) if m.sentence == "VDM" else 0.0
            assert abs((d["heading"] - heading + 180) % 360 - 180) <= 0.5 + 1e-6
            assert d["accuracy"] is True and d["second"] == (START + timedelta(seconds=m.t)).second
        if m.type in (1, 3):
            assert d["status"] == ident.nav_status
            rot = math.degrees(rate) * 60.0
            # the ROT code is an integer of 4.733 sqrt(|ROT|): exactly the rounded value
            assert d["turn"] == round(math.copysign(4.733 * math.sqrt(abs(rot)), rot))
        if m.kind in ("5", "24A"):
            assert d["shipname"] == ident.name
        if m.kind in ("5", "24B"):
            assert d["callsign"] == ident.callsign and d["shiptype"] == ident.ship_type
            assert (d["to_bow"], d["to_stern"], d["to_port"], d["to_starboard"]) == (
                ident.to_bow,
                ident.to_stern,
                ident.to_port,
                ident.to_starboard,
            )
        if m.kind == "5":
            assert d["imo"] == ident.imo and d["destination"] == ident.destination
            assert d["draught"] == round(ident.draught * 10) and d["epfd"] == 1
    assert {("VDM", k) for k in ("1", "5", "18", "24A", "24B")} <= seen
    assert {("VDO", "1"), ("VDO", "5")} <= seen


@needs_gpsdecode
def test_invalid_fault_reports_no_position():
    dev = device(faults=[FaultSpec("invalid", 0.0)])
    msgs = messages(run(dev, [mover("a", 257100010, 10.0)], 30.0))
    decoded = [d for d in gpsdecode(msgs) if d["type"] in (1, 3)]
    assert decoded
    for d in decoded:  # 91 and 181 deg: not available
        assert (d["lat"], d["lon"], d["accuracy"]) == (91 * 600000, 181 * 600000, False)


# --- the reporting schedule, measured over simulated minutes ---------------------------------
SCHEDULED = [
    (mover("anchored", 257200001, 0.5, nav_status=1), 180.0),
    (mover("slow", 257200002, 10.0), 10.0),
    (mover("slow-turn", 257200003, 10.0, rot=45.0), 10.0 / 3.0),
    (mover("medium", 257200004, 18.0), 6.0),
    (mover("medium-turn", 257200005, 18.0, rot=-30.0), 2.0),
    (mover("fast", 257200006, 30.0), 2.0),
    (mover("b-fast", 257200007, 6.0, ais_class="B"), 30.0),
    (mover("b-slow", 257200008, 1.5, ais_class="B"), 180.0),
]


@pytest.fixture(scope="module")
def schedule_run():
    dev = device()
    msgs = messages(run(dev, [m for m, _ in SCHEDULED], 800.0))
    return dev, msgs


@pytest.mark.parametrize(("index"), range(len(SCHEDULED)))
def test_reporting_interval(schedule_run, index):
    _, msgs = schedule_run
    mv, interval = SCHEDULED[index]
    mmsi = mv.target.identity.mmsi
    times = [m.t for m in msgs if m.mmsi == mmsi and m.type in (1, 3, 18)]
    assert len(times) >= 800.0 // interval - 1
    assert times[0] < interval + 0.1  # the first report within the first interval
    # every interval on the 0.1 s grid of a 10 Hz device: 3 1/3 s comes as 3.3 or 3.4 s
    gaps = np.diff(times)
    assert np.all(np.abs(gaps - interval) <= 0.1 + 1e-6), gaps
    assert np.mean(gaps) == pytest.approx(interval, abs=0.05)
    statics = [m.t for m in msgs if m.mmsi == mmsi and m.type in (5, 24)]
    assert statics[0] < 360.0 and len(statics) >= 2
    step = 360.0 if mv.target.identity.ais_class == "A" else 0.0  # 24A and 24B together
    gaps = np.diff(statics)
    if step:
        assert np.all(np.abs(gaps - 360.0) <= 0.1 + 1e-6), gaps
    else:
        assert sorted({round(g, 1) for g in gaps}) == [0.0, 360.0]


def test_first_reports_are_spread(schedule_run):
    _, msgs = schedule_run
    first = {}
    for m in msgs:
        first.setdefault(m.mmsi, m.t)
    assert len(set(first.values())) >= len(SCHEDULED) - 1  # not all in one tick


def test_channels_alternate_per_station(schedule_run):
    _, msgs = schedule_run
    for mv, _ in SCHEDULED:
        channels = [m.channel for m in msgs if m.mmsi == mv.target.identity.mmsi]
        assert all(a != b for a, b in zip(channels, channels[1:], strict=False)), channels


def test_sequential_message_ids_cycle(schedule_run):
    _, msgs = schedule_run
    ids = [int(m.seq) for m in msgs if len(m.lines) > 1]
    assert len(ids) >= 10
    assert all(b == (a + 1) % 10 for a, b in zip(ids, ids[1:], strict=False)), ids


def test_message_3_when_the_interval_shortens():
    # straight at 10 kn (10 s), turning from t = 61 s (3 1/3 s): the first report in the new
    # slots is a message 3, the next ones 1 again
    mv = mover("turner", 257300001, 10.0, rot=60.0, turn_from=61.0)
    msgs = [m for m in messages(run(device(), [mv], 100.0)) if m.type in (1, 3)]
    kinds = [(round(m.t, 1), m.type) for m in msgs]
    threes = [t for t, k in kinds if k == 3]
    assert len(threes) == 1 and threes[0] >= 61.0, kinds
    after = [t for t, _ in kinds if t >= threes[0]]
    assert np.all(np.abs(np.diff(after) - 10 / 3) <= 0.1 + 1e-6)
    before = [t for t, _ in kinds if t < 61.0]
    assert threes[0] - before[-1] <= 10 / 3 + 0.1  # at once, not at the old 10 s slot


def test_summary_counts_messages(schedule_run):
    dev, msgs = schedule_run
    s = dev.summary()
    for kind in ("1", "5", "18", "24A", "24B"):
        assert s["messages"][kind] == sum(m.kind == kind for m in msgs)
    assert s["dropped"] == s["out_of_range"] == s["silenced"] == 0
    assert s["sentences"] == sum(len(m.lines) for m in msgs)


# --- losses, range, faults, the own ship, seeds -------------------------------------------------
def test_drop_rate_drops_about_that_share():
    p = 0.3
    dev = device(drop_rate=p)
    fleet = [mover(f"f{i}", 257400000 + i, 30.0, course=36.0 * i) for i in range(10)]
    msgs = messages(run(dev, fleet, 300.0))
    s = dev.summary()
    n = s["dropped"] + len(msgs)
    assert n > 1400  # 10 targets at 2 s for 300 s, and their static data
    # each transmission is an independent Bernoulli(p) draw: the dropped count is
    # Binomial(n, p), sd sqrt(n p (1-p)) ~ 18; 5 sd is missed by chance once in 3.5 million
    assert abs(s["dropped"] - n * p) <= 5 * math.sqrt(n * p * (1 - p))


def test_reception_range():
    near_a = mover("near-a", 257500001, 10.0, north=15 * NM, east=0.0)
    far_a = mover("far-a", 257500002, 10.0, north=0.0, east=-25 * NM)
    near_b = mover("near-b", 257500003, 6.0, north=5 * NM, ais_class="B")
    far_b = mover("far-b", 257500004, 6.0, north=-10 * NM, ais_class="B")  # within 20, not 8
    dev = device()
    heard = {m.mmsi for m in messages(run(dev, [near_a, far_a, near_b, far_b], 120.0))}
    assert heard == {257500001, 257500003}
    assert dev.summary()["out_of_range"] > 0


def test_dropout_silences_everything():
    dev = device(sentences=("VDM", "VDO"), faults=[FaultSpec("dropout", 30.0, 60.0)])
    lines = run(dev, [mover("a", 257600001, 30.0)], 90.0)
    times = [t for t, _ in lines]
    assert not [t for t in times if 30.0 <= t < 60.0]
    assert [t for t in times if t < 30.0] and [t for t in times if t >= 60.0]
    s = dev.summary()
    # the target at 2 s (30 kn), the own ship at rest at 10 s: 15 + 3 transmissions lost
    assert s["silent_epochs"] == 300 and s["silenced"] >= 15 + 3


def test_vdo_only_when_asked():
    mv = [mover("a", 257700001, 10.0)]
    plain = run(device(), mv, 60.0)
    assert plain and not [line for _, line in plain if line.startswith(b"!AIVDO")]
    with_own = messages(run(device(sentences=("VDM", "VDO")), mv, 60.0))
    own = [m for m in with_own if m.sentence == "VDO"]
    assert own and {m.mmsi for m in own} == {257000001}
    assert {m.type for m in own} <= {1, 3, 5}
    assert messages(run(device(sentences=("VDO",)), mv, 60.0))[0].sentence == "VDO"


def test_same_seed_same_bytes():
    fleet = [mover("a", 257800001, 10.0, rot=40.0), mover("b", 257800002, 6.0, ais_class="B")]

    def lines(seed):
        return run(
            device(
                sentences=("VDM", "VDO"),
                seed=seed,
                drop_rate=0.2,
                noise={"position": NoiseSpec(white=3.0)},
            ),
            fleet,
            200.0,
        )

    assert lines(3) == lines(3)
    assert lines(3) != lines(4)


def test_serial_budget():
    dev = device(sentences=("VDM", "VDO"))
    a = [mover(f"a{i}", 257900000 + i, 10.0).target for i in range(20)]
    b = [mover(f"b{i}", 257910000 + i, 6.0, ais_class="B").target for i in range(20)]
    line_a = 14 + 28 + 7  # "!AIVDM,1,1,,A," + 28 characters + ",0*hh\r\n"
    line_5 = (15 + 60 + 7) + (15 + 11 + 7)  # 71 characters in two sentences "!AIVDM,2,1,3,A,"
    load = dev.bytes_per_s(START, a)
    # 20 Class A targets at 2 s and the own ship, and their message 5 (two lines) every 6 min
    assert load == pytest.approx(21 * line_a / 2.0 + 21 * line_5 / 360.0)
    assert dev.bytes_per_s(START, a + b) < 3840  # 38400 baud at 10 bits a byte
    assert dev.bytes_per_s(START, b) < dev.bytes_per_s(START, a)
    # the base's budget: rate_hz x epoch_bytes is the load of ``budget_targets`` targets
    assert RATE_HZ * dev.epoch_bytes(START) == pytest.approx(load, abs=RATE_HZ)
