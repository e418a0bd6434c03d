"""A command port under a flood from another sender: does the real controller still get through?

`hild run` as a subprocess with a jet-controller (watchdog 0.5 s) on one command port; a
controller in this process sends a valid TRC every 0.1 s (10 Hz) for --duration s, while
another process floods the same port with malformed lines (a TRC with a bad checksum) at
--rate a second: datagrams from another source port for UDP, a second connection for TCP,
another writer of the same pty. Each port type is run first without the flood (the baseline,
in the same run), then with it. Printed: the controller's commands applied / sent, watchdog
trips, the daemon's overruns and CPU, and what it discarded of the flood.

    python bench/bench_flood.py [--duration 20] [--rate 50000] [--ports udp,tcp,pty]

The flooder is Python too: on a loaded machine it may not reach --rate; its real rate is
printed beside each row.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
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
    return "pty://jets"


class Endpoint:
    """How a writer reaches the command port: a UDP socket, a TCP connection or the pty."""

    def __init__(self, kind: str, url: str, run_dir: Path):
        self.kind = kind
        if kind == "pty":
            self.fd = os.open(run_dir / "jets", os.O_RDWR | os.O_NOCTTY)
            return
        host_port = url.split("//")[1].split("?")[0]
        host, port = host_port.rsplit(":", 1)
        self.address = (host, int(port))
        if kind == "udp":
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.sock.bind(("127.0.0.1", 0))
        else:
            self.sock = socket.create_connection(self.address, timeout=5)
            self.sock.settimeout(None)  # blocking: sendall waits, recv(MSG_DONTWAIT) does not

    def send(self, data: bytes) -> None:
        if self.kind == "pty":
            os.write(self.fd, data)
        elif self.kind == "udp":
            self.sock.sendto(data, self.address)
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
        else:
            self.sock.close()


def flood(kind: str, url: str, run_dir: str, rate: float, stop_at: float, sent) -> None:
    """Send malformed lines at rate a second until stop_at (time.monotonic()), in batches."""
    end = Endpoint(kind, url, Path(run_dir))
    n, start = 0, time.monotonic()
    try:
        while (now := time.monotonic()) < stop_at:
            due = int((now - start) * rate)
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


def run(kind: str, rate: float, duration: float) -> dict:
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
                stdout=subprocess.PIPE, stderr=err, text=True, cwd=REPO,
            )  # fmt: skip
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
                target=flood, args=(kind, url, str(run_dir), rate, start + duration + 0.5,
                                    sent_by_flood),
            )  # fmt: skip
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
    stats = summary["ports"][url if kind != "pty" else next(iter(summary["ports"]))]
    return {
        "port": kind,
        "flood": f"{sent_by_flood.value / duration:,.0f}/s" if rate > 0 else "none",
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
    parser.add_argument("--ports", default="udp,tcp,pty")
    args = parser.parse_args()
    print(f"controller: TRC at 10 Hz for {args.duration:g} s; flood: malformed TRC lines at "
          f"{args.rate:,.0f}/s from another sender; 100 Hz loop")  # fmt: skip
    print(
        "| port | flood (real rate) | applied / sent | watchdog trips | overruns / ticks "
        "| CPU | lines decoded and refused | datagrams discarded unread |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind in args.ports.split(","):
        for rate in (0.0, args.rate):
            r = run(kind, rate, args.duration)
            share = 100.0 * r["applied"] / r["sent"]
            print(f"| {r['port']} | {r['flood']} | {r['applied']} / {r['sent']} ({share:.1f} %) "
                  f"| {r['trips']} | {r['overruns']} / {r['ticks']} | {r['cpu']} % "
                  f"| {r['refused_lines']:,} | {r['throttled']:,} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
