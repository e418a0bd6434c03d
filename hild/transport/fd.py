"""Non-blocking reads and writes on one file descriptor (a tty), driven by the event loop."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable

from hild.transport.budget import SLICE_BYTES, InputBudget

READ_SIZE = 4096


class FdChannel:
    """Event-loop I/O on a non-blocking fd; the owner opens and closes the fd itself.

    on_data gets what is read, in slices of SLICE_BYTES under the loop's InputBudget (a flood
    of garbage on a tty takes its share of each tick, no more: the rest waits in the kernel);
    on_lost is called once when reading hits an error or end of file (None); slice_bytes, if
    given, says how much to hand over at a time instead; on_would_block,
    if given, is called when a write would block, before waiting for the fd to become
    writable (the pty port uses it to discard stale input).
    """

    def __init__(
        self,
        fd: int,
        on_data: Callable[[bytes], None],
        on_lost: Callable[[OSError | None], None],
        on_would_block: Callable[[], None] | None = None,
        slice_bytes: Callable[[], int] | None = None,
    ):
        self.fd = fd
        self._slice_bytes = slice_bytes  # how much to hand to on_data at a time (SLICE_BYTES)
        self._loop = asyncio.get_running_loop()
        self._on_data = on_data
        self._on_lost = on_lost
        self._on_would_block = on_would_block
        self._reading = False
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._budget = InputBudget.of(self._loop)
        self._pending = b""  # read but not yet handed to on_data
        self._offset = 0
        self._paused = False  # by the budget: start_reading waits for input_resume
        os.set_blocking(fd, False)

    def start_reading(self) -> None:
        """Start calling on_data with what arrives on the fd."""
        if not self._reading and not self._closed and not self._paused:
            self._loop.add_reader(self.fd, self._readable)
            self._reading = True

    def stop_reading(self) -> None:
        """Stop watching the fd for input."""
        if self._reading:
            self._loop.remove_reader(self.fd)
            self._reading = False

    async def write(self, data: bytes) -> bool:
        """Write all of data, waiting (not blocking) while the fd is full; OSError on failure."""
        view = memoryview(data)
        hinted = False
        while view:
            if self._closed:
                raise OSError(errno.EBADF, "the channel is closed")
            try:
                n = os.write(self.fd, view)
            except (BlockingIOError, InterruptedError):
                if self._on_would_block is not None and not hinted:
                    hinted = True
                    self._on_would_block()
                    continue
                await self._writable()
                continue
            view = view[n:]
            hinted = False
        return True

    def close(self) -> None:
        """Stop watching the fd and fail a pending write; call before closing the fd."""
        if self._closed:
            return
        self._closed = True
        self.stop_reading()
        self._budget.forget(self)
        self._pending = b""
        if self._waiter is not None:
            self._loop.remove_writer(self.fd)
            if not self._waiter.done():
                self._waiter.set_exception(OSError(errno.EBADF, "the channel was closed"))

    async def _writable(self) -> None:
        waiter = self._loop.create_future()
        self._waiter = waiter

        def ready() -> None:
            if not waiter.done():
                waiter.set_result(None)

        self._loop.add_writer(self.fd, ready)
        try:
            await waiter
        finally:
            if not self._closed:  # close() already unregistered; the fd may be gone by now
                self._loop.remove_writer(self.fd)
            self._waiter = None

    def _readable(self) -> None:
        try:
            data = os.read(self.fd, READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.stop_reading()
            self._on_lost(e)
            return
        if not data:
            self.stop_reading()
            self._on_lost(None)
            return
        self._pending, self._offset = data, 0
        self._budget.run(self)

    # -- the budget's reader interface --
    def input_slice(self) -> bool:
        """Hand one slice of what was read to on_data; True while some is left."""
        size = SLICE_BYTES if self._slice_bytes is None else self._slice_bytes()
        start, end = self._offset, self._offset + size
        data = self._pending
        if start >= len(data):
            return False
        self._offset = end
        self._on_data(data if start == 0 and end >= len(data) else data[start:end])
        return end < len(data)

    def input_pause(self) -> None:
        self.stop_reading()
        self._paused = True

    def input_resume(self) -> None:
        self._pending, self._offset = b"", 0
        self._paused = False
        self.start_reading()
