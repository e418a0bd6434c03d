"""Whether a port's address can be taken now: what `hild run` checks before it compiles
(hild.firstcontact) and what `hild check` warns of."""

from __future__ import annotations

import socket

from hild.transport.url import PortSpec, split_host_port


def listen_address(spec: PortSpec) -> tuple[str, int] | None:
    """The address a TCP server or a receiving UDP port binds, if it names one."""
    if spec.scheme == "tcp" or (spec.scheme == "udp" and spec.option("listen") == "1"):
        return (spec.host or "127.0.0.1", int(spec.port or 0))
    if spec.scheme == "udp" and spec.option("bind"):
        host, number = split_host_port(str(spec.option("bind")))
        return (host or "127.0.0.1", int(number or 0))
    return None


def bind_problem(spec: PortSpec, address: tuple[str, int]) -> OSError | None:
    """Bind the address once as the port will (TCP with SO_REUSEADDR, as hild's server); the
    error if it cannot be bound now, None if it can (or the name does not resolve: the port
    itself says so when it opens)."""
    kind = socket.SOCK_STREAM if spec.scheme == "tcp" else socket.SOCK_DGRAM
    try:
        infos = socket.getaddrinfo(address[0], address[1], type=kind, flags=socket.AI_PASSIVE)
    except OSError:
        return None
    family, _, _, _, sockaddr = infos[0]
    try:
        with socket.socket(family, kind) as probe:
            if kind == socket.SOCK_STREAM:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(sockaddr)
    except OSError as e:
        return e
    return None
