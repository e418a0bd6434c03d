"""NMEA 2000 as text lines, the way gateways put the bus on UDP, TCP and serial lines.

- **YDRAW**, Yacht Devices' RAW format (YDWG-02 / YDEN-02 / YDNU-02 manuals, "RAW format"):
  one CAN frame a line, ``hh:mm:ss.ddd D IIIIIIII B0 B1 ... B7`` CR LF: the time of day (the
  gateway's clock, UTC here), ``R`` for a frame the gateway received from the bus (what it
  sends to the computer) or ``T`` for one it sent, the 29-bit identifier in 8 hex digits, and
  the data bytes in hex. A computer sends frames to the bus as ``IIIIIIII B0 ... B7`` lines.
  Fast packets go frame by frame, as on the bus.
- **Actisense N2K ASCII** (the W2K-1's and NGX's text output, as canboat's and canboatjs'
  parsers read it): one whole message a line, ``Ahhmmss.ddd SSDDP PPPPP DATA`` CR LF: source
  and destination address in 2 hex digits each and the priority in one, the PGN in 5 hex
  digits, and the message's bytes in hex without spaces (a fast packet reassembled).
"""

from __future__ import annotations

from datetime import datetime

from hild.n2k.frames import Frame
from hild.transport.ydraw import frame_line, parse_frame


def ydraw(frames: list[Frame], utc: datetime, direction: str = "R") -> list[bytes]:
    """One YDRAW line per frame, as the gateway sends the bus's frames to the computer."""
    return [frame_line(f.can_id, f.data, utc, direction) for f in frames]


def actisense(
    pgn: int, priority: int, source: int, destination: int, payload: bytes, utc: datetime
) -> bytes:
    """One Actisense N2K ASCII line: the whole message."""
    when = f"{utc.hour:02d}{utc.minute:02d}{utc.second:02d}.{utc.microsecond // 1000:03d}"
    return (
        f"A{when} {source:02X}{destination:02X}{priority:X} {pgn:05X} {payload.hex().upper()}\r\n"
    ).encode()


def parse_ydraw(line: bytes) -> Frame | None:
    """A frame from a YDRAW line as a computer sends it (``IIIIIIII B0 ...``) or as a gateway
    does (with the time and direction first); None for a line that is not one."""
    parsed = parse_frame(line)
    return None if parsed is None else Frame(*parsed)
