"""The daemon's I/O endpoints for NMEA 0183 lines: serial devices, ptys, UDP and TCP."""

from __future__ import annotations

from hild.transport.allow import SourceFilter
from hild.transport.base import MAX_LINE_BYTES, Inbound, LineSplitter, Port, PortStats
from hild.transport.pty import PtyPort
from hild.transport.serial import SerialPort
from hild.transport.tcp import TcpServerPort
from hild.transport.udp import UdpPort
from hild.transport.url import STANDARD_BAUDS, PortSpec, PortUrlError, parse_port_url

__all__ = [
    "MAX_LINE_BYTES",
    "STANDARD_BAUDS",
    "Inbound",
    "LineSplitter",
    "Port",
    "PortSpec",
    "PortStats",
    "PortUrlError",
    "PtyPort",
    "SerialPort",
    "SourceFilter",
    "TcpServerPort",
    "UdpPort",
    "open_port",
    "parse_port_url",
]


def open_port(spec: PortSpec, queue_lines: int = 64, default_baud: int = 4800) -> Port:
    """Construct (without starting) the port class for spec's scheme."""
    if spec.scheme == "serial":
        return SerialPort(spec, queue_lines, default_baud=default_baud)
    if spec.scheme == "pty":
        return PtyPort(spec, queue_lines, default_baud=default_baud)
    if spec.scheme == "udp":
        return UdpPort(spec, queue_lines)
    if spec.scheme == "tcp":
        return TcpServerPort(spec, queue_lines)
    raise ValueError(f"{spec.url}: no port class for scheme {spec.scheme!r}")
