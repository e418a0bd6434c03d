"""The channels of a recording: topic names, their JSON schemas, and Foxglove's two messages.

Topics (published: scripts and Foxglove layouts name them):

- ``/state``, ``/actuators``, ``/environment``: the mirror's payloads (hild/mirror/payloads.py),
  SI units, ``t`` (simulation seconds) and ``utc`` in each;
- ``/location`` (``foxglove.LocationFix``) and ``/pose`` (``foxglove.PoseInFrame``, frame
  ``ned``): so that Foxglove's Map and 3D panels show the boat; ``/tf``
  (``foxglove.FrameTransform``, ``ned`` -> ``vessel``, the pose's): the 3D panel's frames with
  no set-up;
- ``/fix/<device>`` (``foxglove.LocationFix``, frame the device's name): each fix a position
  sensor sent (its first GGA, RMC or CPNVG of an epoch), as a controller reads it: its noise,
  its rate, nothing while it is faulted out (hild/record/fixes.py);
- ``/sensors/<device>``: one message per sentence sent, ``{"t", "utc", "sentence"}``;
- ``/bus/<device>``: one message per line received, with its decoding result;
- ``/reference``: each heading reference a controller sent (HSC) as the loop applied it,
  ``{"t", "utc", "device", "heading_ref"}`` (radians, true);
- ``/control``: each runtime request as its sender sent it (``request``), where from
  (``source``), what it asked for (``kind``: weather, fault, reposition, commands) and the
  answer it got (``result``), each watchdog trip (``kind`` watchdog, ``source`` its
  device) and each ArduPilot SITL restart (``kind`` restart, ``source`` the link's device; the
  vessel back at its start, hild/ardupilot/link.py);
- ``/stats``: tick jitter and overruns over each second of simulated time;
- ``/traffic``: each second of simulated time, every traffic target's position, motion and
  approach to the own ship, ``{"t", "utc", "targets": [...]}`` (hild/traffic/report.py).

A fleet (several ``[[boat]]`` tables) adds, for every boat (its first included, whose
unprefixed channels above stay as they are), its own channels under ``/boats/<boat>/``:
``state``, ``actuators``, ``location``, ``pose`` and ``tf`` (``ned`` -> ``<boat>/vessel``: each
hull a frame of its own in Foxglove's 3D panel, which takes the transforms of every topic of
the ``foxglove.FrameTransform`` schema), the same payloads and schemas as the unprefixed ones.

A message's log time is its simulated UTC (the time in its sentences). A dotted key of the
mirror's payloads (``port.rpm``) comes with a nested copy (``port: {rpm}``): see ``nested``.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

STATE = "/state"
ACTUATORS = "/actuators"
ENVIRONMENT = "/environment"
LOCATION = "/location"
POSE = "/pose"
SENSORS = "/sensors/"
BUS = "/bus/"
CONTROL = "/control"
REFERENCE = "/reference"
STATS = "/stats"
TRAFFIC = "/traffic"
TF = "/tf"
FIX = "/fix/"
FRAME = "vessel"  # the child frame of /tf
FIXED = (STATE, ACTUATORS, ENVIRONMENT, LOCATION, POSE, CONTROL, STATS)
BOATS = "/boats/"  # a fleet's boat's channels: /boats/<boat>/state ...
PER_BOAT = (STATE, ACTUATORS, LOCATION, POSE, TF)  # what each boat of a fleet has of its own
# The metadata record of a run's ports: each device's name -> the JSON list of its port URLs
# (where its /sensors/<device> lines went), so that a replay sends them where they went.
PORTS = "ports"

# Foxglove's schemas (foxglove-sdk schemas/jsonschema), as its panels recognise them by name.
TIME = {
    "type": "object",
    "properties": {
        "sec": {"type": "integer", "minimum": 0},
        "nsec": {"type": "integer", "minimum": 0, "maximum": 999_999_999},
    },
}
VECTOR3 = {"type": "object", "properties": {k: {"type": "number"} for k in "xyz"}}
QUATERNION = {"type": "object", "properties": {k: {"type": "number"} for k in "xyzw"}}
LOCATION_FIX = {
    "title": "foxglove.LocationFix",
    "type": "object",
    "properties": {
        "timestamp": TIME,
        "frame_id": {"type": "string"},
        "latitude": {"type": "number"},
        "longitude": {"type": "number"},
        "altitude": {"type": "number"},
        "position_covariance": {
            "type": "array",
            "items": {"type": "number"},
            "minItems": 9,
            "maxItems": 9,
        },
        "position_covariance_type": {"type": "integer", "minimum": 0, "maximum": 3},
    },
}
POSE_IN_FRAME = {
    "title": "foxglove.PoseInFrame",
    "type": "object",
    "properties": {
        "timestamp": TIME,
        "frame_id": {"type": "string"},
        "pose": {
            "type": "object",
            "properties": {"position": VECTOR3, "orientation": QUATERNION},
        },
    },
}
FRAME_TRANSFORM = {
    "title": "foxglove.FrameTransform",
    "type": "object",
    "properties": {
        "timestamp": TIME,
        "parent_frame_id": {"type": "string"},
        "child_frame_id": {"type": "string"},
        "translation": VECTOR3,
        "rotation": QUATERNION,
    },
}
FOXGLOVE = {LOCATION: LOCATION_FIX, POSE: POSE_IN_FRAME, TF: FRAME_TRANSFORM}
JSON_TYPES = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def boat_topic(boat: str, channel: str) -> str:
    """A fleet's boat's own channel: ``("alpha", "/state")`` -> ``/boats/alpha/state``."""
    return BOATS + boat + channel


def boat_frame(boat: str) -> str:
    """A fleet's boat's frame (the child of its ``/boats/<boat>/tf``): ``alpha/vessel``."""
    return f"{boat}/{FRAME}"


def per_boat(topic: str) -> tuple[str, str] | None:
    """``/boats/alpha/state`` -> ``("alpha", "/state")``; None for a topic of no boat."""
    if not topic.startswith(BOATS):
        return None
    boat, slash, channel = topic[len(BOATS) :].partition("/")
    if not (boat and slash) or "/" + channel not in PER_BOAT:
        return None
    return boat, "/" + channel


def channel_of(topic: str) -> str:
    """The channel a topic is: a boat's ``/boats/alpha/state`` is a ``/state``; others are
    their own."""
    boat = per_boat(topic)
    return topic if boat is None else boat[1]


def foxglove_schema(topic: str) -> dict | None:
    """The Foxglove schema of a channel Foxglove's panels read (None for hild's own)."""
    if topic.startswith(FIX):
        return LOCATION_FIX
    return FOXGLOVE.get(channel_of(topic))


def schema_name(topic: str) -> str:
    """``/sensors/gps`` -> ``hild.sensors``, a boat's ``/boats/alpha/state`` -> ``hild.state``;
    Foxglove's own names for its channels."""
    schema = foxglove_schema(topic)
    if schema is not None:
        return str(schema["title"])
    return "hild." + channel_of(topic).strip("/").split("/")[0]


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    for kind, name in JSON_TYPES:
        if isinstance(value, kind):
            return name
    return "string"


def _properties(payload: dict) -> dict:
    properties: dict[str, dict] = {}
    for key, value in payload.items():
        kind = _json_type(value)
        # a number that happens to be whole in the first message is a number all the same
        properties[key] = {
            "type": ["number", "null"] if kind in ("integer", "number") else [kind, "null"]
        }
        if isinstance(value, dict) and value:
            properties[key]["properties"] = _properties(value)
    return properties


def schema_for(topic: str, payload: object) -> tuple[str, dict]:
    """A channel's schema name and JSON schema, from its first payload (typed keys, and the
    keys of a nested object)."""
    name = schema_name(topic)
    schema = foxglove_schema(topic)
    if schema is not None:
        return name, schema
    properties = _properties(payload) if isinstance(payload, dict) else {}
    return name, {"title": name, "type": "object", "properties": properties}


NESTED = frozenset({STATE, ACTUATORS, ENVIRONMENT})  # the channels written with ``nested``


def is_nested(topic: str) -> bool:
    """Whether ``topic`` is written with ``nested`` (a boat's /state and /actuators too)."""
    return channel_of(topic) in NESTED


def nested(payload: dict) -> dict:
    """The payload with each dotted key's value also under the name before its dot:
    ``"port.rpm"`` and ``"port": {"rpm": ...}``. Foxglove's message paths name a field by
    letters, digits and underscores only (``/actuators.port.rpm`` goes down into ``port``),
    so the flat key (the MQTT mirror's, for Grafana) has no path there; the nested copy has.
    Additive: every flat key stays, and a name the payload already has is never shadowed."""
    plan = _NESTING.get(keys := tuple(payload))
    if plan is None:
        if len(_NESTING) >= 64:  # (a run's channels have a few key sets: never, in practice)
            _NESTING.clear()
        plan = _NESTING[keys] = nesting(payload)
    if not plan:
        return payload
    return {
        **payload,
        **{head: {rest: payload[key] for key, rest in members} for head, members in plan},
    }


def nesting(payload: dict) -> list[tuple[str, list[tuple[str, str]]]]:
    """Which keys ``nested`` copies, and where: each name before a dot (in the order of its
    first key) with its keys and the rest of each after the dot."""
    plan: dict[str, list[tuple[str, str]]] = {}
    for key in payload:
        head, dot, rest = key.partition(".")
        if dot and head and rest and head not in payload:
            plan.setdefault(head, []).append((key, rest))
    return list(plan.items())


# a payload's keys -> its nesting: a channel's keys are the same message after message
_NESTING: dict[tuple[str, ...], list[tuple[str, list[tuple[str, str]]]]] = {}


def transform_of(topic: str) -> tuple[str, str] | None:
    """The transform a pose's channel implies, as (its topic, its child frame): ``/pose``'s is
    ``/tf`` to ``vessel``, a boat's ``/boats/alpha/pose``'s ``/boats/alpha/tf`` to
    ``alpha/vessel``; None for any other channel."""
    if topic == POSE:
        return TF, FRAME
    boat = per_boat(topic)
    if boat is not None and boat[1] == POSE:
        return boat_topic(boat[0], TF), boat_frame(boat[0])
    return None


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


def utc_ns(utc: datetime) -> int:
    """Nanoseconds since the epoch, exact to the microsecond (integer arithmetic of
    timedeltas: no float rounding): a message's log time."""
    return (utc - EPOCH) // MICROSECOND * 1000


def timestamp(utc_ns: int) -> dict[str, int]:
    return {"sec": utc_ns // 1_000_000_000, "nsec": utc_ns % 1_000_000_000}


def location_fix(
    utc_ns: int, latitude: float, longitude: float, height: float, frame_id: str = "wgs84"
) -> dict:
    """A position as a foxglove.LocationFix (covariance unknown: the truth's is none, and a
    sentence states none)."""
    return {
        "timestamp": timestamp(utc_ns),
        "frame_id": frame_id,
        "latitude": latitude,
        "longitude": longitude,
        "altitude": height,
        "position_covariance": [0.0] * 9,
        "position_covariance_type": 0,
    }


def pose_in_frame(utc_ns: int, eta) -> dict:
    """NED position and the attitude quaternion of R(Theta) = Rz(psi) Ry(theta) Rx(phi)
    (Fossen's zyx convention, thesis eq. 2.7), in the frame ``ned``."""
    north, east, down, roll, pitch, yaw = eta[:6].tolist()
    phi, theta, psi = roll / 2.0, pitch / 2.0, yaw / 2.0
    cr, sr = math.cos(phi), math.sin(phi)
    cp, sp = math.cos(theta), math.sin(theta)
    cy, sy = math.cos(psi), math.sin(psi)
    orientation = {
        "w": cr * cp * cy + sr * sp * sy,
        "x": sr * cp * cy - cr * sp * sy,
        "y": cr * sp * cy + sr * cp * sy,
        "z": cr * cp * sy - sr * sp * cy,
    }
    position = {"x": north, "y": east, "z": down}
    return {
        "timestamp": timestamp(utc_ns),
        "frame_id": "ned",
        "pose": {"position": position, "orientation": orientation},
    }


def frame_transform(pose: dict, child: str = FRAME) -> dict:
    """A pose (``pose_in_frame``) as the transform from its frame to the vessel's (``/tf``;
    ``child``: a fleet's boat's frame, ``boat_frame``)."""
    return {
        "timestamp": pose["timestamp"],
        "parent_frame_id": pose["frame_id"],
        "child_frame_id": child,
        "translation": pose["pose"]["position"],
        "rotation": pose["pose"]["orientation"],
    }
