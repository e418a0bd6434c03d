"""Control records and the queue that carries them to the loop, applied between two ticks.

Nothing outside the loop writes the simulation's arrays: a decoded command, a controller's
heading reference or a watchdog's safe state becomes a small immutable record here, and the
loop drains the queue at a tick boundary, so a run with the same seed and the same records at
the same ticks repeats exactly.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hild.bus.mapping import Demand
from hild.sensors.faults import FaultSpec

if TYPE_CHECKING:
    from hild.environment.environment import Environment

QUEUE_RECORDS = 4096


@dataclass(frozen=True, slots=True)
class ActuatorCommand:
    """A valid command from one command device: demands for one or more actuators."""

    source: str  # the command device's name
    t_rx: float  # when its line was received [s, time.monotonic()]
    demands: tuple[Demand, ...]


@dataclass(frozen=True, slots=True)
class HeadingReference:
    """The heading a controller steers to (an HSC sentence): moves no actuator, renews no lease.

    Applied between ticks like a command, so the recorder and the mirror see the reference the
    loop had at each tick, never one from inside it.
    """

    source: str  # the command device's name
    t_rx: float  # when its line was received [s, time.monotonic()]
    heading: float  # heading to steer [rad, true, 0 .. 2 pi)


@dataclass(frozen=True, slots=True)
class SafeState:
    """A command device's watchdog tripped: its actuators go to idle, neutral and zero thrust."""

    source: str
    t: float  # when the watchdog tripped [s, time.monotonic()]
    centre_angles: bool  # nozzles and azimuths centre (True) or hold where they are (False)


@dataclass(frozen=True, slots=True)
class WeatherChange:
    """A new weather, its environment built off the tick and continuing the running one's."""

    environment: Environment


@dataclass(frozen=True, slots=True)
class SensorFault:
    """Add a fault to a sensor device, or (``fault`` None) clear those added at run time."""

    device: str
    fault: FaultSpec | None


ACTUATOR_FAULTS = ("stuck", "lost", "clear")


@dataclass(frozen=True, slots=True)
class ActuatorFault:
    """stuck: the actuator holds where it is; lost: it gives no thrust; clear: it obeys again.

    A faulty actuator ignores every command and safe state until cleared.
    """

    actuator: int  # index in the vessel's actuators
    kind: str  # one of ACTUATOR_FAULTS


@dataclass(frozen=True, slots=True)
class Reposition:
    """Move the vessel: NED position [m], heading [rad] and surge speed [m/s], None: keep."""

    north: float
    east: float
    heading: float | None = None
    speed: float | None = None


ControlRecord = (
    ActuatorCommand
    | HeadingReference
    | SafeState
    | WeatherChange
    | SensorFault
    | ActuatorFault
    | Reposition
)


class ControlQueue:
    """A bounded FIFO of control records: put() never waits; full drops the oldest, counted."""

    def __init__(self, maxlen: int = QUEUE_RECORDS):
        self._records: collections.deque[ControlRecord] = collections.deque(maxlen=maxlen)
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._records)

    def put(self, record: ControlRecord) -> None:
        """On the loop. Only the tick thread takes records out: a full deque drops its oldest
        itself as this one goes in, so put never pops (and never races the drain)."""
        if len(self._records) == self._records.maxlen:
            self.dropped += 1
        self._records.append(record)

    def drain(self) -> list[ControlRecord]:
        """Everything queued, oldest first, leaving the queue empty. The loop puts while the
        tick thread drains: each record is taken by popleft, so none put meanwhile is lost."""
        records = []
        while self._records:
            records.append(self._records.popleft())
        return records
