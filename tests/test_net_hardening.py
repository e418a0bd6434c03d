"""Hardening of the network ports (issue 11): the real daemon under hostile TCP and UDP traffic.

The tests run `hild run` as a subprocess (JSON logs, its file-descriptor limit lowered to 256)
and talk to it over real sockets on 127.0.0.1; the last few check the pieces in-process. Each
says what it reproduces: the finding it guards against, which it failed on before the fix.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from endpoints import free_tcp_port, free_udp_port, nmea_line
from structlog.testing import capture_logs

from hild.log import SurvivingStream, route_asyncio_errors
from hild.transport.base import PortStats
from hild.transport.budget import INPUT_BUDGET_S, WINDOW_S, InputBudget
from hild.transport.judging import PROBE_S, THROTTLE_AFTER, Verdict
from hild.transport.senders import SENDER_INBOX, SenderTable
from hild.transport.unread import PeerQueues
from hild.transport.url import PortUrlError, parse_port_url

DAEMON_NOFILE = 256  # the daemon's file-descriptor limit in these tests (systemd's is 1024)
CONNECTIONS = 2000
RUN_S = 4.0  # the length of every measured run, traffic or baseline

# What traffic costs the loop's deadlines is measured in bench/ (bench_bus.py, bench_flood.py:
# overruns against a baseline run in the same process), not judged here: on a busy laptop or a
# Pi a test's overruns are the machine's load. These tests assert what happened: the run went
# to its end on its own, every tick stepped, and the traffic was read, refused or dropped.

HEAD = """
[bench]
rate_hz = 100
seed = 1
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"
stats_interval = 1.0
[vessel]
profile = "odin"
"""

NET = """
[[device]]
name = "jets"
type = "jet-controller"
rate_hz = 5
ports = ["tcp://127.0.0.1:{tcp}"]
[[device]]
name = "gps"
type = "gps"
rate_hz = 10
baud = 115200
ports = ["tcp://127.0.0.1:{tcp}", "pty://gps"]
"""

TRC = nmea_line("RCTRC,0,1500.0,R,100.0,P,,B,C")


def write_bench(tmp_path: Path, body: str, name: str = "bench", **fields) -> str:
    path = tmp_path / f"{name}.toml"
    text = HEAD + textwrap.dedent(body)
    path.write_text(text.format(run_dir=tmp_path / "run", **fields))
    return str(path)


def _limit_fds() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (DAEMON_NOFILE, DAEMON_NOFILE))


class Run:
    """`hild run BENCH --log-format json ...`: a lowered fd limit, stdout and stderr to files."""

    def __init__(self, bench: str, tmp: Path, *args: str, name: str = "daemon"):
        self.stdout_path = tmp / f"{name}.stdout"
        self.stderr_path = tmp / f"{name}.stderr"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "hild.cli", "run", bench, "--log-format", "json", *args],
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                preexec_fn=_limit_fds,
            )

    def ready(self, timeout: float = 60.0) -> Run:
        """Wait for the banner (the ports are open, the loop starts right after)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if b"Ctrl-C stops" in self.stdout_path.read_bytes():
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no banner\n{self.stderr_path.read_text()}")

    def drive(self, send: Callable[[int], None], count: int, period_s: float = 0.1) -> dict:
        """A controller: ``send(n)`` every period_s for n = 0 .. count - 1, then SIGTERM, and
        ``send(n)`` on at that pace until the daemon has ended, so that its lease never runs
        out while the daemon still runs (what counts is what was sent before); the summary."""
        start, n = time.monotonic(), 0
        while n < count or self.proc.poll() is None:
            if n == count:
                self.proc.send_signal(signal.SIGTERM)
            if n < count:
                send(n)
            else:
                with contextlib.suppress(OSError):  # the port may be closing
                    send(n)
            n += 1
            time.sleep(max(0.0, start + n * period_s - time.monotonic()))
        return self.finish()

    def finish(self, timeout: float = 30.0, stop: bool = False) -> dict:
        """Wait for the end of the run (SIGTERM first if stop); check the log; the summary."""
        if stop and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            assert self.proc.wait(timeout) == 0, self.stderr_path.read_text()[-3000:]
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        events = json_events(self.stderr_path.read_text())
        summaries = [e for e in events if e["event"] == "run.summary"]
        assert len(summaries) == 1
        return summaries[0]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def json_events(text: str) -> list[dict]:
    """Every line of the log is one JSON event: nothing else (a traceback, a bare message)."""
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            event = json.loads(line)
        except ValueError:
            raise AssertionError(f"line {number} of the log is not JSON: {line[:300]!r}") from None
        assert isinstance(event, dict) and "event" in event, line
        events.append(event)
    return events


def figures(summary: dict) -> str:
    keys = ("ticks", "overruns", "jitter_p50_ms", "jitter_p99_ms", "jitter_max_ms", "cpu_percent")
    return " ".join(f"{k}={summary[k]}" for k in keys)


def assert_ran_to_its_end(loaded: dict) -> None:
    """The run under traffic stopped at its duration, not for the traffic, with every tick."""
    print(f"with traffic: {figures(loaded)}")  # for the reader; bench/ judges the deadlines
    assert loaded["reason"] == "duration", loaded
    assert loaded["ticks"] == round(RUN_S * 100), loaded


def raise_own_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= need:
        return
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"this test needs {need} file descriptors, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def connect_nowait(port: int) -> socket.socket:
    """A TCP connection to 127.0.0.1:port that completes in the kernel, without waiting here."""
    s = socket.socket()
    s.setblocking(False)
    code = s.connect_ex(("127.0.0.1", port))
    assert code in (0, errno.EINPROGRESS), os.strerror(code)
    return s


# --- TCP: connections, floods, half-closed clients ----------------------------------------------


def test_two_thousand_tcp_connections_are_refused_and_cost_no_deadline(tmp_path):
    # Reproduces: with no client limit about 1,100 idle connections exhausted the daemon's fds,
    # every tick overran, and asyncio logged a traceback for each failed accept (non-JSON text
    # in the JSON log); 200 clients connecting and leaving made ticks 114-121 ms late.
    raise_own_fd_limit(CONNECTIONS + 256)
    tcp = free_tcp_port()
    bench = write_bench(tmp_path, NET, tcp=tcp)
    run = Run(bench, tmp_path, "--duration", str(RUN_S)).ready()
    held: list[socket.socket] = []
    try:
        for _ in range(200):  # churn: connect and leave at once
            connect_nowait(tcp).close()
        for _ in range(CONNECTIONS // 100):  # then 2,000 held open, in batches of 100
            held.extend(connect_nowait(tcp) for _ in range(100))
            time.sleep(0.05)
        loaded = run.finish()
    finally:
        run.kill()
        for s in held:
            s.close()
    assert_ran_to_its_end(loaded)
    stats = loaded["ports"][f"tcp://127.0.0.1:{tcp}"]
    # 16 clients (the default max_clients) may stay; the rest, held or not, are refused. How
    # many reach the daemon within the run depends on the machine: accepting runs under the
    # input budget, the kernel holds at most BACKLOG waiting connections and drops further SYNs,
    # which the client's kernel sends again only after 1 s and then 3 s; on a loaded machine a
    # few hundred arrive after the run has ended (CI once saw 1,122 refused of 2,000, usually
    # 1,850 or more). Without a client limit none at all would be refused; half of them, in a
    # 4 s run with no overrun beyond the baseline's, shows the limit holding under the load.
    # A held connection that reads nothing is replaced by a newcomer once it has gone two
    # seconds without reading (tcp.REPLACE_S): some newcomers take a place instead of being
    # refused.
    assert stats["refused"] + stats["dropped_clients"] >= CONNECTIONS // 2, stats
    events = json_events(run.stderr_path.read_text())
    assert [e for e in events if e["event"] == "port.refused"]  # logged, rate-limited
    assert len([e for e in events if e["event"] == "port.refused"]) <= 5


def flood(sock: socket.socket, stop: threading.Event, sent: list[int]) -> None:
    """Write valid commands as fast as the daemon takes them, until stop or the port closes."""
    block = TRC * (65536 // len(TRC))
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            sent[0] += sock.send(block)
        except TimeoutError:
            continue
        except OSError:
            return


def test_a_tcp_line_flood_costs_no_deadline(tmp_path):
    # Reproduces: one client flooding lines caused 66-115 overruns per 500 ticks: the port's
    # reader went through everything buffered without yielding to the loop.
    tcp = free_tcp_port()
    bench = write_bench(tmp_path, NET, tcp=tcp)
    run = Run(bench, tmp_path, "--duration", str(RUN_S)).ready()
    stop, sent = threading.Event(), [0]
    sock = socket.create_connection(("127.0.0.1", tcp), timeout=5)
    writer = threading.Thread(target=flood, args=(sock, stop, sent), daemon=True)
    writer.start()
    try:
        loaded = run.finish()
    finally:
        stop.set()
        writer.join(5)
        sock.close()
        run.kill()
    print(f"flood: {sent[0] / 1e6:.1f} MB written in {RUN_S} s")
    assert_ran_to_its_end(loaded)
    jets = loaded["devices"]["jets"]
    assert jets["commands"] > 1000  # the flood's lines were read, as commands, on the usual path
    assert loaded["ports"][f"tcp://127.0.0.1:{tcp}"]["received_lines"] >= jets["commands"]


def test_a_half_closed_tcp_client_keeps_receiving_sentences(tmp_path):
    # Reproduces: a client that shut down its sending side (shutdown(SHUT_WR), as `nc -N` or a
    # logger that never talks does) was dropped at once: it read end of file, no sentences.
    tcp = free_tcp_port()
    run = Run(write_bench(tmp_path, NET, tcp=tcp), tmp_path).ready()
    try:
        client = socket.create_connection(("127.0.0.1", tcp), timeout=5)
        client.sendall(TRC)  # a last command, then nothing more to say
        client.shutdown(socket.SHUT_WR)
        data, deadline = b"", time.monotonic() + 1.5
        while time.monotonic() < deadline:
            chunk = client.recv(65536)
            assert chunk, f"dropped after {len(data)} bytes"
            data += chunk
        client.close()
        summary = run.finish(stop=True)
    finally:
        run.kill()
    assert data.count(b"$GPGGA") >= 10  # 10 Hz for 1.5 s
    assert summary["devices"]["jets"]["commands"] == 1


# --- UDP: bound ports, send-only ports -----------------------------------------------------------


def test_a_bound_udp_port_is_not_shared_with_another_socket(tmp_path):
    # Reproduces: ?bind= set SO_REUSEADDR, so another local socket could bind the same port and
    # receive the controller's datagrams (100 of 100 in the probe), and hild started without a
    # word when the port was already held.
    held = free_udp_port()
    bench = write_bench(
        tmp_path,
        """
        [[device]]
        name = "jets"
        type = "jet-controller"
        ports = ["udp://127.0.0.1:{out}?bind=127.0.0.1:{held}"]
    """,
        out=free_udp_port(),
        held=held,
    )
    thief = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    thief.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    thief.bind(("127.0.0.1", held))
    first = Run(bench, tmp_path, name="first")
    try:
        code = first.proc.wait(60)
    finally:
        first.kill()
        thief.close()
    error = first.stderr_path.read_text()
    assert code != 0 and "Traceback" not in error, error
    assert f"127.0.0.1:{held}" in error and "in use" in error, error

    run = Run(bench, tmp_path).ready()
    try:
        for option in (socket.SO_REUSEADDR, socket.SO_REUSEPORT):
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as thief:
                thief.setsockopt(socket.SOL_SOCKET, option, 1)
                with pytest.raises(OSError) as info:
                    thief.bind(("127.0.0.1", held))
                assert info.value.errno == errno.EADDRINUSE
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as controller:
            for _ in range(5):
                controller.sendto(TRC, ("127.0.0.1", held))
        time.sleep(0.3)
        summary = run.finish(stop=True)
    finally:
        run.kill()
    assert summary["devices"]["jets"]["commands"] == 5  # all of them reached hild


def test_a_send_only_udp_port_takes_no_controller_input(tmp_path):
    # Reproduces: a UDP port that only sends (no listen=1, no bind=) sent from a socket bound to
    # 0.0.0.0 on an ephemeral port, and whatever arrived there was taken as controller input:
    # any local process (or one on another interface) could drive the jets through it.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as feedback:
        feedback.bind(("127.0.0.1", 0))
        feedback.settimeout(10)
        url = f"udp://127.0.0.1:{feedback.getsockname()[1]}"
        bench = write_bench(
            tmp_path,
            """
            [[device]]
            name = "jets"
            type = "jet-controller"
            rate_hz = 10
            ports = ["{url}"]
        """,
            url=url,
        )
        run = Run(bench, tmp_path).ready()
        try:
            _, source = feedback.recvfrom(4096)  # where the daemon sends from
            assert source[0] == "127.0.0.1"
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as foreign:
                for _ in range(5):
                    foreign.sendto(TRC, source)
                    foreign.sendto(TRC, ("127.0.0.2", source[1]))  # reaches a 0.0.0.0 socket only
            time.sleep(0.3)
            summary = run.finish(stop=True)
        finally:
            run.kill()
    assert summary["devices"]["jets"]["commands"] == 0 and summary["commands_applied"] == 0
    stats = summary["ports"][url]
    assert stats["refused"] == 5 and stats["received_lines"] == 0, stats  # counted and dropped
    assert stats["sent_lines"] > 0


# --- Closed standard streams ----------------------------------------------------------------------


def test_a_closed_stderr_does_not_end_the_run(tmp_path):
    # Reproduces: `hild run 2>&1 | head -1`: once the reader had gone, the next log line raised
    # BrokenPipeError, the daemon died before its --duration and left its pty link behind.
    bench = write_bench(tmp_path, NET, tcp=free_tcp_port())
    link = tmp_path / "run" / "gps"
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hild.cli", "run", bench, "--log-format", "json", "--duration", "3"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        first = proc.stderr.readline()
        proc.stderr.close()  # what `| head -1` does after one line
        assert json.loads(first)["event"]
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0
    assert time.monotonic() - started >= 3.0  # it ran to its --duration
    assert not os.path.lexists(link)  # and cleaned up after itself


def test_a_closed_stdout_does_not_end_the_run(tmp_path):
    # Reproduces: `hild run | head -1`: writing the banner to a closed stdout raised
    # BrokenPipeError and ended the run before it started.
    bench = write_bench(tmp_path, NET, tcp=free_tcp_port())
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hild.cli", "run", bench, "--log-format", "json", "--duration", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        proc.stdout.close()
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0
    assert time.monotonic() - started >= 2.0
    assert not os.path.lexists(tmp_path / "run" / "gps")


# --- In-process: the pieces ----------------------------------------------------------------------


def test_asyncio_errors_become_one_rate_limited_event_each():
    # Reproduces: asyncio's default handler printed every failed accept, callback that raised
    # and unretrieved task exception as a multi-line traceback on stderr, outside the JSON log
    # (214,028 of them, 87 MB, in the probe).
    def boom():
        raise ValueError("bad value")

    async def fails():
        raise KeyError("lost")

    async def main():
        loop = asyncio.get_running_loop()
        route_asyncio_errors(loop)
        for _ in range(5):
            loop.call_soon(boom)
        emfile = OSError(errno.EMFILE, "Too many open files")
        for _ in range(3):
            loop.call_exception_handler(
                {"message": "socket.accept() out of system resource", "exception": emfile}
            )
        task = loop.create_task(fails())
        await asyncio.sleep(0.01)
        del task  # never awaited: its exception is reported when it is collected
        gc.collect()

    with capture_logs() as logs:
        asyncio.run(main())
    events = [e for e in logs if e["event"] == "asyncio.error"]
    by_message = {e["message"].split(" at ")[0]: e for e in events}
    assert len(events) == len(by_message) == 3, events  # one per kind; repeats are held back
    callback = next(e for m, e in by_message.items() if m.startswith("Exception in callback"))
    assert callback["error"] == "ValueError('bad value')" and "in boom" in callback["where"]
    accept = by_message["socket.accept() out of system resource"]
    assert accept["error"] == "OSError(24, 'Too many open files')"
    assert by_message["Task exception was never retrieved"]["error"] == "KeyError('lost')"
    assert all("\n" not in str(value) for e in events for value in e.values())


def test_a_stream_whose_reader_has_gone_is_let_go_of_quietly(tmp_path):
    # Reproduces: structlog printed to stderr with print(): a broken pipe raised in whatever
    # code was logging, and the interpreter's last flush at exit failed again.
    read_end, write_end = os.pipe()
    stream = os.fdopen(write_end, "w")
    surviving = SurvivingStream(stream)
    surviving.write("one\n")
    surviving.flush()
    assert os.read(read_end, 100) == b"one\n"
    os.close(read_end)  # the reader goes away
    surviving.write("two\n")
    surviving.flush()  # EPIPE: dropped, not raised
    assert surviving.lost
    surviving.write("three\n")
    assert surviving.dropped >= 2
    stream.write("the fd is /dev/null now\n")
    stream.flush()  # what else writes to it (the interpreter at exit) succeeds too
    stream.close()


def test_a_flooding_reader_leaves_the_loop_and_the_other_readers_their_time():
    # Reproduces: a TCP client's data was all worked through in one go (the stream reader's
    # loop never yielded while data was buffered), so one flooding client held the loop for
    # 100 ms and more and every other input waited behind it.
    class Reader:
        def __init__(self, slices: int, cost_s: float):
            self.left, self.cost_s = slices, cost_s
            self.paused = self.done = False

        def input_slice(self) -> bool:
            start = time.perf_counter()
            while time.perf_counter() - start < self.cost_s:
                pass
            self.left -= 1
            return self.left > 0

        def input_pause(self) -> None:
            self.paused = True

        def input_resume(self) -> None:
            self.paused, self.done = False, True

    async def main() -> tuple[float, float, Reader, Reader, InputBudget]:
        budget = InputBudget.of()
        flood, command = Reader(10**9, 0.0002), Reader(3, 0.0002)
        budget.run(flood)
        budget.run(command)
        assert flood.paused and command.paused  # both wait: the flood spent the window
        late, start = 0.0, time.monotonic()
        while time.monotonic() - start < 0.3:  # a 100 Hz ticker, as the daemon's loop
            deadline = time.monotonic() + WINDOW_S
            await asyncio.sleep(WINDOW_S)
            late = max(late, time.monotonic() - deadline)
        return late, flood.left, flood, command, budget

    late, left, flood, command, budget = asyncio.run(main())
    assert command.done and not command.paused  # served in turn, within a window or two
    assert flood.paused and not flood.done  # still waiting its turns
    # the flood got about the budget's share of the time (30 windows of 2 ms = 0.06 s of work)
    slices = 10**9 - left
    assert slices * 0.0002 <= 0.3 * INPUT_BUDGET_S / WINDOW_S * 1.5, slices
    # Without the budget run() would never have returned; with it the ticker is late by the
    # budget and a slice at most (3 ms), the rest of the bound is for a busy machine.
    assert late < 5 * WINDOW_S, late


@pytest.mark.parametrize("value", ["0", "1001", "many", "-1", "2.5"])
def test_max_clients_must_be_a_number_of_clients(value):
    url = f"tcp://127.0.0.1:10110?max_clients={value}"
    with pytest.raises(PortUrlError) as info:
        parse_port_url(url)
    message = str(info.value)
    assert f"max_clients={value!r} is not a number of clients" in message
    assert "1..1000" in message and "(default 16)" in message


def test_max_clients_is_a_tcp_option():
    assert parse_port_url("tcp://127.0.0.1:10110?max_clients=04").options == (("max_clients", "4"),)
    with pytest.raises(PortUrlError, match="unknown query parameter 'max_clients'"):
        parse_port_url("udp://127.0.0.1:10110?max_clients=4")


PTY_JETS = """
[[device]]
name = "jets"
type = "jet-controller"
rate_hz = 5
ports = ["pty://jets"]
"""


def test_a_pty_flood_of_garbage_lines_costs_no_deadline(tmp_path):
    # Reproduces: "x\n" written to the jets pty as fast as it is read caused 496 overruns in
    # 500 ticks: each 4 kB read went to the decoder (2,000 lines, each refused and counted) in
    # one go, about 20 ms. A tty's reads now share the input budget with the network ports.
    bench = write_bench(tmp_path, PTY_JETS)
    run = Run(bench, tmp_path, "--duration", str(RUN_S)).ready()
    fd = os.open(tmp_path / "run" / "jets", os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    stop, written = threading.Event(), [0]

    def write_garbage() -> None:
        block = b"x\n" * 2048
        while not stop.is_set():
            try:
                written[0] += os.write(fd, block)
            except BlockingIOError:
                time.sleep(0.001)
            except OSError:
                return

    writer = threading.Thread(target=write_garbage, daemon=True)
    writer.start()
    try:
        loaded = run.finish()
    finally:
        stop.set()
        writer.join(5)
        os.close(fd)
        run.kill()
    print(f"pty flood: {written[0] / 1e6:.1f} MB written in {RUN_S} s")
    assert_ran_to_its_end(loaded)
    rejected = loaded["devices"]["jets"]["rejected_total"]
    screened = next(iter(loaded["ports"].values()))["throttled"]
    # the garbage was read: refused, then screened out unread once the pty was throttled
    assert rejected >= THROTTLE_AFTER and rejected + screened > 10_000, (rejected, screened)


# --- Neighbours (issue 24): silent TCP clients, a UDP flood from another sender ------------------

GPS_TCP = """
[[device]]
name = "gps"
type = "gps"
rate_hz = 10
baud = 115200
ports = [{ports}]
"""


class BackseatReader(threading.Thread):
    """A TCP client that reads what arrives every 0.1 s, as a backseat's 10 Hz loop does."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.setblocking(False)
        self.data = b""
        self.ended: str | None = None  # why reading ended before stop(), if it did
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(0.1):
            try:
                chunk = self.sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError as e:
                self.ended = repr(e)
                return
            if not chunk:
                self.ended = "closed by the daemon"
                return
            self.data += chunk

    def stop(self) -> bytes:
        self._halt.set()
        self.join(5)
        self.sock.close()
        return self.data


def test_silent_tcp_clients_cannot_lock_a_port(tmp_path):
    # Reproduces: clients that connect and never read held every slot of a TCP port forever; a
    # backseat arriving later was accepted and closed at once (0 bytes, then a reset). Now the
    # newcomer takes the place of the client that has gone longest without reading, and a
    # client that reads nothing for SILENT_S (5 s) while bytes wait for it is dropped, counted.
    tcp = free_tcp_port()
    url = f"tcp://127.0.0.1:{tcp}?max_clients=2"
    run = Run(write_bench(tmp_path, GPS_TCP, ports=f'"{url}"'), tmp_path).ready()
    silent = [socket.create_connection(("127.0.0.1", tcp), timeout=5) for _ in range(2)]
    try:
        time.sleep(3.0)  # both hold the port, sentences waiting for them unread (REPLACE_S 2 s)
        reader = BackseatReader(tcp)
        reader.start()
        time.sleep(8.0)  # longer than SILENT_S: the reader, reading, stays
        ended = reader.ended
        data = reader.stop()
        summary = run.finish(stop=True)
    finally:
        run.kill()
        for s in silent:
            s.close()
    assert ended is None, ended  # never dropped nor refused
    assert data.count(b"$GPGGA") >= 20, data[-300:]  # 10 Hz for 8 s; a busy machine sends fewer
    stats = summary["ports"][url]
    assert stats["refused"] == 0, stats
    # one silent client replaced by the reader, the other dropped for reading nothing for 5 s
    assert stats["dropped_clients"] == 2, stats
    events = json_events(run.stderr_path.read_text())
    dropped = [e for e in events if e["event"] == "port.client_dropped"]
    assert dropped and "replaced by a newcomer" in dropped[0]["reason"], dropped
    left = [e["reason"] for e in events if e["event"] == "port.client_left"]
    assert any(reason.startswith("read nothing for 5 s") for reason in left), left


def test_a_newcomer_never_takes_the_place_of_a_client_that_reads(tmp_path):
    # The other side of the rule above: newcomers knocking at a full port must not push out a
    # backseat that reads at 10 Hz; they are refused, and the reader keeps its place.
    tcp = free_tcp_port()
    url = f"tcp://127.0.0.1:{tcp}?max_clients=1"
    run = Run(write_bench(tmp_path, GPS_TCP, ports=f'"{url}"'), tmp_path).ready()
    reader = BackseatReader(tcp)
    reader.start()
    knockers = []
    try:
        for _ in range(3):  # each after more than REPLACE_S (2 s)
            time.sleep(2.5)
            knockers.append(socket.create_connection(("127.0.0.1", tcp), timeout=5))
        time.sleep(0.5)
        ended = reader.ended
        data = reader.stop()
        summary = run.finish(stop=True)
    finally:
        run.kill()
        for s in knockers:
            s.close()
    assert ended is None, ended
    assert data.count(b"$GPGGA") >= 20, data[-300:]  # 10 Hz for 8 s
    stats = summary["ports"][url]
    assert stats["dropped_clients"] == 0 and stats["refused"] == 3, stats


def test_a_tcp_controller_that_never_reads_its_feedback_is_not_dropped(tmp_path):
    # A controller may send commands and ignore the feedback the port writes back: it does
    # not read, but it is no silent client. (The first cut of the silent-client rule dropped
    # it after 5 s: its commands from then on were lost, a watchdog trip.)
    tcp = free_tcp_port()
    bench = write_bench(
        tmp_path,
        """
        [[device]]
        name = "jets"
        type = "jet-controller"
        rate_hz = 10
        ports = ["tcp://127.0.0.1:{tcp}"]
    """,
        tcp=tcp,
    )
    run = Run(bench, tmp_path).ready()
    sent = 0
    try:
        controller = socket.create_connection(("127.0.0.1", tcp), timeout=5)
        start = time.monotonic()
        while sent < 80:  # 8 s at 10 Hz, longer than SILENT_S
            controller.sendall(TRC)
            sent += 1
            time.sleep(max(0.0, start + sent * 0.1 - time.monotonic()))
        summary = run.finish(stop=True)
        controller.close()
    finally:
        run.kill()
    stats = summary["ports"][f"tcp://127.0.0.1:{tcp}"]
    assert stats["dropped_clients"] == 0, stats
    assert summary["devices"]["jets"]["commands"] == sent, summary["devices"]["jets"]


def test_the_descriptor_guard_on_one_full_port_leaves_another_port_accepting(tmp_path):
    # Reproduces: with a large max_clients, clients that never read took every descriptor up
    # to the guard (FD_RESERVE below the limit) and then every TCP port refused newcomers, the
    # frontseat's included. The guard now makes room from the client that has gone longest
    # without reading, or from the port holding the most clients, and refuses only there.
    raise_own_fd_limit(1024)
    full, other = free_tcp_port(), free_tcp_port()
    full_url = f"tcp://127.0.0.1:{full}?max_clients=1000"
    other_url = f"tcp://127.0.0.1:{other}"
    bench = write_bench(tmp_path, GPS_TCP, ports=f'"{full_url}", "{other_url}"')
    run = Run(bench, tmp_path).ready()
    held: list[socket.socket] = []
    try:
        held.extend(connect_nowait(full) for _ in range(DAEMON_NOFILE + 50))
        time.sleep(2.0)  # the daemon has taken what its descriptors allow
        reader = BackseatReader(other)
        reader.start()
        time.sleep(2.0)
        ended = reader.ended
        data = reader.stop()
        summary = run.finish(stop=True)
    finally:
        run.kill()
        for s in held:
            s.close()
    assert ended is None, ended
    assert data.count(b"$GPGGA") >= 5, data[-300:]
    assert summary["ports"][other_url]["refused"] == 0
    stats = summary["ports"][full_url]
    assert stats["refused"] + stats["dropped_clients"] > 0, stats  # the guard was reached


GARBAGE = nmea_line("RCTRC,0,1500.0,R,100.0,P,,B,C")[:-4] + b"00\r\n"  # a bad checksum
FLOOD_PER_S = 20_000
UDP_JETS = """
[[device]]
name = "jets"
type = "jet-controller"
rate_hz = 5
ports = ["{url}"]
"""


def test_a_udp_command_port_serves_its_controller_under_a_flood_from_another_sender(tmp_path):
    # Reproduces: 2 M garbage datagrams in 8 s on the command port let 1 of 93 of the real
    # controller's commands through and tripped the watchdog: the kernel's receive buffer
    # overflowed while the port worked through garbage, dropping the controller's datagrams
    # with the flood's. The socket is now drained as datagrams come, each sender has its own
    # small inbox served in turn, and a sender of nothing but refused lines is throttled.
    udp = free_udp_port()
    url = f"udp://127.0.0.1:{udp}?listen=1"
    run = Run(write_bench(tmp_path, UDP_JETS, url=url), tmp_path).ready()
    stop, flooded = threading.Event(), [0]

    def flood_garbage() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            start = time.monotonic()
            while not stop.is_set():
                due = int((time.monotonic() - start) * FLOOD_PER_S)
                while flooded[0] < due:
                    s.sendto(GARBAGE, ("127.0.0.1", udp))
                    flooded[0] += 1
                time.sleep(0.001)

    flooder = threading.Thread(target=flood_garbage, daemon=True)
    flooder.start()
    controller = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stopped = 50  # commands sent before the daemon is stopped
    try:
        time.sleep(0.5)
        summary = run.drive(lambda n: controller.sendto(TRC, ("127.0.0.1", udp)), stopped)
    finally:
        stop.set()
        flooder.join(5)
        controller.close()
        run.kill()
    jets = summary["devices"]["jets"]
    stats = summary["ports"][url]
    print(f"flood: {flooded[0]} datagrams; commands sent {stopped}, applied {jets['commands']}")
    assert flooded[0] > 50 * 0.1 * FLOOD_PER_S * 0.5  # the flood ran, near its rate
    assert jets["watchdog_trips"] == 0, jets
    assert jets["commands"] >= 0.95 * stopped, (jets["commands"], stopped)
    # the flood was counted: decoded and refused, or discarded unread as a throttled sender's
    assert stats["throttled"] > 0 and sum(jets["rejected"].values()) > 0, (stats, jets)
    assert stats["throttled"] + stats["received_lines"] >= 0.5 * flooded[0], stats


class WordScreen:
    """A screen to which one word is the only well-formed line."""

    def __init__(self, word: bytes):
        self.word = word

    def lines(self, data: bytes) -> tuple[list[bytes], int, int]:
        ended = data.splitlines()[: -1 if data[-1:] not in b"\r\n" else None]
        return [x for x in ended if x == self.word], len(ended), len(data)

    def any_line(self, datagram: bytes) -> bool:
        return self.word in datagram.splitlines()


def test_a_flooding_sender_leaves_the_others_their_turn():
    # The pieces of the UDP port's fair share (senders.py): a flood fills only its own inbox,
    # the senders are served in turn, and a sender of nothing but malformed lines is throttled.
    stats = PortStats()
    table = SenderTable(lambda host: host == "127.0.0.1", stats)
    table.screen = WordScreen(b"command")  # the port's test of well-formed lines
    flooder, controller, outsider = ("127.0.0.1", 1001), ("127.0.0.1", 1002), ("10.0.0.1", 1003)
    for _ in range(100):
        table.put(b"garbage", flooder, 0.0)
    assert stats.throttled == 100 - SENDER_INBOX  # beyond its inbox, discarded on arrival
    assert table.put(b"command", controller, 0.0) is not None
    assert not table.put(b"x", outsider, 0.0).allowed  # for the port to refuse, not filed
    taken = [table.take()[1] for _ in range(3)]
    assert taken == [b"garbage", b"command", b"garbage"]  # the controller's turn came second
    sender = table.take()[0]
    for _ in range(THROTTLE_AFTER - 1):
        assert not table.judge(sender, Verdict.MALFORMED, 1.0)
    assert table.judge(sender, Verdict.MALFORMED, 1.0)  # throttled: what waited is discarded
    assert not table.pending and sender.throttled
    # A probe at once, for the rest of the burst: its malformed datagrams are discarded, the
    # first that may be of use is read; then the next probe is due PROBE_S after this one's.
    before = stats.throttled
    assert table.put(b"garbage", flooder, 1.001) is None
    assert table.put(b"command", flooder, 1.002) is not None
    assert stats.throttled == before + 1
    table.take()
    assert table.put(b"command", flooder, 1.001 + PROBE_S / 2) is None  # its probe not due
    assert stats.throttled == before + 2
    assert table.put(b"command", flooder, 1.001 + PROBE_S) is not None  # the next probe
    table.judge(sender, Verdict.APPLIED, 1.0 + PROBE_S)  # of use again: served first now
    assert not sender.throttled and sender.delivering(1.0 + PROBE_S)


def test_the_kernel_tells_what_a_local_client_has_not_read():
    # What the silent-client rule rests on: the unread bytes in a local peer's receive queue.
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        ours, peer = server.accept()
        queues = PeerQueues()
        try:
            assert queues.unread(peer, ours.getsockname()) == 0
            ours.sendall(b"x" * 1000)
            deadline = time.monotonic() + 5
            while queues.unread(peer, ours.getsockname()) != 1000:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            client.recv(300)
            assert queues.unread(peer, ours.getsockname()) == 700
            client.close()
            ours.close()
            assert queues.unread(peer, ("127.0.0.1", 1)) is None  # no such connection here
        finally:
            queues.close()
            client.close()
            ours.close()
