"""UDP: one datagram per line to a unicast, broadcast or multicast address; optional receiving."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time

import structlog

from hild.transport.base import LineSplitter, Port, cancel_and_wait, run_writer
from hild.transport.url import PortSpec, format_host_port, split_host_port

log = structlog.get_logger("hild.transport")

MAX_BUFFERED_BYTES = 64 * 1024
ERROR_LOG_INTERVAL_S = 10.0
BROADCAST_ADDRESS = "255.255.255.255"


class UdpPort(Port):
    """Sends each line as a datagram; datagrams arriving on the socket (see ?bind=) are read."""

    def __init__(self, spec: PortSpec, queue_lines: int = 64):
        super().__init__(spec, queue_lines)
        if spec.host is None or spec.port is None:
            raise ValueError(f"{spec.url}: a udp port needs a host and a port")
        self.host: str = spec.host
        self.port: int = spec.port
        self.broadcast = spec.option("broadcast") == "1" or spec.host == BROADCAST_ADDRESS
        self.multicast = _is_multicast(spec.host)
        self.ttl = int(spec.option("ttl", "1") or 1)
        self.bind: str | None = spec.option("bind")
        self._dest: tuple | None = None
        self._transport: asyncio.DatagramTransport | None = None
        self._writer: asyncio.Task | None = None
        self._lines: LineSplitter = self._new_splitter()
        self._last_error_log = -ERROR_LOG_INTERVAL_S
        self._unlogged_errors = 0

    @property
    def local_address(self) -> tuple | None:
        """The socket's own address (where datagrams to this port are received), once started."""
        return None if self._transport is None else self._transport.get_extra_info("sockname")

    def describe(self) -> str:
        """Name the destination, its kind, and the receiving address if any."""
        text = f"udp {format_host_port(self.host, self.port)}"
        if self.broadcast:
            text += " (broadcast)"
        elif self.multicast:
            text += f" (multicast, ttl {self.ttl})"
        if self.bind is not None:
            text += f", receiving on {self.bind}"
        return text

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_DGRAM)
        family, _, _, _, dest = infos[0]
        sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            sock.setblocking(False)
            self._configure(sock, family)
            if self.bind is not None:
                bind_host, bind_port = split_host_port(self.bind)
                bind_infos = await loop.getaddrinfo(
                    bind_host, int(bind_port or 0), family=family, type=socket.SOCK_DGRAM
                )
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(bind_infos[0][4])
            self._transport, _ = await loop.create_datagram_endpoint(
                lambda: _Protocol(self), sock=sock
            )
        except BaseException:
            sock.close()
            raise
        self._dest = dest
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

    async def _write(self, line: bytes) -> bool:
        transport = self._transport
        if transport is None or transport.is_closing():
            self.stats.dropped_lines += 1
            return False
        if transport.get_write_buffer_size() > MAX_BUFFERED_BYTES:
            self.stats.dropped_lines += 1
            return False
        errors = self.stats.errors
        transport.sendto(line, self._dest)  # failures arrive in error_received, synchronously
        return self.stats.errors == errors

    def _on_error(self, error: Exception) -> None:
        """Count a send/receive error and log it, at most once per 10 s."""
        self.stats.errors += 1
        now = time.monotonic()
        if now - self._last_error_log < ERROR_LOG_INTERVAL_S:
            self._unlogged_errors += 1
            return
        log.warning(
            "port.udp_error",
            url=self.spec.url,
            error=str(error),
            errors=self.stats.errors,
            suppressed=self._unlogged_errors,
        )
        self._last_error_log = now
        self._unlogged_errors = 0

    def _on_datagram(self, data: bytes) -> None:
        """Split one received datagram into lines for on_line."""
        self._lines.feed_datagram(data)

    async def _release(self) -> None:
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
        self.port._on_datagram(data)

    def error_received(self, exc: Exception) -> None:
        self.port._on_error(exc)


def _is_multicast(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_multicast
    except ValueError:
        return False
