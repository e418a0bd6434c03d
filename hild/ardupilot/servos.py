"""ArduPilot's servo outputs as actuator demands: throttle and steering, or skid steering.

ArduPilot Rover drives a boat (FRAME_CLASS 2) through servo functions (Rover parameter docs):
26 GroundSteering, 70 Throttle, 73 ThrottleLeft and 74 ThrottleRight (skid steering). Each
output is a pulse width between SERVOn_MIN and SERVOn_MAX with SERVOn_TRIM as zero: the
steering's -1 .. 1 (positive turns right) and the throttle's -1 .. 1 (negative is astern).

- ``throttle-steering``: the throttle drives every actuator together, the steering every one
  that steers (a waterjet's nozzle, an azimuth thruster) as a rudder order, positive turning the
  bow to starboard, up to the smaller end of each one's angle range.
- ``skid``: the left throttle drives the actuators on the port side, the right one those on
  the starboard side; angles stay centred.

A throttle drives a waterjet as a single lever does (hild/bus/mapping.py ``lever``): the first
fifth moves the astern deflector from neutral to full, the rest raises the engine from idle to
full, so a negative throttle is thrust astern through the deflector. A thruster's throttle is
its thrust in per cent, reversing below zero. With ``reverse = false`` a throttle below zero is
neutral (idle, deflector neutral).

Measured against a real Rover SITL (the reference's protocols.md): every output reads 0 for the
first 2-3 s; a pulse below ``no_signal_below_us`` (900 us) is no signal, taken as neutral
(centred, idle), never as full astern.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hild.bus.mapping import ActuatorMap, Demand
from hild.model.vessel import Vessel

MAPPINGS = ("auto", "throttle-steering", "skid")
# ArduPilot's servo functions (SERVOn_FUNCTION) for each input of a mapping
STEERING_FUNCTION = 26
THROTTLE_FUNCTION = 70
THROTTLE_LEFT_FUNCTION = 73
THROTTLE_RIGHT_FUNCTION = 74


class MappingError(ValueError):
    """A servo mapping that cannot drive this vessel: the setting, its value, what would."""

    def __init__(self, key: str, value: object, expected: str):
        self.key, self.value, self.expected = key, value, expected
        super().__init__(f"settings.{key} = {value!r}: expected {expected}")


@dataclass(frozen=True)
class PulseRange:
    """A servo output's pulse widths [us]: SERVOn_MIN, SERVOn_TRIM (zero), SERVOn_MAX."""

    low: int = 1000
    trim: int = 1500
    high: int = 2000
    no_signal_below: int = 900

    def value(self, pwm: int) -> float | None:
        """The output as -1 .. 1 (trim is 0), or None when there is no signal."""
        if pwm < self.no_signal_below:
            return None
        if pwm >= self.trim:
            x = (pwm - self.trim) / (self.high - self.trim)
        else:
            x = (pwm - self.trim) / (self.trim - self.low)
        return min(max(x, -1.0), 1.0)


@dataclass(frozen=True)
class ServoMapping:
    """Which SERVOn output drives what, for one vessel; ``demands`` turns a frame's outputs into
    the demands of every actuator."""

    kind: str  # "throttle-steering" or "skid"
    channels: Mapping[str, int]  # input ("steering", "throttle", "left", "right") -> SERVOn
    pulses: PulseRange
    reverse: bool
    amap: ActuatorMap
    left: tuple[int, ...] = ()  # actuator indices driven by the left throttle (skid)
    right: tuple[int, ...] = ()

    @property
    def functions(self) -> dict[int, int]:
        """SERVOn -> the SERVOn_FUNCTION that ArduPilot must give it."""
        function = {
            "steering": STEERING_FUNCTION,
            "throttle": THROTTLE_FUNCTION,
            "left": THROTTLE_LEFT_FUNCTION,
            "right": THROTTLE_RIGHT_FUNCTION,
        }
        return {n: function[name] for name, n in self.channels.items()}

    def inputs(self, pwm: Sequence[int]) -> dict[str, float | None]:
        """Each input's value -1 .. 1 (None: no signal) from the frame's outputs."""
        return {
            name: self.pulses.value(pwm[n - 1]) if n <= len(pwm) else None  # 16 of 32 sent
            for name, n in self.channels.items()
        }

    def demands(self, pwm: Sequence[int]) -> tuple[Demand, ...]:
        """Every actuator's speed, angle and deflector for the frame's outputs."""
        inputs = self.inputs(pwm)
        throttle_of: dict[int, float | None] = {}
        if self.kind == "skid":
            for index in self.left:
                throttle_of[index] = inputs["left"]
            for index in self.right:
                throttle_of[index] = inputs["right"]
        else:
            for a in self.amap.actuators:
                throttle_of[a.index] = inputs["throttle"]
        steering = inputs.get("steering")
        demands = []
        for a in self.amap.actuators:
            throttle = throttle_of.get(a.index)
            if throttle is None or (throttle < 0.0 and not self.reverse):
                throttle = 0.0
            speed, deflector = self.amap.lever(a, 100.0 * throttle)
            angle = None
            if a.angle_kind != "none":
                order = 0.0
                if self.kind == "throttle-steering" and steering is not None:
                    order = steering * steering_limit_deg(self.amap, a.index)
                angle = self.amap.rudder_order(a, order)
            demands.append(Demand(a.index, speed, angle, deflector))
        return tuple(demands)


def steering_limit_deg(amap: ActuatorMap, index: int) -> float:
    """Full steering as a rudder order [deg]: the smaller end of the actuator's angle range."""
    lo, hi = amap.actuators[index].angle_range
    return math.degrees(min(-lo, hi))


def resolve_kind(settings: Mapping[str, Any], vessel: Vessel) -> str:
    """The mapping a device's settings choose for this vessel: ``mapping``, or with "auto" the
    vessel's entry (by its profile's name) in ``profile_mappings``, or for a profile not
    listed: throttle and steering when every actuator steers, skid steering otherwise."""
    kind = settings.get("mapping", "auto")
    if kind != "auto":
        return str(kind)
    listed = settings.get("profile_mappings") or {}
    if isinstance(listed, Mapping) and vessel.name in listed:
        return str(listed[vessel.name])
    steers = all(a.angle_kind != "none" for a in vessel.actuators)
    return "throttle-steering" if steers else "skid"


def build_mapping(settings: Mapping[str, Any], vessel: Vessel) -> ServoMapping:
    """The device's servo mapping for ``vessel``; MappingError names the setting that cannot
    work with it."""
    kind = resolve_kind(settings, vessel)
    key = "mapping" if settings.get("mapping", "auto") != "auto" else "profile_mappings"
    if kind not in MAPPINGS[1:]:
        raise MappingError(key, kind, "throttle-steering or skid")
    amap = ActuatorMap(vessel.actuators, {}, clamp=True)
    pulses = PulseRange(
        low=int(settings.get("pwm_min", 1000)),
        trim=int(settings.get("pwm_trim", 1500)),
        high=int(settings.get("pwm_max", 2000)),
        no_signal_below=int(settings.get("no_signal_below_us", 900)),
    )
    if not pulses.low < pulses.trim < pulses.high:
        expected = f"between pwm_min ({pulses.low}) and pwm_max ({pulses.high})"
        raise MappingError("pwm_trim", pulses.trim, expected)
    if pulses.no_signal_below > pulses.low:
        expected = f"at most pwm_min ({pulses.low}): a pulse in range is a signal"
        raise MappingError("no_signal_below_us", pulses.no_signal_below, expected)
    reverse = bool(settings.get("reverse", True))
    if kind == "throttle-steering":
        channels = {
            "steering": int(settings.get("steering_channel", 1)),
            "throttle": int(settings.get("throttle_channel", 3)),
        }
        if not amap.steerable:
            kinds = ", ".join(f"{a.name}: {a.kind}" for a in vessel.actuators)
            raise MappingError(key, kind, f"skid: no actuator of {vessel.name} steers ({kinds})")
        left: tuple[int, ...] = ()
        right: tuple[int, ...] = ()
    else:
        channels = {
            "left": int(settings.get("throttle_left_channel", 1)),
            "right": int(settings.get("throttle_right_channel", 3)),
        }
        left = tuple(a.index for a in amap.actuators if a.y < 0.0)
        right = tuple(a.index for a in amap.actuators if a.y > 0.0)
        if not left or not right:
            raise MappingError(
                key,
                kind,
                f"throttle-steering: skid steering needs actuators on "
                f"both sides, and {vessel.name}'s are not",
            )
    _distinct_channels(channels)
    return ServoMapping(kind, channels, pulses, reverse, amap, left, right)


def _distinct_channels(channels: Mapping[str, int]) -> None:
    seen: dict[int, str] = {}
    for name, n in channels.items():
        key = (
            "steering_channel"
            if name == "steering"
            else ("throttle_channel" if name == "throttle" else f"throttle_{name}_channel")
        )
        if not 1 <= n <= 32:
            raise MappingError(key, n, "a servo output from 1 to 32 (SERVOn)")
        if n in seen:
            raise MappingError(key, n, f"an output of its own ({seen[n]} is on SERVO{n} too)")
        seen[n] = name
