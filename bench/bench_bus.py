"""The command path: lines per second the bus decodes, and command latency in the daemon.

1. Decoding, in this process: a mix of TRC, PRC, ROR and PHLDC lines (and a share of
   malformed ones) through Odin's jet-controller, from framing to control record, against
   pynmea2.parse() of the same lines (checksum checked) as a baseline in the same run; and
   the whole inbound path from raw bytes (line splitting, dispatch, decoding, queueing).
2. Latency: `hild run` as a subprocess with a jet-controller on UDP; this script sends
   commands at --rate Hz for --duration s; the daemon measures, for each command, the time
   from its arrival (local receive time) to the start of the tick that applies it.

    python bench/bench_bus.py [--duration 20] [--rate 50]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pynmea2

from hild.bench import load_bench
from hild.bus.dispatch import Dispatcher
from hild.control import ControlQueue
from hild.devices.registry import build_device
from hild.log import configure_logging
from hild.nmea.encode import frame
from hild.transport.base import Inbound, LineSplitter, PortStats


def command_lines(n: int, seed: int = 0, invalid_share: float = 0.1) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            body = f"RCTRC,{rng.randint(0, 2)},{rng.uniform(400, 2000):.1f},R,100.0,P,,B,C"
        elif kind == 1:
            body = f"RCPRC,{rng.uniform(-100, 100):.1f},A,,V,,V,B,0"
        elif kind == 2:
            body = f"RCROR,{rng.uniform(-27, 27):.1f},A,{rng.uniform(-27, 27):.1f},A,B"
        else:
            body = f"PHLDC,0,{rng.uniform(-100, 100):.1f},{rng.uniform(-100, 100):.1f},100.0"
        line = frame(body)[:-2]
        if rng.random() < invalid_share:
            line = line[:-2] + b"00"  # a bad checksum (or, 1 in 256, a good one)
        out.append(line)
    return out


def best_rate(fn, n_items: int, repeats: int = 7) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return n_items / best


def decoding() -> None:
    bench = load_bench("default")
    config = next(d for d in bench.devices if d.model == "jet-controller")
    lines = command_lines(20_000)
    inbounds = [Inbound(line, "bench", None, 1e9) for line in lines]  # lease never expires

    def bus():
        device = build_device(config, 0, bench.origin, bench.vessel)
        for inbound in inbounds:
            device.receive(inbound)

    def baseline():
        for line in lines:
            with contextlib.suppress(pynmea2.ParseError):
                pynmea2.parse(line.decode(), check=True)

    stream = b"".join(line + b"\r\n" for line in lines)

    def inbound_path():
        device = build_device(config, 0, bench.origin, bench.vessel)
        queue = ControlQueue(maxlen=len(lines))
        dispatcher = Dispatcher(queue, lambda: 0.0)
        dispatcher.attach("bench", device)
        splitter = LineSplitter("bench", dispatcher.receive, PortStats())
        for i in range(0, len(stream), 4096):  # as a pty or serial port reads it
            splitter.feed(stream[i : i + 4096], None, 1e9)

    n = len(lines)
    bus_rate, base_rate, path_rate = (
        best_rate(bus, n),
        best_rate(baseline, n),
        best_rate(inbound_path, n),
    )
    print(f"decoding {n} command lines (TRC, PRC, ROR, PHLDC; ~10 % bad checksums), best of 7:")
    print(f"  hild bus decode (framing to control record): {bus_rate:10,.0f} lines/s")
    print(f"  pynmea2.parse (framing and fields only):     {base_rate:10,.0f} lines/s")
    print(f"  ratio: hild decodes {bus_rate / base_rate:.2f}x as many lines/s as pynmea2 parses")
    print(
        f"  whole inbound path from bytes (split, dispatch, decode, queue): {path_rate:,.0f} "
        "lines/s"
    )


BENCH = """
[bench]
rate_hz = 100
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"
[vessel]
profile = "odin"
[[device]]
name = "jets"
type = "jet-controller"
port = "udp://127.0.0.1:{port}?listen=1"
"""


def latency(duration: float, rate: float) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        bench = Path(tmp) / "bench.toml"
        bench.write_text(textwrap.dedent(BENCH).format(run_dir=Path(tmp) / "run", port=port))
        proc = subprocess.Popen(
            [sys.executable, "-m", "hild.cli", "run", str(bench), "--log-format", "json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for line in proc.stdout:
            if "Ctrl-C stops" in line:
                break
        sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        lines = command_lines(int(duration * rate) + 1, seed=1, invalid_share=0.0)
        phase = random.Random(2)
        start = time.monotonic()
        for i, line in enumerate(lines):
            # a random instant within each period: arrivals fall uniformly between ticks
            due = start + (i + phase.random()) / rate
            time.sleep(max(0.0, due - time.monotonic()))
            sender.sendto(line + b"\r\n", ("127.0.0.1", port))
        time.sleep(0.2)
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    summary = next(json.loads(x) for x in reversed(err.splitlines()) if '"run.summary"' in x)
    print(
        f"\nlatency: {summary['commands_applied']} commands over UDP at {rate:g} Hz for "
        f"{duration:g} s, 100 Hz loop:"
    )
    print(
        f"  arrival to the tick that applies it: p50 {summary['command_latency_p50_ms']} ms, "
        f"p99 {summary['command_latency_p99_ms']} ms, max {summary['command_latency_max_ms']} ms"
        f" (a tick is 10 ms: a uniform arrival waits 5 ms on average)"
    )
    print(
        f"  loop: jitter p99 {summary['jitter_p99_ms']} ms, overruns {summary['overruns']}, "
        f"CPU {summary['cpu_percent']} %"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=50.0, help="commands per second")
    args = parser.parse_args()
    configure_logging("console", "error")  # the malformed lines would each log a warning
    decoding()
    latency(args.duration, args.rate)


if __name__ == "__main__":
    main()
