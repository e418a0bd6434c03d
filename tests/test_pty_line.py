"""What a reader of a virtual (or re-plugged) serial line gets: fresh epochs, at the line's pace.

Each test reproduces something measured before issue 11: a pty that kept ~4 KB of old epochs
for a reader that attached late, a GNSS epoch that arrived in one read at "4800 baud", and a
serial line that wrote out ten seconds of backlog when it came back.
"""

from __future__ import annotations

import asyncio
import os
import select
import termios
import textwrap
import threading
import time
import tty
from datetime import UTC, datetime

import pytest
from endpoints import Daemon, PtyClient

from hild.transport import PortStats, SerialPort, parse_port_url
from hild.transport.base import LineQueue
from hild.transport.pacer import PacedLine

BITS_PER_BYTE = 10


def write_bench(tmp_path, devices: str) -> str:
    path = tmp_path / "bench.toml"
    head = f"""
    [bench]
    rate_hz = 100
    run_dir = "{tmp_path / "run"}"
    stats_interval = 1.0
    [vessel]
    profile = "odin"
    """
    path.write_text(textwrap.dedent(head) + textwrap.dedent(devices))
    return str(path)


def seconds_of_day(t: float) -> float:
    """A wall-clock time (time.time()) as seconds since UTC midnight."""
    d = datetime.fromtimestamp(t, UTC)
    return d.hour * 3600 + d.minute * 60 + d.second + d.microsecond / 1e6


def gga_seconds_of_day(msg) -> float:
    ts = msg.timestamp
    return ts.hour * 3600 + ts.minute * 60 + ts.second + ts.microsecond / 1e6


def test_a_late_reader_gets_the_current_epoch_first(tmp_path):
    """Reproduces: a controller attaching 5 s into the run read five old epochs at once."""
    bench = write_bench(
        tmp_path,
        """
        [[device]]
        name = "gps"
        type = "gps"
        ports = ["pty://gps"]
        """,
    )
    daemon = Daemon(bench, tmp=tmp_path)
    client = None
    try:
        time.sleep(5.3)  # the 1 Hz GPS writes five or six epochs that nobody reads
        client = PtyClient(tmp_path / "run" / "gps")  # TCSANOW: whatever the pty holds, we get
        offset = time.time() - time.monotonic()
        client.start()
        deadline = time.monotonic() + 3.0
        while not client.sentences("GGA") and time.monotonic() < deadline:
            time.sleep(0.05)
        arrived, first = client.sentences("GGA")[0]
        # The epoch of second S goes out at S (UTC); a reader gets it between S and S + 1 s.
        age = (seconds_of_day(arrived + offset) - gga_seconds_of_day(first)) % 86400
        assert age < 1.2, f"the first GGA a late reader got was {age:.1f} s old"
        assert client.sentences()[0][1].sentence_type == "GGA"  # a whole epoch, from its start
    finally:
        if client is not None:
            client.close()
        summary = daemon.stop()
    assert summary["ports"]["pty://gps"]["flushes"] >= 1


class ChunkReader:
    """Records every read of a pty slave with its arrival time, in a thread."""

    def __init__(self, path):
        self.fd = os.open(str(path), os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(self.fd, termios.TCSANOW)
        self.chunks: list[tuple[float, bytes]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                self.chunks.append((time.monotonic(), os.read(self.fd, 4096)))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2.0)
        os.close(self.fd)

    def epochs(self) -> list[tuple[int, float, float]]:
        """Each whole epoch (from a GGA to the next): its bytes, first and last arrival."""
        data = b"".join(c for _, c in self.chunks)
        times: list[float] = []
        for t, chunk in self.chunks:
            times.extend([t] * len(chunk))
        starts = [i for i in range(len(data)) if data.startswith(b"$GPGGA", i)]
        return [(b - a, times[a], times[b - 1]) for a, b in zip(starts, starts[1:], strict=False)]


def test_a_4800_baud_pty_delivers_an_epoch_over_its_time_on_the_line(tmp_path):
    """Reproduces: a 239-byte GNSS epoch arrived in one read where a 4800-baud line takes 0.5 s.

    With pace=0 the same epoch still comes at once.
    """
    bench = write_bench(
        tmp_path,
        """
        [[device]]
        name = "gps"
        type = "gps"
        baud = 4800
        ports = ["pty://gps"]
        [[device]]
        name = "fast"
        type = "gps"
        ports = ["pty://fast?pace=0"]
        """,
    )
    daemon = Daemon(bench, tmp=tmp_path)
    paced = ChunkReader(tmp_path / "run" / "gps")
    unpaced = ChunkReader(tmp_path / "run" / "fast")
    try:
        time.sleep(3.8)
    finally:
        paced.close()
        unpaced.close()
        summary = daemon.stop()
    epochs = paced.epochs()
    assert len(epochs) >= 2, paced.chunks
    for size, first, last in epochs:
        on_the_line = size * BITS_PER_BYTE / 4800
        assert last - first == pytest.approx(on_the_line, rel=0.1), (size, last - first)
    for _, first, last in unpaced.epochs():
        assert last - first < 0.05
    # paced, yet nothing falls behind: every line queued is written
    assert summary["ports"]["pty://gps"]["dropped_lines"] == 0


# --- a serial line that comes back -------------------------------------------------------------


def make_device(link):
    master, slave = os.openpty()
    tty.setraw(slave)
    if link.is_symlink():
        link.unlink()
    link.symlink_to(os.ttyname(slave))
    os.set_blocking(master, False)
    return master, slave


async def read_some(fd: int, seconds: float) -> bytes:
    data, end = b"", time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            data += os.read(fd, 4096)
        except BlockingIOError:
            await asyncio.sleep(0.01)
    return data


def test_a_serial_line_that_comes_back_gets_the_current_epoch_first(tmp_path):
    """Reproduces: a re-plugged adapter first got the 64 lines queued meanwhile, 10 s old."""
    link = tmp_path / "ttyUSB0"

    async def scenario() -> tuple[list[int], int | None, int]:
        master, slave = make_device(link)
        port = SerialPort(parse_port_url(f"serial://{link}?baud=115200"), queue_lines=64)
        epoch = 0
        latest_before_reopen: int | None = None
        stop = asyncio.Event()

        async def sensor() -> None:  # a 20 Hz device: five lines per epoch, in one tick
            nonlocal epoch, latest_before_reopen
            while not stop.is_set():
                if port.stats.reopens and latest_before_reopen is None:
                    latest_before_reopen = epoch
                epoch += 1
                for i in range(5):
                    port.send(f"$GPTST,{epoch},{i}*00\r\n".encode())
                await asyncio.sleep(0.05)

        await port.start()
        task = asyncio.create_task(sensor())
        try:
            await read_some(master, 0.3)
            os.close(master)  # the adapter is pulled out
            os.close(slave)
            link.unlink()
            await asyncio.sleep(1.5)  # thirty epochs while it is away
            master, slave = make_device(link)  # ... and plugged back in
            data = await read_some(master, 2.5)
            os.close(master)
            os.close(slave)
        finally:
            stop.set()
            await task
            await port.close()
        numbers = [int(line.split(b",")[1]) for line in data.split(b"\r\n") if line]
        return numbers, latest_before_reopen, port.stats.dropped_lines

    numbers, latest, dropped = asyncio.run(scenario())
    assert latest is not None and numbers, "the device should have been reopened and written"
    # The first epoch written is the one queued last before the reopen, whole; none older.
    assert numbers[0] == latest, (numbers[:10], latest)
    assert numbers[:5] == [latest] * 5
    assert numbers == sorted(numbers) and set(numbers) == set(range(latest, numbers[-1] + 1))
    assert dropped >= 5 * 20  # what was given up while it was away is counted


def test_lines_put_in_one_loop_callback_form_one_epoch():
    async def scenario() -> None:
        stats = PortStats()
        queue = LineQueue(16, stats)
        for line in (b"a1", b"a2", b"a3"):
            queue.put(line)
        await asyncio.sleep(0)
        queue.put(b"b1")
        queue.put(b"b2")
        assert await queue.get() == b"a1" and queue.starts_epoch
        queue.done()
        assert queue.newer_epoch_waiting  # b is queued behind the rest of a
        assert await queue.get() == b"a2" and not queue.starts_epoch
        queue.done()
        assert queue.keep_latest_epoch() == 1  # a3 goes
        assert stats.dropped_lines == 1
        assert await queue.get() == b"b1" and queue.starts_epoch
        queue.done()
        assert not queue.newer_epoch_waiting

    asyncio.run(scenario())


# --- paced bytes written by the tick thread ----------------------------------------------------


class Slave:
    """A pty pair whose master a PacedLine writes; reads what has arrived on the slave."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        os.set_blocking(self.master, False)
        os.set_blocking(self.slave, False)
        self.full_calls = 0
        self.errors: list[OSError] = []

    def read(self) -> bytes:
        data = b""
        while True:
            try:
                data += os.read(self.slave, 65536)
            except BlockingIOError:
                return data

    def on_full(self) -> None:  # as the port does: the reader is not keeping up
        self.full_calls += 1
        termios.tcflush(self.slave, termios.TCIFLUSH)

    def line(self, byte_s: float = 0.001, max_segments: int = 64) -> PacedLine:
        return PacedLine(self.master, byte_s, max_segments, self.on_full, self.errors.append)

    def close(self) -> None:
        os.close(self.master)
        os.close(self.slave)


def test_a_paced_line_writes_each_byte_once_its_time_on_the_line_is_up():
    pty = Slave()
    try:
        line = pty.line(byte_s=0.001)  # 1 ms a byte
        data = bytes(range(65, 65 + 50)) * 2  # 100 bytes
        line.add(data, start=100.0)
        line.add(b"$NEXT*00\r\n", start=100.1)  # right after the first line's last byte
        line.write_due(99.0)
        assert pty.read() == b"" and line.pending
        line.write_due(100.0305)  # 30 bytes are out on the line by now
        assert pty.read() == data[:30]
        line.write_due(100.0305)  # nothing more is due
        assert pty.read() == b""
        line.write_due(100.105)  # the first line, then 5 bytes of the next
        assert pty.read() == data[30:] + b"$NEXT"
        line.write_due(101.0)
        assert pty.read() == b"*00\r\n" and not line.pending
        assert line.take_written() == 110 and line.take_written() == 0
    finally:
        pty.close()


def test_a_hurried_or_closing_line_goes_at_once_and_a_closed_one_writes_nothing():
    pty = Slave()
    try:
        line = pty.line(byte_s=0.01)
        line.add(b"A" * 40, start=0.0)
        line.write_due(0.1)  # 10 of 40
        line.hurry()  # a newer epoch is here: the rest of this one at the next write
        line.add(b"B" * 40, start=0.1)
        line.write_due(0.1)
        assert pty.read() == b"A" * 40  # the B line keeps its own pace
        line.write_due(0.1, everything=True)  # the port closing
        assert pty.read() == b"B" * 40
        line.add(b"C" * 10, start=0.0)
        line.close()
        line.write_due(10.0, everything=True)
        assert pty.read() == b"" and not line.pending
    finally:
        pty.close()


def test_a_full_master_discards_the_unread_input_and_a_full_line_drops_its_oldest():
    pty = Slave()
    try:
        line = pty.line(byte_s=1e-9, max_segments=3)
        chunk = b"X" * 4000 + b"\r\n"
        for _ in range(40):  # nobody reads: the pty's buffers fill, then the line discards
            assert line.add(chunk, start=0.0)
            line.write_due(1.0)
        assert pty.full_calls > 0 and not pty.errors
        assert pty.read().endswith(b"X\r\n")  # what is there is what was written last
        assert [line.add(b"Y\r\n", start=1e9) for _ in range(4)] == [True, True, True, False]
    finally:
        pty.close()
