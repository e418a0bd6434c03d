"""ArduPilot's servo outputs as actuator demands: throttle and steering, or skid steering.

ArduPilot Rover drives a boat (FRAME_CLASS 2) through servo functions (Rover parameter docs,
SRV_Channel.h's function numbers): 26 GroundSteering, 70 Throttle, 73 ThrottleLeft and 74
ThrottleRight (skid steering). Each output is a pulse width between SERVOn_MIN and SERVOn_MAX
with SERVOn_TRIM as zero: the steering's -1 .. 1 (positive turns right) and the throttle's
-1 .. 1 (negative is astern). SERVOn_REVERSED 1 mirrors an output about its trim (ArduPilot
negates the value before it makes the pulse), so a reversed output is read negated: the
BlueBoat's left thruster, on SERVO3 reversed, turns the other way round to push ahead.

Where the mapping comes from:

- **the vehicle's own parameter file** (``params = "FILE"`` in the device's settings): which
  output carries which function, each output's MIN, TRIM, MAX and REVERSED, as ArduPilot
  reads the same file (``mapping_from_params``). What ArduPilot drives is then what moves the
  boat, whatever the channels: a file with the thrusters swapped or one reversed gives the boat
  that file asks for. An output of another function (lights, a camera mount, an RC
  pass-through) is not the boat's propulsion and is left alone; a function that moves a boat
  in a way hild cannot map onto the vessel's actuators (Motor1-12 of an omni frame, a sail,
  tilting motors) or a file that leaves an actuator undriven is refused, by `hild check`,
  every problem at once (``params_problems``).
- **the device's settings** otherwise (``build_mapping`` from ``mapping``, the ``*_channel``
  settings and ``pwm_*``), as the shipped parameter files (profiles/ardupilot/) expect:

  - ``throttle-steering``: the throttle drives every actuator together, the steering every one
    that steers (a waterjet's nozzle, an azimuth thruster) as a rudder order, positive turning
    the bow to starboard, up to the smaller end of each one's angle range.
  - ``skid``: the left throttle drives the actuators on the port side, the right one those on
    the starboard side; angles stay centred (or follow a steering output, when a parameter
    file gives one as well).

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
from dataclasses import dataclass, field
from typing import Any

from hild.ardupilot.paramfile import ParamFile
from hild.bus.mapping import ActuatorMap, Demand
from hild.model.vessel import Vessel

MAPPINGS = ("auto", "throttle-steering", "skid")
# ArduPilot's servo functions (SERVOn_FUNCTION) for each input of a mapping
STEERING_FUNCTION = 26
THROTTLE_FUNCTION = 70
THROTTLE_LEFT_FUNCTION = 73
THROTTLE_RIGHT_FUNCTION = 74
INPUT_OF = {
    STEERING_FUNCTION: "steering",
    THROTTLE_FUNCTION: "throttle",
    THROTTLE_LEFT_FUNCTION: "left",
    THROTTLE_RIGHT_FUNCTION: "right",
}
FUNCTION_OF = {name: function for function, name in INPUT_OF.items()}
# The names of SERVOn_FUNCTION values in messages (ArduPilot's SRV_Channel.h and its output
# functions page; the others are named by number).
FUNCTION_NAMES = {
    0: "Disabled",
    1: "RCPassThru",
    21: "Rudder",
    26: "GroundSteering",
    70: "Throttle",
    73: "ThrottleLeft",
    74: "ThrottleRight",
    75: "TiltMotorLeft",
    76: "TiltMotorRight",
    81: "BoostThrottle",
    89: "MainSail",
    **{33 + i: f"Motor{i + 1}" for i in range(8)},
    **{82 + i: f"Motor{i + 9}" for i in range(4)},
}
# Functions that move a boat in ways hild cannot map onto a vessel's actuators: the motors of
# Rover's omni frames and of a copter's mixer, tilting motors, a booster, a sail; Rudder (21)
# is Plane's (Rover steers with GroundSteering).
UNMAPPED_PROPULSION = frozenset({21, *range(33, 41), 75, 76, 81, *range(82, 86), 89})
FRAMES_OUTPUTS = 16  # outputs in ArduPilot's frame unless SERVO_32_ENABLE is 1
# ArduPilot's own defaults for an output the file leaves unset (SRV_Channel.cpp's parameters)
FIRMWARE_PULSES = (1100, 1500, 1900)
# MOT_PWM_TYPE 3 (BrushedWithRelay): a throttle's direction goes to a relay, not the pulse
BRUSHED_WITH_RELAY = 3


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

    def pulse(self, x: float) -> int:
        """The pulse width for an output of -1 .. 1 (``value``'s inverse, to the microsecond)."""
        span = self.high - self.trim if x >= 0.0 else self.trim - self.low
        return round(self.trim + x * span)


@dataclass(frozen=True)
class ServoOutput:
    """One servo output as ArduPilot configures it: SERVOn, its function, range, reversal."""

    channel: int  # n of SERVOn, 1 .. 32
    function: int  # SERVOn_FUNCTION
    pulses: PulseRange
    reversed: bool = False  # SERVOn_REVERSED: the value mirrored about trim

    def value(self, pwm: Sequence[int]) -> float | None:
        """The function's value -1 .. 1 from a frame's outputs (None: no signal, or an output
        the frame does not carry: 16 of 32 without SERVO_32_ENABLE)."""
        if self.channel > len(pwm):
            return None
        x = self.pulses.value(pwm[self.channel - 1])
        if x is None or not self.reversed:
            return x
        return -x if x else 0.0

    def pulse(self, x: float) -> int:
        """The pulse ArduPilot sends for the function's value ``x`` on this output."""
        return self.pulses.pulse(-x if self.reversed else x)


@dataclass(frozen=True)
class ServoMapping:
    """Which SERVOn output drives what, for one vessel; ``demands`` turns a frame's outputs into
    the demands of every actuator."""

    kind: str  # "throttle-steering" or "skid"
    outputs: Mapping[str, ServoOutput]  # input ("steering", "throttle", "left", "right")
    reverse: bool
    amap: ActuatorMap
    left: tuple[int, ...] = ()  # actuator indices driven by the left throttle (skid)
    right: tuple[int, ...] = ()
    source: str = ""  # the parameter file the outputs were read from ("": the settings)
    ignored: Mapping[int, int] = field(default_factory=dict)  # SERVOn -> function, not read

    @property
    def channels(self) -> dict[str, int]:
        """Input -> the SERVOn it is read from."""
        return {name: out.channel for name, out in self.outputs.items()}

    @property
    def functions(self) -> dict[int, int]:
        """SERVOn -> the SERVOn_FUNCTION that ArduPilot must give it."""
        return {out.channel: out.function for out in self.outputs.values()}

    def inputs(self, pwm: Sequence[int]) -> dict[str, float | None]:
        """Each input's value -1 .. 1 (None: no signal) from the frame's outputs."""
        return {name: out.value(pwm) for name, out in self.outputs.items()}

    def pulses_for(self, **inputs: float) -> list[int]:
        """A frame's 16 outputs for the inputs -1 .. 1 by name (the others at their trim, the
        outputs of no input at 1500): what ArduPilot would send for them."""
        pwm = [1500] * FRAMES_OUTPUTS
        for name, out in self.outputs.items():
            if out.channel <= FRAMES_OUTPUTS:
                pwm[out.channel - 1] = out.pulse(inputs.get(name, 0.0))
        return pwm

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
                if steering is not None:
                    order = steering * steering_limit_deg(self.amap, a.index)
                angle = self.amap.rudder_order(a, order)
            demands.append(Demand(a.index, speed, angle, deflector))
        return tuple(demands)

    def describe(self) -> str:
        """``SERVO1 ThrottleRight, SERVO3 ThrottleLeft (reversed)`` and where from."""
        parts = []
        for out in sorted(self.outputs.values(), key=lambda o: o.channel):
            name = FUNCTION_NAMES.get(out.function, str(out.function))
            parts.append(f"SERVO{out.channel} {name}" + (" (reversed)" if out.reversed else ""))
        where = f" from {self.source}" if self.source else ""
        return f"{self.kind}: {', '.join(parts)}{where}"


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


def build_mapping(
    settings: Mapping[str, Any], vessel: Vessel, params: ParamFile | None = None
) -> ServoMapping:
    """The device's servo mapping for ``vessel``: from the vehicle's parameter file when one is
    given, else from the settings; MappingError names what cannot work with it."""
    if params is not None:
        return mapping_from_params(params, vessel, settings)
    kind = resolve_kind(settings, vessel)
    key = "mapping" if settings.get("mapping", "auto") != "auto" else "profile_mappings"
    if kind not in MAPPINGS[1:]:
        raise MappingError(key, kind, "throttle-steering or skid")
    amap = ActuatorMap(vessel.actuators, {}, clamp=True)
    pulses = PulseRange(
        low=int(settings.get("pwm_min", 1000)),
        trim=int(settings.get("pwm_trim", 1500)),
        high=int(settings.get("pwm_max", 2000)),
        no_signal_below=_no_signal_below(settings),
    )
    if not pulses.low < pulses.trim < pulses.high:
        expected = f"between pwm_min ({pulses.low}) and pwm_max ({pulses.high})"
        raise MappingError("pwm_trim", pulses.trim, expected)
    if pulses.no_signal_below > pulses.low:
        expected = f"at most pwm_min ({pulses.low}): a pulse in range is a signal"
        raise MappingError("no_signal_below_us", pulses.no_signal_below, expected)
    if kind == "throttle-steering":
        channels = {
            "steering": int(settings.get("steering_channel", 1)),
            "throttle": int(settings.get("throttle_channel", 3)),
        }
        if not amap.steerable:
            kinds = ", ".join(f"{a.name}: {a.kind}" for a in vessel.actuators)
            raise MappingError(key, kind, f"skid: no actuator of {vessel.name} steers ({kinds})")
    else:
        channels = {
            "left": int(settings.get("throttle_left_channel", 1)),
            "right": int(settings.get("throttle_right_channel", 3)),
        }
    left, right = _sides(amap)
    if kind == "skid" and (not left or not right):
        raise MappingError(
            key,
            kind,
            f"throttle-steering: skid steering needs actuators on "
            f"both sides, and {vessel.name}'s are not",
        )
    _distinct_channels(channels)
    outputs = {name: ServoOutput(n, FUNCTION_OF[name], pulses) for name, n in channels.items()}
    reverse = bool(settings.get("reverse", True))
    if kind != "skid":
        left, right = (), ()
    return ServoMapping(kind, outputs, reverse, amap, left, right)


def _no_signal_below(settings: Mapping[str, Any]) -> int:
    return int(settings.get("no_signal_below_us", 900))


def _sides(amap: ActuatorMap) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The actuators on the port side and on the starboard side (the centreline's on neither)."""
    left = tuple(a.index for a in amap.actuators if a.y < 0.0)
    right = tuple(a.index for a in amap.actuators if a.y > 0.0)
    return left, right


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


# --- the vehicle's own parameter file ---------------------------------------------------------
def mapping_from_params(
    params: ParamFile, vessel: Vessel, settings: Mapping[str, Any]
) -> ServoMapping:
    """The mapping the vehicle's parameter file configures for ``vessel``; MappingError (on
    ``params``) for the first of ``params_problems``."""
    mapping, problems = _read_params(params, vessel, settings)
    if problems:
        raise problems[0]
    assert mapping is not None
    return mapping


def params_problems(
    params: ParamFile, vessel: Vessel, settings: Mapping[str, Any]
) -> list[MappingError]:
    """Everything in the parameter file that cannot drive ``vessel``, all at once."""
    return _read_params(params, vessel, settings)[1]


def _read_params(
    params: ParamFile, vessel: Vessel, settings: Mapping[str, Any]
) -> tuple[ServoMapping | None, list[MappingError]]:
    problems: list[str] = []
    no_signal = _no_signal_below(settings)
    wide = params.get("SERVO_32_ENABLE", 0.0) == 1.0
    outputs: dict[str, ServoOutput] = {}
    claimed: dict[str, int] = {}  # input -> its first SERVOn, whether usable or not
    ignored: dict[int, int] = {}
    for n in range(1, 33):
        name = f"SERVO{n}_FUNCTION"
        function = int(params.values.get(name, 0))
        if function <= 0:  # disabled (0), or a GPIO (-1)
            continue
        if function in UNMAPPED_PROPULSION:
            problems.append(
                f"functions hild maps onto {vessel.name}'s actuators (GroundSteering 26, "
                "Throttle 70, ThrottleLeft 73, ThrottleRight 74), not "
                f"{params.where(name)}: {FUNCTION_NAMES[function]}"
            )
            continue
        role = INPUT_OF.get(function)
        if role is None or role in claimed:  # not propulsion, or the function's second output
            ignored[n] = function
            continue
        claimed[role] = n
        if n > FRAMES_OUTPUTS and not wide:
            problems.append(
                f"SERVO_32_ENABLE 1 for {params.where(name)}: without it ArduPilot's frames "
                "carry outputs 1-16 only"
            )
            continue
        pulses, problem = _pulses(params, n, no_signal)
        if problem:
            problems.append(problem)
            continue
        reversed_ = params.get(f"SERVO{n}_REVERSED", 0.0) == 1.0
        outputs[role] = ServoOutput(n, function, pulses, reversed_)
    if params.get("MOT_PWM_TYPE") == BRUSHED_WITH_RELAY:
        problems.append(
            f"a MOT_PWM_TYPE other than 3, not {params.where('MOT_PWM_TYPE')}: BrushedWithRelay "
            "sends a throttle's direction to a relay, which ArduPilot's frames do not carry"
        )
    amap = ActuatorMap(vessel.actuators, {}, clamp=True)
    kind, left, right, undriven = _drives(claimed, amap, vessel)
    problems += undriven
    errors = [MappingError("params", params.path, p) for p in problems]
    if errors:
        return None, errors
    reverse = bool(settings.get("reverse", True))
    mapping = ServoMapping(kind, outputs, reverse, amap, left, right, params.path, ignored)
    return mapping, []


def _pulses(params: ParamFile, n: int, no_signal: int) -> tuple[PulseRange, str]:
    """SERVOn's range (ArduPilot's own defaults for what the file leaves unset), or why not."""
    low, trim, high = (
        int(params.values.get(f"SERVO{n}_{key}", default))
        for key, default in zip(("MIN", "TRIM", "MAX"), FIRMWARE_PULSES, strict=True)
    )
    pulses = PulseRange(low, trim, high, min(no_signal, low))
    if not low < trim < high:
        return pulses, (
            f"SERVO{n}_MIN < SERVO{n}_TRIM < SERVO{n}_MAX, not {low}, {trim}, {high} "
            f"({params.where(f'SERVO{n}_TRIM')})"
        )
    return pulses, ""


def _drives(
    outputs: Mapping[str, int], amap: ActuatorMap, vessel: Vessel
) -> tuple[str, tuple[int, ...], tuple[int, ...], list[str]]:
    """What the file's functions (input -> SERVOn) drive on this vessel: the kind, the sides,
    and what they leave undriven (each a problem)."""
    problems = []
    left, right = _sides(amap)
    skid = "left" in outputs or "right" in outputs
    names = ", ".join(a.name for a in vessel.actuators)
    if skid and "throttle" in outputs:
        problems.append(
            "either Throttle (70) or ThrottleLeft/Right (73/74) to drive the actuators, not "
            f"both: SERVO{outputs['throttle']} has Throttle beside skid steering"
        )
    if skid:
        for side, missing, actuators in (("left", "right", right), ("right", "left", left)):
            if side in outputs and missing not in outputs:
                undriven = ", ".join(vessel.actuators[i].name for i in actuators) or "nothing"
                problems.append(
                    f"Throttle{missing.title()} ({FUNCTION_OF[missing]}) beside "
                    f"Throttle{side.title()} ({FUNCTION_OF[side]}): without it {undriven} "
                    "is left undriven"
                )
        if not left or not right:
            problems.append(
                f"actuators on both sides for skid steering, and {vessel.name}'s ({names}) "
                "are not: ThrottleLeft/Right drive the port/starboard ones"
            )
        centre = [a.name for a in amap.actuators if a.y == 0.0]
        if centre:
            problems.append(
                "no actuator on the centreline under skid steering (ThrottleLeft/Right drive "
                f"the port/starboard ones): {', '.join(centre)} would be left undriven"
            )
    elif "throttle" not in outputs:
        problems.append(
            "an output with Throttle (70), or ThrottleLeft and ThrottleRight (73, 74): "
            f"without one {names} are left undriven"
        )
    if "throttle" in outputs and not skid and "steering" not in outputs:
        if amap.steerable:
            problems.append(
                "GroundSteering (26) beside Throttle (70): without it nothing steers "
                f"{vessel.name}'s {names}"
            )
        else:
            problems.append(
                f"ThrottleLeft and ThrottleRight (73, 74): {vessel.name}'s {names} do not "
                "steer, so Throttle (70) alone cannot turn the boat"
            )
    if "steering" in outputs and not amap.steerable:
        problems.append(
            f"no GroundSteering (26), not on SERVO{outputs['steering']}: no actuator "
            f"of {vessel.name} steers ({names}); skid steering (ThrottleLeft 73, "
            "ThrottleRight 74) turns this boat"
        )
    kind = "skid" if skid else "throttle-steering"
    return kind, left if skid else (), right if skid else (), problems
