"""Where a sweep runs: an existing Dask scheduler, or a local cluster sized to the machine.

An existing cluster (``--scheduler tcp://HOST:8786`` or ``$DASK_SCHEDULER_ADDRESS``) needs
hild installed on every worker, the same version as here, and a python controller's module
on every worker's path: checked before any run. A local
cluster has one worker process per core (or ``--workers N``), one thread each, on 127.0.0.1,
without a dashboard; its workers are given the resources the scenario asks for, one run at a
time each (a local cluster stands for this machine and what is attached to it).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass

from distributed import Client, LocalCluster
from distributed.comm.addressing import parse_address, parse_host_port

import hild
from hild.config import MISSING, ConfigError
from hild.scenario.controller import ControllerLoadError
from hild.scenario.file import ControllerSpec
from hild.sweep.worker import controller_problem, hild_version

SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")  # Dask's schemes between machines
ADDRESS_EXPECTED = (
    "a Dask scheduler's address, tcp://HOST:PORT (or tls://, ws://, wss://, "
    "ucx://; HOST:PORT alone is tcp), e.g. tcp://lab-1:8786"
)
CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class ClusterSpec:
    scheduler: str | None  # None: a local cluster
    workers: int  # local cluster: worker processes
    resources: dict[str, float]


def cluster_spec(
    scheduler: str | None, workers: int | None, resources: dict[str, float]
) -> ClusterSpec:
    address = scheduler or os.environ.get(SCHEDULER_ENV) or None
    if address is not None and workers is not None:
        given = "--scheduler" if scheduler else f"${SCHEDULER_ENV}"
        raise ConfigError(
            "--workers",
            "",
            workers,
            f"no --workers with {given} ({address}): "
            "--workers sizes a local cluster; an existing cluster has its "
            "own workers",
        )
    if address is not None:
        check_address(address, "--scheduler" if scheduler else f"${SCHEDULER_ENV}")
    return ClusterSpec(address, workers or os.cpu_count() or 1, dict(resources))


def check_address(address: str, given: str) -> None:
    """A scheduler's address as Dask reads it, with a host and a port (1 to 65535), else a
    ConfigError naming where it was ``given``."""
    try:
        scheme, location = parse_address(address)
        host, port = parse_host_port(location)  # ValueError: no port, or not a number
        usable = scheme in SCHEMES and bool(host) and 0 < port < 65536
    except ValueError:
        usable = False
    if not usable:
        raise ConfigError(given, "", address, ADDRESS_EXPECTED)


@contextlib.contextmanager
def connected(spec: ClusterSpec) -> Iterator[Client]:
    """A client of the cluster, checked: hild's version on every worker, and a worker with
    the resources the runs need."""
    logging.getLogger("distributed").setLevel(logging.ERROR)
    if spec.scheduler is None:
        cluster = LocalCluster(
            n_workers=spec.workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            # no dashboard; the scheduler's HTTP routes (health) on a free port, not 8787
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": ":0"},
            resources=spec.resources or None,
            silence_logs=logging.ERROR,
        )
        with cluster, Client(cluster) as client:
            yield client
        return
    try:
        client = Client(spec.scheduler, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError) as e:
        raise ConfigError(
            "--scheduler",
            "",
            spec.scheduler,
            f"the address of a running Dask scheduler, e.g. tcp://HOST:8786 ({e})",
        ) from None
    with client:
        check_workers(client, spec)
        yield client


def check_workers(client: Client, spec: ClusterSpec) -> None:
    where = spec.scheduler or "the cluster"
    try:
        client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
    except TimeoutError:
        raise ConfigError(
            where,
            "",
            MISSING,
            f"a scheduler with at least one worker (none joined within {CONNECT_TIMEOUT_S} s)",
        ) from None
    try:
        versions = client.run(hild_version)
    except ImportError as e:
        raise ConfigError(
            where, "", MISSING, f"workers with hild {hild.__version__} installed ({e})"
        ) from None
    other = {w: v for w, v in versions.items() if v != hild.__version__}
    if other:
        raise ConfigError(
            where, "", MISSING, f"workers with hild {hild.__version__}, as here (found {other})"
        )
    if spec.resources:
        workers = client.scheduler_info(n_workers=-1)["workers"].values()
        if not any(_has(w.get("resources", {}), spec.resources) for w in workers):
            wanted = ",".join(f"{k}={v:g}" for k, v in spec.resources.items())
            raise ConfigError(
                where,
                "",
                MISSING,
                f"a worker with the resources the scenario "
                f"asks for ({wanted}): start one with `dask worker "
                f"{spec.scheduler or 'ADDRESS'} --resources {wanted}`",
            )


def check_controller_on_workers(client: Client, spec: ControllerSpec, file: str) -> None:
    """A python controller's factory loads on every worker, as it did here (hild sweep checks
    it in its own process first): a worker started apart may lack the controller's module on
    its path, and every run it took would fail. Said before the first run, naming them."""
    if spec.kind != "python":
        return
    assert isinstance(spec.target, str)
    problems = client.run(controller_problem, spec.target, file)
    failing = {worker: problem for worker, problem in problems.items() if problem}
    if failing:
        worker, problem = next(iter(sorted(failing.items())))
        raise ControllerLoadError(
            file,
            spec.target,
            f"it does not load on {len(failing)} of "
            f"{len(problems)} workers: on {worker}, {problem}",
        )


def _has(have: dict[str, float], need: dict[str, float]) -> bool:
    return all(have.get(k, 0.0) >= v for k, v in need.items())


def worker_count(client: Client) -> int:
    return max(1, len(client.scheduler_info(n_workers=-1)["workers"]))
