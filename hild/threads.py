"""The name a thread shows the system (``top -H``, ``ps -L``, /proc/PID/task/TID/comm).

Python before 3.14 names its threads for itself only; the kernel keeps calling each one
``python``. hild's own threads (the tick, the recording, the run directory's watcher) give the
kernel their name too, so that an operator, and bench/bench_daemon.py, can tell what each
costs. Linux's prctl(PR_SET_NAME) takes 15 bytes and a NUL; elsewhere this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

PR_SET_NAME = 15  # linux/prctl.h
NAME_BYTES = 15


def name_os_thread(name: str) -> None:
    """Give the calling thread ``name`` (cut to 15 bytes) in the kernel's listings."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_NAME, name.encode()[:NAME_BYTES], 0, 0, 0)
    except (OSError, AttributeError):  # no libc to ask: the name stays the interpreter's
        return
