"""NMEA 2000 (hild/n2k/): CAN identifiers and fast packets, and every PGN the N2K sensors send
decoded by canboat's own decoder (analyzerjs of @canboat/canboatjs, not hild's code), each
field within its resolution of the truth at the instant it was sent.

The truth is the simulation's state at the tick the message was sent at (its YDRAW time), the
sensors placed at the body origin with no noise; the wind, which the anemometer works out from
the air's motion, is checked against the NMEA 0183 anemometer's MWV of the same instant,
decoded by pynmea2 (two encoders of one measurement, each read by a decoder not hild's).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pynmea2
import pytest

from hild.bench import load_bench
from hild.n2k import pgns
from hild.n2k.frames import (
    Frame,
    Sequences,
    can_id,
    fast_packet,
    frame_bits,
    frames_of,
    parse_can_id,
)
from hild.n2k.lines import actisense, parse_ydraw, ydraw
from hild.world.world import World
from tests.n2k_tools import decode, needs_analyzerjs

START = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


# --- the bus's framing ------------------------------------------------------------------------
def test_a_pdu1_pgn_carries_its_destination_and_a_pdu2_pgn_does_not():
    # ISO request (59904 = 0xEA00, PDU1) from 35 to 12 at priority 6; wind (130306, PDU2)
    assert can_id(59904, 6, 35, 12) == (6 << 26) | (0xEA0C << 8) | 35
    assert parse_can_id(can_id(59904, 6, 35, 12)) == (59904, 6, 35, 12)
    assert can_id(130306, 2, 12) == 0x09FD020C  # as YDRAW prints it, and canboat reads it
    assert parse_can_id(0x09FD020C) == (130306, 2, 12, 255)


def test_a_fast_packet_is_cut_six_then_seven_bytes_a_frame_with_its_counters():
    payload = bytes(range(43))  # 129029's length
    frames = fast_packet(0x0DF8050A, payload, sequence=5)
    assert len(frames) == 7  # 6 + 6 x 7 = 48 >= 43
    assert [f.data[0] for f in frames] == [(5 << 5) | i for i in range(7)]
    assert frames[0].data[1] == 43
    rebuilt = frames[0].data[2:] + b"".join(f.data[1:] for f in frames[1:])
    assert rebuilt[:43] == payload and set(rebuilt[43:]) == {0xFF}
    assert all(len(f.data) == 8 for f in frames)
    with pytest.raises(ValueError):
        fast_packet(0, bytes(224), 0)  # 32 frames hold 223 bytes


def test_each_pgn_counts_its_own_fast_packet_sequence():
    seq = Sequences()
    first = frames_of(129029, bytes(43), 3, 10, seq, fast=True)
    other = frames_of(126996, bytes(134), 6, 10, seq, fast=True)
    second = frames_of(129029, bytes(43), 3, 10, seq, fast=True)
    assert first[0].data[0] >> 5 == 0 and other[0].data[0] >> 5 == 0
    assert second[0].data[0] >> 5 == 1


def test_a_frame_s_bits_on_the_wire_at_worst():
    # an 8-byte extended frame: 131 bits before stuffing, at most 160 with it (the figure
    # bus-load reckonings use for NMEA 2000, e.g. canboat's and Actisense's)
    assert frame_bits(Frame(0, bytes(8))) == 160


def test_ydraw_lines_read_back_and_actisense_lines_hold_the_whole_message():
    frames = [Frame(0x09F8010A, bytes([1, 2, 3, 4, 5, 6, 7, 8]))]
    (line,) = ydraw(frames, START.replace(microsecond=123456))
    assert line == b"12:00:00.123 R 09F8010A 01 02 03 04 05 06 07 08\r\n"
    assert parse_ydraw(line) == frames[0]
    assert parse_ydraw(b"09F8010A 01 02") == Frame(0x09F8010A, b"\x01\x02")
    assert parse_ydraw(b"not a frame") is None
    line = actisense(129025, 2, 10, 255, bytes(range(8)), START)
    assert line == b"A120000.000 0AFF2 1F801 0001020304050607\r\n"


def test_a_name_packs_its_fields_lsb_first():
    name = pgns.iso_name(1001, 2046, device_function=145, device_class=60)
    assert name & 0x1FFFFF == 1001
    assert (name >> 21) & 0x7FF == 2046
    assert (name >> 40) & 0xFF == 145
    assert (name >> 49) & 0x7F == 60
    assert name >> 63 == 1  # arbitrary address capable
    with pytest.raises(ValueError):
        pgns.iso_name(1 << 21, 0, 0, 0)


# --- the sensors, decoded by canboat ------------------------------------------------------------
BENCH = """
[bench]
name = "n2k"
rate_hz = 100
seed = 3
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"

[vessel]
profile = "otter"
heading_deg = 30.0
speed = 1.2
[vessel.commands]
"port.rpm" = 900
"starboard.rpm" = 600

[origin]
latitude = 59.41
longitude = 10.48

[weather]
preset = "calm"         # a steady wind: no gusts, no waves
wind_speed = 8.0
wind_from_deg = 300.0

{devices}
"""

DEVICES = """
[[device]]
name = "gnss"
type = "n2k-gnss"
position = [0.0, 0.0, 0.0]
ports = ["ydraw+udp://127.0.0.1:41457"]

[[device]]
name = "compass"
type = "n2k-compass"
ports = ["ydraw+udp://127.0.0.1:41457"]

[[device]]
name = "wind"
type = "n2k-wind"
position = [0.0, 0.0, 0.0]
ports = ["ydraw+udp://127.0.0.1:41457"]
[device.settings]
true_wind = true
height_correction = false

[[device]]
name = "log"
type = "n2k-speed"
position = [0.0, 0.0, 0.0]
ports = ["ydraw+udp://127.0.0.1:41457"]

[[device]]
name = "wind0183"       # the 0183 twin (no noise, as the node: the two measure alike)
type = "anemometer"
position = [0.0, 0.0, 0.0]
sentences = ["MWV"]
ports = ["udp://127.0.0.1:41458"]
[device.settings]
height_correction = false
"""


def run_world(tmp_path, seconds: float):
    """The bench's world for ``seconds``: every line each device sent, and the state at
    every tick (by its simulated time in ms)."""
    path = tmp_path / "n2k.toml"
    path.write_text(BENCH.format(run_dir=tmp_path / "run", devices=DEVICES))
    world = World(load_bench(path), duration=seconds)
    world.start_utc = START
    lines: dict[str, list[bytes]] = {}
    states: dict[int, np.ndarray] = {}

    def take(out):
        for rt, ls in out:
            lines.setdefault(rt.device.config.name, []).extend(ls)

    states[0] = world.sim.x.copy()
    take(world.first_epoch())
    for _ in range(round(seconds / world.dt)):
        take(world.tick())
        states[round(world.t * 1000)] = world.sim.x.copy()
    return world, lines, states


def at_ms(message: dict) -> int:
    """The simulated time of a decoded message (its YDRAW clock: hh:mm:ss.ddd from 12:00)."""
    text = message["input"][0].split()[0]
    h, m, s = text.split(":")
    return round(((int(h) - 12) * 3600 + int(m) * 60 + float(s)) * 1000)


@pytest.fixture(scope="module")
def decoded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("n2k")
    world, lines, states = run_world(tmp, 20.0)
    messages = {name: decode(lines[name]) for name in ("gnss", "compass", "wind", "log")}
    return world, lines, states, messages


@needs_analyzerjs
def test_every_message_decodes_and_fast_packets_are_reassembled(decoded):
    world, lines, _, messages = decoded
    for name, decoded_ in messages.items():
        pgn_numbers = {m["pgn"] for m in decoded_}
        device = next(rt.device for rt in world.devices if rt.device.config.name == name)
        # each configured PGN, the address claim and the product information; nothing unknown
        assert pgn_numbers == {int(p) for p in device.config.sentences} | {60928, 126996}, name
        assert all("fields" in m and m.get("description") for m in decoded_), name
        # every frame of every message was taken in: the frames' count is the lines' count
        assert sum(len(m["input"]) for m in decoded_) == len(lines[name]), name
    gnss = messages["gnss"]
    claim = next(m for m in gnss if m["pgn"] == 60928)["fields"]
    assert claim["Unique Number"] == 1001 and claim["Device Function"] == 145
    info = next(m for m in gnss if m["pgn"] == 126996)["fields"]
    assert info["Model ID"] == "hild n2k-gnss" and info["Model Serial Code"] == "gnss"
    assert {m["src"] for m in gnss} == {10}
    # rates: the rapid PGNs at 10 Hz, 129029 and 126992 at 1 Hz (20 s: 201 and 21 epochs)
    count = {p: sum(1 for m in gnss if m["pgn"] == p) for p in (129025, 129026, 129029, 126992)}
    assert count == {129025: 201, 129026: 201, 129029: 21, 126992: 21}


@needs_analyzerjs
def test_the_gnss_and_compass_fields_are_the_truth_within_their_resolution(decoded):
    world, _, states, messages = decoded
    origin = world.bench.origin
    checked = 0
    for m in messages["gnss"] + messages["compass"]:
        x, f = states[at_ms(m)], m["fields"]
        lat, lon, height = origin.to_geodetic(x[0], x[1], x[2])
        psi = x[5] % (2 * math.pi)
        if m["pgn"] == 129025:
            # 1e-7 deg; canboatjs prints 7 decimals
            assert f["Latitude"] == pytest.approx(lat, abs=1.01e-7)
            assert f["Longitude"] == pytest.approx(lon, abs=1.01e-7)
        elif m["pgn"] == 129029:
            assert f["Latitude"] == pytest.approx(lat, abs=1e-9)  # 1e-16 deg: to the float
            assert f["Longitude"] == pytest.approx(lon, abs=1e-9)
            assert f["Altitude"] == pytest.approx(height, abs=1e-6)
            assert f["Number of SVs"] == 10 and f["Method"] == "GNSS fix"
            seconds = at_ms(m) / 1000.0
            assert f["Time"] == f"12:00:{seconds:02.0f}" and f["Date"] == "2026.06.01"
        elif m["pgn"] == 129026:
            # the velocity over ground, north and east rows of R(phi, theta, psi) nu (Fossen,
            # eq. 2.18): the antenna at the body origin
            cf, sf, ct, st, cp, sp = (
                math.cos(x[3]),
                math.sin(x[3]),
                math.cos(x[4]),
                math.sin(x[4]),
                math.cos(x[5]),
                math.sin(x[5]),
            )
            u, v, w = x[6], x[7], x[8]
            vn = cp * ct * u + (-sp * cf + cp * st * sf) * v + (sp * sf + cp * cf * st) * w
            ve = sp * ct * u + (cp * cf + sf * st * sp) * v + (-cp * sf + st * sp * cf) * w
            # SOG at 0.01 m/s (half of it, rounded), COG at 1e-4 rad: canboatjs prints 4
            # decimals of each (the half-unit of the last, and float noise)
            assert f["SOG"] == pytest.approx(math.hypot(vn, ve), abs=0.0051)
            cog = math.atan2(ve, vn) % (2 * math.pi)
            assert math.remainder(f["COG"] - cog, 2 * math.pi) == pytest.approx(0.0, abs=6e-5)
        elif m["pgn"] == 127250:
            assert math.remainder(f["Heading"] - psi, 2 * math.pi) == pytest.approx(0, abs=6e-5)
        elif m["pgn"] == 127257:
            assert f["Roll"] == pytest.approx(x[3], abs=6e-5)  # 1e-4 rad, rounded
            assert f["Pitch"] == pytest.approx(x[4], abs=6e-5)
            assert math.remainder(f["Yaw"] - x[5], 2 * math.pi) == pytest.approx(0, abs=6e-5)
        elif m["pgn"] == 127251:
            # the yaw rate psi' = (q sin(phi) + r cos(phi)) / cos(theta) (Fossen eq. 2.29), at
            # 3.125e-8 rad/s: canboatjs prints 6 decimals
            rate = (x[10] * math.sin(x[3]) + x[11] * math.cos(x[3])) / math.cos(x[4])
            assert f["Rate"] == pytest.approx(rate, abs=1e-6)
        elif m["pgn"] == 127258:
            assert f["Variation"] == pytest.approx(math.radians(3.0), abs=6e-5)
        else:
            continue
        checked += 1
    assert checked > 1000


@needs_analyzerjs
def test_wind_and_speed_through_the_water(decoded):
    world, lines, states, messages = decoded
    mwv = {}
    for line in lines["wind0183"]:
        s = pynmea2.parse(line.decode().strip())
        mwv.setdefault(s.reference, []).append((float(s.wind_angle), float(s.wind_speed)))
    apparent = [m["fields"] for m in messages["wind"] if m["pgn"] == 130306]
    app = [f for f in apparent if f["Reference"] == "Apparent"]
    true = [f for f in apparent if f["Reference"] == "True (boat referenced)"]
    # the anemometer twin (1 Hz) and the node (10 Hz) measure alike (no noise): the node's
    # every tenth epoch is the twin's; MWV has 0.1 deg and 0.1 m/s, 130306 1e-4 rad and 0.01
    for (angle, speed_), f in zip(mwv["R"], app[::10], strict=True):
        assert math.degrees(f["Wind Angle"]) == pytest.approx(angle, abs=0.056)
        assert f["Wind Speed"] == pytest.approx(speed_, abs=0.056)
    for (angle, speed_), f in zip(mwv["T"], true[::10], strict=True):
        assert math.degrees(f["Wind Angle"]) == pytest.approx(angle, abs=0.056)
        assert f["Wind Speed"] == pytest.approx(speed_, abs=0.056)
    assert app[0]["Wind Speed"] > 5.0  # (a wind there is)
    assert len(app) == 201 and len(true) == 201
    for m in messages["log"]:
        if m["pgn"] != 128259:
            continue
        x = states[at_ms(m)]
        # through the water: u less the current's (none here): 0.01 m/s
        assert m["fields"]["Speed Water Referenced"] == pytest.approx(x[6], abs=0.0051)


# --- what `hild check` says of a bus ---------------------------------------------------------
def bus_bench(tmp_path, devices: str) -> str:
    path = tmp_path / "bus.toml"
    path.write_text(BENCH.format(run_dir=tmp_path / "run", devices=devices))
    return str(path)


NODE = """
[[device]]
name = "{name}"
type = "{type}"
ports = ["{port}"]
{extra}
"""


def node(name: str, type_: str = "n2k-gnss", port: str = "ydraw+udp://127.0.0.1:41457", extra=""):
    return NODE.format(name=name, type=type_, port=port, extra=extra)


def test_a_bus_s_load_is_reckoned_against_250_kbit_s(tmp_path):
    bench = load_bench(bus_bench(tmp_path, node("gnss") + node("compass", "n2k-compass")))
    (bus,) = bench.buses
    assert bus.devices == ("gnss", "compass")
    # gnss: 129025, 129026, 127250 at 10 Hz (one frame, 160 bits), 129029 (7 frames) and
    # 126992 at 1 Hz; compass: 127250, 127251, 127257 at 10 Hz, 127258 at 1 Hz
    expected = 160 * (3 * 10 + 7 + 1) + 160 * (3 * 10 + 1)
    assert bus.bits_per_s == expected
    assert bench.budgets == ()  # (no serial line's byte budget for it)


def test_every_problem_of_a_bus_is_named(tmp_path):
    from hild.bench import BenchError

    fast = '[device.settings]\npgn_rates = { "129029" = 100.0 }\n'
    devices = (
        node("gnss", extra="rate_hz = 100\n" + fast)
        + node("gnss2", extra="rate_hz = 100\n" + fast.replace("]\n", "]\nsource = 30\n", 1))
        + node("log", "n2k-speed", extra="[device.settings]\nsource = 10\n")
        + node("gps", "gps", port="udp://127.0.0.1:41460")
        + node("mixed", "n2k-wind", port="udp://127.0.0.1:41460")
        + node("odd", "n2k-wind", port="canvas+udp://127.0.0.1:41461")
        + node(
            "slow",
            "n2k-compass",
            port="udp://127.0.0.1:41462",
            extra='[device.settings]\npgn_rates = { "127258" = 0.001 }\n',
        )
        + node("two", "n2k-wind", port='ydraw+udp://127.0.0.1:41463", "actisense+pty://two')
    )
    with pytest.raises(BenchError) as e:
        load_bench(bus_bench(tmp_path, devices))
    said = str(e.value)
    assert "a bus within NMEA 2000's 250 kbit/s" in said  # 2 x 168 kbit/s
    assert "settings.source = 10: expected a source address no other node" in said
    assert "(gnss has it)" in said
    assert "a port of NMEA 2000 devices only: gps sends NMEA 0183 there" in said
    assert "unknown framing 'canvas'" in said
    assert "settings.pgn_rates.127258 = 0.001: expected a rate from 1/60 to 100 Hz" in said
    # a node speaks one framing: which one it took of two hung on a set's order
    assert "expected one framing on all of a node's ports (these name actisense, ydraw" in said


def test_the_built_in_n2k_bench_puts_three_nodes_on_one_bus():
    bench = load_bench("n2k")
    (bus,) = bench.buses
    assert bus.url == "ydraw+udp://127.0.0.1:1457" and bus.devices == ("gnss", "wind", "ais")
    assert 0.02 < bus.load < 0.1  # (a GNSS at 10 Hz, wind at 10 Hz, AIS: a few %)
    assert len(bench.traffic) == 6
