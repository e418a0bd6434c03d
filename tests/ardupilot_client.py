"""ArduPilot's side of the SITL JSON link, for tests: what SITL sends and how it reads answers.

Written from ArduPilot's description of the protocol (libraries/SITL/examples/JSON/readme.md)
and the behaviour of its reader (SIM_JSON.cpp), as the reference's protocols.md sums it up:

- frames are ``uint16 magic 18458, uint16 frame_rate, uint32 frame_count, uint16 pwm[16]``,
  little-endian, sent from one UDP socket to the physics' port;
- received bytes are kept in a buffer in which every newline counts as a terminator; an answer
  is read when the buffer holds two terminators, and what is read is the text between the last
  two (so an answer without its leading newline is lost, one without its trailing newline is
  read a frame late);
- each key is found by text search: a section's key after the section's name, a top-level key
  anywhere after the first character; the value starts right after ``key":``; a number is
  read as C's atof reads it, a vector as sscanf("[%f, %f, %f]") does (a '[' right there, then
  numbers separated by a comma and optional spaces);
- timestamp, imu.gyro, imu.accel_body, position and velocity are required, and attitude or
  quaternion.
"""

from __future__ import annotations

import re
import socket
import struct
from dataclasses import dataclass

MAGIC = 18458
_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_ATOF = re.compile(r"\s*(" + _NUMBER + ")")
_VECTOR3 = re.compile(r"\[\s*(" + _NUMBER + r"),\s*(" + _NUMBER + r"),\s*(" + _NUMBER + ")")
REQUIRED = (
    ("", "timestamp", "number"),
    ("imu", "gyro", "vector"),
    ("imu", "accel_body", "vector"),
    ("", "position", "vector"),
    ("", "velocity", "vector"),
)
OPTIONAL = (
    ("", "attitude", "vector"),
    ("", "velocity_wind", "vector"),
    ("windvane", "direction", "number"),
    ("windvane", "speed", "number"),
)


class AnswerError(AssertionError):
    """An answer ArduPilot could not use."""


def frame(count: int, pwm: list[int] | tuple[int, ...], rate: int = 1200) -> bytes:
    channels = list(pwm) + [0] * (16 - len(pwm))
    return struct.pack("<HHI16H", MAGIC, rate, count, *channels)


def read_value(text: str, section: str, key: str, kind: str) -> float | tuple | None:
    """One value as SIM_JSON reads it: None when its section or key is not found."""
    start = text.find(section) if section else 0
    if start < 0:
        return None
    start += len(section) + 1
    at = text.find(key, start)
    if at < 0:
        return None
    at += len(key) + 2
    if kind == "number":
        m = _ATOF.match(text, at)
        return float(m.group(1)) if m else 0.0
    m = _VECTOR3.match(text, at)
    if m is None:
        raise AnswerError(f"{key}: no vector at {text[at : at + 30]!r}")
    return tuple(float(v) for v in m.groups())


def parse_answer(text: str) -> dict:
    values = {}
    for section, key, kind in REQUIRED:
        value = read_value(text, section, key, kind)
        if value is None:
            raise AnswerError(f"required {section}.{key} missing in {text!r}")
        values[key] = value
    for section, key, kind in OPTIONAL:
        value = read_value(text, section, key, kind)
        if value is not None:
            values[f"{section}.{key}" if section else key] = value
    if "attitude" not in values and "quaternion" not in text:
        raise AnswerError("neither attitude nor quaternion")
    return values


@dataclass
class Sitl:
    """One SITL instance's socket towards the physics on ``port``."""

    port: int
    timeout: float = 5.0

    def __post_init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(self.timeout)
        self.buffer = ""
        self.raw: list[bytes] = []  # every datagram received, as it came

    def send(self, count: int, pwm=(), rate: int = 1200) -> None:
        self.sock.sendto(frame(count, pwm, rate), ("127.0.0.1", self.port))

    def receive(self) -> dict:
        """Read datagrams until an answer is complete; it, parsed as ArduPilot parses it."""
        while True:
            data = self.sock.recv(65000)
            self.raw.append(data)
            self.buffer += data.decode("ascii")
            if self.buffer.count("\n") >= 2:
                end = self.buffer.rfind("\n")
                begin = self.buffer.rfind("\n", 0, end)
                text, self.buffer = self.buffer[begin + 1 : end], self.buffer[end:]
                return parse_answer(text)

    def step(self, count: int, pwm=(), rate: int = 1200) -> dict:
        self.send(count, pwm, rate)
        return self.receive()

    def close(self) -> None:
        self.sock.close()
