"""UDP: one datagram per line to a unicast, broadcast or multicast address, with optional
receiving (?bind=); or, with ?listen=1, a port bound to its address that replies to its senders.

A port receives only where its URL says: on ?bind=HOST:PORT or, with ?listen=1, on its own
address. A port with neither only sends: its socket is bound to loopback when the destination
is (so nothing from outside this machine reaches it) and whatever arrives on it anyway is
dropped and counted in ``refused``. Bound addresses are never shared (no SO_REUSEADDR, no
SO_REUSEPORT): a port another socket already holds fails at start, naming the address.
Received datagrams are worked through under the process-wide input budget (see tcp.py), in
turn by sender (senders.py), a sender whose lines are applied first: a sender that floods
the port, or sends nothing but malformed lines, is throttled and leaves the others their
turn. The socket is drained as fast as datagrams arrive
(up to DRAIN_PER_WINDOW a window, DRAIN_BATCH per wake-up, into a receive buffer of
RECEIVE_BUFFER_BYTES), so the kernel does not drop them for want of room: a datagram the
kernel drops is lost whoever sent it, one the port discards is the flooder's.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import socket
import time

import structlog

from hild.log import RateLimited
from hild.transport.base import (
    Inbound,
    LineSplitter,
    Port,
    cancel_and_wait,
    run_writer,
)
from hild.transport.budget import SLICE_BYTES, WINDOW_S, InputBudget
from hild.transport.judging import THROTTLE_AFTER
from hild.transport.senders import Sender, SenderTable
from hild.transport.url import (
    BROADCAST_ADDRESS,
    PortSpec,
    format_host_port,
    is_multicast,
    split_host_port,
)

log = structlog.get_logger("hild.transport")

MAX_BUFFERED_BYTES = 64 * 1024
MAX_PEERS = 8  # a listening port replies to at most this many senders, the most recent ones
PEER_TIMEOUT_S = 30.0  # and forgets a sender it has not heard from for this long
# Reading the socket: a datagram costs ~2 us to read and file under its sender, ~5 us in all
# in the daemon with the loop's wake-ups (bench_flood.py: a quarter of a core for a flood of
# 50,000 a second). DRAIN_PER_WINDOW bounds what reading may take: 100,000 datagrams a second,
# about half a core; beyond it the kernel's buffer holds what it can and drops the rest.
DRAIN_BATCH = 64  # datagrams read per wake-up of the loop at most
DRAIN_PER_WINDOW = 1000  # datagrams read per WINDOW_S at most
MAX_DATAGRAM = 65536
# What the kernel may hold for a receiving socket (capped by net.core.rmem_max, 208 kB on
# many systems; the kernel doubles it for its bookkeeping): 4 MB holds ~10,000 small
# datagrams, a fifth of a second of a 50,000/s flood while the loop is busy elsewhere.
RECEIVE_BUFFER_BYTES = 4 << 20


class UdpPort(Port):
    """Sends each line as a datagram; datagrams arriving on the socket (see ?bind=) are read.

    With ?listen=1 the socket is bound to HOST:PORT itself and each line goes to every sender
    heard from (the sources of accepted datagrams) within PEER_TIMEOUT_S, most recent first,
    at most MAX_PEERS of them. Lines sent before anyone was heard count in unsent_lines.
    sent_lines and sent_bytes count each line once, however many peers it went to.
    """

    scheme = "udp"

    def __init__(self, spec: PortSpec, queue_lines: int = 64, default_baud: int | None = None):
        super().__init__(spec, queue_lines)  # a network port has no baud rate
        if spec.host is None or spec.port is None:
            raise ValueError(f"{spec.url}: a udp port needs a host and a port")
        self.host: str = spec.host
        self.port: int = spec.port
        self.broadcast = spec.option("broadcast") == "1" or spec.host == BROADCAST_ADDRESS
        self.multicast = is_multicast(spec.host)
        self.ttl = int(spec.option("ttl", "1") or 1)
        self.bind: str | None = spec.option("bind")
        self.listen = spec.option("listen") == "1"
        self.receives = self.listen or self.bind is not None  # else input is refused
        # listen=1: (host, port) -> (socket address, time.monotonic() last heard); oldest first
        self._peers: dict[tuple[str, int], tuple[tuple, float]] = {}
        self._dest: tuple | None = None
        self._transport: asyncio.DatagramTransport | None = None
        self._writer: asyncio.Task | None = None
        self._lines: LineSplitter = self._new_splitter()
        if self.mode != "send":  # lines go to on_line, whose verdict throttles their sender
            self._lines = LineSplitter(self.spec.url, self._deliver_judged, self.stats)
        self._log_error = RateLimited(log, "port.udp_error")
        self._log_throttled = RateLimited(log, "port.sender_throttled")
        self._budget: InputBudget | None = None
        self._sock: socket.socket | None = None
        # received datagrams waiting for the input budget, by sender
        self._senders = SenderTable(self.allow.allows, self.stats)
        # the datagram being worked through, a slice at a time, and its sender
        self._current: bytes = b""
        self._offset = 0
        self._sender: Sender | None = None
        self._peer: tuple[str, int] | None = None
        self._t_rx = 0.0
        self._drain_window_end = -float("inf")
        self._drain_count = 0  # datagrams read in the current drain window
        self._drain_resume: asyncio.TimerHandle | None = None

    @property
    def local_address(self) -> tuple | None:
        """The socket's own address (where datagrams to this port are received), once started."""
        return None if self._transport is None else self._transport.get_extra_info("sockname")

    @property
    def peers(self) -> list[tuple[str, int]]:
        """The senders a listening port replies to now, most recent first."""
        self._forget_stale_peers()
        return list(reversed(self._peers))

    def describe(self) -> str:
        """Name the destination, its kind, and the receiving address if any."""
        if self.listen:
            local = self.local_address
            port = self.port if local is None else local[1]
            replies = "" if self.mode == "receive" else "; replies to senders"
            return self._with_direction(
                f"udp {format_host_port(self.host, port)} (listening{replies})"
            )
        text = f"udp {format_host_port(self.host, self.port)}"
        if self.broadcast:
            text += " (broadcast)"
        elif self.multicast:
            text += f" (multicast, ttl {self.ttl})"
        if self.bind is not None:
            text += f", receiving on {self.bind}"
        return self._with_direction(text)

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        self._budget = InputBudget.of(loop)
        self._senders.screen = self.screen
        infos = await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_DGRAM)
        family, _, _, _, dest = infos[0]
        sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            sock.setblocking(False)
            self._configure(sock, family)
            if self.receives:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER_BYTES)
            # No SO_REUSEADDR or SO_REUSEPORT anywhere: an address this port receives on is
            # its own, and one that another socket holds is an error at start.
            if self.listen:
                _bind(sock, dest, "receive on")
            elif self.bind is not None:
                bind_host, bind_port = split_host_port(self.bind)
                bind_infos = await loop.getaddrinfo(
                    bind_host, int(bind_port or 0), family=family, type=socket.SOCK_DGRAM
                )
                _bind(sock, bind_infos[0][4], "receive on")
            elif _is_loopback(str(dest[0])):
                # send-only, to this machine: send from loopback too, so the socket is not
                # reachable from other machines (unbound, it would be 0.0.0.0 on the first send)
                _bind(sock, ("::1" if family == socket.AF_INET6 else "127.0.0.1", 0), "send from")
            self._transport, _ = await loop.create_datagram_endpoint(
                lambda: _Protocol(self), sock=sock
            )
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._dest = None if self.listen else dest
        self.stats.connected = True
        self._writer = asyncio.create_task(
            run_writer(self._queue, self._write, self.stats), name=f"hild-udp {self.spec.url}"
        )

    def _configure(self, sock: socket.socket, family: int) -> None:
        if self.broadcast:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        if self.multicast and family == socket.AF_INET:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, self.ttl)
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        elif self.multicast and family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, self.ttl)
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 1)

    def _enqueue(self, line: bytes) -> None:
        if self.listen and not self.peers:
            self.stats.unsent_lines += 1
            return
        super()._enqueue(line)

    async def _write(self, line: bytes) -> bool:
        transport = self._transport
        if transport is None or transport.is_closing():
            self.stats.dropped_lines += 1
            return False
        if transport.get_write_buffer_size() > MAX_BUFFERED_BYTES:  # type: ignore[attr-defined]
            self.stats.dropped_lines += 1
            return False
        if self.listen:
            destinations = [self._peers[peer][0] for peer in self.peers]
            if not destinations:  # every sender went quiet since the line was queued
                self.stats.unsent_lines += 1
                return False
        else:
            assert self._dest is not None  # resolved in _open
            destinations = [self._dest]
        errors = self.stats.errors
        for dest in destinations:
            transport.sendto(line, dest)  # failures arrive in error_received, synchronously
        return self.stats.errors == errors

    def _forget_stale_peers(self) -> None:
        """Drop the senders not heard from for PEER_TIMEOUT_S (the oldest come first)."""
        cutoff = time.monotonic() - PEER_TIMEOUT_S
        while self._peers:
            oldest = next(iter(self._peers))
            if self._peers[oldest][1] >= cutoff:
                return
            del self._peers[oldest]

    def _remember_peer(self, peer: tuple[str, int], addr: tuple, now: float) -> None:
        """Make peer the most recent sender, forgetting the least recent beyond MAX_PEERS."""
        self._peers.pop(peer, None)
        self._peers[peer] = (addr, now)
        while len(self._peers) > MAX_PEERS:
            del self._peers[next(iter(self._peers))]

    def _on_error(self, error: Exception) -> None:
        """Count a send/receive error and log it, at most once per 10 s."""
        self.stats.errors += 1
        self._log_error(url=self.spec.url, error=str(error), errors=self.stats.errors)

    def _on_datagram(self, data: bytes, addr: tuple) -> None:
        """One datagram arrived: take it in, and what else the socket holds (DRAIN_BATCH)."""
        t_rx = time.monotonic()
        waiting = self._take_in(data, addr, t_rx)
        sock, n = self._sock, 1
        while sock is not None and n < DRAIN_BATCH:
            try:
                data, addr = sock.recvfrom(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:
                self._on_error(e)
                break
            n += 1
            waiting = self._take_in(data, addr, t_rx) or waiting
        self._count_drained(n)
        if waiting and self._budget is not None:
            self._budget.run(self)

    def _take_in(self, data: bytes, addr: tuple, t_rx: float) -> bool:
        """File one datagram under its sender, or refuse it; True when it waits to be read."""
        if not self.receives:
            self._refuse((str(addr[0]), int(addr[1])), "datagram to a port that only sends")
            return False
        sender = self._senders.put(data, addr, t_rx)
        if sender is None:
            return False
        if not sender.allowed:
            self._refuse(sender.peer, "datagram")
            return False
        return True

    def _count_drained(self, n: int) -> None:
        """Reading takes at most DRAIN_PER_WINDOW datagrams a window; then it pauses."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        if now >= self._drain_window_end:
            self._drain_window_end, self._drain_count = now + WINDOW_S, 0
        self._drain_count += n
        transport = self._transport
        if self._drain_count < DRAIN_PER_WINDOW or transport is None or transport.is_closing():
            return
        if self._drain_resume is None:
            transport.pause_reading()  # type: ignore[attr-defined]
            self._drain_resume = loop.call_at(self._drain_window_end, self._resume_draining)

    def _resume_draining(self) -> None:
        self._drain_resume = None
        if self._transport is not None and not self._transport.is_closing():
            self._transport.resume_reading()  # type: ignore[attr-defined]

    def input_slice(self) -> bool:
        """Work through a slice of the received datagrams, senders in turn; True while some
        are left."""
        sender = self._sender
        if self._offset and sender is not None and sender.throttled:
            self._lines.reset()  # its lines became of no use: the rest is not read either
            self._current, self._offset = b"", 0
        if self._offset >= len(self._current):
            taken = self._senders.take()
            if taken is None:
                return False
            self._begin(*taken)
        start, end = self._offset, self._offset + SLICE_BYTES
        data = self._current
        chunk = data if start == 0 and end >= len(data) else data[start:end]
        self._offset = end
        if end >= len(data):  # the datagram's last slice: its last line needs no end
            self._current, self._offset = b"", 0
            self._lines.feed_datagram(chunk, self._peer, self._t_rx)
            return self._senders.pending
        self._lines.feed(chunk, self._peer, self._t_rx)
        return True

    def _begin(self, sender: Sender, data: bytes, t_rx: float) -> None:
        """Start on a sender's datagram; a listening port notes the sender as a peer."""
        peer = sender.peer
        if self.listen:
            self._remember_peer(peer, sender.address, t_rx)
        self._sender = sender
        self._current, self._offset, self._peer, self._t_rx = data, 0, peer, t_rx

    def _deliver_judged(self, item: Inbound) -> None:
        """Deliver a line; its verdict goes to its sender's account (senders.py)."""
        verdict = self._deliver(item)
        sender = self._sender
        if verdict is None or sender is None:
            return
        if self._senders.judge(sender, verdict, item.t_rx):
            self._log_throttled(
                url=self.spec.url,
                peer=format_host_port(*sender.peer),
                reason=f"{THROTTLE_AFTER} malformed lines in a row",
                throttled=self.stats.throttled,
            )

    # Reading goes on while the budget defers the datagrams' lines: the socket must be drained
    # (bounded by DRAIN_PER_WINDOW) for the kernel not to drop a controller's datagram among a
    # flood's; what waits is bounded by the senders' inboxes.
    def input_pause(self) -> None:
        pass

    def input_resume(self) -> None:
        pass

    async def _release(self) -> None:
        if self._budget is not None:
            self._budget.forget(self)
        self._senders.clear()
        self._current, self._offset, self._sender, self._sock = b"", 0, None, None
        if self._drain_resume is not None:
            self._drain_resume.cancel()
            self._drain_resume = None
        await cancel_and_wait(self._writer)
        if self._transport is not None:
            self._transport.close()
            await asyncio.sleep(0)  # let the transport finish closing its socket
        self.stats.connected = False


class _Protocol(asyncio.DatagramProtocol):
    """Forwards datagrams and errors of the socket to its UdpPort."""

    def __init__(self, port: UdpPort):
        self.port = port

    def datagram_received(self, data: bytes, addr: tuple) -> None:
        self.port._on_datagram(data, addr)

    def error_received(self, exc: Exception) -> None:
        self.port._on_error(exc)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.partition("%")[0]).is_loopback
    except ValueError:
        return False


def _bind(sock: socket.socket, address: tuple, what: str) -> None:
    """Bind, or raise an OSError that names the address (and who may hold it)."""
    try:
        sock.bind(address)
    except OSError as e:
        where = format_host_port(str(address[0]), int(address[1]))
        reason = (e.strerror or str(e)).lower()
        if e.errno == errno.EADDRINUSE:
            reason += " (another socket is bound to it)"
        raise OSError(e.errno, f"cannot {what} {where}: {reason}") from None
