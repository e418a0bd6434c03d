"""The engine gateway on NMEA 2000 (hild/n2k/engines.py, the ``n2k-engine`` kind): its PGNs
decoded by canboat's own decoder (analyzerjs of @canboat/canboatjs, not hild's code), each
field within its resolution of the actuators' state at the tick the message was sent at (its
YDRAW time): Odin's jets (their RPM and nozzles as engines and rudders) and the Otter's
propellers (engines only, one turning astern), held commands, no noise."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest

from hild.bench import load_bench
from hild.devices.catalog import load_device_type
from hild.model.layout import S_ANGLE, S_SIZE, S_SPEED
from hild.n2k import engines
from hild.world.world import World
from tests.n2k_tools import decode, needs_analyzerjs

START = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
SECONDS = 5.0

BENCH = """
[bench]
name = "engines"
rate_hz = 100
seed = 5
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"

[vessel]
profile = "{profile}"
[vessel.commands]
{commands}

[origin]
latitude = 59.41
longitude = 10.48

[weather]
preset = "calm"

[[device]]
name = "engines"
type = "n2k-engine"
ports = ["ydraw+udp://127.0.0.1:41467"]
{device}
"""

# Odin's jets: RPM and nozzles held (the nozzles' 1 s lag and the RPM's 0.4 s move them for
# the first seconds, so the instants matter)
ODIN = (
    "odin",
    '"port.rpm" = 1200\n"starboard.rpm" = 1500\n'
    '"port.nozzle_deg" = 10.0\n"starboard.nozzle_deg" = -5.0',
    'sentences = ["127488", "127489", "127245"]\n[device.settings]\nengine_hours = 1.5',
)
# the Otter's propellers, the starboard one astern: an engine's speed is its shaft's
OTTER = ("otter", '"port.rpm" = 900\n"starboard.rpm" = -500', "")


def run_world(tmp_path, profile: str, commands: str, device: str):
    """The bench's world for SECONDS: the engine gateway's lines, and the actuators' states
    and commands at every tick (by simulated time in ms)."""
    path = tmp_path / f"{profile}.toml"
    text = BENCH.format(run_dir=tmp_path / "run", profile=profile, commands=commands, device=device)
    path.write_text(text)
    world = World(load_bench(path), duration=SECONDS)
    world.start_utc = START
    lines: list[bytes] = []
    states: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def take(out):
        for rt, ls in out:
            assert rt.device.config.name == "engines"
            lines.extend(ls)

    states[0] = (world.sim.act_state.copy(), world.sim.act_cmd.copy())
    take(world.first_epoch())
    for _ in range(round(SECONDS / world.dt)):
        take(world.tick())
        states[round(world.t * 1000)] = (world.sim.act_state.copy(), world.sim.act_cmd.copy())
    return world, lines, states


def at_ms(message: dict) -> int:
    """The simulated time of a decoded message (its YDRAW clock: hh:mm:ss.ddd from 12:00)."""
    text = message["input"][0].split()[0]
    h, m, s = text.split(":")
    return round(((int(h) - 12) * 3600 + int(m) * 60 + float(s)) * 1000)


def instance(fields: dict) -> int:
    """An engine's instance as canboat names it (ENGINE_INSTANCE), or a rudder's number."""
    value = fields["Instance"]
    names = {"Single Engine or Dual Engine Port": 0, "Dual Engine Starboard": 1}
    return names[value] if isinstance(value, str) else int(value)


@pytest.fixture(scope="module")
def odin(tmp_path_factory):
    world, lines, states = run_world(tmp_path_factory.mktemp("odin"), *ODIN)
    return world, lines, states, decode(lines)


@pytest.fixture(scope="module")
def otter(tmp_path_factory):
    world, lines, states = run_world(tmp_path_factory.mktemp("otter"), *OTTER)
    return world, lines, states, decode(lines)


# --- the encoders, by hand ----------------------------------------------------------------------
def test_the_payloads_hold_canboat_s_layouts():
    # 127488: instance, speed 0.25 rpm, boost 100 Pa (n/a), tilt/trim int8 (n/a), 16 reserved
    assert engines.engine_rapid(1, 1200.3) == bytes([1, 0xC1, 0x12, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF])
    assert engines.engine_rapid(0, None)[1:3] == b"\xff\xff"
    # 127489: 26 bytes, the hours (uint32 s) at bytes 11-14, the status words 0
    dynamic = engines.engine_dynamic(1, 3600.0)
    assert len(dynamic) == 26 and dynamic[0] == 1
    assert int.from_bytes(dynamic[11:15], "little") == 3600
    assert dynamic[19] == 0xFF and dynamic[20:24] == bytes(4) and dynamic[24:] == b"\x7f\x7f"
    # 127245: instance, direction order 3 bits + 5 reserved, order and position int16 1e-4
    rudder = engines.rudder(0, -0.1, 0.2, engines.TO_STARBOARD)
    assert (
        rudder
        == bytes([0, 0xF9])
        + (2000).to_bytes(2, "little")
        + (-1000).to_bytes(2, "little", signed=True)
        + b"\xff\xff"
    )
    assert engines.direction_order(0.1, 0.1) == engines.NO_ORDER
    assert engines.direction_order(-0.1, 0.0) == engines.TO_PORT


def test_the_device_type_is_an_engine_gateway():
    t = load_device_type("n2k-engine")
    assert t.model is engines.N2kEngine and t.rate_hz == 10.0
    # canboat's lookups: DEVICE_CLASS 50 "Propulsion", DEVICE_FUNCTION (50, 160) "Engine Gateway"
    assert t.settings["device_class"] == 50 and t.settings["device_function"] == 160
    assert t.settings["source"] == 20 and t.settings["unique_number"] == 1006
    assert set(t.quantity_units) == {"rpm", "angle"}


# --- decoded by canboat ---------------------------------------------------------------------------
@needs_analyzerjs
def test_jets_report_their_rpm_and_nozzles_at_every_instant(odin):
    world, lines, states, messages = odin
    assert {m["src"] for m in messages} == {20}
    # every frame taken in; nothing but the claim, the product information and the engines'
    assert sum(len(m["input"]) for m in messages) == len(lines)
    assert {m["pgn"] for m in messages} == {60928, 126996, 127488, 127489, 127245}
    claim = next(m for m in messages if m["pgn"] == 60928)["fields"]
    assert claim["Device Class"] == "Propulsion" and claim["Device Function"] == 160
    count: dict[tuple[int, int], int] = {}
    for m in messages:
        if m["pgn"] not in (127488, 127489, 127245):
            continue
        f = m["fields"]
        i = instance(f)
        count[m["pgn"], i] = count.get((m["pgn"], i), 0) + 1
        state, command = states[at_ms(m)]
        if m["pgn"] == 127488:
            # 0.25 rpm, rounded (half a step), printed by canboat to 0.1: 0.125 + 0.05
            assert f["Speed"] == pytest.approx(state[i * S_SIZE + S_SPEED], abs=0.175)
        elif m["pgn"] == 127245:
            # 1e-4 rad, rounded (half a step), printed by canboat to 1e-5 rad: 5e-5 + 1e-5
            position = state[i * S_SIZE + S_ANGLE]
            assert f["Position"] == pytest.approx(position, abs=6e-5)
            order = command[i * S_SIZE + S_ANGLE]  # its order: the nozzle command
            assert f["Angle Order"] == pytest.approx(order, abs=6e-5)
            moving = abs(order - position) >= 0.5e-4
            # towards the order from where the nozzle is (not the order's side of centre)
            towards = "Move to starboard" if order > position else "Move to port"
            expected = towards if moving else None
            assert f.get("Direction Order", "No Order") == (expected or "No Order")
    # 10 Hz for 5 s: 51 epochs; 127489 at 1 Hz: 6
    assert count == {
        **{(127488, i): 51 for i in (0, 1)},
        **{(127245, i): 51 for i in (0, 1)},
        **{(127489, i): 6 for i in (0, 1)},
    }
    # the commands were reached, and reported: 1200 and 1500 rpm, 10 and -5 deg
    engine_pgns = (127488, 127489, 127245)
    last = {
        (m["pgn"], instance(m["fields"])): m["fields"] for m in messages if m["pgn"] in engine_pgns
    }
    assert last[127488, 0]["Speed"] == pytest.approx(1200.0, abs=1.0)
    assert last[127488, 1]["Speed"] == pytest.approx(1500.0, abs=1.0)
    assert last[127245, 0]["Position"] == pytest.approx(math.radians(10.0), abs=2e-3)
    assert last[127245, 1]["Position"] == pytest.approx(math.radians(-5.0), abs=2e-3)
    # engine hours: 1.5 h at the start, the jets idling on from there (400 rpm at least)
    assert last[127489, 0]["Total Engine hours"] == "01:30:05"


@needs_analyzerjs
def test_propellers_report_their_shafts_speed_and_no_rudder(otter):
    world, lines, states, messages = otter
    assert {m["pgn"] for m in messages} == {60928, 126996, 127488, 127489}
    checked = 0
    for m in messages:
        if m["pgn"] != 127488:
            continue
        i = instance(m["fields"])
        state, _ = states[at_ms(m)]
        # astern too: the shaft's speed, whichever way it turns
        speed = abs(state[i * S_SIZE + S_SPEED])
        assert m["fields"].get("Speed", 0.0) == pytest.approx(speed, abs=0.25)
        checked += 1
    assert checked == 2 * 51
    last = {instance(m["fields"]): m["fields"] for m in messages if m["pgn"] == 127488}
    assert last[0]["Speed"] == pytest.approx(900.0, abs=1.0)
    assert last[1]["Speed"] == pytest.approx(500.0, abs=1.0)


@needs_analyzerjs
def test_noise_and_an_invalid_fault(tmp_path):
    """Noise on ``rpm`` moves the speed off the state; an invalid fault makes every measured
    field "not available" (canboat leaves it out) while the gateway goes on."""
    device = (
        'sentences = ["127488", "127245"]\n'
        "[device.noise.rpm]\nwhite = 20.0\n"
        '[[device.fault]]\nkind = "invalid"\nstart = 1.0\nend = 2.0\n'
    )
    _, lines, states = run_world(tmp_path, ODIN[0], ODIN[1], device)
    off, invalid = [], 0
    for m in decode(lines):
        if m["pgn"] not in (127488, 127245):
            continue
        t_ms, f = at_ms(m), m["fields"]
        if 1000 <= t_ms < 2000:
            assert "Speed" not in f and "Position" not in f
            invalid += 1
        elif m["pgn"] == 127488:
            i = instance(f)
            off.append(f["Speed"] - states[t_ms][0][i * S_SIZE + S_SPEED])
        else:
            # no noise on the angle: as the nozzle is
            i = instance(f)
            assert f["Position"] == pytest.approx(states[t_ms][0][i * S_SIZE + S_ANGLE], abs=6e-5)
    assert invalid == 2 * 2 * 10
    assert 10.0 < float(np.std(off)) < 30.0
