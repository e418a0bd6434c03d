"""Runtime control of a fleet (hild/runtime.py, hild/control.py): `hild ctl` and MQTT control
address a boat by its name (``--boat``, ``"boat"``; the first boat by default), a reposition
and an actuator fault reach the boat asked for and no other, commands go to that boat's command
device, an unknown boat is refused naming the bench's boats, and the status (`hild ctl status`,
the status line) lists the boats. Through a running `hild run`: `hild ctl` over the run
directory's socket, MQTT through a real mosquitto, ports all ephemeral."""

from __future__ import annotations

import asyncio
import json
import math
import time

import pytest

from hild.geodesy import Origin
from tests.endpoints import Daemon, free_udp_port, nmea_line
from tests.forked_cli import run_hild
from tests.test_fleet import FLEET

ORIGIN = Origin(59.41, 10.48)  # FLEET's
BRAVO_START = (300.0, -200.0)  # FLEET's bravo, north and east [m]

THRUSTERS = """
[[device]]
name = "{boat}-thrusters"
type = "thruster-controller"
boat = "{boat}"
ports = ["udp://127.0.0.1:{port}?listen=1"]
[device.settings]
watchdog_s = 3600.0  # (one request's commands hold for the test)
"""

ARM = nmea_line("RCTRC,0,0.0,P,0.0,P,,B,C", b"").decode()  # both thrusters, neutral
AHEAD = nmea_line("RCTRC,0,80.0,P,,V,,B,C", b"").decode()  # both thrusters 80 % ahead


def at_rest_fleet(tmp_path, extra: str = "") -> str:
    """FLEET's two boats at rest in a calm sea, each with its thruster controller on a port of
    its own (nothing sends to them: commands come through runtime control)."""
    devices = "".join(THRUSTERS.format(boat=b, port=free_udp_port()) for b in ("alpha", "bravo"))
    text = FLEET.format(run_dir=tmp_path / "run", devices=devices).replace("speed = 1.5\n", "")
    path = tmp_path / "fleet.toml"
    path.write_text(text + extra)
    return str(path)


def metres(a: dict, b: tuple[float, float]) -> float:
    """How far a status's place (latitude, longitude) is from the NED point ``b``."""
    lat, lon, _ = ORIGIN.to_geodetic(b[0], b[1], 0.0)
    north = (a["latitude"] - lat) * 111_320.0
    east = (a["longitude"] - lon) * 111_320.0 * math.cos(math.radians(lat))
    return math.hypot(north, east)


# --- hild ctl ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """A running fleet: alpha at the origin heading north, bravo 300 m north, 200 m west,
    heading east, both at rest; its run directory."""
    tmp = tmp_path_factory.mktemp("fleet-control")
    daemon = Daemon(at_rest_fleet(tmp), "--time-scale", "5", tmp=tmp)
    yield daemon, tmp / "run"
    daemon.stop()


def ctl(run_dir, *args: str) -> tuple[int, dict | None, str]:
    """`hild ctl ...`: exit status, the answer printed (None if none), stderr."""
    done = run_hild("ctl", "--run-dir", str(run_dir), *args)
    answer = json.loads(done.stdout) if done.stdout.strip() else None
    return done.returncode, answer, done.stderr


def boats(run_dir) -> dict:
    code, answer, err = ctl(run_dir, "status")
    assert code == 0, err
    return answer["status"]["boats"]


def until(run_dir, seen, timeout: float = 15.0) -> dict:
    """The boats' status once ``seen(boats)`` holds (a request applies at the next tick, and
    shows in the next snapshot, twice a wall second); the last one read otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        now = boats(run_dir)
        if seen(now) or time.monotonic() > deadline:
            return now
        time.sleep(0.3)


def test_a_reposition_of_bravo_moves_bravo_only(fleet):
    daemon, run_dir = fleet
    before = boats(run_dir)
    assert metres(before["bravo"], BRAVO_START) < 0.5 and metres(before["alpha"], (0, 0)) < 0.5
    args = ("--north", "-400", "--east", "600", "--heading", "45")
    code, answer, err = ctl(run_dir, "reposition", "--boat", "bravo", *args)
    assert code == 0, err
    assert answer == {**answer, "ok": True, "boat": "bravo", "north": -400.0, "east": 600.0}
    after = until(run_dir, lambda b: metres(b["bravo"], (-400.0, 600.0)) < 0.5)
    assert metres(after["bravo"], (-400.0, 600.0)) < 0.5, after
    assert after["bravo"]["heading_deg"] == pytest.approx(45.0, abs=0.2)
    # alpha, at rest, where it was: the reposition was bravo's alone
    assert after["alpha"]["latitude"] == pytest.approx(before["alpha"]["latitude"], abs=1e-6)
    assert after["alpha"]["longitude"] == pytest.approx(before["alpha"]["longitude"], abs=1e-6)
    assert after["alpha"]["heading_deg"] == pytest.approx(before["alpha"]["heading_deg"], abs=0.1)
    logged = [e for e in daemon.events("control.reposition")]
    assert logged and logged[-1]["boat"] == 1  # the record carried bravo's index


def test_no_boat_is_the_first_boat(fleet):
    daemon, run_dir = fleet
    before = boats(run_dir)
    code, answer, err = ctl(run_dir, "reposition", "--north", "20", "--east", "-10")
    assert code == 0 and answer["boat"] == "alpha", err
    after = until(run_dir, lambda b: metres(b["alpha"], (20.0, -10.0)) < 0.5)
    assert metres(after["alpha"], (20.0, -10.0)) < 0.5, after
    assert after["bravo"]["latitude"] == pytest.approx(before["bravo"]["latitude"], abs=1e-6)


def test_an_unknown_boat_is_refused_naming_the_benchs_boats_and_nothing_is_applied(fleet):
    daemon, run_dir = fleet
    before = boats(run_dir)
    for args in (
        ("reposition", "--boat", "charlie", "--north", "0", "--east", "0"),
        ("fault", "--boat", "charlie", "--actuator", "port", "lost"),
        ("commands", "--boat", "charlie", ARM),
    ):
        code, answer, err = ctl(run_dir, *args)
        assert code == 1 and answer["ok"] is False, (args, answer)
        request = args[0]
        expected = (
            f"control/{request}: boat = 'charlie': expected a boat of the bench: alpha, bravo"
        )
        assert answer["error"] == expected and expected in err, (args, answer)
    # a device or a sensor on another boat than the one named: refused, naming the boat's
    code, answer, _ = ctl(
        run_dir, "commands", "--boat", "alpha", "--device", "bravo-thrusters", ARM
    )
    assert code == 1
    assert (
        "device = 'bravo-thrusters': expected a command device on alpha (alpha-thrusters)"
        in (answer["error"])
    )
    code, answer, _ = ctl(run_dir, "fault", "--boat", "bravo", "--actuator", "rudder", "stuck")
    assert code == 1 and "expected an actuator of bravo: port, starboard" in answer["error"]
    time.sleep(1.0)  # (two snapshots: anything applied would show)
    after = boats(run_dir)
    for name in ("alpha", "bravo"):
        assert after[name]["latitude"] == pytest.approx(before[name]["latitude"], abs=1e-6)
        assert all(a["speed"] == 0.0 for a in after[name]["actuators"].values()), after


def test_commands_and_an_actuator_fault_reach_the_boat_asked_for(fleet):
    """Commands with --boat go to that boat's controller only; then bravo's port thruster
    lost: it stops, bravo's starboard and alpha's port thrusters run on."""
    daemon, run_dir = fleet
    code, answer, err = ctl(run_dir, "commands", "--boat", "bravo", ARM, AHEAD)
    assert code == 0 and answer["results"] == ["applied", "applied"], err
    assert answer["boat"] == "bravo"
    running = until(run_dir, lambda b: b["bravo"]["actuators"]["port"]["speed"] > 300.0)
    assert running["bravo"]["actuators"]["port"]["speed"] > 300.0, running
    assert all(a["speed"] == 0.0 for a in running["alpha"]["actuators"].values()), running
    # a device named: its own boat, whatever the default
    code, answer, err = ctl(run_dir, "commands", "--device", "alpha-thrusters", ARM, AHEAD)
    assert code == 0 and answer["boat"] == "alpha", err
    until(run_dir, lambda b: b["alpha"]["actuators"]["port"]["speed"] > 300.0)
    code, answer, err = ctl(run_dir, "fault", "--boat", "bravo", "--actuator", "port", "lost")
    assert code == 0, err
    assert answer == {**answer, "ok": True, "boat": "bravo", "actuator": "port", "kind": "lost"}
    after = until(run_dir, lambda b: b["bravo"]["actuators"]["port"]["speed"] == 0.0)
    assert after["bravo"]["actuators"]["port"]["speed"] == 0.0, after
    assert after["bravo"]["actuators"]["starboard"]["speed"] > 300.0, after
    assert after["alpha"]["actuators"]["port"]["speed"] > 300.0, after  # not alpha's
    # cleared: bravo's port obeys the next command again
    code, _, err = ctl(run_dir, "fault", "--boat", "bravo", "--actuator", "port", "clear")
    assert code == 0, err
    code, _, err = ctl(run_dir, "commands", "--boat", "bravo", AHEAD)
    assert code == 0, err
    again = until(run_dir, lambda b: b["bravo"]["actuators"]["port"]["speed"] > 300.0)
    assert again["bravo"]["actuators"]["port"]["speed"] > 300.0, again


def test_the_status_line_lists_the_boats(fleet):
    """The status line of the running fleet's snapshot: the time, then a line per boat, its
    name first, with its place and motion."""
    from hild.live.statusline import render

    daemon, run_dir = fleet
    code, answer, _ = ctl(run_dir, "status")
    lines = [t.plain for t in render(answer["status"]).renderables]
    assert lines[0].startswith("t ") and "SOG" not in lines[0]
    alpha, bravo = lines[1], lines[2]
    assert alpha.startswith("alpha  ") and bravo.startswith("bravo  ")
    for line in (alpha, bravo):
        assert " N " in line and " E" in line and "SOG" in line and "COG" in line
    assert lines[3].startswith("actuators (alpha): ")


# --- MQTT control -----------------------------------------------------------------------------
def test_mqtt_control_addresses_a_boat_by_name(tmp_path, broker, subscriber):
    from tests.mqtt_endpoints import wait_until

    mqtt = (
        f'\n[mqtt]\nurl = "mqtt://127.0.0.1:{broker.port}"\nprefix = "hild/fleet"\ncontrol = true\n'
    )
    daemon = Daemon(at_rest_fleet(tmp_path, mqtt), "--time-scale", "5", tmp=tmp_path)

    def ask(request: str, body: dict) -> dict:
        since = time.monotonic()
        subscriber.publish(f"hild/fleet/control/{request}", json.dumps(body))

        def answered():
            answers = subscriber.on("hild/fleet/control/result", since=since)
            return next((a for a in answers if a.get("id") == body["id"]), None)

        answer = wait_until(answered, 15.0)
        assert answer is not None, f"no answer to {body!r}"
        return answer

    def state(boat: str, since: float) -> dict | None:
        seen = subscriber.on(f"hild/fleet/boats/{boat}/state", since=since)
        return seen[-1] if seen else None

    try:
        assert wait_until(lambda: state("alpha", 0.0) and state("bravo", 0.0), 30.0)
        move = {"id": "r1", "boat": "bravo", "north": 150.0, "east": 250.0, "heading_deg": 180}
        answer = ask("reposition", move)
        assert answer == {**answer, "ok": True, "boat": "bravo", "north": 150.0, "east": 250.0}
        since = time.monotonic()
        moved = wait_until(
            lambda: (s := state("bravo", since)) and abs(s["north"] - 150.0) < 0.5 and s, 15.0
        )
        assert moved and moved["east"] == pytest.approx(250.0, abs=0.5), moved
        alpha = state("alpha", since)
        assert (alpha["north"], alpha["east"]) == pytest.approx((0.0, 0.0), abs=0.01)
        fault = {"id": "f1", "boat": "bravo", "actuator": "starboard", "kind": "stuck"}
        answer = ask("fault", fault)
        assert answer == {**answer, "ok": True, "boat": "bravo", "actuator": "starboard"}
        answer = ask("reposition", {"id": "r2", "boat": "delta", "north": 0.0, "east": 0.0})
        assert answer["ok"] is False
        assert answer["error"] == (
            "control/reposition: boat = 'delta': expected a boat of the bench: alpha, bravo"
        )
    finally:
        daemon.stop()


# --- a one-boat bench: as before ----------------------------------------------------------------
def test_a_one_boat_bench_answers_as_before_and_takes_only_its_own_boat_s_name():
    """Its answers carry no boat, its records are as they were (boat 0: the world's own
    simulation); ``boat`` may name its one boat (the vessel's name), no other."""
    from hild.bench import load_bench, resolve_bench
    from hild.control import ActuatorFault, Reposition
    from hild.world.world import World

    world = World(load_bench(resolve_bench("default")), duration=60.0)

    def ask(request: str, body: dict) -> dict:
        payload = json.dumps(body).encode()
        return asyncio.run(world.runtime_control.handle(request, payload, "test"))

    answer = ask("reposition", {"north": 12.0, "east": -3.0})
    assert answer == {
        "id": None,
        "request": "reposition",
        "north": 12.0,
        "east": -3.0,
        "ok": True,
        "t": 0.0,
    }
    assert ask("fault", {"actuator": "port", "kind": "stuck"})["ok"]
    assert world.queue.drain() == [Reposition(12.0, -3.0, None, None), ActuatorFault(0, "stuck")]
    answer = ask("reposition", {"boat": "odin", "north": 1.0, "east": 2.0})
    assert answer["ok"] and "boat" not in answer
    answer = ask("reposition", {"boat": "bravo", "north": 1.0, "east": 2.0})
    assert answer["error"] == (
        "control/reposition: boat = 'bravo': expected the bench's one boat, odin "
        "(a one-boat bench: leave boat out)"
    )
    world.apply_controls()
    assert (float(world.sim.x[0]), float(world.sim.x[1])) == (1.0, 2.0)
