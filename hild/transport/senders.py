"""Fair shares of a datagram port's input among its senders.

One sender flooding a UDP port must not cost another sender its turn: the real controller's
ten commands a second have to get through while another local process sends garbage as fast
as it can. Every datagram read from the socket is put in its sender's own small inbox, and
the port works through the inboxes in turn, one datagram from each sender with some waiting
(round robin), under the input budget. A flood fills only its own inbox; what it sends beyond
that is discarded on arrival, counted (``throttled``), at the cost of a dictionary lookup.

A sender whose lines are of no use (THROTTLE_AFTER in a row refused by every command device
on the port, see Dispatcher.receive) is throttled: one of its datagrams is read every
PROBE_S, the others are discarded unread and counted, until one of its lines is of use again.
Decoding a refused line costs ~30 us, reading and discarding a datagram ~2 us (~5 us in the
daemon with the loop's wake-ups), so a throttled flood of 50,000 datagrams a second costs a
quarter of a core instead of one and a half cores the input budget could never pay for. A
controller that sends no more than one datagram per PROBE_S loses nothing even while
throttled, and one that starts sending valid commands is heard again within PROBE_S.
"""

from __future__ import annotations

import collections
from collections.abc import Callable

from hild.transport.base import PortStats

SENDER_INBOX = 8  # datagrams one sender may have waiting; more are discarded, counted
INBOX_BYTES = 1 << 20  # bytes all senders may have waiting (a sender's first one always fits)
MAX_SENDERS = 64  # senders remembered; a new one makes the least recently heard idle one go
# Lines in a row of no use before a sender is throttled: a real controller's line refused now
# and then (noise on a line, an unsupported sentence among its commands) never adds up to
# eight in a row with nothing valid between them.
THROTTLE_AFTER = 8
PROBE_S = 0.1  # a throttled sender has one datagram read this often


class Sender:
    """One source address: whether allow= takes it, its inbox, how its lines fared."""

    __slots__ = ("address", "allowed", "inbox", "next_probe", "useless")

    def __init__(self, address: tuple, allowed: bool):
        self.address = address  # the socket address the datagrams came from
        self.allowed = allowed
        self.inbox: collections.deque[tuple[bytes, float]] = collections.deque()
        self.useless = 0  # lines of no use in a row
        self.next_probe = 0.0  # throttled: time.monotonic() its next datagram may be read

    @property
    def peer(self) -> tuple[str, int]:
        return str(self.address[0]), int(self.address[1])

    @property
    def throttled(self) -> bool:
        return self.useless >= THROTTLE_AFTER


class SenderTable:
    """The senders of one port, their inboxes, and the order in which they are served."""

    def __init__(self, allows: Callable[[str], bool], stats: PortStats):
        self._allows = allows
        self._stats = stats
        self._senders: dict[tuple, Sender] = {}  # least recently heard first
        self._turns: dict[Sender, None] = {}  # senders with datagrams waiting, in turn order
        self._bytes = 0  # waiting in every inbox

    def __len__(self) -> int:
        return len(self._senders)

    @property
    def pending(self) -> bool:
        """True while some sender has a datagram waiting."""
        return bool(self._turns)

    def put(self, data: bytes, address: tuple, t_rx: float) -> Sender | None:
        """File one received datagram under its sender; the sender, or None when discarded.

        A sender outside allow= is returned with nothing filed (the caller refuses it); a
        datagram that a throttled sender sent before its next probe, or that finds its
        sender's inbox full, is discarded and counted in ``throttled``.
        """
        sender = self._senders.pop(address, None)
        if sender is None:
            sender = self._new(address)
            if sender is None:  # every sender remembered has datagrams waiting
                self._stats.throttled += 1
                return None
        self._senders[address] = sender  # now the most recently heard
        if not sender.allowed:
            return sender
        if sender.useless >= THROTTLE_AFTER:
            if t_rx < sender.next_probe:
                self._stats.throttled += 1
                return None
            sender.next_probe = t_rx + PROBE_S
        inbox = sender.inbox
        if inbox and (len(inbox) >= SENDER_INBOX or self._bytes + len(data) > INBOX_BYTES):
            self._stats.throttled += 1
            return None
        inbox.append((data, t_rx))
        self._bytes += len(data)
        self._turns.setdefault(sender)
        return sender

    def take(self) -> tuple[Sender, bytes, float] | None:
        """The next datagram in turn, (sender, data, t_rx): one from each waiting sender."""
        if not self._turns:
            return None
        sender = next(iter(self._turns))
        del self._turns[sender]
        data, t_rx = sender.inbox.popleft()
        self._bytes -= len(data)
        if sender.inbox:
            self._turns[sender] = None  # to the back of the line
        return sender, data, t_rx

    def judge(self, sender: Sender, useful: bool, now: float) -> bool:
        """Note how one of sender's lines fared; True when that made the sender throttled."""
        if useful:
            sender.useless = 0
            return False
        sender.useless += 1
        if sender.useless != THROTTLE_AFTER:
            return False
        sender.next_probe = now + PROBE_S
        self._turns.pop(sender, None)
        self._stats.throttled += len(sender.inbox)
        self._bytes -= sum(len(data) for data, _ in sender.inbox)
        sender.inbox.clear()
        return True

    def clear(self) -> None:
        self._senders.clear()
        self._turns.clear()
        self._bytes = 0

    def _new(self, address: tuple) -> Sender | None:
        if len(self._senders) >= MAX_SENDERS:
            idle = next((a for a, s in self._senders.items() if not s.inbox), None)
            if idle is None:
                return None
            del self._senders[idle]
        return Sender(address, self._allows(str(address[0])))
