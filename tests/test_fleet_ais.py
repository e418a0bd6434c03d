"""A fleet's AIS stations on one VHF data link (hild/traffic/ais.py ``Air``, hild/world/boats.py
``share_air``): each transmission is made once and heard by every boat's receiver in range at
that instant; a boat's own transponder output (VDO) is its station's transmissions, of its
class. A world of three boats is stepped here tick by tick; every line is decoded by pyais.

A one-boat bench's receiver keeps its own schedule, bit for bit as before the shared link
(a golden hash of its lines).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from pyais import decode

from hild.bench import load_bench
from hild.geodesy import Origin
from hild.sensors.ais import Ais
from hild.sensors.device import DeviceConfig
from hild.sensors.faults import FaultSpec
from hild.sensors.noise import NoiseSpec
from hild.sensors.truth import Truth
from hild.traffic import ais
from hild.traffic.layout import T_EAST, T_HEADING, T_NORTH, T_SIZE, T_SPEED, T_YAW_RATE
from hild.traffic.targets import KNOT, Course, Identity, Target
from hild.traffic.view import TrafficView
from hild.world.world import World

START = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
RATE_HZ = 20
SECONDS = 420  # more than the 6 min of the static reports; every receiver listens at its end

FLEET = f"""
[bench]
name = "three"
rate_hz = {RATE_HZ}
start_time = "2026-06-01T12:00:00Z"
run_dir = "{{run_dir}}"

[origin]
latitude = 59.41
longitude = 10.48

[weather]
preset = "calm"

[[boat]]
name = "alpha"
profile = "otter"
heading_deg = 0.0
speed = 1.5
north = 0.0
east = 0.0
mmsi = 257000001
ship_name = "ALPHA"
class = "A"
[boat.commands]
"port.rpm" = 700
"starboard.rpm" = 700

[[boat]]
name = "bravo"
profile = "otter"
heading_deg = 90.0
speed = 1.5
north = 300.0
east = -200.0
mmsi = 257000002
ship_name = "BRAVO"
callsign = "LB2002"
class = "B"
ship_type = 37
[boat.commands]
"port.rpm" = 700
"starboard.rpm" = 700

[[boat]]
name = "charlie"
profile = "otter"
heading_deg = 200.0
speed = 1.5
north = -400.0
east = 300.0
mmsi = 257000003
ship_name = "CHARLIE"
class = "A"
[boat.commands]
"port.rpm" = 700
"starboard.rpm" = 700

[[traffic]]
name = "coaster"
mmsi = 257100001
[traffic.course]
north = 2000.0
east = -1500.0
course_deg = 120.0
speed_kn = 9

[[traffic]]
name = "yacht"
mmsi = 257100002
class = "B"
[traffic.course]
north = -1500.0
east = -1000.0
course_deg = 45.0
speed_kn = 6

[[device]]
name = "alpha-ais"
type = "ais"
boat = "alpha"
sentences = ["VDM", "VDO"]
ports = ["udp://127.0.0.1:21001"]

[[device]]
name = "alpha-ais-slow"   # a second output of alpha's transponder, at 1 Hz
type = "ais"
boat = "alpha"
rate_hz = 1.0
sentences = ["VDM", "VDO"]
ports = ["udp://127.0.0.1:21002"]

[[device]]
name = "bravo-ais"
type = "ais"
boat = "bravo"
sentences = ["VDM", "VDO"]
ports = ["udp://127.0.0.1:21011"]

[[device]]
name = "charlie-ais"      # at 2 Hz
type = "ais"
boat = "charlie"
rate_hz = 2.0
sentences = ["VDM", "VDO"]
ports = ["udp://127.0.0.1:21021"]
"""
MMSI = {
    "alpha": 257000001,
    "bravo": 257000002,
    "charlie": 257000003,
    "coaster": 257100001,
    "yacht": 257100002,
}


@dataclass(frozen=True)
class Heard:
    """One message as a device wrote it."""

    k: int  # the world's tick it was written at
    sentence: str  # VDM or VDO
    channel: str  # the AIVDM channel field
    kind: str  # "1", "3", "5", "18", "24A", "24B"
    mmsi: int
    second: int | None  # the UTC second field of a position report


def messages(lines: list[tuple[int, bytes]]) -> list[Heard]:
    """Each message of ``lines`` (its sentences put together), decoded by pyais."""
    out, parts = [], []
    for k, line in lines:
        fields = line.decode().strip().split(",")
        parts.append(line)
        if fields[1] != fields[2]:  # not the message's last sentence
            continue
        msg: dict[str, Any] = decode(*parts).asdict()
        parts = []
        kind = str(msg["msg_type"])
        if kind == "24":
            kind += "AB"[msg["partno"]]
        sentence = fields[0][3:6]
        out.append(Heard(k, sentence, fields[4], kind, msg["mmsi"], msg.get("second")))
    assert not parts
    return out


@dataclass
class FleetRun:
    world: World
    heard: dict[str, list[Heard]]  # by device


@pytest.fixture(scope="module")
def fleet_run(tmp_path_factory) -> FleetRun:
    folder = tmp_path_factory.mktemp("fleet-ais")
    path = folder / "three.toml"
    path.write_text(FLEET.format(run_dir=folder / "run"))
    world = World(load_bench(path), SECONDS)
    world.start_utc = START
    lines: dict[str, list[tuple[int, bytes]]] = {}

    def take(out) -> None:
        for rt, sent in out:
            lines.setdefault(rt.device.config.name, []).extend((world.k, x) for x in sent)

    take(world.first_epoch())
    for _ in range(SECONDS * RATE_HZ):
        take(world.tick())
    return FleetRun(world, {name: messages(x) for name, x in lines.items()})


def of(heard: list[Heard], station: str, sentence: str = "VDM") -> list[tuple[int, str, str]]:
    """A station's messages in what a device wrote: (tick, kind, channel) each."""
    return [
        (h.k, h.kind, h.channel)
        for h in heard
        if h.mmsi == MMSI[station] and h.sentence == sentence
    ]


def test_every_receiver_hears_the_same_transmissions(fleet_run):
    """(a) What alpha's and bravo's receivers (both at 10 Hz) hear of charlie and of the traffic
    is one set of transmissions: the same instants, types and channels."""
    alpha, bravo = fleet_run.heard["alpha-ais"], fleet_run.heard["bravo-ais"]
    for station in ("charlie", "coaster", "yacht"):
        a, b = of(alpha, station), of(bravo, station)
        assert a == b, station
        assert {c for _, _, c in a} == {"A", "B"}  # its one clock alternates the channels
    kinds = Counter(kind for _, kind, _ in of(alpha, "charlie"))
    assert kinds["1"] >= 30 and kinds["5"] >= 1 and not kinds["18"]  # Class A: ~10 s, 6 min
    assert set(Counter(kind for _, kind, _ in of(alpha, "yacht"))) == {"18", "24A", "24B"}


def at_2_hz(heard: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    """Messages as a 2 Hz device writes them: at its next epoch (every tenth tick)."""
    return [(-(-k // 10) * 10, kind, channel) for k, kind, channel in heard]


def test_a_boats_vdo_is_what_the_others_hear_of_it(fleet_run):
    """(a) One station, one clock: alpha's VDO of itself is what bravo hears of alpha (type,
    channel, instant), and bravo's what alpha hears; charlie's VDO, written at its 2 Hz epochs,
    is what both hear of charlie, each at the epoch after it was sent."""
    heard = fleet_run.heard
    alpha, bravo = of(heard["alpha-ais"], "alpha", "VDO"), of(heard["bravo-ais"], "bravo", "VDO")
    assert alpha and bravo
    assert of(heard["bravo-ais"], "alpha") == alpha
    assert of(heard["alpha-ais"], "bravo") == bravo
    charlie = of(heard["charlie-ais"], "charlie", "VDO")
    assert charlie == at_2_hz(of(heard["alpha-ais"], "charlie"))
    assert at_2_hz(alpha) == of(heard["charlie-ais"], "alpha")
    # no receiver hears its own boat as a target
    for device in heard:
        assert not of(heard[device], device.split("-")[0], "VDM")


def test_a_class_b_boat_reports_as_a_class_b_transponder(fleet_run):
    """(b) bravo (class = "B"): its VDO has messages 18 and 24 A/B, none of 1, 3 or 5; its 18s
    at the Class B interval above 2 kn (30 s)."""
    own = of(fleet_run.heard["bravo-ais"], "bravo", "VDO")
    kinds = Counter(kind for _, kind, _ in own)
    assert set(kinds) == {"18", "24A", "24B"}, kinds
    ticks = [k for k, kind, _ in own if kind == "18"]
    gaps = {round((b - a) / RATE_HZ, 1) for a, b in zip(ticks, ticks[1:], strict=False)}
    assert gaps == {30.0}, gaps
    # and a Class A boat's: 1 (3) and 5
    kinds_a = Counter(kind for _, kind, _ in of(fleet_run.heard["alpha-ais"], "alpha", "VDO"))
    assert set(kinds_a) <= {"1", "3", "5"} and kinds_a["1"] and kinds_a["5"]
    assert fleet_run.world.bench.devices[2].settings["own_class"] == "B"  # (bench.py's)


def test_receivers_at_other_rates_hear_every_transmission_once(fleet_run):
    """(c) alpha's 1 Hz output and charlie's 2 Hz receiver hear each station's every
    transmission once: as many as the station sent (the air's count), of the same kinds,
    channels and UTC seconds as the 10 Hz receiver's, in the same order."""
    heard, air = fleet_run.heard, fleet_run.world.air
    assert air is not None

    def of_station(device: str, station: str) -> list[tuple[str, str, int | None]]:
        sentence = "VDO" if device.startswith(station) else "VDM"
        return [
            (h.kind, h.channel, h.second)
            for h in heard[device]
            if h.mmsi == MMSI[station] and h.sentence == sentence
        ]

    for device in ("alpha-ais-slow", "charlie-ais"):
        for station in MMSI:
            got = of_station(device, station)
            assert len(got) == air.sent[station], (device, station)
            assert got == of_station("bravo-ais", station), (device, station)  # (10 Hz)


def test_the_air_lets_go_of_what_every_receiver_has_heard():
    """The data link alone: 40 fast stations (2 s), a receiver listening at 10 Hz and one at
    0.5 Hz: each hears every transmission once, in order, and the log stays short."""
    targets = tuple(
        Target(f"s{i}", lone_identity(257200000 + i), Course(0.0, 0.0, 0.0, 0.0)) for i in range(40)
    )
    state = np.zeros((len(targets), T_SIZE))
    state[:, T_SPEED] = 25.0 * KNOT  # above 23 kn: every 2 s
    air = ais.Air(5, lambda: TrafficView(targets, state))
    fast, slow = air.listener(), air.listener()
    heard: dict[int, list[ais.Transmission]] = {fast: [], slow: []}
    longest = 0
    for k in range(1201):
        t = k / 10.0
        heard[fast] += air.heard(fast, t)
        if k % 20 == 0:
            heard[slow] += air.heard(slow, t)
        longest = max(longest, len(air._log))
    assert sum(air.sent.values()) >= 40 * 60
    assert heard[fast] == heard[slow] and len(heard[fast]) == sum(air.sent.values())
    assert len({id(tx) for tx in heard[fast]}) == len(heard[fast])  # none twice
    assert longest < ais.TRIM_AT + 2 * 40  # (at most what 2 s send beyond the trimming mark)
    assert air.heard(fast, 120.0) == ()  # nothing new at an instant already heard


# --- a one-boat bench: unchanged ---------------------------------------------------------------
ORIGIN = Origin(59.41, 10.48)

# sha256 of every line of ``lone_receiver_lines()`` (each prefixed with its epoch number), and
# their count: made by this very function on the code before the shared link (the receiver's
# own ReportSchedule, as a one-boat bench's still is), run once and pasted here.
GOLDEN = (567, "b68f4f148745d71ed0d84aa18da1167ea7d5de0e43b2b380c826d429e4678e0f")


def lone_identity(mmsi: int, ais_class: str = "A", status: int = 0) -> Identity:
    return Identity(
        mmsi=mmsi,
        name=f"S{mmsi}",
        callsign="LA1",
        ship_type=70,
        to_bow=50,
        to_stern=10,
        to_port=5,
        to_starboard=5,
        nav_status=status,
        ais_class=ais_class,
    )


def lone_receiver(rate_hz: float = 10.0, **settings) -> Ais:
    config = DeviceConfig(
        name="ais",
        type="ais",
        model="ais",
        talker="AI",
        rate_hz=rate_hz,
        baud=38400,
        sentences=("VDM", "VDO"),
        lever_arm=(1.0, 0.5, -3.0),
        ports=(),
        noise={"position": NoiseSpec(white=3.0)},
        faults=(FaultSpec("dropout", 100.0, 130.0), FaultSpec("freeze", 200.0, 230.0)),
        settings={
            "range_nm": 20.0,
            "class_b_range_nm": 8.0,
            "drop_rate": 0.1,
            "own_mmsi": 257000001,
            "own_name": "LONE",
            "own_callsign": "LH1",
            "own_ship_type": 37,
            "own_nav_status": 0,
            "own_to_bow": 3,
            "own_to_stern": 2,
            "own_to_port": 1,
            "own_to_starboard": 1,
            **settings,
        },
    )
    return Ais(config, 11, ORIGIN)


def lone_receiver_lines(dev: Ais, seconds: float = 800.0) -> list[tuple[int, bytes]]:
    """A lone receiver (VDM and VDO, noise, drop rate, dropout and freeze faults) hearing seven
    stations of both classes (one at anchor, one turning, one out of Class B range, one whose
    identity is amended at 400 s), its own ship speeding up at 300 s (a message 3)."""
    # name, identity, north, east, course [deg], speed [kn], rate of turn [deg/min]
    stations = [
        ("a-slow", lone_identity(257100001), 2000.0, 0.0, 90.0, 8.0, 0.0),
        ("a-fast", lone_identity(257100002), -3000.0, 1000.0, 10.0, 18.0, 0.0),
        ("a-turn", lone_identity(257100003), 1000.0, 3000.0, 0.0, 9.0, 40.0),
        ("a-anchor", lone_identity(257100004, status=1), 500.0, -800.0, 0.0, 0.0, 0.0),
        ("b-fast", lone_identity(257100005, "B"), -1000.0, -1000.0, 200.0, 12.0, 0.0),
        ("b-slow", lone_identity(257100006, "B"), 4000.0, 4000.0, 300.0, 1.0, 0.0),
        ("b-far", lone_identity(257100007, "B"), 20000.0, 0.0, 0.0, 5.0, 0.0),
    ]
    rate_hz = dev.config.rate_hz
    out = []
    for k in range(round(seconds * rate_hz)):
        t = k / rate_hz
        targets = []
        state = np.zeros((len(stations), T_SIZE))
        for i, (name, ident, n0, e0, c, v, rot) in enumerate(stations):
            if name == "a-slow" and t >= 400.0:  # an amended identity: its static at once
                ident = replace(ident, name="RENAMED")
            targets.append(Target(name, ident, Course(n0, e0, 0.0, 0.0)))
            r = math.radians(rot / 60.0)
            speed = v * KNOT
            state[i, [T_NORTH, T_EAST, T_HEADING, T_SPEED, T_YAW_RATE]] = (
                n0 + speed * t * math.cos(math.radians(c)),
                e0 + speed * t * math.sin(math.radians(c)),
                (math.radians(c) + r * t) % (2 * math.pi),
                speed,
                r,
            )
        own_speed = 2.0 if t < 300.0 else 8.0  # 3.9 kn, then 15.6 kn: a shorter interval
        truth = Truth(
            t=t,
            utc=START + timedelta(seconds=t),
            eta=np.array([own_speed * t, 0.0, 0.0, 0.0, 0.0, 0.3]),
            nu=np.array([own_speed, 0.0, 0.0, 0.0, 0.0, 0.0]),
            traffic=TrafficView(tuple(targets), state),
        )
        out += [(k, line) for line in dev.sample(truth)]
    return out


def test_a_lone_receiver_is_bit_for_bit_as_before():
    """(d) A one-boat bench's receiver: its own schedule, every line (VDM and VDO, their
    phases, channels and sequence ids) as before the fleet's shared link."""
    lines = lone_receiver_lines(lone_receiver())
    digest = hashlib.sha256()
    for k, line in lines:
        digest.update(f"{k} ".encode() + line)
    assert (len(lines), digest.hexdigest()) == GOLDEN


def test_a_one_boat_world_has_no_shared_link(tmp_path):
    """A one-boat bench's world makes no data link: its receivers keep their own schedules."""
    world = World(load_bench("busy-fjord"), 10.0)
    (ais,) = [rt.device for rt in world.devices if rt.device.config.model == "ais"]
    assert world.air is None and ais.air is None


def test_a_lone_class_b_transponder_reports_18_and_24():
    """(b) own_class = "B" on a one-boat bench: its VDO is messages 18 (every 30 s above 2 kn,
    3 min below) and 24 A/B; none of 1, 3 or 5."""
    dev = lone_receiver(own_class="B", drop_rate=0.0)
    lines = [(k, x) for k, x in lone_receiver_lines(dev, 600.0) if x.startswith(b"!AIVDO")]
    own = messages(lines)
    kinds = Counter(h.kind for h in own)
    assert set(kinds) == {"18", "24A", "24B"}, kinds
    assert kinds["24A"] == kinds["24B"] >= 1
    ticks = [h.k for h in own if h.kind == "18"]
    gaps = [round((b - a) / 10.0) for a, b in zip(ticks, ticks[1:], strict=False)]
    # 30 s (3.9 kn and then 15.6 kn: above 2 kn); the dropout at 100-130 s silences one
    assert set(gaps) <= {30, 60} and gaps.count(30) >= len(gaps) - 1
    assert dev.own_messages.keys() == {"18", "24A", "24B"}
