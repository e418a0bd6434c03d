"""The `hild` command line: `hild sim` now; `run` and `check` arrive with the daemon."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hild import __version__
from hild.config import ConfigError
from hild.model.integrators import METHODS
from hild.model.profile import available_profiles
from hild.model.simulation import CommandError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hild", description="Hardware-in-the-loop emulator for unmanned surface vessels."
    )
    parser.add_argument("--version", action="version", version=f"hild {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser(
        "sim",
        help="run a vessel model faster than real time",
        description="Run a vessel profile faster than real time and print a summary; "
        f"built-in profiles: {', '.join(available_profiles())}.",
    )
    sim.add_argument("profile", help="profile name (e.g. odin) or path to a profile TOML")
    sim.add_argument("--duration", type=float, required=True, metavar="SECONDS")
    sim.add_argument("--dt", type=float, default=0.01, metavar="SECONDS", help="step (0.01)")
    sim.add_argument("--method", choices=tuple(METHODS), default="rk4")
    sim.add_argument(
        "--cmd", action="append", default=[], metavar="NAME=VALUE",
        help="actuator command for the whole run, e.g. port.rpm=1500 (repeatable)",
    )  # fmt: skip
    sim.add_argument("--schedule", type=Path, metavar="FILE.csv", help="t,name,value rows")
    sim.add_argument("--out", type=Path, metavar="FILE.csv", help="write the trajectory here")
    sim.add_argument(
        "--output-interval", type=float, default=0.1, metavar="SECONDS",
        help="time between rows of --out (0.1)",
    )  # fmt: skip
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "sim":
            from hild.sim import run_sim, summary_text

            summary = run_sim(
                args.profile, args.duration, dt=args.dt, method=args.method,
                commands=args.cmd, schedule=args.schedule, out=args.out,
                output_interval=args.output_interval,
            )  # fmt: skip
            sys.stdout.write(summary_text(summary) + "\n")
    except (ConfigError, CommandError) as e:
        sys.stderr.write(f"hild: error: {e}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
