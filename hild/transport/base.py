"""What every port shares: statistics, the bounded drop-oldest line queue, the line splitter,
the received-line record, and the gate (direction, source filter) received lines pass."""

from __future__ import annotations

import abc
import asyncio
import collections
import dataclasses
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import ClassVar

import structlog

from hild.log import RateLimited
from hild.transport.allow import SourceFilter
from hild.transport.budget import SLICE_BYTES
from hild.transport.judging import Screen, Verdict
from hild.transport.streams import StreamGuard
from hild.transport.url import PortSpec, format_host_port

log = structlog.get_logger("hild.transport")

MAX_LINE_BYTES = 256
CLOSE_FLUSH_S = 0.2


@dataclasses.dataclass(frozen=True, slots=True)
class Inbound:
    """One received line and where and when it came from."""

    line: bytes  # the line without its terminator (CR/LF stripped)
    port: str  # the receiving port's URL (PortSpec.url)
    peer: tuple[str, int] | None  # sender's (host, port) for UDP and TCP; None for serial/pty
    t_rx: float  # time.monotonic() when the bytes were read
    overlong: bool = False  # longer than MAX_LINE_BYTES; `line` holds its first MAX_LINE_BYTES


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
    unsent_lines: int = 0  # send() with nowhere to go: mode=receive, or no UDP peer heard yet
    refused: int = 0  # input from outside allow= (datagrams, TCP lines or TCP connections)
    ignored_lines: int = 0  # lines read and discarded by a mode=send port
    # datagrams or lines discarded unread: a flooding or throttled sender's (senders.py,
    # streams.py)
    throttled: int = 0
    dropped_clients: int = 0  # TCP clients dropped for not reading (tcp.py)

    def as_dict(self) -> dict:
        """Return the counters as a plain dict, for status output and logs."""
        return dataclasses.asdict(self)


class LineQueue:
    """A bounded FIFO of outgoing lines: full means the oldest line is dropped and counted.

    Lines are grouped into epochs: the lines put while the event loop runs one callback (one
    tick of the daemon, with no await between the puts) form one epoch. A writer can ask
    whether the line it took starts an epoch (``starts_epoch``) and whether a later epoch is
    already waiting behind it (``newer_epoch_waiting``); ``keep_latest_epoch`` drops what is
    older than the latest epoch put.
    """

    def __init__(self, maxlen: int, stats: PortStats):
        if maxlen < 1:
            raise ValueError(f"queue_lines must be at least 1, not {maxlen}")
        self._lines: collections.deque[tuple[int, bytes]] = collections.deque()
        self._maxlen = maxlen
        self._stats = stats
        self._wake = asyncio.Event()
        self._busy = False
        self._epoch = 0  # the epoch put() fills; a new one begins with each loop callback
        self._batch_open = False
        self._taken_epoch = 0  # the epoch of the line get() returned last
        self.starts_epoch = False  # whether that line was the first of its epoch

    def __len__(self) -> int:
        return len(self._lines)

    def put(self, line: bytes) -> None:
        """Append a line without ever waiting, dropping the oldest when full."""
        if not self._batch_open:
            self._epoch += 1
            try:
                asyncio.get_running_loop().call_soon(self._end_batch)
                self._batch_open = True
            except RuntimeError:  # no loop running: each line is an epoch of its own
                pass
        if len(self._lines) >= self._maxlen:
            self._lines.popleft()
            self._stats.dropped_lines += 1
        self._lines.append((self._epoch, line))
        self._wake.set()

    def _end_batch(self) -> None:
        self._batch_open = False

    async def get(self) -> bytes:
        """Wait for the next line; the queue counts as busy until done() is called."""
        while not self._lines:
            self._wake.clear()
            await self._wake.wait()
        self._busy = True
        epoch, line = self._lines.popleft()
        self.starts_epoch = epoch != self._taken_epoch
        self._taken_epoch = epoch
        return line

    def done(self) -> None:
        """Mark the line returned by get() as finished (written or lost)."""
        self._busy = False

    @property
    def idle(self) -> bool:
        """True when nothing is queued and no line is being written."""
        return not self._lines and not self._busy

    @property
    def newer_epoch_waiting(self) -> bool:
        """True when a later epoch than the one of the line taken last is queued."""
        return bool(self._lines) and self._lines[-1][0] != self._taken_epoch

    def keep_latest_epoch(self) -> int:
        """Drop queued lines older than the latest epoch put, count them and return how many."""
        n = 0
        while self._lines and self._lines[0][0] != self._epoch:
            self._lines.popleft()
            n += 1
        self._stats.dropped_lines += n
        return n

    def discard(self) -> int:
        """Drop everything still queued, count it as dropped and return how many."""
        n = len(self._lines)
        self._lines.clear()
        self._stats.dropped_lines += n
        return n


async def run_writer(
    queue: LineQueue,
    write: Callable[[bytes], Awaitable[bool]],
    stats: PortStats,
    begin_epoch: Callable[[], None] | None = None,
) -> None:
    """Write queued lines one at a time, forever; write returns False for a line it dropped.

    begin_epoch, if given, is called before the first line of each epoch is written (see
    LineQueue). An exception from write ends the task (the line is counted as dropped), so
    the owner can react, e.g. by reopening a device.
    """
    while True:
        line = await queue.get()
        try:
            if begin_epoch is not None and queue.starts_epoch:
                begin_epoch()
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
    """Turn received bytes into Inbound records, stamped with the port, the peer and the time.

    CR, LF and CRLF each end a line; empty lines are skipped. A line longer than max_bytes is
    counted in stats.overlong_lines and delivered once, flagged overlong, with its first
    max_bytes bytes, as soon as it is known to be too long; the rest of it, up to its end, is
    discarded, so a line that never ends holds no more than max_bytes in memory.
    """

    def __init__(
        self,
        port: str,
        deliver: Callable[[Inbound], object],  # returns the line's Verdict for a guard
        stats: PortStats,
        max_bytes: int = MAX_LINE_BYTES,
        guard: StreamGuard | None = None,
    ):
        self._port = port
        self._deliver = deliver
        self.guard = guard  # judges the lines' verdicts; a throttled stream's go through its gate
        self._stats = stats
        self._max = max_bytes
        self._buf = bytearray()
        self._skipping = False

    def feed(
        self, data: bytes, peer: tuple[str, int] | None = None, t_rx: float | None = None
    ) -> None:
        """Consume a chunk of a byte stream; complete lines are delivered at once.

        t_rx defaults to time.monotonic() now, taken once for every line ended by this chunk.
        """
        t = time.monotonic() if t_rx is None else t_rx
        screen = None if self.guard is None else self.guard.screen
        if screen is not None:
            self._feed_screened(screen, data, peer, t)
            return
        parts = data.replace(b"\r", b"\n").split(b"\n")
        if len(parts) == 1:
            self._append(data, peer, t)
            return
        self._append(parts[0], peer, t)
        self._end_line(peer, t)
        for part in itertools.islice(parts, 1, len(parts) - 1):
            if part:
                self._emit(part, peer, t)
        self._append(parts[-1], peer, t)

    def _feed_screened(
        self, screen: Screen, data: bytes, peer: tuple[str, int] | None, t: float
    ) -> None:
        """A throttled stream's chunk: only its well-formed lines are delivered, the others
        are counted in ``throttled`` (an overlong one too); nothing else is decoded."""
        if self._skipping:  # the rest of an overlong line, up to its end, is discarded
            ends = [i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0]
            if not ends:
                return
            self._skipping = False
            data = data[min(ends) + 1 :]
        if self._buf:
            data = bytes(self._buf) + data
            self._buf.clear()
        good, seen, consumed = screen.lines(data)
        self._stats.throttled += seen - len(good)
        guard = self.guard
        assert guard is not None
        for line in good:
            guard.note(self._deliver(Inbound(line, self._port, peer, t)), t)
        self._append(data[consumed:], peer, t)

    def slice_bytes(self) -> int:
        """How much input to feed at a time under the budget: more while screened."""
        return SLICE_BYTES if self.guard is None else self.guard.slice_bytes

    def feed_datagram(
        self, data: bytes, peer: tuple[str, int] | None, t_rx: float | None = None
    ) -> None:
        """Consume one datagram: its last line needs no terminator and nothing carries over."""
        t = time.monotonic() if t_rx is None else t_rx
        self.feed(data, peer, t)
        self._end_line(peer, t)

    def reset(self) -> None:
        """Forget a partial line, e.g. when the stream it came from ended."""
        self._buf.clear()
        self._skipping = False

    def _append(self, chunk: bytes, peer: tuple[str, int] | None, t: float) -> None:
        """Add the middle of a line: bytes with no line end in them."""
        if self._skipping or not chunk:
            return
        self._buf += chunk
        if len(self._buf) > self._max:
            head = bytes(self._buf[: self._max])
            self._buf.clear()
            self._skipping = True
            self._overlong(head, peer, t)

    def _end_line(self, peer: tuple[str, int] | None, t: float) -> None:
        """A line end arrived: deliver what was buffered, unless it went out as overlong."""
        if self._skipping:
            self._skipping = False
            return
        if self._buf:
            line = bytes(self._buf)
            self._buf.clear()
            self._judged(line, peer, t)

    def _emit(self, line: bytes, peer: tuple[str, int] | None, t: float) -> None:
        """Deliver a whole line that arrived within one chunk."""
        if len(line) > self._max:
            self._overlong(line[: self._max], peer, t)
        else:
            self._judged(line, peer, t)

    def _judged(self, line: bytes, peer: tuple[str, int] | None, t: float) -> None:
        """Deliver a line, to the guard's account when there is one."""
        verdict = self._deliver(Inbound(line, self._port, peer, t))
        if self.guard is not None:
            self.guard.note(verdict, t)

    def _overlong(self, head: bytes, peer: tuple[str, int] | None, t: float) -> None:
        self._stats.overlong_lines += 1
        verdict = self._deliver(Inbound(head, self._port, peer, t, overlong=True))
        if self.guard is not None:
            self.guard.note(verdict, t)


class Port(abc.ABC):
    """One I/O endpoint for NMEA lines: non-blocking send(), received lines to on_line.

    Every received line reaches on_line as an Inbound record, unless the port is send-only
    (mode=send: counted in ignored_lines) or the line's sender is outside the allow= filter
    (counted in refused). A receive-only port (mode=receive) writes nothing: send() counts the
    line in unsent_lines.
    """

    scheme: ClassVar[str]  # the URL scheme this port type serves (hild.transport.PORT_TYPES)

    def __init__(self, spec: PortSpec, queue_lines: int = 64, default_baud: int | None = None):
        """``default_baud``: a serial line's rate when its URL names none (a network port has
        no baud rate and ignores it)."""
        self.spec = spec
        self.stats = PortStats()
        # Returns the line's Verdict (None: no device judged it); a port throttles a sender
        # of nothing but malformed lines by it (senders.py).
        self.on_line: Callable[[Inbound], Verdict | None] | None = None
        # Set with on_line: the cheap test of which lines could be of use (well-formed
        # sentences as the port's devices read them), which a throttled sender's lines must
        # pass to be decoded at all; None: every line is.
        self.screen: Screen | None = None
        self.mode: str = spec.option("mode", "both") or "both"
        self.allow = SourceFilter.parse(spec.option("allow"))
        # Set by the owner before start() when commands arrive on this port: a TCP port then
        # closes connections from outside allow at once instead of letting them listen.
        self.accepts_commands: bool = False
        self.queue_lines = queue_lines
        self._log_refused = RateLimited(log, "port.refused")
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
            if self.mode == "receive":
                self.stats.unsent_lines += 1
                return
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

    @property
    def direction_note(self) -> str | None:
        """``send-only`` or ``receive-only`` for describe(); None for a two-way port."""
        return {"send": "send-only", "receive": "receive-only"}.get(self.mode)

    def _with_direction(self, text: str) -> str:
        note = self.direction_note
        return text if note is None else f"{text}, {note}"

    def _new_splitter(self, allowed: bool = True, peer: str | None = None) -> LineSplitter:
        """A splitter whose lines go to on_line, or are ignored (mode=send) or refused; lines
        going to on_line are judged by a StreamGuard of their own (streams.py)."""
        if not allowed:
            return LineSplitter(self.spec.url, self._refuse_line, self.stats)
        if self.mode == "send":
            return LineSplitter(self.spec.url, self._ignore, self.stats)
        guard = StreamGuard(self.spec.url, lambda: self.screen, peer)
        return LineSplitter(self.spec.url, self._deliver, self.stats, guard=guard)

    def _deliver(self, item: Inbound) -> Verdict | None:
        """Hand a line to on_line; its verdict (see on_line)."""
        if not item.overlong:
            self.stats.received_lines += 1
        callback = self.on_line
        if callback is None:
            return None
        try:
            return callback(item)
        except Exception as e:
            self.stats.errors += 1
            log.warning(
                "port.on_line_failed", url=self.spec.url, line=item.line[:80], error=repr(e)
            )
            return None

    def _ignore(self, item: Inbound) -> None:
        self.stats.ignored_lines += 1

    def _refuse_line(self, item: Inbound) -> None:
        self._refuse(item.peer, "line")

    def _refuse(self, peer: tuple[str, int] | None, what: str) -> None:
        """Count input from outside allow=; log it at most once per 10 s, naming the peer."""
        self.stats.refused += 1
        self._log_refused(
            url=self.spec.url,
            peer=None if peer is None else format_host_port(*peer),
            what=what,
            allow=str(self.allow),
            refused=self.stats.refused,
        )


async def cancel_and_wait(task: asyncio.Task | None) -> None:
    """Cancel a task and wait until it has finished, discarding its result or exception."""
    if task is None:
        return
    if not task.done():
        task.cancel()
        await asyncio.wait({task})  # raises only if the caller itself is cancelled meanwhile
    if not task.cancelled():
        task.exception()  # mark it retrieved; the owner has dealt with it already
