"""hild.transport on real ptys and real sockets on 127.0.0.1: URLs, lines, pty, serial, UDP, TCP."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import socket
import termios
import time
import tty
from pathlib import Path

import pytest

from hild.transport import (
    MAX_LINE_BYTES,
    LineSplitter,
    PortStats,
    PortUrlError,
    PtyPort,
    SerialPort,
    TcpServerPort,
    UdpPort,
    open_port,
    parse_port_url,
)

TIMEOUT_S = 10.0


def run_async(fn):
    """Run an async test function to completion on a fresh loop, with a hard time limit."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        asyncio.run(asyncio.wait_for(fn(*args, **kwargs), TIMEOUT_S))

    return wrapper


def nmea(body: str) -> bytes:
    """A complete sentence with its checksum and CRLF."""
    checksum = 0
    for ch in body.encode():
        checksum ^= ch
    return f"${body}*{checksum:02X}\r\n".encode()


GGA = nmea("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
RMC = nmea("GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W")


async def wait_for(condition, timeout: float = 3.0, what: str = "condition") -> None:
    """Poll condition() until it is true; fail the test after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.005)


async def read_fd_until(fd: int, done, timeout: float = 3.0) -> bytes:
    """Read a non-blocking fd until done(buffer) holds; fail with what arrived on timeout."""
    buf = b""
    deadline = time.monotonic() + timeout
    while not done(buf):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; received {len(buf)} bytes, ending {buf[-160:]!r}")
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            await asyncio.sleep(0.005)
            continue
        buf += chunk
    return buf


async def read_fd_until_quiet(fd: int, quiet: float = 0.1, timeout: float = 3.0) -> bytes:
    """Read a non-blocking fd until nothing has arrived for `quiet` seconds."""
    buf = b""
    deadline = time.monotonic() + timeout
    last = time.monotonic()
    while time.monotonic() - last < quiet and time.monotonic() < deadline:
        chunk = drain_fd(fd)
        if chunk:
            buf += chunk
            last = time.monotonic()
        await asyncio.sleep(0.005)
    return buf


def drain_fd(fd: int) -> bytes:
    """Read whatever a non-blocking fd holds right now."""
    buf = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return buf
        if not chunk:
            return buf
        buf += chunk


async def send_until_seen(port, fd: int, tag: str, tries: int) -> bytes:
    """Send numbered lines carrying ``tag`` every 10 ms until one arrives on ``fd``."""
    got = b""
    for k in range(tries):
        port.send(nmea(f"GPTST,{tag}{k},0"))
        await asyncio.sleep(0.01)
        got += drain_fd(fd)
        if tag.encode() in got:
            break
    return got


def open_client(path: str | Path, when: int = termios.TCSAFLUSH) -> int:
    """Open a tty the way a controller does: read/write, no controlling tty, raw, non-blocking."""
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    tty.setraw(fd, when)
    os.set_blocking(fd, False)
    return fd


def make_device(link: Path) -> tuple[int, int]:
    """A fake serial device: a raw pty pair whose slave is reached through link."""
    master, slave = os.openpty()
    tty.setraw(slave)
    os.set_blocking(master, False)
    if link.is_symlink():
        link.unlink()
    link.symlink_to(os.ttyname(slave))
    return master, slave


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- URLs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, fields",
    [
        (
            "serial:///dev/ttyUSB0?baud=4800",
            dict(scheme="serial", path="/dev/ttyUSB0", baud=4800, host=None, port=None),
        ),
        ("serial:///dev/ttyS1", dict(scheme="serial", path="/dev/ttyS1", baud=None)),
        ("udp://127.0.0.1:10110", dict(scheme="udp", host="127.0.0.1", port=10110, options=())),
        (
            "udp://255.255.255.255:10110",
            dict(scheme="udp", host="255.255.255.255", port=10110),
        ),
        (
            "udp://192.168.1.255:10110?broadcast=1",
            dict(host="192.168.1.255", options=(("broadcast", "1"),)),
        ),
        (
            "udp://239.192.0.1:60001?ttl=4&bind=:10111",
            dict(
                host="239.192.0.1", port=60001, options=(("bind", "127.0.0.1:10111"), ("ttl", "4"))
            ),
        ),
        ("tcp://127.0.0.1:10110", dict(scheme="tcp", host="127.0.0.1", port=10110)),
        ("tcp://:10110", dict(scheme="tcp", host="127.0.0.1", port=10110)),
        ("tcp://0.0.0.0:10110", dict(scheme="tcp", host="0.0.0.0", port=10110)),
        ("tcp://[::1]:10110", dict(scheme="tcp", host="::1", port=10110)),
        ("tcp://127.0.0.1:0", dict(scheme="tcp", port=0)),
        ("pty://gps", dict(scheme="pty", path="/run/hild-test/gps", baud=None)),
        ("pty://gps?baud=38400", dict(scheme="pty", path="/run/hild-test/gps", baud=38400)),
        ("pty:///tmp/elsewhere/ais", dict(scheme="pty", path="/tmp/elsewhere/ais")),
    ],
)
def test_valid_urls_give_the_right_fields(url, fields):
    spec = parse_port_url(url, run_dir="/run/hild-test")
    assert spec.url == url
    for name, value in fields.items():
        assert getattr(spec, name) == value, name


def test_option_lookup_with_default():
    spec = parse_port_url("udp://239.192.0.1:60001?ttl=8")
    assert spec.option("ttl") == "8"
    assert spec.option("bind") is None
    assert spec.option("bind", "x") == "x"


def test_relative_pty_name_uses_the_run_dir_default():
    assert parse_port_url("pty://gps").path == "/tmp/hild/gps"


@pytest.mark.parametrize(
    "url, problem",
    [
        ("ftp://127.0.0.1:21", "unknown scheme"),
        ("127.0.0.1:10110", "no scheme"),
        ("udp://127.0.0.1", "port number is missing"),
        ("tcp://127.0.0.1:", "port number is missing"),
        ("udp://127.0.0.1:0", "out of range"),
        ("udp://127.0.0.1:65536", "out of range"),
        ("tcp://127.0.0.1:99999", "out of range"),
        ("udp://127.0.0.1:port", "not a number"),
        ("udp://127.0.0.1:10110?speed=1", "unknown query parameter 'speed'"),
        ("tcp://127.0.0.1:10110?baud=4800", "unknown query parameter 'baud'"),
        ("serial:///dev/ttyUSB0?baud=fast", "not an integer"),
        ("serial:///dev/ttyUSB0?baud=4800.0", "not an integer"),
        ("serial:///dev/ttyUSB0?baud=1234", "not a standard rate"),
        ("serial://", "device path is missing"),
        ("serial://dev/ttyUSB0", "three slashes"),
        ("pty://../etc/passwd", "not a plain relative name"),
        ("udp://127.0.0.1:10110?ttl=300", "not a hop count"),
        ("udp://127.0.0.1:10110?bind=127.0.0.1", "has no port"),
        ("udp://127.0.0.1:10110?ttl=1&ttl=2", "given twice"),
        ("", "empty"),
    ],
)
def test_bad_urls_say_what_is_wrong_and_what_was_expected(url, problem):
    with pytest.raises(PortUrlError) as info:
        parse_port_url(url)
    message = str(info.value)
    assert repr(url) in message
    assert problem in message
    assert "expected" in message
    assert "e.g." in message  # an example of a valid URL


def test_unknown_parameter_error_lists_the_allowed_ones():
    with pytest.raises(PortUrlError, match="broadcast, ttl, bind"):
        parse_port_url("udp://127.0.0.1:10110?baud=4800")


def test_open_port_picks_the_class_for_the_scheme(tmp_path):
    cases = {
        "serial:///dev/ttyUSB0": SerialPort,
        "pty://gps": PtyPort,
        "udp://127.0.0.1:10110": UdpPort,
        "tcp://127.0.0.1:10110": TcpServerPort,
    }
    for url, cls in cases.items():
        port = open_port(parse_port_url(url, run_dir=tmp_path), queue_lines=8, default_baud=9600)
        assert type(port) is cls
    assert open_port(parse_port_url("serial:///dev/ttyUSB0")).baud == 4800
    assert open_port(parse_port_url("serial:///dev/ttyUSB0"), default_baud=9600).baud == 9600
    assert open_port(parse_port_url("serial:///dev/ttyUSB0?baud=38400")).baud == 38400


# --- The line splitter -------------------------------------------------------------------------


def split(chunks, datagram: bool = False) -> tuple[list[bytes], PortStats]:
    lines: list[bytes] = []
    stats = PortStats()
    splitter = LineSplitter(lines.append, stats)
    for chunk in chunks:
        (splitter.feed_datagram if datagram else splitter.feed)(chunk)
    return lines, stats


def test_splitter_joins_partial_lines_across_chunks():
    data = GGA + RMC
    chunks = [data[i : i + 7] for i in range(0, len(data), 7)]
    lines, stats = split(chunks)
    assert lines == [GGA[:-2], RMC[:-2]]
    assert stats.received_lines == 2


def test_splitter_handles_crlf_lf_and_skips_empty_lines():
    lines, _ = split([b"$A*00\r\n\r\n$B*00\n\n", b"$C", b"*00\r", b"\n"])
    assert lines == [b"$A*00", b"$B*00", b"$C*00"]


def test_splitter_keeps_a_partial_line_until_its_end_arrives():
    lines, _ = split([b"$A*00\r\n$B,1"])
    assert lines == [b"$A*00"]
    lines, _ = split([b"$A*00\r\n$B,1"], datagram=True)  # a datagram's last line is complete
    assert lines == [b"$A*00", b"$B,1"]


def test_splitter_survives_binary_garbage():
    no_newline = bytes(b for b in os.urandom(3000) if b != 0x0A)
    garbage = bytes(range(256)) * 3 + b"\xff\xfe\x00\n" + no_newline + b"\n" + GGA
    lines, stats = split([garbage[i : i + 33] for i in range(0, len(garbage), 33)])
    # bytes(range(256)) holds a newline (10) each time round: 4 lines of at most 255 bytes
    assert len(lines) == 5
    assert lines[0] == bytes(range(10))
    assert lines[-1] == GGA[:-2]
    assert stats.overlong_lines == 1  # the 3000 bytes without a newline
    assert all(len(line) <= MAX_LINE_BYTES for line in lines)


def test_splitter_discards_and_counts_overlong_lines():
    exact = b"$" + b"A" * (MAX_LINE_BYTES - 1)
    too_long = b"$" + b"B" * MAX_LINE_BYTES
    huge = b"C" * 5000
    data = exact + b"\r\n" + too_long + b"\r\n" + huge + b"\n" + GGA
    lines, stats = split([data[i : i + 100] for i in range(0, len(data), 100)])
    assert lines == [exact, GGA[:-2]]
    assert stats.overlong_lines == 2
    assert stats.received_lines == 2


# --- pty ---------------------------------------------------------------------------------------


@run_async
async def test_pty_client_reads_exact_bytes_and_writes_commands(tmp_path):
    run_dir = tmp_path / "run" / "hild"  # created by the port
    port = open_port(parse_port_url("pty://gps?baud=4800", run_dir=run_dir))
    received: list[bytes] = []
    port.on_line = received.append
    await port.start()
    link = run_dir / "gps"
    try:
        assert link.is_symlink()
        target = os.readlink(link)
        assert target.startswith("/dev/pts/")
        assert port.describe() == f"{link} (-> {target})"
        client = open_client(link)
        try:
            assert termios.tcgetattr(client)[4] == termios.B4800
            for _ in range(3):
                port.send(GGA)
                port.send(RMC)
            expected = (GGA + RMC) * 3
            got = await read_fd_until(client, lambda b: len(b) >= len(expected))
            assert got == expected
            os.write(client, b"$XXABC,1*00\r\n$XXDEF,2")
            await wait_for(lambda: received, what="a line from the client")
            os.write(client, b"*00\r\n")
            await wait_for(lambda: len(received) == 2, what="the second line")
            assert received == [b"$XXABC,1*00", b"$XXDEF,2*00"]
            assert port.stats.sent_lines == 6
            assert port.stats.sent_bytes == len(expected)
            assert port.stats.received_lines == 2
        finally:
            os.close(client)
    finally:
        await port.close()
        await port.close()  # idempotent
    assert not os.path.lexists(link)
    assert port.stats.connected is False


@run_async
async def test_pty_without_client_never_blocks_and_keeps_only_fresh_data(tmp_path):
    port = PtyPort(parse_port_url("pty://gps", run_dir=tmp_path), queue_lines=64)
    await port.start()
    try:
        start = time.monotonic()
        for batch in range(200):
            for i in range(100):
                port.send(nmea(f"GPTST,{batch * 100 + i:05d},{'X' * 40}"))
            await asyncio.sleep(0)
        elapsed = time.monotonic() - start
        assert elapsed < 1.0
        await wait_for(lambda: port._queue.idle, what="the writer to catch up")
        assert port.stats.flushes >= 1  # the pty filled up and its stale input was discarded
        assert port.stats.dropped_lines > 0  # bursts of 100 into a queue of 64
        assert port.stats.sent_lines + port.stats.dropped_lines == 20000

        for k in range(5):  # lines that fit after the last flush, so the check below has data
            port.send(nmea(f"GPTST,{20000 + k:05d},{'X' * 40}"))
        await wait_for(lambda: port._queue.idle, what="the writer to catch up")
        await asyncio.sleep(0.05)

        # tty.setraw's default TCSAFLUSH (and pyserial's open) would discard pending input;
        # TCSANOW keeps it, to look at what the pty held.
        client = open_client(tmp_path / "gps", when=termios.TCSANOW)
        try:
            stale = await read_fd_until_quiet(client)
            numbers = [int(n) for n in re.findall(rb"\$GPTST,(\d{5}),", stale)]
            assert numbers, "the pty should still hold the lines written since the last flush"
            assert min(numbers) >= 19000  # not the first lines written, long ago
            assert max(numbers) == 20004
            got = await send_until_seen(port, client, "FRESH", tries=200)
            assert b"$GPTST,FRESH" in got
        finally:
            os.close(client)
    finally:
        await port.close()


@run_async
async def test_pty_replaces_a_stale_link_but_not_a_regular_file(tmp_path):
    (tmp_path / "gps").symlink_to("/dev/pts/does-not-exist")
    port = PtyPort(parse_port_url("pty://gps", run_dir=tmp_path))
    await port.start()
    assert os.readlink(tmp_path / "gps") == port.tty_name
    await port.close()

    (tmp_path / "ais").write_text("keep me")
    port = PtyPort(parse_port_url("pty://ais", run_dir=tmp_path))
    with pytest.raises(OSError, match="refusing to replace") as info:
        await port.start()
    assert str(tmp_path / "ais") in str(info.value)
    assert (tmp_path / "ais").read_text() == "keep me"
    await port.close()


@run_async
async def test_a_failing_on_line_callback_is_counted_not_fatal(tmp_path):
    port = PtyPort(parse_port_url("pty://gps", run_dir=tmp_path))
    got: list[bytes] = []

    def on_line(line: bytes) -> None:
        got.append(line)
        if line == b"$BAD":
            raise RuntimeError("boom")

    port.on_line = on_line
    await port.start()
    client = open_client(tmp_path / "gps")
    try:
        os.write(client, b"$BAD\r\n$GOOD\r\n")
        await wait_for(lambda: len(got) == 2, what="both lines")
        assert port.stats.errors == 1
    finally:
        os.close(client)
        await port.close()


# --- serial ------------------------------------------------------------------------------------


@run_async
async def test_serial_survives_the_device_vanishing_and_reopens(tmp_path):
    link = tmp_path / "dev0"
    master, slave = make_device(link)
    port = open_port(parse_port_url(f"serial://{link}?baud=9600"))
    received: list[bytes] = []
    port.on_line = received.append
    await port.start()
    try:
        assert port.stats.connected is True
        assert "connected" in port.describe() and str(link) in port.describe()
        port.send(GGA)
        port.send(RMC)
        got = await read_fd_until(master, lambda b: len(b) >= len(GGA + RMC))
        assert got == GGA + RMC
        os.write(master, b"$XXABC,1*00\r\n")
        await wait_for(lambda: received == [b"$XXABC,1*00"], what="the command line")

        # The device vanishes.
        os.close(master)
        os.close(slave)
        link.unlink()
        await wait_for(lambda: not port.stats.connected, what="the loss to be noticed")
        for _ in range(100):
            port.send(GGA)  # keeps queueing, never raises
        assert port.stats.dropped_lines >= 100 - port.queue_lines

        # It comes back at the same path.
        master, slave = make_device(link)
        await wait_for(lambda: port.stats.reopens >= 1, timeout=3.0, what="the reopen")
        assert port.stats.connected is True
        got = await send_until_seen(port, master, "AGAIN", tries=100)
        assert b"$GPTST,AGAIN" in got
    finally:
        await port.close()
        os.close(master)
        os.close(slave)


@run_async
async def test_serial_device_absent_at_start_is_retried(tmp_path):
    link = tmp_path / "usb-gps"
    port = SerialPort(parse_port_url(f"serial://{link}"))
    await port.start()  # must not raise
    master = slave = None
    try:
        assert port.stats.connected is False
        assert "not connected" in port.describe()
        port.send(GGA)
        master, slave = make_device(link)
        await wait_for(lambda: port.stats.connected, timeout=3.0, what="the device to appear")
        got = await read_fd_until(master, lambda b: GGA in b)
        assert GGA in got
    finally:
        await port.close()
        for fd in (master, slave):
            if fd is not None:
                os.close(fd)


# --- UDP ---------------------------------------------------------------------------------------


@run_async
async def test_udp_sends_one_datagram_per_line():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx:
        rx.bind(("127.0.0.1", 0))
        rx.setblocking(False)
        dest = rx.getsockname()[1]
        port = open_port(parse_port_url(f"udp://127.0.0.1:{dest}"))
        await port.start()
        try:
            assert port.describe() == f"udp 127.0.0.1:{dest}"
            port.send(GGA)
            port.send(RMC)
            datagrams: list[bytes] = []

            def poll() -> bool:
                with contextlib.suppress(BlockingIOError):
                    datagrams.append(rx.recv(65536))
                return len(datagrams) >= 2

            await wait_for(poll, what="two datagrams")
            assert datagrams == [GGA, RMC]
            assert port.stats.sent_lines == 2
        finally:
            await port.close()


@run_async
async def test_udp_bind_receives_lines_several_per_datagram():
    bind_port = free_udp_port()
    port = UdpPort(parse_port_url(f"udp://127.0.0.1:{free_udp_port()}?bind=127.0.0.1:{bind_port}"))
    received: list[bytes] = []
    port.on_line = received.append
    await port.start()
    try:
        assert port.local_address == ("127.0.0.1", bind_port)
        assert f"receiving on 127.0.0.1:{bind_port}" in port.describe()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
            tx.sendto(b"$XXABC,1*00\r\n$XXDEF,2*00\r\n", ("127.0.0.1", bind_port))
            tx.sendto(b"$XXGHI,3*00", ("127.0.0.1", bind_port))  # no terminator: still a line
        await wait_for(lambda: len(received) == 3, what="three lines")
        assert received == [b"$XXABC,1*00", b"$XXDEF,2*00", b"$XXGHI,3*00"]
    finally:
        await port.close()


@run_async
async def test_udp_send_errors_are_counted_never_raised():
    port = UdpPort(parse_port_url(f"udp://127.0.0.1:{free_udp_port()}"))  # nobody listening
    await port.start()
    try:
        for _ in range(20):
            port.send(GGA)
        port.send(b"$" + b"X" * 70000 + b"\r\n")  # larger than any datagram: EMSGSIZE
        port.send(b"$" + b"X" * 70000 + b"\r\n")
        port.send(RMC)
        await wait_for(lambda: port._queue.idle, what="the writer")
        assert port.stats.errors == 2
        assert port.stats.sent_lines == 21
    finally:
        await port.close()


@run_async
async def test_udp_multicast_and_broadcast_set_their_socket_options():
    port = UdpPort(parse_port_url("udp://239.255.77.1:60001?ttl=3"))
    await port.start()
    try:
        sock = port._transport.get_extra_info("socket")
        assert sock.getsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL) == 3
        assert sock.getsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP) == 1
        assert "multicast" in port.describe()
    finally:
        await port.close()
    port = UdpPort(parse_port_url("udp://127.255.255.255:60001?broadcast=1"))
    await port.start()
    try:
        sock = port._transport.get_extra_info("socket")
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST) == 1
    finally:
        await port.close()


# --- TCP ---------------------------------------------------------------------------------------


@run_async
async def test_tcp_clients_all_get_every_line_and_can_send():
    port = open_port(parse_port_url("tcp://127.0.0.1:0"))
    received: list[bytes] = []
    port.on_line = received.append
    await port.start()
    try:
        bound = port.bound_port
        assert bound and bound > 0
        assert port.describe() == f"tcp 127.0.0.1:{bound} (0 clients)"
        r1, w1 = await asyncio.open_connection("127.0.0.1", bound)
        r2, w2 = await asyncio.open_connection("127.0.0.1", bound)
        await wait_for(lambda: port.stats.clients == 2, what="two clients")
        assert port.describe() == f"tcp 127.0.0.1:{bound} (2 clients)"
        for _ in range(5):
            port.send(GGA)
            port.send(RMC)
        expected = (GGA + RMC) * 5
        assert await r1.readexactly(len(expected)) == expected
        assert await r2.readexactly(len(expected)) == expected

        w2.write(b"$XXABC,1*00\r\n")
        await w2.drain()
        await wait_for(lambda: received == [b"$XXABC,1*00"], what="the client's line")

        w1.close()
        await wait_for(lambda: port.stats.clients == 1, what="the client to be removed")
        assert port.describe() == f"tcp 127.0.0.1:{bound} (1 client)"
        port.send(GGA)
        assert await r2.readexactly(len(GGA)) == GGA
    finally:
        await port.close()
    assert await asyncio.wait_for(r2.read(), 2.0) == b""  # closing the port ends the client
    w2.close()


@run_async
async def test_tcp_slow_client_drops_its_own_oldest_lines():
    port = TcpServerPort(parse_port_url("tcp://127.0.0.1:0"), queue_lines=16)
    await port.start()
    try:
        _, w_slow = await asyncio.open_connection("127.0.0.1", port.bound_port)  # never reads
        w_slow.transport.get_extra_info("socket").setsockopt(
            socket.SOL_SOCKET, socket.SO_RCVBUF, 4096
        )
        r_fast, w_fast = await asyncio.open_connection("127.0.0.1", port.bound_port)
        await wait_for(lambda: port.stats.clients == 2, what="two clients")
        big = b"$" + b"Y" * 4000 + b"\r\n"
        for _ in range(1500):  # 6 MB
            port.send(big)
            await asyncio.sleep(0)
        port.send(b"$LAST*00\r\n")
        data = b""
        while not data.endswith(b"$LAST*00\r\n"):
            data += await asyncio.wait_for(r_fast.read(65536), 5.0)
        assert data.endswith(b"$LAST*00\r\n")
        assert port.stats.dropped_lines > 0
        w_slow.close()
        w_fast.close()
    finally:
        await port.close()


@run_async
async def test_send_before_start_and_after_close_does_not_raise(tmp_path):
    port = PtyPort(parse_port_url("pty://gps", run_dir=tmp_path), queue_lines=4)
    for _ in range(10):
        port.send(GGA)
    assert port.stats.dropped_lines == 6
    await port.start()
    client = open_client(tmp_path / "gps")
    try:
        got = await read_fd_until(client, lambda b: len(b) >= 4 * len(GGA))
        assert got == GGA * 4
        port.send("not bytes")  # type: ignore[arg-type]
        assert port.stats.errors == 1
    finally:
        os.close(client)
    await port.close()
    dropped = port.stats.dropped_lines
    port.send(GGA)
    assert port.stats.dropped_lines == dropped + 1
    with pytest.raises(RuntimeError):
        await port.start()
