"""Benchmark: what traffic costs the daemon. The same bench at 100 Hz with and without 20
traffic targets and an AIS receiver reporting them, alternated, CPU per cent of one core.

The bench: Odin under way in calm water with a GNSS compass, an anemometer and a speed log
at 10 Hz on ptys and UDP (bench_daemon.py's reader drains every pty and the UDP port as
clients would). With traffic: 20 targets around her (ten Class A on courses at 6 to 20 kn,
four Class A encounters that give way by COLREG, two at anchor, four Class B) and an ``ais``
device at its default 10 Hz on its own pty and the UDP port. Both rows of a pair run one
after the other, so that they share the machine's load; ``--repeat N`` alternates N pairs
and prints the median and range of the difference, so that it can be told from run-to-run
noise. Goal (issue 25): under 0.3 % of a core more with traffic.

    python bench/bench_traffic.py [--duration 60] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import tempfile
from pathlib import Path
from statistics import median

from bench_daemon import run

BENCH = """
[bench]
name = "traffic-bench"
rate_hz = 100
run_dir = "{run_dir}"
stats_interval = 1000

[vessel]
profile = "odin"
speed = 5.5
[vessel.commands]
"port.rpm" = 1800
"starboard.rpm" = 1800
"port.deflector" = 1
"starboard.deflector" = 1

[weather]
preset = "calm"

[[device]]
name = "gps"
type = "gps"
rate_hz = 10
baud = 115200
ports = ["pty://gps", "udp://127.0.0.1:{udp}"]

[[device]]
name = "wind"
type = "anemometer"
rate_hz = 10
baud = 38400
ports = ["pty://wind", "udp://127.0.0.1:{udp}"]

[[device]]
name = "speed"
type = "speed-log"
rate_hz = 10
baud = 38400
ports = ["pty://speed", "udp://127.0.0.1:{udp}"]
"""

AIS = """
[[device]]
name = "ais"
type = "ais"
ports = ["pty://ais", "udp://127.0.0.1:{udp}"]
"""


def targets() -> str:
    """20 targets: courses, encounters, ships at anchor, Class B craft."""
    out = []
    for i in range(20):
        mmsi = 257200000 + i
        head = f'\n[[traffic]]\nname = "t{i:02d}"\nmmsi = {mmsi}\ndimensions = [60, 15, 6, 6]\n'
        angle = 2 * math.pi * i / 20
        north, east = 3000 * math.cos(angle), 3000 * math.sin(angle)
        if i < 10:
            out.append(
                head + f"[traffic.course]\nnorth = {north:.0f}\neast = {east:.0f}\n"
                f"course_deg = {(i * 37) % 360}\nspeed_kn = {6 + 1.5 * i:.1f}\n"
            )
        elif i < 14:
            situation = ("head-on", "crossing-stand-on", "overtaken", "crossing-give-way")[i - 10]
            out.append(
                head + 'behaviour = "colreg"\n[traffic.encounter]\n'
                f'situation = "{situation}"\nspeed_kn = {12 + (i == 12) * 6}\n'
                f"cpa_m = 0\ntcpa_s = {120 + 30 * (i - 10)}\n"
            )
        elif i < 16:
            out.append(
                head + f'nav_status = "at-anchor"\n[traffic.course]\nnorth = {north:.0f}'
                f"\neast = {east:.0f}\ncourse_deg = 0\nspeed_kn = 0\n"
            )
        else:
            out.append(
                head.replace("[60, 15, 6, 6]", "[8, 3, 2, 2]") + 'class = "B"\n'
                f"[traffic.course]\nnorth = {north:.0f}\neast = {east:.0f}\n"
                f"course_deg = {(i * 53) % 360}\nspeed_kn = {1 + 5 * (i - 16)}\n"
            )
    return "".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds per run (60)")
    parser.add_argument("--repeat", type=int, default=3, help="pairs of runs, alternated (3)")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    udp = sock.getsockname()[1]
    rows: dict[str, list[dict]] = {"plain": [], "traffic": []}
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "plain.toml"
        busy = Path(tmp) / "traffic.toml"
        plain.write_text(BENCH.format(run_dir=Path(tmp) / "a", udp=udp))
        busy.write_text(
            BENCH.format(run_dir=Path(tmp) / "a", udp=udp) + AIS.format(udp=udp) + targets()
        )
        for k in range(args.repeat):
            for name, path in (("plain", plain), ("traffic", busy)):
                run_dir = Path(tmp) / f"run{k}-{name}"
                rows[name].append(run([str(path)], run_dir, args.duration, sock))
    print(
        f"hild run, 100 Hz, {args.duration:g} s each, {args.repeat} alternated pairs, "
        f"{os.cpu_count()} cores"
    )
    print(
        f"{'bench':<34} {'CPU % median (range)':>22} {'p99 ms':>7} {'overruns':>8} "
        f"{'AIS sentences':>13}"
    )
    for name, label in (
        ("plain", "3 sensors, no traffic"),
        ("traffic", "+ 20 targets and an AIS receiver"),
    ):
        cpu = sorted(s["cpu_percent"] for s in rows[name])
        p99 = median(s["jitter_p99_ms"] for s in rows[name])
        overruns = sum(s["overruns"] for s in rows[name])
        ais = median(s["devices"].get("ais", {}).get("sentences", 0) for s in rows[name])
        print(
            f"{label:<34} {median(cpu):>8.2f} ({cpu[0]:.2f}-{cpu[-1]:.2f}) {p99:>7.3f} "
            f"{overruns:>8} {ais:>13.0f}"
        )
    diffs = sorted(
        b["cpu_percent"] - a["cpu_percent"]
        for a, b in zip(rows["plain"], rows["traffic"], strict=True)
    )
    print(
        f"traffic costs {median(diffs):+.2f} % of a core (pairs: "
        f"{', '.join(f'{d:+.2f}' for d in diffs)}); goal: under +0.30 %"
    )


if __name__ == "__main__":
    main()
