"""ArduPilot's SITL JSON link on the wire: the servo frame in, the state answer out.

The frame (ArduPilot `libraries/SITL/examples/JSON/readme.md`; little-endian, as SITL runs on
little-endian hosts): ``uint16 magic, uint16 frame_rate, uint32 frame_count, uint16 pwm[N]``
with magic 18458 and 16 channels, or magic 29569 and 32 channels (SERVO_32_ENABLE = 1).
frame_rate is the step ArduPilot asks for (SIM_RATE_HZ); frame_count grows by one per frame and
starts again when SITL restarts; a frame sent again without an answer keeps its count.

The answer is one JSON object between two newlines. ArduPilot's parser (SIM_JSON.cpp
``parse_sensors``) is no JSON parser: it finds each section and key by text search and reads
the characters right after ``"key":`` (a number with ``atof``, a vector with ``sscanf("[%f,
%f, %f]")``). So the answer has no space after a colon, and ``velocity`` comes before
``velocity_wind`` (a search for ``velocity`` finds the first). Measured against a real Rover
SITL (protocols.md): without the leading newline the first answer is lost, without the
trailing one each answer is used a frame late.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

MAGIC_16 = 18458  # 16 servo channels
MAGIC_32 = 29569  # 32 servo channels (SERVO_32_ENABLE = 1)
_HEADER = struct.Struct("<HHI")
_PWM = {MAGIC_16: struct.Struct("<16H"), MAGIC_32: struct.Struct("<32H")}
FRAME_SIZES = {magic: _HEADER.size + pwm.size for magic, pwm in _PWM.items()}  # 40, 72 bytes
MAX_FRAME_BYTES = max(FRAME_SIZES.values())


class FrameError(ValueError):
    """A datagram that is no servo frame: what it was, and what was expected."""


@dataclass(frozen=True, slots=True)
class ServoFrame:
    """One frame from ArduPilot: the step it asks for, its count and the servo outputs [us]."""

    frame_rate: int  # Hz: the physics step ArduPilot asks for is 1 / frame_rate
    frame_count: int
    pwm: tuple[int, ...]  # SERVO1 .. SERVO16 (or 32), microseconds; 0 before outputs start


def parse_frame(data: bytes) -> ServoFrame:
    """A datagram as a servo frame; FrameError for anything else (counted and skipped)."""
    if len(data) < _HEADER.size:
        raise FrameError(f"{len(data)} bytes, shorter than a frame's 8-byte header")
    magic, frame_rate, frame_count = _HEADER.unpack_from(data)
    pwm = _PWM.get(magic)
    if pwm is None:
        raise FrameError(f"magic {magic}, expected {MAGIC_16} (16 channels) or {MAGIC_32} (32)")
    if len(data) != FRAME_SIZES[magic]:
        raise FrameError(f"{len(data)} bytes with magic {magic}, expected {FRAME_SIZES[magic]}")
    return ServoFrame(frame_rate, frame_count, pwm.unpack_from(data, _HEADER.size))


def encode_frame(frame: ServoFrame) -> bytes:
    """The frame as ArduPilot sends it (for test clients and tools)."""
    magic = MAGIC_16 if len(frame.pwm) == 16 else MAGIC_32
    return _HEADER.pack(magic, frame.frame_rate, frame.frame_count) + _PWM[magic].pack(*frame.pwm)


@dataclass(frozen=True, slots=True)
class PhysicsState:
    """What the answer to one frame says, in ArduPilot's units and frames."""

    timestamp: float  # s, the physics time of this session (absolute, not the step)
    gyro: tuple[float, float, float]  # body rates p, q, r [rad/s]
    accel_body: tuple[float, float, float]  # specific force in body axes [m/s^2]
    position: tuple[float, float, float]  # NED from the origin [m]
    velocity: tuple[float, float, float]  # NED [m/s]
    attitude: tuple[float, float, float]  # roll, pitch, yaw [rad]
    velocity_wind: tuple[float, float, float] | None = None  # the air's velocity, NED [m/s]
    windvane: tuple[float, float] | None = None  # apparent wind: direction [rad], speed [m/s]


def _numbers(values: Sequence[float]) -> str:
    """``a,b,c`` as JSON writes floats (Python's shortest round-trip repr); finite only."""
    for v in values:
        if not math.isfinite(v):
            raise ValueError(f"a state value that is not finite: {list(values)}")
    return ",".join([repr(float(v)) for v in values])


def encode_state(state: PhysicsState) -> bytes:
    """The answer's bytes: ``\\n{json}\\n`` with ArduPilot's keys, compact, velocity first.

    Formatted here rather than by the json module (a third of the answer's time): the keys are
    fixed and every value is a float, written as json.dumps writes it (``float.__repr__``).
    """
    parts = [
        '{"timestamp":',
        _numbers((state.timestamp,)),
        ',"imu":{"gyro":[',
        _numbers(state.gyro),
        '],"accel_body":[',
        _numbers(state.accel_body),
        ']},"position":[',
        _numbers(state.position),
        '],"attitude":[',
        _numbers(state.attitude),
        '],"velocity":[',
        _numbers(state.velocity),
        "]",
    ]
    if state.velocity_wind is not None:  # after "velocity": its name begins with that key
        parts += [',"velocity_wind":[', _numbers(state.velocity_wind), "]"]
    if state.windvane is not None:
        direction, speed = state.windvane
        parts += [
            ',"windvane":{"direction":',
            _numbers((direction,)),
            ',"speed":',
            _numbers((speed,)),
            "}",
        ]
    parts.append("}")
    return b"\n" + "".join(parts).encode("ascii") + b"\n"
