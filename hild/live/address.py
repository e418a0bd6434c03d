"""Where ``hild ctl`` finds a run: the socket's name in the run directory, and connecting to
it (light: the client imports nothing of the daemon)."""

from __future__ import annotations

import socket
from pathlib import Path

SOCKET_NAME = "hild.ctl"
STATUS = "status"  # the request answered by ctl itself, not by the runtime control
FOXGLOVE_HOST = "127.0.0.1"  # hild run --foxglove's, bare
FOXGLOVE_PORT = 8765  # Foxglove's own default for a WebSocket connection


def socket_path(run_dir: Path | str) -> Path:
    return Path(run_dir) / SOCKET_NAME


def connect(path: Path, timeout: float) -> socket.socket:
    """A client's connection to the socket (OSError when no daemon answers)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        raise
    return sock


def parse_foxglove_address(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` (``[::1]:PORT`` for an IPv6 host) -> (host, port); ValueError else."""
    host, colon, port_text = text.rpartition(":")
    if not colon:
        host, port_text = FOXGLOVE_HOST, text
    host = host.strip("[]") or FOXGLOVE_HOST
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"[HOST:]PORT, e.g. 127.0.0.1:{FOXGLOVE_PORT}, not {text!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"a port from 0 to 65535, not {port}")
    return host, port
