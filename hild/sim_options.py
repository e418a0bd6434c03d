"""`hild sim`'s command line: its parser, and the call of hild.sim (or hild.batch) with the
parsed options.

Light to import (`hild --help` builds every command's parser): the vessel model and numba load
only when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from hild.arguments import RUNS, SEED, number, output_file
from hild.model.layout import METHODS
from hild.profiles.vessel import PROFILES
from hild.profiles.weather import PRESETS
from hild.record.config import EXIT_RECORDING_FAILED
from hild.record.options import sim_recording_path

SECONDS = number("a number of seconds")
STEP = number(
    "a step in seconds",
    0.0,
    1.0,
    note="the integrators need steps well below the vessel's fastest time constant",
)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """`hild sim`'s parser, on the subparsers ``sub`` of `hild`."""
    sim = sub.add_parser(
        "sim",
        help="run a vessel model faster than real time",
        description="Run a vessel profile faster than real time and print a summary; "
        f"built-in profiles: {PROFILES.listing()}.",
    )
    sim.add_argument("profile", help="profile name (e.g. odin) or path to a profile TOML")
    sim.add_argument("--duration", type=SECONDS, required=True, metavar="SECONDS")
    _add_model_options(sim)
    _add_output_options(sim)
    _add_weather_options(sim)
    sim.set_defaults(handler=run)
    return sim


def _add_model_options(sim: argparse.ArgumentParser) -> None:
    sim.add_argument(
        "--dt",
        type=STEP,
        default=0.01,
        metavar="SECONDS",
        help="step, up to 1 s and to the vessel's stable limit, which a longer "
        "step's error names (0.01)",
    )
    sim.add_argument("--method", choices=tuple(METHODS), default="rk4")
    sim.add_argument(
        "--cmd",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="actuator command for the whole run, e.g. port.rpm=1500 (repeatable)",
    )
    sim.add_argument(
        "--schedule",
        type=Path,
        action="append",
        default=[],
        metavar="FILE.csv",
        help="t,name,value rows; repeatable: a batch runs each schedule in turn",
    )


def _add_output_options(sim: argparse.ArgumentParser) -> None:
    sim.add_argument(
        "--out",
        type=output_file("the trajectory"),
        metavar="FILE.csv",
        help="write the trajectory here (its folder made if missing)",
    )
    sim.add_argument(
        "--record",
        type=sim_recording_path,
        metavar="FILE.mcap",
        help="record the run as `hild run --record` does, a sample every "
        "--output-interval; {profile} and {utc} in the name become the profile's "
        "name and the time the sim started",
    )
    sim.add_argument(
        "--output-interval",
        type=SECONDS,
        default=0.1,
        metavar="SECONDS",
        help="time between rows of --out (0.1)",
    )


def _add_weather_options(sim: argparse.ArgumentParser) -> None:
    sim.add_argument(
        "--weather",
        default="calm",
        metavar="PRESET",
        help="weather preset name or TOML file (calm); presets: " + PRESETS.listing(),
    )
    sim.add_argument("--seed", type=SEED, default=0, help="random seed of the weather (0)")
    sim.add_argument(
        "--repeat",
        type=RUNS,
        default=1,
        metavar="N",
        help="a batch in one process: N runs with seeds SEED ... SEED+N-1 (of each "
        "--schedule), one JSON line per run on stdout, the runs per second on "
        "stderr; --out and --record files are named per run (1)",
    )


def run(args: argparse.Namespace) -> int:
    """`hild sim`: one run and its summary, or a batch (--repeat, several --schedule)."""
    options = dict(
        dt=args.dt,
        method=args.method,
        commands=args.cmd,
        output_interval=args.output_interval,
        weather=args.weather,
    )
    if args.repeat > 1 or len(args.schedule) > 1:
        from hild.batch import run_batch  # the vessel model and numba: not for --help

        return run_batch(
            args.profile,
            args.duration,
            seed=args.seed,
            repeat=args.repeat,
            schedules=args.schedule,
            out=args.out,
            record=args.record,
            **options,
        )
    from hild.sim import run_sim, summary_text

    summary = run_sim(
        args.profile,
        args.duration,
        seed=args.seed,
        schedule=args.schedule[0] if args.schedule else None,
        out=args.out,
        record=args.record,
        **options,
    )
    sys.stdout.write(summary_text(summary) + "\n")
    if summary.get("record", {}).get("error"):
        return EXIT_RECORDING_FAILED
    return 0
