"""Python controllers for scenario tests, written to hild's in-process controller protocol
(hild/scenario/controller.py): ``factory(context) -> object with step(t, lines)``."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

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


MADE: list[Misbehaves] = []  # every one made, to look at after its run


class Misbehaves:
    """hild's pilot until ``options.after_s`` (0), then what ``options.mode`` says: "sleeps"
    (``options.sleep_s``, 30 s), "spins" (a loop of Python, as long), "raises", "floods"
    (100,000 lines), "streams" (a generator without end), "none", "number", "text", "texts"
    (a list of str); "ok": the pilot throughout. "summary": a summary() that raises."""

    def __init__(self, context: ControllerContext):
        self.pilot = PilotController(context)
        self.mode = str(context.options.get("mode", "ok"))
        self.after_s = float(context.options.get("after_s", 0.0))
        self.sleep_s = float(context.options.get("sleep_s", 30.0))
        self.steps = 0
        self.woke = False  # a sleep or a loop came to its end
        self.stopped = False  # a loop was stopped by an exception raised into it
        MADE.append(self)

    def step(self, t: float, lines: Sequence[bytes]) -> object:
        self.steps += 1
        commands = self.pilot.step(t, lines)
        if t < self.after_s or self.mode in ("ok", "summary"):
            return commands
        return getattr(self, f"_{self.mode}")(commands)

    def _sleeps(self, commands: list[bytes]) -> list[bytes]:
        time.sleep(self.sleep_s)
        self.woke = True
        return commands

    def _spins(self, commands: list[bytes]) -> list[bytes]:
        end = time.monotonic() + self.sleep_s
        try:
            while time.monotonic() < end:
                pass
        except BaseException:
            self.stopped = True
            raise
        self.woke = True
        return commands

    def _raises(self, commands: list[bytes]) -> list[bytes]:
        return commands[: 1 // (self.steps - self.steps)]

    def _floods(self, commands: list[bytes]) -> list[bytes]:
        return [commands[0]] * 100_000

    def _streams(self, commands: list[bytes]) -> Iterator[bytes]:
        while True:
            yield from commands

    def _none(self, commands: list[bytes]) -> None:
        return None

    def _number(self, commands: list[bytes]) -> int:
        return len(commands)

    def _text(self, commands: list[bytes]) -> str:
        return b"".join(commands).decode()

    def _texts(self, commands: list[bytes]) -> list[str]:
        return [line.decode() for line in commands]

    def summary(self) -> dict:
        if self.mode == "summary":
            raise RuntimeError("no summary today")
        return {"steps": self.steps}


def misbehaves(context: ControllerContext) -> Misbehaves:
    return Misbehaves(context)


def factory_raises(context: ControllerContext) -> object:
    raise KeyError("no such vessel model")


def factory_sleeps(context: ControllerContext) -> object:
    time.sleep(30.0)
    return Recorder(context)
