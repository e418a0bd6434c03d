"""`hild check` for a scenario file: its own tables, its bench's, and its sweep's."""

from __future__ import annotations

import sys
from pathlib import Path

from hild.config import ConfigError, load_toml, looks_like_path
from hild.profiles import BENCHES, SCENARIOS
from hild.scenario.controller import check_factory
from hild.scenario.file import Scenario, load_scenario


def is_scenario(name_or_path: str | None) -> bool:
    """A file with a [scenario] table, or a name that is a scenario's and not a bench's."""
    if name_or_path is None:
        return False
    candidate = Path(name_or_path)
    if looks_like_path(name_or_path):
        try:
            return "scenario" in load_toml(candidate)
        except ConfigError:
            return False  # the bench's check says what is wrong with the file
    if BENCHES.builtin_path(name_or_path).is_file():
        return False
    return SCENARIOS.builtin_path(name_or_path).is_file() or any(
        (folder / f"{name_or_path}.toml").is_file() for folder in SCENARIOS.folders()
    )


def check_controller(scenario: Scenario) -> None:
    """A python controller's factory imports; a command's program, when its name holds no
    placeholder (one that does is checked once filled in, before the run), can be started."""
    spec = scenario.controller
    check_factory(spec, scenario.file)
    if spec.kind == "command" and isinstance(spec.target, tuple) and "{" not in spec.target[0]:
        from hild.scenario.placeholders import check_program

        check_program(scenario, spec.target)


def check_scenario(name_or_path: str) -> int:
    """Validate a scenario (and its sweep) and say what it would run; errors raise."""
    scenario = load_scenario(name_or_path)
    check_controller(scenario)
    bench, mission, spec = scenario.bench, scenario.mission, scenario.controller
    criteria = [name for name, value in vars(scenario.criteria).items()
                if value not in (None, False)]  # fmt: skip
    controller = {"pilot": "hild's pilot in lockstep", "python": f"{spec.target} in lockstep",
                  "command": f"the program {' '.join(spec.target or ())!r}"}[spec.kind]  # fmt: skip
    out = sys.stdout
    out.write(f"{scenario.file}: OK: scenario '{scenario.name}': {bench.profile} in "
              f"{bench.weather.preset} weather, {len(bench.traffic)} target(s), "
              f"{len(mission.waypoints)} waypoint(s) x {mission.laps} lap(s), "
              f"{scenario.duration_s:g} s; controller: {controller} by {spec.protocol} to "
              f"{spec.device}; criteria: {', '.join(criteria) or 'none'}\n")  # fmt: skip
    if "sweep" in scenario.document:
        from hild.sweep.plan import check_runs, plan_sweep

        plan = plan_sweep(scenario)
        check_runs(scenario, plan)
        swept = ", ".join(plan.paths) or "seeds only"
        out.write(f"  sweep '{plan.name}': {len(plan.runs)} run(s), {plan.mode} over {swept}, "
                  f"{plan.seeds} seed(s) each, sweep seed {plan.seed}\n")  # fmt: skip
    return 0
