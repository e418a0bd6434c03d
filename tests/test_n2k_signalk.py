"""Signal K server, a real client no one here wrote, reads hild's NMEA 2000 from YDRAW over UDP
(its own "Yacht Devices RAW UDP (canboatjs)" source) and shows the boat's position, heading,
attitude, rate of turn and wind, and the AIS targets the n2k-ais node reports.

Runs where a signalk-server is at hand (tests/signalk_tools.py); skipped otherwise. The truth
is the run's own summary at its end (its position and heading), the server's values the last
it took, a tenth of a second of motion at most before it.
"""

from __future__ import annotations

import math
import textwrap
import time

from hild.geodesy import Origin
from tests.endpoints import Daemon, free_tcp_port, free_udp_port
from tests.signalk_tools import get, needs_signalk, signalk_server, value

pytestmark = needs_signalk

BENCH = """
[bench]
name = "signalk-n2k"
rate_hz = 50
start_time = "2026-06-01T12:00:00Z"

[vessel]
profile = "odin"
heading_deg = 40.0
speed = 4.0
[vessel.commands]
"port.rpm" = 1500
"starboard.rpm" = 1500
"port.deflector" = 1
"starboard.deflector" = 1

[origin]
latitude = 59.41
longitude = 10.48

[weather]
preset = "calm"
wind_speed = 6.0
wind_from_deg = 300.0

[[device]]
name = "gnss"
type = "n2k-gnss"
ports = ["ydraw+udp://127.0.0.1:{udp}"]

[[device]]
name = "compass"
type = "n2k-compass"
ports = ["ydraw+udp://127.0.0.1:{udp}"]

[[device]]
name = "wind"
type = "n2k-wind"
ports = ["ydraw+udp://127.0.0.1:{udp}"]

[[device]]
name = "ais"
type = "n2k-ais"
ports = ["ydraw+udp://127.0.0.1:{udp}"]

[[traffic]]
file = "busy-fjord"
"""
# busy-fjord's ships under way as Class A (their position reports every 10 s or less at their
# speeds, ITU-R M.1371-5 Table 1): mmsi -> speed [kn]
UNDER_WAY = {257100110: 14.0, 257100120: 11.0, 257100130: 15.0}


def test_signalk_server_shows_the_boat_from_hild_s_nmea_2000(tmp_path):
    udp, http = free_udp_port(), free_tcp_port()
    options = {"type": "NMEA2000", "subOptions": {"type": "ydwg02-udp-canboatjs", "port": udp}}
    with signalk_server(tmp_path, http, options) as api:
        bench = tmp_path / "bench.toml"
        bench.write_text(textwrap.dedent(BENCH).replace("{udp}", str(udp)))
        daemon = Daemon(
            str(bench),
            "--run-dir",
            str(tmp_path / "run"),
            "--duration",
            "40",
            "--time-scale",
            "10",
            tmp=tmp_path,
        )
        daemon.proc.wait(60)
        summary = daemon.stop()
        assert summary["reason"] == "duration", daemon.stderr()
        time.sleep(1.0)  # the last datagrams through the server's pipeline
        me = api.rsplit("/", 1)[0] + "/vessels/self"
        vessel = get(me)
        vessels = get(api)
    north, east, _ = summary["position_ned"]
    lat, lon, _ = Origin(59.41, 10.48).to_geodetic(north, east)
    position = value(vessel, "navigation", "position")
    assert position is not None, vessel
    # the last 129025 is at most 0.1 simulated s before the run's end, at about 5 m/s: 1 m
    metres = math.hypot(
        (position["latitude"] - lat) * 111_320.0,
        (position["longitude"] - lon) * 111_320.0 * math.cos(math.radians(lat)),
    )
    assert metres < 1.0, (position, lat, lon)
    heading = value(vessel, "navigation", "headingTrue")
    truth = math.radians(summary["heading_deg"])
    assert abs(math.remainder(heading - truth, 2 * math.pi)) < 0.01, (heading, truth)
    attitude = value(vessel, "navigation", "attitude")
    assert attitude is not None and abs(attitude["roll"]) < 0.2 and abs(attitude["pitch"]) < 0.2
    assert value(vessel, "navigation", "rateOfTurn") is not None
    sog = value(vessel, "navigation", "speedOverGround")
    assert sog is not None and 2.0 < sog < 20.0, sog
    # the wind is there (its values against the truth: tests/test_n2k.py)
    apparent = value(vessel, "environment", "wind", "speedApparent")
    assert apparent is not None and apparent > 0.5, vessel.get("environment")
    assert value(vessel, "environment", "wind", "angleApparent") is not None
    assert value(vessel, "navigation", "magneticVariation") is not None
    # the targets, from 129038 (the server's own decoding of hild's PGNs)
    for mmsi, speed_kn in UNDER_WAY.items():
        target = vessels.get(f"urn:mrn:imo:mmsi:{mmsi}")
        assert target is not None, sorted(vessels)
        where = value(target, "navigation", "position")
        assert abs(where["latitude"] - 59.41) < 0.1 and abs(where["longitude"] - 10.48) < 0.2
        sog = value(target, "navigation", "speedOverGround")
        # AIS's 0.1 kn steps (0.0514 m/s), 129038's 0.01 m/s: half of each and float noise
        assert abs(sog - speed_kn * 1852 / 3600) < 0.035, (mmsi, sog)
