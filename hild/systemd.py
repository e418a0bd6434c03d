"""systemd's notify protocol for `hild run` under Type=notify (to be written)."""

from __future__ import annotations

from hild.observers import TickObserver


def notifier_from_environment() -> TickObserver | None:
    """The notifier when systemd started us with $NOTIFY_SOCKET, else None."""
    return None
