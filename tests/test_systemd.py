"""hild under systemd: the unit files, and the notify protocol spoken by the real daemon.

The daemon runs as a subprocess with $NOTIFY_SOCKET pointing at a datagram socket this test
binds, so it talks to the test exactly as it would to systemd (sd_notify(3)).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from endpoints import Daemon, free_udp_port
from test_daemon import default_bench_on_free_ports

from hild.systemd import SystemdNotifier, notifier_from_environment, notify_address, watchdog_usec

UNITS = Path(__file__).resolve().parent.parent / "systemd"
INSTALLED_HILD = "/opt/hild/.venv/bin/hild"
MAX_EXPOSURE = 2.0


# --- the unit files -----------------------------------------------------------------------


def systemd_analyze(*args: str) -> subprocess.CompletedProcess:
    if shutil.which("systemd-analyze") is None:
        pytest.skip(
            "systemd-analyze is not installed (Debian package systemd; .ci/run installs it)"
        )
    return subprocess.run(["systemd-analyze", *args], capture_output=True, text=True, timeout=60)


def unit_here(tmp_path: Path, name: str) -> Path:
    """A copy of the unit whose ExecStart names this venv's hild instead of /opt/hild's.

    `systemd-analyze verify` checks that ExecStart's program exists; on a test machine
    /opt/hild is not there. Everything else (User=hild, paths) is left as it is.
    """
    hild = Path(sys.executable).parent / "hild"
    assert os.access(hild, os.X_OK), f"{hild}: the venv's console script (pip install -e .)"
    text = (UNITS / name).read_text()
    assert f"ExecStart={INSTALLED_HILD} run " in text
    copy = tmp_path / name
    copy.write_text(text.replace(INSTALLED_HILD, str(hild)))
    return copy


def complaints(result: subprocess.CompletedProcess) -> list[str]:
    """verify's lines about our unit, its paths or unknown keys. It exits with 0 even for a
    line it cannot parse ("Failed to parse ..., ignoring"), so the output is what counts."""
    out = (result.stdout + result.stderr).splitlines()
    return [line for line in out if "hild" in line or "Unknown" in line]


@pytest.mark.parametrize(
    ("name", "instance"), [("hild.service", None), ("hild@.service", "hild@bench.service")]
)
def test_systemd_accepts_the_units(tmp_path, name, instance):
    unit = unit_here(tmp_path, name)
    target = unit.parent / instance if instance else unit  # a template is checked as an instance
    result = systemd_analyze("verify", str(target))
    assert result.returncode == 0, result.stdout + result.stderr
    assert complaints(result) == [], result.stdout + result.stderr
    # The units as shipped: the one complaint is the program that exists only once installed.
    shipped = subprocess.run(
        ["systemd-analyze", "verify", str(UNITS / (instance or name))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = complaints(shipped)
    assert len(lines) == 1 and f"Command {INSTALLED_HILD} is not executable" in lines[0], lines


@pytest.mark.parametrize("name", ["hild.service", "hild@.service"])
def test_the_units_are_hardened(name):
    """Overall exposure at most 2.0 (of 10; 1.5 when written). --threshold is that level times
    ten (systemd-analyze(1): default 100), and security exits non-zero above it."""
    threshold = f"--threshold={round(MAX_EXPOSURE * 10)}"
    result = systemd_analyze("security", "--offline=true", threshold, str(UNITS / name))
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert match, result.stdout + result.stderr
    level = float(match.group(1))
    assert level <= MAX_EXPOSURE, result.stdout
    assert result.returncode == 0, result.stdout + result.stderr
    # The threshold's scale, checked: one tenth below the level fails.
    below = f"--threshold={round(level * 10) - 1}"
    assert systemd_analyze("security", "--offline=true", below, str(UNITS / name)).returncode != 0
    text = (UNITS / name).read_text()
    # What hild needs stays open: serial ports and ptys, and numba's JIT.
    assert "MemoryDenyWriteExecute" not in text.replace("# No MemoryDenyWriteExecute=", "")
    for line in (
        "Type=notify",
        "WatchdogSec=",
        "PrivateDevices=no",
        "DeviceAllow=char-ttyUSB rw",
        "DeviceAllow=/dev/ptmx rw",
        "DeviceAllow=char-pts rw",
        "SupplementaryGroups=dialout",
        "Environment=NUMBA_CACHE_DIR=/var/cache/hild/",
    ):
        assert line in text, line


# --- the notifier on its own ----------------------------------------------------------------


def fake_view(**changes) -> SimpleNamespace:
    """The few attributes of a run's view (hild.observers.RunView) that the notifier reads."""
    bench = SimpleNamespace(
        name="default",
        vessel=SimpleNamespace(name="odin"),
        weather=SimpleNamespace(preset="calm"),
        rate_hz=100.0,
        time_scale=1.0,
    )
    run = SimpleNamespace(
        bench=bench,
        ticks=0,
        overruns=0,
        commands_applied=0,
        stop_reason="SIGTERM",
        t=0.0,
        duration=None,
        dt=0.01,
    )
    run.__dict__.update(changes)
    return run


class Receiver:
    """systemd's end: a bound AF_UNIX datagram socket (a path, or abstract with '@')."""

    def __init__(self, address: str):
        self.env = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(notify_address(address))
        self.sock.settimeout(0.2)

    def pending(self) -> list[str]:
        out = []
        self.sock.setblocking(False)
        try:
            while True:
                out.append(self.sock.recv(4096).decode())
        except BlockingIOError:
            return out
        finally:
            self.sock.settimeout(0.2)

    def close(self) -> None:
        self.sock.close()
        if self.env.startswith("/") and os.path.exists(self.env):
            os.unlink(self.env)


def test_no_notify_socket_no_notifier(monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert notifier_from_environment() is None
    monkeypatch.setenv("NOTIFY_SOCKET", "")
    assert notifier_from_environment() is None
    monkeypatch.setenv("NOTIFY_SOCKET", "vsock:2:1234")  # newer systemd; not spoken here
    assert notifier_from_environment() is None
    assert notify_address("@hild") == "\0hild" and notify_address("/run/x") == "/run/x"


def test_the_watchdog_is_for_this_process_only():
    assert watchdog_usec({}, 7) is None
    assert watchdog_usec({"WATCHDOG_USEC": "300000"}, 7) == 300000
    assert watchdog_usec({"WATCHDOG_USEC": "300000", "WATCHDOG_PID": "7"}, 7) == 300000
    assert watchdog_usec({"WATCHDOG_USEC": "300000", "WATCHDOG_PID": "8"}, 7) is None
    assert watchdog_usec({"WATCHDOG_USEC": "0"}, 7) is None
    assert watchdog_usec({"WATCHDOG_USEC": "soon"}, 7) is None


def test_status_and_watchdog_are_due_on_the_wall_clock(tmp_path):
    """With a 3 s watchdog: a ping every 1 s, STATUS every 5 s, both in one datagram when both
    are due; nothing at all on the ticks in between; no burst of pings after a stall."""
    receiver = Receiver(str(tmp_path / "notify"))
    now = [100.0]
    notifier = SystemdNotifier(receiver.env, watchdog_usec=3_000_000, clock=lambda: now[0])
    run = fake_view()
    try:
        asyncio.run(notifier.start(run))
        (ready,) = receiver.pending()
        assert ready.splitlines() == [
            "READY=1",
            "STATUS=default: odin in calm weather, running (100 Hz, time scale 1)",
            f"MAINPID={os.getpid()}",
            "WATCHDOG=1",
        ]
        sent = []
        for k in range(1, 601):  # 6 s of ticks at 100 Hz
            now[0] = 100.0 + k / 100
            run.ticks, run.t = k, k * 0.01
            run.commands_applied = k // 10
            notifier.loop_seen_at = now[0]  # the event loop's task, running alongside
            notifier.on_tick(run, k * 0.01)
            sent += [(k, d) for d in receiver.pending()]
        assert [k for k, _ in sent] == [100, 200, 300, 400, 500, 600]
        assert all(d.startswith("WATCHDOG=1") for _, d in sent)
        assert sent[4][1] == (
            "WATCHDOG=1\nSTATUS=default: running, t=5.0 s, 500 ticks, 0 overruns, "
            "50 commands applied"
        )
        now[0] = 120.0  # the loop stood still for 14 s (systemd would have killed it)
        notifier.loop_seen_at = now[0]
        notifier.on_tick(run, 6.01)
        notifier.on_tick(run, 6.02)
        assert receiver.pending() == [
            "WATCHDOG=1\nSTATUS=default: running, t=6.0 s, 600 ticks, 0 overruns, "
            "60 commands applied"
        ]
        run.t = 6.02
        asyncio.run(notifier.stop(run))
        assert receiver.pending() == [
            "STOPPING=1\nSTATUS=default: stopping (SIGTERM), "
            "t=6.0 s, 600 ticks, 0 overruns, 60 commands applied"
        ]
        assert notifier.failed == 0
    finally:
        receiver.close()


def test_a_stalled_event_loop_stops_the_pings_while_the_ticks_go_on(tmp_path):
    """The ports and the bus are served by the event loop, the ticks by their own thread: when
    the loop has not been seen for two ping intervals (2 s with a 3 s watchdog) the ticks stop
    pinging, so systemd restarts a daemon that no longer reads its controller; they ping again
    once the loop runs."""
    receiver = Receiver(str(tmp_path / "notify"))
    now = [100.0]
    notifier = SystemdNotifier(
        receiver.env, watchdog_usec=3_000_000, status_interval_s=1e9, clock=lambda: now[0]
    )
    run = fake_view()
    try:
        asyncio.run(notifier.start(run))
        receiver.pending()
        pinged = []
        for k in range(1, 801):  # 8 s of ticks; the event loop last seen at 102.5 s
            now[0] = 100.0 + k / 100
            run.ticks = k
            if now[0] <= 102.5 or now[0] >= 107.0:
                notifier.loop_seen_at = now[0]
            notifier.on_tick(run, k * 0.01)
            pinged += [round(now[0] - 100.0, 2) for _ in receiver.pending()]
        # due every 1 s; 103 and 104 within 2 s of 102.5; 105 and 106 withheld
        assert pinged == [1.0, 2.0, 3.0, 4.0, 7.0, 8.0], pinged
        assert notifier.withheld == 2 and notifier.watchdog_pings == 7  # with READY's
    finally:
        receiver.close()


def test_a_vanished_or_full_socket_never_raises_nor_blocks(tmp_path):
    receiver = Receiver(str(tmp_path / "notify"))
    notifier = SystemdNotifier(receiver.env, watchdog_usec=3_000)  # a ping due every 1 ms
    run = fake_view()
    try:
        asyncio.run(notifier.start(run))
        # Full: systemd does not read (a small queue, see /proc/sys/net/unix/max_dgram_qlen).
        started = time.monotonic()
        for _ in range(2000):
            notifier.send("WATCHDOG=1")
        assert time.monotonic() - started < 1.0  # EAGAIN at once, no wait
        assert notifier.failed > 0 and notifier.sent > 0
        # Gone: the receiver closes and its path disappears (ECONNREFUSED, then ENOENT).
        receiver.close()
        failed, slowest = notifier.failed, 0.0
        end = time.monotonic() + 0.2
        while time.monotonic() < end:
            tick = time.monotonic()
            notifier.loop_seen_at = tick  # the event loop's task, running alongside
            notifier.on_tick(run, 0.0)
            slowest = max(slowest, time.monotonic() - tick)
            time.sleep(0.002)
        assert notifier.failed - failed >= 20  # every ping that was due was tried and counted
        assert slowest < 0.01
        asyncio.run(notifier.stop(run))  # STOPPING=1 fails too, quietly
    finally:
        receiver.close()


# --- the real daemon ------------------------------------------------------------------------


class Listener(Receiver):
    """Records every datagram with its arrival time, and whether the ptys existed by then."""

    def __init__(self, address: str, links: list[Path]):
        super().__init__(address)
        self.links = links
        self.datagrams: list[tuple[float, str, bool]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            ports_open = all(link.is_symlink() for link in self.links)
            self.datagrams.append((time.monotonic(), data.decode(), ports_open))

    def with_line(self, line: str) -> list[tuple[float, str, bool]]:
        return [d for d in list(self.datagrams) if line in d[1].splitlines()]

    def wait_for(self, line: str, timeout: float = 5.0) -> tuple[float, str, bool]:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = self.with_line(line)
            if found:
                return found[0]
            time.sleep(0.02)
        raise AssertionError(f"no {line} in {self.datagrams}")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2.0)
        super().close()


def notifying_daemon(tmp_path, monkeypatch, address: str, *args: str):
    """The default bench (on free UDP ports) with $NOTIFY_SOCKET and a 0.3 s watchdog."""
    bench = default_bench_on_free_ports(tmp_path, free_udp_port(), free_udp_port())
    run = tmp_path / "run"
    listener = Listener(address, [run / name for name in ("gps", "wind", "speed", "jets")])
    monkeypatch.setenv("NOTIFY_SOCKET", address)
    monkeypatch.setenv("WATCHDOG_USEC", "300000")
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    try:
        daemon = Daemon(bench, "--run-dir", str(run), *args, tmp=tmp_path)
    except BaseException:
        listener.close()
        raise
    return daemon, listener


def test_ready_watchdog_status_and_stopping(tmp_path, monkeypatch):
    daemon, listener = notifying_daemon(tmp_path, monkeypatch, str(tmp_path / "notify"))
    try:
        _, ready, ports_open = listener.wait_for("READY=1")
        assert ports_open  # READY=1 only once every pty link was in place
        assert f"MAINPID={daemon.proc.pid}" in ready.splitlines()
        assert "STATUS=default: odin in calm weather, running (100 Hz, time scale 1)" in ready
        # The first tick waits for the next whole second; then count pings over 2 s. They are
        # due every 0.3 s / 3 = 0.1 s on a fixed grid, each sent at the first 10 ms tick at or
        # after its due time: no drift, so a 2 s window holds 20 +- 1. The receiving thread's
        # wake-up adds a few ms of noise per arrival, and a loaded machine may delay one:
        # 17..22 (systemd would only act on a gap of 0.3 s, checked below).
        time.sleep(1.2)
        window = (time.monotonic(), time.monotonic() + 2.0)
        time.sleep(2.1)
        pings = [t for t, _, _ in listener.with_line("WATCHDOG=1")]
        counted = [t for t in pings if window[0] <= t < window[1]]
        assert 17 <= len(counted) <= 22, len(counted)
        gaps = [b - a for a, b in zip(pings, pings[1:], strict=False)]
        # No gap in which systemd would have killed us, not even between READY=1 and the
        # first tick (which waits for the next whole second).
        assert max(gaps) < 0.3, max(gaps)
    finally:
        summary = daemon.stop()  # SIGTERM
    _, stopping, _ = listener.wait_for("STOPPING=1")
    listener.close()
    assert summary["reason"] == "SIGTERM"
    status = [line for line in stopping.splitlines() if line.startswith("STATUS=")]
    assert status == [
        f"STATUS=default: stopping (SIGTERM), t={summary['t']:.1f} s, {summary['ticks']} ticks, "
        f"{summary['overruns']} overruns, 0 commands applied"
    ]
    assert listener.datagrams[-1][1] == stopping  # nothing after STOPPING=1


def test_an_abstract_notify_socket(tmp_path, monkeypatch):
    """'@name' is a socket in the abstract namespace (no file); a run with --duration stops
    by itself and says so."""
    address = f"@hild-test-{uuid.uuid4().hex}"
    daemon, listener = notifying_daemon(
        tmp_path, monkeypatch, address, "--duration", "3", "--time-scale", "10"
    )
    try:
        _, ready, ports_open = listener.wait_for("READY=1")
        assert ports_open and f"MAINPID={daemon.proc.pid}" in ready
        summary = daemon.wait(30)
        _, stopping, _ = listener.wait_for("STOPPING=1")
    finally:
        if daemon.proc.poll() is None:
            daemon.stop()
        listener.close()
    assert summary["reason"] == "duration" and summary["ticks"] == 300
    assert "STATUS=default: stopping (duration), t=3.0 s, 300 ticks" in stopping
    assert listener.with_line("WATCHDOG=1")  # 0.3 s of wall time at time scale 10
