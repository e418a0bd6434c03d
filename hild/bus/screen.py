"""The screen: which received lines are well-formed sentences, in bulk, before any decoding.

A throttled sender's input (hild/transport/senders.py and streams.py) passes the screen
before its lines are decoded: what is malformed (sentence.MALFORMED: longer than 82
characters with CR LF, bytes outside printable ASCII, no ``$``/``!`` and address, a
checksum that is not two hex digits or not the XOR of the sentence) is discarded unread,
what is well-formed goes on to the devices. Decoding and refusing a line costs ~30 us, the
screen in Python ~2 us, this compiled scan ~1 ns a byte: a megabyte of garbage written at
once on a pty is screened in about a millisecond, so the controller's commands written after
it are read within the tick, not seconds later.

The rules are checked_sentence's (sentence.py), read with the most lenient checksum policy
of the port's devices; tests/test_screen.py checks the two agree line for line. A port's
screen passes only the sentences its devices claim as well (their protocols' formatters and
addresses, and HSC): a well-formed sentence that no device takes (another talker's on a
shared bus) is of no use to a throttled sender either, and a probe that stopped at it would
never reach the command a burst carries after it.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numba import njit

from hild.bus.sentence import MAX_LINE_CHARS, UNCHECKED

_LF, _CR = 10, 13
MAX_ADDRESS = 8  # characters of an address (sentence.py's checks allow 3 to 8)


@njit(cache=True)
def _hex(c):  # the value of an ASCII hex digit, or -1
    if 48 <= c <= 57:
        return c - 48
    if 65 <= c <= 70:
        return c - 55
    if 97 <= c <= 102:
        return c - 87
    return -1


@njit(cache=True)
def _claimed(buf, a, n, formatters, addresses, lengths):
    """Whether the address buf[a:a+n] is one the port's devices take: an approved one (a
    talker and a formatter, not proprietary) with one of formatters, or one of addresses."""
    if n == 5 and buf[a] != 80:  # 'P': proprietary
        for r in range(formatters.shape[0]):
            if (
                buf[a + 2] == formatters[r, 0]
                and buf[a + 3] == formatters[r, 1]
                and buf[a + 4] == formatters[r, 2]
            ):
                return True
    for r in range(addresses.shape[0]):
        if lengths[r] == n:
            same = True
            for c in range(n):
                if buf[a + c] != addresses[r, c]:
                    same = False
                    break
            if same:
                return True
    return False


@njit(cache=True)
def _of_use(buf, i, j, unchecked, max_chars, claims, formatters, addresses, lengths):
    """Whether buf[i:j] is well-formed and, with ``claims``, claimed by the port's devices."""
    if not _well_formed(buf, i, j, unchecked, max_chars):
        return False
    if not claims:
        return True
    n = 0
    while i + 1 + n < j and buf[i + 1 + n] != 44 and buf[i + 1 + n] != 42:  # ',' '*'
        n += 1
    return _claimed(buf, i + 1, n, formatters, addresses, lengths)


@njit(cache=True)
def _well_formed(buf, i, j, unchecked, max_chars):
    """Whether buf[i:j] (one line, without its end) is not malformed: checked_sentence's
    checks in its order, but for what decoding finds beyond them."""
    if j - i > max_chars or (buf[i] != 36 and buf[i] != 33):  # '$' '!'
        return False
    star = -1
    for k in range(i, j):
        c = buf[k]
        if c < 0x20 or c > 0x7E:
            return False
        if c == 42:  # '*': the last one starts the checksum
            star = k
    end = star if star >= 0 else j
    address = 0
    k = i + 1
    while k < end and buf[k] != 44:  # the address runs to the first ','
        c = buf[k]
        if not ((48 <= c <= 57) or (65 <= c <= 90)):
            return False
        address += 1
        k += 1
    if address < 3 or address > 8:
        return False
    if star < 0 or unchecked or star + 1 == j:  # no '*', unchecked, a bare '*'
        return True
    if j - star != 3:
        return False
    high, low = _hex(buf[star + 1]), _hex(buf[star + 2])
    if high < 0 or low < 0:
        return False
    value = 0
    for k in range(i + 1, star):
        value ^= buf[k]
    return value == high * 16 + low


@njit(cache=True)
def _scan(buf, unchecked, max_chars, claims, formatters, addresses, lengths, starts, ends):
    """Find the lines of buf (CR, LF and CRLF end them; empty ones skipped; the bytes after
    the last end are no line yet) and which are of use (_of_use); their bounds go to starts
    and ends. Returns (lines seen, lines of use, bytes up to the last line end)."""
    n = buf.shape[0]
    lines = good = consumed = 0
    i = 0
    while i < n:
        j = i
        while j < n and buf[j] != _LF and buf[j] != _CR:
            j += 1
        if j >= n:
            break
        if j > i:
            lines += 1
            if _of_use(buf, i, j, unchecked, max_chars, claims, formatters, addresses, lengths):
                starts[good] = i
                ends[good] = j
                good += 1
        i = j + 1
        consumed = i
    return lines, good, consumed


@njit(cache=True)
def _any(buf, unchecked, max_chars, claims, formatters, addresses, lengths):
    """Whether buf holds a line of use (a datagram: its end ends its last line)."""
    n = buf.shape[0]
    i = 0
    while i < n:
        j = i
        while j < n and buf[j] != _LF and buf[j] != _CR:
            j += 1
        if j > i and _of_use(
            buf, i, j, unchecked, max_chars, claims, formatters, addresses, lengths
        ):
            return True
        i = j + 1
    return False


class Screen:
    """The screen of one port, for its devices' most lenient checksum policy and, given
    ``formatters`` or ``addresses``, for the sentences they claim ("TRC": an approved
    sentence with that formatter, any talker; "PHLDC": that whole address); with neither,
    every well-formed line passes."""

    def __init__(
        self, checksum: str, formatters: Iterable[str] = (), addresses: Iterable[str] = ()
    ):
        self.unchecked = checksum == UNCHECKED
        formatters, addresses = sorted(set(formatters)), sorted(set(addresses))
        self.claims = bool(formatters or addresses)
        self.formatters = np.array(
            [list(f.encode("ascii")) for f in formatters], dtype=np.uint8
        ).reshape(len(formatters), 3)
        self.addresses = np.zeros((len(addresses), MAX_ADDRESS), dtype=np.uint8)
        self.lengths = np.array([len(a) for a in addresses], dtype=np.int64)
        for r, address in enumerate(addresses):
            self.addresses[r, : len(address)] = list(address.encode("ascii"))

    def lines(self, data: bytes) -> tuple[list[bytes], int, int]:
        """The lines of use among the complete lines of data, how many lines were seen, and
        how many bytes those took (the rest is a line still to be ended)."""
        buf = np.frombuffer(data, dtype=np.uint8)
        bound = buf.shape[0] // 2 + 1  # a line and its end take two bytes at least
        starts = np.empty(bound, dtype=np.int64)
        ends = np.empty(bound, dtype=np.int64)
        seen, good, consumed = _scan(
            buf,
            self.unchecked,
            MAX_LINE_CHARS,
            self.claims,
            self.formatters,
            self.addresses,
            self.lengths,
            starts,
            ends,
        )
        return [data[s:e] for s, e in zip(starts[:good], ends[:good], strict=True)], seen, consumed

    def any_line(self, datagram: bytes) -> bool:
        """Whether a datagram holds a line of use (its last line needs no end)."""
        buf = np.frombuffer(datagram, dtype=np.uint8)
        return bool(
            _any(
                buf,
                self.unchecked,
                MAX_LINE_CHARS,
                self.claims,
                self.formatters,
                self.addresses,
                self.lengths,
            )
        )

    def __call__(self, line: bytes) -> bool:
        """Whether one line (without its end) is of use."""
        return self.any_line(line)


def warm_up() -> None:
    """Load (or compile) the scan before a run's clock starts, as the daemon does its kernels."""
    for screen in (Screen("required"), Screen("required", ["HSC"], ["PHLDC"])):
        screen.lines(b"$GPHDT,1.0,T*2F\r\nx\n")
        screen.any_line(b"$GPHDT,1.0,T*2F")
