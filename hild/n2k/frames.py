"""NMEA 2000 on CAN: a message's 29-bit identifier, and its payload cut into CAN frames.

NMEA 2000 is ISO 11783 / SAE J1939 on a 250 kbit/s CAN bus with 29-bit identifiers (canboat's
documentation of the protocol, "PGN and CAN identifier"): priority in bits 26-28, the PGN's
data page and PDU format in bits 16-25, the PDU specific byte in bits 8-15 and the source
address in bits 0-7. A PGN whose PDU format (its second byte) is below 240 is addressed (PDU1):
its PDU specific byte is the destination (255: all); at 240 and above (PDU2) it is part of the
PGN and the message goes to all.

A message of at most 8 bytes is one frame. A longer one of a "fast packet" PGN goes as a fast
packet (NMEA 2000 Appendix, as canboat describes it): the first byte of every frame is the
message's sequence counter (3 bits, the same for all its frames, counting per PGN and source)
and the frame counter (5 bits, from 0); the first frame carries the total length in its second
byte and the first 6 data bytes, each following frame 7 more; the last frame is padded with
0xFF to 8 bytes. At most 223 bytes (32 frames).
"""

from __future__ import annotations

from dataclasses import dataclass

BROADCAST = 255  # the global destination address
FAST_PACKET_MAX = 6 + 31 * 7  # 223 bytes: 32 frames
PAD = 0xFF


@dataclass(frozen=True, slots=True)
class Frame:
    """One CAN frame: its 29-bit identifier and its 1 to 8 data bytes."""

    can_id: int
    data: bytes


def can_id(pgn: int, priority: int, source: int, destination: int = BROADCAST) -> int:
    """The 29-bit identifier of ``pgn`` from ``source`` (to ``destination`` for a PDU1 PGN)."""
    if not 0 <= priority <= 7:
        raise ValueError(f"priority {priority}: expected 0 to 7")
    if not 0 <= source <= 253:
        raise ValueError(f"source address {source}: expected 0 to 253")
    pdu_format = (pgn >> 8) & 0xFF
    if pdu_format < 240:  # PDU1: the PGN's low byte is 0, the destination takes its place
        pgn = (pgn & 0x3FF00) | (destination & 0xFF)
    return (priority << 26) | ((pgn & 0x3FFFF) << 8) | source


def parse_can_id(identifier: int) -> tuple[int, int, int, int]:
    """(pgn, priority, source, destination) of a 29-bit identifier (destination 255 for PDU2)."""
    priority = (identifier >> 26) & 0x7
    pgn = (identifier >> 8) & 0x3FFFF
    source = identifier & 0xFF
    destination = BROADCAST
    if ((pgn >> 8) & 0xFF) < 240:
        destination = pgn & 0xFF
        pgn &= 0x3FF00
    return pgn, priority, source, destination


def single_frame(identifier: int, payload: bytes) -> list[Frame]:
    """A message of at most 8 bytes, padded with 0xFF to 8 (as senders do)."""
    if len(payload) > 8:
        raise ValueError(f"a single frame holds 8 bytes, not {len(payload)}")
    return [Frame(identifier, payload + bytes([PAD]) * (8 - len(payload)))]


def fast_packet(identifier: int, payload: bytes, sequence: int) -> list[Frame]:
    """A message of up to 223 bytes as fast-packet frames, its sequence counter ``sequence``
    (0 to 7)."""
    n = len(payload)
    if n > FAST_PACKET_MAX:
        raise ValueError(f"a fast packet holds {FAST_PACKET_MAX} bytes, not {n}")
    head = (sequence & 0x7) << 5
    frames = [Frame(identifier, bytes([head, n]) + payload[:6].ljust(6, bytes([PAD])))]
    counter = 1
    for start in range(6, n, 7):
        chunk = payload[start : start + 7].ljust(7, bytes([PAD]))
        frames.append(Frame(identifier, bytes([head | counter]) + chunk))
        counter += 1
    return frames


class Sequences:
    """The fast-packet sequence counters of one source, one per PGN (3 bits each)."""

    def __init__(self) -> None:
        self._next: dict[int, int] = {}

    def take(self, pgn: int) -> int:
        value = self._next.get(pgn, 0)
        self._next[pgn] = (value + 1) & 0x7
        return value


def frames_of(
    pgn: int,
    payload: bytes,
    priority: int,
    source: int,
    sequences: Sequences,
    fast: bool,
    destination: int = BROADCAST,
) -> list[Frame]:
    """The frames of one message: a single frame, or a fast packet for a fast-packet PGN
    (``fast``) whatever its length (a receiver reassembles by the PGN's kind, not its size)."""
    identifier = can_id(pgn, priority, source, destination)
    if fast:
        return fast_packet(identifier, payload, sequences.take(pgn))
    return single_frame(identifier, payload)


def frame_bits(frame: Frame) -> int:
    """The most bits a frame takes on the wire: an extended CAN 2.0B frame (SOF, 29-bit
    identifier with SRR and IDE, RTR, control, data, CRC, delimiters, ACK, end of frame and
    the interframe space) with the worst-case stuff bits, one per four bits of the stuffed
    part (SOF to CRC) after the first: 67 + 8 n bits, plus (54 + 8 n - 1) // 4 stuffing."""
    n = len(frame.data)
    stuffed = 54 + 8 * n  # SOF .. CRC: the stuffed part
    return 67 + 8 * n + (stuffed - 1) // 4
