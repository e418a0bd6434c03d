"""A TCP server port: every connected client gets every line, and may send lines back.

Clients outside the port's allow= filter may connect and read, but their lines are refused;
when the port accepts commands (accepts_commands), their connections are closed at once.

Nothing a client does may cost the loop a deadline, nor another client its place:

- a client that does not read (SILENT_S with bytes waiting for it and none of them read, see
  unread.py), and sends no command either, is dropped, counted in ``dropped_clients``;
- at most ``max_clients`` (16 unless the URL says otherwise) are connected at a time; a
  newcomer to a full port takes the place of the client that has gone longest without reading
  (REPLACE_S at least), or else is accepted and closed at once, counted in ``refused``;
- close to the process's file-descriptor limit, a newcomer takes the place of the client that
  has gone longest without reading on any TCP port, or else one from the port that holds the
  most clients; on that port itself it is refused (and its accepting pauses for
  ACCEPT_PAUSE_S, as it does when accept itself fails for want of descriptors): one port's
  clients cannot keep every other port from accepting;
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
import weakref

import structlog

from hild.log import RateLimited
from hild.transport.base import (
    CLOSE_FLUSH_S,
    Inbound,
    LineQueue,
    LineSplitter,
    Port,
    cancel_and_wait,
    run_writer,
)
from hild.transport.budget import InputBudget
from hild.transport.judging import PROBE_S, Verdict
from hild.transport.streams import StreamGuard
from hild.transport.unread import PeerQueues, send_queue_bytes
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

# A client that reads: a backseat or a plotter reads what arrives within a fraction of a
# second (a backseat's loop runs at 10 Hz, NMEA's slowest regular sentences come at 1 Hz).
# One that has read nothing for SILENT_S while bytes were waiting for it does not read:
# five times the slowest sentence period, ten times the command watchdog's default lease (a
# backseat stalled that long has lost the boat already). Dropping it frees its place and its
# descriptor; a client that reads at least once every SILENT_S, however little, stays.
SILENT_S = 5.0
# A newcomer to a full port may take the place of a client that has read nothing for this
# long with bytes waiting (twenty read periods of a 10 Hz backseat, two of a plotter that
# reads once a second): a client that reads is never the one replaced, however many
# newcomers knock.
REPLACE_S = 2.0
CHECK_S = 1.0  # how often a port looks at how far behind each client is
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
        self.guard: StreamGuard | None = None
        if allowed and port.mode != "send":  # a client that sends commands is alive
            self.guard = StreamGuard(port.spec.url, lambda: port.screen, self.peer)
            self.splitter = LineSplitter(port.spec.url, self._deliver, port.stats, guard=self.guard)
        self._slowed: asyncio.TimerHandle | None = None  # a throttled client's next read
        self.gone = asyncio.get_running_loop().create_future()
        self.half_closed = False
        self._buffer = bytearray(READ_SIZE)
        self._view = memoryview(self._buffer)
        self._start = self._end = 0  # what is pending in _buffer
        self._t_rx = 0.0
        self._write_paused = False
        self._drained: asyncio.Future[None] | None = None
        self.local: tuple | None = None  # our end of the connection
        self.written = 0  # bytes handed to the transport
        self.read_mark = 0  # bytes the client had read when last looked at
        # when it was last seen reading (or had read everything), or sent a command a
        # device took: a controller that never reads its feedback is not a silent client
        self.last_alive = time.monotonic()
        self.joined = self.last_alive
        self.drop_reason: str | None = None  # set when the port drops it

    # -- the connection --

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        t = time.perf_counter()
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.port._closed:
            transport.abort()
            return
        _limit_buffering(transport)
        with contextlib.suppress(OSError):
            self.local = transport.get_extra_info("sockname")
        self.joined = self.last_alive = time.monotonic()
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
        if self._slowed is not None:
            self._slowed.cancel()
            self._slowed = None
        self._start = self._end = 0
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self.task is not None:
            self.task.cancel()
        if self.drop_reason is not None:
            reason = self.drop_reason
        elif exc is not None:
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

    def _deliver(self, item: Inbound) -> Verdict | None:
        verdict = self.port._deliver(item)
        if verdict == Verdict.APPLIED and self.port.accepts_commands:
            self.last_alive = max(self.last_alive, item.t_rx)
        return verdict

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        self._start, self._end = 0, nbytes
        self._t_rx = time.monotonic()
        self.port._budget.run(self)
        if self._slowed is None and self.guard is not None and self.guard.slowed(self._t_rx):
            self._read_later()  # throttled, delivering nothing: one read every PROBE_S

    def _read_later(self) -> None:
        """Stop reading for PROBE_S (the kernel and the client hold what it sends)."""
        if self.transport is None or self.transport.is_closing():
            return
        self.transport.pause_reading()
        loop = asyncio.get_running_loop()
        self._slowed = loop.call_later(PROBE_S, self._read_again)

    def _read_again(self) -> None:
        self._slowed = None
        if self.port._budget.waits(self):
            return  # its turn with the budget comes first; input_resume reads on
        self.input_resume()

    def input_slice(self) -> bool:
        start = self._start
        end = min(start + self.splitter.slice_bytes(), self._end)
        if start >= end:
            return False
        self._start = end
        self.splitter.feed(bytes(self._view[start:end]), self.address, self._t_rx)
        return self._start < self._end

    def input_pause(self) -> None:
        if self.transport is not None:
            self.transport.pause_reading()

    def input_resume(self) -> None:
        if self._slowed is not None:
            return  # a throttled client's next read is due later
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
        self.written += len(line)
        if self._write_paused:
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained
        return True

    # -- how far behind it is --

    def stalled_s(self, now: float, queues: PeerQueues) -> float:
        """Seconds since the client last read a byte while some were waiting for it (0 when it
        has read everything written to it) or sent a command; see unread.py for what can be
        known of what it has read."""
        transport = self.transport
        if transport is None or transport.is_closing() or self.drop_reason is not None:
            return 0.0
        pending = transport.get_write_buffer_size()
        sock = transport.get_extra_info("socket")
        if sock is not None:
            pending += send_queue_bytes(sock)
        if self.address is not None and self.local is not None:
            pending += queues.unread(self.address, self.local) or 0
        read = self.written - pending
        if pending <= 0 or read > self.read_mark:
            self.read_mark = max(read, self.read_mark)
            self.last_alive = now
        return now - self.last_alive


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
        self._log_dropped = RateLimited(log, "port.client_dropped")
        self._queues = PeerQueues()
        self._watch: asyncio.TimerHandle | None = None
        _SERVERS.add(self)

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
        self._watch = loop.call_later(CHECK_S, self._check_clients)

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
        if self._closed:
            conn.close()
        elif not allowed and self.accepts_commands:
            conn.close()
            self._refuse(address, "connection")
        elif conn.fileno() >= self._fd_ceiling and not self._make_room():
            conn.close()
            self._refuse(address, "connection (file descriptors running out)")
            acceptor.back_off(ACCEPT_PAUSE_S)
            return False
        elif self._admitted >= self.max_clients and not self._replace_stalled():
            conn.close()
            self._refuse(address, f"connection beyond max_clients={self.max_clients}")
        else:
            self._admit(conn, address, allowed)
        return True

    def _replace_stalled(self) -> bool:
        """Drop the client that has gone longest without reading (REPLACE_S at least) to make
        room for a newcomer; False when every client reads."""
        victim = _most_stalled([self])
        if victim is None:
            return False
        self._drop(victim, f"replaced by a newcomer after reading nothing for {REPLACE_S:g} s")
        return True

    def _make_room(self) -> bool:
        """Descriptors are running out: free one for this port's newcomer, from the client
        that has gone longest without reading on any TCP port, else from the port holding the
        most clients if that is another one; False when this port holds the most itself."""
        servers = [s for s in _SERVERS if s._budget is self._budget and not s._closed]
        victim = _most_stalled(servers)
        if victim is not None:
            victim.port._drop(victim, "replaced: file descriptors ran short")
            return True
        largest = max(servers, key=lambda s: s._admitted, default=self)
        if largest is self or largest._admitted <= self._admitted + 1:
            return False
        newest = max(
            (c for c in largest._clients if c.drop_reason is None),
            key=lambda c: c.joined,
            default=None,
        )
        if newest is None:
            return False
        largest._drop(newest, f"file descriptors ran short for {self.spec.url}")
        return True

    def _drop(self, client: _Client, reason: str) -> None:
        """Close a client's connection at once, counted and logged (rate-limited)."""
        if client.drop_reason is not None or client.transport is None:
            return
        client.drop_reason = reason
        self.stats.dropped_clients += 1
        self._log_dropped(
            url=self.spec.url,
            peer=client.peer,
            reason=reason,
            dropped_clients=self.stats.dropped_clients,
        )
        client.transport.abort()

    def _check_clients(self) -> None:
        """Drop the clients that have read nothing for SILENT_S; every CHECK_S."""
        self._watch = None
        if self._closed:
            return
        t = time.perf_counter()
        now = time.monotonic()
        for client in list(self._clients):
            if client.stalled_s(now, self._queues) >= SILENT_S:
                self._drop(client, f"read nothing for {SILENT_S:g} s")
        self._budget.charge(time.perf_counter() - t)
        self._watch = asyncio.get_running_loop().call_later(CHECK_S, self._check_clients)

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
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        self._queues.close()
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


# Every TCP server port of the process: descriptors are shared, so is the guard over them.
_SERVERS: weakref.WeakSet[TcpServerPort] = weakref.WeakSet()


def _most_stalled(servers: list[TcpServerPort]) -> _Client | None:
    """The client of these ports that has gone longest without reading, REPLACE_S at least.

    Chosen by what the last looks (every CHECK_S) saw, then looked at once more: a newcomer
    costs one question to the kernel, not one per client.
    """
    now = time.monotonic()
    candidate: _Client | None = None
    for server in servers:
        for client in server._clients:
            if client.drop_reason is None and (
                candidate is None or client.last_alive < candidate.last_alive
            ):
                candidate = client
    if candidate is None or now - candidate.last_alive < REPLACE_S:
        return None  # last_alive only moves forward: none can have stalled that long
    if candidate.stalled_s(now, candidate.port._queues) < REPLACE_S:
        return None  # it has read since it was last looked at
    return candidate


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
