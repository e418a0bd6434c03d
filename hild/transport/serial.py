"""A real serial device (via pyserial), reopened in the background when it disappears."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import termios

import serial
import structlog

from hild.transport.base import Port, cancel_and_wait, run_writer
from hild.transport.fd import FdChannel
from hild.transport.url import PortSpec

log = structlog.get_logger("hild.transport")

RETRY_MIN_S = 0.1
RETRY_MAX_S = 2.0
STABLE_S = 5.0  # a device that stayed open this long starts its back-off afresh when lost


class SerialPort(Port):
    """A serial device driven through its fd; absent or vanished devices are retried with back-off.

    While the device is away, the queue keeps only the latest epoch (the lines of the last
    tick that sent any, see LineQueue), so a device that comes back gets the current epoch
    first, never a backlog of old sentences; the lines given up are counted as dropped.
    """

    scheme = "serial"

    def __init__(self, spec: PortSpec, queue_lines: int = 64, default_baud: int = 4800):
        super().__init__(spec, queue_lines)
        if not spec.path:
            raise ValueError(f"{spec.url}: a serial port needs a device path")
        self.path: str = spec.path
        self.baud: int = spec.baud or default_baud
        self._serial: serial.Serial | None = None
        self._supervisor: asyncio.Task | None = None

    def describe(self) -> str:
        """Name the device, its speed and whether it is there."""
        state = "connected" if self.stats.connected else "not connected, retrying"
        return self._with_direction(f"{self.path} at {self.baud} baud ({state})")

    async def _open(self) -> None:
        error = self._connect()
        if error is not None:
            log.warning(
                "port.open_failed",
                url=self.spec.url,
                path=self.path,
                error=str(error),
                retry_in_s=RETRY_MIN_S,
            )
        self._supervisor = asyncio.create_task(
            self._supervise(error is None), name=f"hild-serial {self.path}"
        )

    def _connect(self) -> Exception | None:
        """Try to open the device once; return the error, or None on success."""
        try:
            try:
                ser = serial.Serial(
                    self.path, self.baud, timeout=0, write_timeout=0, exclusive=True
                )
            except (TypeError, ValueError):  # a platform without exclusive access
                ser = serial.Serial(self.path, self.baud, timeout=0, write_timeout=0)
        except (serial.SerialException, OSError, ValueError) as e:
            return e
        try:
            _min_one_byte(ser.fileno())
        except (termios.error, OSError) as e:
            _close_quietly(ser)
            return OSError(errno.ENOTTY, f"cannot configure {self.path}: {e}")
        self._serial = ser
        self.stats.connected = True
        return None

    async def _supervise(self, connected: bool) -> None:
        """Keep the device open: run it while it works, retry with back-off while it does not.

        Every successful open after the first attempt counts as a reopen. A device that fails
        again soon after reopening keeps the back-off growing instead of resetting it.
        """
        loop = asyncio.get_running_loop()
        delay = RETRY_MIN_S
        error: BaseException | None
        while True:
            if connected:
                since = loop.time()
                error = await self._run_connected()
                self._disconnect()
                if loop.time() - since >= STABLE_S:
                    delay = RETRY_MIN_S
                log.warning(
                    "port.lost",
                    url=self.spec.url,
                    path=self.path,
                    error=str(error),
                    retry_in_s=delay,
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)
            error = self._connect()
            connected = error is None
            if connected:
                self._queue.keep_latest_epoch()
                self.stats.reopens += 1
                log.info("port.reopened", url=self.spec.url, reopens=self.stats.reopens)
            else:
                log.debug(
                    "port.retry_failed", url=self.spec.url, error=str(error), retry_in_s=delay
                )

    async def _run_connected(self) -> BaseException:
        """Read and write the open device until it fails; return why it failed."""
        assert self._serial is not None
        lost: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()

        def on_lost(error: BaseException | None) -> None:
            if not lost.done():
                lost.set_result(error or OSError(errno.EIO, "the device hung up"))

        def writer_done(task: asyncio.Task) -> None:
            if not task.cancelled() and task.exception() is not None:
                on_lost(task.exception())

        splitter = self._new_splitter()
        channel = FdChannel(
            self._serial.fileno(), splitter.feed, on_lost, slice_bytes=splitter.slice_bytes
        )
        channel.start_reading()
        writer = asyncio.create_task(run_writer(self._queue, channel.write, self.stats))
        writer.add_done_callback(writer_done)
        try:
            return await lost
        finally:
            try:
                await cancel_and_wait(writer)
            finally:
                channel.close()

    def _disconnect(self) -> None:
        if self._serial is not None:
            _close_quietly(self._serial)
            self._serial = None
        self.stats.connected = False

    def _enqueue(self, line: bytes) -> None:
        self._queue.put(line)
        if not self.stats.connected:
            self._queue.keep_latest_epoch()

    def _drained(self) -> bool:
        return not self.stats.connected or self._queue.idle

    async def _release(self) -> None:
        await cancel_and_wait(self._supervisor)
        self._disconnect()


def _min_one_byte(fd: int) -> None:
    """Set VMIN=1, VTIME=0 so that a read of 0 bytes means hang-up, never 'no data yet'."""
    attrs = termios.tcgetattr(fd)
    attrs[6][termios.VMIN] = 1
    attrs[6][termios.VTIME] = 0
    termios.tcsetattr(fd, termios.TCSANOW, attrs)


def _close_quietly(ser: serial.Serial) -> None:
    with contextlib.suppress(Exception):
        ser.close()
