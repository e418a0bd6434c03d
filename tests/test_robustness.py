"""Absurd values never crash a run: `hild check` refuses what cannot be meant, the encoders
saturate what does not fit, and a device that fails is skipped for that epoch, counted."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from hild.bench import load_bench
from hild.drivers.realtime import Daemon
from hild.nmea import sentences as s
from hild.nmea.encode import MAX_SENTENCE_CHARS, fixed, latitude, longitude

BENCH = """[bench]
name = "absurd"
start_time = "{start}"
run_dir = "{run_dir}"
time_scale = 10
[vessel]
profile = "odin"
[[device]]
name = "gps"
type = "gps"
baud = {baud}
position = {position}
ports = ["pty://gps"]
{extra}
[[device]]
name = "wind"
type = "anemometer"
ports = ["pty://wind"]
"""
SANE = {"start": "2026-06-01T12:00:00Z", "baud": 4800, "position": "[0, 0, -2]", "extra": ""}


def write(tmp_path, **changes) -> str:
    path = tmp_path / "absurd.toml"
    path.write_text(BENCH.format(run_dir=tmp_path / "run", **{**SANE, **changes}))
    return str(path)


# The absurd values `hild check` refuses (a lever arm of 10,000 km, a baud of 10**12, ...) are
# cases of the table of malformed inputs in test_errors.py.


def test_fields_saturate_so_that_no_sentence_outgrows_82_characters():
    assert fixed(1e15, 2) == "999999.00" and fixed(-1e300, 1) == "-999999.0"
    assert fixed(12.345, 2) == "12.35"  # unchanged within range
    assert latitude(148.0) == ("9000.00000", "N")  # a pole, not 148 degrees
    assert longitude(190.0) == ("17000.00000", "W")  # 190 E is 170 W
    utc = __import__("datetime").datetime(2026, 6, 1, 12, tzinfo=__import__("datetime").UTC)
    line = s.gga("GP", utc, 89.9, -179.9, 4, 99, 1e9, 1e12, -1e12, decimals=6)
    assert len(line) <= MAX_SENTENCE_CHARS, line
    for line in (
        s.hdt("HE", 1e300),
        s.vtg("GP", float("inf"), 1e20),
        s.mwv("WI", 1e9, "R", 1e9, "M"),
    ):
        assert len(line) <= MAX_SENTENCE_CHARS, line


def test_a_device_that_fails_is_skipped_and_counted_and_the_run_goes_on(tmp_path, monkeypatch):
    bench = load_bench(write(tmp_path))
    daemon = Daemon(bench, duration=3.0)

    def broken(truth):
        raise OverflowError("a value the encoder cannot print")

    async def run():
        await daemon.open()
        gps = next(rt for rt in daemon.world.devices if rt.device.config.name == "gps")
        monkeypatch.setattr(gps.device, "sample", broken)
        daemon.open = _no_open  # already open
        return await daemon.run()

    async def _no_open():
        return None

    summary = asyncio.run(run())
    assert summary["reason"] == "duration" and summary["t"] == pytest.approx(3.0)
    assert summary["devices"]["gps"]["failures"] == 4  # epochs at t = 0, 1, 2, 3 s
    assert summary["devices"]["wind"]["failures"] == 0
    assert summary["devices"]["wind"]["sentences"] >= 8  # its epochs went out as usual


def test_sighup_stops_the_run_cleanly(tmp_path):
    # Reproduces: SIGHUP (a closed terminal) exited 129 with no summary and left the links.
    import signal

    from tests.endpoints import Daemon, free_udp_port
    from tests.test_daemon import default_bench_on_free_ports

    bench = default_bench_on_free_ports(tmp_path, free_udp_port(), free_udp_port())
    daemon = Daemon(bench, "--run-dir", str(tmp_path / "run"), tmp=tmp_path)
    assert (tmp_path / "run" / "gps").is_symlink()
    daemon.proc.send_signal(signal.SIGHUP)
    summary = daemon.wait(10.0)
    assert daemon.proc.returncode == 0 and summary["reason"] == "SIGHUP"
    assert not (tmp_path / "run" / "gps").exists()


def test_a_loop_held_off_its_core_jumps_ahead_instead_of_racing(tmp_path):
    # A suspended laptop or a debugger holds the daemon for 2 s: more than RESYNC_AFTER_S
    # behind, the loop says so and goes on at real time from where it is, rather than running
    # the 200 missed ticks back to back (which would burst two GPS epochs into the pty at once
    # and leave the simulation 2 s of physics ahead of what a controller saw).
    import os
    import signal
    import time

    from tests.endpoints import Daemon, PtyClient, free_udp_port
    from tests.test_daemon import default_bench_on_free_ports

    bench = default_bench_on_free_ports(tmp_path, free_udp_port(), free_udp_port())
    daemon = Daemon(bench, "--run-dir", str(tmp_path / "run"), tmp=tmp_path)
    gps = PtyClient(tmp_path / "run" / "gps").start()
    try:
        time.sleep(1.5)
        stopped = time.monotonic()
        os.kill(daemon.proc.pid, signal.SIGSTOP)
        time.sleep(2.0)
        os.kill(daemon.proc.pid, signal.SIGCONT)
        resumed = time.monotonic()
        held = resumed - stopped  # 2 s, more when this machine is busy
        time.sleep(2.5)
        summary = daemon.stop()
    finally:
        gps.close()
        if daemon.proc.poll() is None:
            daemon.proc.kill()
    (resync,) = daemon.events("loop.resync")
    # what the stop held it, less the part of a tick (10 ms) it was ahead when stopped, plus
    # the time the machine took to run it again after SIGCONT (ms when idle; the bound is 0.5 s
    # for a busy machine: the point is that the whole stop is reported, not how fast)
    assert held - 0.02 <= resync["behind_s"] <= held + 0.5, (resync, held)
    # the simulation lost what the stop cost instead of catching up: its clock runs behind
    # the loop's wall time by that much (to a tick or two, and this machine's lateness)
    assert summary["t"] == pytest.approx(summary["loop_wall_s"] - resync["behind_s"], abs=0.05)
    # the 1 Hz GPS resumed at its rate: no two epochs back to back after the stop (a burst of
    # missed epochs would arrive milliseconds apart; half a second allows this reader's own
    # lateness on a busy machine)
    after = [t for t, _ in gps.sentences("GGA") if t >= resumed - 0.05]
    gaps = np.diff(after)
    assert len(after) >= 2 and gaps.min() > 0.5, after


DIVERGING_BENCH = """[bench]
name = "diverging"
rate_hz = {rate_hz}
time_scale = 20
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"
[vessel]
profile = "odin"
[weather]
preset = "calm"
current_speed = 8.0   # across the hull: its cross-flow drag stiffer than any own manoeuvre
current_to_deg = 90.0
[[device]]
name = "gps"
type = "gps"
rate_hz = 1
ports = ["pty://gps"]
"""


def test_a_run_whose_simulation_diverges_stops_with_status_1(tmp_path):
    # A 0.12 s step passes Odin's up-front limit (0.134 s, from its own manoeuvres), but an
    # 8 m/s current across the hull is stiffer than those (tests/test_cli.py shows hild sim
    # diverging on it): the daemon must stop rather than send nonsense fixes, and say why.
    import subprocess
    import sys

    bench = tmp_path / "bench.toml"

    def run(rate_hz: float, duration: float) -> subprocess.CompletedProcess:
        bench.write_text(DIVERGING_BENCH.format(rate_hz=rate_hz, run_dir=tmp_path / "run"))
        argv = ["run", str(bench), "--duration", str(duration), "--log-format", "json"]
        return subprocess.run(
            [sys.executable, "-m", "hild.cli", *argv], capture_output=True, text=True, timeout=120
        )

    p = run(1 / 0.12, 120)
    events = [json.loads(line) for line in p.stderr.splitlines() if line.startswith("{")]
    (diverged,) = [e for e in events if e["event"] == "sim.diverged"]
    (summary,) = [e for e in events if e["event"] == "run.summary"]
    assert p.returncode == 1 and summary["reason"] == "diverged", (p.returncode, summary)
    assert "reached" in diverged["problem"] or "not finite" in diverged["problem"], diverged
    # stopped within the second after it happened, long before the 120 s asked for
    assert summary["t"] == pytest.approx(diverged["t"], abs=1.0) and summary["t"] < 119.0
    # and a shorter step holds the same sea: the check stops nothing that is sound
    p = run(20, 60)
    assert p.returncode == 0 and "sim.diverged" not in p.stderr, p.stderr[-2000:]
