"""Logging setup: one event per line, key=value on a terminal and JSON under systemd."""

from __future__ import annotations

import logging
import os
import sys

import structlog

FORMATS = ("auto", "console", "json")


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
