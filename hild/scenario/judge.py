"""An in-process controller is judged, not trusted: each call into it has a time limit, all
its calls together another, a step's answer a limit on its lines and a shape (lines of
bytes), and whatever it raises is its own fault, not hild's. A controller that breaks one of
these fails its run: the run ends there (``ended`` is ``controller_error``), is judged as far
as it went, and says what the controller did (``RunResult.fault``).

The limits are ``[controller]`` keys (hild/scenario/file.py): ``step_timeout_s`` for each
call (the factory, every step, ``summary``), ``total_timeout_s`` for all of them together,
``max_lines_per_step`` for a step's answer.

How a time limit is kept on a function that sleeps or loops forever in this process: the
run (the simulation and the controller, stepped in lockstep) goes in a thread of its own and
the caller's thread watches the clock of the call under way (``run_watched``). When a call
overruns its limit, the caller gives the run up: it judges the run as far as it went and
returns, within the limit and a few milliseconds; the run's thread is abandoned. Why not:

- SIGALRM (``signal.setitimer``): it interrupts the main thread only, and a sweep's runs go
  in the threads of a Dask worker;
- a watchdog thread beside a run in the caller's thread: it can tell, but not stop it;
- a thread for each step: the same guarantee, for two thread switches a step (thousands a
  run, where one thread a run costs one start, half a millisecond).

Its limit: Python cannot kill a thread. The abandoned thread is sent an exception
(``Abandoned``, a BaseException, which ``except Exception`` in a controller does not catch):
a loop in Python stops at once; a sleep, or a C call that lets go of the interpreter's lock
(I/O, most of numpy), ends when that call returns, the thread idle meanwhile; C code that
neither returns nor lets go of the lock (an extension spinning forever) holds the whole
interpreter, and no thread of this process can end it. Run such a controller as a
``command`` (hild/scenario/external.py): its own process, stopped with SIGKILL.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
import time
from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass
from typing import Any, TypeVar

from hild.scenario.controller import Controller, controller_name
from hild.scenario.file import Scenario

R = TypeVar("R")

CONTROLLER_ERROR = "controller_error"  # a run's ``ended`` when its controller failed it
WATCH_SLACK_S = 0.005  # the watcher wakes this long after a limit, not just before it
SHOWN_CHARS = 300  # of an exception's message


class ControllerError(Exception):
    """The controller under test failed its run: it raised, overran a time limit, flooded,
    or answered something that is not lines."""


class Abandoned(BaseException):
    """Raised into a run's thread once the run is given up (not an Exception: a controller's
    ``except Exception`` does not keep it from stopping)."""


class BadAnswerError(Exception):
    """(A step's answer that is not lines, or too many: said as the controller's fault.)"""


@dataclass(frozen=True)
class ControllerLimits:
    step_s: float  # each call [wall s]
    total_s: float  # all calls together [wall s]
    max_lines: int  # in one step's answer

    @classmethod
    def of(cls, scenario: Scenario) -> ControllerLimits:
        spec = scenario.controller
        return cls(
            spec.step_timeout_s, spec.total_limit_s(scenario.duration_s), spec.max_lines_per_step
        )


class Judge:
    """Times each call into the controller (in the run's thread) and checks its answers; the
    watcher (the caller's thread) asks whether the call under way has overrun."""

    def __init__(self, target: str, limits: ControllerLimits):
        self.target = target  # "package.module:factory"
        self.limits = limits
        self.lock = threading.Lock()  # began, doing, spent_s, abandoned: both threads'
        self.began: float | None = None  # when the call under way began (perf_counter)
        self.doing = ""
        self.spent_s = 0.0  # in the calls that returned
        self.abandoned = False

    # --- the run's thread --------------------------------------------------------------------
    def call(self, doing: str, fn: Callable[[], R]) -> R:
        """``fn()`` (the controller's code), timed; what it raises is a ControllerError."""
        with self.lock:
            if self.abandoned:
                raise Abandoned
            self.doing = doing
            self.began = time.perf_counter()
        try:
            out = fn()
        except Abandoned:
            raise
        except BadAnswerError as e:
            problem = str(e)
        except BaseException as e:  # SystemExit too: the controller's, not hild's
            problem = f"raised {described(e)}"  # (its __str__ is its code: still timed)
        else:
            self._returned()
            return out
        self._returned()
        raise self.fault(f"{doing} {problem}")

    def step(self, controller: Controller, t: float, lines: Sequence[bytes]) -> list[bytes]:
        limit = self.limits.max_lines
        return self.call(
            f"its step at t={t:.2f} s", lambda: answer_lines(controller.step(t, lines), limit)
        )

    def summary(self, controller: Controller) -> dict:
        summary = getattr(controller, "summary", None)
        if not callable(summary):
            return {}
        out = self.call("its summary()", summary)
        if not isinstance(out, dict):
            raise self.fault(f"its summary() returned {a(out)}, not a dict")
        return out

    def _returned(self) -> None:
        with self.lock:
            if self.abandoned:  # the watcher gave the run up as the call returned
                _clear_raised_into(threading.get_ident())
                raise Abandoned
            began, self.began = self.began, None
        assert began is not None
        elapsed = time.perf_counter() - began
        self.spent_s += elapsed
        overrun = self._overrun(elapsed, self.spent_s - elapsed)
        if overrun is not None:
            raise self.fault(overrun)

    # --- the watcher's thread ----------------------------------------------------------------
    def wait_s(self) -> float:
        """How long the watcher may sleep before a limit can run out."""
        with self.lock:
            left = min(self.limits.step_s, self.limits.total_s - self.spent_s)
            if self.began is not None:
                left -= time.perf_counter() - self.began
        return max(left, 0.0) + WATCH_SLACK_S

    def overdue(self, thread_id: int) -> ControllerError | None:
        """The call under way has overrun a limit: the run is given up (its thread told to
        stop) and this is why; None while it has not."""
        with self.lock:
            if self.began is None or self.abandoned:
                return None
            overrun = self._overrun(time.perf_counter() - self.began, self.spent_s)
            if overrun is None:
                return None
            self._abandon(thread_id)
        return self.fault(overrun)

    def abandon(self, thread_id: int) -> None:
        """The caller leaves (a fault, an interrupt): the run's thread stops at its next call,
        or now if it is in one."""
        with self.lock:
            if not self.abandoned:
                self._abandon(thread_id)

    def _abandon(self, thread_id: int) -> None:
        self.abandoned = True
        if self.began is not None:  # (in the call, or waiting for this lock after it)
            _raise_into(thread_id)

    # --- both --------------------------------------------------------------------------------
    def _overrun(self, elapsed: float, spent_before: float) -> str | None:
        limits = self.limits
        if elapsed > limits.step_s:
            return f"{self.doing} took longer than {limits.step_s:g} s (controller.step_timeout_s)"
        if spent_before + elapsed > limits.total_s:
            return (
                f"its calls took longer than {limits.total_s:g} s in all "
                f"(controller.total_timeout_s); the last was {self.doing}"
            )
        return None

    def fault(self, what: str) -> ControllerError:
        return ControllerError(f"the controller {controller_name(self.target)} failed: {what}")


def answer_lines(answer: object, limit: int) -> list[bytes]:
    """A step's answer as lines of bytes, at most ``limit``; BadAnswerError if it is not that."""
    expected = "not lines (a list of bytes, a sentence each; [] or None to send none)"
    if answer is None:  # nothing to send this step (as it always was)
        return []
    if isinstance(answer, str | bytes | bytearray):
        raise BadAnswerError(f"returned {a(answer)}, {expected}")
    if isinstance(answer, Sized) and len(answer) > limit:
        raise BadAnswerError(
            f"returned {len(answer)} lines in one step, the limit is {limit} "
            "(controller.max_lines_per_step)"
        )
    try:
        items = iter(answer)  # type: ignore[call-overload]
    except TypeError:
        raise BadAnswerError(f"returned {a(answer)}, {expected}") from None
    lines = list(itertools.islice(items, limit + 1))  # (a generator's code runs here: timed)
    if len(lines) > limit:
        raise BadAnswerError(
            f"returned more than {limit} lines in one step, the limit is {limit} "
            "(controller.max_lines_per_step)"
        )
    for i, line in enumerate(lines):
        if not isinstance(line, bytes | bytearray):
            raise BadAnswerError(f"returned {a(line)} as line {i}, not bytes")
    return lines


def a(value: object) -> str:
    """A value's type as a sentence names it: "None", "an int", "a str"."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def described(e: BaseException) -> str:
    """An exception as a message shows it: its type and its text, shortened."""
    try:
        text = str(e)  # (the controller's code, for an exception of its own)
    except Exception:
        text = "(its message cannot be shown)"
    if len(text) > SHOWN_CHARS:
        text = text[: SHOWN_CHARS - 4] + " ..."
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


class Judges:
    """A fleet's judges watched as one (its boats' controllers are called one at a time, in
    the run's one thread): the soonest limit, the first overrun, all abandoned together."""

    def __init__(self, judges: Sequence[Judge]):
        self.judges = list(judges)

    def wait_s(self) -> float:
        return min(j.wait_s() for j in self.judges)

    def overdue(self, thread_id: int) -> ControllerError | None:
        for judge in self.judges:
            fault = judge.overdue(thread_id)
            if fault is not None:
                for other in self.judges:
                    other.abandon(thread_id)
                return fault
        return None

    def abandon(self, thread_id: int) -> None:
        for judge in self.judges:
            judge.abandon(thread_id)


def run_watched(
    judge: Judge | Judges, work: Callable[[], R], given_up: Callable[[ControllerError], R]
) -> R:
    """``work()`` in a thread of its own, watched: its result, or what it raised, or, when a
    call into the controller overruns, ``given_up(fault)`` (in this thread; the work's thread
    is stopped at the call and never touches the run again)."""
    outcome: list[tuple[bool, Any]] = []
    done = threading.Event()

    def target() -> None:
        try:
            outcome.append((True, work()))
        except Abandoned:
            pass
        except BaseException as e:
            outcome.append((False, e))
        finally:
            done.set()

    thread = threading.Thread(target=target, name="hild-lockstep", daemon=True)
    thread.start()
    assert thread.ident is not None
    try:
        while not done.wait(judge.wait_s()):
            fault = judge.overdue(thread.ident)
            if fault is not None:
                return given_up(fault)
    finally:
        judge.abandon(thread.ident)
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def _raise_into(thread_id: int) -> None:
    """``Abandoned`` raised in that thread at its next instruction of Python (CPython's
    PyThreadState_SetAsyncExc: a C call under way finishes first)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(Abandoned)
    )


def _clear_raised_into(thread_id: int) -> None:
    """(What ``_raise_into`` sent and has not yet been raised: this thread raises its own.)"""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), None)
