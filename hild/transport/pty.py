"""A virtual serial port: a pty whose slave is reached through a symlink such as /tmp/hild/gps."""

from __future__ import annotations

import asyncio
import errno
import os
import termios
import tty

import structlog

from hild.log import RateLimited
from hild.transport.base import Port, cancel_and_wait, run_writer
from hild.transport.fd import FdChannel
from hild.transport.url import PortSpec

log = structlog.get_logger("hild.transport")


class PtyPort(Port):
    """A pty pair: the daemon drives the master, a client opens the slave via spec.path.

    The daemon keeps the slave open too, so the master never reads EIO while no client is
    attached. When the master is full (nobody reading), the slave's unread input is flushed so
    that a client attaching later reads fresh sentences, not old ones.
    """

    def __init__(self, spec: PortSpec, queue_lines: int = 64, default_baud: int | None = None):
        super().__init__(spec, queue_lines)
        if spec.path is None:
            raise ValueError(f"{spec.url}: a pty port needs a path")
        self.path: str = spec.path
        self.baud = spec.baud or default_baud
        self.tty_name: str | None = None
        self._master: int | None = None
        self._slave: int | None = None
        self._channel: FdChannel | None = None
        self._writer: asyncio.Task | None = None
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
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        _check_replaceable(self.path)
        master, slave = os.openpty()
        try:
            tty.setraw(slave)
            if self.baud is not None:
                _set_speed(slave, self.baud)
            self.tty_name = os.ttyname(slave)
            _replace_symlink(self.path, self.tty_name)
        except BaseException:
            os.close(master)
            os.close(slave)
            self.tty_name = None
            raise
        self._master, self._slave = master, slave
        self.stats.connected = True
        splitter = self._new_splitter()
        self._channel = FdChannel(master, splitter.feed, self._read_lost, self._flush_stale)
        self._channel.start_reading()
        self._writer = asyncio.create_task(
            run_writer(self._queue, self._write, self.stats), name=f"hild-pty-writer {self.path}"
        )

    async def _write(self, line: bytes) -> bool:
        assert self._channel is not None
        try:
            return await self._channel.write(line)
        except OSError as e:
            if self._closed:
                raise
            self.stats.dropped_lines += 1
            self._count_error("pty.write_failed", e)
            return False

    def _flush_stale(self) -> None:
        """Discard what the slave holds unread: nobody is reading it, or not fast enough."""
        if self._slave is None:
            return
        try:
            termios.tcflush(self._slave, termios.TCIFLUSH)
        except termios.error as e:
            self._count_error("pty.flush_failed", e)
            return
        self.stats.flushes += 1
        log.debug("pty.flushed", path=self.path, flushes=self.stats.flushes)

    def _read_lost(self, error: OSError | None) -> None:
        self._count_error("pty.read_failed", error or OSError(errno.EIO, "end of file"))

    def _count_error(self, event: str, error: BaseException) -> None:
        """Count an I/O error and log it, each kind at most once per LOG_INTERVAL_S."""
        self.stats.errors += 1
        self._error_logs[event](path=self.path, error=str(error), errors=self.stats.errors)

    async def _release(self) -> None:
        await cancel_and_wait(self._writer)
        if self._channel is not None:
            self._channel.close()
        if self.tty_name is not None:
            _remove_own_symlink(self.path, self.tty_name)
        for fd in (self._master, self._slave):
            if fd is not None:
                os.close(fd)
        self._master = self._slave = None
        self.stats.connected = False


def _check_replaceable(path: str) -> None:
    """Refuse to put the link where a real file or directory is; a symlink may be replaced."""
    if os.path.lexists(path) and not os.path.islink(path):
        kind = "a directory" if os.path.isdir(path) else "a file that is not a symlink"
        raise FileExistsError(
            errno.EEXIST,
            f"refusing to replace {kind} with the pty link; remove it or choose another pty name",
            path,
        )


def _replace_symlink(path: str, target: str) -> None:
    """Point path at target atomically, replacing a stale link left by an earlier run."""
    tmp = f"{path}.{os.getpid()}.tmp"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _remove_own_symlink(path: str, target: str) -> None:
    """Remove the link if it still points at our pty (another run may have replaced it)."""
    try:
        if os.readlink(path) == target:
            os.unlink(path)
    except OSError:
        pass


def _set_speed(fd: int, baud: int) -> None:
    """Set the tty's nominal speed; a pty ignores it, but clients may read it back."""
    speed = getattr(termios, f"B{baud}", None)
    if speed is None:
        return
    attrs = termios.tcgetattr(fd)
    attrs[4] = attrs[5] = speed
    termios.tcsetattr(fd, termios.TCSANOW, attrs)
