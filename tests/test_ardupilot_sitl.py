"""A real ArduPilot Rover SITL flies hild's boats (skipped where no `ardurover` is on the PATH,
or no pymavlink to talk MAVLink to it).

ArduPilot's SITL sends its frames to UDP 9002 + 10 I and serves MAVLink on TCP 5760 + 10 I for
``-I I`` (protocols.md); the test picks an instance whose two ports are free (never the first
few, which a user's own SITL may hold), starts hild on the JSON port, then ardurover with the
profile's parameter file, arms it, flies an AUTO mission of four waypoints and waits until
ArduPilot reports each one reached. ArduPilot refuses AUTO until its EKF has an absolute
position (about 35 s of simulated time, measured), so the mode is asked for again until taken.
ArduPilot is stopped before hild: it obeys SIGTERM only while its physics still answers.
"""

from __future__ import annotations

import math
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.endpoints import Daemon

ARDUROVER = shutil.which("ardurover")
pytestmark = pytest.mark.skipif(ARDUROVER is None, reason="no ardurover (ArduPilot SITL) on PATH")
RATE_HZ = 200  # SIM_RATE_HZ and the bench's step: fast enough for a Rover's 50 Hz loop
SPEEDUP = 5
AUTO = 10  # Rover's AUTO mode number
SIDE_M = 60.0  # the mission: a square of this side, starting ahead of the boat


def free_instance() -> int:
    """An instance I from 7 up whose JSON (UDP 9002 + 10 I) and MAVLink (TCP 5760 + 10 I)
    ports are both free."""
    for n in range(7, 60):
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u, socket.socket() as t:
                u.bind(("127.0.0.1", 9002 + 10 * n))
                t.bind(("127.0.0.1", 5760 + 10 * n))
            return n
        except OSError:
            continue
    raise AssertionError("no free SITL instance")


def offset(lat: float, lon: float, north: float, east: float) -> tuple[float, float]:
    r = 6378137.0
    return (
        lat + math.degrees(north / r),
        lon + math.degrees(east / (r * math.cos(math.radians(lat)))),
    )


@pytest.mark.parametrize("profile", ["odin", "otter"])
def test_ardupilot_flies_an_auto_mission_of_four_waypoints(tmp_path, profile):
    mavutil = pytest.importorskip("pymavlink.mavutil")
    n = free_instance()
    lat, lon = 59.41, 10.48
    bench = tmp_path / "bench.toml"
    bench.write_text(f"""
[bench]
name = "sitl-{profile}"
rate_hz = {RATE_HZ}
start_time = "2026-06-01T12:00:00Z"
run_dir = "{tmp_path}/run"
[vessel]
profile = "{profile}"
[origin]
latitude = {lat}
longitude = {lon}
[[device]]
name = "autopilot"
type = "ardupilot-sitl"
port = "udp://127.0.0.1:{9002 + 10 * n}?listen=1"
""")
    parameters = tmp_path / f"{profile}.parm"
    shown = subprocess.run(
        [sys.executable, "-m", "hild.cli", "show", "ardupilot", profile],
        capture_output=True,
        text=True,
        check=True,
    )
    parameters.write_text(shown.stdout + f"SIM_RATE_HZ {RATE_HZ}\n")
    hild = Daemon(str(bench), tmp=tmp_path)
    rover = subprocess.Popen(
        [
            ARDUROVER,
            "--model",
            "JSON:127.0.0.1",
            "--home",
            f"{lat},{lon},0,0",
            "--defaults",
            str(parameters),
            "-I",
            str(n),
            "--speedup",
            str(SPEEDUP),
            "-w",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        link = mavutil.mavlink_connection(f"tcp:127.0.0.1:{5760 + 10 * n}", retries=60)
        link.wait_heartbeat(timeout=60)
        corners = [(SIDE_M, 0.0), (SIDE_M, SIDE_M), (0.0, SIDE_M), (0.0, 0.0)]
        points = [(lat, lon)] + [offset(lat, lon, north, east) for north, east in corners]
        upload(link, mavutil, points)
        deadline = time.monotonic() + 600
        while link.flightmode != "AUTO" or not link.motors_armed():
            assert time.monotonic() < deadline, "never armed in AUTO"
            link.mav.command_long_send(
                link.target_system,
                link.target_component,
                mavutil.mavlink.MAV_CMD_COMPONENT_ARM_DISARM,
                0,
                1,
                21196,
                0,
                0,
                0,
                0,
                0,
            )
            link.set_mode(AUTO)
            link.recv_match(type="HEARTBEAT", blocking=True, timeout=5)
        reached: set[int] = set()
        while reached != {1, 2, 3, 4}:
            assert time.monotonic() < deadline, f"reached only {sorted(reached)}"
            message = link.recv_match(type="MISSION_ITEM_REACHED", blocking=True, timeout=5)
            if message is not None:
                reached.add(message.seq)
    finally:
        rover.send_signal(signal.SIGTERM)
        try:
            rover.wait(20)
        except subprocess.TimeoutExpired:
            rover.kill()
        summary = hild.stop()
    assert summary["devices"]["autopilot"]["frames"] > 0


def upload(link, mavutil, points: list[tuple[float, float]]) -> None:
    """The MAVLink mission protocol: the count, then each item ArduPilot asks for (item 0 is
    home), until its acknowledgement."""
    mavlink = mavutil.mavlink
    link.mav.mission_count_send(link.target_system, link.target_component, len(points), 0)
    while True:
        message = link.recv_match(
            type=["MISSION_REQUEST_INT", "MISSION_REQUEST", "MISSION_ACK"],
            blocking=True,
            timeout=10,
        )
        assert message is not None, "no mission request"
        if message.get_type() == "MISSION_ACK":
            assert message.type == mavlink.MAV_MISSION_ACCEPTED, message
            return
        lat, lon = points[message.seq]
        link.mav.mission_item_int_send(
            link.target_system,
            link.target_component,
            message.seq,
            mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
            mavlink.MAV_CMD_NAV_WAYPOINT,
            0,
            1,
            0,
            0,
            0,
            0,
            int(lat * 1e7),
            int(lon * 1e7),
            0.0,
            0,
        )
