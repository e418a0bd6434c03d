"""`hild sweep`'s command line (command.py runs it).

Light to import (`hild --help` builds every command's parser): Dask, Parquet and the compiled
core load only when the command runs.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from hild.arguments import JUNIT_FILE, RUNS, output_file, output_folder, whole_number

# A local cluster's workers: a run is single-threaded, so more than a few per core only wait
# their turn, each a process with its own copy of hild and the compiled kernels.
WORKERS_PER_CORE = 4
CORES = os.cpu_count() or 1
MAX_WORKERS = WORKERS_PER_CORE * CORES
WORKERS = whole_number(
    "a number of worker processes",
    1,
    MAX_WORKERS,
    note=f"at most {WORKERS_PER_CORE} per core; {CORES} here",
)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """`hild sweep`'s parser, on the subparsers ``sub`` of `hild`."""
    sweep = sub.add_parser(
        "sweep",
        help="run a scenario many times over a [sweep] of parameters, on Dask",
        description="Run a scenario's [sweep]: grids, lists or random samples of seeds and of "
        "any weather, traffic, mission or device value, on a local Dask cluster sized to the "
        "machine or on an existing one (--scheduler). Results stream into one Parquet table "
        "(a row per run); exit 0 if every run passed, 1 if any failed, 2 on bad input.",
    )
    sweep.add_argument("scenario", help="scenario file with a [sweep] table, or a built-in name")
    _add_cluster_options(sweep)
    _add_run_options(sweep)
    sweep.set_defaults(handler=run)
    return sweep


def _add_cluster_options(sweep: argparse.ArgumentParser) -> None:
    sweep.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="an existing Dask scheduler, tcp://HOST:PORT (or tls://, ws://, "
        "wss://, ucx://), e.g. tcp://lab-1:8786 (default: "
        "$DASK_SCHEDULER_ADDRESS, else a local cluster)",
    )
    sweep.add_argument(
        "--workers",
        type=WORKERS,
        metavar="N",
        help=f"local cluster: N worker processes, at most {WORKERS_PER_CORE} per core "
        f"({MAX_WORKERS} here) (default: one per core)",
    )


def _add_run_options(sweep: argparse.ArgumentParser) -> None:
    sweep.add_argument(
        "--out",
        type=output_file("the results table"),
        metavar="FILE.parquet",
        help="the results table (default: the sweep's name.parquet)",
    )
    sweep.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted sweep: runs already in --out are not run again",
    )
    sweep.add_argument(
        "--runs",
        type=RUNS,
        metavar="N",
        help="run only the first N runs of the sweep (a quick look)",
    )
    sweep.add_argument(
        "--junit",
        metavar="FILE.xml",
        type=JUNIT_FILE,
        help="write every run's verdict as a JUnit XML report (for CI)",
    )
    sweep.add_argument(
        "--plots",
        metavar="DIR",
        type=output_folder("the plots"),
        help="write plots of the metrics against the parameters here",
    )
    sweep.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """`hild sweep`."""
    from hild.sweep.command import run_sweep_command  # Dask and the compiled core: not for --help

    return run_sweep_command(args)
