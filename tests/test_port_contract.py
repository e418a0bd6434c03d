"""One contract, every port type: what the daemon relies on from a port, checked against each
entry of hild.transport.PORT_TYPES with a real client on the other side (a pty pair for a
serial line, the pty link, a UDP socket, a TCP connection)."""

from __future__ import annotations

import asyncio
import os
import socket
import time
import tty
from pathlib import Path

import pytest

from hild.transport import PORT_TYPES, Inbound, open_port, parse_port_url
from hild.transport.url import CAN_SCHEMES
from tests.endpoints import free_tcp_port, free_udp_port

COMMAND = b"$RCTXT,01,01,02,from the controller*00"
SENTENCE = b"$GPTXT,01,01,02,from hild*00\r\n"


class SerialClient:
    """The far end of a serial line: the master of a pty pair whose slave is the 'device'."""

    def __init__(self):
        self.master, slave = os.openpty()
        tty.setraw(slave)
        self.url = f"serial://{os.ttyname(slave)}?baud=115200"
        self._slave = slave  # kept open so the line does not hang up before the port opens it

    async def connect(self, port) -> None:
        os.set_blocking(self.master, False)

    async def write(self, data: bytes) -> None:
        os.write(self.master, data)

    async def read_line(self) -> bytes:
        return await _read_fd_line(self.master)

    def close(self) -> None:
        os.close(self.master)
        os.close(self._slave)


class PtyClient:
    def __init__(self, tmp: Path):
        self.url = "pty://contract?pace=0"
        self.link = tmp / "contract"
        self.fd = -1

    async def connect(self, port) -> None:
        self.fd = os.open(self.link, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(self.fd)

    async def write(self, data: bytes) -> None:
        os.write(self.fd, data)

    async def read_line(self) -> bytes:
        return await _read_fd_line(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)


class UdpClient:
    def __init__(self):
        self.url = f"udp://127.0.0.1:{free_udp_port()}?listen=1"
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.target = None

    async def connect(self, port) -> None:
        self.target = (port.spec.host, port.spec.port)

    async def write(self, data: bytes) -> None:
        self.sock.sendto(data, self.target)

    async def read_line(self) -> bytes:
        return await asyncio.get_running_loop().sock_recv(self.sock, 4096)

    def close(self) -> None:
        self.sock.close()


class TcpClient:
    def __init__(self):
        self.url = f"tcp://127.0.0.1:{free_tcp_port()}"
        self.reader = self.writer = None

    async def connect(self, port) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", port.spec.port)
        await asyncio.sleep(0.05)  # accepted before the first line goes out

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_line(self) -> bytes:
        return await self.reader.readline()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def _read_fd_line(fd: int) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        try:
            data += os.read(fd, 4096)
        except BlockingIOError:
            await asyncio.sleep(0.005)
    return data


CLIENTS = {"serial": SerialClient, "pty": PtyClient, "udp": UdpClient, "tcp": TcpClient}
# The CAN ports carry NMEA 2000 frames, not lines: their contract is tests/test_n2k_can.py's.
LINE_PORT_TYPES = sorted(set(PORT_TYPES) - set(CAN_SCHEMES))


def test_every_port_type_has_a_contract_client():
    assert set(LINE_PORT_TYPES) == set(CLIENTS)


@pytest.mark.parametrize("scheme", LINE_PORT_TYPES)
def test_a_port_type_keeps_the_contract(tmp_path, scheme):
    client = CLIENTS[scheme](tmp_path) if scheme == "pty" else CLIENTS[scheme]()
    spec = parse_port_url(client.url, tmp_path)
    assert spec.scheme == scheme

    async def scenario() -> None:
        port = open_port(spec, default_baud=115200)
        assert type(port) is PORT_TYPES[scheme]
        received: list[Inbound] = []
        port.on_line = received.append
        await port.start()
        try:
            await client.connect(port)
            before = time.monotonic()
            await client.write(COMMAND + b"\r\n")
            for _ in range(200):
                if received:
                    break
                await asyncio.sleep(0.01)
            # a received line: without its terminator, with its port, receive time and sender
            assert [r.line for r in received] == [COMMAND]
            inbound = received[0]
            assert inbound.port == spec.url and before <= inbound.t_rx <= time.monotonic()
            if scheme in ("udp", "tcp"):
                assert inbound.peer is not None and inbound.peer[0] == "127.0.0.1"
            else:
                assert inbound.peer is None
            # a sent line reaches the client whole
            port.send(SENTENCE)
            assert await asyncio.wait_for(client.read_line(), 5.0) == SENTENCE
            assert port.stats.sent_lines == 1 and port.stats.received_lines == 1
            assert port.describe()
        finally:
            await port.close()
            client.close()
        # closing twice is harmless; a closed port counts what it is given and never raises
        await port.close()
        port.send(SENTENCE)
        assert port.stats.dropped_lines == 1
        with pytest.raises(RuntimeError):
            await port.start()

    asyncio.run(scenario())
