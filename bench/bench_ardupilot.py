"""Benchmark: how fast hild answers ArduPilot's SITL, against the floors of the same exchange.

`hild run` (a subprocess, as a user starts it) on the built-in ``ardupilot`` bench (Odin, a GPS
and an anemometer on UDP), driven by a client in this process that sends SITL's frames and waits
for each answer, as ArduPilot's SITL does, as fast as hild answers: frames per second, and so
the largest SITL ``--speedup`` hild keeps up with at a frame rate (speedup = frames per second /
SIM_RATE_HZ). In the same run, for ratios:

- the exchange's floor: the same client against a bare Python UDP echo of a fixed answer (what
  any Python physics costs before it does anything);
- the step's floor: the same bench's ``Simulation.tick()`` in a loop in this process (the
  compiled step and its call, nothing else).

Rows for the calm bench and for gale-hs1 (waves, gusts), each at 1200 Hz (SIM_RATE_HZ's default)
and 200 Hz. The client's own time is in every row; it runs on the other core.

    python bench/bench_ardupilot.py [--frames 24000]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import REPO, free_port, last_events

from hild.ardupilot.protocol import MAGIC_16
from hild.bench import load_bench
from hild.world.build import initial_simulation

BENCH = """
[bench]
name = "bench-ardupilot"
rate_hz = {rate}
seed = 0
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"
stats_interval = 1000

[vessel]
profile = "odin"

[origin]
latitude = 59.41
longitude = 10.48

[weather]
preset = "{weather}"

[[device]]
name = "autopilot"
type = "ardupilot-sitl"
port = "udp://127.0.0.1:{port}?listen=1"

[[device]]
name = "gps"
type = "gps"
ports = ["udp://127.0.0.1:{nmea}"]

[[device]]
name = "wind"
type = "anemometer"
ports = ["udp://127.0.0.1:{nmea}"]
"""


def frame(count: int, rate: int) -> bytes:
    """SITL's frame: throttle 60 %, steering 20 % right after the first second."""
    pwm = [1600, 0, 1800] + [0] * 13 if count > rate else [0] * 16
    return struct.pack("<HHI16H", MAGIC_16, rate, count, *pwm)


def drive(port: int, frames: int, rate: int) -> float:
    """Send each frame and wait for its answer (retrying the first until the link is up, as
    SITL does); the frames per second after the first second's frames."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        s.settimeout(1.0)
        while True:
            s.sendto(frame(0, rate), ("127.0.0.1", port))
            try:
                s.recv(65000)
                break
            except TimeoutError:
                continue
        s.settimeout(10.0)
        warm = min(rate, frames // 10)
        for i in range(1, frames):
            if i == warm:
                start = time.perf_counter()
            s.sendto(frame(i, rate), ("127.0.0.1", port))
            s.recv(65000)
        return (frames - warm) / (time.perf_counter() - start)


def echo_floor(frames: int, rate: int) -> float:
    """The same client against a bare Python UDP echo of one fixed answer, in a thread of this
    process's twin (a subprocess, so the two do not share a GIL)."""
    port = free_port(socket.SOCK_DGRAM)
    answer = (
        b'\n{"timestamp":0.0,"imu":{"gyro":[0.0,0.0,0.0],"accel_body":[0.0,0.0,-9.81]},'
        b'"position":[0.0,0.0,0.0],"attitude":[0.0,0.0,0.0],"velocity":[0.0,0.0,0.0]}\n'
    )
    code = (
        f"import socket\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
        f"s.bind(('127.0.0.1',{port}))\nwhile True:\n d,a=s.recvfrom(100)\n"
        f" s.sendto({answer!r},a)\n"
    )
    echo = subprocess.Popen([sys.executable, "-c", code])
    try:
        return drive(port, frames, rate)
    finally:
        echo.kill()
        echo.wait()


def step_floor(bench_path: Path, frames: int) -> float:
    sim = initial_simulation(load_bench(str(bench_path)))
    sim.set_command("port.rpm", 1200)
    start = time.perf_counter()
    for _ in range(frames):
        sim.tick()
    return frames / (time.perf_counter() - start)


def hild_row(folder: Path, weather: str, rate: int, frames: int) -> tuple[float, float, dict]:
    port, nmea = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_DGRAM)
    bench = folder / f"{weather}-{rate}.toml"
    bench.write_text(
        BENCH.format(rate=rate, run_dir=folder / "run", weather=weather, port=port, nmea=nmea)
    )
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # the NMEA's reader
    sink.bind(("127.0.0.1", nmea))
    sink.settimeout(0.2)
    reading = threading.Event()

    def read() -> None:
        while not reading.is_set():
            with contextlib.suppress(TimeoutError):
                sink.recv(65000)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    log = folder / f"{weather}-{rate}.log"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(log, "w") as err:
        daemon = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hild.cli",
                "run",
                str(bench),
                "--log-format",
                "json",
                "--duration",
                str(frames / rate),
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
        try:
            fps = drive(port, frames, rate)
        finally:
            daemon.wait(60)
    reading.set()
    reader.join()
    sink.close()
    summary = last_events(log.read_text().splitlines(), "run.summary")["run.summary"]
    return fps, step_floor(bench, frames), summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=24000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        echo = echo_floor(args.frames, 1200)
        print(f"exchange floor (a bare Python UDP echo): {echo:,.0f} frames/s")
        print(
            f"{'weather':10} {'rate':>6} {'frames/s':>9} {'speedup':>8} {'of echo':>8} "
            f"{'step floor/s':>13} {'answer p50/p99 ms':>18} {'cpu %':>6}"
        )
        for weather in ("calm", "gale-hs1"):
            for rate in (1200, 200):
                fps, floor, summary = hild_row(folder, weather, rate, args.frames)
                link = summary["devices"]["autopilot"]
                print(
                    f"{weather:10} {rate:>6} {fps:>9,.0f} {fps / rate:>7.1f}x "
                    f"{fps / echo:>7.0%} {floor:>13,.0f} "
                    f"{link['answer_p50_ms']:>9.3f}/{link['answer_p99_ms']:<8.3f} "
                    f"{summary['cpu_percent']:>6.1f}"
                )


if __name__ == "__main__":
    main()
