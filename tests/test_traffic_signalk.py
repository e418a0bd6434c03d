"""Signal K server, a real client no one here wrote, lists hild's AIS targets as vessels.

Runs only where a signalk-server is at hand (``npm install signalk-server``; put its
``signalk-server`` on the PATH or name it in $HILD_SIGNALK_SERVER); skipped otherwise. The
server takes the daemon's NMEA 0183 from UDP as a boat's would, with its own AIS decoder, and
its REST API is asked what vessels it knows.
"""

from __future__ import annotations

import textwrap
import time

from hild.geodesy import Origin
from tests.endpoints import Daemon, free_tcp_port, free_udp_port
from tests.signalk_tools import get, needs_signalk, signalk_server, value

pytestmark = needs_signalk

TARGETS = {  # mmsi: (name, A + B [m], speed [kn])
    257300001: ("NORDIC TRADER", 110, 12.0),
    257300002: ("HAVFISK", 20, 4.0),
    257300003: ("SJOSPRINT", 12, 20.0),
}

BENCH = """
[bench]
name = "signalk-traffic"
rate_hz = 50
time_scale = 40
start_time = "2026-06-01T12:00:00Z"

[vessel]
profile = "odin"
speed = 5.5
[vessel.commands]
"port.rpm" = 1800
"starboard.rpm" = 1800
"port.deflector" = 1
"starboard.deflector" = 1

[[device]]
name = "gps"
type = "gps"
ports = ["udp://127.0.0.1:{udp}"]

[[device]]
name = "ais"
type = "ais"
ports = ["udp://127.0.0.1:{udp}"]

[[traffic]]
name = "cargo"
mmsi = 257300001
ship_name = "NORDIC TRADER"
dimensions = [90, 20, 8, 8]
[traffic.course]
north = 3000
east = -2000
course_deg = 90
speed_kn = 12

[[traffic]]
name = "trawler"
mmsi = 257300002
ship_name = "HAVFISK"
dimensions = [15, 5, 3, 3]
nav_status = "fishing"
[traffic.course]
north = 1500
east = 800
course_deg = 200
speed_kn = 4

[[traffic]]
name = "yacht"
mmsi = 257300003
ship_name = "SJOSPRINT"
class = "B"
dimensions = [8, 4, 2, 2]
[traffic.course]
north = -1500
east = 1200
course_deg = 330
speed_kn = 20
"""


def test_signalk_server_lists_the_ais_targets_as_vessels(tmp_path):
    udp, http = free_udp_port(), free_tcp_port()
    options = {"type": "NMEA0183", "subOptions": {"type": "udp", "port": str(udp)}}
    with signalk_server(tmp_path, http, options) as api:
        bench = tmp_path / "bench.toml"
        bench.write_text(textwrap.dedent(BENCH).replace("{udp}", str(udp)))
        # 400 simulated seconds (10 s at 40x): every target's static data (its name and
        # dimensions, every 6 min from a random first moment) has come at least once
        daemon = Daemon(
            str(bench), "--run-dir", str(tmp_path / "run"), "--duration", "400", tmp=tmp_path
        )
        daemon.proc.wait(120)
        summary = daemon.stop()
        assert summary["reason"] == "duration", daemon.stderr()
        time.sleep(1.0)  # the last datagrams through the server's pipeline
        vessels = get(api)
    for mmsi, (name, length, speed_kn) in TARGETS.items():
        vessel = vessels.get(f"urn:mrn:imo:mmsi:{mmsi}")
        assert vessel is not None, sorted(vessels)
        assert vessel.get("name") == name and str(vessel.get("mmsi")) == str(mmsi), vessel
        assert value(vessel, "design", "length") == {"overall": length}, vessel
        position = value(vessel, "navigation", "position")
        # within 10 km of the bench's origin (59.41 N, 10.48 E), where every target sails
        assert abs(position["latitude"] - 59.41) < 0.1 and abs(position["longitude"] - 10.48) < 0.2
        sog = value(vessel, "navigation", "speedOverGround")
        # AIS carries 0.1 kn (0.0514 m/s) steps, rounded: half a step and float noise
        assert abs(sog - speed_kn * 1852 / 3600) < 0.03, (mmsi, sog)
    # the cargo ship sails due east 3000 m north of the origin: its latitude is that line's,
    # to AIS's 1/10000 minute (1.7e-6 deg) and the server's own arithmetic
    cargo = value(vessels["urn:mrn:imo:mmsi:257300001"], "navigation", "position")
    line, _, _ = Origin(59.41, 10.48).to_geodetic(3000.0, 0.0)
    assert abs(cargo["latitude"] - line) < 2e-6, (cargo, line)
