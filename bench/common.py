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


def print_cpu_table(
    rows: list[tuple[str, dict]], baseline: str, extra: dict[str, str], duration_s: float
) -> None:
    """The daemon benchmarks' table: per run (name, run.summary) its CPU, the ratio to the
    first row's, jitter and overruns, then ``extra`` columns (header -> key of the summary's
    observer entry, ``r["observer"]``; '-' where absent)."""
    base = rows[0][1]["cpu_percent"]
    print(f"hild run, default bench, {duration_s:g} s at 100 Hz each:")
    print(
        f"| run | CPU | vs {baseline} | jitter p50 | p99 | max | overruns | "
        + " | ".join(extra)
        + " |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(extra))
    for name, r in rows:
        o = r.get("observer", {})
        cells = " | ".join(str(o.get(key, "-")) for key in extra.values())
        print(
            f"| {name} | {r['cpu_percent']:.1f} % | {r['cpu_percent'] / base:.2f}x | "
            f"{r['jitter_p50_ms']:.2f} ms | {r['jitter_p99_ms']:.2f} ms | "
            f"{r['jitter_max_ms']:.1f} ms | {r['overruns']} | {cells} |"
        )
