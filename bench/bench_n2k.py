"""Benchmark: what NMEA 2000 output costs, against the same sensors on NMEA 0183, in one run.

Two worlds of the default boat (Odin at 100 Hz in calm water), stepped tick after tick in this
process as the real-time driver steps them, without the clock or the ports: one with the 0183
sensors of the default bench (a GNSS compass at 1 Hz, a heading sensor at 10 Hz, an anemometer
and a speed log at 1 Hz), one with their NMEA 2000 kinds at their default rates (the GNSS
compass's and heading sensor's rapid PGNs at 10 Hz, 129029/126992/127258 at 1 Hz, wind at 10
Hz, speed at 1 Hz), as YDRAW lines. Rows alternate, each the best of its repeats: ticks per
second, the share of a core a real-time run at 100 Hz takes, lines a second, and the N2K
world's cost over the 0183 one's, in that share.

    python bench/bench_n2k.py [--seconds 60] [--repeats 3]

Where PyPI's ``nmea2000`` package is installed (not a dependency of hild: ``pip install
nmea2000``), a last row times one 129025 message both ways: hild's encoder from values to its
YDRAW line, and that package's encoder from its decoded message to the same line.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from hild.bench import load_bench
from hild.world.world import World

HEAD = """
[bench]
name = "n2k-cost"
rate_hz = 100
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"
[vessel]
profile = "odin"
speed = 5.0
[origin]
latitude = 59.41
longitude = 10.48
[weather]
preset = "calm"
wind_speed = 8.0
"""
DEVICE = """
[[device]]
name = "{name}"
type = "{type}"
ports = ["udp://127.0.0.1:{port}"]
"""
NMEA0183 = (("gps", "gps"), ("heading", "heading"), ("wind", "anemometer"), ("log", "speed-log"))
NMEA2000 = (
    ("gps", "n2k-gnss"),
    ("heading", "n2k-compass"),
    ("wind", "n2k-wind"),
    ("log", "n2k-speed"),
)


def world_of(kinds, folder: Path, seconds: float) -> World:
    text = HEAD.format(run_dir=folder / "run")
    for i, (name, type_) in enumerate(kinds):
        text += DEVICE.format(name=name, type=type_, port=41500 + i)
    path = folder / "bench.toml"
    path.write_text(text)
    world = World(load_bench(path), duration=seconds)
    world.start_utc = datetime(2026, 6, 1, 12, tzinfo=UTC)
    return world


def ticks_per_second(kinds, seconds: float) -> tuple[float, float]:
    """Ticks per wall second over ``seconds`` of simulated time, and lines per simulated
    second."""
    with tempfile.TemporaryDirectory() as folder:
        world = world_of(kinds, Path(folder), seconds + 2.0)
        for _ in range(200):  # compiled and warm
            world.tick()
        n = round(seconds * 100)
        lines = 0
        started = time.perf_counter()
        for _ in range(n):
            for _, out in world.tick():
                lines += len(out)
        return n / (time.perf_counter() - started), lines / seconds


def encoders(n: int = 20_000) -> tuple[float, float] | None:
    """Seconds per 129025 line: hild's (values to a YDRAW line) and the nmea2000 package's
    (its message to the frame's line); None where that package is not installed."""
    try:
        from nmea2000.decoder import NMEA2000Decoder
        from nmea2000.encoder import create_encoder
    except ImportError:
        return None
    from hild.n2k import pgns
    from hild.n2k.frames import Sequences, frames_of
    from hild.n2k.lines import ydraw

    message = NMEA2000Decoder().decode("12:00:00.100 R 09F8010A 2D 3F 69 23 0F 1F 3F 06")
    encoder = create_encoder("can_frame_ascii_raw_out")
    started = time.perf_counter()
    for _ in range(n):
        encoder.encode(message)
    theirs = (time.perf_counter() - started) / n
    sequences, now = Sequences(), datetime(2026, 6, 1, 12, tzinfo=UTC)
    started = time.perf_counter()
    for _ in range(n):
        payload = pgns.position_rapid(59.4100013, 10.4800015)
        ydraw(frames_of(129025, payload, 2, 10, sequences, False), now)
    ours = (time.perf_counter() - started) / n
    return ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="simulated seconds a row")
    parser.add_argument("--repeats", type=int, default=3, help="rows of each, alternating")
    args = parser.parse_args()
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.repeats):
        for label, kinds in (("NMEA 0183", NMEA0183), ("NMEA 2000", NMEA2000)):
            rate, lines = ticks_per_second(kinds, args.seconds)
            if label not in best or rate > best[label][0]:
                best[label] = (rate, lines)
    print(f"{'sensors':>10} {'ticks/s':>9} {'core at 100 Hz':>15} {'lines/s':>8}")
    for label, (rate, lines) in best.items():
        print(f"{label:>10} {rate:>9,.0f} {100.0 * 100 / rate:>14.2f}% {lines:>8.0f}")
    (r0, _), (r2, _) = best["NMEA 0183"], best["NMEA 2000"]
    print(f"NMEA 2000 over NMEA 0183: {100.0 * 100 * (1 / r2 - 1 / r0):+.2f} % of a core")
    timed = encoders()
    if timed is not None:
        ours, theirs = timed
        print(
            f"129025 to a line: hild {ours * 1e6:.1f} us, the nmea2000 package {theirs * 1e6:.1f} "
            f"us from its message ({theirs / ours:.1f} times hild's)"
        )


if __name__ == "__main__":
    main()
