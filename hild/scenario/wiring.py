"""A run's wiring: the bench's ports moved where nothing else is, for one external-controller run.

Every ``udp://`` and ``tcp://`` port of the bench gets a free ephemeral port on 127.0.0.1,
picked for this run (the same bench address in two devices gets the same new port, so a
shared port stays shared); every ``pty://`` link goes under a private run directory. Serial
lines (real hardware) are left as they are. Nothing collides with a user's own ``hild run``
on the well-known ports, or with another run.

A UDP sensor port is where hild *sends*: the controller binds it. A ``listen=1`` UDP port
and a TCP port are where hild *listens*: the controller sends or connects there. Either way
the controller reaches it at ``RunPort.controller_url``.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlencode

from hild.bench import Bench
from hild.transport.url import LOOPBACK, PortSpec, format_host_port, parse_port_url

DROPPED_OPTIONS = ("allow",)  # the bench's source filters are for its network, not loopback


@dataclass(frozen=True)
class RunPort:
    """One port of one device, as the bench has it and as this run opens it."""

    device: str
    bench_url: str
    url: str  # what the daemon opens this run
    scheme: str  # pty, udp, tcp or serial
    host: str | None = None
    port: int | None = None
    path: str | None = None  # pty: the link the controller opens; serial: the device

    @property
    def address(self) -> str | None:
        """``HOST:PORT`` of a UDP or TCP port, else None."""
        if self.host is None or self.port is None:
            return None
        return format_host_port(self.host, self.port)

    @property
    def controller_url(self) -> str:
        """How a controller reaches this port: ``udp://HOST:PORT`` (bind it for a sensor, send
        to it for commands), ``tcp://HOST:PORT`` (connect), ``pty:///PATH`` (open the link),
        or a serial line's URL as the bench has it."""
        if self.scheme in ("udp", "tcp"):
            return f"{self.scheme}://{self.address}"
        if self.scheme == "pty":
            return f"pty://{self.path}"
        return self.bench_url


@dataclass(frozen=True)
class RunWiring:
    """The bench as this run opens it, and where each device's ports went."""

    bench: Bench
    run_dir: Path  # the pty links' private directory
    ports: dict[str, tuple[RunPort, ...]]  # device name -> its ports, in the bench's order

    def urls(self) -> dict[str, list[str]]:
        """Device -> the URLs a controller uses (for summaries)."""
        return {name: [p.controller_url for p in ports] for name, ports in self.ports.items()}


def free_port(kind: int) -> int:
    """A port the kernel has free on 127.0.0.1 now (SOCK_DGRAM or SOCK_STREAM)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


class _Mover:
    """Picks each bench address's new place once, so shared ports stay shared."""

    def __init__(self, bench: Bench, run_dir: Path):
        self.bench = bench
        self.run_dir = run_dir
        self.ports: dict[tuple[str, str | None, int | None], int] = {}
        self.links: dict[str, str] = {}  # bench pty path -> link name under run_dir

    def move(self, device: str, url: str) -> RunPort:
        spec = parse_port_url(url, self.bench.run_dir)
        if spec.scheme == "pty":
            assert spec.path is not None
            name = self._link(spec.path)
            new = _with_query(f"pty://{name}", spec)
            return RunPort(device, url, new, "pty", path=str(self.run_dir / name))
        if spec.scheme in ("udp", "tcp"):
            port = self._port(spec.scheme, spec.host, spec.port)
            options = dict(spec.options)
            for key in DROPPED_OPTIONS:
                options.pop(key, None)
            if "bind" in options:
                options["bind"] = self._bind(options["bind"])
            new = _with_query(f"{spec.scheme}://{format_host_port(LOOPBACK, port)}", spec, options)
            return RunPort(device, url, new, spec.scheme, host=LOOPBACK, port=port)
        return RunPort(device, url, url, spec.scheme, path=spec.path)

    def _port(self, scheme: str, host: str | None, port: int | None) -> int:
        key = (scheme, host, port)
        if key not in self.ports:
            kind = socket.SOCK_DGRAM if scheme == "udp" else socket.SOCK_STREAM
            taken = set(self.ports.values())
            new = free_port(kind)
            while new in taken:  # two picks in one run must differ
                new = free_port(kind)
            self.ports[key] = new
        return self.ports[key]

    def _bind(self, text: str) -> str:
        host, _, port = text.rpartition(":")
        if port in ("", "0"):
            return f"{LOOPBACK}:0"
        return f"{LOOPBACK}:{self._port('udp-bind', host, int(port))}"

    def _link(self, path: str) -> str:
        if path not in self.links:
            base = os.path.basename(path) or "pty"
            name, n = base, 1
            while name in self.links.values():
                n += 1
                name = f"{base}-{n}"
            self.links[path] = name
        return self.links[path]


def _with_query(base: str, spec: PortSpec, options: dict[str, str] | None = None) -> str:
    items = dict(spec.options if options is None else options)
    if spec.baud is not None:
        items["baud"] = str(spec.baud)
    return f"{base}?{urlencode(sorted(items.items()), safe=':,/')}" if items else base


def wire_run(bench: Bench, run_dir: Path, time_scale: float) -> RunWiring:
    """The bench with every UDP/TCP port moved to a free one on 127.0.0.1, its pty links under
    ``run_dir`` and its time scale ``time_scale``; and the map of what went where."""
    mover = _Mover(bench, run_dir)
    devices, ports = [], {}
    for config in bench.devices:
        moved = tuple(mover.move(config.name, url) for url in config.ports)
        ports[config.name] = moved
        devices.append(replace(config, ports=tuple(p.url for p in moved)))
    wired = replace(bench, devices=tuple(devices), run_dir=run_dir, time_scale=time_scale)
    return RunWiring(wired, run_dir, ports)
