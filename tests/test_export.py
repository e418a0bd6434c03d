"""`hild export`: a recording's tracks as GPX 1.1 and KML 2.2.

A synthetic recording written with hild's own writer (deterministic, fast) holds a track with
a reposition (whose moved sample comes before its /control message, as it may in a run), a
refused reposition, a change of heading alone, a SITL restart and a gap, and two targets, one
of them gone for a while; a real `hild run --record` of a bench with traffic checks the same
against a daemon's own file. The GPX and KML are read back with xml.etree and checked against
the recording, point by point, and against GPX 1.1's element order.
"""

from __future__ import annotations

import math
import subprocess
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hild.record import channels
from hild.record.reader import messages
from hild.record.writer import RecordWriter
from tests.forked_cli import run_hild

GPX = "{http://www.topografix.com/GPX/1/1}"
KML = "{http://www.opengis.net/kml/2.2}"
GX = "{http://www.google.com/kml/ext/2.2}"
T0_NS = 1_780_315_200 * 10**9  # 2026-06-01T12:00:00Z
LAT0, LON0 = 59.41, 10.48
M_PER_DEG = 111_195.0


def hild(*args: str) -> subprocess.CompletedProcess:
    return run_hild(*args, timeout=180)


def utc(ns: int) -> datetime:
    return datetime.fromtimestamp(ns // 10**9, UTC).replace(microsecond=(ns % 10**9) // 1000)


def parse_time(text: str) -> int:
    assert text.endswith("Z"), text
    moment = datetime.fromisoformat(text[:-1] + "+00:00")
    return int(moment.replace(microsecond=0).timestamp()) * 10**9 + moment.microsecond * 1000


def own_position(k: int) -> tuple[float, float]:
    """Sample k (t = k / 10 s): north at 5 m/s; from t = 20 s 500 m east (a reposition);
    from t = 40 s back at the start (a restart), north again."""
    t = k / 10
    north = 5.0 * (t - 40.0) if t >= 40 else 5.0 * t
    east = 500.0 if 20 <= t < 40 else 0.0
    return LAT0 + north / M_PER_DEG, LON0 + east / (M_PER_DEG * math.cos(math.radians(LAT0)))


def own_samples() -> list[int]:
    """0 to 59.9 s at 10 Hz, with nothing from 50.1 to 56.9 s (a gap)."""
    return [k for k in range(600) if not 500 < k < 570]


def control(kind: str, ok: bool, t: float) -> dict:
    return {
        "t": t,
        "utc": "",
        "kind": kind,
        "source": "mqtt:control/" + kind,
        "request": {},
        "result": {"ok": ok},
    }


def synthetic(path: Path) -> None:
    writer = RecordWriter(
        path, {"hild": {"kind": "run", "bench": "fjord-test", "profile": "odin"}}, nmea_log=False
    )
    writer.start()
    recorded = set(own_samples())
    for k in range(600):
        ns, t = T0_NS + k * 100_000_000, k / 10
        lat, lon = own_position(k)
        if k == 100:  # a reposition that changed the heading only: the track goes on
            writer.put(channels.CONTROL, ns, control("reposition", True, t))
        if k == 300:  # a reposition refused: nothing moved
            writer.put(channels.CONTROL, ns, control("reposition", False, t))
        if k == 400:  # the SITL restarted between two ticks: recorded before the reset sample
            writer.put(channels.CONTROL, ns - 50_000_000, control("restart", True, t))
        if k in recorded:  # (the own ship's gap: the traffic goes on)
            state = {"t": t, "latitude": lat, "longitude": lon, "heading": 0.0, "sog": 5.0}
            writer.put(channels.STATE, ns, state)
            writer.put(channels.LOCATION, ns, channels.location_fix(ns, lat, lon, 0.0))
        if k == 200:  # the reposition applied by the tick before its request was recorded
            writer.put(channels.CONTROL, ns, control("reposition", True, t))
        if k % 10 == 0:
            targets = [target("ferry", 257000001, k)]
            if 300 <= k < 400 or k >= 500:  # "late" gone from 40 to 50 s (removed, added)
                targets.append(target("late", 257000002, k))
            writer.put(channels.TRAFFIC, ns, {"t": t, "utc": "", "targets": targets})
    writer.close()


def target(name: str, mmsi: int, k: int) -> dict:
    t = k / 10
    north = 2000.0 - 6.0 * t if name == "ferry" else 800.0
    east = 300.0 if name == "ferry" else -300.0 + 3.0 * t
    return {
        "name": name,
        "mmsi": mmsi,
        "latitude": LAT0 + north / M_PER_DEG,
        "longitude": LON0 + east / M_PER_DEG / math.cos(math.radians(LAT0)),
        "north": north,
        "east": east,
    }


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("export") / "fjord.mcap"
    synthetic(path)
    return path


def export(recording: Path, tmp: Path, *extra: str) -> tuple[ET.Element, ET.Element]:
    gpx, kml = tmp / "out.gpx", tmp / "out.kml"
    p = hild("export", str(recording), "--gpx", str(gpx), "--kml", str(kml), *extra)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0].startswith(f"{gpx}: own ship"), p.stdout
    for out in (gpx, kml):
        assert out.read_bytes().startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n')
    return ET.parse(gpx).getroot(), ET.parse(kml).getroot()


def check_gpx_structure(root: ET.Element) -> None:
    """GPX 1.1's schema, as far as these files use it: the order of gpxType, metadataType,
    trkType and wptType, the attributes and their ranges, xsd:decimal and xsd:dateTime."""
    assert root.tag == GPX + "gpx"
    assert root.attrib == {"version": "1.1", "creator": root.attrib["creator"]}
    assert root.attrib["creator"].startswith("hild ")
    tags = [c.tag for c in root]
    assert tags[0] == GPX + "metadata" and set(tags[1:]) == {GPX + "trk"}, tags
    meta = [c.tag for c in root[0]]
    assert meta == [GPX + t for t in ("name", "desc", "time", "bounds")], meta
    bounds = root[0].find(GPX + "bounds")
    assert set(bounds.attrib) == {"minlat", "minlon", "maxlat", "maxlon"}
    order = ["name", "cmt", "desc", "src", "link", "number", "type", "extensions", "trkseg"]
    for trk in root.iter(GPX + "trk"):
        names = [c.tag.removeprefix(GPX) for c in trk]
        assert names == sorted(names, key=order.index), names
        assert names[0] == "name" and trk[0].text
        for seg in trk.iter(GPX + "trkseg"):
            assert len(seg) >= 1 and all(c.tag == GPX + "trkpt" for c in seg)
            for pt in seg:
                assert set(pt.attrib) == {"lat", "lon"}
                lat, lon = float(pt.attrib["lat"]), float(pt.attrib["lon"])
                assert -90 <= lat <= 90 and -180 <= lon < 180
                assert "e" not in pt.attrib["lat"].lower() + pt.attrib["lon"].lower()
                assert float(bounds.attrib["minlat"]) <= lat <= float(bounds.attrib["maxlat"])
                assert float(bounds.attrib["minlon"]) <= lon <= float(bounds.attrib["maxlon"])
                assert [c.tag for c in pt] == [GPX + "time"]
                parse_time(pt[0].text)


def gpx_tracks(root: ET.Element) -> dict[str, list[list[tuple[int, float, float]]]]:
    return {
        trk.find(GPX + "name").text: [
            [
                (
                    parse_time(pt.find(GPX + "time").text),
                    float(pt.attrib["lat"]),
                    float(pt.attrib["lon"]),
                )
                for pt in seg
            ]
            for seg in trk.iter(GPX + "trkseg")
        ]
        for trk in root.iter(GPX + "trk")
    }


def kml_tracks(root: ET.Element) -> dict[str, list[list[tuple[int, float, float]]]]:
    out = {}
    for placemark in root.iter(KML + "Placemark"):
        segments = []
        for track in placemark.find(GX + "MultiTrack").iter(GX + "Track"):
            whens = [parse_time(w.text) for w in track.iter(KML + "when")]
            coords = [tuple(map(float, c.text.split())) for c in track.iter(GX + "coord")]
            assert len(whens) == len(coords) and all(c[2] == 0.0 for c in coords)
            # (the schema's order: every <when>, then every <gx:coord>)
            tags = [c.tag for c in track]
            assert tags == [KML + "when"] * len(whens) + [GX + "coord"] * len(coords)
            segments.append(
                [(ns, lat, lon) for ns, (lon, lat, _) in zip(whens, coords, strict=True)]
            )
        out[placemark.find(KML + "name").text] = segments
    return out


def test_gpx_and_kml_hold_every_track_cut_at_the_jumps_and_gaps(recording, tmp_path):
    gpx, kml = export(recording, tmp_path)
    check_gpx_structure(gpx)
    tracks = gpx_tracks(gpx)
    assert list(tracks) == ["fjord-test", "ferry (MMSI 257000001)", "late (MMSI 257000002)"]
    assert gpx.find(f"{GPX}metadata/{GPX}name").text == "fjord-test"
    assert gpx.find(f"{GPX}metadata/{GPX}time").text == "2026-06-01T12:00:00Z"
    # the own ship: cut at the reposition (20 s), the restart (40 s) and the gap (50-57 s);
    # not at the change of heading (10 s) nor at the refused reposition (30 s)
    own = tracks["fjord-test"]
    starts = [(seg[0][0] - T0_NS) / 1e9 for seg in own]
    ends = [(seg[-1][0] - T0_NS) / 1e9 for seg in own]
    assert starts == [0.0, 20.0, 40.0, 57.0] and ends == [19.9, 39.9, 50.0, 59.9], (starts, ends)
    # one point a second, and each segment's last
    whole = [[(ns - T0_NS) / 1e9 for ns, _, _ in seg] for seg in own]
    assert whole[0] == [*map(float, range(20)), 19.9]
    assert whole[2] == [*map(float, range(40, 51))]
    assert whole[3] == [*map(float, range(57, 60)), 59.9]
    # every point where the recording has it, at its time
    truth = {m.log_time_ns: m.payload for m in messages(recording, [channels.STATE])}
    for seg in own:
        for ns, lat, lon in seg:
            assert abs(lat - truth[ns]["latitude"]) < 1e-7
            assert abs(lon - truth[ns]["longitude"]) < 1e-7
    # the targets: every second; "late" in two pieces around its absence
    traffic = {}
    for m in messages(recording, [channels.TRAFFIC]):
        for x in m.payload["targets"]:
            traffic[(x["name"], m.log_time_ns)] = x
    assert [len(s) for s in tracks["ferry (MMSI 257000001)"]] == [60]
    late = tracks["late (MMSI 257000002)"]
    assert [((s[0][0] - T0_NS) / 1e9, len(s)) for s in late] == [(30.0, 10), (50.0, 10)]
    for name, label in (("ferry", "ferry (MMSI 257000001)"), ("late", "late (MMSI 257000002)")):
        for seg in tracks[label]:
            for ns, lat, lon in seg:
                x = traffic[(name, ns)]
                assert abs(lat - x["latitude"]) < 1e-7 and abs(lon - x["longitude"]) < 1e-7
    # the KML says the same, point by point, time by time
    assert kml.tag == KML + "kml"
    (document,) = kml.findall(KML + "Document")
    assert kml_tracks(kml).keys() == tracks.keys()
    for name, segments in kml_tracks(kml).items():
        assert len(segments) == len(tracks[name])
        for a, b in zip(segments, tracks[name], strict=True):
            assert [ns for ns, _, _ in a] == [ns for ns, _, _ in b]
            for (_, lat_a, lon_a), (_, lat_b, lon_b) in zip(a, b, strict=True):
                assert abs(lat_a - lat_b) < 1e-7 and abs(lon_a - lon_b) < 1e-7
    # the own ship and the targets in styles of different colours; no line between segments
    styles = {
        s.attrib["id"]: s.find(f"{KML}LineStyle/{KML}color").text
        for s in document.iter(KML + "Style")
    }
    used = [p.find(KML + "styleUrl").text for p in document.iter(KML + "Placemark")]
    assert used == ["#own-ship", "#traffic", "#traffic"] and len(set(styles.values())) == 2
    assert {m.find(GX + "interpolate").text for m in document.iter(GX + "MultiTrack")} == {"0"}


def test_every_thins_the_points(recording, tmp_path):
    gpx, _ = export(recording, tmp_path, "--every", "5")
    own = gpx_tracks(gpx)["fjord-test"]
    assert [[(ns - T0_NS) / 1e9 for ns, _, _ in seg] for seg in own] == [
        [0.0, 5.0, 10.0, 15.0, 19.9],
        [20.0, 25.0, 30.0, 35.0, 39.9],
        [40.0, 45.0, 50.0],
        [57.0, 59.9],
    ]
    gpx, _ = export(recording, tmp_path, "--every", "0")  # every sample recorded
    own = gpx_tracks(gpx)["fjord-test"]
    assert sum(map(len, own)) == len(own_samples())
    assert [len(s) for s in own] == [200, 200, 101, 30]


def test_a_track_from_location_alone(tmp_path):
    """A recording with /location but no /state (another tool's) still has a track."""
    path = tmp_path / "fix.mcap"
    writer = RecordWriter(path, {"hild": {"kind": "test"}}, nmea_log=False)
    writer.start()
    for k in range(30):
        ns = T0_NS + k * 500_000_000
        writer.put(channels.LOCATION, ns, channels.location_fix(ns, LAT0 + k * 1e-5, LON0, 0.0))
    writer.close()
    p = hild("export", str(path), "--gpx", str(tmp_path / "fix.gpx"))
    assert p.returncode == 0, p.stderr
    tracks = gpx_tracks(ET.parse(tmp_path / "fix.gpx").getroot())
    assert list(tracks) == ["fix"] and len(tracks["fix"][0]) == 16  # 0 .. 14 s, and 14.5


def test_a_real_run_with_traffic_exports_its_tracks(tmp_path):
    bench = tmp_path / "fjord.toml"
    bench.write_text(f"""[bench]
name = "export-run"
rate_hz = 50
seed = 1
start_time = "2026-06-01T12:00:00Z"
time_scale = 20

[vessel]
profile = "odin"
speed = 5.5

[origin]
latitude = {LAT0}
longitude = {LON0}

[[traffic]]
name = "ferry"
mmsi = 257200003
[traffic.course]
north = 2000
east = 500
course_deg = 180
speed_kn = 15

[[traffic]]
name = "anchored"
mmsi = 257200001
[traffic.course]
north = 800
east = -300
course_deg = 45
speed_kn = 0
""")
    record = tmp_path / "run.mcap"
    run = hild(
        "run",
        str(bench),
        "--duration",
        "8",
        "--record",
        str(record),
        "--run-dir",
        str(tmp_path / "run"),
        "--log-format",
        "json",
    )
    assert run.returncode == 0, run.stderr[-3000:]
    gpx, kml = export(record, tmp_path)
    check_gpx_structure(gpx)
    tracks = gpx_tracks(gpx)
    assert list(tracks) == ["export-run", "ferry (MMSI 257200003)", "anchored (MMSI 257200001)"]
    assert kml_tracks(kml).keys() == tracks.keys()
    state = {m.log_time_ns: m.payload for m in messages(record, [channels.STATE])}
    (own,) = tracks["export-run"]  # no reposition, no gap: one segment
    # the first sample, the first of each second after it, and the last
    times = sorted(state)
    expected = [times[0], *(ns for ns in times[1:-1] if ns % 10**9 == 0), times[-1]]
    assert [ns for ns, _, _ in own] == expected and len(expected) >= 8
    for ns, lat, lon in own:
        s = state[ns]
        assert abs(lat - s["latitude"]) < 1e-7 and abs(lon - s["longitude"]) < 1e-7
        assert ns == T0_NS + round(s["t"] * 1e9)
    recorded = [m for m in messages(record, [channels.TRAFFIC])]
    traffic = {(x["name"], m.log_time_ns): x for m in recorded for x in m.payload["targets"]}
    for name, label in (
        ("ferry", "ferry (MMSI 257200003)"),
        ("anchored", "anchored (MMSI 257200001)"),
    ):
        (seg,) = tracks[label]
        assert len(seg) == sum(1 for key in traffic if key[0] == name) >= 7
        for ns, lat, lon in seg:
            x = traffic[(name, ns)]
            assert abs(lat - x["latitude"]) < 1e-7 and abs(lon - x["longitude"]) < 1e-7


def test_errors_name_the_file_and_what_was_expected(recording, tmp_path):
    missing = tmp_path / "nowhere.mcap"
    said = []
    p = hild("export", str(missing), "--gpx", str(tmp_path / "x.gpx"))
    said.append(p.stderr)
    assert p.returncode == 2 and str(missing) in p.stderr and "no such file" in p.stderr, p
    bad = tmp_path / "notes.mcap"
    bad.write_text("hello\n")
    p = hild("export", str(bad), "--kml", str(tmp_path / "x.kml"))
    said.append(p.stderr)
    assert p.returncode == 2 and str(bad) in p.stderr and "MCAP" in p.stderr, p.stderr
    # a recording with no track: sentences only
    empty = tmp_path / "sentences.mcap"
    writer = RecordWriter(empty, {"hild": {"kind": "test"}}, nmea_log=False)
    writer.start()
    writer.put(channels.SENSORS + "gps", T0_NS, {"t": 0.0, "utc": "", "sentence": "$GPTXT"})
    writer.close()
    p = hild("export", str(empty), "--gpx", str(tmp_path / "x.gpx"))
    said.append(p.stderr)
    assert p.returncode == 2 and str(empty) in p.stderr and "/state" in p.stderr, p.stderr
    # nothing asked for; the recording itself as the output
    p = hild("export", str(recording))
    said.append(p.stderr)
    assert p.returncode == 2 and "--gpx" in p.stderr and "--kml" in p.stderr, p.stderr
    assert "usage:" in p.stderr
    before = recording.read_bytes()
    p = hild("export", str(recording), "--gpx", str(recording))
    said.append(p.stderr)
    assert p.returncode == 2 and "other than the recording" in p.stderr, p.stderr
    assert recording.read_bytes() == before
    p = hild("export", str(recording), "--gpx", str(tmp_path / "no" / "dir" / "x.gpx"))
    said.append(p.stderr)
    assert p.returncode == 2 and "x.gpx" in p.stderr, p.stderr
    p = hild("export", str(recording), "--gpx", str(tmp_path / "x.gpx"), "--every", "-1")
    said.append(p.stderr)
    assert p.returncode == 2 and "--every" in p.stderr, p.stderr
    assert not any("Traceback" in text for text in said), said
    assert not (tmp_path / "x.gpx").exists() and not (tmp_path / "x.kml").exists()
    assert not list(tmp_path.glob(".x.*"))  # no temporary file left behind


@pytest.mark.parametrize("control_after", [False, True])
def test_a_short_reposition_cuts_the_track_where_the_vessel_moved(tmp_path, control_after):
    """A reposition of 3 m (a jump no faster than a vessel sails between two samples) cuts the
    track at the moved sample, whether its /control message comes before or after it; the
    same step without a reposition is the vessel's own motion."""
    from hild.record.export import read_tracks

    for repositioned in (True, False):
        path = tmp_path / f"short-{repositioned}.mcap"
        writer = RecordWriter(path, {"hild": {"kind": "test"}}, nmea_log=False)
        writer.start()
        for k in range(100):
            ns = T0_NS + k * 100_000_000
            north = 0.5 * k + (3.0 if k >= 50 else 0.0)
            if repositioned and k == 50 and not control_after:
                writer.put(channels.CONTROL, ns - 30_000_000, control("reposition", True, 5.0))
            writer.put(
                channels.STATE, ns, {"latitude": LAT0 + north / M_PER_DEG, "longitude": LON0}
            )
            if repositioned and k == 50 and control_after:
                writer.put(channels.CONTROL, ns + 20_000_000, control("reposition", True, 5.0))
        writer.close()
        (own,) = read_tracks(path, every_s=0.0).tracks
        sizes = [len(s) for s in own.segments]
        assert sizes == ([50, 50] if repositioned else [100]), (repositioned, sizes)
