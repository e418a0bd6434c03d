"""Waking at absolute deadlines on the monotonic clock, precisely: inside asyncio
(DeadlineTimer) or in a thread of its own (BlockingClock, the daemon's tick thread).

asyncio's own timers wake through epoll's millisecond timeout, which adds about
a millisecond of lateness to every tick. On Linux a timerfd armed at the absolute
deadline wakes within tens of microseconds; elsewhere we fall back to
``asyncio.sleep`` or ``time.sleep``.
"""

from __future__ import annotations

import asyncio
import ctypes
import math
import os
import sys
import time
from dataclasses import dataclass, field

# How much faster than real time a run may go (bench.time_scale, --time-scale). Below 1/100 a
# 100 Hz loop ticks once a wall second and a controller's every timeout is 100 times too short
# to mean anything; a scale of 1e-9 would put the second tick years away. Above 1000 the
# ticks' deadlines are microseconds apart, below what the clock keeps (the loop then reports
# the scale it achieved).
MIN_TIME_SCALE = 0.01
MAX_TIME_SCALE = 1000.0
TIME_SCALE_EXPECTED = f"a time scale from {MIN_TIME_SCALE:g} to {MAX_TIME_SCALE:g}"

CLOCK_MONOTONIC = 1  # time.monotonic() reads this clock on Linux
TFD_TIMER_ABSTIME = 1
TFD_NONBLOCK = os.O_NONBLOCK
TFD_CLOEXEC = 0o2000000
NS = 1_000_000_000
# how far a deadline may sit from the periodic schedule and still be on it: float deadlines
# t0 + k period round to within nanoseconds of it; a period of no whole nanoseconds drifts by
# less than one a tick, so re-arming once in a thousand ticks or more
ON_SCHEDULE_NS = 1_000


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class _Timerfd:
    """A Linux timerfd on CLOCK_MONOTONIC, armed at absolute deadlines (the one place both
    clocks below set a deadline)."""

    def __init__(self, fd: int, libc: ctypes.CDLL):
        self.fd, self._libc, self._spec = fd, libc, _Itimerspec()

    @classmethod
    def open(cls, blocking: bool) -> _Timerfd | None:
        """A new timerfd, or None where there is none (not Linux, no timerfd_create)."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.timerfd_create(
                CLOCK_MONOTONIC, TFD_CLOEXEC | (0 if blocking else TFD_NONBLOCK)
            )
        except (OSError, AttributeError):
            return None
        return cls(fd, libc) if fd >= 0 else None

    def arm(self, deadline: float, period_ns: int = 0) -> bool:
        """Expire at ``deadline`` (``time.monotonic()`` seconds) and, with ``period_ns``, every
        period_ns nanoseconds after it; False if that failed."""
        seconds = int(deadline)
        self._spec.it_value.tv_sec = seconds
        self._spec.it_value.tv_nsec = int((deadline - seconds) * 1e9)
        self._spec.it_interval.tv_sec, self._spec.it_interval.tv_nsec = divmod(period_ns, NS)
        return not self._libc.timerfd_settime(
            self.fd, TFD_TIMER_ABSTIME, ctypes.byref(self._spec), None
        )

    def expirations(self) -> int:
        """Block until the timer has expired, then how many times it has since the last read
        (the kernel's count: a periodic timer keeps counting while nobody reads)."""
        return int.from_bytes(os.read(self.fd, 8), sys.byteorder)

    def close(self) -> None:
        os.close(self.fd)


class DeadlineTimer:
    """``await timer.sleep_until(deadline)`` with ``deadline`` in ``time.monotonic()`` seconds."""

    def __init__(self) -> None:
        self._waiter: asyncio.Future[None] | None = None
        self._timerfd = _Timerfd.open(blocking=False)
        if self._timerfd is not None:
            asyncio.get_running_loop().add_reader(self._timerfd.fd, self._expired)

    @property
    def precise(self) -> bool:
        """True when a timerfd drives the wake-ups."""
        return self._timerfd is not None

    async def sleep_until(self, deadline: float) -> None:
        delay = deadline - time.monotonic()
        if delay <= 0:
            await asyncio.sleep(0)
            return
        if self._timerfd is None or not self._timerfd.arm(deadline):
            await asyncio.sleep(delay)  # (arming should not fail; never stall the loop over it)
            return
        self._waiter = asyncio.get_running_loop().create_future()
        await self._waiter

    def _expired(self) -> None:
        assert self._timerfd is not None
        try:
            os.read(self._timerfd.fd, 8)
        except BlockingIOError:
            return
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def close(self) -> None:
        if self._timerfd is not None:
            asyncio.get_running_loop().remove_reader(self._timerfd.fd)
            self._timerfd.close()
            self._timerfd = None


class BlockingClock:
    """``clock.sleep_until(deadline)`` blocks the calling thread until ``deadline`` (in
    ``time.monotonic()`` seconds): in read() on a timerfd on Linux, in time.sleep elsewhere.
    For the daemon's tick thread, which then costs the process one wake-up per tick and
    nothing between ticks.

    Given the tick's ``period_s``, the timerfd is armed once, periodic, at the first deadline:
    a deadline on that schedule then costs one read() (arming it again each tick was a second
    system call, through ctypes, that cost a 100 Hz daemon about 0.1 % of a core on a VM:
    docs/benchmarks.md). A deadline off the schedule (the first, a loop that resynchronized
    after falling far behind, a period that is not a whole number of nanoseconds drifting a
    microsecond from the float deadlines) arms it again there. The kernel counts the
    expirations nobody read, so a tick that is late returns at once, as it would without the
    schedule, and the next waits for its own deadline."""

    def __init__(self, period_s: float = 0.0) -> None:
        self._timerfd = _Timerfd.open(blocking=True)
        self._period_ns = max(0, round(period_s * NS))
        self._first_ns: int | None = None  # the schedule's expiration 0, in monotonic ns
        self._expired = -1  # the last expiration counted

    @property
    def precise(self) -> bool:
        """True when a timerfd drives the wake-ups."""
        return self._timerfd is not None

    def sleep_until(self, deadline: float) -> None:
        timerfd = self._timerfd
        if timerfd is not None and self._first_ns is not None:
            # the deadline's place in the schedule (a float's deadline a rounding away)
            offset_ns = round(deadline * NS) - self._first_ns
            n = (offset_ns + self._period_ns // 2) // self._period_ns
            if n >= 0 and abs(offset_ns - n * self._period_ns) <= ON_SCHEDULE_NS:
                while self._expired < n:
                    self._expired += timerfd.expirations()
                return
        delay = deadline - time.monotonic()
        if delay <= 0:
            return
        if timerfd is None or not timerfd.arm(deadline, self._period_ns):
            time.sleep(delay)  # (arming should not fail; never stall the tick over it)
            return
        if self._period_ns > 0:
            self._first_ns = round(deadline * NS)
        # blocks until the deadline (the GIL released meanwhile); more than one expiration
        # if this thread only read after a later one
        self._expired = timerfd.expirations() - 1

    def close(self) -> None:
        if self._timerfd is not None:
            self._timerfd.close()
            self._timerfd = None


JITTER_BINS = 10_001  # 10 us bins up to 100 ms, and one for all later ticks
_NO_TICKS = (0,) * JITTER_BINS  # what ``reset`` copies into the bins


@dataclass
class JitterStats:
    """Tick lateness against the deadlines, as a histogram of 10 us bins up to 100 ms.

    The bins are a list of Python ints, not a numpy array: ``add`` runs in every tick (the
    daemon's run-long statistics and its windows each take it), and a list's item is
    incremented in 290 ns against 440 for a numpy array's (hot, on the build machine)."""

    bin_s: float = 1e-5
    counts: list[int] = field(default_factory=lambda: [0] * JITTER_BINS)
    ticks: int = 0
    overruns: int = 0
    max_s: float = 0.0

    def add(self, late_s: float, period_s: float = math.inf) -> None:
        """One tick ``late_s`` late; an overrun when later than the tick's period."""
        self.ticks += 1
        if late_s > period_s:
            self.overruns += 1
        self.counts[min(int(late_s / self.bin_s), JITTER_BINS - 1)] += 1
        if late_s > self.max_s:
            self.max_s = late_s

    def reset(self) -> None:
        """Start a new window, in place (no allocation inside a tick)."""
        self.counts[:] = _NO_TICKS
        self.ticks = self.overruns = 0
        self.max_s = 0.0

    def percentile_ms(self, p: float) -> float:
        """The upper edge of the bin of the smallest lateness with at least ``p`` % of the ticks
        at or below it [ms]."""
        if self.ticks == 0:
            return 0.0
        wanted = math.ceil(p / 100.0 * self.ticks)
        below = 0
        index = 0
        for count in self.counts:  # (most ticks are in the first bins)
            below += count
            if below >= wanted:
                break
            index += 1
        return (index + 1) * self.bin_s * 1e3

    def summary(self) -> dict[str, float | int]:
        return {
            "ticks": self.ticks,
            "overruns": self.overruns,
            "jitter_p50_ms": round(self.percentile_ms(50), 3),
            "jitter_p99_ms": round(self.percentile_ms(99), 3),
            "jitter_max_ms": round(self.max_s * 1e3, 3),
        }
