"""A command port under a flood from another sender: does the real controller still get through?

`hild run` as a subprocess with a jet-controller (watchdog 0.5 s) on one command port; a
controller in this process sends a valid TRC every 0.1 s (10 Hz) for --duration s, while
another process floods the same port with malformed lines (a TRC with a bad checksum) at
--rate a second: datagrams from --sources source ports for UDP (one process, its sockets in
turn), a second connection for TCP, another writer of the same pty (4 kB a write), or, for
`pty-burst`, a megabyte written to the pty in one call every 2 s. Each port type is run
first without the flood (the baseline, in the same run), then with it, once per number of
source ports. Printed: the controller's commands applied / sent, watchdog trips, the
daemon's overruns and CPU, its command latency (read to applied, p99), and what it did with
the flood: decoded and refused, or discarded unread (throttled: screened out, or a UDP
sender's datagrams not read).

    python bench/bench_flood.py [--duration 20] [--rate 50000] [--sources 1,16,70,200,1000]
                                [--ports udp,tcp,pty,pty-burst]

The flooder is Python too: on a loaded machine it may not reach --rate; its real rate is
printed beside each row.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from common import REPO, free_port

from hild.nmea.encode import frame

COMMAND = frame("RCTRC,0,1500.0,R,100.0,P,,B,C")
GARBAGE = frame("RCTRC,0,1500.0,R,100.0,P,,B,C")[:-4] + b"00\r\n"  # a bad checksum
COMMAND_PERIOD_S = 0.1
BURST_BYTES = 1_000_000  # pty-burst: written in one call
BURST_EVERY_S = 2.0

BENCH = """
[bench]
rate_hz = 100
seed = 1
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"
[vessel]
profile = "odin"
[[device]]
name = "jets"
type = "jet-controller"
rate_hz = 5
ports = ["{url}"]
[device.settings]
watchdog_s = 0.5
"""


def command_url(kind: str) -> str:
    if kind == "udp":
        return f"udp://127.0.0.1:{free_port(socket.SOCK_DGRAM)}?listen=1"
    if kind == "tcp":
        return f"tcp://127.0.0.1:{free_port(socket.SOCK_STREAM)}"
    return "pty://jets"  # pty and pty-burst


class Endpoint:
    """How a writer reaches the command port: a UDP socket, a TCP connection or the pty."""

    def __init__(self, kind: str, url: str, run_dir: Path, sources: int = 1):
        self.kind = kind = "pty" if kind == "pty-burst" else kind
        self.turn = 0
        if kind == "pty":
            self.fd = os.open(run_dir / "jets", os.O_RDWR | os.O_NOCTTY)
            return
        host_port = url.split("//")[1].split("?")[0]
        host, port = host_port.rsplit(":", 1)
        self.address = (host, int(port))
        if kind == "udp":
            self.socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(sources)]
            for sock in self.socks:
                sock.bind(("127.0.0.1", 0))
            self.sock = self.socks[0]
        else:
            self.sock = socket.create_connection(self.address, timeout=5)
            self.sock.settimeout(None)  # blocking: sendall waits, recv(MSG_DONTWAIT) does not

    def send(self, data: bytes) -> None:
        if self.kind == "pty":
            os.write(self.fd, data)
        elif self.kind == "udp":  # from each source port in turn
            self.turn = (self.turn + 1) % len(self.socks)
            self.socks[self.turn].sendto(data, self.address)
        else:
            self.sock.sendall(data)

    def drain(self) -> None:
        """Read what the port wrote back, without waiting (a TCP connection only)."""
        if self.kind != "tcp":
            return
        with contextlib.suppress(BlockingIOError):
            while self.sock.recv(65536, socket.MSG_DONTWAIT):
                pass

    def close(self) -> None:
        if self.kind == "pty":
            os.close(self.fd)
        elif self.kind == "udp":
            for sock in self.socks:
                sock.close()
        else:
            self.sock.close()


def flood(
    kind: str, url: str, run_dir: str, rate: float, stop_at: float, sent, sources: int
) -> None:
    """Send malformed lines at rate a second until stop_at (time.monotonic()), in batches."""
    end = Endpoint(kind, url, Path(run_dir), sources)
    n, start = 0, time.monotonic()
    burst = GARBAGE * (BURST_BYTES // len(GARBAGE))
    try:
        while (now := time.monotonic()) < stop_at:
            due = int((now - start) * rate)
            if kind == "pty-burst":  # a megabyte in one write (the tty takes it whole)
                end.send(burst)
                n += len(burst) // len(GARBAGE)
                time.sleep(max(0.0, BURST_EVERY_S - (time.monotonic() - now)))
                continue
            if kind == "udp":
                with contextlib.suppress(OSError):  # nobody there (yet): a datagram lost
                    while n < due:
                        n += 1
                        end.send(GARBAGE)
            elif due > n:  # a stream: the lines due, at most ~4 kB a write
                end.drain()  # read what the port writes back: a silent client would be dropped
                lines = min(due - n, 4096 // len(GARBAGE))
                end.send(GARBAGE * lines)
                n += lines
            time.sleep(0.0005)
    except OSError:
        pass
    finally:
        sent.value = n
        end.close()


def run(kind: str, rate: float, duration: float, sources: int = 1) -> dict:
    """One run: the controller for duration s, with a flood at rate a second if rate > 0."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        url = command_url(kind)
        bench = Path(tmp) / "bench.toml"
        bench.write_text(textwrap.dedent(BENCH).format(run_dir=run_dir, url=url))
        err_path = Path(tmp) / "stderr"
        with open(err_path, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "hild.cli", "run", str(bench), "--log-format", "json"],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                cwd=REPO,
            )
        assert proc.stdout is not None
        for line in proc.stdout:
            if "Ctrl-C stops" in line:
                break
        controller = Endpoint(kind, url, run_dir)
        sent_by_flood = multiprocessing.Value("q", 0)
        start = time.monotonic()
        flooder = None
        if rate > 0:
            flooder = multiprocessing.get_context("fork").Process(
                target=flood,
                args=(
                    kind,
                    url,
                    str(run_dir),
                    rate,
                    start + duration + 0.5,
                    sent_by_flood,
                    sources,
                ),
            )
            flooder.start()
            time.sleep(0.5)  # the flood is on before the first command
        sent = 0
        first = time.monotonic()
        while sent < duration / COMMAND_PERIOD_S:
            time.sleep(max(0.0, first + sent * COMMAND_PERIOD_S - time.monotonic()))
            controller.send(COMMAND)
            sent += 1
        time.sleep(0.05)  # the last command is read, well inside its lease of 0.5 s
        proc.send_signal(signal.SIGTERM)
        if flooder is not None:
            flooder.join(30)
        proc.wait(60)
        controller.close()
        log = err_path.read_text().splitlines()
    events = [json.loads(line) for line in log if line.startswith("{")]
    summary = next(e for e in reversed(events) if e["event"] == "run.summary")
    jets = summary["devices"]["jets"]
    stats = summary["ports"][url if not url.startswith("pty") else next(iter(summary["ports"]))]
    return {
        "port": kind,
        "flood": f"{sent_by_flood.value / duration:,.0f}/s" if rate > 0 else "none",
        "sources": sources if kind == "udp" and rate > 0 else "",
        "latency_p99_ms": summary["command_latency_p99_ms"],
        "applied": jets["commands"],
        "sent": sent,
        "trips": jets["watchdog_trips"],
        "overruns": summary["overruns"],
        "ticks": summary["ticks"],
        "cpu": summary["cpu_percent"],
        "refused_lines": sum(jets["rejected"].values()),
        "throttled": stats.get("throttled", 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=50_000.0, help="flood lines per second")
    parser.add_argument("--sources", default="1,16,70,200,1000", help="UDP source ports")
    parser.add_argument("--ports", default="udp,tcp,pty,pty-burst")
    args = parser.parse_args()
    need = max(int(n) for n in args.sources.split(",")) + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    print(
        f"controller: TRC at 10 Hz for {args.duration:g} s; flood: malformed TRC lines at "
        f"{args.rate:,.0f}/s from another sender (pty-burst: {BURST_BYTES:,} bytes in one "
        f"write every {BURST_EVERY_S:g} s); 100 Hz loop"
    )
    print(
        "| port | flood (real rate) | source ports | applied / sent | watchdog trips "
        "| overruns / ticks | CPU | command latency p99 | lines decoded and refused "
        "| discarded unread |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind in args.ports.split(","):
        floods = (
            [(args.rate, int(n)) for n in args.sources.split(",")]
            if kind == "udp"
            else [(args.rate, 1)]
        )
        for rate, sources in [(0.0, 1), *floods]:
            r = run(kind, rate, args.duration, sources)
            share = 100.0 * r["applied"] / r["sent"]
            print(
                f"| {r['port']} | {r['flood']} | {r['sources']} "
                f"| {r['applied']} / {r['sent']} ({share:.1f} %) "
                f"| {r['trips']} | {r['overruns']} / {r['ticks']} | {r['cpu']} % "
                f"| {r['latency_p99_ms']} ms | {r['refused_lines']:,} | {r['throttled']:,} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
