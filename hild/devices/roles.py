"""The roles a device kind plays in a run, each a small protocol the world relies on.

A kind says its role once, in the registry (hild/devices/registry.py); nothing else asks a
device what class it is:

- ``SENSOR``: sampled on its epochs, it writes sentences from the truth (GPS, heading, ...);
- ``COMMANDS``: sampled on its epochs too (the actuators' feedback), and it takes the
  controller's commands from its ports, judged by a watchdog on simulated time;
- ``FRAMES``: it answers a simulator's frames (ArduPilot's SITL), which pace the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from hild.bus.device import BusStats
    from hild.bus.protocols import Protocol as BusProtocol
    from hild.bus.watchdog import Watchdog
    from hild.control import ActuatorCommand, ControlRecord, HeadingReference, SafeState
    from hild.sensors.device import DeviceConfig
    from hild.sensors.truth import Truth
    from hild.transport.base import Inbound
    from hild.transport.url import PortSpec

SENSOR = "sensor"
COMMANDS = "commands"
FRAMES = "frames"
ROLES = (SENSOR, COMMANDS, FRAMES)


@runtime_checkable
class Sampled(Protocol):
    """A device that speaks on its epochs: its lines for the truth at each."""

    config: DeviceConfig

    def sample(self, truth: Truth) -> list[bytes]: ...

    def bytes_per_s(self, utc: datetime, traffic: Any = ()) -> float: ...

    def describe(self) -> str:
        """What it is and says, for the banner: ``name (type: what)``."""
        ...

    def summary(self) -> dict: ...


@runtime_checkable
class TakesCommands(Sampled, Protocol):
    """A sampled device that also takes the controller's commands (the actuators' bus)."""

    checksum: str
    last_rejection: tuple[str, str] | None
    watchdog: Watchdog
    stats: BusStats
    heading_reference: HeadingReference | None  # the last applied (hild/control.py)
    protocols: tuple[BusProtocol, ...]

    def receive(
        self, inbound: Inbound, t: float | None = None
    ) -> ActuatorCommand | HeadingReference | None:
        """One received line at simulated time ``t``: a record for a valid one, else None."""
        ...

    def poll(self, now: float, put: Callable[[SafeState], None] | None = None) -> Any:
        """At a tick at simulated time ``now``: trip the watchdog when its lease ran out."""
        ...

    def neutral_line(self) -> bytes: ...


@runtime_checkable
class PacesFrames(Protocol):
    """A device whose peer's frames pace the loop: one frame, one step, answered first."""

    config: DeviceConfig

    def open(self, spec: PortSpec) -> None: ...

    def start(
        self, x: np.ndarray, act_state: np.ndarray, act_cmd: np.ndarray, dt: float
    ) -> None: ...

    def next_frame(self, put: Callable[[ControlRecord], None], step: int) -> Any: ...

    def answer(self, truth: Truth, step: int) -> None: ...

    def close(self) -> None: ...

    def describe(self) -> str: ...

    def summary(self) -> dict: ...
