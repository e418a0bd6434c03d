"""`hild scenario`'s command line (command.py runs it).

Light to import (`hild --help` builds every command's parser): the scenario runs, and the
compiled core they bring, load only when the command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hild.arguments import JUNIT_FILE, SEED, output_file
from hild.record.options import recording_name

# What matplotlib (>= 3.8) writes a report page as without LaTeX: the suffix picks the format.
REPORT_SUFFIXES = (
    ".png",
    ".pdf",
    ".svg",
    ".svgz",
    ".eps",
    ".ps",
    ".jpg",
    ".jpeg",
    ".tif",
    ".tiff",
    ".webp",
)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """`hild scenario`'s parser, on the subparsers ``sub`` of `hild`; returns that of `hild
    scenario run`, the command that takes options."""
    scenario = sub.add_parser(
        "scenario",
        help="run a scenario: a bench, a mission and a controller under test, with a verdict",
        description="Scenarios (hild show scenario): a bench, a mission, the controller under "
        "test (hild's pilot or a Python controller in lockstep, or an external program on the "
        "run's ports) and criteria; the verdict passes only if every criterion holds. Exit 0 "
        "pass, 1 fail, 2 bad input.",
    )
    scenario.set_defaults(handler=run)
    scenario_sub = scenario.add_subparsers(dest="scenario_command", required=True)
    return _add_run_parser(scenario_sub)


def _add_run_parser(scenario_sub: Any) -> argparse.ArgumentParser:
    scenario_run = scenario_sub.add_parser(
        "run",
        help="run a scenario once and judge it",
        description="Run a scenario once and print its verdict: each criterion, its value "
        "against its threshold, by how much and when it failed. Exit 0 pass, 1 fail, 2 bad "
        "input. Built-in scenarios: see hild show scenario.",
    )
    scenario_run.add_argument("scenario", help="scenario file, or a built-in scenario name")
    scenario_run.add_argument("--seed", type=SEED, help="the run's seed (the bench's seed)")
    scenario_run.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a value by its key path, as a sweep does, e.g. "
        "weather.wind_speed=12 (a TOML value; repeatable)",
    )
    _add_outputs(scenario_run)
    return scenario_run


def _add_outputs(scenario_run: argparse.ArgumentParser) -> None:
    scenario_run.add_argument(
        "--junit",
        metavar="FILE.xml",
        type=JUNIT_FILE,
        help="write the verdict as a JUnit XML report (for CI)",
    )
    scenario_run.add_argument(
        "--report",
        metavar="FILE.png",
        type=output_file("the report", REPORT_SUFFIXES),
        help="write a one-page report: the track with the mission, "
        "targets and closest approaches, and the criteria; its suffix "
        f"picks the format: {', '.join(REPORT_SUFFIXES)}",
    )
    scenario_run.add_argument(
        "--record",
        metavar="FILE.mcap",
        type=recording_name,
        help="record the run as hild run --record does",
    )
    scenario_run.add_argument(
        "--output-dir",
        metavar="DIR",
        type=Path,
        help="an external controller's output and the run's log go "
        "here (default: a new temporary folder)",
    )
    scenario_run.add_argument(
        "--json", action="store_true", help="print the result as one JSON line instead of a table"
    )


def run(args: argparse.Namespace) -> int:
    """`hild scenario run`."""
    from hild.scenario.command import run_scenario_command  # the compiled core: not for --help

    return run_scenario_command(args)
