"""What every port shares: statistics, the bounded drop-oldest line queue, and the line splitter."""

from __future__ import annotations

import abc
import asyncio
import collections
import dataclasses
from collections.abc import Awaitable, Callable

import structlog

from hild.transport.url import PortSpec

log = structlog.get_logger("hild.transport")

MAX_LINE_BYTES = 256
CLOSE_FLUSH_S = 0.2


@dataclasses.dataclass
class PortStats:
    """Counters for one port, cheap enough to update on every line."""

    sent_lines: int = 0
    sent_bytes: int = 0
    dropped_lines: int = 0
    received_lines: int = 0
    overlong_lines: int = 0
    errors: int = 0
    reopens: int = 0
    clients: int = 0
    connected: bool = False
    flushes: int = 0

    def as_dict(self) -> dict:
        """Return the counters as a plain dict, for status output and logs."""
        return dataclasses.asdict(self)


class LineQueue:
    """A bounded FIFO of outgoing lines: full means the oldest line is dropped and counted."""

    def __init__(self, maxlen: int, stats: PortStats):
        if maxlen < 1:
            raise ValueError(f"queue_lines must be at least 1, not {maxlen}")
        self._lines: collections.deque[bytes] = collections.deque()
        self._maxlen = maxlen
        self._stats = stats
        self._wake = asyncio.Event()
        self._busy = False

    def __len__(self) -> int:
        return len(self._lines)

    def put(self, line: bytes) -> None:
        """Append a line without ever waiting, dropping the oldest when full."""
        if len(self._lines) >= self._maxlen:
            self._lines.popleft()
            self._stats.dropped_lines += 1
        self._lines.append(line)
        self._wake.set()

    async def get(self) -> bytes:
        """Wait for the next line; the queue counts as busy until done() is called."""
        while not self._lines:
            self._wake.clear()
            await self._wake.wait()
        self._busy = True
        return self._lines.popleft()

    def done(self) -> None:
        """Mark the line returned by get() as finished (written or lost)."""
        self._busy = False

    @property
    def idle(self) -> bool:
        """True when nothing is queued and no line is being written."""
        return not self._lines and not self._busy

    def discard(self) -> int:
        """Drop everything still queued, count it as dropped and return how many."""
        n = len(self._lines)
        self._lines.clear()
        self._stats.dropped_lines += n
        return n


async def run_writer(
    queue: LineQueue, write: Callable[[bytes], Awaitable[bool]], stats: PortStats
) -> None:
    """Write queued lines one at a time, forever; write returns False for a line it dropped.

    An exception from write ends the task (the line is counted as dropped), so the owner can
    react, e.g. by reopening a device.
    """
    while True:
        line = await queue.get()
        try:
            written = await write(line)
        except Exception:
            stats.dropped_lines += 1
            raise
        finally:
            queue.done()
        if written:
            stats.sent_lines += 1
            stats.sent_bytes += len(line)


class LineSplitter:
    """Turn received bytes into lines: buffers partial lines, strips CR, drops overlong lines."""

    def __init__(
        self,
        deliver: Callable[[bytes], None],
        stats: PortStats,
        max_bytes: int = MAX_LINE_BYTES,
    ):
        self._deliver = deliver
        self._stats = stats
        self._max = max_bytes
        self._buf = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> None:
        """Consume a chunk of a byte stream; complete lines are delivered at once."""
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                self._append(data[start:])
                return
            self._append(data[start:nl])
            self._end_line()
            start = nl + 1

    def feed_datagram(self, data: bytes) -> None:
        """Consume one datagram: its last line needs no terminator and nothing carries over."""
        self.feed(data)
        if self._buf or self._skipping:
            self._end_line()

    def reset(self) -> None:
        """Forget a partial line, e.g. when the stream it came from ended."""
        self._buf.clear()
        self._skipping = False

    def _append(self, chunk: bytes) -> None:
        if self._skipping or not chunk:
            return
        self._buf += chunk
        if len(self._buf) > self._max + 1:  # + 1: a trailing CR still to be stripped
            self._buf.clear()
            self._skipping = True

    def _end_line(self) -> None:
        if self._skipping:
            self._skipping = False
            self._stats.overlong_lines += 1
            return
        line = bytes(self._buf).strip(b"\r")
        self._buf.clear()
        if not line:
            return
        if len(line) > self._max:
            self._stats.overlong_lines += 1
            return
        self._stats.received_lines += 1
        self._deliver(line)


class Port(abc.ABC):
    """One I/O endpoint for NMEA lines: non-blocking send(), received lines to on_line."""

    def __init__(self, spec: PortSpec, queue_lines: int = 64):
        self.spec = spec
        self.stats = PortStats()
        self.on_line: Callable[[bytes], None] | None = None
        self.queue_lines = queue_lines
        self._queue = LineQueue(queue_lines, self.stats)
        self._started = False
        self._closed = False

    async def start(self) -> None:
        """Open, bind or create the endpoint and start its tasks; a second call does nothing."""
        if self._closed:
            raise RuntimeError(f"port {self.spec.url} is closed and cannot be started again")
        if self._started:
            return
        self._started = True
        try:
            await self._open()
        except BaseException:
            self._started = False
            await self._release()
            raise
        log.info("port.started", url=self.spec.url, where=self.describe())

    def send(self, line: bytes) -> None:
        """Queue one line (bytes ending in CRLF) for writing; never blocks and never raises."""
        try:
            if self._closed:
                self.stats.dropped_lines += 1
                return
            if not isinstance(line, bytes | bytearray | memoryview):
                raise TypeError(f"a line must be bytes, not {type(line).__name__}")
            self._enqueue(bytes(line))
        except Exception as e:
            self.stats.errors += 1
            log.warning("port.send_failed", url=self.spec.url, error=repr(e))

    async def close(self) -> None:
        """Write what can be written within ~0.2 s, then release everything; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._started:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + CLOSE_FLUSH_S
            while not self._drained() and loop.time() < deadline:
                await asyncio.sleep(0.005)
            await self._release()
        self._discard_queued()
        log.info("port.closed", url=self.spec.url, **self.stats.as_dict())

    @abc.abstractmethod
    def describe(self) -> str:
        """Say where a user connects to this port, in words."""

    @abc.abstractmethod
    async def _open(self) -> None:
        """Create the endpoint and start the writer (and reader) tasks."""

    @abc.abstractmethod
    async def _release(self) -> None:
        """Stop the tasks and release every resource held."""

    def _enqueue(self, line: bytes) -> None:
        self._queue.put(line)

    def _drained(self) -> bool:
        return self._queue.idle

    def _discard_queued(self) -> None:
        self._queue.discard()

    def _new_splitter(self) -> LineSplitter:
        return LineSplitter(self._deliver, self.stats)

    def _deliver(self, line: bytes) -> None:
        callback = self.on_line
        if callback is None:
            return
        try:
            callback(line)
        except Exception as e:
            self.stats.errors += 1
            log.warning("port.on_line_failed", url=self.spec.url, line=line[:80], error=repr(e))


async def cancel_and_wait(task: asyncio.Task | None) -> None:
    """Cancel a task and wait until it has finished, discarding its result or exception."""
    if task is None:
        return
    if not task.done():
        task.cancel()
        await asyncio.wait({task})  # raises only if the caller itself is cancelled meanwhile
    if not task.cancelled():
        task.exception()  # mark it retrieved; the owner has dealt with it already
