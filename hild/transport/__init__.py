"""The daemon's I/O endpoints for NMEA 0183 lines: serial devices, ptys, UDP and TCP; and CAN
buses for NMEA 2000 devices' frames (SocketCAN, CAN over UDP multicast)."""

from __future__ import annotations

from hild.transport.allow import SourceFilter
from hild.transport.base import MAX_LINE_BYTES, Inbound, LineSplitter, Port, PortStats
from hild.transport.can import CanUdpPort, SocketCanPort
from hild.transport.pty import PtyPort
from hild.transport.serial import SerialPort
from hild.transport.tcp import TcpServerPort
from hild.transport.udp import UdpPort
from hild.transport.url import STANDARD_BAUDS, PortSpec, PortUrlError, parse_port_url

__all__ = [
    "MAX_LINE_BYTES",
    "PORT_TYPES",
    "STANDARD_BAUDS",
    "CanUdpPort",
    "Inbound",
    "LineSplitter",
    "Port",
    "PortSpec",
    "PortStats",
    "PortUrlError",
    "PtyPort",
    "SerialPort",
    "SocketCanPort",
    "SourceFilter",
    "TcpServerPort",
    "UdpPort",
    "open_port",
    "parse_port_url",
]


# The port types by URL scheme: a new transport is one class with a ``scheme`` and one entry.
PORT_TYPES: dict[str, type[Port]] = {
    cls.scheme: cls
    for cls in (SerialPort, PtyPort, UdpPort, TcpServerPort, SocketCanPort, CanUdpPort)
}


def open_port(spec: PortSpec, queue_lines: int = 64, default_baud: int = 4800) -> Port:
    """Construct (without starting) the port type of spec's scheme."""
    try:
        port_type = PORT_TYPES[spec.scheme]
    except KeyError:
        raise ValueError(f"{spec.url}: no port type for scheme {spec.scheme!r}") from None
    return port_type(spec, queue_lines, default_baud=default_baud)
