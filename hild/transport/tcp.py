"""A TCP server port: every connected client gets every line, and may send lines back.

Clients outside the port's allow= filter may connect and read, but their lines are refused;
when the port accepts commands (accepts_commands), their connections are closed at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

import structlog

from hild.transport.base import CLOSE_FLUSH_S, LineQueue, Port, cancel_and_wait, run_writer
from hild.transport.url import LOOPBACK, PortSpec, format_host_port

log = structlog.get_logger("hild.transport")

READ_SIZE = 4096
WRITE_BUFFER_BYTES = 8 * 1024
SEND_BUFFER_BYTES = 16 * 1024
CLOSE_WAIT_S = 1.0


class _Client:
    """One connected client: its own queue (a slow client drops its own oldest lines)."""

    def __init__(self, port: TcpServerPort, writer: asyncio.StreamWriter):
        self.writer = writer
        self.address = _peer_address(writer.get_extra_info("peername"))
        self.peer = _peer_text(writer.get_extra_info("peername"))
        self.queue = LineQueue(port.queue_lines, port.stats)
        self.task: asyncio.Task | None = None

    async def write(self, line: bytes) -> bool:
        """Write one line and wait (not block) until the client has taken enough of it."""
        self.writer.write(line)
        await self.writer.drain()
        return True


class TcpServerPort(Port):
    """Listens on host:port (loopback unless the URL says otherwise); port 0 picks a free one.

    sent_lines and sent_bytes count what was written to each client, so one line sent to two
    clients counts twice; lines sent while nobody is connected are not counted at all.
    """

    def __init__(self, spec: PortSpec, queue_lines: int = 64):
        super().__init__(spec, queue_lines)
        if spec.port is None:
            raise ValueError(f"{spec.url}: a tcp port needs a port number")
        self.host: str = spec.host or LOOPBACK
        self.port: int = spec.port
        self._server: asyncio.Server | None = None
        self._clients: set[_Client] = set()
        self._handlers: set[asyncio.Task] = set()

    @property
    def bound_port(self) -> int | None:
        """The port actually listened on (the real one when the URL asked for port 0)."""
        if self._server is None or not self._server.sockets:
            return None
        return self._server.sockets[0].getsockname()[1]

    def describe(self) -> str:
        """Name the listening address and how many clients are connected."""
        port = self.bound_port if self.bound_port is not None else self.port
        n = self.stats.clients
        text = f"tcp {format_host_port(self.host, port)} ({n} client{'' if n == 1 else 's'})"
        return self._with_direction(text)

    async def _open(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, self.host, self.port, reuse_address=True
        )
        self.stats.connected = True

    def _enqueue(self, line: bytes) -> None:
        for client in self._clients:
            client.queue.put(line)

    def _drained(self) -> bool:
        return all(client.queue.idle for client in self._clients)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Run one client connection: its writer task, and reading its lines until it leaves."""
        if self._closed:
            writer.close()
            return
        address = _peer_address(writer.get_extra_info("peername"))
        allowed = address is not None and self.allow.allows(address[0])
        if not allowed and self.accepts_commands:
            self._refuse(address, "connection")
            writer.close()
            return
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        client = _Client(self, writer)
        _limit_buffering(writer)
        client.task = asyncio.create_task(run_writer(client.queue, client.write, self.stats))
        client.task.add_done_callback(lambda _: writer.close())  # a failed write ends the client
        self._clients.add(client)
        self.stats.clients = len(self._clients)
        log.info(
            "port.client_joined",
            url=self.spec.url,
            peer=client.peer,
            clients=self.stats.clients,
            input_allowed=allowed,
        )
        splitter = self._new_splitter(allowed)
        reason = "closed by the client"
        try:
            while data := await reader.read(READ_SIZE):
                splitter.feed(data, client.address)
        except OSError as e:
            reason = str(e)
        finally:
            if self._closed:
                reason = "the port was closed"
            self._clients.discard(client)
            self.stats.clients = len(self._clients)
            client.queue.discard()
            await cancel_and_wait(client.task)
            writer.close()
            if task is not None:
                self._handlers.discard(task)
            log.info(
                "port.client_left",
                url=self.spec.url,
                peer=client.peer,
                reason=reason,
                clients=len(self._clients),
            )

    async def _release(self) -> None:
        if self._server is not None:
            self._server.close()
        for client in list(self._clients):
            client.writer.close()  # graceful: what the transport holds is still sent
        pending = set(self._handlers)
        if pending:
            _, pending = await asyncio.wait(pending, timeout=CLOSE_FLUSH_S)
        if pending:
            for client in list(self._clients):
                client.writer.transport.abort()  # a client that does not read: give up on it
            _, pending = await asyncio.wait(pending, timeout=CLOSE_WAIT_S)
        for task in pending:
            await cancel_and_wait(task)
        if self._server is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), CLOSE_WAIT_S)
        self.stats.connected = False


def _limit_buffering(writer: asyncio.StreamWriter) -> None:
    """Keep little in flight for a client, so that a slow one drops old lines, not queues them."""
    writer.transport.set_write_buffer_limits(high=WRITE_BUFFER_BYTES)
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)


def _peer_address(peer: object) -> tuple[str, int] | None:
    """(host, port) of a socket's peer name, or None when it is not an IP address."""
    if isinstance(peer, tuple) and len(peer) >= 2:
        return str(peer[0]), int(peer[1])
    return None


def _peer_text(peer: object) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        return format_host_port(str(peer[0]), int(peer[1]))
    return str(peer)
