"""`hild warm`: the set-up's compile. After it, a run of the same bench compiles nothing (no
kernel is added to the cache, and the run says it loads the model), and a bench that does not
load is refused with its problems."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hild.kernel_cache import PREFIX
from tests.endpoints import free_udp_port
from tests.test_daemon import default_bench_on_free_ports

ROOT = Path(__file__).resolve().parents[1]


def hild(cache: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "hild.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def kernels(cache: Path) -> set[str]:
    """The cache's kernels: numba's index files, one per compiled function."""
    return {str(p.relative_to(cache)) for p in cache.rglob("*.nbi")}


def test_after_hild_warm_the_run_compiles_nothing(tmp_path):
    cache = tmp_path / (PREFIX + "warm-test")  # (a keyed name: hild uses it as it is)
    warmed = hild(cache, "warm")
    assert warmed.returncode == 0, warmed.stderr
    assert warmed.stderr.startswith("hild: compiling the vessel model for the default bench ..."), (
        warmed.stderr
    )
    assert " done in " in warmed.stderr and "(odin, rk4, calm)" in warmed.stderr
    assert "the first run only" not in warmed.stderr  # one notice: its own
    compiled = kernels(cache)
    assert compiled
    bench = default_bench_on_free_ports(tmp_path, free_udp_port(), free_udp_port())
    run = hild(
        cache,
        "run",
        bench,
        "--duration",
        "2",
        "--run-dir",
        str(tmp_path / "run"),
        "--log-format",
        "json",
        "--quiet",
    )
    assert run.returncode == 0, run.stderr
    assert "compiling the vessel model" not in run.stderr
    (preparing,) = [
        json.loads(line) for line in run.stderr.splitlines() if '"run.preparing"' in line
    ]
    assert preparing["note"] == "loading the compiled vessel model from the cache"
    assert kernels(cache) == compiled  # the run loaded every kernel it needed
    again = hild(cache, "warm", "default")
    assert again.returncode == 0 and again.stderr.startswith("hild: preparing"), again.stderr


def test_a_cold_run_says_it_compiles(tmp_path):
    cache = tmp_path / (PREFIX + "cold-test")
    bench = default_bench_on_free_ports(tmp_path, free_udp_port(), free_udp_port())
    run = hild(
        cache,
        "run",
        bench,
        "--duration",
        "1",
        "--run-dir",
        str(tmp_path / "run"),
        "--log-format",
        "json",
        "--quiet",
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr.startswith("hild: compiling the vessel model (the first run only")
    assert "`hild warm` compiles it ahead" in run.stderr.splitlines()[0]  # (what helps, said)
    (preparing,) = [
        json.loads(line) for line in run.stderr.splitlines() if '"run.preparing"' in line
    ]
    assert preparing["note"].startswith("the first run compiles the vessel model")


def test_a_bench_that_does_not_load_is_refused(tmp_path):
    result = hild(tmp_path / (PREFIX + "x"), "warm", "no-such-bench", timeout=120)
    assert result.returncode == 2
    assert "no-such-bench" in result.stderr and "expected a bench file" in result.stderr
    assert "Traceback" not in result.stderr
