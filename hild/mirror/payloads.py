"""What each mirror topic carries: flat JSON-ready dicts in SI units, built from the truth.

Pure functions of the truth and a few counters; every payload has ``t`` (simulation seconds)
and ``utc`` (ISO 8601). Angles are radians, speeds m/s, forces N; actuator speeds keep the
unit their controls use, named in the key (``port.rpm`` [rev/min], ``port.cmd`` [-1, 1]).
Keys are flat, ``port.rpm`` rather than nested tables, because Grafana's MQTT source reads one
field per top-level key.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
import orjson

from hild.geodesy import Origin
from hild.model import layout as L
from hild.model.vessel import ActuatorSpec
from hild.sensors.kinematics import velocity_ned, water_velocity_body
from hild.sensors.truth import Truth

if TYPE_CHECKING:
    from hild.observers import EnvironmentView

Payload = dict[str, object]
ORIGIN_POINT = np.zeros(3)  # the body frame's origin, CO


def to_json(payload: object) -> bytes:
    """A payload's JSON, compact, by orjson (compiled: a third of the json module's time for a
    state message, bench/bench_daemon.py), for the recording's messages and the mirror's. A
    NaN or an infinity is written as null (a diverged state's position, say), as hild's other
    JSON outputs write them (hild/sim.py) and as the recording's schemas allow; a numpy number
    as its value; anything else JSON has no type for as its text."""
    return orjson.dumps(payload, option=orjson.OPT_SERIALIZE_NUMPY, default=str)


_last_utc_text: tuple[datetime | None, str] = (None, "")  # (an instant, its text): see utc_text


def utc_text(utc: datetime) -> str:
    """``utc`` in ISO 8601 with a Z. A sample's payloads share their instant (the same
    object), so the last one's text is kept, keyed by the object's identity: the cache holds
    the object, so no other can take its identity, and an equal instant in another zone gets
    its own text. One tuple, replaced whole: safe from any thread."""
    global _last_utc_text
    last, text = _last_utc_text
    if last is not utc:
        text = utc.isoformat().replace("+00:00", "Z")
        _last_utc_text = (utc, text)
    return text


def stamp(t: float, utc: datetime) -> Payload:
    return {"t": round(t, 6), "utc": utc_text(utc)}


def ned_velocity(truth: Truth) -> tuple[float, float, float]:
    """Velocity over ground of the body origin in NED [m/s]."""
    vn, ve, vd = velocity_ned(truth, ORIGIN_POINT).tolist()
    return vn, ve, vd


def state(truth: Truth, origin: Origin) -> Payload:
    """The vessel's motion: position (NED and geodetic), attitude, velocities, rates."""
    # (the arrays read as Python floats at once: a value each, as float() of its item gives)
    north, east, down, roll, pitch, heading = truth.eta.tolist()
    u, v, w, p, q, r = truth.nu.tolist()
    lat, lon, height = origin.to_geodetic(north, east, down)
    vn, ve, vd = ned_velocity(truth)
    return {
        **stamp(truth.t, truth.utc),
        "north": north,
        "east": east,
        "down": down,
        # degrees, degrees, m
        "latitude": lat,
        "longitude": lon,
        "height": height,
        "roll": roll,
        "pitch": pitch,
        "heading": heading % (2.0 * math.pi),
        "u": u,
        "v": v,
        "w": w,
        "p": p,
        "q": q,
        "r": r,
        "v_north": vn,
        "v_east": ve,
        "v_down": vd,
        "sog": math.hypot(vn, ve),
        "cog": math.atan2(ve, vn) % (2.0 * math.pi),
    }


def actuators(truth: Truth, specs: Sequence[ActuatorSpec], force: np.ndarray) -> Payload:
    """Per actuator its commanded and actual speed, angle and deflector; the total force."""
    out = stamp(truth.t, truth.utc)
    actual, commanded = truth.actuators.tolist(), truth.commands.tolist()
    for a in specs:
        base = a.index * L.S_SIZE
        for name, slot in a.present_states:
            out[name] = actual[base + slot]
            out[name + "_commanded"] = commanded[base + slot]
    tau = force.tolist()
    out["force.X"], out["force.Y"] = tau[0], tau[1]
    out["force.N"] = tau[5]
    return out


def environment(truth: Truth, env: EnvironmentView | None) -> Payload:
    """True wind at 10 m, current, the sea surface at the vessel and the sea state's Hs
    (``env``: a run's environment, or an observer's view of it)."""
    if env is None:
        return environment_of(truth, 0.0, 0.0, "")
    return environment_of(truth, env.elevation, env.weather.waves.hs, env.weather.preset)


def environment_of(truth: Truth, elevation: float, hs: float, weather: str) -> Payload:
    """``environment`` from the environment's values at the truth's instant (the recording
    takes them in the tick and builds the payload in its own thread)."""
    out = stamp(truth.t, truth.utc)
    wn, we = truth.wind_ned
    cn, ce = truth.current_ned
    out.update(
        {
            "wind_speed": math.hypot(wn, we),
            "wind_from": math.atan2(-we, -wn) % (2.0 * math.pi),  # where it blows from
            "wind_north": wn,
            "wind_east": we,
            "current_speed": math.hypot(cn, ce),
            "current_to": math.atan2(ce, cn) % (2.0 * math.pi),  # where it sets to
            "current_north": cn,
            "current_east": ce,
            "wave_elevation": elevation,
            "hs": hs,
            "weather": weather,
        }
    )
    return out


def sentences(t: float, utc: datetime, lines: Iterable[bytes], dropped: int) -> Payload:
    """A device's sentences sent since the last message (``dropped``: lines that did not fit)."""
    text = [line.decode("ascii", "replace").rstrip("\r\n") for line in lines]
    return {**stamp(t, utc), "sentences": text, "dropped": dropped}


def bus(t: float, utc: datetime, summary: dict) -> Payload:
    """A command device's counters, those by reason or by sentence type flattened for
    dashboards (``rejected.bad_checksum``, ``sentences_failed.TRD``)."""
    out = {**stamp(t, utc)}
    for key, value in summary.items():
        if isinstance(value, dict):
            out.update({f"{key}.{sub}": count for sub, count in value.items()})
        else:
            out[key] = value
    return out


def signalk(truth: Truth, origin: Origin, specs: Sequence[ActuatorSpec]) -> dict[str, object]:
    """Signal K paths (SI units, as its data model) -> value, as signalk-mqtt-gw publishes them."""
    eta = truth.eta
    stw = float(water_velocity_body(truth, ORIGIN_POINT)[0])  # as a speed log at the CO
    lat, lon, _ = origin.to_geodetic(float(eta[0]), float(eta[1]), float(eta[2]))
    vn, ve, _ = ned_velocity(truth)
    wn, we = truth.wind_ned
    cn, ce = truth.current_ned
    paths: dict[str, object] = {
        "navigation/position": {"latitude": lat, "longitude": lon},
        "navigation/headingTrue": float(eta[5]) % (2.0 * math.pi),
        "navigation/courseOverGroundTrue": math.atan2(ve, vn) % (2.0 * math.pi),
        "navigation/speedOverGround": math.hypot(vn, ve),
        "navigation/speedThroughWater": stw,
        "navigation/attitude": {
            "roll": float(eta[3]),
            "pitch": float(eta[4]),
            "yaw": float(eta[5]),
        },
        "navigation/rateOfTurn": float(truth.nu[5]),
        "environment/wind/speedTrue": math.hypot(wn, we),
        "environment/wind/directionTrue": math.atan2(-we, -wn) % (2.0 * math.pi),
        "environment/current": {
            "drift": math.hypot(cn, ce),
            "setTrue": math.atan2(ce, cn) % (2.0 * math.pi),
        },
    }
    angles = []
    for a in specs:
        base = a.index * L.S_SIZE
        if a.speed_unit == "rpm":  # Signal K: revolutions in Hz
            paths[f"propulsion/{a.name}/revolutions"] = float(truth.actuators[base]) / 60.0
        if a.angle_kind != "none":
            angles.append(float(truth.actuators[base + L.S_ANGLE]))
    if angles:
        paths["steering/rudderAngle"] = sum(angles) / len(angles)
    return paths
