"""YDRAW, Yacht Devices' RAW format (YDWG-02 / YDEN-02 / YDNU-02 manuals, "RAW format"): one
CAN frame a line, ``hh:mm:ss.ddd D IIIIIIII B0 B1 ... B7`` CR LF: the time of day (the
gateway's clock), ``R`` for a frame the gateway received from the bus (what it sends to the
computer) or ``T`` for one it sent, the 29-bit identifier in 8 hex digits, the data bytes in
hex. A computer sends frames to the bus as ``IIIIIIII B0 ... B7`` lines.

One home for the format: the NMEA 2000 nodes write it (hild/n2k/lines.py), the CAN ports read
and write it (hild/transport/can.py).
"""

from __future__ import annotations

from datetime import datetime

MAX_ID = 1 << 29  # a 29-bit identifier


def clock(utc: datetime) -> str:
    """``hh:mm:ss.ddd``: the time of day to the millisecond."""
    return f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}.{utc.microsecond // 1000:03d}"


def frame_line(identifier: int, data: bytes, utc: datetime, direction: str = "R") -> bytes:
    """The YDRAW line of one frame, with its CR LF."""
    hexes = " ".join(f"{b:02X}" for b in data)
    return f"{clock(utc)} {direction} {identifier:08X} {hexes}".rstrip().encode() + b"\r\n"


def parse_frame(line: bytes) -> tuple[int, bytes] | None:
    """(identifier, data) of a YDRAW line as a gateway sends it (with the time and direction)
    or as a computer does; None for a line that is not one."""
    parts = line.split()
    if len(parts) >= 3 and b":" in parts[0] and parts[1] in (b"R", b"T"):
        parts = parts[2:]
    if not parts or len(parts[0]) != 8 or len(parts) > 9 or any(len(p) != 2 for p in parts[1:]):
        return None
    try:
        identifier = int(parts[0], 16)
        data = bytes.fromhex(b"".join(parts[1:]).decode("ascii"))
    except ValueError:  # (UnicodeDecodeError is one)
        return None
    if identifier >= MAX_ID:
        return None
    return identifier, data
