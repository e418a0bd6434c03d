"""Fair shares of a datagram port's input among its senders, the controller's first.

The real controller's ten commands a second have to get through whatever else arrives: its
own other sentences (a multiplexer forwarding a whole bus, status sentences sent with the
commands), garbage, or another local process flooding the port from one or a thousand
source ports. Every datagram read from the socket is put in its sender's own inbox, and the
port works through the inboxes in turn, one datagram from each sender with some waiting
(round robin), under the input budget, in two classes:

- **Delivering senders**, whose lines were applied (a command or reference taken) within
  DELIVERING_S, are served first, kept whatever else arrives (no newcomer takes their
  place), never throttled, and have a larger inbox (DELIVERING_INBOX): a controller is never
  starved by a flood nor by its own other traffic. At most MAX_DELIVERING are kept as such.
- **Other senders** share what is left: at most MAX_SENDERS are remembered, and a newcomer
  takes the place of the least recently heard of them, whatever it has waiting (discarded,
  counted), so a flood from many source ports cannot fill the table against anyone. A
  newcomer to a full table starts throttled: a flood from more source ports than the table
  holds would otherwise come back as new senders, each decoding its first malformed lines,
  for ever; its commands pass the screen, so a new controller is heard at once.

A datagram beyond its sender's inbox is discarded on arrival, counted (``throttled``), at the
cost of a dictionary lookup. Only malformed lines count against a sender (Verdict.MALFORMED:
bytes that are no sentence, a bad checksum): a well-formed sentence no device takes is
another talker's on a shared bus, ignored. THROTTLE_AFTER malformed lines in a row make a
sender throttled: its datagrams are discarded unread and counted, but for one every PROBE_S
that passes the port's screen (a cheap test that a line is well-formed and a sentence the
port's devices take, ~3 us, against ~30 us to decode and refuse it), so the probe finds the
sender's next useful line (past the other sentences of a burst), not only its next
datagram, and a line applied makes it a delivering sender again. A throttled flood of 50,000
datagrams a second costs ~2 us each to read and discard instead of the decoding the input
budget could never pay for.
"""

from __future__ import annotations

import collections
from collections.abc import Callable

from hild.transport.base import PortStats
from hild.transport.judging import DELIVERING_S, PROBE_S, THROTTLE_AFTER, Screen, Verdict

SENDER_INBOX = 32  # datagrams an unknown sender may have waiting (a multiplexer's burst fits)
DELIVERING_INBOX = 64  # datagrams a delivering sender may have waiting
INBOX_BYTES = 1 << 20  # bytes the other senders may have waiting together
DELIVERING_BYTES = 256 << 10  # bytes one delivering sender may have waiting
MAX_SENDERS = 64  # other senders remembered; a newcomer takes the least recently heard's place
MAX_DELIVERING = 16  # delivering senders kept beyond MAX_SENDERS (controllers on one port)
# (THROTTLE_AFTER, DELIVERING_S and PROBE_S: judging.py; a throttled sender has one datagram
# that passes the screen read every PROBE_S)
PROBE_TRIES = 32  # datagrams one probe screens at most (a multiplexer's burst)
# and those that come within this of its first: a burst's spread, a busy sender's too
PROBE_WINDOW_S = 0.02
# Throttled senders whose place in the table was taken are remembered here, with the time of
# their next probe, so that their datagrams are discarded at the cost of a lookup until it is
# due (a flood from more source ports than the table holds); the oldest go first.
MAX_REMEMBERED = 4096


class Sender:
    """One source address: whether allow= takes it, its inbox, how its lines fared."""

    __slots__ = (
        "address",
        "allowed",
        "bytes",
        "delivered_t",
        "inbox",
        "malformed",
        "next_probe",
        "probe_t",
        "tries",
    )

    def __init__(self, address: tuple, allowed: bool):
        self.address = address  # the socket address the datagrams came from
        self.allowed = allowed
        self.inbox: collections.deque[tuple[bytes, float]] = collections.deque()
        self.bytes = 0  # waiting in the inbox
        self.malformed = 0  # malformed lines in a row
        self.next_probe = 0.0  # throttled: time.monotonic() its next datagram may be read
        self.tries = 0  # datagrams the current probe has screened
        self.probe_t = 0.0  # when the current probe screened its first
        self.delivered_t = -float("inf")  # time.monotonic() its last line was applied

    @property
    def peer(self) -> tuple[str, int]:
        return str(self.address[0]), int(self.address[1])

    @property
    def throttled(self) -> bool:
        return self.malformed >= THROTTLE_AFTER

    def delivering(self, now: float) -> bool:
        """True while a line of the sender's was applied within DELIVERING_S."""
        return now - self.delivered_t < DELIVERING_S


class SenderTable:
    """The senders of one port, their inboxes, and the order in which they are served."""

    def __init__(self, allows: Callable[[str], bool], stats: PortStats):
        self._allows = allows
        self._stats = stats
        # Set by the port: the cheap test a throttled sender's lines must pass (Port.screen).
        self.screen: Screen | None = None
        self._senders: dict[tuple, Sender] = {}  # the other senders, least recently heard first
        self._delivering: dict[tuple, Sender] = {}  # delivering senders, kept apart
        # senders with datagrams waiting, in turn order (ordered sets): delivering ones first
        self._first: dict[Sender, None] = {}
        self._turns: dict[Sender, None] = {}
        self._bytes = 0  # waiting in the other senders' inboxes
        self._remembered: dict[tuple, float] = {}  # throttled, out of the table: next probe

    def __len__(self) -> int:
        return len(self._senders) + len(self._delivering)

    @property
    def pending(self) -> bool:
        """True while some sender has a datagram waiting."""
        return bool(self._first) or bool(self._turns)

    def put(self, data: bytes, address: tuple, t_rx: float) -> Sender | None:
        """File one received datagram under its sender; the sender, or None when discarded.

        A sender outside allow= is returned with nothing filed (the caller refuses it); a
        datagram beyond its sender's inbox, or a throttled sender's that is not its probe, is
        discarded and counted in ``throttled``.
        """
        sender = self._delivering.get(address)
        if sender is not None and not sender.delivering(t_rx):
            del self._delivering[address]  # no longer delivering: one of the others again
            self._remember(sender)
        if sender is None or address not in self._delivering:
            due = self._remembered.get(address)
            if due is not None and t_rx < due and address not in self._senders:
                self._stats.throttled += 1  # throttled, out of the table, its probe not due
                return None
            sender = self._heard(address)
        if not sender.allowed:
            return sender
        delivering = address in self._delivering
        if not delivering and sender.throttled and not self._probe(sender, data, t_rx):
            self._stats.throttled += 1
            return None
        if not self._room(sender, len(data), delivering):
            self._stats.throttled += 1
            return None
        sender.inbox.append((data, t_rx))
        sender.bytes += len(data)
        if not delivering:
            self._bytes += len(data)
        if sender not in self._first:
            (self._first if delivering else self._turns).setdefault(sender)
        return sender

    def take(self) -> tuple[Sender, bytes, float] | None:
        """The next datagram in turn, (sender, data, t_rx): delivering senders' first, one
        from each waiting sender."""
        turns = self._first or self._turns
        if not turns:
            return None
        sender = next(iter(turns))
        del turns[sender]
        data, t_rx = sender.inbox.popleft()
        sender.bytes -= len(data)
        if sender.address not in self._delivering:
            self._bytes -= len(data)
        if sender.inbox:
            turns[sender] = None  # to the back of the line
        return sender, data, t_rx

    def judge(self, sender: Sender, verdict: Verdict, now: float) -> bool:
        """Note how one of sender's lines fared; True when that made the sender throttled."""
        if verdict == Verdict.APPLIED:
            sender.malformed = 0
            sender.delivered_t = now
            self._promote(sender)
            return False
        if verdict != Verdict.MALFORMED or sender.address in self._delivering:
            return False
        sender.malformed += 1
        if sender.malformed != THROTTLE_AFTER:
            return False
        sender.next_probe, sender.tries = now, 0  # a probe at once: the rest of a burst
        self._screen_inbox(sender)
        return True

    def clear(self) -> None:
        self._remembered.clear()
        self._senders.clear()
        self._delivering.clear()
        self._first.clear()
        self._turns.clear()
        self._bytes = 0

    # -- the pieces --

    def _heard(self, address: tuple) -> Sender:
        """The other sender at address, now the most recently heard; a newcomer takes the
        place of the least recently heard when the table is full."""
        sender = self._senders.pop(address, None)
        if sender is None:
            sender = Sender(address, self._allows(str(address[0])))
            due = self._remembered.pop(address, None)
            if due is not None:  # a throttled sender back in the table: still throttled
                sender.malformed, sender.next_probe = THROTTLE_AFTER, due
            if len(self._senders) >= MAX_SENDERS:
                self._forget(next(iter(self._senders)))
                sender.malformed = THROTTLE_AFTER  # screened from its first datagram
        self._senders[address] = sender
        return sender

    def _remember(self, sender: Sender) -> None:
        """Put a sender that stopped delivering back among the others."""
        if len(self._senders) >= MAX_SENDERS:
            self._forget(next(iter(self._senders)))
        self._senders[sender.address] = sender
        self._bytes += sender.bytes
        if sender in self._first:
            del self._first[sender]
            self._turns[sender] = None

    def _forget(self, address: tuple) -> None:
        sender = self._senders.pop(address)
        if sender.throttled:
            if len(self._remembered) >= MAX_REMEMBERED:
                del self._remembered[next(iter(self._remembered))]
            self._remembered[address] = sender.next_probe
        self._turns.pop(sender, None)
        self._stats.throttled += len(sender.inbox)
        self._bytes -= sender.bytes
        sender.inbox.clear()
        sender.bytes = 0

    def _promote(self, sender: Sender) -> None:
        """A sender whose line was applied becomes a delivering one, if there is room."""
        address = sender.address
        if address in self._delivering or self._senders.get(address) is not sender:
            return
        if len(self._delivering) >= MAX_DELIVERING:
            return
        del self._senders[address]
        self._delivering[address] = sender
        self._bytes -= sender.bytes
        if sender in self._turns:
            del self._turns[sender]
            self._first[sender] = None

    def _room(self, sender: Sender, size: int, delivering: bool) -> bool:
        """Whether a datagram of size bytes fits in sender's inbox (its first always does)."""
        if not sender.inbox:
            return True
        if delivering:
            return len(sender.inbox) < DELIVERING_INBOX and sender.bytes + size <= (
                DELIVERING_BYTES
            )
        return len(sender.inbox) < SENDER_INBOX and self._bytes + size <= INBOX_BYTES

    def _probe(self, sender: Sender, data: bytes, t_rx: float) -> bool:
        """Whether a throttled sender's datagram is read: its probe is under way and it may
        be of use (the screen finds a line of use in it). A probe begins every PROBE_S
        and screens the datagrams that come within PROBE_WINDOW_S of its first, PROBE_TRIES
        at most (a burst, the one of use among them perhaps last)."""
        probing = 0 < sender.tries < PROBE_TRIES and t_rx - sender.probe_t < PROBE_WINDOW_S
        if not probing:
            if t_rx < sender.next_probe:
                return False
            sender.tries, sender.probe_t, sender.next_probe = 0, t_rx, t_rx + PROBE_S
        if self._passes(data):
            sender.tries = 0
            return True
        sender.tries += 1
        return False

    def _passes(self, data: bytes) -> bool:
        return self.screen is None or self.screen.any_line(data)

    def _screen_inbox(self, sender: Sender) -> None:
        """A sender just throttled keeps of what it has waiting only what may be of use."""
        kept = [(data, t) for data, t in sender.inbox if self._passes(data)]
        self._stats.throttled += len(sender.inbox) - len(kept)
        self._bytes -= sender.bytes
        sender.inbox = collections.deque(kept)
        sender.bytes = sum(len(data) for data, _ in kept)
        self._bytes += sender.bytes
        if not kept:
            self._turns.pop(sender, None)
