"""What `hild ctl status` and the status line tell (issue 55): the running weather and the
faults active, a TCP port's clients counted and the readers of pty and UDP ports "not
countable" (null, not 0), the Foxglove viewers counted, and each quantity at one precision
(an rpm to 1 rpm, angles to 0.1 deg, a deflector to 0.01).

The daemon is the real CLI (`hild run ... --foxglove 127.0.0.1:0`), asked through `hild ctl
status`; its clients are a real TCP socket and a real Foxglove WebSocket client
(tests/foxglove_client.py); every port is an ephemeral one."""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from collections.abc import Callable
from unittest.mock import ANY
from urllib.parse import urlsplit

import pytest
from rich.console import Console

from hild.live.status import countable, rounded
from hild.live.statusline import render
from tests.endpoints import Daemon, free_tcp_port, free_udp_port, nmea_line, write_bench
from tests.forked_cli import run_hild
from tests.foxglove_client import FoxgloveClient
from tests.test_fleet import FLEET

TABLES = """
[weather]
preset = "gale-hs1"
[[device]]
name = "gps"
type = "gps"
port = "pty://gps"
[[device.fault]]
kind = "bias_jump"
start = 0.0
quantity = "position"
value = 25.0
[[device]]
name = "heading"
type = "heading"
port = "udp://127.0.0.1:{udp}"
[[device]]
name = "log"
type = "speed-log"
port = "tcp://127.0.0.1:{tcp}"
[[device]]
name = "jets"
type = "jet-controller"
port = "pty://jets"
"""
TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    pytest.importorskip("foxglove")
    tmp = tmp_path_factory.mktemp("status-fields")
    udp, tcp = free_udp_port(), free_tcp_port()
    bench = write_bench(tmp / "bench.toml", "fields", tmp / "run", TABLES.format(udp=udp, tcp=tcp))
    d = Daemon(str(bench), "--foxglove", "127.0.0.1:0", tmp=tmp)
    yield d, tmp / "run", udp, tcp
    d.stop()


def ctl(run_dir, *args: str) -> dict:
    done = run_hild("ctl", "--run-dir", str(run_dir), *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def status_until(run_dir, ok: Callable[[dict], bool], while_waiting=None) -> dict:
    """`hild ctl status` until ``ok(status)`` (snapshots are taken twice a second), at most
    TIMEOUT_S; the last status either way (the caller asserts on it)."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        status = ctl(run_dir, "status")["status"]
        if ok(status) or time.monotonic() > deadline:
            return status
        if while_waiting is not None:
            while_waiting()
        time.sleep(0.1)


class TcpReader:
    """A client of a TCP port that reads (and drops) what it is sent, in a thread."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while self.sock.recv(65536):
                pass
        except OSError:
            pass

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._thread.join(5)


def test_status_shows_the_weather_and_the_faults(daemon):
    _, run_dir, _, _ = daemon
    answer = ctl(run_dir, "fault", "heading", "dropout", "--duration", "600")
    assert answer["ok"], answer

    def both(status: dict) -> bool:
        return {f.get("device") for f in status["faults"]} >= {"gps", "heading"}

    status = status_until(run_dir, both)
    weather = status["weather"]
    assert weather["preset"] == "gale-hs1"
    assert 15.0 < weather["wind_speed"] < 30.0  # 20 m/s mean, gusts around it
    assert weather["wind_from_deg"] < 20.0 or weather["wind_from_deg"] > 340.0  # from N
    assert weather["current_speed"] == pytest.approx(0.5, abs=0.2)
    assert weather["hs"] == 1.0
    faults = {f["device"]: f for f in status["faults"]}
    assert set(faults) == {"gps", "heading"}, status["faults"]
    gps, heading = faults["gps"], faults["heading"]
    assert gps == {
        "device": "gps",
        "kind": "bias_jump",
        "quantity": "position",
        "value": 25.0,
        "start": 0.0,
        "end": None,
    }
    assert heading["kind"] == "dropout"
    assert heading["end"] == pytest.approx(heading["start"] + 600.0, abs=1e-3)
    # an actuator's fault is one too, until cleared
    assert ctl(run_dir, "fault", "--actuator", "starboard", "lost")["ok"]
    status = status_until(run_dir, lambda s: any("actuator" in f for f in s["faults"]))
    assert {"actuator": "starboard", "kind": "lost"} in status["faults"]
    assert ctl(run_dir, "fault", "--actuator", "starboard", "clear")["ok"]
    assert ctl(run_dir, "fault", "heading", "clear")["ok"]
    status = status_until(run_dir, lambda s: [f.get("device") for f in s["faults"]] == ["gps"])
    assert [f.get("device") for f in status["faults"]] == ["gps"]  # the bench's stays


def test_ports_and_viewers_are_counted_where_they_can_be(daemon):
    _, run_dir, udp, tcp = daemon
    gps, jets = "pty://gps", "pty://jets"
    udp_url, tcp_url = f"udp://127.0.0.1:{udp}", f"tcp://127.0.0.1:{tcp}"
    status = ctl(run_dir, "status")["status"]
    assert status["clients"] == {gps: None, jets: None, udp_url: None, tcp_url: 0}
    assert sorted(status["clients_not_countable"]) == sorted([gps, jets, udp_url])
    assert status["foxglove"]["viewers"] == 0
    reader = TcpReader(tcp)
    try:
        status = status_until(run_dir, lambda s: s["clients"][tcp_url] == 1)
        assert status["clients"][tcp_url] == 1
    finally:
        reader.close()
    status = status_until(run_dir, lambda s: s["clients"][tcp_url] == 0)
    assert status["clients"][tcp_url] == 0

    url = urlsplit(status["foxglove"]["url"])  # the port the server took for 0
    assert url.scheme == "ws" and url.port and url.port > 0
    viewer = FoxgloveClient(url.hostname, url.port)
    try:
        messages = viewer.collect(
            10.0, until=lambda m: isinstance(m, dict) and m.get("op") == "advertise"
        )
        channels = [
            c
            for m in messages
            if isinstance(m, dict) and m.get("op") == "advertise"
            for c in m["channels"]
        ]
        assert channels, messages
        viewer.subscribe(1, channels[0]["id"])
        viewer.subscribe(2, channels[-1]["id"])  # (one viewer, however many topics)
        status = status_until(
            run_dir, lambda s: s["foxglove"]["viewers"] == 1, lambda: viewer.collect(0.1)
        )
        assert status["foxglove"]["viewers"] == 1
    finally:
        viewer.close()
    status = status_until(run_dir, lambda s: s["foxglove"]["viewers"] == 0)
    assert status["foxglove"]["viewers"] == 0  # gone, it is counted no more


def test_each_quantity_has_one_precision(daemon):
    _, run_dir, _, _ = daemon
    neutral = nmea_line("RCPRC,0.0,A,,V,,V,B,0", b"").decode()  # idle, bucket neutral
    ahead = nmea_line("RCPRC,60.0,A,,V,,V,B,0", b"").decode()
    assert ctl(run_dir, "commands", neutral)["results"] == ["applied"]

    def spooling(status: dict) -> bool:
        ctl(run_dir, "commands", ahead)  # (renewed: the watchdog's lease)
        return all(a["speed"] > 500 for a in status["actuators"].values())

    status = status_until(run_dir, spooling)
    for name, a in status["actuators"].items():
        assert a["speed_unit"] == "rpm"
        assert isinstance(a["speed"], int) and a["speed"] > 500, (name, a)  # to 1 rpm
        assert a["angle_deg"] == round(a["angle_deg"], 1), (name, a)
        assert a["deflector"] == round(a["deflector"], 2), (name, a)
    assert status["heading_deg"] == round(status["heading_deg"], 1)
    shown = text(render(status))
    for name, a in status["actuators"].items():
        assert f"{name} {a['speed']} rpm" in shown, shown


FLEET_DEVICES = """
[[device]]
name = "bravo-gps"
type = "gps"
boat = "bravo"
port = "pty://bravo-gps"
"""


def test_a_fleets_faults_name_their_boat(tmp_path):
    """A fleet's faults each name the boat they are on: a sensor's (its device's boat) and an
    actuator's (the boat asked for)."""
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET.format(run_dir=tmp_path / "run", devices=FLEET_DEVICES))
    daemon = Daemon(str(path), tmp=tmp_path)
    run_dir = tmp_path / "run"
    try:
        assert ctl(run_dir, "fault", "bravo-gps", "freeze")["ok"]
        assert ctl(run_dir, "fault", "--boat", "bravo", "--actuator", "port", "stuck")["ok"]
        status = status_until(run_dir, lambda s: len(s["faults"]) == 2)
        assert status["faults"] == [
            {"boat": "bravo", "device": "bravo-gps", "kind": "freeze", "start": ANY, "end": None},
            {"boat": "bravo", "actuator": "port", "kind": "stuck"},
        ]
        for boat in status["boats"].values():  # each boat's actuators at their one precision
            assert all(isinstance(a["speed"], int) for a in boat["actuators"].values())
    finally:
        daemon.stop()


# --- the status line's words -------------------------------------------------------------------
STATUS = {
    "bench": "b",
    "t": 12.3,
    "time_scale": 1.0,
    "latitude": 59.41,
    "longitude": 10.48,
    "sog_kn": 3.0,
    "cog_deg": 12.0,
    "heading_deg": 10.0,
    "actuators": {
        "port": {"speed": 1084, "speed_unit": "rpm", "angle_deg": -3.4, "deflector": 0.5},
        "starboard": {"speed": 400, "speed_unit": "rpm", "angle_deg": 0.0, "deflector": -1.0},
        "bow": {"speed": 0.5, "speed_unit": "normalized"},
    },
    "command_devices": {"jets": {"watchdog": "leased", "commands": 3, "refused": 0}},
    "clients": {"pty://gps": None, "udp://127.0.0.1:4000": None, "tcp://127.0.0.1:4001": 2},
    "clients_not_countable": ["pty://gps", "udp://127.0.0.1:4000"],
    "ticks": 1230,
    "overruns": 0,
    "weather": {
        "preset": "gale-hs1",
        "wind_speed": 19.4,
        "wind_from_deg": 3.5,
        "current_speed": 0.51,
        "current_to_deg": 0.0,
        "hs": 1.0,
    },
    "faults": [
        {"device": "gps", "kind": "dropout", "start": 5.0, "end": 35.0},
        {
            "device": "gps",
            "kind": "bias_jump",
            "quantity": "heading",
            "value": 5.0,
            "start": 0.0,
            "end": None,
        },
        {"actuator": "starboard", "kind": "stuck"},
    ],
    "foxglove": {"url": "ws://127.0.0.1:8765", "viewers": 2},
}


def text(group) -> str:
    """What the block shows, as plain text."""
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(group)
    return out.getvalue()


def test_the_status_line_says_it_in_words():
    shown = text(render(STATUS))
    assert "weather gale-hs1: wind 19.4 m/s from 003.5, current 0.51 m/s to 000.0, Hs 1.00 m" in (
        shown
    )
    assert (
        "actuators: port 1084 rpm -3.4deg defl +0.50 | starboard 400 rpm +0.0deg defl -1.00"
    ) in shown
    assert "| bow +0.50" in shown
    assert (
        "faults: gps dropout (until t 35.0 s), gps bias_jump heading +5 (for good), starboard stuck"
    ) in shown
    assert (
        "clients: pty://gps not countable, udp://127.0.0.1:4000 not countable, "
        "tcp://127.0.0.1:4001 2; foxglove 2 viewers"
    ) in shown
    one = text(render({**STATUS, "foxglove": {"url": "ws://x:1", "viewers": 1}, "faults": []}))
    assert "foxglove 1 viewer " in one and "faults: none" in one
    without = {k: v for k, v in STATUS.items() if k not in ("foxglove", "weather", "faults")}
    plain = text(render(without))  # (a snapshot of before: no such keys)
    assert "foxglove" not in plain and "weather" not in plain and "faults" not in plain


def test_which_ports_count_their_clients_and_the_precisions():
    assert countable("tcp://127.0.0.1:10110") and countable("ydraw+tcp://127.0.0.1:1457")
    for url in (
        "pty://gps",
        "udp://127.0.0.1:4000?listen=1",
        "serial:///dev/ttyUSB0",
        "socketcan://can0",
        "canudp://239.0.0.1:5000",
    ):
        assert not countable(url), url
    assert rounded(449.88, "rpm") == 450 and isinstance(rounded(449.88, "rpm"), int)
    assert rounded(-0.001, "deflector") == 0.0 and str(rounded(-0.001, "deflector")) == "0.0"
    assert rounded(12.345, "angle_deg") == 12.3
