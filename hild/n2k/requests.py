"""A node's answers to ISO requests (PGN 59904) heard on its ports.

canboat.json (6.2.0) on the two PGNs: 59904 "ISO Request": "As defined by ISO, this message has
a data length of 3 bytes with no padding added to complete the single frame. The appropriate
response to this message is based on the PGN being requested, and whether the receiver
supports the requested PGN." 59392 "ISO Acknowledgement": "This message is provided by ISO
11783 for a handshake mechanism between transmitting and receiving devices. This message is
the possible response to acknowledge the reception of a 'normal broadcast' message or the
response to a specific command to indicate compliance or failure."

The rules a node here keeps (ISO 11783-3 / SAE J1939-21's request, as canboatjs' and the
NMEA2000 library's nodes answer it):

- a request addressed to the node's address or to all (255) is for it; any other is not (and
  any other PGN heard is another node's traffic);
- 60928 (address claim): the node claims its address again, to all (ISO 11783-5 / J1939-81:
  an address claim always goes to the global address);
- 126996 (product information): the node sends it (a PDU2 PGN: to all);
- a PGN the node sends (one of its ``sentences``): it goes out at the node's next epoch
  whatever its schedule (a broadcast PGN);
- any other PGN: when the request was addressed to the node, a NAK (59392, control 1, the
  requested PGN) to the requester (NMEA 2000 since 1.200: the acknowledgement is destination
  specific); a request to all is not NAKed (J1939-21: no NACK to a global request), else
  every node on the bus would answer every request it cannot.

Requests arrive between the node's epochs, on the event loop (``hear``: parse and queue, never
an answer there), and are answered at its next epoch, in the tick, with its lines: within one
epoch (0.1 s at 10 Hz; ISO 11783-3's response time is 0.2 s, a requester waits 1.25 s). Lines
are YDRAW frames (hild/n2k/lines.py ``parse_ydraw``: a computer's ``IIIIIIII B0 ... B7`` or a
gateway's with time and direction). Anything else is counted as malformed and skipped.
"""

from __future__ import annotations

import collections
import struct
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from hild.n2k import pgns
from hild.n2k.frames import BROADCAST, parse_can_id
from hild.n2k.lines import parse_ydraw
from hild.transport.judging import Verdict

# canboat.json: 59392 "isoAcknowledgement", Single, priority 6, 8 bytes
ISO_ACKNOWLEDGEMENT = pgns.Pgn(59392, 6, False, "isoAcknowledgement")
ACK, NAK, ACCESS_DENIED, ADDRESS_BUSY = 0, 1, 2, 3  # canboat's ISO_CONTROL lookup
NULL_ADDRESS = 254  # a node that has not claimed an address sends from 254
PENDING_MAX = 64  # requests waiting for the node's next epoch (more: the oldest dropped)


def iso_acknowledgement(control: int, pgn: int, group_function: int = 0xFF) -> bytes:
    """59392: Control uint8 (ISO_CONTROL: 0 ACK, 1 NAK, 2 access denied, 3 address busy); Group
    Function uint8 (255: none); 24 reserved; PGN 24 bits, the one acknowledged."""
    return struct.pack("<BB", control, group_function) + b"\xff\xff\xff" + pgns.pgn_field(pgn)


@dataclass(frozen=True, slots=True)
class Request:
    """One ISO request for the node: the PGN asked for, from whom, and to whom (the node's
    address, or 255)."""

    pgn: int
    requester: int
    destination: int

    @property
    def addressed(self) -> bool:
        return self.destination != BROADCAST


@dataclass
class RequestStats:
    heard: int = 0  # requests for the node (addressed to it or to all)
    answered: int = 0  # requests answered (a claim, product information, a PGN, a NAK)
    nak: int = 0  # of those, NAKs
    unanswered: int = 0  # requests for an unsupported PGN to all (no NAK), or during a dropout
    ignored: int = 0  # frames that are no request for the node (another node's traffic)
    malformed: int = 0  # lines that are no frame, or a request too short to name a PGN
    dropped: int = 0  # requests lost because PENDING_MAX were waiting


class Requests:
    """The requests one node heard and has yet to answer: put by ``hear`` (the event loop),
    taken by ``take`` (the tick). A deque is safe between the two threads."""

    def __init__(self, address: Callable[[], int]):
        self.address = address  # the node's source address, now
        self.pending: collections.deque[Request] = collections.deque(maxlen=PENDING_MAX)
        self.stats = RequestStats()

    def hear(self, line: bytes, overlong: bool = False) -> Verdict:
        """One received line: a request for the node is queued (APPLIED); a frame that is not
        one is another node's (IGNORED); anything else is MALFORMED. Never raises."""
        frame = None if overlong else parse_ydraw(line)
        if frame is None:
            self.stats.malformed += 1
            return Verdict.MALFORMED
        pgn, _, source, destination = parse_can_id(frame.can_id)
        if pgn != pgns.ISO_REQUEST.number or destination not in (self.address(), BROADCAST):
            self.stats.ignored += 1
            return Verdict.IGNORED
        requested = pgns.requested_pgn(frame.data)
        if requested is None:
            self.stats.malformed += 1
            return Verdict.MALFORMED
        if len(self.pending) == self.pending.maxlen:
            self.stats.dropped += 1
        self.pending.append(Request(requested, source, destination))
        self.stats.heard += 1
        return Verdict.APPLIED

    def take(self) -> list[Request]:
        """Every request waiting, oldest first (none put meanwhile is lost)."""
        out = []
        while self.pending:
            out.append(self.pending.popleft())
        return out


Message = Callable[[pgns.Pgn, bytes, datetime, int], list[bytes]]


def answer(
    requests: list[Request],
    sends: tuple[str, ...],
    claim: bytes,
    product_information: bytes,
    message: Message,
    utc: datetime,
    stats: RequestStats,
) -> tuple[list[bytes], set[str]]:
    """The lines that answer ``requests`` (the node's address claim ``claim``, its
    ``product_information``, NAKs through ``message(pgn, payload, utc, destination)``), and
    the PGNs among those it ``sends`` that go out at this epoch for them. A PGN asked for
    twice before the epoch is answered once."""
    lines: list[bytes] = []
    asked: set[str] = set()
    done: set[tuple[int, int]] = set()  # (pgn, NAK's destination or 255)
    for r in requests:
        name = str(r.pgn)
        if r.pgn == pgns.ADDRESS_CLAIM.number:
            if (r.pgn, BROADCAST) not in done:
                lines += message(pgns.ADDRESS_CLAIM, claim, utc, BROADCAST)
        elif r.pgn == pgns.PRODUCT_INFORMATION.number:
            if (r.pgn, BROADCAST) not in done:
                lines += message(pgns.PRODUCT_INFORMATION, product_information, utc, BROADCAST)
        elif name in sends:
            asked.add(name)
        elif r.addressed:
            # to the requester (a requester without an address: to all)
            to = BROADCAST if r.requester >= NULL_ADDRESS else r.requester
            if (r.pgn, to) not in done:
                payload = iso_acknowledgement(NAK, r.pgn)
                lines += message(ISO_ACKNOWLEDGEMENT, payload, utc, to)
                stats.nak += 1
            done.add((r.pgn, to))
        else:
            stats.unanswered += 1
            continue
        done.add((r.pgn, BROADCAST))
        stats.answered += 1
    return lines, asked
