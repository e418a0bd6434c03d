"""The commands a newcomer pastes, run as pasted: the banner's (from a real `hild run`) and
the README quick start's, against real ptys and sockets on ephemeral ports; and a run that
cannot start refuses before it compiles anything.

The README's default bench uses UDP 10110 and 10112 and /tmp/hild; a test never takes those,
so the bench runs with its ports moved to free ones (test_daemon.default_bench_on_free_ports)
and --run-dir in tmp_path, and the README's commands get the same three substitutions, nothing
else. `python` in them is the interpreter running hild, as in a terminal where its venv is
activated (the daemon then prints `python` too, which the test checks).
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.endpoints import Daemon, free_tcp_port, free_udp_port
from tests.mqtt_endpoints import wait_until
from tests.test_daemon import default_bench_on_free_ports

ROOT = Path(__file__).resolve().parent.parent


def banner_commands(banner: str, heading: str) -> list[str]:
    """The indented lines under the banner's line that starts with ``heading``."""
    lines = banner.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith(heading))
    out = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        out.append(line.strip())
    assert out, banner
    return out


class Pasted:
    """A pasted command: `bash -c` in its own session, its output on a pty (miniterm wants a
    terminal), stopped as Ctrl-C would, its whole process group."""

    def __init__(self, command: str, env: dict | None = None):
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(
            ["bash", "-c", command],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            env=env,
        )
        os.close(slave)
        self.output = b""

    def read(self) -> bytes:
        while True:
            try:
                ready, _, _ = select.select([self.master], [], [], 0.05)
                if not ready:
                    return self.output
                chunk = os.read(self.master, 65536)
            except OSError:
                return self.output
            if not chunk:
                return self.output
            self.output += chunk

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        os.close(self.master)


def window_total(daemon: Daemon, key: str) -> int:
    return sum(e.get(key, 0) for e in daemon.events("loop.stats"))


def drive_one_after_another(daemon: Daemon, commands: list[str], env: dict | None = None):
    """Run each command until the jets took several of its lines; stop it and wait for the
    watchdog's trip (the jets latch: the next command must arm them again). The last one is
    left running: returned, for the caller to stop after the daemon."""
    pasted = None
    for i, command in enumerate(commands):
        before = window_total(daemon, "commands")
        pasted = Pasted(command, env)
        took = wait_until(lambda b=before: window_total(daemon, "commands") >= b + 5, 20.0)
        assert took, f"{command!r} drove nothing: {pasted.read()!r}\n{daemon.stderr()[-3000:]}"
        if i < len(commands) - 1:
            trips = window_total(daemon, "watchdog_trips")
            pasted.stop()
            assert wait_until(lambda t=trips: window_total(daemon, "watchdog_trips") > t, 10.0)
    return pasted


def sees_nmea(
    command: str, talker: bytes, env: dict | None = None, sentence: bytes = rb"[A-Z]{3}"
) -> bytes:
    """What a reading command printed once an NMEA ``sentence`` of ``talker`` came through
    (a reader that opens a port mid-epoch sees that epoch's later sentences first)."""
    pasted = Pasted(command, env)
    try:
        wait_until(lambda: re.search(rb"\$" + talker + sentence + rb",", pasted.read()), 15.0)
        return pasted.read()
    finally:
        pasted.stop()


def test_the_banners_commands_read_and_drive_on_every_transport(tmp_path):
    udp_out, udp_in = free_udp_port(), free_udp_port()
    tcp_out, tcp_in = free_tcp_port(), free_tcp_port()
    bench = tmp_path / "bench.toml"
    bench.write_text(f"""
[bench]
name = "pasted"
[vessel]
profile = "odin"
[[device]]
name = "gps"
type = "gps"
ports = ["pty://gps", "udp://127.0.0.1:{udp_out}", "tcp://127.0.0.1:{tcp_out}"]
[[device]]
name = "jets"
type = "jet-controller"
ports = ["pty://jets", "udp://127.0.0.1:{udp_in}?listen=1", "tcp://127.0.0.1:{tcp_in}"]
""")
    daemon = Daemon(
        str(bench), "--run-dir", str(tmp_path / "run"), "--stats-interval", "0.2", tmp=tmp_path
    )
    pasted = None
    try:
        readers = banner_commands(daemon.banner, "Read the sensors")
        assert len(readers) == 3, readers  # the pty, the UDP destination, the TCP server
        for command in readers:
            assert b"$GPGGA," in sees_nmea(command, b"GP", sentence=b"GGA"), command
        drives = banner_commands(daemon.banner, "Drive jets")
        assert len(drives) == 3, drives  # the pty, the UDP listening port, the TCP server
        assert ("socat" in daemon.banner) == (shutil.which("socat") is not None)
        pasted = drive_one_after_another(daemon, drives)
        summary = daemon.stop()
    finally:
        if pasted is not None:
            pasted.stop()
        if daemon.proc.poll() is None:
            daemon.proc.kill()
    jets = summary["devices"]["jets"]
    # every line was taken: each command armed the jets again after the last one's trip
    assert jets["rejected_total"] == 0, jets
    assert jets["watchdog_trips"] >= 2 and jets["watchdog"] == "active", jets
    for url in ("pty://jets", f"udp://127.0.0.1:{udp_in}?listen=1", f"tcp://127.0.0.1:{tcp_in}"):
        assert summary["ports"][url]["received_lines"] >= 5, (url, summary["ports"][url])
    for side in ("port", "starboard"):  # "1200 rpm, deflector full ahead" as the line says
        assert summary["actuators"][side]["commanded"][0] == 1200.0, summary["actuators"]
        assert summary["actuators"][side]["commanded"][2] == 1.0, summary["actuators"]


def readme_quick_start() -> tuple[str, str]:
    """The README's Run section: (its banner sample, its Python example)."""
    text = (ROOT / "README.md").read_text()
    run = text.split("\n## Run\n", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```(\w*)\n(.*?)```", run, re.S)
    banner = next(body for _, body in blocks if body.startswith("hild: bench 'default'"))
    python = next(body for lang, body in blocks if lang == "sh" and body.startswith("python -c"))
    return banner, python


def test_the_readme_quick_start_works_as_pasted(tmp_path, monkeypatch):
    banner, example = readme_quick_start()
    gps, commands = free_udp_port(), free_udp_port()
    run_dir = tmp_path / "run"

    def moved(text: str) -> str:  # only the run directory and the two ports
        text = text.replace("/tmp/hild", str(run_dir))
        return text.replace("10110", str(gps)).replace("10112", str(commands))

    # `python` is hild's, as with its venv activated (the banner then says `python`)
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    monkeypatch.setenv("PATH", path)
    env = dict(os.environ)
    bench = default_bench_on_free_ports(tmp_path, gps, commands)
    daemon = Daemon(bench, "--run-dir", str(run_dir), "--stats-interval", "0.2", tmp=tmp_path)
    pasted = None
    try:
        readers = [moved(x) for x in banner_commands(banner, "Read the sensors")]
        drives = [moved(x) for x in banner_commands(banner, "Drive jets")]
        for command in readers + drives:  # the README shows what hild prints
            assert command in daemon.banner, (command, daemon.banner)
        for command in readers:
            assert re.search(rb"\$(GP|WI|VW)[A-Z]{3},", sees_nmea(command, rb"(GP|WI|VW)", env))
        pasted = drive_one_after_another(daemon, drives, env)
        pasted.stop()
        trips = window_total(daemon, "watchdog_trips")
        assert wait_until(lambda: window_total(daemon, "watchdog_trips") > trips, 10.0)
        pasted = drive_one_after_another(daemon, [moved(example)], env)  # latched: it arms them
        summary = daemon.stop()
    finally:
        if pasted is not None:
            pasted.stop()
        if daemon.proc.poll() is None:
            daemon.proc.kill()
    jets = summary["devices"]["jets"]
    assert jets["rejected_total"] == 0 and jets["watchdog_trips"] >= 2, jets
    for side in ("port", "starboard"):  # 1500 rpm, deflector full ahead, nozzles 10 degrees
        speed, angle, deflector = summary["actuators"][side]["commanded"]
        assert (speed, deflector) == (1500.0, 1.0), summary["actuators"]
        assert angle == 10.0, summary["actuators"]


def first_contact(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[Path]]:
    """`hild run ARGS` with a kernel cache of its own: (the process, the files it cached)."""
    cache = tmp_path / "kernels"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "hild.cli", "run", *args, "--duration", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, [p for p in cache.rglob("*") if p.is_file()]


def test_an_unusable_run_directory_is_refused_before_compiling(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # others may write it and it is not sticky: they could swap the links
    done, cached = first_contact(tmp_path, "--run-dir", str(shared / "run"))
    assert done.returncode == 2, done.stderr
    assert f"run directory {shared / 'run'} is in {shared}" in done.stderr
    assert "compiling" not in done.stderr and cached == [], (done.stderr, cached)


def test_a_taken_port_is_refused_before_compiling(tmp_path):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as holder:
        holder.bind(("127.0.0.1", 0))
        taken = holder.getsockname()[1]
        bench = default_bench_on_free_ports(tmp_path, free_udp_port(), taken)
        done, cached = first_contact(tmp_path, bench, "--run-dir", str(tmp_path / "run"))
    assert done.returncode == 2, done.stderr
    assert f"device jets, port udp://127.0.0.1:{taken}?listen=1: cannot bind" in done.stderr
    assert "compiling" not in done.stderr and cached == [], (done.stderr, cached)
    assert not (tmp_path / "run" / "gps").exists()  # nothing was opened


def test_the_benchs_own_mistakes_are_named_before_a_taken_port(tmp_path):
    """A bench with a mistake and a port another program holds: the mistake is what the user
    reads first (they fix their file, not the other program, on the first try), then the
    --mqtt options; nothing compiles before either (the bench is checked without its step
    limit, the one rule that may compile)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as holder:
        holder.bind(("127.0.0.1", 0))
        taken = holder.getsockname()[1]
        good = Path(default_bench_on_free_ports(tmp_path, free_udp_port(), taken))
        text = good.read_text()
        assert "\nrate_hz = 100 " in text
        bad = tmp_path / "bad.toml"
        bad.write_text(text.replace("\nrate_hz = 100 ", '\nrate_hz = "fast" ', 1))
        run = ("--run-dir", str(tmp_path / "run"))
        done, cached = first_contact(tmp_path, str(bad), *run)
        mqtt, _ = first_contact(tmp_path, str(good), *run, "--mqtt-prefix", "lab")
        port, _ = first_contact(tmp_path, str(good), *run)
    assert done.returncode == 2, done.stderr
    assert f"{bad}: bench.rate_hz = 'fast': expected a number in Hz" in done.stderr
    assert "cannot bind" not in done.stderr
    assert "compiling" not in done.stderr and cached == [], (done.stderr, cached)
    assert mqtt.returncode == 2 and "--mqtt: expected a broker" in mqtt.stderr, mqtt.stderr
    assert "cannot bind" not in mqtt.stderr
    assert port.returncode == 2 and f"cannot bind 127.0.0.1:{taken}" in port.stderr, port.stderr


@pytest.mark.parametrize("which", ["udp_reader", "udp_sink"])
def test_the_banners_python_one_liners_end_quietly_on_ctrl_c(monkeypatch, which):
    """Without socat the banner prints Python one-liners; Ctrl-C (SIGINT to the foreground
    process) ends them as it ends cat or socat: no KeyboardInterrupt traceback."""
    import time

    from hild import examples

    monkeypatch.setattr(examples, "have_socat", lambda: False)
    command = getattr(examples, which)("127.0.0.1", free_udp_port())
    proc = subprocess.Popen(
        command,
        shell=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    time.sleep(1.0)  # (Python started, the socket open, reading)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err, err
    assert proc.returncode != 0  # (ended by the signal, not finished)
