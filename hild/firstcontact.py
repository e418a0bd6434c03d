"""What `hild run` checks before it compiles anything: the run directory and the ports.

Loading a bench computes its vessel's step limit and the daemon warms the compiled core up,
which takes seconds (up to a minute on a Raspberry Pi) the first time. A run directory that
cannot be used, a pty link that would replace someone's file, or a listening address another
program holds would stop the run all the same, so they are checked first, from the bench file
as written: the run directory is taken (``RunDir``: checked, locked) and held for the run,
each pty link's place is checked, each address a port listens on is bound once and let go.

A bench file that cannot be read here is left to ``load_bench``, which names every problem.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from hild.bench import DEFAULT_BENCH
from hild.config import load_toml
from hild.profiles import BENCHES
from hild.rundir import (
    DEFAULT_RUN_DIR,
    RunDir,
    check_replaceable,
    pty_paths_under,
    usable_run_dir_name,
)
from hild.transport.probe import bind_problem, listen_address
from hild.transport.url import PortSpec, parse_port_url


def bench_as_written(name_or_path: str | None, overrides: dict[str, Any]):
    """(run directory, [(device name, port spec)]) from the bench file, or None when it cannot
    be read that far (load_bench reports why)."""
    try:
        data = load_toml(BENCHES.resolve(name_or_path or DEFAULT_BENCH))
        table = data.get("bench", {})
        run_dir = overrides.get("run_dir") or table.get("run_dir", DEFAULT_RUN_DIR)
        if not isinstance(run_dir, str) or not usable_run_dir_name(run_dir):
            return None
        ports = []
        for device in data.get("device", []):
            for url in device.get("ports", []):
                ports.append((str(device.get("name")), parse_port_url(url, run_dir)))
    except Exception:  # anything wrong with the file: load_bench names it, with the rest
        return None
    return run_dir, ports


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
            raise OSError(problem.errno, f"{where}: cannot bind {address[0]}:{address[1]} "
                          f"({problem.strerror or problem})")  # fmt: skip


@contextlib.contextmanager
def checked_before_compiling(
    name_or_path: str | None, overrides: dict[str, Any]
) -> Iterator[RunDir | None]:
    """Hold the bench's run directory (when pty links go in it) and check its ports, before
    anything compiles; yields the RunDir held, or None (none needed, or the file is left to
    load_bench)."""
    written = bench_as_written(name_or_path, overrides)
    if written is None:
        yield None
        return
    run_dir, ports = written
    specs = [spec for _, spec in ports]
    held = RunDir(run_dir) if pty_paths_under(specs, run_dir) else None
    with held if held is not None else contextlib.nullcontext():
        check_ports(ports)
        yield held
