"""The tick thread's clock on a real timerfd: never early, periodic once armed, late deadlines
returned at once without swallowing the next one's wait, and a deadline off the schedule (a
loop that resynchronized) armed afresh."""

from __future__ import annotations

import ctypes
import sys
import time

import pytest

from hild.clock import NS, BlockingClock, _Itimerspec

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="timerfd: Linux")


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


def test_deadlines_on_the_schedule_are_kept_by_one_periodic_arming():
    period = 0.01
    clock = BlockingClock(period)
    try:
        t0 = time.monotonic() + 0.02
        for k in range(30):
            deadline = t0 + k * period
            clock.sleep_until(deadline)
            assert time.monotonic() >= deadline, k  # never early
        # armed once, periodic: the kernel's next expiration is the schedule's next deadline
        before = time.monotonic()
        to_next, interval = armed(clock)
        assert interval == pytest.approx(period, abs=1e-9)
        # (the kernel read its clock between the two readings of ours)
        assert before - 1e-6 <= t0 + 30 * period - to_next <= time.monotonic() + 1e-6
    finally:
        clock.close()


def test_a_late_tick_returns_at_once_and_the_next_still_waits_for_its_deadline():
    period = 0.2
    clock = BlockingClock(period)
    try:
        t0 = time.monotonic() + 0.05
        clock.sleep_until(t0)
        time.sleep(3.5 * period)  # held: the deadlines 1, 2 and 3 pass unread
        for k in (1, 2, 3):
            clock.sleep_until(t0 + k * period)
            # it returned for its own past deadline, not at the next expiration (deadline 4);
            # a wrong clock would have blocked until then
            assert time.monotonic() < t0 + 4 * period, k
        clock.sleep_until(t0 + 4 * period)
        assert time.monotonic() >= t0 + 4 * period  # the counted expirations did not let it out
        clock.sleep_until(t0 + 5 * period)
        assert time.monotonic() >= t0 + 5 * period
    finally:
        clock.close()


def test_a_deadline_off_the_schedule_arms_it_again_there():
    period = 0.01
    clock = BlockingClock(period)
    try:
        t0 = time.monotonic() + 0.02
        for k in range(3):
            clock.sleep_until(t0 + k * period)
        t1 = t0 + 2 * period + 0.0137  # a resync moves the loop's origin off the schedule
        for k in range(1, 4):
            clock.sleep_until(t1 + k * period)
            assert time.monotonic() >= t1 + k * period, k
        before = time.monotonic()
        to_next, interval = armed(clock)
        assert interval == pytest.approx(period, abs=1e-9)
        assert before - 1e-6 <= t1 + 4 * period - to_next <= time.monotonic() + 1e-6
    finally:
        clock.close()


def test_without_a_period_each_deadline_is_armed_alone():
    clock = BlockingClock()
    try:
        deadline = time.monotonic() + 0.02
        clock.sleep_until(deadline)
        assert time.monotonic() >= deadline
        assert armed(clock) == (0.0, 0.0)  # one-shot: expired, nothing further armed
    finally:
        clock.close()
