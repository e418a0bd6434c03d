"""Recording's memory: RSS growth per minute of `hild run` with and without --record.

Two daemons run side by side for --duration seconds on the default bench (moved to free
ports, ptys in a temporary directory), one recording to a temporary MCAP file; the daemons'
RSS is sampled every --interval seconds and its growth per minute fitted (least squares) over
the samples after --warm-up seconds, when start-up allocations have settled.

    python bench/bench_record_memory.py [--duration 600] [--time-scale 1]

The daemons run the package of this source tree.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, free_port, last_events, rss_kib


def slope_per_minute(samples: list[tuple[float, int]]) -> float:
    """The least-squares growth [KiB per minute] of (seconds, KiB) samples."""
    n = len(samples)
    if n < 2:
        return float("nan")
    mt = sum(t for t, _ in samples) / n
    mk = sum(k for _, k in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    return 60.0 * sum((t - mt) * (k - mk) for t, k in samples) / var


def start(tmp: Path, name: str, time_scale: float, *extra: str) -> tuple[subprocess.Popen, Path]:
    text = (REPO / "profiles" / "bench" / "default.toml").read_text()
    text = text.replace("10110", str(free_port(socket.SOCK_DGRAM)))
    text = text.replace("10112", str(free_port(socket.SOCK_DGRAM)))
    bench = tmp / f"{name}.toml"
    bench.write_text(text)
    stderr = tmp / f"{name}.stderr"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hild.cli",
            "run",
            str(bench),
            "--run-dir",
            str(tmp / name),
            "--time-scale",
            str(time_scale),
            "--log-format",
            "json",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=open(stderr, "w"),  # noqa: SIM115
        text=True,
        cwd=REPO,
        env=env,
    )
    assert proc.stdout is not None
    while "Ctrl-C stops" not in (line := proc.stdout.readline()):
        if not line and proc.poll() is not None:
            raise SystemExit(f"hild run ended:\n{stderr.read_text()[-3000:]}")
    return proc, stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds (600)")
    parser.add_argument("--interval", type=float, default=10.0, help="between samples (10)")
    parser.add_argument("--warm-up", type=float, default=60.0, help="not fitted (60)")
    parser.add_argument("--time-scale", type=float, default=1.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        record = tmp / "run.mcap"
        runs = {
            "without --record": start(tmp, "plain", args.time_scale),
            "with --record": start(tmp, "record", args.time_scale, "--record", str(record)),
        }
        samples: dict[str, list[tuple[float, int]]] = {k: [] for k in runs}
        t0 = time.monotonic()
        while (now := time.monotonic() - t0) < args.duration:
            for key, (proc, _) in runs.items():
                samples[key].append((now, rss_kib(proc.pid)))
            time.sleep(args.interval)
        summaries = {}
        for key, (proc, stderr) in runs.items():
            proc.terminate()
            proc.wait(30)
            with open(stderr) as f:
                summaries[key] = last_events(f, "run.summary").get("run.summary", {})
        size = record.stat().st_size if record.exists() else 0
    print(
        f"RSS of `hild run` (default bench, time scale {args.time_scale:g}) over "
        f"{args.duration:g} s, fitted after {args.warm_up:g} s:"
    )
    for key, points in samples.items():
        fitted = [(t, k) for t, k in points if t >= args.warm_up]
        print(
            f"  {key:<17} {points[0][1] / 1024:6.1f} MiB at start, "
            f"{points[-1][1] / 1024:6.1f} MiB at the end, growth "
            f"{slope_per_minute(fitted):+7.1f} KiB/min"
        )
    recorded = summaries["with --record"].get("record", {})
    print(
        f"  recording: {size / 1e6:.1f} MB, {recorded.get('messages')} messages, "
        f"dropped {recorded.get('dropped')}, error {recorded.get('error')!r}"
    )
    print(
        "  samples (s, KiB without, KiB with): "
        + ", ".join(f"{t:.0f} {a} {b}" for (t, a), (_, b) in zip(*samples.values(), strict=True))
    )


if __name__ == "__main__":
    main()
