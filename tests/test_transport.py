"""hild.transport on real ptys and real sockets on 127.0.0.1: URLs, lines, pty, serial, UDP, TCP."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import random
import re
import socket
import termios
import threading
import time
import tty
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from hild.transport import (
    MAX_LINE_BYTES,
    Inbound,
    LineSplitter,
    PortStats,
    PortUrlError,
    PtyPort,
    SerialPort,
    SourceFilter,
    TcpServerPort,
    UdpPort,
    open_port,
    parse_port_url,
)
from tests.endpoints import free_udp_port

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


def lines_of(items: list[Inbound]) -> list[bytes]:
    """The bytes of received lines, in order."""
    return [item.line for item in items]


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
    """Feed chunks through a splitter; return the complete (not overlong) lines and the stats."""
    items, stats = split_items(chunks, datagram)
    return [item.line for item in items if not item.overlong], stats


def split_items(chunks, datagram: bool = False) -> tuple[list[Inbound], PortStats]:
    """Feed chunks through a splitter; return every Inbound record delivered and the stats."""
    items: list[Inbound] = []
    stats = PortStats()
    splitter = LineSplitter("test://port", items.append, stats)
    for chunk in chunks:
        if datagram:
            splitter.feed_datagram(chunk, ("127.0.0.1", 5))
        else:
            splitter.feed(chunk)
    return items, stats


def reference_split(data: bytes) -> list[tuple[bytes, bool]]:
    """What the splitter must deliver for data, worked out the slow, obvious way."""
    lines = [part for part in re.split(rb"[\r\n]", data) if part]
    return [(line[:MAX_LINE_BYTES], len(line) > MAX_LINE_BYTES) for line in lines]


def test_splitter_joins_partial_lines_across_chunks():
    data = GGA + RMC
    chunks = [data[i : i + 7] for i in range(0, len(data), 7)]
    lines, stats = split(chunks)
    assert lines == [GGA[:-2], RMC[:-2]]
    assert stats.overlong_lines == 0


def test_splitter_handles_crlf_lf_and_skips_empty_lines():
    lines, _ = split([b"$A*00\r\n\r\n$B*00\n\n", b"$C", b"*00\r", b"\n"])
    assert lines == [b"$A*00", b"$B*00", b"$C*00"]


@pytest.mark.parametrize(
    "data",
    [
        b"$A*00\r$B*00\r$C*00\r",  # CR only
        b"$A*00\n$B*00\n$C*00\n",  # LF only
        b"$A*00\r\n$B*00\r\n$C*00\r\n",  # CRLF
        b"$A*00\r$B*00\n\r\r\n$C*00\r\n",  # mixed, with empty lines between
        b"\n\r$A*00\n\r$B*00\r\r$C*00\n\n",  # LFCR and doubled ends
    ],
)
def test_splitter_ends_lines_at_cr_lf_and_crlf(data):
    expected = [b"$A*00", b"$B*00", b"$C*00"]
    assert split([data])[0] == expected
    assert split([data[i : i + 1] for i in range(len(data))])[0] == expected  # byte by byte


def test_splitter_delivers_a_lone_cr_line_at_once():
    items, _ = split_items([b"$A*00\r"])
    assert [item.line for item in items] == [b"$A*00"]  # no LF needed to finish the line


def test_splitter_keeps_a_partial_line_until_its_end_arrives():
    lines, _ = split([b"$A*00\r\n$B,1"])
    assert lines == [b"$A*00"]
    lines, _ = split([b"$A*00\r\n$B,1"], datagram=True)  # a datagram's last line is complete
    assert lines == [b"$A*00", b"$B,1"]


def test_splitter_survives_binary_garbage():
    no_end = bytes(b for b in os.urandom(3000) if b not in (0x0A, 0x0D))
    garbage = bytes(range(256)) * 3 + b"\xff\xfe\x00\n" + no_end + b"\n" + GGA
    items, stats = split_items([garbage[i : i + 33] for i in range(0, len(garbage), 33)])
    assert [(item.line, item.overlong) for item in items] == reference_split(garbage)
    # range(256) holds LF (10) and CR (13): lines 0-9, 11-12, then 14-255 + 0-9 round the loop
    assert items[0].line == bytes(range(10))
    assert items[1].line == bytes([11, 12])
    assert items[-1].line == GGA[:-2]
    assert [item.overlong for item in items].count(True) == 1  # the 3000 bytes without an end
    assert stats.overlong_lines == 1
    assert all(len(item.line) <= MAX_LINE_BYTES for item in items)


def test_splitter_matches_the_reference_on_random_bytes_in_random_chunks():
    rng = random.Random(7)
    data = os.urandom(200_000) + b"\r\n" + b"$" + b"L" * 1000 + b"\n" + GGA
    chunks, i = [], 0
    while i < len(data):
        n = rng.choice((1, 2, 3, 17, 255, 256, 257, 4096))
        chunks.append(data[i : i + n])
        i += n
    items, stats = split_items(chunks)
    expected = reference_split(data)
    assert [(item.line, item.overlong) for item in items] == expected
    assert stats.overlong_lines == sum(overlong for _, overlong in expected) > 0


def test_splitter_delivers_overlong_lines_once_flagged_with_their_head():
    exact = b"$" + b"A" * (MAX_LINE_BYTES - 1)
    too_long = b"$" + b"B" * MAX_LINE_BYTES
    huge = b"C" * 5000
    data = exact + b"\r\n" + too_long + b"\r\n" + huge + b"\n" + GGA
    for size in (100, len(data)):  # split across chunks, and all in one chunk
        items, stats = split_items([data[i : i + size] for i in range(0, len(data), size)])
        assert [(item.line, item.overlong) for item in items] == [
            (exact, False),
            (too_long[:MAX_LINE_BYTES], True),
            (huge[:MAX_LINE_BYTES], True),
            (GGA[:-2], False),
        ]
        assert stats.overlong_lines == 2


def test_splitter_holds_a_never_ending_line_in_bounded_memory():
    items: list[Inbound] = []
    stats = PortStats()
    splitter = LineSplitter("test://port", items.append, stats)
    chunk = b"X" * 4096
    for _ in range(512):  # 2 MB without a line end
        splitter.feed(chunk)
        assert len(splitter._buf) <= MAX_LINE_BYTES
    assert [(item.line, item.overlong) for item in items] == [(b"X" * MAX_LINE_BYTES, True)]
    splitter.feed(b"\r\n" + GGA)
    assert [item.line for item in items[1:]] == [GGA[:-2]]
    assert stats.overlong_lines == 1


def test_splitter_takes_megabytes_of_random_bytes_apart_line_by_line():
    # (how fast: bench/bench_bus.py; here what it makes of them)
    data = os.urandom(4_000_000)
    items: list[Inbound] = []
    stats = PortStats()
    splitter = LineSplitter("test://port", items.append, stats)
    for i in range(0, len(data), 4096):
        splitter.feed(data[i : i + 4096])
    assert len(items) > 10_000
    # no line handed on holds a line end (CR or LF), and none was made up: at most one line
    # per line end in the bytes (and an overlong one's head)
    assert not any(b"\n" in item.line or b"\r" in item.line for item in items)
    assert len(items) <= data.count(b"\n") + data.count(b"\r") + stats.overlong_lines


def test_splitter_stamps_port_peer_and_time():
    items: list[Inbound] = []
    splitter = LineSplitter("udp://127.0.0.1:9?listen=1", items.append, PortStats())
    before = time.monotonic()
    splitter.feed(b"$A*00\r\n$B*00\r\n")
    after = time.monotonic()
    splitter.feed(b"$C*00\n", peer=("10.0.0.1", 4000), t_rx=12.5)
    splitter.feed_datagram(b"$D*00", ("::1", 5000), 13.0)
    a, b, c, d = items
    assert a.port == "udp://127.0.0.1:9?listen=1" and a.peer is None
    assert before <= a.t_rx <= after
    assert b.t_rx == a.t_rx  # one time per read, not per line
    assert (c.line, c.peer, c.t_rx) == (b"$C*00", ("10.0.0.1", 4000), 12.5)
    assert d == Inbound(b"$D*00", "udp://127.0.0.1:9?listen=1", ("::1", 5000), 13.0, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.line = b"x"  # type: ignore[misc]


# --- pty ---------------------------------------------------------------------------------------


@run_async
async def test_pty_client_reads_exact_bytes_and_writes_commands(tmp_path):
    run_dir = tmp_path / "run" / "hild"  # created by the port
    port = open_port(parse_port_url("pty://gps?baud=4800", run_dir=run_dir))
    received: list[Inbound] = []
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
            before = time.monotonic()
            os.write(client, b"$XXABC,1*00\r\n$XXDEF,2")
            await wait_for(lambda: received, what="a line from the client")
            os.write(client, b"*00\r\n")
            await wait_for(lambda: len(received) == 2, what="the second line")
            assert lines_of(received) == [b"$XXABC,1*00", b"$XXDEF,2*00"]
            for item in received:
                assert item.port == "pty://gps?baud=4800"
                assert item.peer is None
                assert before <= item.t_rx <= time.monotonic()
                assert not item.overlong
            assert received[0].t_rx <= received[1].t_rx
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


@pytest.mark.parametrize("url", ["pty://gps", "pty://gps?baud=4800"])
@run_async
async def test_pty_close_lets_a_reading_client_take_the_last_epoch(tmp_path, url):
    """Reproduces: a daemon stopped right after an epoch left its last sentence unread, and
    Linux discards a slave's unread input when the master closes. A client that reads every
    50 ms (as a 10-20 Hz read loop does) still gets every byte written before close()."""
    port = open_port(parse_port_url(url, run_dir=tmp_path))
    await port.start()
    client = open_client(tmp_path / "gps")
    got = bytearray()
    stop = threading.Event()

    def read_every_50_ms() -> None:
        while not stop.wait(0.05):
            try:
                data = os.read(client, 65536)
            except BlockingIOError:
                continue
            except OSError:  # EIO: the master is gone
                return
            if not data:
                return
            got.extend(data)

    reader = threading.Thread(target=read_every_50_ms, daemon=True)
    reader.start()
    try:
        epoch = GGA + RMC + nmea("GPZDA,123519,23,03,1994,00,00") + nmea("GPHDT,84.4,T")
        port.send(epoch)
        await port.close()  # at once: the epoch is still on its way (4800 baud: 0.4 s)
        reader.join(2.0)
        assert bytes(got) == epoch
    finally:
        stop.set()
        reader.join(2.0)  # before the fd's number can be reused
        await port.close()
        os.close(client)


@run_async
async def test_pty_without_client_never_blocks_and_keeps_only_fresh_data(tmp_path):
    port = PtyPort(parse_port_url("pty://gps", run_dir=tmp_path), queue_lines=64)
    await port.start()
    try:
        # send() never waits for the pty: with no reader, 20,000 lines go through it (a write
        # that waited for the full pty would never return: reaching the end shows none did)
        async def send_all() -> None:
            for batch in range(200):
                for i in range(100):
                    port.send(nmea(f"GPTST,{batch * 100 + i:05d},{'X' * 40}"))
                await asyncio.sleep(0)

        await asyncio.wait_for(send_all(), timeout=60.0)
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

    def on_line(item: Inbound) -> None:
        got.append(item.line)
        if item.line == b"$BAD":
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
    received: list[Inbound] = []
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
        await wait_for(lambda: lines_of(received) == [b"$XXABC,1*00"], what="the command line")
        assert received[0].peer is None and received[0].port == f"serial://{link}?baud=9600"

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
    received: list[Inbound] = []
    port.on_line = received.append
    await port.start()
    try:
        assert port.local_address == ("127.0.0.1", bind_port)
        assert f"receiving on 127.0.0.1:{bind_port}" in port.describe()
        before = time.monotonic()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
            tx.bind(("127.0.0.1", 0))
            tx.sendto(b"$XXABC,1*00\r\n$XXDEF,2*00\r\n", ("127.0.0.1", bind_port))
            tx.sendto(b"$XXGHI,3*00", ("127.0.0.1", bind_port))  # no terminator: still a line
            sender = tx.getsockname()
        await wait_for(lambda: len(received) == 3, what="three lines")
        assert lines_of(received) == [b"$XXABC,1*00", b"$XXDEF,2*00", b"$XXGHI,3*00"]
        assert all(item.peer == sender for item in received)
        assert all(item.port == port.spec.url for item in received)
        assert all(before <= item.t_rx <= time.monotonic() for item in received)
        assert received[0].t_rx == received[1].t_rx  # one datagram, one receive time
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
    received: list[Inbound] = []
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

        before = time.monotonic()
        w2.write(b"$XXABC,1*00\r\n")
        await w2.drain()
        await wait_for(lambda: lines_of(received) == [b"$XXABC,1*00"], what="the client's line")
        assert received[0].peer == w2.get_extra_info("sockname")
        assert received[0].peer != w1.get_extra_info("sockname")
        assert received[0].port == "tcp://127.0.0.1:0"
        assert before <= received[0].t_rx <= time.monotonic()

        w1.close()
        # Its FIN could be a half-close (it may still read): it is known gone only once lines
        # sent to it meet its RST.
        for _ in range(2):
            port.send(GGA)
            assert await r2.readexactly(len(GGA)) == GGA
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
    """A client that does not read loses its own oldest lines; one that keeps up loses none.

    PortStats counts the drops of all of a port's clients together (the port exposes no
    per-client figure), so each client's share is worked out from what it received: the fast
    client gets every line, in order, which makes every counted drop the slow client's; and
    the slow client's lines plus the drops add up to exactly what was sent.
    """
    queue_lines, n = 16, 500
    port = TcpServerPort(parse_port_url("tcp://127.0.0.1:0"), queue_lines=queue_lines)
    await port.start()
    loop = asyncio.get_running_loop()
    # The slow client: a plain socket with a small receive buffer, not read until the end (a
    # stream reader would read ahead in the background).
    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        slow.setblocking(False)
        await loop.sock_connect(slow, ("127.0.0.1", port.bound_port))
        r_fast, w_fast = await asyncio.open_connection("127.0.0.1", port.bound_port)
        await wait_for(lambda: port.stats.clients == 2, what="two clients")

        def line(i: int) -> bytes:
            return f"$Y{i:05d},".encode() + b"Y" * 4000 + b"\r\n"

        def numbers(lines: list[bytes]) -> list[int]:
            return [int(x[2:7]) for x in lines]

        fast: list[bytes] = []
        progress = asyncio.Event()

        async def read_fast() -> None:
            while not fast or fast[-1] != line(n - 1):
                fast.append(await r_fast.readuntil(b"\r\n"))
                progress.set()

        reader = asyncio.create_task(read_fast())
        for i in range(n):
            # The fast client is never more than half its queue behind, so its queue cannot
            # overflow whatever the scheduling: losing a line would be the port's fault.
            while i - len(fast) >= queue_lines // 2:
                progress.clear()
                await asyncio.wait_for(progress.wait(), 5.0)
            port.send(line(i))
            await asyncio.sleep(0)
        await asyncio.wait_for(reader, 5.0)
        assert numbers(fast) == list(range(n))  # every line, in order, none twice
        assert fast == [line(i) for i in range(n)]
        dropped_while_slow = port.stats.dropped_lines  # all of them the slow client's

        # Now the slow client reads: what its buffers held, then what its queue kept.
        data = b""
        while not data.endswith(line(n - 1)):
            data += await asyncio.wait_for(loop.sock_recv(slow, 65536), 5.0)
        lines = [x + b"\r\n" for x in data.split(b"\r\n")[:-1]]
        got = numbers(lines)
        assert lines == [line(i) for i in got]  # whole lines, none cut
        assert got == sorted(set(got))  # in order, none twice
        # Its queue kept the newest lines (the oldest were dropped): the last queue_lines it
        # got are the last queue_lines sent, with nothing missing among them.
        assert got[-queue_lines:] == list(range(n - queue_lines, n))
        # Every line it did not get was dropped from its queue, and counted; nothing since.
        assert port.stats.dropped_lines == dropped_while_slow == n - len(got) > 0
        # The writer counts a line once the client has taken it: each client's lines, once.
        await wait_for(lambda: port.stats.sent_lines >= n + len(got), what="the last count")
        assert port.stats.sent_lines == n + len(got)
        w_fast.close()
    finally:
        slow.close()
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


# --- URL options: listen, allow, mode ----------------------------------------------------------


@pytest.mark.parametrize(
    "url, options",
    [
        ("udp://127.0.0.1:0?listen=1", (("listen", "1"),)),
        ("udp://127.0.0.1:10112?listen=true", (("listen", "1"),)),
        ("udp://127.0.0.1:10112?listen=0", (("listen", "0"),)),
        (
            "udp://0.0.0.0:10112?listen=yes&allow=10.0.0.0/8",
            (("allow", "10.0.0.0/8"), ("listen", "1")),
        ),
        (
            "tcp://127.0.0.1:10110?allow= 127.0.0.1 ,10.1.2.3/8,::1",
            (("allow", "127.0.0.1/32,10.0.0.0/8,::1/128"),),
        ),
        ("tcp://127.0.0.1:10110?allow=ANY", (("allow", "any"),)),
        ("pty://gps?mode=SEND", (("mode", "send"),)),
        ("serial:///dev/ttyUSB0?mode=receive", (("mode", "receive"),)),
        ("udp://127.0.0.1:10110?mode=both", (("mode", "both"),)),
    ],
)
def test_new_options_are_normalised(url, options):
    assert parse_port_url(url).options == options


@pytest.mark.parametrize(
    "url, problem",
    [
        ("udp://127.0.0.1:10112?listen=1&bind=127.0.0.1:10111", "bind= cannot be given too"),
        ("udp://127.0.0.1:10112?listen=1&broadcast=1", "cannot be combined with broadcast"),
        ("udp://255.255.255.255:10112?listen=1", "cannot be combined with broadcast"),
        ("udp://239.192.0.1:10112?listen=1", "cannot be combined with a multicast address"),
        ("udp://127.0.0.1:10112?listen=maybe", "listen='maybe' is not a flag"),
        ("udp://127.0.0.1:0?listen=0", "out of range"),
        ("udp://127.0.0.1:10112?allow=10.0.0.300", "allow entry '10.0.0.300'"),
        ("tcp://127.0.0.1:10112?allow=127.0.0.1,10.0.0.0/33", "allow entry '10.0.0.0/33'"),
        ("tcp://127.0.0.1:10112?allow=127.0.0.1,,::1", "empty entry"),
        ("tcp://127.0.0.1:10112?allow=", "the allow list is empty"),
        ("tcp://127.0.0.1:10112?allow=localhost", "allow entry 'localhost'"),
        ("pty://gps?mode=sideways", "mode='sideways' is not a direction"),
        ("tcp://127.0.0.1:10112?listen=1", "unknown query parameter 'listen'"),
        ("pty://gps?allow=any", "unknown query parameter 'allow'"),
    ],
)
def test_bad_new_options_say_what_is_wrong(url, problem):
    with pytest.raises(PortUrlError) as info:
        parse_port_url(url)
    message = str(info.value)
    assert problem in message
    assert repr(url) in message and "expected" in message and "e.g." in message


def test_error_messages_list_the_new_options():
    with pytest.raises(PortUrlError, match="broadcast, ttl, bind, listen, allow, mode"):
        parse_port_url("udp://127.0.0.1:10110?baud=4800")
    with pytest.raises(PortUrlError, match="allow, mode") as info:
        parse_port_url("tcp://127.0.0.1:10110?ttl=1")
    assert "allow=ADDRESSES|any" in str(info.value)
    with pytest.raises(PortUrlError, match="listen=1"):
        parse_port_url("udp://127.0.0.1")


# --- The source filter -------------------------------------------------------------------------


def test_source_filter_default_is_loopback_only():
    default = SourceFilter.parse(None)
    for host in ("127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "::ffff:127.0.0.1"):
        assert default.allows(host), host
    for host in ("10.0.0.1", "192.168.1.7", "0.0.0.0", "::2", "::ffff:10.0.0.1", "fe80::1"):
        assert not default.allows(host), host
    assert not default.allows("localhost")  # only addresses, as a socket reports its peer
    assert not default.allows("")


def test_source_filter_addresses_networks_and_any():
    allow = SourceFilter.parse("127.0.0.1, 10.0.0.0/8,fe80::/10,2001:db8::5")
    for host in ("127.0.0.1", "10.200.3.4", "::ffff:10.0.0.9", "fe80::1%eth0", "2001:db8::5"):
        assert allow.allows(host), host
    for host in ("127.0.0.2", "11.0.0.1", "::1", "2001:db8::6"):
        assert not allow.allows(host), host
    assert str(allow) == "127.0.0.1/32,10.0.0.0/8,fe80::/10,2001:db8::5/128"
    everyone = SourceFilter.parse("any")
    assert everyone.allows("8.8.8.8") and everyone.allows("2001:db8::1")
    assert str(everyone) == "any"


@pytest.mark.parametrize("text", ["", "10.0.0.300", "10.0.0.0/8,nope", "1.2.3.4,", "::1/129"])
def test_source_filter_refuses_bad_entries(text):
    with pytest.raises(ValueError):
        SourceFilter.parse(text)


# --- UDP listen ----------------------------------------------------------------------------------


def udp_client(host: str = "127.0.0.1") -> socket.socket:
    """A non-blocking UDP socket bound to an ephemeral port on host."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, 0))
    sock.setblocking(False)
    return sock


async def recv_all(sock: socket.socket, count: int, timeout: float = 3.0) -> list[bytes]:
    """Receive count datagrams from a non-blocking socket, failing after timeout."""
    got: list[bytes] = []

    def poll() -> bool:
        with contextlib.suppress(BlockingIOError):
            got.append(sock.recv(65536))
        return len(got) >= count

    await wait_for(poll, timeout, what=f"{count} datagrams (got {got!r})")
    return got


async def assert_nothing_arrives(sock: socket.socket, quiet: float = 0.1) -> None:
    await asyncio.sleep(quiet)
    with pytest.raises(BlockingIOError):
        sock.recv(65536)


@run_async
async def test_udp_listen_receives_and_replies_to_its_senders():
    port = open_port(parse_port_url("udp://127.0.0.1:0?listen=1"))
    received: list[Inbound] = []
    port.on_line = received.append
    await port.start()
    a, b = udp_client(), udp_client()
    try:
        host, bound = port.local_address
        assert host == "127.0.0.1" and bound > 0
        assert port.describe() == f"udp 127.0.0.1:{bound} (listening; replies to senders)"

        port.send(GGA)  # nobody heard yet: dropped quietly
        assert port.stats.unsent_lines == 1
        assert port.stats.dropped_lines == 0

        before = time.monotonic()
        a.sendto(b"$XXABC,1*00\r\n", ("127.0.0.1", bound))
        await wait_for(lambda: len(received) == 1, what="the first line")
        assert received[0] == Inbound(
            b"$XXABC,1*00", "udp://127.0.0.1:0?listen=1", a.getsockname(), received[0].t_rx
        )
        assert before <= received[0].t_rx <= time.monotonic()
        port.send(RMC)
        assert await recv_all(a, 1) == [RMC]

        b.sendto(b"$XXDEF,2*00", ("127.0.0.1", bound))
        await wait_for(lambda: len(received) == 2, what="the second line")
        assert received[1].peer == b.getsockname()
        assert port.peers == [b.getsockname(), a.getsockname()]  # most recent first
        port.send(GGA)
        assert await recv_all(a, 1) == [GGA]
        assert await recv_all(b, 1) == [GGA]
        await wait_for(lambda: port._queue.idle, what="the writer")
        assert port.stats.sent_lines == 2
        assert port.stats.unsent_lines == 1
    finally:
        a.close()
        b.close()
        await port.close()


@run_async
async def test_udp_listen_keeps_the_most_recent_peers_and_forgets_quiet_ones(monkeypatch):
    from hild.transport import udp

    port = UdpPort(parse_port_url("udp://127.0.0.1:0?listen=1"))
    await port.start()
    clients = [udp_client() for _ in range(udp.MAX_PEERS + 2)]
    try:
        address = port.local_address
        for c in clients:
            c.sendto(b"$HELLO", address)
            await wait_for(lambda c=c: port.peers[:1] == [c.getsockname()], what="the sender")
        expected = [c.getsockname() for c in reversed(clients)][: udp.MAX_PEERS]
        assert port.peers == expected
        port.send(GGA)
        for c in clients[2:]:
            assert await recv_all(c, 1) == [GGA]
        for c in clients[:2]:  # the two least recent were forgotten
            await assert_nothing_arrives(c)

        monkeypatch.setattr(udp, "PEER_TIMEOUT_S", 0.2)
        clients[0].sendto(b"$AGAIN", address)
        await wait_for(lambda: port.peers[:1] == [clients[0].getsockname()], what="a new peer")
        await asyncio.sleep(0.3)
        assert port.peers == []
        unsent = port.stats.unsent_lines
        port.send(RMC)
        assert port.stats.unsent_lines == unsent + 1
        await assert_nothing_arrives(clients[0])
    finally:
        for c in clients:
            c.close()
        await port.close()


@run_async
async def test_udp_refuses_datagrams_from_outside_allow():
    # 127.0.0.2 is loopback too, but the only address allowed; 127.0.0.1 is refused.
    port = UdpPort(parse_port_url("udp://127.0.0.1:0?listen=1&allow=127.0.0.2"))
    received: list[Inbound] = []
    port.on_line = received.append
    await port.start()
    outsider, insider = udp_client("127.0.0.1"), udp_client("127.0.0.2")
    try:
        address = port.local_address
        with capture_logs() as logs:
            for k in range(5):
                outsider.sendto(f"$OUT,{k}*00\r\n".encode(), address)
            await wait_for(lambda: port.stats.refused == 5, what="five refused datagrams")
        refusals = [e for e in logs if e["event"] == "port.refused"]
        assert len(refusals) == 1  # rate-limited
        assert refusals[0]["peer"] == f"127.0.0.1:{outsider.getsockname()[1]}"
        assert port.peers == []  # refused senders get no replies
        port.send(GGA)
        await assert_nothing_arrives(outsider)

        insider.sendto(b"$IN,1*00\r\n", address)
        await wait_for(lambda: received, what="the allowed line")
        assert lines_of(received) == [b"$IN,1*00"]
        assert received[0].peer == insider.getsockname()
        port.send(RMC)
        assert await recv_all(insider, 1) == [RMC]
        await assert_nothing_arrives(outsider)
        assert port.stats.received_lines == 1
    finally:
        outsider.close()
        insider.close()
        await port.close()


@run_async
async def test_udp_bound_port_refuses_outsiders_by_default_filter():
    bind_port = free_udp_port()
    url = f"udp://127.0.0.1:{free_udp_port()}?bind=127.0.0.1:{bind_port}&allow=127.0.0.2"
    port = UdpPort(parse_port_url(url))
    received: list[Inbound] = []
    port.on_line = received.append
    await port.start()
    tx = udp_client("127.0.0.1")
    try:
        tx.sendto(b"$XXABC,1*00\r\n", ("127.0.0.1", bind_port))
        await wait_for(lambda: port.stats.refused == 1, what="the refusal")
        assert received == [] and port.stats.received_lines == 0
    finally:
        tx.close()
        await port.close()


# --- TCP source filter ---------------------------------------------------------------------------


@run_async
async def test_tcp_accepting_commands_closes_connections_from_outside_allow():
    port = TcpServerPort(parse_port_url("tcp://127.0.0.1:0?allow=127.0.0.2"))
    port.accepts_commands = True
    received: list[Inbound] = []
    port.on_line = received.append
    await port.start()
    try:
        with capture_logs() as logs:
            r_out, w_out = await asyncio.open_connection("127.0.0.1", port.bound_port)
            assert await asyncio.wait_for(r_out.read(), 2.0) == b""  # closed at once
            w_out.close()
        assert port.stats.refused == 1
        assert port.stats.clients == 0
        refusals = [e for e in logs if e["event"] == "port.refused"]
        assert len(refusals) == 1 and refusals[0]["what"] == "connection"
        assert refusals[0]["peer"].startswith("127.0.0.1:")

        r_in, w_in = await asyncio.open_connection(
            "127.0.0.1", port.bound_port, local_addr=("127.0.0.2", 0)
        )
        await wait_for(lambda: port.stats.clients == 1, what="the allowed client")
        w_in.write(b"$XXABC,1*00\r")
        await w_in.drain()
        await wait_for(lambda: received, what="the allowed line")
        assert received[0].line == b"$XXABC,1*00"
        assert received[0].peer == w_in.get_extra_info("sockname")
        port.send(GGA)
        assert await r_in.readexactly(len(GGA)) == GGA
        w_in.close()
    finally:
        await port.close()


@run_async
async def test_tcp_outsiders_may_listen_but_their_lines_are_refused():
    port = TcpServerPort(parse_port_url("tcp://127.0.0.1:0?allow=127.0.0.2"))
    received: list[Inbound] = []
    port.on_line = received.append
    await port.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port.bound_port)
        await wait_for(lambda: port.stats.clients == 1, what="the client")
        port.send(GGA)
        assert await reader.readexactly(len(GGA)) == GGA
        writer.write(b"$XXABC,1*00\r\n$XXDEF,2*00\r\n")
        await writer.drain()
        await wait_for(lambda: port.stats.refused == 2, what="two refused lines")
        assert received == [] and port.stats.received_lines == 0
        writer.close()
    finally:
        await port.close()


# --- Direction: mode=send, mode=receive -----------------------------------------------------------


@run_async
async def test_send_only_pty_ignores_input_and_still_sends(tmp_path):
    port = open_port(parse_port_url("pty://gps?mode=send", run_dir=tmp_path))
    received: list[Inbound] = []
    port.on_line = received.append
    await port.start()
    client = open_client(tmp_path / "gps")
    try:
        assert port.describe().endswith(", send-only")
        os.write(client, b"$XXABC,1*00\r\n$XXDEF,2*00\r\n")
        await wait_for(lambda: port.stats.ignored_lines == 2, what="two ignored lines")
        assert received == [] and port.stats.received_lines == 0
        port.send(GGA)
        assert await read_fd_until(client, lambda b: len(b) >= len(GGA)) == GGA
    finally:
        os.close(client)
        await port.close()


@run_async
async def test_receive_only_pty_writes_nothing_and_still_receives(tmp_path):
    port = open_port(parse_port_url("pty://gps?mode=receive", run_dir=tmp_path))
    received: list[Inbound] = []
    port.on_line = received.append
    await port.start()
    client = open_client(tmp_path / "gps")
    try:
        assert port.describe().endswith(", receive-only")
        for _ in range(3):
            port.send(GGA)
        assert port.stats.unsent_lines == 3
        assert await read_fd_until_quiet(client) == b""
        assert port.stats.sent_lines == 0 and port.stats.dropped_lines == 0
        os.write(client, b"$XXABC,1*00\r")
        await wait_for(lambda: received, what="the line")
        assert received[0].line == b"$XXABC,1*00"
    finally:
        os.close(client)
        await port.close()


@run_async
async def test_receive_only_udp_and_tcp_send_nothing():
    rx = udp_client()
    udp_port = UdpPort(parse_port_url(f"udp://127.0.0.1:{rx.getsockname()[1]}?mode=receive"))
    tcp_port = TcpServerPort(parse_port_url("tcp://127.0.0.1:0?mode=receive"))
    await udp_port.start()
    await tcp_port.start()
    try:
        assert udp_port.describe().endswith(", receive-only")
        reader, writer = await asyncio.open_connection("127.0.0.1", tcp_port.bound_port)
        await wait_for(lambda: tcp_port.stats.clients == 1, what="the client")
        assert tcp_port.describe().endswith("(1 client), receive-only")
        udp_port.send(GGA)
        tcp_port.send(GGA)
        assert udp_port.stats.unsent_lines == tcp_port.stats.unsent_lines == 1
        await assert_nothing_arrives(rx)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(reader.read(1), 0.1)
        writer.close()
    finally:
        rx.close()
        await udp_port.close()
        await tcp_port.close()


@run_async
async def test_send_only_udp_listen_learns_peers_but_ignores_their_lines():
    port = UdpPort(parse_port_url("udp://127.0.0.1:0?listen=1&mode=send"))
    received: list[Inbound] = []
    port.on_line = received.append
    await port.start()
    client = udp_client()
    try:
        assert port.describe().endswith("(listening; replies to senders), send-only")
        client.sendto(b"$XXABC,1*00\r\n$XXDEF,2*00", port.local_address)
        await wait_for(lambda: port.stats.ignored_lines == 2, what="two ignored lines")
        assert received == []
        port.send(GGA)
        assert await recv_all(client, 1) == [GGA]
    finally:
        client.close()
        await port.close()


# --- A pty under a stream of random bytes --------------------------------------------------------


async def write_all(fd: int, data: bytes) -> None:
    """Write data to a non-blocking fd, waiting while it is full."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            await asyncio.sleep(0.001)


@run_async
async def test_pty_splits_a_random_byte_stream_like_the_reference(tmp_path):
    port = PtyPort(parse_port_url("pty://gps", run_dir=tmp_path))
    received: list[Inbound] = []
    port.on_line = received.append
    await port.start()
    client = open_client(tmp_path / "gps")
    try:
        data = os.urandom(1_200_000) + b"\r\n" + GGA
        await write_all(client, data)
        await wait_for(lambda: received and received[-1].line == GGA[:-2], what="the last line")
        assert [(item.line, item.overlong) for item in received] == reference_split(data)
        assert all(item.peer is None for item in received)
        assert port.stats.overlong_lines == sum(item.overlong for item in received)
    finally:
        os.close(client)
        await port.close()
