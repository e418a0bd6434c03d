"""Benchmark: how long hild takes to start, warm (numba's cache filled) and cold (empty).

Times, end to end as a user meets them, each as the median of several runs:

- `hild --help` and `hild check` (the default bench);
- `hild run` (the default bench moved onto a free UDP port) from the command to its banner
  (ports open, ready), and to the first sentence on that port. A run on the wall clock starts
  at the next whole second of UTC, as a receiver's epochs do, so the first sentence comes
  0-1 s after ready, half a second on average: the median of a few runs moves by that much;
- `hild sim odin --duration 60` from the command to its exit;
- and the throughput of a batch, `hild sim ... --repeat 200`, in runs per second.

hild runs as a user's install does: without the development environment's scipy (see HILD),
and with its modules' bytecode cached (a user's Python writes it at the first import; with
PYTHONDONTWRITEBYTECODE set, as in some development shells, every run compiles hild's 140
modules again, about 0.3 s here).

Cold runs point numba at an empty cache directory (NUMBA_CACHE_DIR), so every kernel a command
needs is compiled; warm runs use a cache that an untimed run filled first. Prints one table.

With ``--clean-clone`` it measures a newcomer's first run instead: a clean clone of this
repository, `make`'s set-up (its .venv, the install and `hild warm`, with an empty kernel
cache), then `hild run` from that venv to the first sentence.

    python bench/bench_startup.py [--warm 5] [--cold 2]
    python bench/bench_startup.py --clean-clone [--warm 3]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, free_port

# hild as a user's install runs it: scipy is in the test extra only, and numba imports it at
# start-up when it finds it (0.4 s here), so this development environment's scipy is hidden
AS_INSTALLED = (
    "import runpy, sys; sys.modules['scipy'] = None; sys.argv[0] = 'hild'; "
    "runpy.run_module('hild.cli', run_name='__main__')"
)
HILD = [sys.executable, "-c", AS_INSTALLED]
SIM = ["sim", "odin", "--duration", "60", "--cmd", "port.rpm=1500", "--cmd", "starboard.rpm=1500"]
BATCH_RUNS = 200  # `hild sim --repeat`: runs of the same 60 s in one process


def default_bench_on(folder: Path, udp_port: int) -> Path:
    """The built-in default bench sending to ``udp_port``, listening on a free one."""
    text = (REPO / "profiles" / "bench" / "default.toml").read_text()
    text = text.replace("10110", str(udp_port)).replace("10112", str(free_port(socket.SOCK_DGRAM)))
    path = folder / "default.toml"
    path.write_text(text)
    return path


def as_a_user(env: dict[str, str]) -> dict[str, str]:
    """``env`` as a user's shell has it: bytecode written and read (see the module's doc)."""
    return {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str], env: dict[str, str]) -> float:
    """Seconds from starting ``hild ARGV`` to its exit (which must be 0)."""
    t0 = time.perf_counter()
    subprocess.run(
        [*HILD, *argv],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )
    return time.perf_counter() - t0


def batch_rate(env: dict[str, str]) -> float:
    """Runs per second of `hild sim --repeat BATCH_RUNS` (start-up included), from its stderr."""
    p = subprocess.run(
        [*HILD, *SIM, "--repeat", str(BATCH_RUNS)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    return float(p.stderr.rsplit("(", 1)[1].split(" runs/s")[0])


def first_sentence(
    folder: Path, env: dict[str, str], hild: list[str] = HILD, cwd: Path = REPO
) -> tuple[float, float]:
    """Seconds from starting `hild run` to its banner's first line (its ports open: ready),
    and to the first datagram of its sentences."""
    folder = Path(tempfile.mkdtemp(dir=folder))  # a run directory of its own each time
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock,
        open(folder / "stderr", "w+") as log,
    ):
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(120.0)
        bench = default_bench_on(folder, sock.getsockname()[1])
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [*hild, "run", str(bench), "--run-dir", str(folder / "run")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=cwd,
        )
        try:
            assert proc.stdout is not None
            proc.stdout.readline()  # the banner, written (and flushed) once the ports are open
            ready = time.perf_counter() - t0
            sock.recv(4096)
            return ready, time.perf_counter() - t0
        except TimeoutError:
            log.seek(0)
            raise SystemExit(f"hild run sent nothing in 120 s:\n{log.read()[-3000:]}") from None
        finally:
            proc.terminate()
            proc.wait(30)


def measure(once, runs: int, cold: bool) -> list[float | None]:
    """The medians of ``runs`` calls of once(folder, env), each cold (a fresh cache) or warm:
    one median per figure ``once`` returns (a float, or a tuple of them); None for no runs
    (``--cold 0``: the warm column only)."""
    times: list[tuple[float, ...]] = []
    with tempfile.TemporaryDirectory() as warm_cache:
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as folder:
                cache = folder + "/numba" if cold else warm_cache
                env = as_a_user({**os.environ, "NUMBA_CACHE_DIR": cache})
                if not cold and not times:
                    once(Path(folder), env)  # fill the warm cache (and the bytecode), untimed
                figures = once(Path(folder), env)
                times.append(figures if isinstance(figures, tuple) else (figures,))
    if not times:
        return [None, None]
    return [statistics.median(column) for column in zip(*times, strict=True)]


def seconds(median: float | None) -> str:
    """A column of the table: the median, or a dash where it was not measured."""
    return f"{median:7.2f}s" if median is not None else f"{'-':>8}"


def clean_clone_first_run(runs: int) -> None:
    """A newcomer's first `make run`: a clean clone of this repository, its set-up (`make`'s
    .venv, pip's install and `hild warm`) with an empty kernel cache, then `hild run` to the
    first sentence, ``runs`` times (the first is the newcomer's; the rest load the same
    cache)."""
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        clone = tmp / "hild"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        env = {
            k: v
            for k, v in as_a_user(dict(os.environ)).items()
            if k not in ("NUMBA_CACHE_DIR", "VIRTUAL_ENV", "PYTHONPATH")
        }
        env["XDG_CACHE_HOME"] = str(tmp / "cache")  # no kernels from an earlier install
        t0 = time.perf_counter()
        setup = subprocess.run(
            ["make", "-C", str(clone), ".venv/.installed"], env=env, capture_output=True, text=True
        )
        set_up_s = time.perf_counter() - t0
        if setup.returncode != 0:
            raise SystemExit(f"make's set-up failed:\n{setup.stdout[-2000:]}{setup.stderr[-2000:]}")
        warmed = [line for line in setup.stderr.splitlines() if line.startswith("hild: ")]
        times = [
            first_sentence(tmp, env, [str(clone / ".venv" / "bin" / "hild")], clone)
            for _ in range(runs)
        ]
    print(f"clean clone: make's set-up {set_up_s:.0f} s ({'; '.join(warmed) or 'no hild warm'})")
    for i, figure in enumerate(("ready (its banner)", "first sentence")):
        print(
            f"clean clone: hild run, {figure}: {times[0][i]:.2f} s the first time"
            + (
                f", {statistics.median(t[i] for t in times[1:]):.2f} s after (median of {runs - 1})"
                if runs > 1
                else ""
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", type=int, default=5, help="warm runs of each (median)")
    parser.add_argument("--cold", type=int, default=2, help="cold runs of each (median)")
    parser.add_argument(
        "--clean-clone",
        action="store_true",
        help="only: a clean clone's set-up and its first hild run (pip installs "
        "from the package index or its cache)",
    )
    args = parser.parse_args()
    if args.clean_clone:
        clean_clone_first_run(max(args.warm, 1))
        return
    cases = [
        ("hild --help", lambda folder, env: timed(["--help"], env)),
        ("hild check (default bench)", lambda folder, env: timed(["check"], env)),
        (("hild run: ready (banner)", "hild run: first sentence"), first_sentence),
        ("hild sim odin --duration 60", lambda folder, env: timed(SIM, env)),
    ]
    print(
        f"hild start-up benchmark: {os.cpu_count()} cores, Python {sys.version.split()[0]}; "
        f"median of {args.warm} warm and {args.cold} cold runs"
    )
    print(f"{'command':<32} {'warm':>8} {'cold':>8}")
    print("-" * 50)
    for names, once in cases:
        warm = measure(once, args.warm, cold=False)
        cold = measure(once, args.cold, cold=True)
        for i, name in enumerate((names,) if isinstance(names, str) else names):
            print(f"{name:<32} {seconds(warm[i])} {seconds(cold[i])}", flush=True)
    print(
        "(a run on the wall clock starts at the next whole second of UTC: its first sentence "
        "comes 0-1 s after it is ready)"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = as_a_user({**os.environ, "NUMBA_CACHE_DIR": cache})
        batch_rate(env)  # fill the cache
        rates = [batch_rate(env) for _ in range(3)]
    print(
        f"hild sim odin --duration 60 --repeat {BATCH_RUNS}: "
        f"{statistics.median(rates):.1f} runs/s (median of 3, one process each, its start-up "
        "included)"
    )


if __name__ == "__main__":
    main()
