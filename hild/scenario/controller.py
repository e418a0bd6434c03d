"""The controller under test, in the run's process: the protocol, the pilot, a user's factory.

A controller in the same process as the simulation is stepped in lockstep: no sockets, no
clock. At each step it is given the simulated time and the sentences its wires would have
carried since the last step (the sensors' epochs and the command device's feedback, each a
line of bytes without its CR LF), and it answers with the command sentences it sends (lines
of bytes, with or without CR LF). It is stepped whenever sentences arrive, and at least
every ``1 / rate_hz`` seconds of simulated time (``[controller] rate_hz``) so that it can
re-send its commands to keep the watchdog's lease, as a controller on a bench does.

    def factory(context: ControllerContext) -> Controller

    class Controller(Protocol):
        def step(self, t: float, lines: Sequence[bytes]) -> Iterable[bytes]: ...
        def summary(self) -> dict: ...   # optional: kept in the run's report

A python controller's context also carries the lines decoded (``context.own.fix``, the boat's
own position, course, speed and heading; ``context.ais.targets``, the AIS targets), fed with
each step's lines before the step: the controller author's kit (hild/kit.py), which a
controller over a wire uses the same way.

hild's own pilot (``PilotController``) is written to this protocol and is the model for a
user's controller: the same code that speaks NMEA over a serial port on the bench runs in a
sweep, thousands of times faster than real time.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from hild.config import ConfigError
from hild.geodesy import Origin
from hild.kit import AisTargets, OwnShip
from hild.model.vessel import Vessel
from hild.nmea.decode import SentenceDecoder
from hild.pilot.actuation import Actuation
from hild.pilot.autopilot import Autopilot, NavFix, PilotConfig
from hild.pilot.fixes import FixAssembler, GeoFix
from hild.pilot.guidance import GuidanceConfig
from hild.pilot.wire import encoder_for, hsc
from hild.scenario.file import ControllerSpec

SETTLE_S = 0.25  # hild/pilot/fixes.py: a burst's sentences come within this of each other


@dataclass(frozen=True)
class ControllerWaypoint:
    latitude_deg: float
    longitude_deg: float
    north: float  # [m from the bench's origin]
    east: float
    speed: float  # [m/s] on the leg to it


@dataclass(frozen=True)
class ControllerContext:
    """What a controller is told at the start of a run (the mission and the boat)."""

    profile: str  # the vessel profile's name
    vessel: Vessel
    protocol: str  # iec, phldc or pydir: what the command device reads
    origin: Origin  # the bench's origin (the waypoints' north/east are from it)
    waypoints: tuple[ControllerWaypoint, ...]
    acceptance_m: float
    laps: int
    rate_hz: float
    heading_reference: bool = True
    options: dict[str, Any] = field(default_factory=dict)  # [controller.options]
    # The step's lines decoded (hild/kit.py), fed before each step of a python controller:
    # ``own.fix`` the boat's own GNSS and heading, ``ais.targets`` the AIS targets by MMSI.
    own: OwnShip = field(default_factory=OwnShip, compare=False)
    ais: AisTargets = field(default_factory=AisTargets, compare=False)


@runtime_checkable
class Controller(Protocol):
    def step(self, t: float, lines: Sequence[bytes]) -> Iterable[bytes]: ...


PYTHON_KEY = "controller.python"
FACTORY_EXPECTED = (
    '"package.module:factory": a module on Python\'s path (PYTHONPATH) and a '
    "callable in it that makes the controller"
)


class ControllerLoadError(ConfigError):
    """A python controller's factory that cannot be imported or called, or that makes no
    controller: bad input, named by the scenario file and ``controller.python``."""

    def __init__(self, file: str, target: str, problem: str):
        super().__init__(file, PYTHON_KEY, target, f"{FACTORY_EXPECTED} ({problem})")
        self.problem = problem  # (what went wrong alone: a sweep's workers say theirs)


def load_factory(target: str, file: str = "") -> Callable[[ControllerContext], Any]:
    """The callable named by "package.module:factory" (``file``: the scenario, for errors)."""
    module_name, _, name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # ImportError, or the module's own error at import
        raise ControllerLoadError(
            file, target, f"cannot import {module_name!r}: {type(e).__name__}: {e}"
        ) from None
    factory = getattr(module, name, None)
    if factory is None:
        raise ControllerLoadError(file, target, f"{module_name!r} has no {name!r}")
    if not callable(factory):
        raise ControllerLoadError(
            file, target, f"{target} is a {type(factory).__name__}, not a callable"
        )
    return factory


def check_factory(spec: ControllerSpec, file: str) -> None:
    """A python controller's factory is importable and callable: checked before a run."""
    if spec.kind == "python":
        assert isinstance(spec.target, str)
        load_factory(spec.target, file)


def make_controller(
    target: str,
    context: ControllerContext,
    file: str = "",
    call: Callable[[Callable[[], Any]], Any] = lambda make: make(),
) -> Controller:
    """The controller the factory makes; ``call`` calls the factory (a judge's, which times
    it and makes what it raises the controller's fault: hild/scenario/judge.py)."""
    factory = load_factory(target, file)
    controller = call(lambda: factory(context))
    if not callable(getattr(controller, "step", None)):
        raise ControllerLoadError(
            file,
            target,
            f"it returned a {type(controller).__name__}, which has no step(t, lines) method",
        )
    return controller


def controller_name(target: str) -> str:
    """A python controller as a message names it: "package.module:factory (its file)"."""
    module = sys.modules.get(target.partition(":")[0])
    where = getattr(module, "__file__", None)
    return f"{target} ({where})" if where else target


class PilotController:
    """hild's reference autopilot (hild pilot's control law) stepped in lockstep: decodes the
    sensor sentences into fixes, updates the autopilot on each, and answers with command
    sentences in the context's protocol (a neutral set first and while it has no fix)."""

    def __init__(self, context: ControllerContext):
        self.context = context
        self.encode = encoder_for(context.protocol, context.vessel)
        self.actuation = Actuation(context.vessel)
        self.neutral = self.encode(self.actuation.neutral())
        self.decoder = SentenceDecoder()
        self.assembler = FixAssembler(SETTLE_S)
        self.config = PilotConfig(
            speed_ref=context.waypoints[0].speed,
            guidance=GuidanceConfig(acceptance_radius_m=context.acceptance_m),
        )
        self.pilot: Autopilot | None = None
        self.origin: Origin | None = None
        self.t0 = 0.0
        self.latest: list[bytes] = self.neutral
        self.reference: bytes | None = None
        self.armed = False  # a neutral set went out before the first real command

    def step(self, t: float, lines: Sequence[bytes]) -> list[bytes]:
        fixes: list[GeoFix] = []
        for line in lines:
            reading = self.decoder.decode(line.decode("ascii", "replace").strip())
            if reading is not None:
                fixes += self.assembler.add(reading, t)
        # every sentence of this instant is in: the burst is complete (no wall clock to wait on)
        fixes += self.assembler.poll(t + 2 * SETTLE_S)
        for fix in fixes:
            self._on_fix(fix)
        out = list(self.latest)
        if not self.armed:
            out = [*self.neutral, *out] if self.latest is not self.neutral else out
            self.armed = self.latest is not self.neutral
        if self.reference is not None and self.context.heading_reference:
            out.append(self.reference)
        return out

    def _on_fix(self, fix: GeoFix) -> None:
        if self.pilot is None:
            self.origin = Origin(fix.latitude_deg, fix.longitude_deg)
            self.t0 = fix.time_s
            points = []
            for wp in self.context.waypoints:
                north, east, _ = self.origin.to_ned(wp.latitude_deg, wp.longitude_deg)
                points.append((north, east))
            self.pilot = Autopilot(self.config, points, self.context.laps)
        assert self.origin is not None
        north, east, _ = self.origin.to_ned(fix.latitude_deg, fix.longitude_deg)
        tracker = self.pilot.tracker
        if tracker is not None and not tracker.finished:  # the speed of the leg under way
            speed = self.context.waypoints[tracker.target_index].speed
            if speed != self.pilot.config.speed_ref:
                self.pilot.config = replace(self.pilot.config, speed_ref=speed)
        step = self.pilot.update(
            NavFix(fix.time_s - self.t0, north, east, fix.heading, fix.sog, fix.cog)
        )
        if step.finished:
            self.latest, self.reference = self.neutral, None
            return
        self.latest = self.encode(self.actuation.setpoints(step.demand))
        self.reference = hsc(step.heading_ref) if step.heading_ref is not None else None

    def summary(self) -> dict:
        d = self.decoder
        base = self.pilot.summary() if self.pilot is not None else {"completed": False}
        return {**base, "sentences": d.used, "ignored": d.ignored, "malformed": d.malformed}
