"""What `hild check` asks of a scenario file beyond its tables: is it one, and can its
controller start (the check itself is hild/check.py's)."""

from __future__ import annotations

from pathlib import Path

from hild.config import ConfigError, load_toml, looks_like_path
from hild.profiles import BENCHES, SCENARIOS
from hild.scenario.controller import check_factory
from hild.scenario.file import Scenario


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
    for spec in scenario.controllers:  # (a fleet's: each boat's)
        check_factory(spec, scenario.file)
        if spec.kind == "command" and isinstance(spec.target, tuple) and "{" not in spec.target[0]:
            from hild.scenario.placeholders import check_program

            check_program(scenario, spec.target)
