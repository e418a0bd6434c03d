"""Python controllers for scenario tests, written to hild's in-process controller protocol
(hild/scenario/controller.py): ``factory(context) -> object with step(t, lines)``."""

from __future__ import annotations

from collections.abc import Sequence

from hild.scenario.controller import ControllerContext, PilotController


class FallsSilent:
    """hild's pilot until ``options.silent_after_s``, then nothing at all (a hung controller)."""

    def __init__(self, context: ControllerContext):
        self.pilot = PilotController(context)
        self.silent_after_s = float(context.options.get("silent_after_s", 30.0))
        self.steps = 0

    def step(self, t: float, lines: Sequence[bytes]) -> list[bytes]:
        self.steps += 1
        commands = self.pilot.step(t, lines)
        return [] if t >= self.silent_after_s else commands

    def summary(self) -> dict:
        return {"steps": self.steps, "silent_after_s": self.silent_after_s}


def falls_silent(context: ControllerContext) -> FallsSilent:
    return FallsSilent(context)


class Recorder:
    """Sends nothing; keeps what it was given, to check what the wires carried."""

    def __init__(self, context: ControllerContext):
        self.context = context
        self.calls: list[tuple[float, list[bytes]]] = []

    def step(self, t: float, lines: Sequence[bytes]) -> list[bytes]:
        self.calls.append((t, list(lines)))
        return []


RECORDERS: list[Recorder] = []


def recorder(context: ControllerContext) -> Recorder:
    r = Recorder(context)
    RECORDERS.append(r)
    return r


def not_a_controller(context: ControllerContext) -> object:
    return object()
