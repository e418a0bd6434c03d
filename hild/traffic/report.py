"""What is said of each target, once a second, wherever it goes: the MQTT mirror's
``traffic/<name>`` topics and Signal K paths, the recording's ``/traffic`` channel, the run's
summary. One home, so a dashboard, a recording and a summary agree to the digit.

SI units and radians as every hild payload, with the mariner's figures beside them where a
person reads them (``*_deg``, ``speed_kn``); ``tcpa_s`` negative once the CPA is passed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hild.geodesy import Origin
from hild.traffic import layout as TL
from hild.traffic.targets import KNOT
from hild.traffic.view import TrafficView
from hild.units import compass_deg

if TYPE_CHECKING:
    from hild.traffic.traffic import Traffic

TWO_PI = 2.0 * math.pi
MODES = {TL.MODE_SAIL: "sail", TL.MODE_GIVE_WAY: "give-way", TL.MODE_STOPPED: "stopped"}
# The situation the target judged (layout.py's SIT_*, from its own side), named from the own
# ship's side as a bench names it (targets.py SITUATIONS): a target that gives way in a
# crossing (the own ship on its starboard side) is in the own ship's "crossing-stand-on".
SITUATIONS = {
    TL.SIT_NONE: "",
    TL.SIT_HEAD_ON: "head-on",
    TL.SIT_CROSSING_GIVE_WAY: "crossing-stand-on",
    TL.SIT_CROSSING_STAND_ON: "crossing-give-way",
    TL.SIT_OVERTAKING: "overtaken",
    TL.SIT_OVERTAKEN: "overtaking",
}


def target_reports(view: TrafficView, origin: Origin) -> list[dict[str, object]]:
    """Every target's position, motion, and its approach to the own ship, as plain values."""
    out = []
    for target, row in zip(view.targets, view.state, strict=True):
        north, east = float(row[TL.T_NORTH]), float(row[TL.T_EAST])
        lat, lon, _ = origin.to_geodetic(north, east)
        heading = float(row[TL.T_HEADING]) % TWO_PI
        speed = float(row[TL.T_SPEED])
        min_range = float(row[TL.T_MIN_RANGE])
        out.append(
            {
                "name": target.name,
                "mmsi": target.identity.mmsi,
                "latitude": lat,
                "longitude": lon,
                "north": round(north, 3),
                "east": round(east, 3),
                "heading": round(heading, 6),
                "heading_deg": round(math.degrees(heading), 2),
                "speed": round(speed, 4),
                "speed_kn": round(speed / KNOT, 2),
                "rate_of_turn": round(float(row[TL.T_YAW_RATE]), 6),
                "mode": MODES.get(float(row[TL.T_MODE]), "sail"),
                "situation": SITUATIONS.get(float(row[TL.T_SITUATION]), ""),
                "range_m": round(float(row[TL.T_RANGE]), 2),
                "bearing_deg": compass_deg(float(row[TL.T_BEARING]), 2),
                "cpa_m": round(float(row[TL.T_CPA]), 2),
                "tcpa_s": round(float(row[TL.T_TCPA]), 2),
                "min_range_m": round(min_range, 2) if math.isfinite(min_range) else None,
                "min_range_t": round(float(row[TL.T_MIN_RANGE_T]), 3),
            }
        )
    return out


def signalk_paths(view: TrafficView, origin: Origin) -> dict[str, object]:
    """Signal K paths of every target as another vessel, relative to ``vessels/``:
    ``urn:mrn:imo:mmsi:<mmsi>/navigation/...`` (SI units and radians, as its data model),
    with its closest approach to the own ship (``navigation/closestApproach``)."""
    paths: dict[str, object] = {}
    for target, report in zip(view.targets, target_reports(view, origin), strict=True):
        base = f"urn:mrn:imo:mmsi:{target.identity.mmsi}"
        identity = target.identity
        paths[f"{base}/name"] = identity.name
        paths[f"{base}/mmsi"] = str(identity.mmsi)
        paths[f"{base}/navigation/position"] = {
            "latitude": report["latitude"],
            "longitude": report["longitude"],
        }
        paths[f"{base}/navigation/headingTrue"] = report["heading"]
        paths[f"{base}/navigation/courseOverGroundTrue"] = report["heading"]
        paths[f"{base}/navigation/speedOverGround"] = report["speed"]
        paths[f"{base}/navigation/rateOfTurn"] = report["rate_of_turn"]
        paths[f"{base}/design/length"] = {"overall": identity.length}
        paths[f"{base}/design/beam"] = identity.beam
        paths[f"{base}/design/aisShipType"] = {"id": identity.ship_type}
        paths[f"{base}/sensors/ais/class"] = identity.ais_class
        paths[f"{base}/navigation/closestApproach"] = {
            "distance": report["cpa_m"],
            "timeTo": report["tcpa_s"],
            "range": report["range_m"],
        }
    return paths


def closest_approaches(view: TrafficView) -> dict[str, dict[str, object]]:
    """For the run's summary: each target's smallest range to the own ship and when."""
    out: dict[str, dict[str, object]] = {}
    for target, row in zip(view.targets, view.state, strict=True):
        min_range = float(row[TL.T_MIN_RANGE])
        out[target.name] = {
            "mmsi": target.identity.mmsi,
            "min_range_m": round(min_range, 2) if math.isfinite(min_range) else None,
            "at_t": round(float(row[TL.T_MIN_RANGE_T]), 3),
            "range_m": round(float(row[TL.T_RANGE]), 2),
        }
    return out


def closest_approaches_by_boat(
    traffic: Traffic, boat_names: Sequence[str]
) -> dict[str, dict[str, dict[str, object]]]:
    """For a fleet's summary: per boat (``boat_names``, the bench's order), each target's
    smallest range to it and when, and its range now, as ``closest_approaches`` says them of
    the first boat (Traffic's ``*_by_boat`` arrays; None where the traffic has not reckoned a
    boat yet: a target that joined since the last step, a traffic not stepped as a fleet's)."""
    out: dict[str, dict[str, dict[str, object]]] = {}
    for b, boat in enumerate(boat_names):
        known = b < traffic.boats
        entries: dict[str, dict[str, object]] = {}
        for i, target in enumerate(traffic.targets):
            min_range = float(traffic.min_range_by_boat[i, b]) if known else math.inf
            rng = float(traffic.range_by_boat[i, b]) if known else math.nan
            seen = math.isfinite(min_range)
            entries[target.name] = {
                "mmsi": target.identity.mmsi,
                "min_range_m": round(min_range, 2) if seen else None,
                "at_t": round(float(traffic.min_range_t_by_boat[i, b]), 3) if seen else None,
                "range_m": round(rng, 2) if math.isfinite(rng) else None,
            }
        out[boat] = entries
    return out
