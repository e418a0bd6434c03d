"""Logging setup: one event per line, key=value on a terminal and JSON under systemd.

The log stays one event per line whatever happens: asyncio's own error reports, the standard
library's logging, exceptions in threads and in finalizers all go through structlog, at a rate
limit, each as one line with the exception's repr and where it was raised (no traceback). A
stderr (or stdout) that goes away under a running daemon (``hild run | head``, a terminal
closed) is let go of quietly: output is dropped from then on and the run goes on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any, TextIO, cast

import structlog

from hild.log_console import ConsoleRenderer

FORMATS = ("auto", "console", "json")
LOG_INTERVAL_S = 10.0  # how often a rate-limited event may be logged, at most
MAX_TEXT = 300  # characters of a message or a repr kept in a routed error event
MAX_KINDS = 64  # distinct messages rate-limited each on their own; the rest share a limit


def configure_logging(fmt: str = "auto", level: str = "info") -> None:
    """Send structlog events to stderr; ``auto`` means JSON off a terminal or under systemd."""
    if fmt == "auto":
        under_systemd = "JOURNAL_STREAM" in os.environ or "INVOCATION_ID" in os.environ
        fmt = "json" if under_systemd or not sys.stderr.isatty() else "console"
    renderer = (
        structlog.processors.JSONRenderer(serializer=json_line)
        if fmt == "json"
        else ConsoleRenderer()  # key=value; run.summary as a short block (log_console.py)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            exception_in_one_line,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(cast(TextIO, LOG_STREAM.use(sys.stderr))),
        cache_logger_on_first_use=True,
    )


def json_line(event: Any, **options: Any) -> str:
    """An event as JSON, whose numbers are finite: a NaN or an infinity (a fault without end,
    a diverged state) is written as null, as hild's other JSON outputs write them; Python's
    ``NaN`` and ``Infinity`` are no JSON, and strict parsers refuse the whole line."""
    try:
        return json.dumps(event, allow_nan=False, **options)
    except ValueError:  # (rare: the walk below only then)
        return json.dumps(finite_or_null(event), **options)


def finite_or_null(value: Any) -> Any:
    """``value`` with every float that is not finite (an unmeasurably short run's real-time
    factor, a fault without end) as None, so that its JSON is strict (null), which any parser
    reads: for the log's lines and `hild sim`'s and `hild batch`'s JSON (``json_line``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_or_null(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_or_null(v) for v in value]
    return value


class RoutableStream:
    """Where configure_logging's events go: stderr (surviving its loss), or while
    ``routed_to`` holds, a file (a scenario run's log, so the terminal keeps to its verdict).
    The loggers cache their stream on first use: this one stays theirs and moves its output."""

    def __init__(self) -> None:
        self.default: TextIO | None = None
        self.routes: list[TextIO] = []

    def use(self, stream: TextIO) -> RoutableStream:
        self.default = cast(TextIO, SurvivingStream(stream))
        return self

    @property
    def configured(self) -> bool:
        return self.default is not None

    def _target(self) -> TextIO:
        return self.routes[-1] if self.routes else (self.default or sys.stderr)

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return self._target().isatty()


LOG_STREAM = RoutableStream()


@contextlib.contextmanager
def routed_to(path: Path) -> Iterator[bool]:
    """While held, hild's log (as configure_logging set it up) goes to ``path``, not to stderr;
    yields whether it does (not when configure_logging was never called: the caller's own
    structlog setup is left alone). Routes nest; they are the process's, not a thread's."""
    if not LOG_STREAM.configured:
        yield False
        return
    with open(path, "a", encoding="utf-8") as f:
        stream = cast(TextIO, SurvivingStream(f))
        LOG_STREAM.routes.append(stream)
        try:
            yield True
        finally:
            LOG_STREAM.routes.remove(stream)


class SurvivingStream:
    """A text stream that outlives its reader: once a write or flush fails (EPIPE when the
    pipe's reader has gone, EIO when the terminal has, a closed file), output is dropped.

    The file descriptor underneath is then pointed at /dev/null, so that nothing else that
    writes to it later (the interpreter flushing at exit, a C library) fails either. A write
    that would block (a non-blocking pipe that is full) drops that one line only.
    """

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.lost = False
        self.dropped = 0  # writes dropped: after the loss, or that would have blocked

    def write(self, text: str) -> int:
        if self.lost:
            self.dropped += 1
            return len(text)
        try:
            self.stream.write(text)
        except BlockingIOError:
            self.dropped += 1
        except (OSError, ValueError):
            self._lose()
        return len(text)

    def flush(self) -> None:
        if self.lost:
            return
        try:
            self.stream.flush()
        except BlockingIOError:
            self.dropped += 1
        except (OSError, ValueError):
            self._lose()

    def isatty(self) -> bool:
        return not self.lost and self.stream.isatty()

    def _lose(self) -> None:
        self.lost = True
        self.dropped += 1
        silence(self.stream)


def silence(stream: TextIO) -> None:
    """Point stream's file descriptor at /dev/null and drop what it still buffers."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, fd)
        finally:
            os.close(null)
    with contextlib.suppress(OSError, ValueError):
        stream.flush()  # what was buffered goes to /dev/null now


def write_or_drop(stream: TextIO, text: str) -> bool:
    """Write and flush text (e.g. the banner to stdout); if the stream has gone (EPIPE, EIO,
    closed), silence it (see silence) and return False instead of raising."""
    try:
        stream.write(text)
        stream.flush()
        return True
    except (OSError, ValueError):
        silence(stream)
        return False


def exception_in_one_line(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: exc_info (log.exception and friends) becomes ``error`` (the
    exception's repr) and ``where`` (the frame it was raised in), not a multi-line traceback."""
    exc_info = event_dict.pop("exc_info", None)
    if not exc_info:
        return event_dict
    if isinstance(exc_info, BaseException):
        exc: BaseException | None = exc_info
    elif isinstance(exc_info, tuple):
        exc = exc_info[1]
    else:
        exc = sys.exc_info()[1]
    for key, value in _exception_fields(exc).items():
        event_dict.setdefault(key, value)
    return event_dict


def _exception_fields(exc: object) -> dict[str, str]:
    """``error`` (the repr) and ``where`` (see raised_at) of an exception; {} for None."""
    if not isinstance(exc, BaseException):
        return {}
    fields = {"error": _short(repr(exc))}
    where = raised_at(exc)
    if where:
        fields["where"] = where
    return fields


def raised_at(exc: BaseException) -> str | None:
    """``file.py:123 in function`` of the innermost frame of exc's traceback, if it has one."""
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return f"{code.co_filename}:{tb.tb_lineno} in {code.co_name}"


def _short(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


class RateLimited:
    """Log one event at most once per ``interval_s``, saying how many were held back.

    For things that may happen thousands of times a second (malformed lines, refused
    datagrams, I/O errors): the first is logged at once, later ones are counted and the count
    rides on the next event that is let through, as ``suppressed``. Callers that have no
    timestamp of their own leave ``now`` out and ``clock`` (time.monotonic) is read instead.
    """

    def __init__(
        self,
        logger,
        event: str,
        interval_s: float = LOG_INTERVAL_S,
        level: str = "warning",
        clock: Callable[[], float] = time.monotonic,
    ):
        self._log = getattr(logger, level)
        self._event = event
        self._interval = interval_s
        self._clock = clock
        self._last = -float("inf")
        self.suppressed = 0

    def __call__(self, now: float | None = None, **fields) -> bool:
        """Log now if the interval has passed (True), else count it (False)."""
        if now is None:
            now = self._clock()
        if now - self._last < self._interval:
            self.suppressed += 1
            return False
        self._log(self._event, suppressed=self.suppressed, **fields)
        self._last = now
        self.suppressed = 0
        return True


def route_asyncio_errors(loop) -> None:
    """Send asyncio's own error reports (failed accepts, callbacks that raised, tasks whose
    exception nobody retrieved) through structlog, rate-limited, so that the log stays one
    event per line: ``asyncio.error`` with asyncio's message, the exception's repr and the
    frame it was raised in.

    Process-wide, and only where nobody has claimed them yet (a test runner has): the standard
    library's logging (asyncio logs through it too) goes to ``log.stdlib`` events, exceptions in
    threads to ``thread.exception`` and exceptions nobody could raise (in finalizers) to
    ``python.unraisable``, each rate-limited the same way.
    """
    errors = _Kinds(structlog.get_logger("hild.asyncio"), "asyncio.error", "error")

    def handler(_loop, context: dict) -> None:
        with contextlib.suppress(Exception):  # a failing handler would be printed by asyncio
            message = str(context.get("message") or "unhandled error in the event loop")
            fields = {"message": _short(message), **_exception_fields(context.get("exception"))}
            for key in ("task", "future", "handle", "protocol", "transport", "socket"):
                if context.get(key) is not None:
                    fields[key] = _short(repr(context[key]))
            errors(message, **fields)

    loop.set_exception_handler(handler)
    _route_stdlib_logging()
    _route_thread_and_unraisable_errors()


class _Kinds:
    """A RateLimited event per kind (an error message), at most MAX_KINDS of them."""

    def __init__(self, logger, event: str, level: str):
        self._logger, self._event, self._level = logger, event, level
        self._limits: dict[object, RateLimited] = {}

    def __call__(self, kind: object, level: str | None = None, **fields) -> None:
        key = kind if kind in self._limits or len(self._limits) < MAX_KINDS else "(other)"
        limited = self._limits.get(key)
        if limited is None:
            limited = self._limits[key] = RateLimited(
                self._logger, self._event, level=level or self._level
            )
        limited(**fields)


class _ToStructlog(logging.Handler):
    """Standard-library log records (asyncio's, a library's) as rate-limited structlog events."""

    LEVELS = {
        "DEBUG": "debug",
        "INFO": "info",
        "WARNING": "warning",
        "ERROR": "error",
        "CRITICAL": "critical",
    }

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._kinds = _Kinds(structlog.get_logger("hild.stdlib"), "log.stdlib", "warning")

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # logging must never fail the caller
            exc = record.exc_info[1] if record.exc_info else None
            fields = {
                "logger": record.name,
                "message": _short(record.getMessage()),
                **_exception_fields(exc),
            }
            level = self.LEVELS.get(record.levelname, "warning")
            self._kinds((record.name, str(record.msg)[:MAX_TEXT]), level, **fields)


def _route_stdlib_logging() -> None:
    """Unless logging is configured already, its records go through structlog, not stderr."""
    root = logging.getLogger()
    if root.handlers:
        return
    root.addHandler(_ToStructlog())
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)


def _route_thread_and_unraisable_errors() -> None:
    """Exceptions in threads and unraisable ones (finalizers): one line each, rate-limited.

    Only when the hooks are Python's own defaults (a test runner installs its own)."""
    if threading.excepthook is threading.__excepthook__:
        threads = _Kinds(structlog.get_logger("hild.thread"), "thread.exception", "error")

        def thread_hook(args) -> None:
            if args.exc_type is SystemExit:
                return
            with contextlib.suppress(Exception):
                name = None if args.thread is None else args.thread.name
                threads(args.exc_type, thread=name, **_exception_fields(args.exc_value))

        threading.excepthook = thread_hook
    if sys.unraisablehook is sys.__unraisablehook__:
        unraisable = _Kinds(structlog.get_logger("hild.python"), "python.unraisable", "warning")

        def unraisable_hook(info) -> None:
            with contextlib.suppress(Exception):
                message = _short(str(info.err_msg or "Exception ignored"))
                unraisable(
                    info.exc_type,
                    message=message,
                    object=_short(repr(info.object)),
                    **_exception_fields(info.exc_value),
                )

        sys.unraisablehook = unraisable_hook
