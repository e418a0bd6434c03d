"""The status line: `hild run` under a real terminal (a pty) keeps a block current under its
log, with the position and each command device's watchdog changing as commands arrive; none
with --quiet or when stderr is no terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests.endpoints import Repeater, free_udp_port, nmea_line, write_bench

JETS = """
[[device]]
name = "jets"
type = "jet-controller"
port = "udp://127.0.0.1:{port}?listen=1"
"""
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\r")


class Terminal:
    """`hild run ...` with its stdout and stderr on a pty, as in a terminal; what it showed."""

    def __init__(self, *args: str):
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hild.cli", "run", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
        )
        os.close(slave)
        self.master = master
        self.shown = b""
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while True:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if not ready:
                if self.proc.poll() is not None:
                    return
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.shown += chunk

    def text(self) -> str:
        return ANSI.sub(b"", self.shown).decode("utf-8", "replace")

    def wait_for(self, pattern: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text()):
            assert time.monotonic() < deadline, f"never showed {pattern!r}:\n{self.text()[-3000:]}"
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(20)
        self._thread.join(5)
        os.close(self.master)


def ctl(run_dir, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "hild.cli", "ctl", "--run-dir", str(run_dir), *args],
        check=True,
        capture_output=True,
        timeout=60,
    )


def bench(tmp_path) -> tuple[str, int]:
    port = free_udp_port()
    path = tmp_path / "bench.toml"
    write_bench(path, "status", tmp_path / "run", JETS.format(port=port))
    return str(path), port


def test_the_block_follows_position_and_watchdog(tmp_path):
    path, port = bench(tmp_path)
    terminal = Terminal(path)
    send = None
    try:
        terminal.wait_for(r"59\.41000 N 10\.48000 E")
        terminal.wait_for(r"jets: waiting, 0 applied, 0 refused")
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        target = ("127.0.0.1", port)
        sock.sendto(nmea_line("RCPRC,0.0,A,,V,,V,B,0"), target)  # neutral first (jets)
        send = Repeater(lambda line: sock.sendto(line, target), hz=10).start(
            nmea_line("RCPRC,60.0,A,,V,,V,B,0")
        )
        terminal.wait_for(r"jets: leased, \d+ applied")
        terminal.wait_for(r"actuators: port 1\d{3}")  # the engines spooling up to 1200 rpm
        ctl(tmp_path / "run", "reposition", "--latitude", "59.42", "--longitude", "10.5")
        terminal.wait_for(r"59\.42\d{3} N 10\.50\d{3} E")
        send.stop()
        send = None
        terminal.wait_for(r"jets: latched")  # the lease ran out; a neutral command is due
    finally:
        if send is not None:
            send.stop()
        terminal.stop()


@pytest.mark.parametrize("quiet", [True, False])
def test_no_block_with_quiet_or_without_a_terminal(tmp_path, quiet):
    path, _ = bench(tmp_path)
    if quiet:
        terminal = Terminal(path, "--quiet", "--duration", "3")
        terminal.proc.wait(60)
        terminal.stop()
        shown = terminal.text()
    else:
        done = subprocess.run(
            [sys.executable, "-m", "hild.cli", "run", path, "--duration", "3"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        shown = done.stdout + done.stderr
    assert "run.summary" in shown  # it ran, and logged as ever
    assert "actuators:" not in shown and "jets: waiting" not in shown
