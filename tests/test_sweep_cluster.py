"""hild sweep on a cluster started apart, as on a lab's machines: a scheduler and two
workers from Dask's command-line tools (one of them with the resource ``rig-a``), and
``hild sweep --scheduler`` (or $DASK_SCHEDULER_ADDRESS) as a user runs it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from distributed import Client
from sweep_scenarios import tiny_scenario

from hild.cli import main
from hild.sweep.worker import runs_done
from tests.endpoints import free_tcp_port

REPO = Path(__file__).resolve().parents[1]
DASK = Path(sys.executable).with_name("dask")


def environment() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    return env


@pytest.fixture(scope="module")
def cluster():
    """A scheduler and two one-thread workers, named plain and rig (rig-a=1), on 127.0.0.1."""
    address = f"tcp://127.0.0.1:{free_tcp_port()}"
    quiet = dict(env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port = address.rsplit(":", 1)[1]
    scheduler = [
        DASK,
        "scheduler",
        "--host",
        "127.0.0.1",
        "--port",
        port,
        "--no-dashboard",
        "--dashboard-address",
        ":0",
    ]
    processes = [subprocess.Popen(scheduler, **quiet)]
    worker = [
        DASK,
        "worker",
        address,
        "--nthreads",
        "1",
        "--nworkers",
        "1",
        "--no-dashboard",
        "--dashboard-address",
        ":0",
        "--host",
        "127.0.0.1",
    ]
    processes.append(subprocess.Popen([*worker, "--name", "plain"], **quiet))
    processes.append(
        subprocess.Popen([*worker, "--name", "rig", "--resources", "rig-a=1"], **quiet)
    )
    try:
        with Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
            yield address, client
    finally:
        with contextlib.suppress(Exception), Client(address, timeout=5) as client:
            client.shutdown()  # the scheduler and its workers
        for p in reversed(processes):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def hild_sweep(*args, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hild.cli", "sweep", *map(str, args), "--no-progress"],
        env=env or environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def by_worker(client: Client) -> dict[str, int]:
    info = client.scheduler_info(n_workers=-1)["workers"]
    done = client.run(runs_done)
    return {info[address]["name"]: count for address, count in done.items()}


def test_a_sweep_on_a_cluster_started_apart_gives_the_local_table(cluster, tmp_path, monkeypatch):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    address, client = cluster
    scenario = tiny_scenario(tmp_path)
    local, remote = tmp_path / "local.parquet", tmp_path / "remote.parquet"
    assert (
        main(["sweep", str(scenario), "--workers", "1", "--out", str(local), "--no-progress"]) == 0
    )
    before = by_worker(client)
    done = hild_sweep(scenario, "--scheduler", address, "--out", remote)
    assert done.returncode == 0, done.stderr
    assert "12 of 12 runs, 12/12 passed" in done.stdout
    assert pq.read_table(remote).equals(pq.read_table(local))
    assert remote.read_bytes() == local.read_bytes()
    after = by_worker(client)
    assert sum(after.values()) - sum(before.values()) == 12


def test_runs_needing_a_resource_go_only_to_the_worker_that_has_it(cluster, tmp_path):
    address, client = cluster
    plain = tiny_scenario(tmp_path, "plain.toml")
    rigged = tiny_scenario(tmp_path, "rigged.toml", resources="resources = { rig-a = 1 }")
    before = by_worker(client)
    env = {**environment(), "DASK_SCHEDULER_ADDRESS": address}  # the address from the environment
    done = hild_sweep(rigged, "--out", tmp_path / "rigged.parquet", env=env)
    assert done.returncode == 0, done.stderr
    after = by_worker(client)
    assert after["plain"] == before["plain"]
    assert after["rig"] - before["rig"] == 12
    # the resource changes where the runs go, not what they give
    assert (
        hild_sweep(
            plain, "--scheduler", address, "--out", tmp_path / "plain.parquet", "--runs", 4
        ).returncode
        == 0
    )
    rows = pq.read_table(tmp_path / "plain.parquet").to_pylist()
    assert rows == pq.read_table(tmp_path / "rigged.parquet").to_pylist()[:4]

    # a resource that no worker has is refused before any run
    missing = tiny_scenario(tmp_path, "missing.toml", resources="resources = { rig-b = 1 }")
    refused = hild_sweep(missing, "--scheduler", address, "--out", tmp_path / "m.parquet")
    assert refused.returncode == 2
    assert "--resources rig-b=1" in refused.stderr


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_sweep_resumes_to_the_same_table(cluster, tmp_path, stop):
    address, _ = cluster
    scenario = tiny_scenario(tmp_path, sweep="seeds = 10")
    whole, cut = tmp_path / "whole.parquet", tmp_path / "cut.parquet"
    assert hild_sweep(scenario, "--scheduler", address, "--out", whole).returncode == 0
    parts = tmp_path / "cut.parquet.parts"
    sweep = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hild.cli",
            "sweep",
            str(scenario),
            "--scheduler",
            address,
            "--out",
            str(cut),
            "--no-progress",
        ],
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (parts.is_dir() and any(parts.glob("part-*.parquet"))):
        assert sweep.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    sweep.send_signal(stop)
    _, err = sweep.communicate(timeout=60)
    assert sweep.returncode == 130, err
    assert "--resume continues" in err and not cut.exists()
    kept = sum(len(pq.read_table(p)) for p in parts.glob("part-*.parquet"))
    assert 0 < kept < 60

    resumed = hild_sweep(scenario, "--scheduler", address, "--out", cut, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert f"({60 - kept} runs run now, {kept} read back)" in resumed.stdout
    assert cut.read_bytes() == whole.read_bytes()
    assert pq.read_table(cut).equals(pq.read_table(whole))


def test_a_controller_a_worker_cannot_load_is_refused_before_any_run(cluster, tmp_path):
    """The python controller was checked in hild sweep's own process only: on a cluster whose
    workers lack its module, every run failed ("error"), with exit 1 after the whole sweep."""
    address, client = cluster
    here = tmp_path / "only_here"  # on this process's path, not on the workers'
    here.mkdir()
    (here / "only_here_controller.py").write_text(
        "from hild.scenario.controller import PilotController\n\n"
        "def make(context):\n    return PilotController(context)\n"
    )
    scenario = tiny_scenario(tmp_path)
    scenario.write_text(
        scenario.read_text().replace("pilot = true", 'python = "only_here_controller:make"')
    )
    before = by_worker(client)
    env = {**environment(), "PYTHONPATH": f"{REPO}{os.pathsep}{here}"}
    refused = hild_sweep(scenario, "--scheduler", address, "--out", tmp_path / "t.parquet", env=env)
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    assert f"{scenario}: controller.python = 'only_here_controller:make'" in refused.stderr
    assert "it does not load on 2 of 2 workers" in refused.stderr
    assert "No module named 'only_here_controller'" in refused.stderr, refused.stderr
    assert by_worker(client) == before  # no run went out
    # where it loads (a local cluster's workers share this process's path), the sweep runs
    done = hild_sweep(
        scenario, "--workers", "1", "--out", tmp_path / "local.parquet", "--runs", "2", env=env
    )
    assert done.returncode == 0, done.stderr
