"""One scenario run, whatever its controller: in lockstep (pilot, python) or external (command).

The CLI and the sweep call ``run_scenario``; nothing else here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hild.observers import TickObserver
from hild.scenario.file import Scenario
from hild.scenario.track import RunResult


def run_scenario(
    scenario: Scenario,
    keep_track: bool = False,
    output_dir: Path | str | None = None,
    observers: Sequence[TickObserver] = (),
) -> RunResult:
    """Run the scenario once and judge it. ``output_dir``: where an external controller's
    output and the daemon's log go (a new temporary directory when None); lockstep runs
    write nothing. ``observers``: tick observers of the run (a recorder, the report's target
    tracks), in either driver."""
    if scenario.is_fleet and scenario.controller.kind != "command":
        from hild.scenario.fleet_lockstep import run_fleet_lockstep

        return run_fleet_lockstep(scenario, keep_track, observers)
    if scenario.controller.kind == "command":
        from hild.scenario.external import run_external  # (the daemon: only when needed)

        return run_external(
            scenario, keep_track=keep_track, output_dir=output_dir, observers=observers
        )
    from hild.scenario.lockstep import run_lockstep

    return run_lockstep(scenario, keep_track, observers)
