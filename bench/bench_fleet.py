"""Benchmark: what a fleet of N boats costs a tick, against one boat's in the same run.

One world (hild/world/world.py) per row, stepped tick after tick in this process as the
real-time driver steps it, without its clock or its ports: N Otters at 100 Hz in calm water,
each with a GNSS compass (GGA, RMC, VTG, HDT at 1 Hz), a heading sensor (HDT, ROT at 10 Hz) and
an AIS receiver (10 Hz epochs) hearing the other boats and 5 traffic targets on courses. Rows
for 1, 2, 5, 10 and 20 boats: ticks per second, the share of one core a real-time run at 100 Hz
takes for them (100 / ticks per second), and the cost per boat against one boat's.

    python bench/bench_fleet.py [--seconds 60] [--boats 1,2,5,10,20]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from hild.bench import load_bench
from hild.world.world import World

RATE_HZ = 100
HEAD = f"""
[bench]
name = "fleet"
rate_hz = {RATE_HZ}
start_time = "2026-06-01T12:00:00Z"
run_dir = "{{run_dir}}"
[origin]
latitude = 59.41
longitude = 10.48
[weather]
preset = "calm"
"""
BOAT = """
[[boat]]
name = "b{i}"
profile = "otter"
north = {north}
east = {east}
heading_deg = {heading}
speed = 1.5
mmsi = {mmsi}
class = "{ais_class}"
[boat.commands]
"port.rpm" = 700
"starboard.rpm" = 700
[[device]]
name = "b{i}-gps"
type = "gps"
boat = "b{i}"
sentences = ["GGA", "RMC", "VTG", "HDT"]
ports = ["udp://127.0.0.1:{gps}"]
[[device]]
name = "b{i}-heading"
type = "heading"
boat = "b{i}"
rate_hz = 10
ports = ["udp://127.0.0.1:{gps}"]
[[device]]
name = "b{i}-ais"
type = "ais"
boat = "b{i}"
ports = ["udp://127.0.0.1:{ais}"]
"""
TARGET = """
[[traffic]]
name = "t{j}"
mmsi = {mmsi}
[traffic.course]
north = {north}
east = {east}
course_deg = {course}
speed_kn = 8
"""


def bench_text(boats: int, run_dir: Path) -> str:
    """N boats on a circle of 50 m per boat (none closer than its length), 5 targets beyond."""
    radius = 50.0 * boats
    parts = [HEAD.format(run_dir=run_dir)]
    for i in range(boats):
        a = 2.0 * math.pi * i / boats
        parts.append(
            BOAT.format(
                i=i,
                north=round(radius * math.cos(a), 2),
                east=round(radius * math.sin(a), 2),
                heading=round(math.degrees(a) + 90.0, 1) % 360.0,
                mmsi=257100000 + i,
                ais_class="A" if i % 2 == 0 else "B",
                gps=30000 + 10 * i,
                ais=30001 + 10 * i,
            )
        )
    for j in range(5):
        a = 2.0 * math.pi * j / 5
        parts.append(
            TARGET.format(
                j=j,
                mmsi=257200000 + j,
                north=round(2000.0 * math.cos(a), 1),
                east=round(2000.0 * math.sin(a), 1),
                course=round(math.degrees(a) + 180.0, 1) % 360.0,
            )
        )
    return "".join(parts)


def ticks_per_second(boats: int, seconds: float) -> tuple[float, int]:
    """A world of ``boats`` stepped for ``seconds`` of simulated time: ticks per second of wall
    time, and the sentences its devices made."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fleet.toml"
        path.write_text(bench_text(boats, Path(folder) / "run"))
        world = World(load_bench(path), duration=seconds)
        world.start_utc = datetime(2026, 6, 1, 12, tzinfo=UTC)
        for _ in range(200):  # compiled and warm
            world.tick()
        n = round(seconds * RATE_HZ)
        lines = 0
        started = time.perf_counter()
        for _ in range(n):
            for _, out in world.tick():
                lines += len(out)
        return n / (time.perf_counter() - started), lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="simulated seconds a row")
    parser.add_argument("--boats", default="1,2,5,10,20", help="the rows' fleet sizes")
    args = parser.parse_args()
    sizes = [int(n) for n in args.boats.split(",")]
    rows = [(n, *ticks_per_second(n, args.seconds)) for n in sizes]
    one = rows[0][1] if rows[0][0] == 1 else None
    print(
        f"{'boats':>5} {'ticks/s':>9} {'boat-steps/s':>12} {'core at 100 Hz':>15} "
        f"{'per boat vs one':>16} {'sentences':>10}"
    )
    for n, rate, lines in rows:
        per_boat = f"{one / (rate * n):.2f}" if one else "-"
        print(
            f"{n:>5} {rate:>9,.0f} {rate * n:>12,.0f} {100.0 * RATE_HZ / rate:>14.1f}% "
            f"{per_boat:>16} {lines:>10,}"
        )


if __name__ == "__main__":
    main()
