"""Paced pty bytes written by the daemon's tick thread, which is awake every tick anyway.

A paced pty (hild/transport/pty.py) lets each byte out once its last bit would have arrived on
a real line. Done on the event loop, that wakes the loop every PACE_QUANTUM_S while bytes are
due (25 wake-ups for one 4800-baud GNSS epoch), and on a small computer each wake-up costs
more than what it writes. With a TickPacer, the loop only hands each line over, with the time
its first byte may go; the tick thread writes what is due after every tick, a non-blocking
write to the pty's master; so a paced pty costs the loop no wake-up of its own. The daemon
uses one when its ticks are at least as frequent as PACE_QUANTUM_S; elsewhere (`hild replay`,
slow tick rates) the port paces on the loop as before.

One lock per line: the loop adds lines and reads the counters, the tick thread writes.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


def bytes_out_by(now: float, start: float, byte_s: float) -> int:
    """How many bytes of a line that started at ``start`` are out on the wire by ``now``, at
    ``byte_s`` seconds a byte (each counts once its last bit is out)."""
    return int((now - start) / byte_s + 1e-6)


@dataclass(slots=True)
class _Segment:
    """One line handed to a PacedLine: its bytes, when its first may go, how many went."""

    data: memoryview
    start: float
    sent: int = 0
    hurried: bool = False  # a newer epoch is here: the rest goes at once


class PacedLine:
    """One paced pty's bytes in flight: segments (bytes, start) written at ``byte_s`` a byte.

    ``on_full`` is called (with the lock held) when the master is full, to discard what the
    slave holds unread, as the loop's writer does; ``on_error`` with an OSError when a write
    fails (the segment is then dropped). Both run in the tick thread.
    """

    def __init__(
        self,
        fd: int,
        byte_s: float,
        max_segments: int,
        on_full: Callable[[], None],
        on_error: Callable[[OSError], None],
    ):
        self._lock = threading.Lock()
        self._fd = fd
        self._byte_s = byte_s
        self._max = max_segments
        self._on_full = on_full
        self._on_error = on_error
        self._segments: collections.deque[_Segment] = collections.deque()
        self._written_since = 0  # bytes written to the master since the loop last looked
        self._closed = False

    @property
    def pending(self) -> bool:
        """True while some bytes wait to be written."""
        return bool(self._segments)

    def add(self, data: bytes, start: float) -> bool:
        """From the loop: write ``data`` from ``start`` (time.monotonic()) on, at the pace;
        False when the oldest unwritten line was dropped to make room (a reader that does not
        keep up and a master that stays full)."""
        with self._lock:
            dropped = len(self._segments) >= self._max
            if dropped:
                self._segments.popleft()
            self._segments.append(_Segment(memoryview(data), start))
        return not dropped

    def take_written(self) -> int:
        """From the loop: the bytes written since the last call."""
        with self._lock:
            n, self._written_since = self._written_since, 0
        return n

    def close(self) -> None:
        """From the loop, before the fd is closed: nothing is written from now on."""
        with self._lock:
            self._closed = True
            self._segments.clear()

    def hurry(self) -> None:
        """From the loop: what is pending goes at the next write, at once (a newer epoch is
        here and the line must not fall behind)."""
        with self._lock:
            for segment in self._segments:
                segment.hurried = True

    def write_due(self, now: float, everything: bool = False) -> None:
        """Write every byte due by ``now`` (all of them if ``everything``); never blocks."""
        with self._lock:
            if self._closed:
                return
            full = False
            while self._segments:
                segment = self._segments[0]
                size = len(segment.data)
                due = size
                if not (everything or segment.hurried):
                    due = min(size, bytes_out_by(now, segment.start, self._byte_s))
                if due <= segment.sent:
                    return
                try:
                    n = os.write(self._fd, segment.data[segment.sent : due])
                except (BlockingIOError, InterruptedError):
                    if full:
                        return  # still full after discarding: try again next tick
                    full = True
                    self._on_full()
                    continue
                except OSError as e:
                    self._segments.popleft()
                    self._on_error(e)
                    continue
                self._written_since += n
                segment.sent += n
                if segment.sent < due:
                    continue  # a partial write: the rest of what is due, now
                if segment.sent < size:
                    return  # the rest is not due yet
                self._segments.popleft()


class TickPacer:
    """The paced lines the tick thread writes after each tick."""

    def __init__(self) -> None:
        self._lines: list[PacedLine] = []

    def add(self, line: PacedLine) -> None:
        """Before the tick thread starts (the list is not locked)."""
        self._lines.append(line)

    def after_tick(self) -> None:
        """From the tick thread: write what is due on every line."""
        if self._lines:
            now = time.monotonic()
            for line in self._lines:
                line.write_due(now)
