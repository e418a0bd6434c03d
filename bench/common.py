"""What the benchmarks that run `hild run` as a subprocess share."""

from __future__ import annotations

import json
import socket
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port(kind: int) -> int:
    """A port no one holds now on 127.0.0.1 (socket.SOCK_DGRAM or SOCK_STREAM)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid: int) -> int:
    """A process's resident memory [KiB]; 0 once it has gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def last_events(log_lines, *names: str) -> dict[str, dict]:
    """The last JSON event of each name in a daemon's log (lines that are not JSON skipped)."""
    found: dict[str, dict] = {}
    for line in log_lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") in names:
            found[event["event"]] = event
    return found
