"""Sensor faults scheduled in the bench file: dropout, freeze, invalid fix, bias jump."""

from __future__ import annotations

import math
from dataclasses import dataclass

FAULT_KINDS = ("dropout", "freeze", "invalid", "bias_jump")


@dataclass(frozen=True)
class FaultSpec:
    """A fault active from ``start`` until ``end`` (simulation seconds; end inf = for good).

    dropout: the device goes silent. freeze: it repeats its last values.
    invalid: it reports no fix or invalid data (GGA quality 0, RMC status V, ...).
    bias_jump: ``value`` (in the quantity's unit) is added to ``quantity``.
    """

    kind: str
    start: float
    end: float = math.inf
    quantity: str = ""
    value: float = 0.0

    def active(self, t: float) -> bool:
        return self.start <= t < self.end
