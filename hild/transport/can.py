"""NMEA 2000 devices on a CAN bus through python-can: ``socketcan://can0`` and
``canudp://GROUP:PORT``.

An N2K device's lines are YDRAW, one CAN frame a line (hild/n2k/lines.py). A CAN port reads
each line it is given back into its frame and puts the frame on the bus as a CAN 2.0B frame
with a 29-bit identifier; each frame it receives from the bus goes to ``on_line`` as the YDRAW
line a gateway would send the computer (``hh:mm:ss.ddd R IIIIIIII B0 ...``, the frame's UTC
time of day), so what reads a gateway's lines reads the bus's.

- ``socketcan://can0`` (``vcan0``, ``slcan0``, ...): python-can's ``socketcan`` interface on a
  Linux network interface. Its bit rate is the kernel's, set when the interface is brought up
  (``sudo ip link set can0 up type can bitrate 250000``: NMEA 2000's 250 kbit/s); a virtual
  one for testing takes ``sudo modprobe vcan; sudo ip link add dev vcan0 type vcan; sudo ip
  link set up vcan0``. An interface that is missing, down or not a CAN interface is named at
  ``hild check`` (a warning) and when the run opens the port (an OSError).
- ``canudp://GROUP:PORT``: python-can's ``udp_multicast`` interface, CAN frames as UDP
  datagrams to a multicast group (python-can's default ``239.74.163.2:43113``), one bus for
  every process on it, for machines without SocketCAN and for tests. ``?ttl=N`` is the
  datagrams' hop limit (python-can's 1: the local network; 0: this machine). A member of the
  group hears its own datagrams: the port marks its frames (the message's ``channel``) and
  leaves its own out of what it receives.

Neither direction blocks the loop. The writer task sends each frame without waiting
(``send(timeout=0)``); a frame the transmit queue has no room for is tried again for
TX_PATIENCE_S, the writer task waiting (not the tick), then dropped and counted in
``dropped_lines`` (a bus no node acknowledges, a bus at capacity). The socket is read when
the loop sees it readable, at most DRAIN_PER_WINDOW frames a WINDOW_S (more than a 250 kbit/s
bus carries): beyond that reading pauses until the window ends, and a socket that fails to read
pauses it for a second (a datagram that is no frame is counted in ``errors``). Frames that are
not NMEA 2000's (an 11-bit identifier, a remote or error frame, CAN FD) are counted in
``ignored_lines``, as is everything a ``mode=send`` port receives.

python-can is imported when a port opens, not with hild.transport: `hild check` and the
benches without a CAN port never load it.

The frame-to-line conversion is hild/transport/ydraw.py's, the YDRAW the N2K nodes write
(hild/n2k/lines.py); it lives here in hild.transport because hild.n2k imports hild.transport
(the two folders must not import each other).
"""

from __future__ import annotations

import asyncio
import errno
import importlib.util
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import structlog

from hild.log import RateLimited
from hild.transport.base import Inbound, Port, cancel_and_wait, run_writer
from hild.transport.budget import WINDOW_S
from hild.transport.url import PortSpec, format_host_port
from hild.transport.ydraw import frame_line, parse_frame

log = structlog.get_logger("hild.transport")

BITRATE = 250_000  # NMEA 2000's: the kernel's setting of a SocketCAN interface, not hild's
# Frames read per WINDOW_S at most: 3,200 a second, above the ~2,250 short frames a second a
# 250 kbit/s bus can carry; each costs ~10-20 us to read and hand on (0.6 ms a window at most).
DRAIN_PER_WINDOW = 32
READ_ERROR_PAUSE_S = 1.0  # a socket that fails to read (its interface gone) is left this long
# A frame the transmit queue has no room for is tried again every TX_RETRY_S, for at most
# TX_PATIENCE_S, then dropped: a burst (the address claims and product information at once, 50
# frames, 30 ms of a 250 kbit/s bus) goes out whole through a queue of 10 (a CAN interface's
# txqueuelen), while a bus that takes nothing costs no more than dropped frames. The writer task
# waits, never the tick: the lines queue behind it (LineQueue: full, the oldest are dropped).
TX_RETRY_S = 0.002
TX_PATIENCE_S = 0.05
SYS_CLASS_NET = Path("/sys/class/net")
ARPHRD_CAN = 280  # a CAN interface's link type in /sys/class/net/NAME/type
IFF_UP = 0x1

VCAN_HOWTO = "sudo modprobe vcan; sudo ip link add dev vcan0 type vcan; sudo ip link set up vcan0"
PYTHON_CAN = "python-can>=4.4,<5"


# --- YDRAW lines and CAN frames (hild/transport/ydraw.py, the format's one home) -------------
def line_of_frame(identifier: int, data: bytes, utc: datetime) -> bytes:
    """The YDRAW line of a frame received from the bus, without its CR LF."""
    return frame_line(identifier, data, utc)[:-2]


# --- what can be known before opening ------------------------------------------------------
def python_can_missing() -> str | None:
    """Why no CAN port can open on this Python (python-can not installed), or None."""
    if importlib.util.find_spec("can") is None:
        return f"python-can is not installed: pip install '{PYTHON_CAN}'"
    return None


def interface_problem(name: str, root: Path = SYS_CLASS_NET) -> str | None:
    """Why the SocketCAN interface ``name`` cannot carry frames now (missing, not CAN, down),
    with what makes it; None when it can."""
    where = root / name
    if not where.exists():
        return (
            f"no network interface {name} on this machine (an adapter's appears when its "
            f"driver loads; a virtual one for testing: {VCAN_HOWTO.replace('vcan0', name)})"
        )
    try:
        kind = int((where / "type").read_text())
        flags = int((where / "flags").read_text(), 16)
    except (OSError, ValueError):
        return None  # (unreadable: opening it says what is wrong)
    if kind != ARPHRD_CAN:
        return f"{name} is not a CAN interface (its link type is {kind}, a CAN one's {ARPHRD_CAN})"
    if not flags & IFF_UP:
        return (
            f"{name} is down: sudo ip link set {name} up type can bitrate {BITRATE} "
            f"(a vcan: sudo ip link set up {name})"
        )
    return None


def can_warnings(spec: PortSpec) -> list[str]:
    """What would stop a CAN port from opening now, for `hild check`."""
    problems = [python_can_missing()]
    if spec.scheme == "socketcan" and spec.path is not None:
        problems.append(interface_problem(spec.path))
    return [p for p in problems if p is not None]


def _python_can() -> Any:
    """The ``can`` module; an OSError saying how to install it when it is missing."""
    try:
        import can
    except ImportError as e:
        raise OSError(
            errno.ENOENT, f"{python_can_missing() or e} (hild's CAN ports need it)"
        ) from None
    return can


# --- the ports -----------------------------------------------------------------------------
class CanPort(Port):
    """A CAN bus through a python-can interface: lines to frames, frames to lines.

    ``sent_lines`` counts the frames put on the bus, ``dropped_lines`` those the bus's
    transmit queue had no room for, ``errors`` lines that are not YDRAW frames (an NMEA 0183
    device on the port) and read errors, ``received_lines`` the frames heard.
    """

    interface: ClassVar[str]  # python-can's name of the interface
    tx_patience_s = TX_PATIENCE_S

    def __init__(self, spec: PortSpec, queue_lines: int = 64, default_baud: int | None = None):
        super().__init__(spec, queue_lines)  # (the bus's bit rate is no baud rate)
        self._can: Any = None  # the can module, once open
        self._bus: Any = None
        self._fd: int | None = None
        self._writer: asyncio.Task | None = None
        self._own: str | None = None  # the channel marking this port's own frames (canudp)
        self._log_error = RateLimited(log, "port.can_error")
        self._log_dropped = RateLimited(log, "port.can_tx_full")
        self._log_not_a_frame = RateLimited(log, "port.can_not_a_frame")
        self._window_end = -float("inf")
        self._window_count = 0
        self._resume: asyncio.TimerHandle | None = None

    def _check(self) -> None:
        """Raise an OSError for what can be known wrong before opening (SocketCAN: the
        interface)."""

    def _bus_options(self) -> dict[str, Any]:
        """python-can's options of the bus, beyond its interface."""
        raise NotImplementedError

    async def _open(self) -> None:
        self._check()
        can = self._can = _python_can()
        try:
            bus = can.Bus(interface=self.interface, **self._bus_options())
        except (can.CanError, OSError, ValueError) as e:
            cause = e.__cause__ if isinstance(e.__cause__, OSError) else e
            reason = getattr(cause, "strerror", None) or str(cause)
            if cause is not e:  # python-can's words, then the system's
                reason = f"{e}: {reason}"
            number = getattr(cause, "errno", None) or errno.ENODEV
            if number == errno.EAFNOSUPPORT:
                reason += " (no SocketCAN in this kernel: sudo modprobe can_raw)"
            raise OSError(number, f"cannot open {self.describe()}: {reason}") from e
        self._bus = bus
        loop = asyncio.get_running_loop()
        self._fd = bus.fileno()
        loop.add_reader(self._fd, self._on_readable)
        self.stats.connected = True
        self._writer = asyncio.create_task(
            run_writer(self._queue, self._write, self.stats), name=f"hild-can {self.spec.url}"
        )

    async def _write(self, line: bytes) -> bool:
        bus, can = self._bus, self._can
        frame = parse_frame(line)
        if frame is None:
            self.stats.errors += 1
            self.stats.dropped_lines += 1
            self._log_not_a_frame(
                url=self.spec.url,
                line=line[:80],
                reason="a CAN port takes an NMEA 2000 device's YDRAW lines, one frame each: "
                "an NMEA 0183 device's sentences are no frames",
            )
            return False
        if bus is None:
            self.stats.dropped_lines += 1
            return False
        identifier, data = frame
        message = can.Message(
            arbitration_id=identifier, is_extended_id=True, data=data, channel=self._own
        )
        deadline = None
        while True:
            try:
                bus.send(message, timeout=0)
                return True
            except (can.CanError, OSError) as e:  # the transmit queue is full, the link down
                now = time.monotonic()
                deadline = now + self.tx_patience_s if deadline is None else deadline
                if now >= deadline or self._bus is not bus:
                    self.stats.dropped_lines += 1
                    dropped = self.stats.dropped_lines
                    self._log_dropped(url=self.spec.url, error=str(e), dropped=dropped)
                    return False
            await asyncio.sleep(TX_RETRY_S)

    def _on_readable(self) -> None:
        """The socket has frames: read them (up to the window's allowance) and hand them on."""
        bus, can = self._bus, self._can
        if bus is None:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        if now >= self._window_end:
            self._window_end, self._window_count = now + WINDOW_S, 0
        while self._window_count < DRAIN_PER_WINDOW:
            try:
                message = bus.recv(timeout=0)
            except (can.CanError, OSError, ValueError) as e:
                self.stats.errors += 1
                self._log_error(url=self.spec.url, error=str(e), errors=self.stats.errors)
                if isinstance(e, OSError) or isinstance(e.__cause__, OSError):
                    self._pause_reading(now + READ_ERROR_PAUSE_S)  # the socket failed
                    return
                self._window_count += 1  # a datagram that is no frame: read, and on
                continue
            if message is None:
                return
            self._window_count += 1
            self._take(message)
        self._pause_reading(self._window_end)

    def _take(self, message: Any) -> None:
        """One frame heard: to on_line as a YDRAW line, unless it is not NMEA 2000's."""
        if self._own is not None and message.channel == self._own:
            return  # this port's own, back from the multicast group
        if (
            message.is_error_frame
            or message.is_remote_frame
            or not message.is_extended_id
            or message.is_fd
            or self.mode == "send"
        ):
            self.stats.ignored_lines += 1
            return
        stamp = message.timestamp
        utc = datetime.fromtimestamp(stamp, UTC) if stamp > 0 else datetime.now(UTC)
        line = line_of_frame(message.arbitration_id, bytes(message.data), utc)
        self._deliver(Inbound(line, self.spec.url, None, time.monotonic()))

    def _pause_reading(self, until: float) -> None:
        loop = asyncio.get_running_loop()
        if self._fd is None or self._resume is not None:
            return
        loop.remove_reader(self._fd)
        self._resume = loop.call_at(until, self._resume_reading)

    def _resume_reading(self) -> None:
        self._resume = None
        if self._fd is not None and self._bus is not None:
            asyncio.get_running_loop().add_reader(self._fd, self._on_readable)

    async def _release(self) -> None:
        if self._resume is not None:
            self._resume.cancel()
            self._resume = None
        if self._fd is not None:
            asyncio.get_running_loop().remove_reader(self._fd)
            self._fd = None
        await cancel_and_wait(self._writer)
        bus, self._bus = self._bus, None
        if bus is not None:
            bus.shutdown()
        self.stats.connected = False


class SocketCanPort(CanPort):
    """``socketcan://can0``: a Linux SocketCAN interface (its bit rate the kernel's)."""

    scheme = "socketcan"
    interface = "socketcan"

    def __init__(self, spec: PortSpec, queue_lines: int = 64, default_baud: int | None = None):
        super().__init__(spec, queue_lines)
        if not spec.path:
            raise ValueError(f"{spec.url}: a socketcan port needs an interface")
        self.channel: str = spec.path

    def describe(self) -> str:
        return self._with_direction(
            f"SocketCAN {self.channel} (NMEA 2000 frames; {BITRATE // 1000} kbit/s set on the "
            "interface)"
        )

    def _check(self) -> None:
        problem = interface_problem(self.channel)
        if problem is not None:
            raise OSError(errno.ENODEV, problem)

    def _bus_options(self) -> dict[str, Any]:
        # the frames this socket sends are not read back (receive_own_messages), other
        # sockets' on this machine are (local_loopback, as candump sees hild's)
        return {
            "channel": self.channel,
            "receive_own_messages": False,
            "fd": False,
            "ignore_rx_error_frames": True,
        }


class CanUdpPort(CanPort):
    """``canudp://GROUP:PORT``: CAN frames over UDP multicast (python-can's udp_multicast),
    shared with every process in the group."""

    scheme = "canudp"
    interface = "udp_multicast"

    def __init__(self, spec: PortSpec, queue_lines: int = 64, default_baud: int | None = None):
        super().__init__(spec, queue_lines)
        if spec.host is None or spec.port is None:
            raise ValueError(f"{spec.url}: a canudp port needs a multicast group and a port")
        self.group: str = spec.host
        self.port: int = spec.port
        self.ttl = int(spec.option("ttl", "1") or 1)
        self._own = f"hild-{os.getpid()}-{id(self):x}"

    def describe(self) -> str:
        return self._with_direction(
            f"CAN over UDP multicast {format_host_port(self.group, self.port)} "
            f"(python-can udp_multicast, ttl {self.ttl})"
        )

    def _bus_options(self) -> dict[str, Any]:
        return {"channel": self.group, "port": self.port, "hop_limit": self.ttl, "fd": False}
