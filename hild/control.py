"""Control records and the queue that carries them to the loop, applied between two ticks.

Nothing outside the loop writes the simulation's arrays: a decoded command or a watchdog's
safe state becomes a small immutable record here, and the loop drains the queue at a tick
boundary, so a run with the same seed and the same records at the same ticks repeats exactly.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

from hild.bus.mapping import Demand

QUEUE_RECORDS = 4096


@dataclass(frozen=True, slots=True)
class ActuatorCommand:
    """A valid command from one command device: demands for one or more actuators."""

    source: str  # the command device's name
    t_rx: float  # when its line was received [s, time.monotonic()]
    demands: tuple[Demand, ...]


@dataclass(frozen=True, slots=True)
class SafeState:
    """A command device's watchdog tripped: its actuators go to idle, neutral and zero thrust."""

    source: str
    t: float  # when the watchdog tripped [s, time.monotonic()]
    centre_angles: bool  # nozzles and azimuths centre (True) or hold where they are (False)


ControlRecord = ActuatorCommand | SafeState


class ControlQueue:
    """A bounded FIFO of control records: put() never waits; full drops the oldest, counted."""

    def __init__(self, maxlen: int = QUEUE_RECORDS):
        self._records: collections.deque[ControlRecord] = collections.deque()
        self._maxlen = maxlen
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._records)

    def put(self, record: ControlRecord) -> None:
        if len(self._records) >= self._maxlen:
            self._records.popleft()
            self.dropped += 1
        self._records.append(record)

    def drain(self) -> list[ControlRecord]:
        """Everything queued, oldest first, leaving the queue empty."""
        records = list(self._records)
        self._records.clear()
        return records
