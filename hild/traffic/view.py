"""What the sensors that see other ships (the AIS receiver, a radar) get of them at an
instant: the targets as configured and a copy of their state rows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hild.traffic.targets import Target


@dataclass(frozen=True)
class TrafficView:
    """``state[i]`` (hild/traffic/layout.py T_*) is ``targets[i]``'s; a copy, so the
    simulation may step on while a device reads it."""

    targets: tuple[Target, ...]
    state: np.ndarray  # len(targets) x T_SIZE
