"""The tick thread's clock on a real timerfd: never early, periodic once armed, late deadlines
returned at once without swallowing the next one's wait, and a deadline off the schedule (a
loop that resynchronized) armed afresh."""

from __future__ import annotations

import contextlib
import ctypes
import sys
import time
from collections.abc import Iterator

import pytest

from hild.clock import NS, BlockingClock, _Itimerspec

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="timerfd: Linux")


@contextlib.contextmanager
def open_clock(period_s: float = 0.0) -> Iterator[BlockingClock]:
    """A clock for one test, its timerfd closed after it."""
    clock = BlockingClock(period_s)
    try:
        yield clock
    finally:
        clock.close()


def armed(clock: BlockingClock) -> tuple[float, float]:
    """The kernel's view of the clock's timerfd: seconds to its next expiration, its interval."""
    spec = _Itimerspec()
    libc = ctypes.CDLL(None, use_errno=True)
    assert clock._timerfd is not None
    assert libc.timerfd_gettime(clock._timerfd.fd, ctypes.byref(spec)) == 0
    return (
        spec.it_value.tv_sec + spec.it_value.tv_nsec / NS,
        spec.it_interval.tv_sec + spec.it_interval.tv_nsec / NS,
    )


def assert_repeating_on(clock: BlockingClock, origin: float, period: float) -> None:
    """The kernel's timer repeats every ``period`` on ``origin``'s schedule: its next expiration
    is one of origin + n period. Read between two readings of ours, so it holds however long
    this thread was kept from running before it looked."""
    for _ in range(5):  # a reading whose bracket is under half a period tells the schedule apart
        before = time.monotonic()
        to_next, interval = armed(clock)
        after = time.monotonic()
        if after - before < period / 2:
            break
    assert interval == pytest.approx(period, abs=1e-9)
    assert to_next > 0.0  # armed, not spent
    # the next expiration lies in [before, after] + to_next; the schedule's instant nearest it
    n = round((before + to_next - origin) / period)
    assert before + to_next - 1e-6 <= origin + n * period <= after + to_next + 1e-6, (n, to_next)


def test_deadlines_on_the_schedule_are_kept_by_one_periodic_arming():
    period = 0.01
    with open_clock(period) as clock:
        t0 = time.monotonic() + 0.02
        for k in range(30):
            deadline = t0 + k * period
            clock.sleep_until(deadline)
            assert time.monotonic() >= deadline, k  # never early
        assert_repeating_on(clock, t0, period)  # armed once, periodic, on the deadlines


def test_a_late_tick_returns_at_once_and_the_next_still_waits_for_its_deadline():
    # half a second a period: the late calls must return before deadline 4, and this thread
    # has 0.4 s to spare for them (a wrong clock waits for deadlines 4 and 5)
    period = 0.5
    with open_clock(period) as clock:
        t0 = time.monotonic() + 0.05
        clock.sleep_until(t0)
        time.sleep(3.2 * period)  # held: the deadlines 1, 2 and 3 pass unread
        for k in (1, 2, 3):
            clock.sleep_until(t0 + k * period)
            # it returned for its own past deadline, not at the next expiration (deadline 4)
            assert time.monotonic() < t0 + 4 * period, k
        clock.sleep_until(t0 + 4 * period)
        assert time.monotonic() >= t0 + 4 * period  # the counted expirations did not let it out
        clock.sleep_until(t0 + 5 * period)
        assert time.monotonic() >= t0 + 5 * period


def test_a_deadline_off_the_schedule_arms_it_again_there():
    period = 0.01
    with open_clock(period) as clock:
        t0 = time.monotonic() + 0.02
        for k in range(3):
            clock.sleep_until(t0 + k * period)
        t1 = t0 + 2 * period + 0.0137  # a resync moves the loop's origin off the schedule
        for k in range(1, 4):
            clock.sleep_until(t1 + k * period)
            assert time.monotonic() >= t1 + k * period, k
        assert_repeating_on(clock, t1, period)  # on the new origin's schedule, not t0's


def test_without_a_period_each_deadline_is_armed_alone():
    with open_clock() as clock:
        deadline = time.monotonic() + 0.02
        clock.sleep_until(deadline)
        assert time.monotonic() >= deadline
        assert armed(clock) == (0.0, 0.0)  # one-shot: expired, nothing further armed
