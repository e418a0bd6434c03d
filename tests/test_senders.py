"""The UDP port's senders (hild/transport/senders.py) in-process: who is kept, who is served
first, what a flood from many source ports costs the table."""

from __future__ import annotations

from hild.transport.base import PortStats
from hild.transport.judging import DELIVERING_S, THROTTLE_AFTER, Verdict
from hild.transport.senders import MAX_SENDERS, SENDER_INBOX, SenderTable

CONTROLLER = ("127.0.0.1", 40000)


class WordScreen:
    """A screen to which lines starting with "$" are the only well-formed ones."""

    def lines(self, data: bytes) -> tuple[list[bytes], int, int]:
        raise AssertionError("a datagram port screens datagrams whole")

    def any_line(self, datagram: bytes) -> bool:
        return any(line.startswith(b"$") for line in datagram.splitlines())


def table() -> tuple[SenderTable, PortStats]:
    stats = PortStats()
    senders = SenderTable(lambda host: True, stats)
    senders.screen = WordScreen()
    return senders, stats


def deliver(senders: SenderTable, address: tuple, t: float) -> None:
    """The controller's command arrives and is applied."""
    assert senders.put(b"$RCTRC", address, t) is not None
    sender, _, _ = senders.take()
    senders.judge(sender, Verdict.APPLIED, t)


def test_a_delivering_sender_is_kept_and_served_first_whatever_floods_in():
    senders, stats = table()
    deliver(senders, CONTROLLER, 0.0)
    for port in range(1000):  # a flood from a thousand source ports, inboxes full
        for _ in range(3):
            senders.put(b"garbage", ("127.0.0.1", 1000 + port), 0.5)
    assert len(senders) == MAX_SENDERS + 1  # the others took each other's places
    for port in range(10):  # other talkers' well-formed sentences, waiting to be read
        assert senders.put(b"$GPGGA", ("127.0.0.1", 3000 + port), 0.55) is not None
    assert senders.put(b"$RCTRC", CONTROLLER, 0.6) is not None
    assert senders.take()[0].address == CONTROLLER  # first, ahead of every waiting datagram


def test_a_sender_stops_being_delivering_after_its_quiet_time():
    senders, _ = table()
    deliver(senders, CONTROLLER, 0.0)
    senders.put(b"garbage", ("127.0.0.1", 1), 0.1)
    assert senders.put(b"$RCTRC", CONTROLLER, DELIVERING_S + 1.0) is not None
    # no longer first: the other sender's datagram, waiting since before, comes first
    assert senders.take()[0].address == ("127.0.0.1", 1)


def test_well_formed_lines_of_no_use_never_throttle_a_sender():
    senders, _ = table()
    sender = senders.put(b"$GPGGA", CONTROLLER, 0.0)
    for _ in range(10 * THROTTLE_AFTER):
        assert not senders.judge(sender, Verdict.IGNORED, 0.0)
    assert not sender.throttled


def test_a_burst_beyond_an_unknown_senders_old_inbox_of_eight_keeps_its_command():
    senders, stats = table()
    for i in range(20):  # a multiplexer's burst: 19 sentences of other talkers, the TRC last
        line = b"$RCTRC" if i == 19 else b"$GPGGA"
        assert senders.put(line, CONTROLLER, 0.0) is not None
    taken = [senders.take()[1] for _ in range(20)]
    assert taken[-1] == b"$RCTRC" and stats.throttled == 0
    assert SENDER_INBOX >= 20


def test_a_flood_from_more_ports_than_the_table_holds_is_screened_not_decoded():
    # Reproduces: each newcomer took the least recently heard one's place and came back new,
    # its lines decoded again (44,000 decoded lines in 5 s from 70 ports): a newcomer to a
    # full table starts throttled, and a throttled one that lost its place is remembered.
    senders, stats = table()
    filed = 0
    for t in range(20):  # 20 rounds of 70 ports, 10 ms apart
        for port in range(MAX_SENDERS + 6):
            filed += senders.put(b"garbage", ("127.0.0.1", 2000 + port), t * 0.01) is not None
    assert filed == MAX_SENDERS  # only the first ones, before the table was full
    # every datagram discarded unread: at arrival, or (the first ones) when their senders'
    # places were taken before their turn came
    assert stats.throttled == 20 * (MAX_SENDERS + 6)
    # a new controller among them is read at once: its line is well-formed
    assert senders.put(b"$RCTRC", CONTROLLER, 0.3) is not None
