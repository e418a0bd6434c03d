"""Applying control records to the actuator commands: the most recent valid source commands.

Several command devices may drive one vessel (a primary and a backup line). Each actuator
follows whichever device last sent it a valid demand; a device whose watchdog trips puts into
the safe state only the actuators it commands at that moment, so a backup line that is still
alive keeps its own.
"""

from __future__ import annotations

import numpy as np

from hild.bus.mapping import idle_speed
from hild.control import ActuatorCommand, ControlRecord, SafeState
from hild.model import layout as L
from hild.model.profile import ActuatorSpec


class Arbiter:
    """Writes demands into the command array ``act_cmd`` (layout: S_* per actuator)."""

    def __init__(self, specs: list[ActuatorSpec], act_cmd: np.ndarray, act_state: np.ndarray):
        self.specs = specs
        self.act_cmd = act_cmd
        self.act_state = act_state
        self.owner: list[str | None] = [None] * len(specs)
        self.commands = 0  # commands applied since start
        self.safe_states = 0  # watchdog safe states applied since start

    def apply(self, record: ControlRecord) -> None:
        if isinstance(record, ActuatorCommand):
            self._command(record)
            self.commands += 1
        elif isinstance(record, SafeState):
            self._safe(record)
            self.safe_states += 1

    def _command(self, record: ActuatorCommand) -> None:
        cmd = self.act_cmd
        for d in record.demands:
            base = d.actuator * L.S_SIZE
            if d.speed is not None:
                cmd[base + L.S_SPEED] = d.speed
            if d.angle is not None:
                cmd[base + L.S_ANGLE] = d.angle
            if d.deflector is not None:
                cmd[base + L.S_DEFLECTOR] = d.deflector
            self.owner[d.actuator] = record.source

    def _safe(self, record: SafeState) -> None:
        cmd = self.act_cmd
        for spec in self.specs:
            if self.owner[spec.index] != record.source:
                continue
            base = spec.index * L.S_SIZE
            cmd[base + L.S_SPEED] = idle_speed(spec.speed_range)
            if spec.has_deflector:
                cmd[base + L.S_DEFLECTOR] = 0.0
            if spec.angle_kind != "none":
                held = self.act_state[base + L.S_ANGLE]
                cmd[base + L.S_ANGLE] = 0.0 if record.centre_angles else held
