"""A virtual serial port: a pty whose slave is reached through a symlink such as /tmp/hild/gps."""

from __future__ import annotations

import array
import asyncio
import errno
import fcntl
import math
import os
import termios
import time
import tty

import structlog

from hild.log import RateLimited
from hild.rundir import check_replaceable, make_link_dir, remove_own_symlink, replace_symlink
from hild.transport.base import Port, cancel_and_wait, run_writer
from hild.transport.fd import FdChannel
from hild.transport.pacer import PacedLine, TickPacer, bytes_out_by
from hild.transport.url import PortSpec

log = structlog.get_logger("hild.transport")

BITS_PER_BYTE = 10  # start + 8 data + stop bits, as on the serial line the pty stands for
PACE_QUANTUM_S = 0.02  # paced bytes go out at this grid's ticks, all paced ports together
PACE_SLACK_S = 0.05  # a line that starts this soon after the last one ended follows it at once
READER_GONE_S = 2.0  # a slave whose reader has read nothing for this long counts as unread
CLOSE_QUIET_S = 0.02  # closing: the slave empty this long means its reader has it all


class PtyPort(Port):
    """A pty pair: the daemon drives the master, a client opens the slave via spec.path.

    The daemon keeps the slave open too, so the master never reads EIO while no client is
    attached.

    Fresh data: at the start of each epoch (the lines queued in one tick, see LineQueue) the
    port looks at how many bytes wait unread on the slave. If nobody has read from the slave
    for READER_GONE_S, what waits there is stale and is flushed, so a client that attaches
    late (or comes back) reads the current epoch first, never a backlog. A client that keeps
    reading loses nothing. When the master is full (a slow reader), the slave's unread input
    is flushed too.

    Pacing (``pace=1``, the default when the port has a baud rate): bytes leave at the line's
    rate, 10 bits a byte, each written once its last bit would have arrived on a real line
    (in small bursts, every PACE_QUANTUM_S); so a 239-byte epoch at 4800 baud takes 0.5 s, as
    on the wire. Pacing never lets the port fall behind: when a later epoch is already queued
    (a line loaded beyond its budget, or --time-scale), or the port is closing, the rest of
    the current epoch goes at once. In the daemon the tick thread writes the paced bytes after
    each tick (``pace_from``, hild/transport/pacer.py), so that pacing costs the event loop no
    wake-ups; the schedule is the same.
    """

    scheme = "pty"

    def __init__(self, spec: PortSpec, queue_lines: int = 64, default_baud: int | None = None):
        super().__init__(spec, queue_lines)
        if spec.path is None:
            raise ValueError(f"{spec.url}: a pty port needs a path")
        self.path: str = spec.path
        self.baud = spec.baud or default_baud
        self.pace = spec.option("pace", "1") == "1" and self.baud is not None
        self.tty_name: str | None = None
        self._master: int | None = None
        self._slave: int | None = None
        self._channel: FdChannel | None = None
        self._writer: asyncio.Task | None = None
        self._byte_s = BITS_PER_BYTE / self.baud if self.baud else 0.0
        self._line_free_at = 0.0  # loop time when the paced line has sent its last byte
        self._reader_seen_at = 0.0  # loop time when the slave's reader was last seen reading
        self._unread_before: int | None = 0  # unread bytes at the last check (None: unknown)
        self._written_since = 0  # bytes written to the master since that check
        self._paced: PacedLine | None = None  # set by pace_from: the tick thread writes
        self._flushed_from_tick = False  # the tick thread discarded unread input
        self._read_since: float | None = None  # closing: since when the slave holds nothing
        self._error_logs = {
            event: RateLimited(log, event)
            for event in ("pty.write_failed", "pty.flush_failed", "pty.read_failed")
        }

    def describe(self) -> str:
        """Say which symlink a client opens and which pty it points to."""
        if self.tty_name is None:
            return self._with_direction(f"{self.path} (pty, not open)")
        return self._with_direction(f"{self.path} (-> {self.tty_name})")

    async def _open(self) -> None:
        make_link_dir(self.path)
        check_replaceable(self.path)
        master, slave = os.openpty()
        try:
            tty.setraw(slave)
            if self.baud is not None:
                _set_speed(slave, self.baud)
            self.tty_name = os.ttyname(slave)
            replace_symlink(self.path, self.tty_name)
        except BaseException:
            os.close(master)
            os.close(slave)
            self.tty_name = None
            raise
        self._master, self._slave = master, slave
        self.stats.connected = True
        loop = asyncio.get_running_loop()
        self._reader_seen_at = loop.time()  # a client attaching right after start gets it all
        splitter = self._new_splitter()
        self._channel = FdChannel(
            master, splitter.feed, self._read_lost, self._flush_stale, splitter.slice_bytes
        )
        self._channel.start_reading()
        self._writer = asyncio.create_task(
            run_writer(self._queue, self._write, self.stats, self._begin_epoch),
            name=f"hild-pty-writer {self.path}",
        )

    def pace_from(self, pacer: TickPacer) -> None:
        """Let ``pacer`` (the daemon's tick thread) write this port's paced bytes from now on;
        after start(), before the ticks begin."""
        if not self.pace or self._master is None or self._paced is not None:
            return
        self._paced = PacedLine(
            self._master,
            self._byte_s,
            self.queue_lines,
            self._discard_unread_from_tick,
            self._paced_write_failed,
        )
        pacer.add(self._paced)

    def _hand_to_pacer(self, line: bytes) -> None:
        """The line to the tick thread's pacer, with the time its first byte may go: right
        after the line's last byte, or now when the line was idle or a newer epoch starts
        while the last one is still going out (then the rest of that one goes at once)."""
        assert self._paced is not None
        now = time.monotonic()
        if self._queue.starts_epoch and self._paced.pending:
            self._paced.hurry()
            start = now
        else:
            start = self._line_start(now)
        if not self._paced.add(line, start):
            self.stats.dropped_lines += 1
        self._line_free_at = start + len(line) * self._byte_s

    def _discard_unread_from_tick(self) -> None:
        """In the tick thread, the master full: discard what the slave holds unread (the loop
        forgets its evidence of a reader at the next epoch)."""
        if self._discard_unread():
            self._flushed_from_tick = True

    def _paced_write_failed(self, error: OSError) -> None:
        """In the tick thread: a paced line's write failed; the line is lost."""
        self.stats.dropped_lines += 1
        self._count_error("pty.write_failed", error)

    def _drained(self) -> bool:
        """All written, and (closing) a present reader has read it: Linux discards what the
        slave holds unread when the master closes, where a real line's last bytes would sit
        in the receiver's buffer; so close() waits (within CLOSE_FLUSH_S) for them to be read.
        A reader gone for READER_GONE_S is not waited for."""
        if self._paced is None:
            written = super()._drained()
        else:
            if self._closed:  # closing: the rest goes at once
                self._paced.write_due(time.monotonic(), everything=True)
            written = self._queue.idle and not self._paced.pending
        if not written:
            self._read_since = None
            return False
        return not self._closed or self._read_by_client()

    def _read_by_client(self) -> bool:
        """Nothing has waited unread on the slave for CLOSE_QUIET_S (bytes just written reach
        the slave's queue a moment later, from a kernel worker), or nobody has read it for
        READER_GONE_S."""
        if self._slave is None:
            return True
        now = asyncio.get_running_loop().time()
        try:
            unread = _unread_bytes(self._slave)
        except OSError:
            return True
        if unread:
            self._read_since = None
            return now - self._reader_seen_at > READER_GONE_S
        if self._read_since is None:
            self._read_since = now
        return now - self._read_since >= CLOSE_QUIET_S

    async def _write(self, line: bytes) -> bool:
        assert self._channel is not None
        if self._paced is not None:
            self._hand_to_pacer(line)
            return True
        try:
            if self.pace:
                await self._write_paced(line)
            else:
                await self._channel.write(line)
                self._written_since += len(line)
            return True
        except OSError as e:
            if self._closed:
                raise
            self.stats.dropped_lines += 1
            self._count_error("pty.write_failed", e)
            return False

    async def _write_paced(self, line: bytes) -> None:
        """Write line at the baud rate: each byte once its last bit would be out on the line.

        The bytes that are due go out together at ticks of a PACE_QUANTUM_S grid shared by
        every paced port, so that the ports wake the loop together, not each on its own.
        """
        assert self._channel is not None
        loop = asyncio.get_running_loop()
        start = self._line_start(loop.time())
        view = memoryview(line)
        size, sent, hurried = len(view), 0, False
        while sent < size:
            if self._queue.newer_epoch_waiting or self._closed:  # behind, or closing:
                n, hurried = size - sent, True  # the rest of this epoch goes at once
            else:
                n = min(size, bytes_out_by(loop.time(), start, self._byte_s)) - sent
                if n <= 0:
                    due = start + (sent + 1) * self._byte_s
                    await _sleep_until(loop, math.ceil(due / PACE_QUANTUM_S) * PACE_QUANTUM_S)
                    continue
            await self._channel.write(bytes(view[sent : sent + n]))
            self._written_since += n
            sent += n
        self._line_free_at = loop.time() if hurried else start + size * self._byte_s

    def _line_start(self, now: float) -> float:
        """When a line's first byte may go: right after the last line's last byte, or ``now``
        if the line has been idle (loop time and time.monotonic() are the same clock)."""
        start = self._line_free_at
        return now if start < now - PACE_SLACK_S else start

    def _begin_epoch(self) -> None:
        """Before an epoch is written: flush what waits unread if its reader is gone.

        A reader counts as present when the slave holds fewer unread bytes than at the last
        look plus what was written since. Never raises: it runs in the writer task.
        """
        if self._slave is None:
            return
        now = asyncio.get_running_loop().time()
        if self._paced is not None:
            self._written_since += self._paced.take_written()
            if self._flushed_from_tick:
                self._flushed_from_tick = False
                self._unread_before, self._written_since = None, 0
        try:
            unread = _unread_bytes(self._slave)
        except OSError as e:
            self._count_error("pty.flush_failed", e)
            self._unread_before = None
            return
        if self._unread_before is not None and unread < self._unread_before + self._written_since:
            self._reader_seen_at = now
        if unread and now - self._reader_seen_at > READER_GONE_S:
            self._flush_stale()
            unread = 0
        self._unread_before, self._written_since = unread, 0

    def _flush_stale(self) -> None:
        """Discard what the slave holds unread: nobody is reading it, or not fast enough."""
        if self._discard_unread():
            # What a mid-write flush removed is unknown: no evidence of a reader until next look
            self._unread_before, self._written_since = None, 0
            log.debug("pty.flushed", path=self.path, flushes=self.stats.flushes)

    def _discard_unread(self) -> bool:
        """Flush the slave's unread input and count it; False if it could not (closed, error)."""
        if self._slave is None:
            return False
        try:
            termios.tcflush(self._slave, termios.TCIFLUSH)
        except termios.error as e:
            self._count_error("pty.flush_failed", e)
            return False
        self.stats.flushes += 1
        return True

    def _read_lost(self, error: OSError | None) -> None:
        self._count_error("pty.read_failed", error or OSError(errno.EIO, "end of file"))

    def _count_error(self, event: str, error: BaseException) -> None:
        """Count an I/O error and log it, each kind at most once per LOG_INTERVAL_S."""
        self.stats.errors += 1
        self._error_logs[event](path=self.path, error=str(error), errors=self.stats.errors)

    async def _release(self) -> None:
        if self._paced is not None:
            self._paced.close()  # the tick thread writes nothing more: the fds close below
        await cancel_and_wait(self._writer)
        if self._channel is not None:
            self._channel.close()
        if self.tty_name is not None:
            remove_own_symlink(self.path, self.tty_name)
        for fd in (self._master, self._slave):
            if fd is not None:
                os.close(fd)
        self._master = self._slave = None
        self.stats.connected = False


async def _sleep_until(loop: asyncio.AbstractEventLoop, when: float) -> None:
    """Sleep until loop.time() reaches when (timers at the same time fire together)."""
    waiter = loop.create_future()
    handle = loop.call_at(when, _wake, waiter)
    try:
        await waiter
    finally:
        handle.cancel()


def _wake(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _unread_bytes(fd: int) -> int:
    """How many bytes wait unread in a tty's input queue (FIONREAD)."""
    buf = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, buf, True)
    return buf[0]


def _set_speed(fd: int, baud: int) -> None:
    """Set the tty's nominal speed; a pty ignores it, but clients may read it back."""
    speed = getattr(termios, f"B{baud}", None)
    if speed is None:
        return
    attrs = termios.tcgetattr(fd)
    attrs[4] = attrs[5] = speed
    termios.tcsetattr(fd, termios.TCSANOW, attrs)
