"""Several boats in one sea (hild/fleet.py, hild/world/boats.py): a fleet bench's rules, and two
boats each driven by its own controller over its own port, each boat's AIS receiver hearing the
other, decoded by gpsd's gpsdecode (a decoder that shares nothing with hild) and held against
the other boat's own GNSS fixes at the same instant."""

from __future__ import annotations

import json
import math
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hild.bench import BenchError, load_bench
from tests.endpoints import Daemon, Repeater, UdpClient, free_udp_port, nmea_line

GPSDECODE = shutil.which("gpsdecode")
KNOT = 1852.0 / 3600.0

FLEET = """
[bench]
name = "pair"
rate_hz = 20
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
north = 0.0
east = 0.0
mmsi = 257000001
ship_name = "ALPHA"
class = "A"
ship_type = 37

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
{devices}
"""

DEVICES = """
[[device]]
name = "{boat}-gps"
type = "gps"
boat = "{boat}"
position = [0.0, 0.0, 0.0]
sentences = ["RMC"]
ports = ["udp://127.0.0.1:{gps}"]

[[device]]
name = "{boat}-ais"
type = "ais"
boat = "{boat}"
ports = ["udp://127.0.0.1:{ais}"]

[[device]]
name = "{boat}-thrusters"
type = "thruster-controller"
boat = "{boat}"
ports = ["udp://127.0.0.1:{commands}?listen=1"]
[device.settings]
watchdog_s = 30.0  # (its lease is simulated time: at 50 times real time, 20 Hz is 0.4 Hz)
"""


def fleet_bench(tmp_path, **ports: dict[str, int]) -> str:
    devices = "".join(DEVICES.format(boat=boat, **p) for boat, p in ports.items())
    path = tmp_path / "pair.toml"
    path.write_text(FLEET.format(run_dir=tmp_path / "run", devices=devices))
    return str(path)


# --- the bench's rules ------------------------------------------------------------------------
def test_every_problem_of_a_fleet_is_named_at_once(tmp_path):
    text = FLEET.format(run_dir=tmp_path / "run", devices="")
    text = text.replace("north = 300.0\neast = -200.0", "north = 0.5\neast = 0.5")
    text = text.replace("mmsi = 257000002", "mmsi = 257000001")
    text += DEVICES.format(boat="alpha", gps=20001, ais=20002, commands=20003)
    text += DEVICES.format(boat="bravo", gps=20001, ais=20012, commands=20013)
    text += '\n[[device]]\nname = "loose"\ntype = "anemometer"\nports = ["udp://127.0.0.1:20020"]\n'
    text += '\n[[device]]\nname = "stray"\ntype = "gps"\nboat = "charlie"\n'
    text += 'ports = ["udp://127.0.0.1:20021"]\n'
    (tmp_path / "bad.toml").write_text(text)
    with pytest.raises(BenchError) as info:
        load_bench(tmp_path / "bad.toml")
    message = str(info.value)
    assert (
        "boat (bravo).north = [0.5, 0.5]: expected a start at least 2.00 m from boat alpha's"
        in (message)
    )
    assert "boat (bravo).mmsi = 257000001: expected an MMSI of its own (boat alpha has it)" in (
        message
    )
    assert "device (bravo-gps).ports = 'udp://127.0.0.1:20001': expected a port of bravo's own" in (
        message
    )
    assert "device (loose).boat = '': expected the boat it is on" in message
    assert "device (stray).boat = 'charlie': expected a boat of this bench: alpha, bravo" in message
    assert len(info.value.errors) == 5


def test_a_fleet_bench_keeps_its_boats_and_a_one_boat_bench_refuses_the_boat_key(tmp_path):
    path = fleet_bench(tmp_path, alpha=dict(gps=20001, ais=20002, commands=20003))
    bench = load_bench(path)
    alpha, bravo = bench.boats
    assert (alpha.name, bravo.name, bravo.north, bravo.east) == ("alpha", "bravo", 300.0, -200.0)
    assert bravo.identity.ais_class == "B" and bravo.identity.callsign == "LB2002"
    assert (bravo.identity.to_bow, bravo.identity.to_port) == (1, 1)  # the Otter's 2 x 1.08 m
    assert bench.vessel is alpha.vessel and bench.heading_deg == 0.0  # the first boat's
    (ais,) = [d for d in bench.devices if d.name == "alpha-ais"]  # its VDO: the boat's identity
    assert (ais.settings["own_mmsi"], ais.settings["own_name"]) == (257000001, "ALPHA")
    own = 'ports = ["udp://127.0.0.1:20002"]\n'  # alpha-ais's: a name of its own kept
    Path(path).write_text(
        Path(path).read_text().replace(own, own + '[device.settings]\nown_name = "OWN"\n')
    )
    (ais,) = [d for d in load_bench(path).devices if d.name == "alpha-ais"]
    assert (ais.settings["own_mmsi"], ais.settings["own_name"]) == (257000001, "OWN")
    one = tmp_path / "one.toml"
    one.write_text(
        '[bench]\nname = "one"\nrate_hz = 50\n[vessel]\nprofile = "otter"\n'
        '[[device]]\nname = "gps"\ntype = "gps"\nboat = "alpha"\nports = ["udp://127.0.0.1:20030"]\n'
    )
    with pytest.raises(BenchError, match=r"device \(gps\)\.boat = 'alpha': expected a key of a"):
        load_bench(one)


# --- two boats, two controllers, one sea ------------------------------------------------------
def fixes(client: UdpClient) -> list[tuple[float, str, tuple[float, float, float, float]]]:
    """The GNSS's RMC fixes as they came: arrival time, UTC second (ss), and latitude,
    longitude [deg], SOG [kn], COG [deg]."""
    return [
        (
            arrived,
            msg.timestamp.strftime("%S"),
            (msg.latitude, msg.longitude, float(msg.spd_over_grnd), float(msg.true_course or 0)),
        )
        for arrived, msg in client.sentences("RMC")
    ]


def bracket(fixes_, arrived: float, second: int):
    """The fixes of UTC second ``second`` and of the next second, the first the one that came
    nearest to ``arrived`` (a report carries its UTC second only, and is made within it; at 50
    times real time a minute passes in 1.2 s of wall time)."""
    nearest = min(
        (i for i, (_, ss, _) in enumerate(fixes_) if int(ss) == second),
        key=lambda i: abs(fixes_[i][0] - arrived),
    )
    return fixes_[nearest][2], fixes_[nearest + 1][2]


def off_segment_m(lat: float, lon: float, a, b) -> float:
    """How far (lat, lon) is from the straight line between fixes a and b [m] (local flat
    earth: a second of a boat's track)."""
    k_lat, k_lon = 111_320.0, 111_320.0 * math.cos(math.radians(a[0]))
    px, py = (lat - a[0]) * k_lat, (lon - a[1]) * k_lon
    bx, by = (b[0] - a[0]) * k_lat, (b[1] - a[1]) * k_lon
    span = bx * bx + by * by
    f = min(max((px * bx + py * by) / span, 0.0), 1.0) if span else 0.0
    return math.hypot(px - f * bx, py - f * by)


def decoded(client: UdpClient) -> list[tuple[float, dict]]:
    """Every AIVDM message the receiver sent, as gpsdecode decodes it (scaled: degrees, knots),
    with the arrival time of its last sentence."""
    lines = [(t, line) for t, line in client.lines if line.startswith(b"!AIVDM")]
    ends = [t for t, line in lines if line.split(b",")[1] == line.split(b",")[2]]  # last part
    text = b"".join(line for _, line in lines)
    done = subprocess.run(
        [GPSDECODE, "-j", "-s"], input=text, capture_output=True, check=True, timeout=60
    )
    messages = [json.loads(s) for s in done.stdout.decode().splitlines() if s.strip()]
    assert len(messages) == len(ends), done.stderr
    return list(zip(ends, messages, strict=True))


@pytest.mark.skipif(GPSDECODE is None, reason="gpsdecode (gpsd-clients) is not installed")
def test_two_boats_each_driven_by_its_own_controller_hear_each_other_on_ais(tmp_path):
    """alpha (Class A) and bravo (Class B), each under its own controller's thrust over its
    own UDP port: each boat's receiver decodes the other only (never itself), with the name of
    message 5 or 24, and each position, speed and course within the messages' resolution of
    the other boat's own GNSS fix at that second."""
    clients = {boat: {"gps": UdpClient().start(), "ais": UdpClient().start()} for boat in "ab"}
    commands = {boat: free_udp_port() for boat in "ab"}
    path = fleet_bench(
        tmp_path,
        alpha=dict(
            gps=clients["a"]["gps"].port, ais=clients["a"]["ais"].port, commands=commands["a"]
        ),
        bravo=dict(
            gps=clients["b"]["gps"].port, ais=clients["b"]["ais"].port, commands=commands["b"]
        ),
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # 400 s: the static data (names) come within 6 min of the start, at a random time each
    daemon = Daemon(path, "--time-scale", "50", "--duration", "400", tmp=tmp_path)
    arm = nmea_line("RCTRC,0,0.0,P,0.0,P,,B,C")
    repeaters = {}
    for boat, thrust in (("a", 80.0), ("b", 70.0)):  # rpm [%]: 64 % and 49 % of full thrust
        ahead = nmea_line(f"RCTRC,0,{thrust:.1f},P,,V,,B,C")
        address = ("127.0.0.1", commands[boat])
        repeaters[boat] = Repeater(lambda line, a=address: sock.sendto(line, a)).start(arm)
        time.sleep(0.1)
        repeaters[boat].set(ahead)
    try:
        summary = daemon.wait(60)
    finally:
        for r in repeaters.values():
            r.stop()
        sock.close()
        for c in clients.values():
            for client in c.values():
                client.close()
    assert summary["reason"] == "duration"
    assert summary["commands_applied"] > 100  # both controllers' commands got through
    heard = {boat: decoded(clients[boat]["ais"]) for boat in "ab"}
    by_a = {m["mmsi"] for _, m in heard["a"]}
    by_b = {m["mmsi"] for _, m in heard["b"]}
    assert by_a == {257000002} and by_b == {257000001}  # the other only, never itself
    names_a = {m.get("shipname") for _, m in heard["a"] if m["type"] == 24 and "shipname" in m}
    names_b = {m.get("shipname") for _, m in heard["b"] if m["type"] == 5}
    assert names_a == {"BRAVO"} and names_b == {"ALPHA"}
    # Class B every 30 s above 2 kn, 3 min below; Class A every 10 s at 0-14 kn (3 1/3 s
    # when changing course): in 400 s at least 2 and 30
    for listener, other, kinds, least in (("a", "b", {18}, 2), ("b", "a", {1, 2, 3}, 30)):
        gps = fixes(clients[other]["gps"])
        reports = [(t, m) for t, m in heard[listener] if m["type"] in kinds]
        assert len(reports) >= least, reports
        moving = 0
        for arrived, m in reports:
            a, b = bracket(gps, arrived, m["second"])  # the fixes at the start and the end
            # of the report's second: the report lies on the track between them, within half a
            # unit of its 1/10000 min (0.093 m in latitude), gpsdecode's printed 1e-6 deg
            # (0.056 m) and the RMC's 1e-5 min (0.009 m): 0.16 m, so 0.2
            assert off_segment_m(m["lat"], m["lon"], a, b) < 0.2, (m, a, b)
            # speed and course: half a unit of the message's 0.1 and of the RMC's 0.1, about
            # what the fixes at either end of the second say
            low, high = sorted((a[2], b[2]))
            assert low - 0.1 - 1e-9 <= m["speed"] <= high + 0.1 + 1e-9, (m, a, b)
            if low > 1.0:
                moving += 1
                ends = sorted((a[3], b[3]))
                assert ends[0] - 0.1 - 1e-9 <= m["course"] <= ends[1] + 0.1 + 1e-9, (m, a, b)
        assert moving >= least - 1, [(m["speed"], m["second"]) for _, m in reports]


def test_a_weather_change_reaches_every_boat(tmp_path):
    """`hild ctl weather` (a WeatherChange with an environment per boat) changes the one sea of
    every boat: gale-calm-sea's current (0.5 m/s to the north, against its 20 m/s wind from the
    north) carries both boats, at rest in calm water before, north."""
    from hild.control import WeatherChange
    from hild.environment.environment import Environment
    from hild.profiles.weather import load_weather
    from hild.world.world import World

    path = Path(fleet_bench(tmp_path, alpha=dict(gps=20001, ais=20002, commands=20003)))
    path.write_text(path.read_text().replace("speed = 1.5\n", ""))  # both at rest
    world = World(load_bench(path), duration=60.0, weather_may_change=True)
    gale = load_weather("gale-calm-sea")
    sims = [world.sim, *world.fleet_sims]
    made = [Environment(gale, s.vessel, world.dt, seed=0, duration=60.0) for s in sims]
    world.queue.put(WeatherChange(made[0], tuple(made[1:])))
    starts = [float(s.x[0]) for s in sims]
    for _ in range(round(20.0 / world.dt)):
        world.tick()
    # the current's 10 m in 20 s from rest, less the time to take up its speed and what the
    # wind holds back: 3.6 and 4.2 m (the boats lie at 0 and 90 deg to it); a boat the change
    # missed stays where it was in calm water (0 m)
    moved = [float(s.x[0]) - start for s, start in zip(sims, starts, strict=True)]
    assert all(north > 2.0 for north in moved), moved


# --- ArduPilot fleets: one SITL per boat ------------------------------------------------------
def test_two_sitls_fly_two_boats_in_lockstep_and_a_restart_resets_its_own_boat(tmp_path):
    """One ardupilot-sitl link per boat, each its own SITL (a client faithful to SIM_JSON's
    side): the world steps when both frames have come, each answer is its own boat's (positions
    from the bench's origin, the physics frame of every SITL), a silent SITL holds the world
    (the other's frame waits unanswered), and a restarted SITL resets its own boat only."""
    from tests.ardupilot_client import Sitl

    ports = {boat: free_udp_port() for boat in ("alpha", "bravo")}
    devices = "".join(
        f'\n[[device]]\nname = "{boat}-ap"\ntype = "ardupilot-sitl"\nboat = "{boat}"\n'
        f'port = "udp://127.0.0.1:{port}?listen=1"\n'
        for boat, port in ports.items()
    )
    path = tmp_path / "sitls.toml"
    path.write_text(FLEET.format(run_dir=tmp_path / "run", devices=devices))
    daemon = Daemon(str(path), tmp=tmp_path)
    rate, ahead = 200, (1800, 0, 1800)  # the Otter's skid steering: both sides 60 % ahead
    a, b = Sitl(ports["alpha"]), Sitl(ports["bravo"])

    def both(i: int) -> tuple[dict, dict]:
        a.send(i, ahead, rate)
        b.send(i, ahead, rate)
        return a.receive(), b.receive()

    try:
        steps = [both(i) for i in range(10 * rate)]
        a.send(10 * rate, ahead, rate)  # bravo's SITL silent: alpha's frame waits
        a.sock.settimeout(1.0)
        with pytest.raises(TimeoutError):
            a.receive()
        a.sock.settimeout(5.0)
        b.send(10 * rate, ahead, rate)  # bravo's frame comes: both answered
        held = (a.receive(), b.receive())
        restarted = []
        for i in range(3):  # bravo's SITL started again (its count from 0), alpha runs on
            a.send(10 * rate + 1 + i, ahead, rate)
            b.send(i, ahead, rate)
            restarted.append((a.receive(), b.receive()))
    finally:
        a.close()
        b.close()
    summary = daemon.stop()
    stamps = [(sa["timestamp"], sb["timestamp"]) for sa, sb in steps]
    assert all(ta == tb for ta, tb in stamps)  # one clock
    assert [ta for ta, _ in stamps] == pytest.approx([(i + 1) / rate for i in range(10 * rate)])
    sa, sb = steps[-1]
    assert sa["velocity"][0] > 1.0 and abs(sa["velocity"][1]) < 0.3  # alpha ahead: north
    assert sb["velocity"][1] > 1.0 and abs(sb["velocity"][0]) < 0.3  # bravo ahead: east
    assert sb["position"][0] == pytest.approx(300.0, abs=2.0)  # its own start, from the origin
    assert held[0]["timestamp"] == pytest.approx((10 * rate + 1) / rate)
    (ra, rb) = restarted[0]
    assert rb["position"][:2] == pytest.approx([300.0, -200.0], abs=0.05)  # bravo back
    assert ra["position"][0] > sa["position"][0]  # alpha not reset: further north
    devices = summary["devices"]
    assert devices["bravo-ap"]["restarts"] == 1 and devices["alpha-ap"]["restarts"] == 0


def test_two_sitls_answers_do_not_depend_on_which_frame_comes_first(tmp_path):
    """The same frames, alpha's first at every step in one run and bravo's first in the other:
    the world steps once both have come, so every answer is the same in both runs, bit for bit
    (each boat's own steering: alpha turning to port, bravo to starboard)."""
    from tests.ardupilot_client import Sitl

    rate, steps = 200, 400
    pwm = {"alpha": (1700, 0, 1900), "bravo": (1900, 0, 1650)}  # (skid: SERVO1 left, 3 right)

    def run(first: str, where) -> list[tuple[dict, dict]]:
        where.mkdir()
        ports = {boat: free_udp_port() for boat in ("alpha", "bravo")}
        devices = "".join(
            f'\n[[device]]\nname = "{boat}-ap"\ntype = "ardupilot-sitl"\nboat = "{boat}"\n'
            f'port = "udp://127.0.0.1:{port}?listen=1"\n'
            for boat, port in ports.items()
        )
        path = where / "sitls.toml"
        path.write_text(FLEET.format(run_dir=where / "run", devices=devices))
        daemon = Daemon(str(path), tmp=where)
        sitl = {boat: Sitl(port) for boat, port in ports.items()}
        order = [first, "bravo" if first == "alpha" else "alpha"]
        answers = []
        try:
            for i in range(steps):
                for boat in order:
                    sitl[boat].send(i, pwm[boat], rate)
                    time.sleep(0.0002 if i % 50 == 0 else 0.0)  # (now and then, apart)
                answers.append((sitl["alpha"].receive(), sitl["bravo"].receive()))
        finally:
            for s in sitl.values():
                s.close()
            daemon.stop()
        return answers

    alpha_first = run("alpha", tmp_path / "a")
    bravo_first = run("bravo", tmp_path / "b")
    assert alpha_first == bravo_first
    a_end, b_end = alpha_first[-1]
    assert a_end["timestamp"] == pytest.approx(steps / rate)
    # each boat its own: alpha's right side harder (turning to port), bravo's left
    assert a_end["gyro"][2] < -0.01 and b_end["gyro"][2] > 0.01, (a_end["gyro"], b_end["gyro"])


def test_the_mqtt_mirror_gives_each_boat_its_state(tmp_path, broker, subscriber):
    """A fleet's mirror: `boats/<name>/state`, `/actuators` and `/environment` for every boat
    (the first's unprefixed topics as before), each its own boat's."""
    from tests.mqtt_endpoints import wait_until

    text = FLEET.format(run_dir=tmp_path / "run", devices="").replace("speed = 1.5\n", "")
    text += '[boat.commands]\n"port.rpm" = 500\n'  # (bravo's, the last [[boat]]; alpha idle)
    text += f'\n[mqtt]\nurl = "mqtt://127.0.0.1:{broker.port}"\nprefix = "hild/fleet"\n'
    path = tmp_path / "mqtt.toml"
    path.write_text(text)
    daemon = Daemon(str(path), "--time-scale", "5", tmp=tmp_path)
    try:
        wait_until(
            lambda: (
                subscriber.on("hild/fleet/boats/bravo/state")
                and subscriber.on("hild/fleet/boats/alpha/state")
                and subscriber.on("hild/fleet/boats/bravo/actuators")
                and subscriber.on("hild/fleet/boats/alpha/environment")
            ),
            timeout=30.0,
        )
        done = subprocess.run(  # `hild ctl status` lists every boat's place
            [sys.executable, "-m", "hild.cli", "ctl", "--run-dir", str(tmp_path / "run"), "status"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        daemon.stop()
    alpha = subscriber.on("hild/fleet/boats/alpha/state")[-1]
    bravo = subscriber.on("hild/fleet/boats/bravo/state")[0]  # (then under way: its thruster)
    first = subscriber.on("hild/fleet/state")[-1]
    assert (alpha["north"], alpha["east"]) == pytest.approx((0.0, 0.0), abs=0.5)
    assert (bravo["north"], bravo["east"]) == pytest.approx((300.0, -200.0), abs=0.5)
    assert first["north"] == pytest.approx(alpha["north"], abs=0.5)  # the first boat's
    # each boat's actuators its own: bravo's port thruster commanded, alpha's idle
    bravo_act = subscriber.on("hild/fleet/boats/bravo/actuators")[-1]
    alpha_act = subscriber.on("hild/fleet/boats/alpha/actuators")[-1]
    assert bravo_act["port.rpm_commanded"] == 500.0 and bravo_act["starboard.rpm_commanded"] == 0
    assert alpha_act["port.rpm_commanded"] == 0.0
    assert subscriber.on("hild/fleet/actuators")[-1]["port.rpm_commanded"] == 0.0  # the first's
    assert subscriber.on("hild/fleet/boats/alpha/environment")[-1]["weather"] == "calm"
    boats = json.loads(done.stdout)["status"]["boats"]
    assert set(boats) == {"alpha", "bravo"}
    assert boats["bravo"]["latitude"] > boats["alpha"]["latitude"]  # 300 m north of it


# --- MOOS fleets: a frontseat per boat --------------------------------------------------------
def test_each_boat_s_frontseat_answers_its_own_backseat_with_its_own_boat(tmp_path):
    """Two Heron frontseats, one per boat, each on its own TCP port, each driven by its own
    backseat (PYDIR as iM200 sends it): each backseat's GPRMC is its own boat's place (bravo's
    300 m north of alpha's start), and its own thrust moves its own boat."""
    from tests.endpoints import TcpClient, free_tcp_port

    ports = {boat: free_tcp_port() for boat in ("alpha", "bravo")}
    devices = "".join(
        f'\n[[device]]\nname = "{boat}-frontseat"\ntype = "frontseat"\nboat = "{boat}"\n'
        f'port = "tcp://127.0.0.1:{port}"\n[device.settings]\nwatchdog_s = 30.0\n'
        for boat, port in ports.items()
    )
    path = tmp_path / "moos.toml"
    text = FLEET.format(run_dir=tmp_path / "run", devices=devices).replace("speed = 1.5\n", "")
    path.write_text(text)
    daemon = Daemon(str(path), "--time-scale", "10", "--duration", "40", tmp=tmp_path)
    backseats = {boat: TcpClient(port).start() for boat, port in ports.items()}
    # alpha's backseat drives ahead; bravo's sends neutral: bravo stays where it started
    thrust = {"alpha": b"$PYDIR,80,80*\r\n", "bravo": b"$PYDIR,0,0*\r\n"}
    senders = [Repeater(backseats[b].sock.sendall, hz=10).start(thrust[b]) for b in backseats]
    try:
        summary = daemon.wait(40)
    finally:
        for s in senders:
            s.stop()
        for b in backseats.values():
            b.close()
    assert summary["reason"] == "duration"
    rmc = {boat: [m for _, m in c.sentences("RMC")] for boat, c in backseats.items()}
    first = {boat: rmc[boat][0] for boat in rmc}
    last = {boat: rmc[boat][-1] for boat in rmc}
    metres_per_deg = 111_320.0
    gap = (first["bravo"].latitude - first["alpha"].latitude) * metres_per_deg
    assert gap == pytest.approx(300.0, abs=2.0)  # each its own boat's place
    alpha_run = (last["alpha"].latitude - first["alpha"].latitude) * metres_per_deg
    bravo_run = (last["bravo"].latitude - first["bravo"].latitude) * metres_per_deg
    # (the Otter, heading north, ahead at 80 % for ~40 s; bravo idle at rest, facing east)
    assert alpha_run > 20.0 and abs(bravo_run) < 1.0, (alpha_run, bravo_run)


def test_the_built_in_fleet_benches_put_each_boat_on_its_instance_s_ports():
    """fleet-ardupilot: one link per boat on 9002 + 10 I, each SITL's start line with its -I
    and its boat's heading in --home; fleet-frontseat: a frontseat per boat on 29500 + I;
    fleet-crossing: a GNSS, compass, AIS and thruster controller per boat, apart per boat."""
    from hild.ardupilot.howto import sitl_commands
    from hild.world.world import World

    bench = load_bench("fleet-ardupilot")
    assert [b.name for b in bench.boats] == ["alpha", "bravo"]
    world = World(bench)
    lines = {
        bench.boats[boat].name: "\n".join(sitl_commands(bench, link))
        for link, boat in zip(world.links, world.link_boats, strict=True)
    }
    assert "--home 59.4100000,10.4800000,0,0 --defaults otter.parm\n" in lines["alpha"] + "\n"
    assert "--home 59.4100000,10.4800000,0,90 --defaults otter.parm -I1" in lines["bravo"]
    assert "tcp:127.0.0.1:5770" in lines["bravo"]  # instance 1's MAVLink port

    frontseats = load_bench("fleet-frontseat")
    ports = {d.boat: d.ports for d in frontseats.devices if d.type == "frontseat"}
    assert ports == {"alpha": ("tcp://127.0.0.1:29500",), "bravo": ("tcp://127.0.0.1:29501",)}

    crossing = load_bench("fleet-crossing")
    kinds = {}
    for d in crossing.devices:
        kinds.setdefault(d.boat, set()).add(d.type)
    assert kinds["alpha"] == kinds["bravo"] == {"gps", "heading", "ais", "thruster-controller"}
