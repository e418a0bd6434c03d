"""The AIS receiver on NMEA 2000 (hild/n2k/ais.py ``N2kAis``, the ``n2k-ais`` kind): every AIS
message it receives sent as its PGN, read back by canboat's analyzerjs (not hild's code).

- busy-fjord's traffic (six ships, the yacht a Class B) heard for 400 s (the static data's
  6 min and more) by an n2k-ais device: every message decodes, each fast packet reassembled,
  one decoded message per message sent; each position report is its target's truth at the
  tick it was sent, at the VHF message's resolution (ITU-R M.1371: 1/10000 min, 0.1 kn, 0.1
  deg, 1 deg) and then the PGN's; each static report the target's identity. The NMEA 0183
  receiver (same name, same seed: the same schedule) reports the very same messages as
  AIVDM, read by pyais: the same instants, types, channels and values.
- the receiving (drop rate, position noise, the dropout, freeze and invalid faults) is the
  0183 receiver's, draw for draw: one list of stations fed to both, a field-by-field match.
- in a fleet, a boat's n2k-ais device hears the shared data link as the 0183 receiver on the
  same boat does.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from pyais import decode as pyais_decode

from hild.bench import load_bench
from hild.devices.catalog import load_device_type
from hild.devices.registry import build_device
from hild.geodesy import Origin
from hild.n2k import ais as n2k_ais
from hild.n2k.frames import Sequences, frame_bits, frames_of
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
from tests.n2k_tools import decode, needs_analyzerjs

START = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
TWO_PI = 2.0 * math.pi
AIS_PGNS = (129038, 129039, 129794, 129809, 129810)
# canboat's lookups as canboatjs prints them (canboat.json: AIS_MESSAGE_ID, NAV_STATUS,
# SHIP_TYPE, AIS_TRANSCEIVER)
MESSAGE_ID = {
    "Scheduled Class A position report": "1",
    "Assigned scheduled Class A position report": "2",
    "Interrogated Class A position report": "3",
}
NAV_STATUS = {0: "Under way using engine", 1: "At anchor", 7: "Engaged in Fishing"}
SHIP_TYPE = {
    30: "Fishing",
    37: "Pleasure",
    52: "Tug",
    60: "Passenger ship",
    70: "Cargo ship",
    80: "Tanker",
    90: "Other",
}
CHANNEL = {"Channel A VDL reception": "A", "Channel B VDL reception": "B"}

# What a field may be off by, read back: the PGN's resolution, rounded once (canboatjs prints
# latitude and longitude to 7 decimals, COG and heading to 4, SOG to 2: the resolutions)
LAT_LON = 0.51e-7  # deg
SOG = 0.0051  # m/s
ANGLE = 0.51e-4  # rad
ROT = 1.6e-5 + 0.5e-5  # rad/s: 3.125e-5 rounded, printed to 5 decimals


# --- reading the lines back ------------------------------------------------------------------
@dataclass(frozen=True)
class Report:
    """One AIS message as a decoder read it, in NMEA 2000's units (rad, m/s, deg for the
    position); None for a value not available."""

    k: int  # the tick it was sent at
    kind: str  # "1", "3", "5", "18", "24A", "24B"
    mmsi: int
    channel: str
    values: dict[str, Any]


def clock_ms(text: str) -> int:
    """Milliseconds since 12:00 of a line's clock (YDRAW ``hh:mm:ss.ddd``, Actisense
    ``Ahhmmss.ddd``)."""
    if text.startswith("A"):
        text = f"{text[1:3]}:{text[3:5]}:{text[5:]}"
    h, m, s = text.split(":")
    return round(((int(h) - 12) * 3600 + int(m) * 60 + float(s)) * 1000)


def n2k_reports(decoded: list[dict], tick_ms: float) -> list[Report]:
    """The AIS PGNs among ``decoded`` (analyzerjs's), as reports."""
    out = []
    for m in decoded:
        if m["pgn"] not in AIS_PGNS:
            continue
        f = m["fields"]
        k = round(clock_ms(m["input"][0].split()[0]) / tick_ms)
        kind = {129039: "18", 129794: "5", 129809: "24A", 129810: "24B"}.get(m["pgn"])
        if kind is None:
            kind = MESSAGE_ID[f["Message ID"]]
        values = {
            name: f.get(name)
            for name in (
                "Latitude",
                "Longitude",
                "SOG",
                "COG",
                "Heading",
                "Rate of Turn",
                "Position Accuracy",
                "Time Stamp",
                "Nav Status",
                "Name",
                "Callsign",
                "Type of ship",
                "Length",
                "Beam",
                "Position reference from Starboard",
                "Position reference from Bow",
                "Destination",
                "Draft",
                "IMO number",
            )
            if name in f
        }
        out.append(Report(k, kind, f["User ID"], CHANNEL[f["AIS Transceiver information"]], values))
    return out


def vdm_reports(lines: list[tuple[int, bytes]]) -> list[Report]:
    """The AIVDM messages of ``lines`` (each with its tick), read by pyais, in the PGNs' units
    and names: what the NMEA 2000 receiver should have sent for each."""
    out, parts = [], []
    for k, line in lines:
        fields = line.decode().strip().split(",")
        parts.append(line)
        if fields[1] != fields[2]:  # not the message's last sentence
            continue
        msg: dict[str, Any] = pyais_decode(*parts).asdict()
        parts = []
        kind = str(msg["msg_type"])
        if kind == "24":
            kind += "AB"[msg["partno"]]
        values: dict[str, Any] = {}
        if kind in ("1", "3", "18"):
            lat, lon = position_of(fields[5], kind)
            values = {
                "Latitude": None if lat == 91 * 600000 else lat / 600000,
                "Longitude": None if lon == 181 * 600000 else lon / 600000,
                "SOG": None if msg["speed"] == 102.3 else msg["speed"] * KNOT,
                "COG": None if msg["course"] == 360.0 else math.radians(msg["course"]),
                "Heading": None if msg["heading"] == 511 else math.radians(msg["heading"]),
                "Position Accuracy": "High" if msg["accuracy"] else "Low",
                "Time Stamp": "Not available" if msg["second"] == 60 else str(msg["second"]),
            }
            if kind != "18":
                values["Rate of Turn"] = math.radians(msg["turn"] / 60.0)  # deg/min, rounded
                values["Nav Status"] = NAV_STATUS[int(msg["status"])]
        else:
            values = {
                "Name": msg.get("shipname") or None,
                "Callsign": msg.get("callsign") or None,
                "Type of ship": SHIP_TYPE.get(int(msg["ship_type"]))
                if "ship_type" in msg
                else None,
            }
            if kind in ("5", "24B"):
                values |= dimensions(
                    msg["to_bow"], msg["to_stern"], msg["to_port"], msg["to_starboard"]
                )
            if kind == "5":
                values["Destination"] = msg["destination"] or None
                values["Draft"] = msg["draught"] or None
                values["IMO number"] = msg["imo"] or None
            if kind == "24A":
                del values["Callsign"], values["Type of ship"]
        out.append(Report(k, kind, msg["mmsi"], fields[4], values))
    assert not parts
    return out


def position_of(payload: str, kind: str) -> tuple[int, int]:
    """A position report's latitude and longitude fields [1/10000 min], read from the
    sentence's armoured payload (pyais rounds them to 6 decimals of a degree; ITU-R M.1371-5:
    longitude 28 bits from bit 61, latitude 27 from 89 in messages 1-3; from 57 and 85 in
    message 18)."""
    bits = "".join(f"{(v - 8 if (v := ord(c) - 48) > 40 else v):06b}" for c in payload)

    def field(start: int, width: int) -> int:
        value = int(bits[start : start + width], 2)
        return value - (1 << width) if value >> (width - 1) else value

    at = 57 if kind == "18" else 61
    return field(at + 28, 27), field(at, 28)


def dimensions(bow: int, stern: int, port: int, starboard: int) -> dict[str, Any]:
    """129794's and 129810's dimension fields from AIS's A, B, C, D."""
    return {
        "Length": bow + stern or None,
        "Beam": port + starboard or None,
        "Position reference from Starboard": starboard if port + starboard else None,
        "Position reference from Bow": bow if bow + stern else None,
    }


def same(n2k: Report, vdm: Report) -> None:
    """The PGN carries the AIVDM message's values (each within the PGN's resolution)."""
    assert (n2k.k, n2k.kind, n2k.mmsi, n2k.channel) == (vdm.k, vdm.kind, vdm.mmsi, vdm.channel)
    got = {k: v for k, v in n2k.values.items() if v is not None}
    want = {k: v for k, v in vdm.values.items() if v is not None}
    assert got.keys() == want.keys(), (n2k, vdm)
    for name, value in want.items():
        if name in ("Latitude", "Longitude"):
            assert got[name] == pytest.approx(value, abs=LAT_LON), (name, n2k, vdm)
        elif name == "SOG":
            assert got[name] == pytest.approx(value, abs=SOG), (name, n2k, vdm)
        elif name in ("COG", "Heading"):
            assert math.remainder(got[name] - value, TWO_PI) == pytest.approx(0, abs=ANGLE)
        elif name == "Rate of Turn":  # pyais rounds the code's deg/min to whole ones
            assert got[name] == pytest.approx(value, abs=math.radians(0.51 / 60.0) + ROT)
        elif name == "Draft":
            assert got[name] == pytest.approx(value, abs=1e-9)
        else:
            assert got[name] == value, (name, n2k, vdm)


# --- busy-fjord, heard on NMEA 2000 and on NMEA 0183 ----------------------------------------------
FJORD = """
# busy-fjord's (profiles/bench/busy-fjord.toml): Odin at 10.7 kn among its six ships; one AIS
# receiver, at a fixed start time
[bench]
name = "busy-fjord-n2k"
rate_hz = 100
seed = 0
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"

[vessel]
profile = "odin"
heading_deg = 0.0
speed = 5.5
[vessel.commands]
"port.rpm" = 1800
"starboard.rpm" = 1800
"port.deflector" = 1
"starboard.deflector" = 1

[origin]
latitude = 59.41
longitude = 10.48

[weather]
preset = "calm"

[[traffic]]
file = "busy-fjord"

[[device]]
name = "ais"             # one name: one schedule, one drop stream (the two runs alike)
type = "{type}"
ports = ["{port}"]
"""
SECONDS = 400.0


@dataclass
class FjordRun:
    world: World
    lines: list[tuple[int, bytes]]  # every line, with its tick
    rows: dict[int, dict[int, list[float]]]  # at each tick with lines: MMSI -> traffic row
    idents: dict[int, Identity]  # by MMSI


def run_fjord(tmp_path, device_type: str, port: str) -> FjordRun:
    path = tmp_path / f"{device_type}.toml"
    path.write_text(FJORD.format(run_dir=tmp_path / "run", type=device_type, port=port))
    bench = load_bench(path)
    world = World(bench, SECONDS)
    world.start_utc = START
    traffic = world.sim.traffic
    assert traffic is not None
    lines: list[tuple[int, bytes]] = []
    rows: dict[int, dict[int, list[float]]] = {}

    def take(out) -> None:
        sent = [line for _, ls in out for line in ls]
        if sent:
            lines.extend((world.k, line) for line in sent)
            view = traffic.view()
            state = view.state.tolist()
            rows[world.k] = {t.identity.mmsi: r for t, r in zip(view.targets, state, strict=True)}

    take(world.first_epoch())
    for _ in range(round(SECONDS * bench.rate_hz)):
        take(world.tick())
    idents = {t.identity.mmsi: t.identity for t in traffic.targets}
    return FjordRun(world, lines, rows, idents)


@pytest.fixture(scope="module")
def fjord(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("n2k-ais")
    n2k = run_fjord(tmp, "n2k-ais", "ydraw+udp://127.0.0.1:41460")
    vdm = run_fjord(tmp, "ais", "udp://127.0.0.1:41461")
    decoded = decode([line for _, line in n2k.lines])
    return n2k, vdm, decoded


def tick_ms(run: FjordRun) -> float:
    return 1000.0 / run.world.bench.rate_hz


def device_of(run: FjordRun) -> Any:
    (rt,) = run.world.devices
    return rt.device


@needs_analyzerjs
def test_the_bench_is_busy_fjords_traffic_with_a_class_b_target(fjord):
    n2k, vdm, _ = fjord
    theirs = [t.identity for t in load_bench("busy-fjord").traffic]
    assert [t.identity for t in n2k.world.bench.traffic] == theirs
    assert [t.identity for t in vdm.world.bench.traffic] == theirs
    assert [i.ais_class for i in theirs].count("B") == 1


@needs_analyzerjs
def test_every_message_decodes_one_for_each_sent(fjord):
    n2k, _, decoded = fjord
    dev = device_of(n2k)
    assert dev.model == "n2k-ais" and dev.node.source == 14
    # every line taken in: the frames of the decoded messages are all the lines sent
    assert sum(len(m["input"]) for m in decoded) == len(n2k.lines)
    assert all(m.get("description") and "fields" in m for m in decoded)
    pgn_count = Counter(m["pgn"] for m in decoded)
    assert set(pgn_count) == {60928, 126996, *AIS_PGNS}, pgn_count  # nothing unknown
    assert pgn_count[60928] == pgn_count[126996] == 1  # the address claim, at the first epoch
    claim = next(m for m in decoded if m["pgn"] == 60928)["fields"]
    assert claim["Unique Number"] == 1005 and claim["Device Function"] == 195
    assert {m["src"] for m in decoded} == {14}
    # one decoded message per message sent, of each kind (129038: messages 1 and 3)
    sent = dev.messages
    assert sum(pgn_count[p] for p in AIS_PGNS) == sum(sent.values()) > 200
    assert pgn_count[129038] == sent["1"] + sent["3"]
    assert pgn_count[129794] == sent["5"] >= 5  # every Class A ship's static data
    assert pgn_count[129039] == sent["18"] >= 10  # the yacht: 30 s at 25 kn
    assert pgn_count[129809] == sent["24A"] == pgn_count[129810] == sent["24B"] >= 1
    assert dev.summary()["sentences_failed"] == {}


@needs_analyzerjs
def test_each_report_is_its_target_at_the_instant_it_was_sent(fjord):
    """The truth (the traffic's row at the tick) at the VHF message's resolution, then the
    PGN's: within 1/1200000 deg (+ 1e-7), 0.05 kn (+ 0.01 m/s), 0.05 deg, 0.5 deg for the
    heading; exactly what the message carried, within the PGN's resolution."""
    n2k, _, decoded = fjord
    origin = n2k.world.bench.origin
    checked = Counter()
    for r in n2k_reports(decoded, tick_ms(n2k)):
        if r.kind not in ("1", "3", "18"):
            continue
        row = n2k.rows[r.k][r.mmsi]
        lat, lon, _ = origin.to_geodetic(row[T_NORTH], row[T_EAST])
        v = r.values
        assert v["Latitude"] == pytest.approx(lat, abs=0.5 / 600000 + LAT_LON)
        assert v["Longitude"] == pytest.approx(lon, abs=0.5 / 600000 + LAT_LON)
        assert v["Latitude"] == pytest.approx(round(lat * 600000) / 600000, abs=LAT_LON)
        assert v["Longitude"] == pytest.approx(round(lon * 600000) / 600000, abs=LAT_LON)
        speed = row[T_SPEED]
        assert v["SOG"] == pytest.approx(speed, abs=0.05 * KNOT + SOG)
        assert v["SOG"] == pytest.approx(round(speed / KNOT * 10) / 10 * KNOT, abs=SOG)
        course = row[T_HEADING]  # = the course over ground (no drift)
        assert math.remainder(v["COG"] - course, TWO_PI) == pytest.approx(
            0, abs=math.radians(0.05) + ANGLE
        )
        assert math.remainder(v["Heading"] - course, TWO_PI) == pytest.approx(
            0, abs=math.radians(0.5) + ANGLE
        )
        at = START + timedelta(milliseconds=r.k * tick_ms(n2k))
        assert v["Time Stamp"] == str(at.second)
        assert v["Position Accuracy"] == "High"
        ident = n2k.idents[r.mmsi]
        if r.kind == "18":
            assert ident.ais_class == "B"
        else:
            assert ident.ais_class == "A"
            assert v["Nav Status"] == NAV_STATUS[ident.nav_status]
            rot = math.degrees(row[T_YAW_RATE]) * 60.0  # deg/min; the message's code, read
            code = ais.rot_field(rot)
            assert v["Rate of Turn"] == pytest.approx(
                math.copysign((code / 4.733) ** 2, code) * math.pi / 10800.0, abs=ROT
            )
        checked[r.kind] += 1
    assert checked["1"] > 150 and checked["18"] >= 10


@needs_analyzerjs
def test_the_static_data_is_the_targets_identity(fjord):
    n2k, _, decoded = fjord
    seen = set()
    for r in n2k_reports(decoded, tick_ms(n2k)):
        if r.kind in ("1", "3", "18"):
            continue
        ident = n2k.idents[r.mmsi]
        v = r.values
        assert v.get("Name") == (ident.name if r.kind in ("5", "24A") else None)
        assert (r.kind in ("5", "24A", "24B")) and (r.kind == "5") == (ident.ais_class == "A")
        if r.kind in ("5", "24B"):
            assert v.get("Callsign") == (ident.callsign or None)
            assert v["Type of ship"] == SHIP_TYPE[ident.ship_type]
            dims = dimensions(ident.to_bow, ident.to_stern, ident.to_port, ident.to_starboard)
            assert {k: v.get(k) for k in dims} == dims
        if r.kind == "5":
            assert v.get("Destination") == (ident.destination or None)
            assert "Draft" not in v and "IMO number" not in v  # none given: not available
        seen.add((r.kind, r.mmsi))
    classes = Counter(n2k.idents[m].ais_class for _, m in seen)
    assert {k for k, _ in seen} == {"5", "24A", "24B"}
    assert classes["A"] == 5 and classes["B"] == 2  # every ship's; the yacht's two parts


@needs_analyzerjs
def test_the_same_messages_as_the_0183_receiver_at_the_same_instants(fjord):
    n2k, vdm, decoded = fjord
    got = n2k_reports(decoded, tick_ms(n2k))
    want = vdm_reports(vdm.lines)
    assert len(got) == len(want) > 200
    for a, b in zip(got, want, strict=True):
        same(a, b)
    assert device_of(n2k).messages == device_of(vdm).messages


def test_the_bus_budget_is_the_worst_case_of_20_class_a_targets():
    """Each PGN's frames at the worst-case bits (160 an 8-byte frame), at the shortest
    interval (2 s) and the static data's (6 min), of ``budget_targets`` Class A stand-ins;
    the line load is the same messages' YDRAW lines."""
    dev = build_device(config("n2k-ais", n2k_ais.N2kAis.sentences_available, ports=()), 0, ORIGIN)
    assert dev.node.framing == "ydraw"
    utc = START

    def bits(pgn: int, length: int) -> float:
        return sum(frame_bits(f) for f in frames_of(pgn, bytes(length), 4, 14, Sequences(), True))

    assert bits(129038, 28) == 5 * 160 and bits(129794, 75) == 11 * 160
    expected = 20 * (bits(129038, 28) / 2.0 + bits(129794, 75) / 360.0)
    assert dev.bus_bits_per_s(utc) == pytest.approx(expected)
    line = len(b"12:00:00.000 R 11F80E0E 00 1C 01 01 00 00 00 40\r\n")
    assert dev.bytes_per_s(utc) == pytest.approx(20 * line * (5 / 2.0 + 11 / 360.0))
    assert dev.epoch_bytes(utc) == math.ceil(dev.bytes_per_s(utc) / 10.0)


# --- the receiving, draw for draw ------------------------------------------------------------
ORIGIN = Origin(59.41, 10.48)
RATE_HZ = 10.0


def config(
    model: str, sentences: tuple[str, ...], ports: tuple[str, ...] | None = None, **settings
) -> DeviceConfig:
    """One receiver with noise, drop rate and faults; the 0183 one or the N2K one (its node
    settings from devices/n2k-ais.toml, Actisense lines)."""
    node = dict(load_device_type("n2k-ais").settings) if model == "n2k-ais" else {}
    return DeviceConfig(
        name="ais",
        type=model,
        model=model,
        talker="AI",
        rate_hz=RATE_HZ,
        baud=38400,
        sentences=sentences,
        lever_arm=(1.0, 0.5, -3.0),
        ports=ports if ports is not None else ("actisense+pty://ais",) * (model == "n2k-ais"),
        noise={"position": NoiseSpec(white=3.0)},
        faults=(
            FaultSpec("dropout", 100.0, 130.0),
            FaultSpec("freeze", 200.0, 230.0),
            FaultSpec("invalid", 300.0, 320.0),
        ),
        settings={**node, "range_nm": 20.0, "class_b_range_nm": 8.0, "drop_rate": 0.2, **settings},
    )


def station(mmsi: int, ais_class: str = "A", status: int = 0) -> Identity:
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
        imo=9000000 + mmsi % 1000,
        destination="OSLO",
        draught=7.3,
    )


# name, identity, north, east, course [deg], speed [kn], rate of turn [deg/min]
STATIONS = [
    ("a-slow", station(257100001), 2000.0, 0.0, 90.0, 8.0, 0.0),
    ("a-fast", station(257100002), -3000.0, 1000.0, 10.0, 18.0, 0.0),
    ("a-turn", station(257100003), 1000.0, 3000.0, 0.0, 9.0, 40.0),
    ("a-anchor", station(257100004, status=1), 500.0, -800.0, 0.0, 0.0, 0.0),
    ("b-fast", station(257100005, "B"), -1000.0, -1000.0, 200.0, 12.0, 0.0),
    ("b-far", station(257100007, "B"), 20000.0, 0.0, 0.0, 5.0, 0.0),  # out of Class B range
]


def receive(dev: Any, seconds: float = 420.0) -> list[tuple[int, bytes]]:
    """``dev`` at 10 Hz for ``seconds`` among ``STATIONS``, the own ship at 2 m/s: every line,
    with its tick."""
    targets = tuple(Target(n, i, Course(n0, e0, 0.0, 0.0)) for n, i, n0, e0, *_ in STATIONS)
    out = []
    for k in range(round(seconds * RATE_HZ)):
        t = k / RATE_HZ
        state = np.zeros((len(STATIONS), T_SIZE))
        for i, (_, _, n0, e0, c, v, rot) in enumerate(STATIONS):
            r, speed = math.radians(rot / 60.0), v * KNOT
            state[i, [T_NORTH, T_EAST, T_HEADING, T_SPEED, T_YAW_RATE]] = (
                n0 + speed * t * math.cos(math.radians(c)),
                e0 + speed * t * math.sin(math.radians(c)),
                (math.radians(c) + r * t) % TWO_PI,
                speed,
                r,
            )
        truth = Truth(
            t=t,
            utc=START + timedelta(seconds=t),
            eta=np.array([2.0 * t, 0.0, 0.0, 0.0, 0.0, 0.3]),
            nu=np.array([2.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
            traffic=TrafficView(targets, state),
        )
        out += [(k, line) for line in dev.sample(truth)]
    return out


@needs_analyzerjs
def test_the_receiving_is_the_0183_receivers_draw_for_draw():
    """Drop rate, noise, dropout, freeze, invalid: the N2K receiver sends what the 0183 one
    of the same name and seed reports, message for message, value for value."""
    vdm_dev = Ais(config("ais", ("VDM",)), 11, ORIGIN)
    n2k_dev = build_device(config("n2k-ais", n2k_ais.N2kAis.sentences_available), 11, ORIGIN)
    vdm_lines, n2k_lines = receive(vdm_dev), receive(n2k_dev)
    assert all(line.startswith(b"A") for _, line in n2k_lines)  # Actisense lines, one a message
    got = n2k_reports(decode([line for _, line in n2k_lines]), 1000.0 / RATE_HZ)
    want = vdm_reports(vdm_lines)
    assert len(got) == len(want) > 100
    for a, b in zip(got, want, strict=True):
        same(a, b)
    s = n2k_dev.summary()
    assert s["dropped"] == vdm_dev.dropped > 10 and s["silenced"] == vdm_dev.silenced > 0
    assert s["out_of_range"] == vdm_dev.out_of_range > 0
    assert s["messages"] == dict(sorted(vdm_dev.messages.items()))
    # the invalid fault: no position, low accuracy
    invalid = [r for r in got if r.kind in ("1", "18") and 3000 <= r.k < 3200]
    assert invalid and all(
        r.values.get("Latitude") is None and r.values["Position Accuracy"] == "Low" for r in invalid
    )
    assert n2k_dev.describe() == (
        "ais (n2k-ais: 129038 129039 129794 129809 129810 at ITU-R M.1371 intervals, "
        "source 14, actisense)"
    )


def test_a_pgn_left_out_changes_nothing_else():
    """Only 129038 chosen: its lines are the full receiver's 129038 lines, bit for bit (each
    message is received, its position drawn, whether sent on or not)."""
    full = build_device(config("n2k-ais", n2k_ais.N2kAis.sentences_available), 11, ORIGIN)
    only = build_device(config("n2k-ais", ("129038",)), 11, ORIGIN)
    a = [x for x in receive(full, 200.0) if x[1].split()[2] == b"1F80E"]
    b = [x for x in receive(only, 200.0) if x[1].split()[2] == b"1F80E"]
    assert a == b and len(a) > 50
    assert set(only.messages) <= {"1", "3"} and only.messages["1"] == full.messages["1"]
    assert full.messages["18"] and full.messages["5"]  # (received by both: sent by one)


def test_unknown_kind_has_no_pgn():
    with pytest.raises(ValueError):
        n2k_ais.payload("4", station(1), "A", None)


def test_fields_pack_lsb_first_and_strings_pad_with_at():
    assert n2k_ais.pack([(1, 6), (0, 2), (0x12345678, 32)]) == b"\x01\x78\x56\x34\x12"
    assert n2k_ais.pack([(-2, 16)]) == b"\xfe\xff"
    with pytest.raises(ValueError):
        n2k_ais.pack([(1, 3)])  # not whole bytes
    with pytest.raises(ValueError):
        n2k_ais.pack([(256, 8)])
    value, bits = n2k_ais.text("Lady~x", 7)
    assert value.to_bytes(7, "little") == b"LADY?X@" and bits == 56  # the 6-bit alphabet
    lengths = {
        kind: len(n2k_ais.payload(kind, station(1), "A", ais.Dynamic(0, 0, 0, 0, 0, 0, 0, True)))
        for kind in ("1", "5", "18", "24A", "24B")
    }
    assert lengths == {"1": 28, "5": 75, "18": 27, "24A": 27, "24B": 35}  # canboat's Length


# --- a fleet's shared data link ---------------------------------------------------------------
FLEET = """
[bench]
name = "two"
rate_hz = 10
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"

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
class = "B"
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
speed_kn = 25

[[device]]
name = "alpha-ais"
type = "ais"
boat = "alpha"
ports = ["udp://127.0.0.1:41462"]

[[device]]
name = "alpha-n2k-ais"
type = "n2k-ais"
boat = "alpha"
ports = ["ydraw+udp://127.0.0.1:41463"]
"""


@needs_analyzerjs
def test_in_a_fleet_it_hears_the_shared_link_as_the_0183_receiver_on_its_boat(tmp_path):
    path = tmp_path / "two.toml"
    path.write_text(FLEET.format(run_dir=tmp_path / "run"))
    world = World(load_bench(path), 120.0)
    world.start_utc = START
    lines: dict[str, list[tuple[int, bytes]]] = {}

    def take(out) -> None:
        for rt, sent in out:
            lines.setdefault(rt.device.config.name, []).extend((world.k, x) for x in sent)

    take(world.first_epoch())
    for _ in range(1200):
        take(world.tick())
    assert world.air is not None
    got = n2k_reports(decode([x for _, x in lines["alpha-n2k-ais"]]), 100.0)
    want = vdm_reports(lines["alpha-ais"])
    assert len(got) == len(want) >= 55  # the coaster every 2 s, bravo every 30 s
    for a, b in zip(got, want, strict=True):
        same(a, b)
    assert {r.mmsi for r in got} == {257100001, 257000002}  # not its own boat
    assert {r.kind for r in got if r.mmsi == 257000002} >= {"18"}
