"""Where the pilot reads sensor sentences and writes commands: UDP, a TCP client, serial.

- ``udp://HOST:PORT`` for the sensors: bind there and listen (the daemon sends
  its sentences to that address); for the commands: send datagrams there from
  an ephemeral socket (whatever comes back is read and dropped).
- ``tcp://HOST:PORT``: connect as a client; reconnect after a loss. The same
  URL for sensors and commands shares one connection (the Heron frontseat).
- ``serial:///dev/ttyUSB0?baud=4800``, ``pty://NAME`` (a link under /tmp/hild)
  or a plain device path (``/tmp/hild/gps``): opened with pyserial; reopened
  after a loss.

Nothing here blocks for long: sockets and devices are non-blocking, a link
that fails is closed and reopened by ``ensure_open`` at most once a second.
"""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass

import serial

from hild.transport.url import PortUrlError, parse_port_url

LOOPBACK = "127.0.0.1"
DEFAULT_BAUD = 4800
MAX_LINE = 1024  # characters without an end of line before the buffer is dropped
RETRY_S = 1.0


class LinkError(ValueError):
    """A sensor or command URL the pilot cannot use."""


@dataclass(frozen=True)
class Endpoint:
    url: str
    kind: str  # "udp", "tcp" or "serial"
    host: str | None = None
    port: int | None = None
    path: str | None = None
    baud: int = DEFAULT_BAUD


def parse_endpoint(url: str) -> Endpoint:
    """A URL (or a plain device path) -> an Endpoint; LinkError with the reason if unusable."""
    text = url.strip()
    if text and "://" not in text:
        return Endpoint(url, "serial", path=text)
    try:
        spec = parse_port_url(text)
    except PortUrlError as e:
        raise LinkError(str(e)) from None
    if spec.scheme in ("serial", "pty"):
        return Endpoint(url, "serial", path=spec.path, baud=spec.baud or DEFAULT_BAUD)
    if spec.options:
        names = ", ".join(k for k, _ in spec.options)
        raise LinkError(f"{url!r}: hild pilot takes no options ({names}) on {spec.scheme} URLs")
    if spec.scheme not in ("udp", "tcp"):
        raise LinkError(f"{url!r}: expected udp://HOST:PORT, tcp://HOST:PORT or a serial device")
    if spec.port == 0:
        raise LinkError(f"{url!r}: the pilot needs a port number other than 0")
    return Endpoint(url, spec.scheme, host=spec.host or LOOPBACK, port=spec.port)


class LineBuffer:
    """Bytes -> complete lines (without the end of line); overlong junk is dropped and counted."""

    def __init__(self) -> None:
        self._buffer = b""
        self.overlong = 0

    def feed(self, data: bytes) -> list[str]:
        self._buffer += data
        *lines, self._buffer = self._buffer.replace(b"\r", b"\n").split(b"\n")
        if len(self._buffer) > MAX_LINE:
            self._buffer = b""
            self.overlong += 1
        return [line.decode("ascii", "replace") for line in lines if line]


class Link:
    """One endpoint, opened lazily and reopened after failures."""

    def __init__(self, endpoint: Endpoint, listen: bool):
        self.endpoint = endpoint
        self.listen = listen  # UDP: bind and receive (sensors) or send (commands)
        self.lines = LineBuffer()
        self.error: str | None = None  # why the last open or I/O failed
        self.sent = 0
        self.send_errors = 0
        self._sock: socket.socket | None = None
        self._serial: serial.Serial | None = None
        self._next_try = 0.0

    @property
    def is_open(self) -> bool:
        return self._sock is not None or self._serial is not None

    def describe(self) -> str:
        e = self.endpoint
        if e.kind == "serial":
            return f"{e.path} at {e.baud} baud"
        verb = "listening on" if e.kind == "udp" and self.listen else "to"
        return f"{e.kind} {verb} {e.host}:{e.port}"

    def ensure_open(self, now: float) -> bool:
        """Open the endpoint if it is closed and its retry time has come; True if it is open."""
        if self.is_open or now < self._next_try:
            return self.is_open
        self._next_try = now + RETRY_S
        try:
            self._open()
            self.error = None
        except (OSError, serial.SerialException, ValueError) as e:
            self.close()
            self.error = str(e)
        return self.is_open

    def _open(self) -> None:
        e = self.endpoint
        if e.kind == "serial":
            self._serial = serial.Serial(e.path, e.baud, timeout=0, write_timeout=0)
            return
        assert e.host is not None and e.port is not None
        family = socket.AF_INET6 if ":" in e.host else socket.AF_INET
        if e.kind == "udp":
            sock = socket.socket(family, socket.SOCK_DGRAM)
            try:
                if self.listen:
                    sock.bind((e.host, e.port))  # no SO_REUSEADDR: a taken port is an error
                else:
                    sock.connect((e.host, e.port))
            except OSError:
                sock.close()
                raise
        else:
            sock = socket.create_connection((e.host, e.port), timeout=1.0)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        self._sock = sock

    def fileno(self) -> int | None:
        if self._sock is not None:
            return self._sock.fileno()
        if self._serial is not None:
            return self._serial.fileno()
        return None

    def read_lines(self) -> list[str]:
        """Every complete line that is waiting (datagrams each stand alone)."""
        lines: list[str] = []
        try:
            if self._serial is not None:
                data = self._serial.read(4096)
                if data:
                    lines += self.lines.feed(data)
            elif self._sock is not None and self.endpoint.kind == "udp":
                while True:
                    try:
                        datagram = self._sock.recv(65536)
                    except BlockingIOError:
                        break
                    except ConnectionRefusedError:
                        continue  # ICMP port unreachable for an earlier datagram we sent
                    lines += LineBuffer().feed(datagram + b"\n")
            elif self._sock is not None:
                try:
                    data = self._sock.recv(65536)
                except BlockingIOError:
                    return lines
                if not data:
                    raise ConnectionResetError("the peer closed the connection")
                lines += self.lines.feed(data)
        except (OSError, serial.SerialException) as e:
            self._fail(e)
        return lines

    def send(self, data: bytes) -> None:
        """Best effort: a full buffer or a missing peer drops the sentence and counts it."""
        try:
            if self._serial is not None:
                self._serial.write(data)
            elif self._sock is not None:
                self._sock.send(data)
            else:
                self.send_errors += 1
                return
            self.sent += 1
        except (BlockingIOError, ConnectionRefusedError, serial.SerialTimeoutException):
            self.send_errors += 1
        except (OSError, serial.SerialException) as e:
            self.send_errors += 1
            self._fail(e)

    def _fail(self, error: Exception) -> None:
        self.error = str(error)
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None
        if self._serial is not None:
            with contextlib.suppress(OSError, serial.SerialException):
                self._serial.close()
            self._serial = None
