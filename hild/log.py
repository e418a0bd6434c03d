"""Logging setup: one event per line, key=value on a terminal and JSON under systemd."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable

import structlog

FORMATS = ("auto", "console", "json")
LOG_INTERVAL_S = 10.0  # how often a rate-limited event may be logged, at most


def configure_logging(fmt: str = "auto", level: str = "info") -> None:
    """Send structlog events to stderr; ``auto`` means JSON off a terminal or under systemd."""
    if fmt == "auto":
        under_systemd = "JOURNAL_STREAM" in os.environ or "INVOCATION_ID" in os.environ
        fmt = "json" if under_systemd or not sys.stderr.isatty() else "console"
    renderer = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.processors.KeyValueRenderer(key_order=["timestamp", "level", "event"])
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )


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
    """Send asyncio's own error reports (failed accepts, callbacks that raised) through
    structlog, rate-limited, so that the log stays one event per line (to be written)."""
