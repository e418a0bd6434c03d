"""Where ``hild ctl`` finds a run: the socket's name in the run directory, and connecting to
it (light: the client imports nothing of the daemon)."""

from __future__ import annotations

import socket
from pathlib import Path

SOCKET_NAME = "hild.ctl"
STATUS = "status"  # the request answered by ctl itself, not by the runtime control


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
