"""The messages of a run's events, as the recording writes them and the live view sends them:
sentences a device sent, lines the bus received, control records applied, runtime requests,
and a fleet's boats' own channels (``boat_messages``).

One home for both (hild/record/observer.py and hild/live/foxglove.py): a layout made on a
recording works on the live view because the two build the same payloads here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

import numpy as np

from hild.bus.mapping import Demand
from hild.control import HeadingReference, Restart, SafeState, StepRate
from hild.mirror import payloads
from hild.record import channels, fixes
from hild.sensors.truth import Truth

if TYPE_CHECKING:
    from hild.control import ActuatorCommand, ControlRecord
    from hild.geodesy import Origin
    from hild.model.vessel import ActuatorSpec
    from hild.observers import RunView
    from hild.transport.base import Inbound

Message = dict[str, object]
DEMAND_FIELDS = tuple(f.name for f in dataclasses.fields(Demand))
STAMP: Message = {"t": 0.0, "utc": ""}
EXAMPLE_UTC = datetime(2026, 1, 1, tzinfo=UTC)  # a declared example's (only its keys count)
BOAT_MESSAGES = 5  # a boat's messages in the file per sample: the four below and its pose's /tf


def declared(run: RunView) -> list[tuple[str, Message]]:
    """Every channel of a run known before its first tick, with an example of its keys (the
    sampled channels open with their first payload): what the recording declares and the live
    view advertises. A /fix/<device> is filled from the sentences (its schema is Foxglove's)."""
    found: list[tuple[str, Message]] = []
    for device in run.devices:
        found.append((channels.SENSORS + device.name, {**STAMP, "sentence": ""}))
        if fixes.reports_fixes(device.config.sentences):
            found.append((channels.FIX + device.name, {}))
    for command_device in run.command_devices:
        found.append(
            (
                channels.BUS + command_device.name,
                {
                    **STAMP,
                    "port": "",
                    "peer": "",
                    "line": "",
                    "ok": True,
                    "reason": "",
                    "detail": "",
                    "demands": [],
                },
            )
        )
    if run.command_devices:
        found.append((channels.REFERENCE, {**STAMP, "device": "", "heading_ref": 0.0}))
    found.append(
        (channels.CONTROL, {**STAMP, "kind": "", "source": "", "request": {}, "result": {}})
    )
    if run.bench.traffic:  # (a target added at run time opens it with its first message)
        found.append((channels.TRAFFIC, {**STAMP, "targets": []}))
    found.append(
        (
            channels.STATS,
            {
                **STAMP,
                "ticks": 0,
                "overruns": 0,
                "jitter_p50_ms": 0.0,
                "jitter_p99_ms": 0.0,
                "jitter_max_ms": 0.0,
                "record_dropped": 0,
            },
        )
    )
    found += declared_boats(run)
    return found


def declared_boats(run: RunView) -> list[tuple[str, Message]]:
    """A fleet's boats' own channels (none for one boat), each with an example of its keys:
    a boat's state and actuators as they are before the first tick (nested as written: the
    same schema as its first message), its location, pose and /tf Foxglove's."""
    found: list[tuple[str, Message]] = []
    for index, name in enumerate(run.boats):
        boat = run.boat(index)
        example = boat_messages(
            0.0,
            EXAMPLE_UTC,
            np.array(boat.x),
            np.array(boat.act_state),
            np.array(boat.act_cmd),
            np.array(boat.actuator_force),
            run.bench.origin,
            boat.actuators,
            name,
        )
        for topic, message in example:
            nested = channels.is_nested(topic) and isinstance(message, dict)
            found.append((topic, channels.nested(message) if nested else message))
        found.append((channels.boat_topic(name, channels.TF), {}))
    return found


def boat_messages(
    t: float,
    utc: datetime,
    x: np.ndarray,
    actuators: np.ndarray,
    commands: np.ndarray,
    force: np.ndarray,
    origin: Origin,
    specs: Sequence[ActuatorSpec],
    boat: str,
) -> list[tuple[str, Message]]:
    """A fleet's boat at one instant, on its own channels (``/boats/<boat>/``): its state,
    actuators, location and pose (the recording adds the pose's /tf, ``ned`` ->
    ``<boat>/vessel``), from copies of its state ``x`` (eta then nu), its actuators' states,
    commands and force: the payloads of the unprefixed channels (``sample_messages``)."""
    truth = Truth(t, utc, x[:6], x[6:12], actuators=actuators, commands=commands)
    state, acts, fix, pose = vessel_payloads(truth, origin, specs, force)
    return [
        (channels.boat_topic(boat, channels.STATE), state),  # (the writer adds nested copies)
        (channels.boat_topic(boat, channels.ACTUATORS), acts),
        (channels.boat_topic(boat, channels.LOCATION), fix),
        (channels.boat_topic(boat, channels.POSE), pose),
    ]


def vessel_payloads(
    truth: Truth, origin: Origin, specs: Sequence[ActuatorSpec], force: np.ndarray
) -> tuple[Message, Message, Message, Message]:
    """A vessel's state, actuators, location and pose at ``truth``'s instant: the payloads of
    its /state, /actuators, /location and /pose (hild/record/observer.py ``sample_messages``)
    or of a fleet's boat's own (``boat_messages``)."""
    ns = channels.utc_ns(truth.utc)
    state = payloads.state(truth, origin)
    fix = channels.location_fix(
        ns,
        cast(float, state["latitude"]),
        cast(float, state["longitude"]),
        cast(float, state["height"]),
    )
    acts = payloads.actuators(truth, specs, force)
    return state, acts, fix, channels.pose_in_frame(ns, truth.eta)


def sentences(stamp: Message, lines: Sequence[bytes]) -> list[Message]:
    """One message per sentence a device sent (for ``/sensors/<device>``)."""
    return [{**stamp, "sentence": line.decode("ascii", "replace").rstrip("\r\n")} for line in lines]


def bus_line(
    stamp: Message,
    inbound: Inbound,
    command: ActuatorCommand | None,
    rejected: tuple[str, str] | None,
) -> Message:
    """A line a command device received, with its decoding (for ``/bus/<device>``). ok: a
    command, or a heading reference (HSC: neither command nor rejection here; its value
    reaches /reference once the loop has applied it)."""
    message: Message = {
        **stamp,
        "port": inbound.port,
        "peer": f"{inbound.peer[0]}:{inbound.peer[1]}" if inbound.peer else "",
        "line": inbound.line.decode("ascii", "replace"),
        "ok": rejected is None,
        "reason": rejected[0] if rejected else "",
        "detail": rejected[1] if rejected else "",
    }
    if command is not None:
        message["demands"] = [demand_fields(d) for d in command.demands]
    return message


def demand_fields(demand: Demand) -> Message:
    """A demand's fields that it sets (None leaves a part as it was: not written), in the
    order of its fields. Its values are numbers, so this is ``dataclasses.asdict`` without the
    deep copies, which took most of a bus line's message (a line a tick in a lockstep run)."""
    return {name: value for name in DEMAND_FIELDS if (value := getattr(demand, name)) is not None}


def control(stamp: Message, record: ControlRecord) -> tuple[str, Message] | None:
    """(topic, message) for a control record of its own: a heading reference goes to
    /reference, a watchdog's trip and a SITL restart to /control; None for the records a
    runtime request made (``request`` has those)."""
    if isinstance(record, HeadingReference):  # a channel of its own, not a control change
        return channels.REFERENCE, {**stamp, "device": record.source, "heading_ref": record.heading}
    if isinstance(record, SafeState):  # in the names of the bench's [[device]] table
        return channels.CONTROL, {
            **stamp,
            "kind": "watchdog",
            "source": record.source,
            "request": {},
            "result": {
                "ok": True,
                "watchdog": "tripped",
                "on_timeout_angle": "centre" if record.centre_angles else "hold",
            },
        }
    if isinstance(record, StepRate):  # an autopilot's SITL set the step with its first frame
        return channels.CONTROL, {
            **stamp,
            "kind": "step_rate",
            "source": record.source,
            "request": {},
            "result": {"ok": True, "rate_hz": record.rate_hz},
        }
    if isinstance(record, Restart):  # an autopilot's SITL restarted: the vessel reset
        return channels.CONTROL, {
            **stamp,
            "kind": "restart",
            "source": record.source,
            "request": {},
            "result": {
                "ok": True,
                "north": record.x[0],
                "east": record.x[1],
                "heading": record.x[5],
            },
        }
    return None


def request(stamp: Message, kind: str, source: str, sent: dict, answer: dict) -> Message:
    """A runtime request as its sender sent it, and the answer it got (for ``/control``)."""
    return {**stamp, "kind": kind, "source": source, "request": sent, "result": answer}
