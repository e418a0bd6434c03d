"""A fleet's observers show every boat: each boat's own recording channels (``/boats/<boat>/``
state, actuators, location, pose and tf), a GPX and KML track per boat named after it, and the
same channels live in Foxglove; a one-boat bench has none of them.

The boats start 300 m apart (bravo 300 m north and 200 m west of alpha): each boat's channels
are held against its own start, converted to latitude and longitude here with WGS-84's radii of
curvature (not hild's geodesy), and against its own motion (alpha at rest heading north, bravo
under way heading east)."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from mcap.reader import make_reader

from hild.bench import load_bench
from hild.record import channels, events
from hild.record.reader import messages
from tests.endpoints import Daemon
from tests.forked_cli import run_hild

LAT0, LON0 = 59.41, 10.48
STARTS = {"alpha": (0.0, 0.0), "bravo": (300.0, -200.0)}  # north, east [m] from the origin
HEADINGS = {"alpha": 0.0, "bravo": math.pi / 2}

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

[[boat]]
name = "bravo"
profile = "otter"
heading_deg = 90.0
speed = 1.5
north = 300.0
east = -200.0
mmsi = 257000002
"""

ONE_BOAT = """
[bench]
name = "single"
rate_hz = 20

[vessel]
profile = "otter"
"""

GPX = "{http://www.topografix.com/GPX/1/1}"
KML = "{http://www.opengis.net/kml/2.2}"
PER_BOAT = {
    "state": "hild.state",
    "actuators": "hild.actuators",
    "location": "foxglove.LocationFix",
    "pose": "foxglove.PoseInFrame",
    "tf": "foxglove.FrameTransform",
}


def radii() -> tuple[float, float]:
    """WGS-84's meridian and prime-vertical radii of curvature at the origin [m]."""
    a, f = 6378137.0, 1.0 / 298.257223563
    e2 = f * (2.0 - f)
    w = math.sqrt(1.0 - e2 * math.sin(math.radians(LAT0)) ** 2)
    return a * (1.0 - e2) / w**3, a / w


def geodetic(north: float, east: float) -> tuple[float, float]:
    """A NED offset from the origin in degrees (the radii at the origin: about a millimetre
    off at 400 m)."""
    meridian, prime = radii()
    return (
        LAT0 + math.degrees(north / meridian),
        LON0 + math.degrees(east / (prime * math.cos(math.radians(LAT0)))),
    )


def metres_apart(lat: float, lon: float, other: tuple[float, float]) -> float:
    meridian, prime = radii()
    dn = math.radians(lat - other[0]) * meridian
    de = math.radians(lon - other[1]) * prime * math.cos(math.radians(LAT0))
    return math.hypot(dn, de)


def fleet_bench(tmp_path: Path) -> Path:
    path = tmp_path / "pair.toml"
    path.write_text(FLEET.format(run_dir=tmp_path / "run"))
    return path


# --- what the observers declare -----------------------------------------------------------------
def test_a_fleet_declares_every_boat_s_channels_and_one_boat_none(tmp_path):
    """events.declared (what the recording declares and Foxglove advertises before the first
    tick): each boat's five channels for a fleet, the first boat's too; none for one boat.
    The boats' views are read-only, the simulation's own arrays."""
    from hild.world.world import World

    world = World(load_bench(fleet_bench(tmp_path)), duration=1.0)
    declared = dict(events.declared(world.view))
    for boat in STARTS:
        for channel in PER_BOAT:
            assert f"/boats/{boat}/{channel}" in declared, (boat, channel)
        state = declared[f"/boats/{boat}/state"]
        assert {"north", "east", "latitude", "heading", "sog"} <= set(state)
    assert declared["/boats/bravo/state"]["north"] == 300.0  # its own start, before a tick
    # its actuators' keys, nested copies included (the schema of its first message)
    assert "force" in declared["/boats/alpha/actuators"]
    bravo = world.view.boat(1)
    assert bravo.name == "bravo" and bravo.x[0] == 300.0
    with pytest.raises(ValueError):
        bravo.x[0] = 0.0
    with pytest.raises(AttributeError):
        bravo.name = "charlie"  # type: ignore[misc]
    world.tick()
    assert bravo.x[1] > -200.0  # a view of its simulation: under way east

    single = tmp_path / "single.toml"
    single.write_text(ONE_BOAT)
    one = World(load_bench(single), duration=1.0)
    assert not [t for t, _ in events.declared(one.view) if t.startswith(channels.BOATS)]


# --- the recording and its tracks ---------------------------------------------------------------
@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("fleet-record")
    record = tmp / "pair.mcap"
    run = run_hild(
        "run",
        str(fleet_bench(tmp)),
        "--duration",
        "10",
        "--time-scale",
        "20",
        "--record",
        str(record),
        "--run-dir",
        str(tmp / "run"),
        "--log-format",
        "json",
        timeout=180,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return record


def test_each_boat_is_recorded_on_its_own_channels_at_its_own_place(recording):
    with open(recording, "rb") as f:
        summary = make_reader(f).get_summary()
    assert summary is not None
    schemas = {c.topic: summary.schemas[c.schema_id].name for c in summary.channels.values()}
    counts = {
        summary.channels[i].topic: n for i, n in summary.statistics.channel_message_counts.items()
    }
    samples = counts[channels.STATE]
    assert samples >= 150  # 10 s at 20 Hz
    for boat in STARTS:
        for channel, schema in PER_BOAT.items():
            topic = f"/boats/{boat}/{channel}"
            assert schemas.get(topic) == schema, (topic, schemas.get(topic))
            assert counts.get(topic) == samples, (topic, counts.get(topic), samples)
    # the first boat's own channels are its unprefixed ones, message for message
    first = [(m.log_time_ns, m.payload) for m in messages(recording, [channels.STATE])]
    alpha = [(m.log_time_ns, m.payload) for m in messages(recording, ["/boats/alpha/state"])]
    assert alpha == first
    for boat, (north, east) in STARTS.items():
        state = [m.payload for m in messages(recording, [f"/boats/{boat}/state"])]
        location = [m.payload for m in messages(recording, [f"/boats/{boat}/location"])]
        pose = [m for m in messages(recording, [f"/boats/{boat}/pose"])]
        tf = [m for m in messages(recording, [f"/boats/{boat}/tf"])]
        # its own start: the first sample, one 50 ms step after it (bravo under way at 1.5 m/s)
        s0 = state[0]
        assert (s0["north"], s0["east"]) == pytest.approx((north, east), abs=0.1), (boat, s0)
        assert metres_apart(s0["latitude"], s0["longitude"], geodetic(north, east)) < 0.1
        assert (
            metres_apart(location[0]["latitude"], location[0]["longitude"], geodetic(north, east))
            < 0.1
        )
        # its own motion: alpha at rest heading north; bravo heading east, moving east only
        for s in state:
            assert s["heading"] == pytest.approx(HEADINGS[boat], abs=1e-3), (boat, s)
            assert s["north"] == pytest.approx(north, abs=0.05), (boat, s)
        moved = state[-1]["east"] - state[0]["east"]
        if boat == "alpha":
            assert abs(moved) < 0.05
        else:
            assert moved > 1.0, moved
        # the location is the state's position, the pose its NED place, the tf the pose's
        for s, fix in zip(state, location, strict=True):
            assert (fix["latitude"], fix["longitude"]) == (s["latitude"], s["longitude"])
        for s, p, t in zip(state, pose, tf, strict=True):
            position = p.payload["pose"]["position"]
            assert (position["x"], position["y"]) == (s["north"], s["east"])
            assert p.payload["frame_id"] == "ned"
            assert t.log_time_ns == p.log_time_ns
            assert t.payload["parent_frame_id"] == "ned"
            assert t.payload["child_frame_id"] == f"{boat}/vessel"
            assert t.payload["translation"] == position
            assert t.payload["rotation"] == p.payload["pose"]["orientation"]
    # the two boats 360.6 m apart (300 m north, 200 m west), as their positions say
    a0 = next(iter(messages(recording, ["/boats/alpha/location"]))).payload
    b0 = next(iter(messages(recording, ["/boats/bravo/location"]))).payload
    apart = metres_apart(a0["latitude"], a0["longitude"], (b0["latitude"], b0["longitude"]))
    assert apart == pytest.approx(math.hypot(300.0, 200.0), abs=0.5)


def test_the_gpx_and_kml_have_a_track_per_boat_named_after_it(recording, tmp_path):
    gpx, kml = tmp_path / "pair.gpx", tmp_path / "pair.kml"
    done = run_hild("export", str(recording), "--gpx", str(gpx), "--kml", str(kml), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "boat alpha " in done.stdout and "boat bravo " in done.stdout, done.stdout
    root = ET.parse(gpx).getroot()
    tracks = {
        trk.findtext(GPX + "name"): [
            (float(p.get("lat")), float(p.get("lon"))) for p in trk.iter(GPX + "trkpt")
        ]
        for trk in root.findall(GPX + "trk")
    }
    assert list(tracks) == ["alpha", "bravo"]
    for boat, (north, east) in STARTS.items():
        points = tracks[boat]
        assert len(points) >= 10  # a point a second, and the last
        assert metres_apart(*points[0], geodetic(north, east)) < 0.1, boat
        for lat, lon in points:  # each on its own boat's line: alpha still, bravo east
            assert metres_apart(lat, lon, geodetic(north, east)) < 20.0, (boat, lat, lon)
            assert abs(lat - geodetic(north, east)[0]) < 1e-6
    assert tracks["bravo"][-1][1] > tracks["bravo"][0][1]  # under way east
    names = [p.findtext(KML + "name") for p in ET.parse(kml).getroot().iter(KML + "Placemark")]
    assert names == ["alpha", "bravo"]


def test_inspect_and_plot_read_a_fleet_recording(recording, tmp_path):
    info = run_hild("inspect", str(recording), timeout=120)
    assert info.returncode == 0, info.stderr
    assert "/boats/bravo/tf" in info.stdout and "foxglove.FrameTransform" in info.stdout
    plot = run_hild("plot", str(recording), "--out", str(tmp_path / "fig"), timeout=180)
    assert plot.returncode == 0, plot.stderr[-2000:]


# --- Foxglove -----------------------------------------------------------------------------------
def test_foxglove_advertises_and_sends_every_boat_s_channels(tmp_path):
    pytest.importorskip("foxglove")
    from tests.foxglove_client import FoxgloveClient
    from tests.test_foxglove import advertised, decoded

    daemon = Daemon(
        str(fleet_bench(tmp_path)), "--foxglove", "127.0.0.1:0", "--time-scale", "2", tmp=tmp_path
    )
    try:
        port = int(re.search(r"Foxglove: ws://127\.0\.0\.1:(\d+)", daemon.banner).group(1))
        client = FoxgloveClient("127.0.0.1", port)
        try:
            found = advertised(
                client.collect(
                    5.0, until=lambda m: isinstance(m, dict) and m.get("op") == "advertiseServices"
                )
            )[0]
            schemas = {topic: c["schemaName"] for topic, c in found.items()}
            for boat in STARTS:  # declared before the first tick: advertised at once
                for channel, schema in PER_BOAT.items():
                    assert schemas.get(f"/boats/{boat}/{channel}") == schema, (boat, channel)
            client.subscribe(1, found["/boats/bravo/location"]["id"])
            client.subscribe(2, found["/boats/bravo/tf"]["id"])
            client.subscribe(3, found["/boats/alpha/pose"]["id"])
            client.subscribe(4, found["/boats/bravo/state"]["id"])
            got = client.collect(2.0)
        finally:
            client.close()
    finally:
        daemon.stop()
    fixes, transforms = decoded(got, 1), decoded(got, 2)
    poses, states = decoded(got, 3), decoded(got, 4)
    assert len(fixes) >= 10 and len(transforms) >= 10 and len(poses) >= 10, len(fixes)
    for _, fix in fixes:  # bravo near its start (under way at most 1.5 m/s for a few seconds)
        assert metres_apart(fix["latitude"], fix["longitude"], geodetic(*STARTS["bravo"])) < 15.0
    for _, tf in transforms:
        assert tf["child_frame_id"] == "bravo/vessel" and tf["parent_frame_id"] == "ned"
        assert tf["translation"]["x"] == pytest.approx(300.0, abs=0.05)
    for _, pose in poses:
        position = pose["pose"]["position"]
        assert (position["x"], position["y"]) == pytest.approx((0.0, 0.0), abs=0.05)
    assert states and states[-1][1]["north"] == pytest.approx(300.0, abs=0.05)
    assert states[-1][1]["east"] > -200.0
