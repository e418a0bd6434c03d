"""structlog set-up: key=value lines on a terminal, JSON lines otherwise (e.g. under systemd)."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(level: str = "info", json: bool | None = None) -> None:
    """Configure structlog once for the process; one event per line on stderr."""
    if json is None:
        json = not sys.stderr.isatty()
    renderer = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
