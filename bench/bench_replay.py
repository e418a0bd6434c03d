"""Benchmark: how close to its recorded time `hild replay` puts each sentence on a pty, against
the floor of the same machine in the same run (a bare loop sleeping to the same deadlines).

python bench/bench_replay.py [--runs 3]

The recording holds 22 sentences at irregular times over 2.3 s (some at the same instant, some
1-2 ms apart); each run is `hild replay FILE --to pty://replay?pace=0` as a user runs it, read
by this script on the pty as a client would, arrival times taken against the first line's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tty
from pathlib import Path

from hild.nmea.encode import frame
from hild.record import channels
from hild.record.writer import RecordWriter

OFFSETS = [0.0, 0.0, 0.013, 0.1, 0.107, 0.25, 0.25, 0.251, 0.4, 0.55, 0.61, 0.8, 0.95, 1.0,
           1.002, 1.2, 1.35, 1.5, 1.9, 2.0, 2.0, 2.3]  # fmt: skip


def write_recording(path: Path) -> None:
    writer = RecordWriter(path, {"hild": {"kind": "bench"}}, nmea_log=False)
    writer.start()
    t0 = 1_780_315_200 * 10**9
    for i, offset in enumerate(OFFSETS):
        sentence = frame(f"GPTXT,01,01,02,line {i}").decode().rstrip()
        writer.put(
            channels.SENSORS + "gps",
            t0 + round(offset * 1e9),
            {"t": offset, "utc": "", "sentence": sentence},
        )
    writer.close()


def read_lines(link: Path, arrivals: list[float], done: threading.Event) -> None:
    fd = os.open(link, os.O_RDONLY | os.O_NOCTTY)
    tty.setraw(fd)
    buffer = b""
    try:
        while len(arrivals) < len(OFFSETS) and not done.is_set():
            chunk = os.read(fd, 4096)
            now = time.monotonic()
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                _, buffer = buffer.split(b"\n", 1)
                arrivals.append(now)
    finally:
        os.close(fd)


def one_replay(record: Path, run_dir: Path) -> list[float]:
    """The lines' errors against their recorded offsets [ms], signed (late is positive)."""
    link = run_dir / "replay"
    replaying = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hild.cli",
            "replay",
            str(record),
            "--to",
            "gps=pty://replay?pace=0",
            "--run-dir",
            str(run_dir),
            "--wait",
            "1.5",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30.0
    while not link.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    arrivals: list[float] = []
    done = threading.Event()
    reader = threading.Thread(target=read_lines, args=(link, arrivals, done), daemon=True)
    reader.start()
    replaying.wait(timeout=60)
    reader.join(timeout=2.0)
    done.set()
    if len(arrivals) != len(OFFSETS):
        raise SystemExit(f"the replay delivered {len(arrivals)} of {len(OFFSETS)} lines")
    return [((t - arrivals[0]) - o) * 1e3 for t, o in zip(arrivals, OFFSETS, strict=True)]


def floor_errors() -> list[float]:
    """A bare loop sleeping to each recorded offset from its start: the machine's own lateness
    [ms], relative to its first wake-up as the replay's are."""
    start = time.monotonic()
    woke = []
    for offset in OFFSETS:
        remaining = start + offset - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
        woke.append(time.monotonic())
    return [((t - woke[0]) - o) * 1e3 for t, o in zip(woke, OFFSETS, strict=True)]


def describe(name: str, errors: list[float]) -> str:
    size = sorted(abs(e) for e in errors)
    return (
        f"{name:28} median {statistics.median(size):6.2f} ms   p90 "
        f"{size[int(0.9 * (len(size) - 1))]:6.2f} ms   max {size[-1]:6.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "synthetic.mcap"
        write_recording(record)
        for run in range(args.runs):
            print(describe(f"floor: sleep to deadlines #{run + 1}", floor_errors()))
            errors = one_replay(record, Path(tmp) / "run")
            print(describe(f"hild replay to a pty #{run + 1}", errors))


if __name__ == "__main__":
    main()
