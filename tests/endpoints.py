"""Test-side endpoints: a running daemon, and readers on real ptys, UDP and TCP sockets."""

from __future__ import annotations

import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
import tty
from pathlib import Path

import pynmea2

from hild.nmea import extra_types  # noqa: F401  (THS)


class Daemon:
    """`hild run ...` as a subprocess; waits for its banner, stops it with SIGTERM."""

    def __init__(self, *args: str, tmp: Path):
        self.stderr_path = tmp / "daemon.stderr"
        self._stderr = open(self.stderr_path, "w")  # noqa: SIM115  (lives as long as the process)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hild.cli", "run", *args, "--log-format", "json"],
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self.banner = self._read_banner()

    def _read_banner(self, timeout: float = 120.0) -> str:
        fd, text = self.proc.stdout.fileno(), b""
        deadline = time.monotonic() + timeout
        while b"Ctrl-C stops" not in text and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                text += chunk
            elif self.proc.poll() is not None:
                break
        if b"Ctrl-C stops" not in text:
            raise AssertionError(f"no banner: {text!r}\n{self.stderr()}")
        return text.decode()

    def stderr(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text()

    def events(self, name: str) -> list[dict]:
        out = []
        for line in self.stderr().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == name:
                out.append(event)
        return out

    def stop(self, timeout: float = 10.0) -> dict:
        """SIGTERM; returns the final run.summary event."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout)
        self._stderr.close()
        summaries = self.events("run.summary")
        assert summaries, self.stderr()
        return summaries[-1]

    def overruns_per_window(self) -> list[int]:
        """Overruns in each `loop.stats` window (one per `--stats-interval`)."""
        return [window["overruns"] for window in self.events("loop.stats")]

    def wait(self, timeout: float) -> dict:
        self.proc.wait(timeout)
        self._stderr.close()
        return self.events("run.summary")[-1]


def typical_window_keeps_deadlines(overruns_per_window: list[int]) -> bool:
    """At most one overrun in the median stats window.

    This shared 2-core machine now and then holds every process off the core for a few hundred
    ms (43 overruns in one second seen once in CI; three bad seconds out of nine in another), so
    a bound on the total or on every window fails on load that is not hild's. A loop that waits
    on a socket, a broker or a disk overruns at every wait, in every window, and fails this.
    """
    ordered = sorted(overruns_per_window)
    return bool(ordered) and ordered[len(ordered) // 2] <= 1


class LineCollector:
    """Collects NMEA lines with their arrival times in a background thread."""

    def __init__(self):
        self.lines: list[tuple[float, bytes]] = []
        self._buffer = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> LineCollector:
        self._thread.start()
        return self

    def feed(self, data: bytes) -> None:
        now = time.monotonic()
        self._buffer += data
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            self.lines.append((now, line + b"\n"))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2.0)

    def sentences(self, kind: str | None = None) -> list[tuple[float, pynmea2.NMEASentence]]:
        """Parsed sentences (checksums verified) of one type, with arrival times."""
        out = []
        for t, raw in list(self.lines):
            assert raw.endswith(b"\r\n") and len(raw) <= 82, raw
            msg = pynmea2.parse(raw.decode("ascii").strip(), check=True)
            name = getattr(msg, "sentence_type", None) or type(msg).__name__
            if kind is None or name == kind:
                out.append((t, msg))
        return out

    def epochs(self) -> list[dict[str, pynmea2.NMEASentence]]:
        """Sentences grouped by epoch: each GGA starts one, the ones after it belong to it."""
        out: list[dict] = []
        for _, msg in self.sentences():
            name = getattr(msg, "sentence_type", None) or type(msg).__name__
            if name == "GGA":
                out.append({})
            if out:
                out[-1][name] = msg
        return out

    def _run(self) -> None:
        while not self._stop.is_set():
            data = self._receive()
            if data == b"":
                return  # the other end closed
            if data is not None:
                self.feed(data)

    def _receive(self) -> bytes | None:
        """Wait up to 0.1 s: the bytes that came, None for nothing yet, b"" at the end."""
        raise NotImplementedError


class PtyClient(LineCollector):
    """A program on the user's side of a virtual serial port."""

    def __init__(self, path: str | Path):
        super().__init__()
        self.fd = os.open(str(path), os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        # TCSANOW: unlike tty.setraw's default, keep what the daemon sent before we opened,
        # so a test can count every epoch from t = 0.
        tty.setraw(self.fd, termios.TCSANOW)

    def write(self, data: bytes) -> None:
        os.write(self.fd, data)

    def _receive(self) -> bytes | None:
        ready, _, _ = select.select([self.fd], [], [], 0.1)
        if not ready:
            return None
        try:
            return os.read(self.fd, 4096)
        except OSError:
            return b""

    def close(self) -> None:
        super().close()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class UdpClient(LineCollector):
    """A UDP listener on 127.0.0.1 (port 0: an ephemeral one, see .port)."""

    def __init__(self, port: int = 0):
        super().__init__()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]

    def _receive(self) -> bytes | None:
        try:
            return self.sock.recv(65536)
        except TimeoutError:
            return None

    def close(self) -> None:
        super().close()
        self.sock.close()  # idempotent


class TcpClient(LineCollector):
    """A TCP client of the daemon's NMEA server."""

    def __init__(self, port: int):
        super().__init__()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.settimeout(0.1)

    def _receive(self) -> bytes | None:
        try:
            return self.sock.recv(65536)
        except TimeoutError:
            return None
        except OSError:
            return b""

    def close(self) -> None:
        super().close()
        self.sock.close()  # idempotent


# The ports a test hands a bench: from a band of its own for each pytest-xdist worker, below the
# kernel's ephemeral range (32768 on). A port the kernel picks (port 0) is picked anew by every
# process from the same range, so a test's bench port could be, moments later, another test's
# too (one run's sensor lines then arrived on another's command port: seen once in a hundred
# suites); a band per worker keeps each worker's ports apart from the other's and from every
# port the kernel picks (a scenario's own wiring, clients' sockets). Never 10110-10112 or
# 29500 (a user's hild or chart plotter may hold them).
PORT_BAND_START, PORT_BAND_SIZE = 20000, 2000
_handed: set[tuple[int, int]] = set()  # (socket type, port) handed out here lately


def _band() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    start = PORT_BAND_START + (index % 6) * PORT_BAND_SIZE  # (20000-31999: under 32768)
    return range(start, start + PORT_BAND_SIZE)


def _free_port(kind: int) -> int:
    """A port of this worker's band that nobody holds now, not handed out before here."""
    band = _band()
    if len(_handed) > PORT_BAND_SIZE // 2:  # (long past: their tests are over)
        _handed.clear()
    for _ in range(4 * PORT_BAND_SIZE):
        port = band[random.randrange(len(band))]
        if port == 29500 or (kind, port) in _handed:
            continue
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed.add((kind, port))
        return port
    raise RuntimeError(f"no free port left in {band}")


def free_tcp_port() -> int:
    return _free_port(socket.SOCK_STREAM)


def free_udp_port() -> int:
    return _free_port(socket.SOCK_DGRAM)


def rate_hz(arrivals: list[float]) -> float:
    """Rate from the first and last arrival: (n - 1) / span, insensitive to edge effects."""
    return (len(arrivals) - 1) / (arrivals[-1] - arrivals[0])


WELL_KNOWN_PORTS = (10110, 10111, 10112)  # the built-in benches': a user's hild may hold them


def on_free_ports(text: str, ports: dict[int, int] | None = None) -> str:
    """Bench text with its 127.0.0.1 ports 10110-10112 moved to ``ports[old]`` where given,
    else to free ones: a test never takes a port that the user's own hild or chart plotter
    may hold."""
    ports = ports or {}
    for old in WELL_KNOWN_PORTS:
        needle = f"127.0.0.1:{old}"
        if needle in text:
            text = text.replace(needle, f"127.0.0.1:{ports.get(old) or free_udp_port()}")
    return text


def nmea_line(body: str, terminator: bytes = b"\r\n") -> bytes:
    """``$body*hh`` with its checksum (computed here, independently of hild)."""
    checksum = 0
    for ch in body.encode():
        checksum ^= ch
    return f"${body}*{checksum:02X}".encode() + terminator


class Repeater:
    """Sends the current command lines again and again, as a controller does, in a thread."""

    def __init__(self, send, hz: float = 20.0):
        self._send = send
        self._period = 1.0 / hz
        self._lines: list[bytes] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.sent = 0

    def start(self, *lines: bytes) -> Repeater:
        self.set(*lines)
        self._thread.start()
        return self

    def set(self, *lines: bytes) -> None:
        with self._lock:
            self._lines = list(lines)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2.0)

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                lines = list(self._lines)
            for line in lines:
                try:
                    self._send(line)
                except OSError:  # the daemon closed its end: the test is stopping it
                    return
                self.sent += 1
            self._stop.wait(self._period)


def write_bench(
    path: Path,
    name: str,
    run_dir: Path | str,
    tables: str,
    *,
    rate_hz: float = 100,
    profile: str = "odin",
) -> Path:
    """A bench file at ``path``: ``profile`` at the thesis' site off Horten (59.41 N, 10.48 E),
    a fixed start time (reproducible sentences), pty links under ``run_dir``, then ``tables``
    (weather, devices, record, ...) as TOML text."""
    path.write_text(f"""
[bench]
name = "{name}"
rate_hz = {rate_hz}
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"
[vessel]
profile = "{profile}"
[origin]
latitude = 59.41
longitude = 10.48
{tables}
""")
    return path
