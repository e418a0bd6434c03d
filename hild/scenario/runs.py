"""One run of a scenario, whichever its controller: in lockstep (pilot, python) or external."""

from __future__ import annotations

from collections.abc import Sequence

from hild.observers import TickObserver
from hild.scenario.file import Scenario
from hild.scenario.lockstep import run_lockstep
from hild.scenario.track import RunResult


def run_scenario(
    scenario: Scenario, keep_track: bool = False, observers: Sequence[TickObserver] = ()
) -> RunResult:
    if scenario.controller.kind == "command":
        from hild.scenario.external import run_external

        return run_external(scenario, keep_track=keep_track)
    return run_lockstep(scenario, keep_track, observers)
