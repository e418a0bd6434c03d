"""`hild scenario run`: one run of a scenario, its verdict, and the reports asked for.

Exit status: 0 when every criterion holds, 1 when one fails or the controller failed the run
(it raised, overran a time limit, flooded: said on stderr too), 2 for bad input (raised as a
ConfigError and reported by hild/cli.py).
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from typing import Any

import numpy as np

from hild.arguments import check_writable
from hild.config import MAX_NESTING, NESTING_EXPECTED, ConfigError, nesting
from hild.log import configure_logging, write_or_drop
from hild.observers import RunView, TickObserver
from hild.record.config import RecordConfig
from hild.record.observer import Recorder
from hild.scenario.controller import check_factory
from hild.scenario.file import Scenario, load_scenario
from hild.scenario.report import junit_xml, report_page, result_json, verdict_text
from hild.scenario.runs import run_scenario

TARGET_SAMPLE_S = 1.0  # the report's target tracks: a point a second


def parse_settings(texts: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs, each VALUE a TOML value (a bare word is taken as a string)."""
    out: dict[str, Any] = {}
    for text in texts:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--set", "", text, "KEY=VALUE, e.g. weather.wind.speed=12")
        try:
            parsed = tomllib.loads(f"v = {value.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            parsed = value.strip()
        except RecursionError:
            parsed = None
        if parsed is None or nesting(parsed) > MAX_NESTING:
            raise ConfigError("--set", key.strip(), value.strip(), NESTING_EXPECTED)
        out[key.strip()] = parsed
    return out


def scenario_for(name_or_path: str, seed: int | None, settings: dict[str, Any]) -> Scenario:
    scenario = load_scenario(name_or_path)
    values = dict(settings)
    if seed is not None:
        values["bench.seed"] = seed
    return scenario.with_values(values) if values else scenario


class TargetTracks(TickObserver):
    """Each traffic target's position once a second, for the report's page."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[float, float, float]]] = {}
        self._due = 0.0

    def on_tick(self, run: RunView, t: float) -> None:
        if t + 1e-9 < self._due:
            return
        traffic = run.traffic()  # (a copy: only once a second)
        if traffic is None:
            return
        self._due += TARGET_SAMPLE_S
        for target, row in zip(traffic.targets, traffic.state, strict=True):
            self.rows.setdefault(target.name, []).append((t, float(row[0]), float(row[1])))

    def arrays(self) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        out = {}
        for name, rows in self.rows.items():
            a = np.array(rows)
            out[name] = (a[:, 0], a[:, 1], a[:, 2])
        return out


def run_scenario_command(args: argparse.Namespace) -> int:
    configure_logging(level="warning")  # the verdict on stdout; only trouble on stderr
    scenario = scenario_for(args.scenario, args.seed, parse_settings(args.set))
    for spec in scenario.controllers:  # (a fleet's: each boat's)
        check_factory(spec, scenario.file)
    # the reports asked for can be written: said before the run, not after it
    reports = (("--junit", args.junit), ("--report", args.report))
    check_writable([(option, path, False) for option, path in reports if path is not None])
    observers: list[TickObserver] = []
    tracks = None
    if args.report is not None:
        tracks = TargetTracks()
        observers.append(tracks)
    if args.record is not None:
        # as `hild run --record` records: the bench's [record] table's rate and log, if any
        config = RecordConfig.chosen(scenario.bench.record, args.record, scenario.bench.rate_hz)
        assert config is not None  # (a file was given)
        # lossless in lockstep (no clock to keep); an external run records as `hild run` does
        observers.append(Recorder(config, lossless=scenario.controller.kind != "command"))
    result = run_scenario(
        scenario,
        keep_track=args.report is not None,
        output_dir=args.output_dir,
        observers=observers,
    )
    if result.fault is not None:  # (stdout's verdict says it too; stderr is what CI shows)
        write_or_drop(sys.stderr, f"hild: {scenario.file}: {result.fault}\n")
    if args.json:
        write_or_drop(sys.stdout, result_json(scenario, result) + "\n")
    else:
        write_or_drop(sys.stdout, verdict_text(scenario, result) + "\n")
    if args.junit is not None:
        junit_xml(
            f"hild.scenario.{scenario.name}",
            [(f"{scenario.name} seed {result.seed}", result)],
            args.junit,
        )
    if args.report is not None:
        report_page(scenario, result, tracks.arrays() if tracks else {}, args.report)
    return 0 if result.passed else 1
