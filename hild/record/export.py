"""`hild export`: a recording's tracks as GPX 1.1 (OpenCPN, most chart plotters) and KML 2.2
(Google Earth): the own ship's (a fleet's: each boat's, named after it, from its
``/boats/<boat>/state``) and each traffic target's.

A track is cut into segments wherever a straight line between two points would be a lie: at
a reposition that was applied and at an ArduPilot SITL restart (``/control``), at a jump no
vessel sails (faster than JUMP_SPEED_MS between two samples), and at a gap in time (longer
than GAP_S or three times the track's usual step). Each segment is then thinned to one point
per ``every`` seconds of simulated UTC (on whole multiples of it), keeping its first and last
point, so that an hour's run is 3,600 points per track, not 72,000.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeGuard

import numpy as np

from hild import __version__
from hild.config import MISSING, ConfigError
from hild.record import channels
from hild.record.breaks import BREAK_KINDS, JUMP_SPEED_MS, track_breaks
from hild.record.reader import head, messages

GPX_NS = "http://www.topografix.com/GPX/1/1"
KML_NS = "http://www.opengis.net/kml/2.2"
GX_NS = "http://www.google.com/kml/ext/2.2"
DEFAULT_EVERY_S = 1.0
GAP_S = 5.0  # at least this long without a sample is a gap (three usual steps, if longer)
EARTH_RADIUS_M = 6_371_000.0
# KML colours are aabbggrr: the own ship orange, the targets blue
OWN_STYLE = ("own-ship", "ff0080ff", "http://maps.google.com/mapfiles/kml/shapes/sailing.png")
TRAFFIC_STYLE = ("traffic", "ffff8000", "http://maps.google.com/mapfiles/kml/shapes/ferry.png")


@dataclass(frozen=True, slots=True)
class Point:
    ns: int  # simulated UTC, nanoseconds since the epoch (the message's log time)
    latitude: float
    longitude: float


@dataclass
class Track:
    name: str
    description: str
    own: bool  # the own ship (else a traffic target)
    segments: list[list[Point]] = field(default_factory=list)

    @property
    def points(self) -> int:
        return sum(len(s) for s in self.segments)


@dataclass
class Export:
    name: str  # the bench's (the profile's for hild sim, else the file's)
    description: str
    tracks: list[Track]


def _distance_m(a: Point, b: Point) -> float:
    """Metres between two near points (equirectangular: ample for a jump test)."""
    lat = math.radians((a.latitude + b.latitude) / 2.0)
    dn = math.radians(b.latitude - a.latitude)
    de = math.radians((b.longitude - a.longitude + 180.0) % 360.0 - 180.0) * math.cos(lat)
    return EARTH_RADIUS_M * math.hypot(dn, de)


def _control_breaks(samples: list[Point], events: list[int]) -> set[int]:
    """Where the track breaks (hild/record/breaks.py, the rule the plots draw by), the
    reposition and restart events at the log times ``events`` [ns]."""
    if len(samples) < 2:
        return set()
    t = np.array([p.ns for p in samples], dtype=float) / 1e9
    steps = np.array([_distance_m(a, b) for a, b in zip(samples, samples[1:], strict=False)])
    return set(track_breaks(t, steps, [ns / 1e9 for ns in events]).tolist())


def segments(samples: list[Point], breaks: Collection[int] = ()) -> list[list[Point]]:
    """The samples cut at ``breaks`` (indices that start a segment), at a jump, at a gap and
    where time goes back; a sample at the time of the one before it is left out."""
    steps = [b.ns - a.ns for a, b in zip(samples, samples[1:], strict=False) if b.ns > a.ns]
    usual_ns = statistics.median(steps) if steps else 0
    gap_ns = max(GAP_S * 1e9, 3.0 * usual_ns)
    out: list[list[Point]] = []
    for i, p in enumerate(samples):
        if out:
            prev = out[-1][-1]
            dt_ns = p.ns - prev.ns
            if dt_ns == 0:
                continue
            jump = dt_ns > 0 and _distance_m(prev, p) > JUMP_SPEED_MS * dt_ns / 1e9
            if i not in breaks and 0 < dt_ns <= gap_ns and not jump:
                out[-1].append(p)
                continue
        out.append([p])
    return out


def thin(segment: list[Point], every_s: float) -> list[Point]:
    """One point per ``every_s`` of UTC (the first at or after each whole multiple of it),
    with the segment's first and last; every point for 0."""
    every_ns = round(every_s * 1e9)
    if every_ns <= 0 or len(segment) <= 2:
        return list(segment)
    kept = [segment[0]]
    bucket = segment[0].ns // every_ns
    for p in segment[1:-1]:
        if p.ns // every_ns != bucket:
            bucket = p.ns // every_ns
            kept.append(p)
    kept.append(segment[-1])
    return kept


def read_tracks(path: Path, every_s: float = DEFAULT_EVERY_S) -> Export:
    """The own ship's track (/state, else /location; a fleet's: each boat's, from its
    /boats/<boat>/state, else its /boats/<boat>/location) and each target's (/traffic), cut
    into segments and thinned."""
    path = Path(path)
    info = head(path).metadata.get("hild", {})
    state: list[Point] = []
    location: list[Point] = []
    boat_states: dict[str, list[Point]] = {}  # a fleet's boats, in the order first seen
    boat_locations: dict[str, list[Point]] = {}
    events: list[int] = []  # log times of the repositions and restarts applied
    targets: dict[str, list[Point]] = {}
    mmsis: dict[str, object] = {}
    topics = [
        channels.STATE,
        channels.LOCATION,
        channels.CONTROL,
        channels.TRAFFIC,
        channels.BOATS,  # (a prefix: every boat's channels)
    ]
    for m in messages(path, topics):
        p = m.payload
        if m.topic.startswith(channels.BOATS):
            boat = channels.per_boat(m.topic)
            lat, lon = p.get("latitude"), p.get("longitude")
            if boat is None or boat[1] not in (channels.STATE, channels.LOCATION):
                continue
            if _finite(lat) and _finite(lon):
                by_boat = boat_states if boat[1] == channels.STATE else boat_locations
                by_boat.setdefault(boat[0], []).append(Point(m.log_time_ns, float(lat), float(lon)))
        elif m.topic in (channels.STATE, channels.LOCATION):
            lat, lon = p.get("latitude"), p.get("longitude")
            if _finite(lat) and _finite(lon):
                track = state if m.topic == channels.STATE else location
                track.append(Point(m.log_time_ns, float(lat), float(lon)))
        elif m.topic == channels.CONTROL:
            result = p.get("result")
            if p.get("kind") in BREAK_KINDS and isinstance(result, dict) and result.get("ok"):
                events.append(m.log_time_ns)
        else:
            for target in p.get("targets") or ():
                if not isinstance(target, dict):
                    continue
                name = str(target.get("name", target.get("mmsi", "?")))
                lat, lon = target.get("latitude"), target.get("longitude")
                if _finite(lat) and _finite(lon):
                    targets.setdefault(name, []).append(
                        Point(m.log_time_ns, float(lat), float(lon))
                    )
                    mmsis.setdefault(name, target.get("mmsi"))
    own = state or location
    boats = {b: boat_states.get(b) or boat_locations[b] for b in {**boat_states, **boat_locations}}
    if not own and not boats:
        raise ConfigError(
            path,
            "",
            MISSING,
            "a recording of the vessel's track: messages on "
            "/state or /location, which it has none of",
        )
    name = info.get("bench") or info.get("profile") or path.stem
    profile = f" ({info['profile']})" if info.get("profile") else ""
    if boats:  # a fleet: a track per boat (its first's /state is the first boat's track again)
        # (a reposition moves the first boat, a SITL restart its own: each boat's track is cut
        # only where a step of its own stands out near the event, hild/record/breaks.py)
        tracks = [
            Track(
                boat,
                f"boat {boat} of fleet {name}",
                True,
                _thinned(segments(samples, _control_breaks(samples, events)), every_s),
            )
            for boat, samples in boats.items()
        ]
    else:
        tracks = [
            Track(
                name,
                f"own ship{profile}",
                True,
                _thinned(segments(own, _control_breaks(own, events)), every_s),
            )
        ]
    for target, samples in targets.items():
        mmsi = mmsis.get(target)
        label = f"{target} (MMSI {mmsi})" if mmsi else target
        tracks.append(
            Track(label, f"traffic target {label}", False, _thinned(segments(samples), every_s))
        )
    kind = info.get("kind", "")
    made = f"hild {kind}" if kind else "hild"
    ships = f"{len(boats)} boats ({', '.join(boats)})" if boats else "the own ship"
    description = f"{made} recording {path.name}: {ships} and {len(targets)} traffic target(s)"
    return Export(name, description, tracks)


def _finite(x: object) -> TypeGuard[float]:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _thinned(segs: list[list[Point]], every_s: float) -> list[list[Point]]:
    return [thin(s, every_s) for s in segs]


def utc_text(ns: int) -> str:
    """ISO 8601 UTC with Z: whole seconds bare, else milliseconds (microseconds if need be)."""
    seconds, rest = divmod(ns, 1_000_000_000)
    text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    micro = rest // 1000
    if micro:
        text += f".{micro // 1000:03d}" if micro % 1000 == 0 else f".{micro:06d}"
    return text + "Z"


def _degrees(x: float) -> str:
    return f"{x:.8f}"  # xsd:decimal (no exponent), ~1 mm


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrib: str) -> ET.Element:
    element = ET.SubElement(parent, tag, attrib)
    if text is not None:
        element.text = text
    return element


def gpx(export: Export) -> ET.ElementTree:
    """GPX 1.1: metadata (name, desc, time, bounds), then a <trk> per track (name, desc,
    type, a <trkseg> per segment of <trkpt lat lon> with its <time>), in the schema's order."""
    g = ""  # (the default namespace, declared on the root: no global prefix registry)
    root = ET.Element("gpx", {"version": "1.1", "creator": f"hild {__version__}", "xmlns": GPX_NS})
    points = [p for t in export.tracks for s in t.segments for p in s]
    meta = _sub(root, g + "metadata")
    _sub(meta, g + "name", export.name)
    _sub(meta, g + "desc", export.description)
    _sub(meta, g + "time", utc_text(min(p.ns for p in points)))
    _sub(
        meta,
        g + "bounds",
        minlat=_degrees(min(p.latitude for p in points)),
        minlon=_degrees(min(p.longitude for p in points)),
        maxlat=_degrees(max(p.latitude for p in points)),
        maxlon=_degrees(max(p.longitude for p in points)),
    )
    for track in export.tracks:
        trk = _sub(root, g + "trk")
        _sub(trk, g + "name", track.name)
        _sub(trk, g + "desc", track.description)
        _sub(trk, g + "type", "own ship" if track.own else "traffic")
        for segment in track.segments:
            seg = _sub(trk, g + "trkseg")
            for p in segment:
                pt = _sub(seg, g + "trkpt", lat=_degrees(p.latitude), lon=_degrees(p.longitude))
                _sub(pt, g + "time", utc_text(p.ns))
    return ET.ElementTree(root)


def kml(export: Export) -> ET.ElementTree:
    """KML 2.2: a Document with a style for the own ship and one for the targets, and a
    Placemark per track whose gx:MultiTrack holds a gx:Track per segment (<when>s, then
    <gx:coord>s): Google Earth draws each as a line and moves the vessel along it with its
    time slider; gx:interpolate 0 draws no line between two segments."""
    k, gx = "", "gx:"  # (namespaces declared on the root, as Google Earth's own files do)
    root = ET.Element("kml", {"xmlns": KML_NS, "xmlns:gx": GX_NS})
    doc = _sub(root, k + "Document")
    _sub(doc, k + "name", export.name)
    _sub(doc, k + "description", export.description)
    for style_id, colour, icon in (OWN_STYLE, TRAFFIC_STYLE):
        style = _sub(doc, k + "Style", id=style_id)
        icon_style = _sub(style, k + "IconStyle")
        _sub(icon_style, k + "color", colour)
        _sub(_sub(icon_style, k + "Icon"), k + "href", icon)
        line = _sub(style, k + "LineStyle")
        _sub(line, k + "color", colour)
        _sub(line, k + "width", "3" if style_id == OWN_STYLE[0] else "2")
    for track in export.tracks:
        placemark = _sub(doc, k + "Placemark")
        _sub(placemark, k + "name", track.name)
        _sub(placemark, k + "description", track.description)
        _sub(placemark, k + "styleUrl", "#" + (OWN_STYLE if track.own else TRAFFIC_STYLE)[0])
        multi = _sub(placemark, gx + "MultiTrack")
        _sub(multi, gx + "interpolate", "0")
        for segment in track.segments:
            gx_track = _sub(multi, gx + "Track")
            for p in segment:
                _sub(gx_track, k + "when", utc_text(p.ns))
            for p in segment:
                _sub(gx_track, gx + "coord", f"{_degrees(p.longitude)} {_degrees(p.latitude)} 0")
    return ET.ElementTree(root)


def write_xml(tree: ET.ElementTree, out: Path) -> None:
    """The document to ``out``, whole or not at all (written beside it, then renamed)."""
    ET.indent(tree, "  ")
    out = Path(out)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(b'<?xml version="1.0" encoding="UTF-8"?>\n')
            tree.write(f, encoding="UTF-8", xml_declaration=False)
            f.write(b"\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def export(
    path: Path, gpx_out: Path | None, kml_out: Path | None, every_s: float = DEFAULT_EVERY_S
) -> list[str]:
    """Write the recording's tracks to ``gpx_out`` and/or ``kml_out``; a line per file."""
    path = Path(path)
    outputs = [
        (flag, Path(out))
        for flag, out in (("--gpx", gpx_out), ("--kml", kml_out))
        if out is not None
    ]
    for flag, out in outputs:
        if out.exists() and path.exists() and out.resolve() == path.resolve():
            raise ConfigError(flag, "", str(out), "a file other than the recording itself")
    if len(outputs) == 2 and outputs[0][1].resolve() == outputs[1][1].resolve():
        raise ConfigError("--kml", "", str(kml_out), "a file other than --gpx's")
    tracks = read_tracks(path, every_s)
    own = [t for t in tracks.tracks if t.own]
    ships = (
        [f"own ship {own[0].points} points in {len(own[0].segments)} segment(s)"]
        if len(own) == 1
        else [f"boat {t.name} {t.points} points in {len(t.segments)} segment(s)" for t in own]
    )
    said = ", ".join([*ships, f"{len(tracks.tracks) - len(own)} traffic target(s)"])
    lines = []
    for flag, out in outputs:
        try:
            if flag == "--gpx":
                write_xml(gpx(tracks), out)
            else:
                write_xml(kml(tracks), out)
        except OSError as e:
            raise ConfigError(
                flag, "", str(out), f"a file hild can write ({e.strerror or e})"
            ) from None
        lines.append(f"{out}: {said}")
    return lines
