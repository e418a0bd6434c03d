"""`hild ctl` against a running `hild run`: the requests of the MQTT control topic over the run
directory's Unix socket, answered the same way (one RuntimeControl makes both answers), the
status, the exit statuses, and a socket other users cannot reach."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.endpoints import Daemon, nmea_line, write_bench
from tests.forked_cli import run_hild

DEVICES = """
[[device]]
name = "gps"
type = "gps"
port = "pty://gps"
[[device]]
name = "jets"
type = "jet-controller"
port = "pty://jets"
"""


@pytest.fixture(scope="module")
def run_dir():
    """A run directory directly under /tmp (sticky, world-searchable), so that what keeps
    another user out is the socket's own mode, not a private folder above it."""
    path = Path(tempfile.mkdtemp(prefix="hild-ctl-test-", dir="/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def daemon(run_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ctl")
    bench = tmp / "bench.toml"
    write_bench(bench, "ctl", run_dir, DEVICES)
    d = Daemon(str(bench), tmp=tmp)
    yield d
    d.stop()


def ctl(run_dir, *args: str) -> tuple[int, dict | None, str]:
    """`hild ctl ...`: exit status, the answer printed (None if none), stderr."""
    done = run_hild("ctl", "--run-dir", str(run_dir), *args)
    answer = json.loads(done.stdout) if done.stdout.strip() else None
    return done.returncode, answer, done.stderr


def test_status_says_where_the_boat_is_and_what_drives_it(daemon, run_dir):
    code, answer, _ = ctl(run_dir, "status")
    assert code == 0 and answer["ok"]
    status = answer["status"]
    assert status["bench"] == "ctl"
    assert status["latitude"] == pytest.approx(59.41, abs=1e-4)
    assert status["command_devices"]["jets"]["watchdog"] == "waiting"  # no command yet
    assert set(status["actuators"]) == {"port", "starboard"}
    assert status["clients"]["pty://gps"] is None  # a pty's readers: not countable
    assert "pty://gps" in status["clients_not_countable"]
    time.sleep(0.6)  # a snapshot is taken about twice a second
    later = ctl(run_dir, "status")[1]["status"]
    assert later["t"] > status["t"]  # it runs


def test_weather_fault_and_reposition_are_applied(daemon, run_dir):
    code, answer, _ = ctl(run_dir, "weather", "gale-hs1")
    assert code == 0 and answer["ok"] and answer["weather"]["preset"] == "gale-hs1"
    code, answer, _ = ctl(run_dir, "fault", "gps", "dropout", "--duration", "30")
    assert (
        code == 0
        and answer["device"] == "gps"
        and answer["end"] == pytest.approx(answer["start"] + 30.0)
    )
    code, answer, _ = ctl(run_dir, "fault", "--actuator", "port", "stuck")
    assert code == 0 and answer == {**answer, "actuator": "port", "kind": "stuck", "ok": True}
    code, answer, _ = ctl(run_dir, "reposition", "--latitude", "59.42", "--longitude", "10.5")
    assert code == 0 and answer["ok"]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # applied at the next tick, seen in the next snapshot
        status = ctl(run_dir, "status")[1]["status"]
        if abs(status["latitude"] - 59.42) < 1e-3:
            break
        time.sleep(0.3)
    assert status["latitude"] == pytest.approx(59.42, abs=1e-3)
    assert status["longitude"] == pytest.approx(10.5, abs=1e-3)
    logged = [e for e in daemon.events("control.request") if e.get("source") == "ctl"]
    assert [e["request"] for e in logged][:4] == ["weather", "fault", "fault", "reposition"]
    assert all(e["ok"] for e in logged[:4])  # logged as the MQTT control's requests are


def test_commands_reach_the_command_devices(daemon, run_dir):
    line = nmea_line("RCPRC,0.0,A,,V,,V,B,0", b"").decode()  # neutral: idle, bucket neutral
    code, answer, _ = ctl(run_dir, "commands", line)
    assert code == 0 and answer["results"] == ["applied"]


def test_a_refused_request_exits_1_with_the_reason(daemon, run_dir):
    code, answer, err = ctl(run_dir, "weather", "no-such-weather")
    assert code == 1 and answer["ok"] is False
    assert "preset = 'no-such-weather'" in err and "gale-hs1" in err
    code, _, err = ctl(run_dir, "fault", "radar", "dropout")
    assert code == 1 and "a sensor device: gps" in err


def test_a_request_nested_too_deeply_is_answered_and_the_run_goes_on(daemon, run_dir):
    """JSON nested 30,000 deep (Python's parser would raise RecursionError) on the socket: an
    answer naming the limit, on the same connection, which then takes the next request."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(str(run_dir / "hild.ctl"))
        reader = s.makefile("rb")
        s.sendall(b"[" * 30_000 + b"]" * 30_000 + b"\n")
        answer = json.loads(reader.readline())
        assert answer["ok"] is False and "at most 32" in answer["error"], answer
        deep = json.loads("[" * 40 + "]" * 40)  # parsed fine, too deep for a request
        body = {"request": "weather", "payload": {"wind": {"speed": deep}}}
        s.sendall(json.dumps(body).encode() + b"\n")
        answer = json.loads(reader.readline())
        assert answer["ok"] is False and "at most 32" in answer["error"], answer
        s.sendall(json.dumps({"request": "status"}).encode() + b"\n")
        assert json.loads(reader.readline())["ok"] is True
    assert daemon.proc.poll() is None
    assert not daemon.events("asyncio.error"), daemon.events("asyncio.error")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["weather", "--json", "{bad"], "--json '{bad': expected a JSON object"),
        (["weather", "--json", "[" * 3000 + "]" * 3000], "at most 32"),
        (["--timeout", "nan", "status"], "--timeout: expected seconds greater than 0 to 3600"),
        (["--timeout", "-1", "status"], "--timeout: expected seconds greater than 0 to 3600"),
        (
            ["fault", "--actuator", "port", "stuck", "--duration", "5"],
            "--duration time a sensor's fault",
        ),
        # no infinity or NaN leaves the command line (they reached the daemon as JSON)
        (["fault", "gps", "dropout", "--duration", "inf"], "--duration: expected seconds > 0"),
        (["fault", "gps", "dropout", "--start", "nan"], "--start: expected seconds >= 0"),
        (
            ["fault", "gps", "bias_jump", "--quantity", "heading", "--value", "inf"],
            "--value: expected the jump, a finite number",
        ),
        (["reposition", "--north", "nan"], "--north: expected m, a finite number"),
    ],
)
def test_a_wrong_command_line_names_its_option_and_exits_2(run_dir, args, says):
    code, answer, err = ctl(run_dir, *args)
    assert code == 2 and answer is None and says in err, err
    assert "Traceback" not in err and "no hild run answers" not in err


def test_a_weather_is_asked_for_by_name_never_by_a_path(daemon, run_dir, tmp_path):
    """A path made the daemon read any TOML file it could and quote it back in the refusal
    (over MQTT or Foxglove, to whoever could reach them)."""
    secret = tmp_path / "secret.toml"
    secret.write_text('secret_token = "hunter2"\n')
    for preset in (str(secret), "../secret", "secret.toml", "/etc/passwd"):
        code, answer, err = ctl(run_dir, "weather", preset)
        assert code == 1 and answer["ok"] is False, (preset, answer)
        assert "not a path" in answer["error"] and "gale-hs1" in answer["error"], answer
        assert "hunter2" not in err + json.dumps(answer)


def test_refused_positions_and_faults_say_why(daemon, run_dir):
    """Each of north and east within 100 km passed, together 141 km from the origin; a fault
    with both duration and end kept one silently."""
    code, answer, _ = ctl(run_dir, "reposition", "--north", "80000", "--east", "80000")
    assert code == 1 and "within 100 km of the origin" in answer["error"], answer
    assert "113.1 km" in answer["error"], answer
    code, answer, _ = ctl(
        run_dir, "fault", "gps", "dropout", "--json", '{"duration": 5, "end": 5000}'
    )
    assert code == 1 and "either duration or end, not both" in answer["error"], answer
    # the bad coordinate is named, the longitude here (the latitude is the origin's)
    code, answer, _ = ctl(run_dir, "reposition", "--latitude", "59.41", "--longitude", "180")
    assert (
        code == 1 and "longitude = 180.0: expected a position within 100 km" in answer["error"]
    ), answer


def test_a_fault_may_be_given_whole_in_json(daemon, run_dir):
    """As the README says of --json: DEVICE and KIND had to be typed as words."""
    code, answer, _ = ctl(
        run_dir, "fault", "--json", '{"device": "gps", "kind": "dropout", "duration": 0.5}'
    )
    assert code == 0 and (answer["device"], answer["kind"]) == ("gps", "dropout"), answer
    code, answer, err = ctl(run_dir, "fault")
    assert code == 2 and answer is None and "fault takes DEVICE KIND" in err, err


def test_a_fault_without_end_logs_strict_json(daemon, run_dir):
    code, answer, _ = ctl(run_dir, "fault", "gps", "freeze")
    assert code == 0 and answer["end"] is None, answer
    ctl(run_dir, "fault", "gps", "clear")

    def refuse(name: str):
        raise ValueError(f"{name} is no JSON")

    def freezes() -> list[dict]:  # (Python's json takes Infinity unless told not to)
        lines = daemon.stderr_path.read_text().splitlines()
        events = [
            json.loads(line, parse_constant=refuse) for line in lines if '"control.fault"' in line
        ]
        return [e for e in events if (e.get("fault") or {}).get("kind") == "freeze"]

    deadline = time.monotonic() + 10
    while not freezes() and time.monotonic() < deadline:  # applied at the next tick
        time.sleep(0.2)
    assert [e["fault"]["end"] for e in freezes()] == [None]


def test_no_daemon_exits_2(tmp_path):
    code, answer, err = ctl(tmp_path, "status")
    assert code == 2 and answer is None and "no hild run answers on" in err


def test_the_socket_is_made_again_when_it_or_the_run_directory_is_removed_under_the_run(
    tmp_path,
):
    """Reproduces: the run directory removed under a run (a cleanup of /tmp) came back with its
    lock and pty links but without hild.ctl: `hild ctl` found no run (exit 2) until it ended."""
    run = Path(tempfile.mkdtemp(prefix="hild-ctl-kept-", dir="/tmp")) / "run"
    try:
        bench = write_bench(tmp_path / "bench.toml", "kept", run, DEVICES)
        daemon = Daemon(str(bench), tmp=tmp_path)
        try:
            assert ctl(run, "status")[0] == 0

            def answers_again(times: int) -> None:
                deadline = time.monotonic() + 15.0  # (the run looks at its socket every second)
                while not (run / "hild.ctl").exists() and time.monotonic() < deadline:
                    time.sleep(0.1)
                code, answer, err = ctl(run, "status")
                assert code == 0 and answer["ok"] and answer["status"]["bench"] == "kept", err
                assert len(daemon.events("ctl.recreated")) == times, daemon.stderr()

            (run / "hild.ctl").unlink()  # the socket alone
            answers_again(1)
            subprocess.run(["rm", "-rf", str(run)], check=True)  # the directory, as a cleanup
            answers_again(2)
            assert daemon.events("rundir.recreated"), daemon.stderr()  # (its lock and links)
            assert oct((run / "hild.ctl").stat().st_mode & 0o777) == "0o600"
            assert (run / "gps").is_symlink()
        finally:
            summary = daemon.stop()
        assert summary["ctl"]["requests"] == 3  # all answered by the run, two on remade sockets
        assert not (run / "hild.ctl").exists()  # removed at its end, as the first one would be
    finally:
        shutil.rmtree(run.parent, ignore_errors=True)


SYSTEM_PYTHON = "/usr/bin/python3"  # one another user may run (the venv's may sit in ~root)


@pytest.mark.skipif(
    os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK),
    reason="needs root (to try as another user) and a system python3",
)
def test_another_user_cannot_reach_the_socket(daemon, run_dir):
    socket_file = run_dir / "hild.ctl"
    assert oct(socket_file.stat().st_mode & 0o777) == "0o600"
    probe = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({str(socket_file)!r})"
    done = subprocess.run(  # as nobody, from a folder nobody may enter
        [SYSTEM_PYTHON, "-c", probe],
        capture_output=True,
        text=True,
        user=65534,
        cwd="/tmp",
        env={"PATH": "/usr/bin:/bin"},
        timeout=30,
    )
    assert done.returncode != 0 and "PermissionError" in done.stderr


def test_status_angles_read_0_to_359_9_after_rounding():
    """Reproduces: a course of 359.97 deg (due north, a hair west) read 360.0 in the status."""
    import math

    from hild.units import compass_deg

    assert compass_deg(math.radians(-0.03), 1) == 0.0
    assert compass_deg(math.radians(359.94), 1) == 359.9
    assert compass_deg(math.radians(359.9996), 3) == 0.0  # (the run's summary: 3 decimals)
    assert compass_deg(math.radians(90.0), 1) == 90.0
    assert compass_deg(math.radians(-90.0), 2) == 270.0


# --- limits: requests that lack what they need, connections beyond the cap, idle ones ------------
def test_a_reposition_without_a_position_and_a_fault_of_1e308_s_are_refused_by_name(
    daemon, run_dir
):
    """`reposition {}` moved the boat to where the request found it (the origin, early in a
    run), a heading alone likewise; a fault's duration of 1e308 s was taken."""
    with socket.socket(socket.AF_UNIX) as s:  # (hild ctl itself sends no empty request)
        s.settimeout(30)
        s.connect(str(run_dir / "hild.ctl"))
        s.sendall(b'{"request": "reposition", "payload": {}}\n')
        empty = json.loads(s.makefile("rb").readline())
    heading = ctl(run_dir, "reposition", "--heading", "90")[1]
    for answer, sent in ((empty, "{}"), (heading, "{'heading_deg': 90.0}")):
        assert answer["ok"] is False, answer
        assert answer["error"] == (
            f"control/reposition = {sent}: expected a position to move to: latitude and "
            "longitude [degrees], or north and east [m from the origin]; heading_deg and speed "
            "only with one"
        ), answer
    code, answer, _ = ctl(run_dir, "reposition", "--north", "100")
    assert code == 1 and "control/reposition: east: expected this key" in answer["error"], answer
    code, answer, _ = ctl(run_dir, "fault", "gps", "dropout", "--duration", "1e308")
    assert code == 1 and answer["ok"] is False, answer
    assert (
        "control/fault: duration = 1e+308: expected a duration of at most 31536000 s (a "
        "year; without one, the fault lasts for good)"
    ) in answer["error"], answer
    code, answer, _ = ctl(run_dir, "fault", "gps", "dropout", "--start", "1e308")
    assert (
        code == 1 and "control/fault: start = 1e+308: expected a start at most" in answer["error"]
    ), answer


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def raise_fd_limit(wanted: int) -> None:
    """The test's soft limit on descriptors up to ``wanted`` (a default is 1024), as far as
    the hard limit allows; skipped when it cannot hold them."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        top = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (top, hard))
        if top < wanted:
            pytest.skip(f"a hard limit of {hard} descriptors")


def connect_at_once(path: Path, count: int, send: bytes = b"") -> list[socket.socket]:
    """``count`` connections made without waiting for the daemon to accept any (a
    non-blocking connect fails at once when the listen backlog is full, as a burst of
    clients with a timeout sees it), each sending ``send`` as it connects (a connection
    the daemon refused, answered and closed already takes it no more: let go)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            socks.append(s)
            s.setblocking(False)
            s.connect(str(path))  # (a Unix socket connects once queued in the backlog)
            if send:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    s.send(send)
    except OSError:
        for s in socks:
            s.close()
        raise
    return socks


def read_lines(
    socks: list[socket.socket], timeout: float, closing: int | None = None
) -> dict[int, list[dict]]:
    """What each socket (by index) receives within ``timeout``: its JSON lines, until
    ``closing`` of them (all) have closed or the time is up (``None`` appended to those
    closed)."""
    import selectors

    got: dict[int, bytes] = {i: b"" for i in range(len(socks))}
    closed: set[int] = set()
    with selectors.DefaultSelector() as sel:
        for i, s in enumerate(socks):
            sel.register(s, selectors.EVENT_READ, i)
        deadline = time.monotonic() + timeout
        closing = len(socks) if closing is None else closing
        while len(closed) < closing and time.monotonic() < deadline:
            for key, _ in sel.select(0.2):
                i = key.data
                try:
                    chunk = socks[i].recv(65536)
                except OSError:  # (reset: counted as closed)
                    chunk = b""
                if chunk:
                    got[i] += chunk
                else:
                    closed.add(i)
                    sel.unregister(socks[i])
    out: dict[int, list] = {}
    for i, data in got.items():
        out[i] = [json.loads(line) for line in data.splitlines() if line.strip()]
        if i in closed:
            out[i].append(None)
    return out


@pytest.fixture
def lone_daemon(tmp_path):
    """A daemon of the test's own (its connections must not share the module's)."""
    run = Path(tempfile.mkdtemp(prefix="hild-ctl-limits-", dir="/tmp"))
    bench = write_bench(tmp_path / "bench.toml", "limits", run, DEVICES)
    d = Daemon(str(bench), tmp=tmp_path)
    try:
        yield d, run
    finally:
        d.stop()
        shutil.rmtree(run, ignore_errors=True)


def test_500_simultaneous_connections_are_answered_or_refused_busy(lone_daemon):
    """With asyncio's default listen backlog of 100, a burst of 500 had 165 connections
    refused by the kernel; all were held once accepted."""
    from hild.live.ctl import MAX_CONNECTIONS

    daemon, run = lone_daemon
    raise_fd_limit(2048)
    status = json.dumps({"request": "status"}).encode() + b"\n"
    socks = connect_at_once(run / "hild.ctl", 500, status)  # raises if the backlog is full
    try:
        answers = read_lines(socks, 60.0)
    finally:
        for s in socks:
            s.close()
    firsts = [lines[0] if lines else None for lines in answers.values()]
    assert None not in firsts, sum(f is None for f in firsts)  # each told something
    served = [a for a in firsts if a["ok"] and a["request"] == "status"]
    busy = [a for a in firsts if not a["ok"]]
    # the served ones stay open (until this test closes them): the first MAX_CONNECTIONS
    assert len(served) == MAX_CONNECTIONS and len(busy) == 500 - MAX_CONNECTIONS
    assert all(
        a["error"].startswith(f"busy: {MAX_CONNECTIONS} hild ctl connections are open")
        for a in busy
    ), busy[0]
    assert all(answers[i][-1] is None for i, a in enumerate(firsts) if not a["ok"])  # closed
    assert ctl(run, "status")[0] == 0  # and it serves the next one
    summary = daemon.stop()
    assert summary["ctl"]["connections_refused"] == 500 - MAX_CONNECTIONS


def test_3000_idle_connections_hold_a_bounded_number_of_descriptors(lone_daemon):
    """3,000 idle clients held 2,839 of the daemon's descriptors."""
    from hild.live.ctl import MAX_CONNECTIONS

    daemon, run = lone_daemon
    raise_fd_limit(3000 + 256)
    pid = daemon.proc.pid
    deadline = time.monotonic() + 10  # (the clock's timerfd is made as the first tick nears)
    while ctl(run, "status")[1]["status"]["t"] <= 0.0 and time.monotonic() < deadline:
        time.sleep(0.2)
    before = open_fds(pid)
    socks = connect_at_once(run / "hild.ctl", 3000)
    try:
        answers = read_lines(socks, 60.0, closing=3000 - MAX_CONNECTIONS)
        refused = [i for i, lines in answers.items() if lines]
        held = [i for i, lines in answers.items() if not lines]  # told nothing, not closed
        held_fds = open_fds(pid)
        assert len(held) == MAX_CONNECTIONS and len(refused) == 3000 - MAX_CONNECTIONS
        assert all(
            answers[i][0]["error"].startswith("busy:") and answers[i][-1] is None for i in refused
        )
        assert held_fds <= before + MAX_CONNECTIONS + 2, (before, held_fds)
        code, answer, _ = ctl(run, "status")  # the slots are all taken: refused, not held
        assert code == 1 and answer["error"].startswith("busy:"), answer
    finally:
        for s in socks:
            s.close()
    deadline = time.monotonic() + 10
    while open_fds(pid) > before and time.monotonic() < deadline:  # the held ones let go
        time.sleep(0.1)
    assert open_fds(pid) <= before
    assert ctl(run, "status")[0] == 0


def test_an_idle_connection_is_told_so_and_closed_and_frees_its_slot(tmp_path):
    """A connection that sends nothing held its slot for as long as its client liked. (In
    process, with a short idle time and one slot, so as not to wait the daemon's 30 s.)"""
    import asyncio
    from types import SimpleNamespace

    from hild.live.ctl import ControlSocket
    from hild.live.status import StatusBoard

    run = SimpleNamespace(bench=SimpleNamespace(run_dir=tmp_path / "run"))
    path = str(tmp_path / "run" / "hild.ctl")

    async def main() -> None:
        server = ControlSocket(StatusBoard())
        server.idle_timeout_s, server.max_connections = 0.5, 1
        await server.start(run)  # type: ignore[arg-type]
        try:
            reader, writer = await asyncio.open_unix_connection(path)
            await asyncio.sleep(0.1)  # (accepted: it holds the one slot)
            other, other_writer = await asyncio.open_unix_connection(path)
            said = json.loads(await asyncio.wait_for(other.readline(), 5))
            assert said["ok"] is False and said["error"].startswith("busy: 1 hild ctl"), said
            assert await asyncio.wait_for(other.read(), 5) == b""
            other_writer.close()
            said = json.loads(await asyncio.wait_for(reader.readline(), 5))
            assert said == {
                "ok": False,
                "error": "idle: no request in 0.5 s; connect again to send one",
            }, said
            assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the daemon
            writer.close()
            # its slot is free again: a request is answered (one the run cannot take here)
            reader, writer = await asyncio.open_unix_connection(path)
            writer.write(b'{"request": "nothing"}\n')
            said = json.loads(await asyncio.wait_for(reader.readline(), 5))
            assert said["ok"] is False and said["error"].startswith("a request among"), said
            writer.close()
            assert server.summary()["ctl"]["connections_idle_closed"] == 1
            assert server.summary()["ctl"]["connections_refused"] == 1
        finally:
            await server.stop(run)  # type: ignore[arg-type]

    asyncio.run(main())
