"""A TCP server port: every connected client gets every line, and may send lines back.

Clients outside the port's allow= filter may connect and read, but their lines are refused;
when the port accepts commands (accepts_commands), their connections are closed at once.

Nothing a client does may cost the loop a deadline:

- at most ``max_clients`` (16 unless the URL says otherwise) are connected at a time; further
  connections are accepted and closed at once, counted in ``refused``, and so are connections
  that arrive while the process is close to its file-descriptor limit (accepting then pauses
  for ACCEPT_PAUSE_S, as it does when accept itself fails for want of descriptors);
- accepting and reading happen under the process-wide InputBudget (at most INPUT_BUDGET_S of
  every WINDOW_S), a slice at a time: a client that sends more than the budget allows is not
  read any further (the kernel and the client hold the rest) until its turn comes again;
- a client that shuts down its sending side (half-close) stays: it keeps receiving lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import resource
import socket
import time

import structlog

from hild.log import RateLimited
from hild.transport.base import CLOSE_FLUSH_S, LineQueue, Port, cancel_and_wait, run_writer
from hild.transport.budget import SLICE_BYTES, InputBudget
from hild.transport.url import DEFAULT_MAX_CLIENTS, LOOPBACK, PortSpec, format_host_port

log = structlog.get_logger("hild.transport")

READ_SIZE = 4096  # one read from a client's socket at most
WRITE_BUFFER_BYTES = 8 * 1024
SEND_BUFFER_BYTES = 16 * 1024
CLOSE_WAIT_S = 1.0
BACKLOG = 128  # connections the kernel holds before they are accepted (and judged)

# What admitting a client costs beyond the accept itself (its transport, its writer task), in
# budget: at most a few new clients a window, however many knock.
ADMIT_CHARGE_S = 0.0005

ACCEPT_PAUSE_S = 0.5  # accepting pauses this long when file descriptors run out
FD_RESERVE = 64  # accepting stops this many descriptors short of the process's limit
_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


class _Client(asyncio.BufferedProtocol):
    """One connection: its own queue (a slow client drops its own oldest lines), its reads
    under the input budget."""

    def __init__(self, port: TcpServerPort, address: tuple[str, int] | None, allowed: bool):
        self.port = port
        self.address = address
        self.peer = "?" if address is None else format_host_port(*address)
        self.allowed = allowed
        self.transport: asyncio.Transport | None = None
        self.queue = LineQueue(port.queue_lines, port.stats)
        self.task: asyncio.Task | None = None
        self.splitter = port._new_splitter(allowed)
        self.gone = asyncio.get_running_loop().create_future()
        self.half_closed = False
        self._buffer = bytearray(READ_SIZE)
        self._view = memoryview(self._buffer)
        self._start = self._end = 0  # what is pending in _buffer
        self._t_rx = 0.0
        self._write_paused = False
        self._drained: asyncio.Future[None] | None = None

    # -- the connection --

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        t = time.perf_counter()
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.port._closed:
            transport.abort()
            return
        _limit_buffering(transport)
        self.task = asyncio.create_task(
            run_writer(self.queue, self.write, self.port.stats),
            name=f"hild-tcp-writer {self.port.spec.url} {self.peer}",
        )
        self.task.add_done_callback(self._writer_done)
        self.port._joined(self)
        self.port._budget.charge(time.perf_counter() - t)

    def connection_lost(self, exc: Exception | None) -> None:
        t = time.perf_counter()
        self.port._budget.forget(self)
        self._start = self._end = 0
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self.task is not None:
            self.task.cancel()
        if exc is not None:
            reason = str(exc) or type(exc).__name__
        elif self.port._closed:
            reason = "the port was closed"
        else:
            reason = "closed by the client"
        self.port._left(self, reason)
        if not self.gone.done():
            self.gone.set_result(None)
        self.port._budget.charge(time.perf_counter() - t)

    def _writer_done(self, task: asyncio.Task) -> None:
        if not task.cancelled():
            task.exception()  # retrieved: the write failure ends the connection, nothing more
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    # -- reading, under the input budget --

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        self._start, self._end = 0, nbytes
        self._t_rx = time.monotonic()
        self.port._budget.run(self)

    def input_slice(self) -> bool:
        start = self._start
        end = min(start + SLICE_BYTES, self._end)
        if start >= end:
            return False
        self._start = end
        self.splitter.feed(bytes(self._view[start:end]), self.address, self._t_rx)
        return self._start < self._end

    def input_pause(self) -> None:
        if self.transport is not None:
            self.transport.pause_reading()

    def input_resume(self) -> None:
        if self.transport is not None and not self.half_closed:
            self.transport.resume_reading()

    def eof_received(self) -> bool:
        """The client will send no more (a half-close): it may still read, so it stays."""
        self.half_closed = True
        self.splitter.reset()  # a line the stream ended in the middle of is no line
        log.debug("port.client_half_closed", url=self.port.spec.url, peer=self.peer)
        # Half-closed or closed for good, the FIN looks the same: only the next lines written
        # tell (a closed socket answers them with RST, and the write after fails), so the
        # client stays until then. A port that writes nothing has no use for it.
        return self.port.mode != "receive"

    # -- writing --

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    async def write(self, line: bytes) -> bool:
        """Write one line and wait (not block) until the client has taken enough of it."""
        transport = self.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError(f"{self.peer} has gone")
        transport.write(line)
        if self._write_paused:
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained
        return True


class _Acceptor:
    """One listening socket: accepts connections under the input budget."""

    def __init__(self, port: TcpServerPort, sock: socket.socket):
        self.port = port
        self.sock = sock
        self._loop = asyncio.get_running_loop()
        self._watching = False
        self._backoff: asyncio.TimerHandle | None = None
        self._closed = False

    def start(self) -> None:
        self._watch()

    def input_slice(self) -> bool:
        return self.port._accept_one(self)

    def input_pause(self) -> None:
        self._unwatch()

    def input_resume(self) -> None:
        if self._backoff is None:
            self._watch()

    def back_off(self, seconds: float) -> None:
        """Stop accepting for a while (out of file descriptors)."""
        self._unwatch()
        if self._backoff is None and not self._closed:
            self._backoff = self._loop.call_later(seconds, self._back_on)

    def close(self) -> None:
        self._closed = True
        self._unwatch()
        if self._backoff is not None:
            self._backoff.cancel()
            self._backoff = None
        self.port._budget.forget(self)
        self.sock.close()

    def _back_on(self) -> None:
        self._backoff = None
        self._watch()

    def _readable(self) -> None:
        self.port._budget.run(self)

    def _watch(self) -> None:
        if not self._watching and not self._closed:
            self._loop.add_reader(self.sock.fileno(), self._readable)
            self._watching = True

    def _unwatch(self) -> None:
        if self._watching:
            self._loop.remove_reader(self.sock.fileno())
            self._watching = False


class TcpServerPort(Port):
    """Listens on host:port (loopback unless the URL says otherwise); port 0 picks a free one.

    sent_lines and sent_bytes count what was written to each client, so one line sent to two
    clients counts twice; lines sent while nobody is connected are not counted at all.
    ``refused`` counts connections closed at once (from outside allow= on a command port,
    beyond max_clients, or with file descriptors running out) and lines from outside allow=.
    """

    scheme = "tcp"

    def __init__(self, spec: PortSpec, queue_lines: int = 64, default_baud: int | None = None):
        super().__init__(spec, queue_lines)  # a network port has no baud rate
        if spec.port is None:
            raise ValueError(f"{spec.url}: a tcp port needs a port number")
        self.host: str = spec.host or LOOPBACK
        self.port: int = spec.port
        self.max_clients = int(spec.option("max_clients", str(DEFAULT_MAX_CLIENTS)) or 0)
        self._acceptors: list[_Acceptor] = []
        self._clients: set[_Client] = set()
        self._admitted = 0  # clients connected or being set up
        self._setups: set[asyncio.Task] = set()
        self._fd_ceiling = _fd_ceiling()
        self._budget: InputBudget = None  # type: ignore[assignment]  # set by _open
        self._log_accept = RateLimited(log, "port.accept_failed")

    @property
    def bound_port(self) -> int | None:
        """The port actually listened on (the real one when the URL asked for port 0)."""
        if not self._acceptors:
            return None
        return self._acceptors[0].sock.getsockname()[1]

    def describe(self) -> str:
        """Name the listening address and how many clients are connected."""
        port = self.bound_port if self.bound_port is not None else self.port
        n = self.stats.clients
        text = f"tcp {format_host_port(self.host, port)} ({n} client{'' if n == 1 else 's'})"
        return self._with_direction(text)

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        self._budget = InputBudget.of(loop)
        infos = await loop.getaddrinfo(
            self.host, self.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        seen = set()
        for family, kind, proto, _, address in infos:
            if address in seen:
                continue
            seen.add(address)
            sock = socket.socket(family, kind, proto)
            self._acceptors.append(_Acceptor(self, sock))  # released by _release, whatever happens
            # SO_REUSEADDR on Linux only lets a new listener take the port over from
            # connections in TIME_WAIT, not share it with another listener; no SO_REUSEPORT.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as e:
                where = format_host_port(str(address[0]), int(address[1]))
                reason = (e.strerror or str(e)).lower()
                raise OSError(e.errno, f"cannot listen on {where}: {reason}") from None
            sock.listen(BACKLOG)
            sock.setblocking(False)
        for acceptor in self._acceptors:
            acceptor.start()
        self.stats.connected = True

    def _enqueue(self, line: bytes) -> None:
        for client in self._clients:
            client.queue.put(line)

    def _drained(self) -> bool:
        return all(client.queue.idle for client in self._clients)

    def _accept_one(self, acceptor: _Acceptor) -> bool:
        """Accept one connection and admit it or close it; True when more may be waiting."""
        try:
            conn, peername = acceptor.sock.accept()
        except (BlockingIOError, InterruptedError):
            return False
        except ConnectionAbortedError:
            return True
        except OSError as e:
            self.stats.errors += 1
            self._log_accept(url=self.spec.url, error=str(e), errors=self.stats.errors)
            if e.errno in _OUT_OF_DESCRIPTORS:
                acceptor.back_off(ACCEPT_PAUSE_S)
            return False
        address = _peer_address(peername)
        allowed = address is not None and self.allow.allows(address[0])
        if conn.fileno() >= self._fd_ceiling:
            conn.close()
            self._refuse(address, "connection (file descriptors running out)")
            acceptor.back_off(ACCEPT_PAUSE_S)
            return False
        if self._closed:
            conn.close()
        elif not allowed and self.accepts_commands:
            conn.close()
            self._refuse(address, "connection")
        elif self._admitted >= self.max_clients:
            conn.close()
            self._refuse(address, f"connection beyond max_clients={self.max_clients}")
        else:
            self._admit(conn, address, allowed)
        return True

    def _admit(self, conn: socket.socket, address: tuple[str, int] | None, allowed: bool) -> None:
        conn.setblocking(False)
        client = _Client(self, address, allowed)
        self._admitted += 1
        self._budget.charge(ADMIT_CHARGE_S)
        loop = asyncio.get_running_loop()
        setup = loop.create_task(loop.connect_accepted_socket(lambda: client, conn))
        self._setups.add(setup)

        def done(task: asyncio.Task) -> None:
            self._setups.discard(task)
            failed = task.cancelled() or task.exception() is not None
            if failed and client.transport is None:  # never connected, never a client
                conn.close()
                self._admitted -= 1

        setup.add_done_callback(done)

    def _joined(self, client: _Client) -> None:
        self._clients.add(client)
        self.stats.clients = len(self._clients)
        log.info(
            "port.client_joined",
            url=self.spec.url,
            peer=client.peer,
            clients=self.stats.clients,
            input_allowed=client.allowed,
        )

    def _left(self, client: _Client, reason: str) -> None:
        self._admitted -= 1
        client.queue.discard()
        if client not in self._clients:  # set up while the port was closing: never joined
            return
        self._clients.discard(client)
        self.stats.clients = len(self._clients)
        log.info(
            "port.client_left",
            url=self.spec.url,
            peer=client.peer,
            reason=reason,
            clients=self.stats.clients,
        )

    async def _release(self) -> None:
        for acceptor in self._acceptors:
            acceptor.close()
        for task in list(self._setups):
            await cancel_and_wait(task)
        clients = list(self._clients)
        for client in clients:
            if client.transport is not None:
                client.transport.close()  # graceful: what the transport holds is still sent
        pending = {client.gone for client in clients if not client.gone.done()}
        if pending:
            _, pending = await asyncio.wait(pending, timeout=CLOSE_FLUSH_S)
        if pending:
            for client in clients:
                if client.transport is not None and not client.gone.done():
                    client.transport.abort()  # a client that does not read: give up on it
            await asyncio.wait(pending, timeout=CLOSE_WAIT_S)
        for client in clients:
            await cancel_and_wait(client.task)
        self.stats.connected = False


def _fd_ceiling() -> int:
    """The lowest descriptor number a new connection may have: FD_RESERVE below the limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 30
    return max(8, soft - min(FD_RESERVE, soft // 4))


def _limit_buffering(transport: asyncio.Transport) -> None:
    """Keep little in flight for a client, so that a slow one drops old lines, not queues them."""
    transport.set_write_buffer_limits(high=WRITE_BUFFER_BYTES)
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)


def _peer_address(peer: object) -> tuple[str, int] | None:
    """(host, port) of a socket's peer name, or None when it is not an IP address."""
    if isinstance(peer, tuple) and len(peer) >= 2:
        return str(peer[0]), int(peer[1])
    return None
