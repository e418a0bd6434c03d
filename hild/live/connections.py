"""A Unix socket server that holds a bounded number of connections (``hild ctl``'s).

asyncio's ``start_unix_server`` accepts every connection it is offered, up to its listen
backlog at a time (100 by default), and keeps each for as long as its client does: 3,000 idle
clients held 2,839 of the daemon's descriptors, and a burst beyond the backlog was refused by
the kernel (the clients' connect failed). Here the daemon accepts one connection at a time from
a backlog of ``socket.SOMAXCONN`` (the kernel caps it at net.core.somaxconn): one within
``max_connections`` is served; one beyond is answered at once with ``refusal`` (a line) and
closed, so its client learns why instead of waiting, and the daemon holds at most
``max_connections`` + 2 descriptors for it (the listening socket, the one being refused).
How long a connection may sit idle is the handler's to say (hild/live/ctl.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
from collections.abc import Awaitable, Callable

import structlog

from hild.log import RateLimited

log = structlog.get_logger("hild.ctl")

BACKLOG = socket.SOMAXCONN  # connections the kernel queues until one is accepted (4096)
# accept() out of descriptors (the process's or the system's) or of kernel memory: wait this
# long, and the connections that hold them may have ended
ACCEPT_PAUSE_S = 0.1
OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def listen_unix(path: str) -> socket.socket:
    """A non-blocking Unix stream socket bound at ``path`` (made with the process's umask)
    and listening with the largest backlog the kernel allows."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.bind(path)
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def refuse(conn: socket.socket, line: bytes) -> None:
    """Answer a connection with ``line`` and close it, without waiting: a fresh connection's
    send buffer takes a line at once. What the client sent already is read and dropped
    first, so that closing tells it "end of file", not "connection reset"."""
    try:
        conn.setblocking(False)
        with contextlib.suppress(OSError):
            conn.recv(65536)
        with contextlib.suppress(OSError):
            conn.send(line)
    finally:
        conn.close()


class BoundedServer:
    """Serves ``serve(reader, writer)`` on each accepted connection, at most
    ``max_connections`` at once; ``refusal`` (one line) for each beyond."""

    def __init__(
        self,
        sock: socket.socket,
        serve: Handler,
        *,
        max_connections: int,
        refusal: bytes,
        limit: int,
    ) -> None:
        self.sock = sock
        self.serve = serve
        self.max_connections = max_connections
        self.refusal = refusal
        self.limit = limit  # the longest line a reader takes
        self.refused = 0  # connections answered with the refusal
        self._connections: set[asyncio.Task] = set()
        self._acceptor: asyncio.Task | None = None
        self._log_pause = RateLimited(log, "ctl.accept_paused")

    @property
    def connections(self) -> int:
        return len(self._connections)

    def start(self) -> None:
        self._acceptor = asyncio.create_task(self._accept(), name="hild-ctl-accept")

    async def _accept(self) -> None:
        try:
            while True:
                conn = await self._next()
                if conn is None:
                    continue
                if len(self._connections) >= self.max_connections:
                    self.refused += 1
                    refuse(conn, self.refusal)
                    continue
                task = asyncio.create_task(self._run(conn))
                self._connections.add(task)
                task.add_done_callback(self._connections.discard)
        finally:
            self.sock.close()  # (here: never while the loop still watches it)

    async def _next(self) -> socket.socket | None:
        """The next connection; None after a pause when the process is out of descriptors."""
        try:
            conn, _ = await asyncio.get_running_loop().sock_accept(self.sock)
        except OSError as e:
            if e.errno not in OUT_OF_RESOURCES:
                raise
            self._log_pause(None, error=e.strerror, pause_s=ACCEPT_PAUSE_S)
            await asyncio.sleep(ACCEPT_PAUSE_S)
            return None
        return conn

    async def _run(self, conn: socket.socket) -> None:
        try:
            reader, writer = await asyncio.open_unix_connection(sock=conn, limit=self.limit)
        except OSError:
            conn.close()
            return
        await self.serve(reader, writer)

    def close(self) -> None:
        """Stop accepting (the socket's file stays: its owner removes it) and end every
        connection."""
        if self._acceptor is not None and not self._acceptor.done():
            self._acceptor.cancel()  # (which closes the listening socket)
        else:
            self.sock.close()
        for task in self._connections:
            task.cancel()

    async def wait_closed(self) -> None:
        tasks = [t for t in (self._acceptor, *self._connections) if t is not None]
        await asyncio.gather(*tasks, return_exceptions=True)
