"""Soak: the example bench for a long run under TCP and UDP load; memory, deadlines, CPU.

`hild run` on profiles/bench/example.toml moved to free ports, every sensor at 10 Hz, plus
Odin's jet-controller on UDP and TCP. For --duration seconds (default 20 minutes) this
script loads it as a busy bench would:

- 20 TCP readers on the heading sensor's TCP port, and one that connects and disconnects
  every second;
- a controller sending TRC/ROR commands at 20 Hz over UDP, and another at 20 Hz over TCP;
- 2,000 datagrams a second of garbage to the jets' UDP port.

It samples the daemon's RSS every 10 s and reports RSS at the start (after 30 s) and the end,
the loop's overruns and jitter percentiles, and its CPU.

    python bench/bench_soak.py [--duration 1200]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import REPO, free_port, last_events, rss_kib

from hild.nmea.encode import frame


def bench_text(udp_out: int, tcp_heading: int, udp_jets: int, tcp_jets: int, run_dir: str) -> str:
    text = (REPO / "profiles" / "bench" / "example.toml").read_text()
    text = text.replace("udp://127.0.0.1:10110", f"udp://127.0.0.1:{udp_out}")
    text = text.replace("tcp://127.0.0.1:10111", f"tcp://127.0.0.1:{tcp_heading}")
    text = text.replace('run_dir = "/tmp/hild"', f'run_dir = "{run_dir}"')
    text = text.replace("[[device]]\n", "[[device]]\nrate_hz = 10\n")
    text = text.replace(
        'rate_hz = 10\nname = "gps"\ntype = "gps"\nrate_hz = 10\n',
        'rate_hz = 10\nname = "gps"\ntype = "gps"\n',
    )
    for name in ("heading", "wind", "speed"):  # 10 Hz needs more than their 4800 baud
        text = text.replace(f'name = "{name}"\n', f'name = "{name}"\nbaud = 38400\n')
    text += (
        '\n[[device]]\nname = "jets"\ntype = "jet-controller"\nrate_hz = 10\n'
        f'ports = ["udp://127.0.0.1:{udp_jets}?listen=1", "tcp://127.0.0.1:{tcp_jets}"]\n'
    )
    return text


class Load:
    def __init__(self, tcp_heading: int, udp_jets: int, tcp_jets: int):
        self.stop = threading.Event()
        self.ports = (tcp_heading, udp_jets, tcp_jets)
        self.threads = [
            threading.Thread(target=f, daemon=True)
            for f in (self.readers, self.churn, self.udp_commands, self.tcp_commands, self.garbage)
        ]
        self.counts = {"read_bytes": 0, "commands": 0, "garbage": 0, "reconnects": 0}

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def readers(self) -> None:
        socks = []
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", self.ports[0]))
            s.setblocking(False)
            socks.append(s)
        while not self.stop.wait(0.05):
            for s in socks:
                with contextlib.suppress(BlockingIOError):
                    self.counts["read_bytes"] += len(s.recv(65536))
        for s in socks:
            s.close()

    def churn(self) -> None:
        while not self.stop.wait(1.0):
            try:
                socket.create_connection(("127.0.0.1", self.ports[0]), timeout=1).close()
                self.counts["reconnects"] += 1
            except OSError:
                pass

    def commands(self, i: int) -> bytes:
        rpm = 800 + 400 * ((i // 100) % 3)
        return frame(f"RCTRC,0,{rpm}.0,R,100.0,P,,B,C") + frame("RCROR,5.0,A,5.0,A,B")

    def udp_commands(self) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        i = 0
        while not self.stop.wait(0.05):
            s.sendto(self.commands(i), ("127.0.0.1", self.ports[1]))
            self.counts["commands"] += 2
            i += 1

    def tcp_commands(self) -> None:
        s = socket.create_connection(("127.0.0.1", self.ports[2]))
        s.setblocking(False)
        i = 0
        while not self.stop.wait(0.05):
            try:
                s.sendall(self.commands(i))
                s.recv(65536)  # feedback, to keep the socket drained
            except (BlockingIOError, OSError):
                pass
            i += 1

    def garbage(self) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rng = random.Random(1)
        while not self.stop.wait(0.01):
            for _ in range(20):
                s.sendto(rng.randbytes(rng.randint(1, 200)), ("127.0.0.1", self.ports[1]))
                self.counts["garbage"] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=1200.0)
    args = parser.parse_args()
    ports = (
        free_port(socket.SOCK_DGRAM),
        free_port(socket.SOCK_STREAM),
        free_port(socket.SOCK_DGRAM),
        free_port(socket.SOCK_STREAM),
    )
    with tempfile.TemporaryDirectory() as tmp:
        bench = Path(tmp) / "soak.toml"
        bench.write_text(bench_text(*ports, run_dir=str(Path(tmp) / "run")))
        stderr = open(Path(tmp) / "stderr", "w+")  # noqa: SIM115
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hild.cli",
                "run",
                str(bench),
                "--duration",
                str(args.duration),
                "--log-format",
                "json",
                "--stats-interval",
                "10",
            ],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        while "Ctrl-C stops" not in (line := proc.stdout.readline()):
            if not line and proc.poll() is not None:
                stderr.seek(0)
                raise SystemExit(f"hild run ended:\n{stderr.read()[-3000:]}")
        load = Load(ports[1], ports[2], ports[3])
        load.start()
        t0 = time.monotonic()
        rss = []
        while proc.poll() is None:
            time.sleep(10.0)
            if proc.poll() is None:
                rss.append((round(time.monotonic() - t0), rss_kib(proc.pid)))
        load.stop.set()
        stderr.seek(0)
        summary = last_events(stderr, "run.summary").get("run.summary", {})
    start = next((kib for t, kib in rss if t >= 30), rss[0][1] if rss else 0)
    print(
        f"soak: example bench, all sensors at 10 Hz, {args.duration:g} s under load {load.counts}"
    )
    print(
        f"RSS: {start / 1024:.1f} MiB after 30 s, {rss[-1][1] / 1024:.1f} MiB at the end "
        f"(max {max(k for _, k in rss) / 1024:.1f} MiB)"
    )
    print(
        f"ticks {summary.get('ticks')}, overruns {summary.get('overruns')}, jitter p50 "
        f"{summary.get('jitter_p50_ms')} ms, p99 {summary.get('jitter_p99_ms')} ms, max "
        f"{summary.get('jitter_max_ms')} ms, CPU {summary.get('cpu_percent')} %"
    )
    print(
        f"commands applied {summary.get('commands_applied')}, rejected "
        f"{summary.get('commands_rejected')}"
    )


if __name__ == "__main__":
    main()
