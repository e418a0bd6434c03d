"""What the Foxglove live view costs the daemon: CPU and tick jitter with and without a viewer.

`hild run` on the default bench (moved to free ports) as a subprocess, runs of --duration
seconds in one go, so that the figures are ratios against a baseline measured the same way on
the same machine at the same time:

1. no --foxglove (the baseline);
2. --foxglove with no viewer connected;
3. --foxglove with a viewer subscribed to every channel, reading all it is sent;
4. --foxglove with a viewer subscribed to every channel that never reads (a stalled viewer:
   its queue fills and the SDK drops its oldest messages).

The viewer is tests/foxglove_client.py in a thread of this process (its CPU is not the
daemon's: the daemon's is from its own run.summary).

    python bench/bench_foxglove.py [--duration 30]
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import REPO, free_port, last_events, print_cpu_table

sys.path.insert(0, str(REPO))
from tests.foxglove_client import FoxgloveClient  # noqa: E402


def bench_file(folder: Path) -> Path:
    text = (REPO / "profiles" / "bench" / "default.toml").read_text()
    text = text.replace("10110", str(free_port(socket.SOCK_DGRAM)))
    text = text.replace("10112", str(free_port(socket.SOCK_DGRAM)))
    path = folder / f"bench-{len(list(folder.glob('bench-*')))}.toml"
    path.write_text(text)
    return path


def wait_banner(proc: subprocess.Popen, timeout: float = 120.0) -> None:
    fd, text = proc.stdout.fileno(), b""
    deadline = time.monotonic() + timeout
    while b"Ctrl-C stops" not in text and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.5)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            text += chunk


def viewer(port: int, reads: bool, stop: threading.Event, counts: dict) -> None:
    """Subscribe to every channel advertised (for the first 2 s), then read (or not)."""
    client = FoxgloveClient("127.0.0.1", port)
    subscribed: set[int] = set()
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        for m in client.collect(0.2):
            if isinstance(m, dict) and m.get("op") == "advertise":
                for c in m["channels"]:
                    if c["id"] not in subscribed:
                        subscribed.add(c["id"])
                        client.subscribe(len(subscribed), c["id"])
    counts["channels"] = len(subscribed)
    counts["messages"] = 0
    while not stop.is_set():
        if reads:
            try:
                counts["messages"] += sum(1 for m in client.collect(0.5) if isinstance(m, tuple))
            except (ConnectionError, OSError):
                break
        else:
            time.sleep(0.2)
    client.close()


def run(folder: Path, duration: float, foxglove: bool, view: str | None) -> dict:
    port = free_port(socket.SOCK_STREAM)
    command = [
        sys.executable,
        "-m",
        "hild.cli",
        "run",
        str(bench_file(folder)),
        "--duration",
        str(duration),
        "--run-dir",
        str(folder / "run"),
        "--log-format",
        "json",
        "--quiet",
    ]
    if foxglove:
        command += ["--foxglove", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    stderr: list[bytes] = []
    reader = threading.Thread(target=lambda: stderr.append(proc.stderr.read()), daemon=True)
    reader.start()
    wait_banner(proc)
    stop, counts = threading.Event(), {}
    thread = None
    if view is not None:
        thread = threading.Thread(
            target=viewer, args=(port, view == "reads", stop, counts), daemon=True
        )
        thread.start()
    proc.wait(duration + 120)
    stop.set()
    if thread is not None:
        thread.join(5)
    reader.join(5)
    lines = b"".join(stderr).decode(errors="replace").splitlines()
    summary = last_events(lines, "run.summary").get("run.summary", {})
    if not summary:
        raise SystemExit("no run.summary:\n" + "\n".join(lines[-20:]))
    return {**summary, "viewer": counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows = [
            ("no --foxglove", run(folder, args.duration, False, None)),
            ("--foxglove, no viewer", run(folder, args.duration, True, None)),
            ("--foxglove, a viewer on every channel", run(folder, args.duration, True, "reads")),
            (
                "--foxglove, a stalled viewer on every channel",
                run(folder, args.duration, True, "stalled"),
            ),
        ]
    for _, r in rows:
        r["observer"] = r["viewer"]
    print_cpu_table(rows, "plain", {"channels": "channels", "received": "messages"}, args.duration)


if __name__ == "__main__":
    main()
