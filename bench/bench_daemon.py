"""Benchmark: `hild run` in real time, tick jitter and CPU per cent of one core.

Runs the daemon as a subprocess (as a user would) at 100 Hz with four devices on
ptys and UDP, with this process reading every pty and the UDP port as clients
would, then the built-in default bench the same way; each bench once plain and once with
``--record`` (MCAP and the Signal K log in a temporary folder), one after the other, so that
the two rows of a bench share the machine's load. Prints one table.

    python bench/bench_daemon.py [--duration 60]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import tty
from pathlib import Path

FOUR_DEVICES = """
[bench]
name = "four-devices"
rate_hz = 100
run_dir = "{run_dir}"
stats_interval = 1000

[vessel]
profile = "odin"
speed = 2.0
[vessel.commands]
"port.rpm" = 1200
"starboard.rpm" = 1200

[[device]]
name = "gps"
type = "gps"
rate_hz = 10
baud = 115200
ports = ["pty://gps", "udp://127.0.0.1:{udp}"]

[[device]]
name = "heading"
type = "heading"
ports = ["pty://heading", "udp://127.0.0.1:{udp}"]

[[device]]
name = "wind"
type = "anemometer"
ports = ["pty://wind", "udp://127.0.0.1:{udp}"]

[[device]]
name = "speed"
type = "speed-log"
ports = ["pty://speed", "udp://127.0.0.1:{udp}"]
"""


def drain(paths: list[Path], sock: socket.socket, stop: threading.Event, counts: dict) -> None:
    """Read every pty and the UDP socket as clients would, counting bytes."""
    fds = {}
    for p in paths:
        fd = os.open(p, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(fd)
        fds[fd] = p.name
    watch = [*fds, sock.fileno()]
    while not stop.is_set():
        ready, _, _ = select.select(watch, [], [], 0.2)
        for fd in ready:
            try:
                data = sock.recv(65536) if fd == sock.fileno() else os.read(fd, 65536)
            except OSError:  # the daemon has ended and closed its side of the pty
                watch.remove(fd)
                continue
            key = "udp" if fd == sock.fileno() else fds[fd]
            counts[key] = counts.get(key, 0) + len(data)
    for fd in fds:
        os.close(fd)


def run(bench_args: list[str], run_dir: Path, duration: float, sock: socket.socket) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "hild.cli",
        "run",
        *bench_args,
        "--run-dir",
        str(run_dir),
        "--duration",
        str(duration),
        "--log-format",
        "json",
        "--stats-interval",
        "1000",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    banner = []
    while not any(line.startswith("Ctrl-C stops") for line in banner):
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"daemon failed:\n{proc.stderr.read()}")
        banner.append(line)
    paths = sorted(p for p in run_dir.iterdir() if p.is_symlink())
    stop, counts = threading.Event(), {}
    reader = threading.Thread(target=drain, args=(paths, sock, stop, counts))
    reader.start()
    _, _, stderr = proc.wait(), None, proc.stderr.read()
    stop.set()
    reader.join()
    summary = [json.loads(x) for x in stderr.splitlines() if '"run.summary"' in x][-1]
    summary["client_bytes"] = counts
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds per run (60)")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    udp = sock.getsockname()[1]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        bench = Path(tmp) / "four.toml"
        bench.write_text(FOUR_DEVICES.format(run_dir=Path(tmp) / "a", udp=udp))
        record = ["--record", str(Path(tmp) / "run.mcap")]
        for name, bench_args in (("4 devices", [str(bench)]), ("default bench", [])):
            for suffix, extra in (("", []), (" --record", record)):
                run_dir = Path(tmp) / f"run{len(rows)}"
                rows.append((name + suffix, run([*bench_args, *extra], run_dir, args.duration,
                                                sock)))  # fmt: skip
    print(f"hild run, 100 Hz, {args.duration:g} s each, {os.cpu_count()} cores")
    print(f"{'bench':<26} {'ticks':>7} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
          f"{'overruns':>8} {'CPU %':>6} {'sentences':>9} {'dropped':>7}")  # fmt: skip
    for name, s in rows:
        sentences = sum(d["sentences"] for d in s["devices"].values())
        dropped = sum(p["dropped_lines"] for p in s["ports"].values())
        print(f"{name:<26} {s['ticks']:>7} {s['jitter_p50_ms']:>7.3f} {s['jitter_p99_ms']:>7.3f} "
              f"{s['jitter_max_ms']:>7.3f} {s['overruns']:>8} {s['cpu_percent']:>6.1f} "
              f"{sentences:>9} {dropped:>7}")  # fmt: skip
    print("CPU %: process CPU time over the loop's wall time, of one core.")


if __name__ == "__main__":
    main()
