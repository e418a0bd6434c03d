"""`hild check`: load a bench as `hild run` would, say what it would run and what would stop
it now. Imports neither the daemon nor, for a profile whose step limit is remembered, numba."""

from __future__ import annotations

import socket
import sys

from hild.bench import Bench, load_bench
from hild.transport.url import parse_port_url, split_host_port


def check_bench(name_or_path: str | None) -> int:
    """Validate a bench and print what it would run; errors raise BenchError."""
    bench = load_bench(name_or_path)
    out = sys.stdout
    out.write(f"{bench.file}: OK: {bench.profile} in {bench.weather.preset} weather, "
              f"{len(bench.devices)} device(s), {bench.rate_hz:g} Hz\n")  # fmt: skip
    for budget in bench.budgets:
        out.write(f"  {budget.url} ({', '.join(budget.devices)}): {budget.bytes_per_s:.0f} of "
                  f"{budget.capacity_bytes_per_s:.0f} bytes/s at {budget.baud} baud "
                  f"({100 * budget.load:.0f} %)\n")  # fmt: skip
    for warning in port_warnings(bench):
        out.write(f"  warning: {warning}\n")
    return 0


def port_warnings(bench: Bench) -> list[str]:
    """What would stop `hild run` now though the bench is right: an address another program
    holds or that is not on this machine, a host name that does not resolve."""
    warnings: list[str] = []
    seen: set[str] = set()
    for config in bench.devices:
        for url in config.ports:
            spec = parse_port_url(url, bench.run_dir)
            if spec.url in seen or spec.scheme not in ("udp", "tcp"):
                continue
            seen.add(spec.url)
            where = f"{url} (device {config.name})"
            if spec.scheme == "tcp" or spec.option("listen") == "1":
                address = (spec.host or "127.0.0.1", spec.port)
            elif spec.option("bind"):
                host, number = split_host_port(str(spec.option("bind")))
                address = (host or "127.0.0.1", int(number or 0))
            else:
                try:  # a destination: it must resolve
                    socket.getaddrinfo(spec.host, spec.port, type=socket.SOCK_DGRAM)
                except OSError as e:
                    warnings.append(f"{where}: {spec.host} does not resolve now ({e})")
                continue
            kind = socket.SOCK_STREAM if spec.scheme == "tcp" else socket.SOCK_DGRAM
            try:
                family = socket.AF_INET6 if ":" in str(address[0]) else socket.AF_INET
                with socket.socket(family, kind) as probe:
                    probe.bind(address)
            except OSError as e:
                warnings.append(f"{where}: cannot bind {address[0]}:{address[1]} now "
                                f"({e.strerror or e})")  # fmt: skip
    return warnings
