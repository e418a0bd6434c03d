"""Applying control records to the actuator commands: the most recent valid source commands.

Several command devices may drive one vessel (a primary and a backup line, or throttles on
one line and steering on another). Each part of an actuator (speed, angle, deflector) follows
whichever device last sent it a valid demand; a device whose watchdog trips puts into the
safe state only the parts it commands at that moment, so a line that is still alive keeps
its own.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hild.bus.mapping import idle_speed
from hild.control import ActuatorCommand, ActuatorFault, ControlRecord, SafeState
from hild.model import layout as L
from hild.model.vessel import ActuatorSpec


class Arbiter:
    """Writes demands into the command array ``act_cmd`` (layout: S_* per actuator)."""

    def __init__(self, specs: Sequence[ActuatorSpec], act_cmd: np.ndarray, act_state: np.ndarray):
        self.specs = specs
        self.act_cmd = act_cmd
        self.act_state = act_state
        # who last commanded each slot of act_cmd (speed, angle, deflector per actuator)
        self.owner: list[str | None] = [None] * (len(specs) * L.S_SIZE)
        self.commands = 0  # commands applied since start
        self.safe_states = 0  # watchdog safe states applied since start
        self.faulty: dict[int, str] = {}  # actuator index -> "stuck" or "lost"

    def apply(self, record: ControlRecord) -> None:
        if isinstance(record, ActuatorCommand):
            self._command(record)
            self.commands += 1
        elif isinstance(record, SafeState):
            self._safe(record)
            self.safe_states += 1
        elif isinstance(record, ActuatorFault):
            self._fault(record)

    def _fault(self, record: ActuatorFault) -> None:
        index = record.actuator
        base = index * L.S_SIZE
        if record.kind == "clear":
            self.faulty.pop(index, None)
            return
        self.faulty[index] = record.kind
        if record.kind == "stuck":  # the commands follow the state: it stays where it is
            self.act_cmd[base : base + L.S_SIZE] = self.act_state[base : base + L.S_SIZE]
        else:  # lost: the engine or motor gives no thrust (idle, deflector neutral)
            self._no_thrust(self.specs[index], speed=True, deflector=True)

    def _no_thrust(self, spec: ActuatorSpec, speed: bool, deflector: bool) -> None:
        """Idle speed and a neutral deflector (zero thrust), for the parts asked."""
        base = spec.index * L.S_SIZE
        if speed:
            self.act_cmd[base + L.S_SPEED] = idle_speed(spec.speed_range)
        if deflector and spec.has_deflector:
            self.act_cmd[base + L.S_DEFLECTOR] = 0.0

    def _command(self, record: ActuatorCommand) -> None:
        cmd, owner = self.act_cmd, self.owner
        for d in record.demands:
            if d.actuator in self.faulty:
                continue
            base = d.actuator * L.S_SIZE
            for slot, value in (
                (L.S_SPEED, d.speed),
                (L.S_ANGLE, d.angle),
                (L.S_DEFLECTOR, d.deflector),
            ):
                if value is not None:
                    cmd[base + slot] = value
                    owner[base + slot] = record.source

    def _safe(self, record: SafeState) -> None:
        cmd, source = self.act_cmd, record.source
        for spec in self.specs:
            if spec.index in self.faulty:
                continue
            base = spec.index * L.S_SIZE
            self._no_thrust(
                spec,
                speed=self.owner[base + L.S_SPEED] == source,
                deflector=self.owner[base + L.S_DEFLECTOR] == source,
            )
            if spec.angle_kind != "none" and self.owner[base + L.S_ANGLE] == source:
                held = self.act_state[base + L.S_ANGLE]
                cmd[base + L.S_ANGLE] = 0.0 if record.centre_angles else held
