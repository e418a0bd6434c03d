"""A minimal Foxglove WebSocket client for the tests: RFC 6455 over a socket (no library), and
the Foxglove WebSocket protocol's messages (github.com/foxglove/ws-protocol docs/spec.md):
JSON text frames from the server (serverInfo, advertise, advertiseServices, ...), binary
frames of an opcode byte then little-endian fields (messageData 0x01: subscription id u32,
log time u64, payload; serviceCallResponse 0x03: service id u32, call id u32, encoding length
u32, encoding, payload), and the client's subscribe (JSON) and serviceCallRequest (binary
0x02: service id u32, call id u32, encoding length u32, encoding, payload)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import struct
import time

PROTOCOLS = ("foxglove.sdk.v1", "foxglove.websocket.v1")


class FoxgloveClient:
    def __init__(self, host: str, port: int, protocols=PROTOCOLS, timeout: float = 10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {', '.join(protocols)}\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError(f"closed during the handshake: {head!r}")
            head += chunk
        self.response = head.decode("latin-1")
        assert self.response.startswith("HTTP/1.1 101"), self.response
        self.protocol = ""
        for line in self.response.split("\r\n"):
            name, _, value = line.partition(":")
            if name.strip().lower() == "sec-websocket-protocol":
                self.protocol = value.strip()
        self.buffer = b""

    # --- frames --------------------------------------------------------------------------------
    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def _frame(self) -> tuple[int, bool, bytes]:
        b0, b1 = self._read(2)
        length = b1 & 0x7F
        if length == 126:
            (length,) = struct.unpack(">H", self._read(2))
        elif length == 127:
            (length,) = struct.unpack(">Q", self._read(8))
        mask = self._read(4) if b1 & 0x80 else b""
        data = self._read(length)
        if mask:
            data = bytes(c ^ mask[i % 4] for i, c in enumerate(data))
        return b0 & 0x0F, bool(b0 & 0x80), data

    def receive(self) -> str | bytes:
        """The next text (str) or binary (bytes) message; answers pings."""
        parts: list[bytes] = []
        kind = 0
        while True:
            opcode, fin, data = self._frame()
            if opcode == 0x9:  # ping
                self._send(0xA, data)
                continue
            if opcode == 0xA:
                continue
            if opcode == 0x8:
                raise ConnectionError(f"closed by the server: {data!r}")
            if opcode in (0x1, 0x2):
                kind = opcode
            parts.append(data)
            if fin:
                message = b"".join(parts)
                return message.decode() if kind == 0x1 else message

    def _send(self, opcode: int, data: bytes) -> None:
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(c ^ mask[i % 4] for i, c in enumerate(data))
        self.sock.sendall(head + mask + masked)

    def send_json(self, message: dict) -> None:
        self._send(0x1, json.dumps(message).encode())

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._send(0x8, struct.pack(">H", 1000))
        self.sock.close()

    # --- the protocol --------------------------------------------------------------------------
    def subscribe(self, subscription: int, channel: int) -> None:
        self.send_json(
            {"op": "subscribe", "subscriptions": [{"id": subscription, "channelId": channel}]}
        )

    def call_service(self, service: int, call: int, payload: bytes, encoding="json") -> None:
        enc = encoding.encode()
        self._send(0x2, struct.pack("<BIII", 0x02, service, call, len(enc)) + enc + payload)

    def collect(self, seconds: float, until=None) -> list:
        """Messages for ``seconds`` (or until ``until(message)``): JSON objects for text,
        ("message", subscription, log_time, payload) and ("response", service, call, payload)
        for binary."""
        out: list = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                raw = self.receive()
            except TimeoutError:
                break
            message = parse(raw)
            out.append(message)
            if until is not None and until(message):
                break
        return out


def parse(raw: str | bytes):
    if isinstance(raw, str):
        return json.loads(raw)
    op = raw[0]
    if op == 0x01:
        subscription, log_time = struct.unpack_from("<IQ", raw, 1)
        return ("message", subscription, log_time, raw[13:])
    if op == 0x03:
        service, call, n = struct.unpack_from("<III", raw, 1)
        return ("response", service, call, raw[13 + n :])
    return ("binary", op, raw[1:])
