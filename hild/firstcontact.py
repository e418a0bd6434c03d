"""What `hild run` checks before it compiles anything: the run directory and the ports.

Loading a bench computes its vessel's step limit and the daemon warms the compiled core up,
which takes seconds (up to a minute on a Raspberry Pi) the first time. A run directory that
cannot be used, a pty link that would replace someone's file, or a listening address another
program holds would stop the run all the same, so they are checked first, from the bench as
checked without compiling (``load_bench(check_step=False)``: its step limit only if known): the
run directory is taken (``RunDir``: checked, locked) and held for the run, each pty link's
place is checked, each address a port listens on is bound once and let go.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from hild.rundir import RunDir, check_replaceable, pty_paths_under
from hild.transport.probe import bind_problem, listen_address
from hild.transport.url import PortSpec, parse_port_url

if TYPE_CHECKING:
    from hild.bench import Bench


def check_ports(ports: list[tuple[str, PortSpec]]) -> None:
    """Refuse, as opening them would, a pty link's place that is taken, or an address that
    cannot be bound now; OSError naming the device and the port."""
    seen: set[str] = set()
    for name, spec in ports:
        if spec.url in seen:
            continue
        seen.add(spec.url)
        where = f"device {name}, port {spec.url}"
        if spec.scheme == "pty" and spec.path:
            try:
                check_replaceable(spec.path)
            except OSError as e:
                raise OSError(e.errno, f"{where}: {e.strerror}", e.filename) from None
        address = listen_address(spec)
        if address is None or address[1] == 0:
            continue
        problem = bind_problem(spec, address)
        if problem is not None:
            raise OSError(
                problem.errno,
                f"{where}: cannot bind {address[0]}:{address[1]} ({problem.strerror or problem})",
            )


@contextlib.contextmanager
def checked_before_compiling(bench: Bench) -> Iterator[RunDir | None]:
    """Hold the bench's run directory (when pty links go in it) and check its ports, before
    anything compiles; yields the RunDir held, or None (none needed)."""
    ports = [(d.name, parse_port_url(url, bench.run_dir)) for d in bench.devices for url in d.ports]
    specs = [spec for _, spec in ports]
    held = RunDir(bench.run_dir) if pty_paths_under(specs, bench.run_dir) else None
    with held if held is not None else contextlib.nullcontext():
        check_ports(ports)
        yield held
