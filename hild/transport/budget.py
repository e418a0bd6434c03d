"""The input budget: how much of each tick received input may take, for every port.

A flood of lines on any port (a TCP client writing as fast as it can, datagrams, a pty or a
serial line full of garbage) must not cost the loop a deadline. Every reader hands what it
has received to the one InputBudget of the event loop, which works through it a slice at a
time while the current window's budget lasts and defers the rest, in turn, to later windows;
a deferred reader stops reading, so the kernel (and the sender) hold what has not been read.
A UDP port is the exception: it keeps reading its socket, so that the kernel drops nothing of
a controller's among a flood's, and keeps what waits in its senders' bounded inboxes (udp.py).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Protocol

import structlog

from hild.log import RateLimited

log = structlog.get_logger("hild.transport")

# The input budget, shared by every network port of the process (one per event loop).
WINDOW_S = 0.010  # one tick at 100 Hz
INPUT_BUDGET_S = 0.002  # what received input may take of each window, summed over all ports
# Received bytes go to the line splitter (and on to the command devices) this many at a time,
# the clock read in between. The worst lines ("x\n": each one decoded and refused by a command
# device) cost about 5 us a byte here, so a slice takes well under a millisecond.
SLICE_BYTES = 128


class Reader(Protocol):
    """Something with received input to work through: a client, a UDP socket, an acceptor."""

    def input_slice(self) -> bool:
        """Work through one slice of what is pending; True while some is left."""

    def input_pause(self) -> None:
        """Stop reading (new input stays with the kernel) until input_resume."""

    def input_resume(self) -> None:
        """Everything pending is done: read again."""


class InputBudget:
    """How much time received network input may take: INPUT_BUDGET_S of each WINDOW_S.

    One per event loop, shared by every TCP and UDP port (``InputBudget.of()``). A reader
    hands its pending input to run(): it is worked through at once, a slice at a time, while
    the window's budget lasts. A reader whose input is not all done stops reading and waits
    its turn; when the window ends, the waiting readers are served one slice each, in turn,
    until the budget is spent again, so a flooding client slows down to the budget (and its
    own share of it) while the others still get theirs. The time spent beyond a window's
    budget (a slice that overran, costs charged after the fact) is owed to the next windows.
    """

    _per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, InputBudget] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        window_s: float = WINDOW_S,
        budget_s: float = INPUT_BUDGET_S,
    ):
        self._loop = loop
        self.window_s = window_s
        self.budget_s = budget_s
        self._window_end = -float("inf")
        self._spent = 0.0
        self._waiting: dict[Reader, None] = {}  # in turn order (an ordered set)
        self._timer: asyncio.TimerHandle | None = None
        self._log_failed = RateLimited(log, "input.slice_failed")
        self.deferred = 0  # how many times a reader had to wait for a later window

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop | None = None) -> InputBudget:
        """The budget of loop (the running loop by default)."""
        loop = loop or asyncio.get_running_loop()
        budget = cls._per_loop.get(loop)
        if budget is None:
            budget = cls._per_loop[loop] = cls(loop)
        return budget

    @property
    def waiting(self) -> int:
        """How many readers wait for their turn."""
        return len(self._waiting)

    def waits(self, reader: Reader) -> bool:
        """True while reader waits for its turn (its input_resume is still to come)."""
        return reader in self._waiting

    def available(self) -> bool:
        """True while the current window has budget left."""
        self._advance()
        return self._spent < self.budget_s

    def run(self, reader: Reader) -> None:
        """Work through reader's pending input now, as far as the budget goes; the rest later."""
        if reader in self._waiting:
            return
        if not self._waiting and self.available() and not self._work(reader):
            return
        self.deferred += 1
        reader.input_pause()
        self._waiting[reader] = None
        self._schedule()

    def charge(self, seconds: float) -> None:
        """Count work done outside run() (a connection's setup, its end) against the budget."""
        self._advance()
        self._spent += seconds

    def forget(self, reader: Reader) -> None:
        """A reader that is gone: it no longer waits for a turn."""
        self._waiting.pop(reader, None)

    def _advance(self, window_over: bool = False) -> None:
        """Start a new window when the current one is over (or window_over says it is)."""
        now = self._loop.time()
        if now < self._window_end and not window_over:
            return
        if self._window_end == -float("inf"):
            windows = 1
        else:
            windows = max(1, int((now - self._window_end) / self.window_s) + 1)
        self._spent = max(0.0, self._spent - windows * self.budget_s)
        self._window_end = now + self.window_s

    def _work(self, reader: Reader) -> bool:
        """Slices of reader's input while the budget lasts; True when some is left."""
        while self._slice(reader):
            if self._spent >= self.budget_s:
                return True
        return False

    def _slice(self, reader: Reader) -> bool:
        t = time.perf_counter()
        try:
            more = reader.input_slice()
        except Exception as e:  # a reader's bug must not stall every other reader
            self._log_failed(reader=type(reader).__name__, error=repr(e))
            more = False
        self._spent += time.perf_counter() - t
        return more

    def _schedule(self) -> None:
        if self._timer is None and self._waiting:
            self._timer = self._loop.call_at(self._window_end, self._serve)

    def _serve(self) -> None:
        """A new window: serve the waiting readers a slice each, in turn, while it lasts."""
        self._timer = None
        self._advance(window_over=True)  # timers may fire a hair early
        while self._waiting and self._spent < self.budget_s:
            reader = next(iter(self._waiting))
            del self._waiting[reader]
            if self._slice(reader):
                self._waiting[reader] = None  # to the back of the line
            else:
                try:
                    reader.input_resume()
                except Exception as e:
                    self._log_failed(reader=type(reader).__name__, error=repr(e))
        self._schedule()
