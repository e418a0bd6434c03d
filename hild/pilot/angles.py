"""Angle helpers shared by guidance and control."""

from __future__ import annotations

import math

TWO_PI = 2.0 * math.pi


def wrap(angle: float) -> float:
    """``angle`` [rad] wrapped into [-pi, pi)."""
    return (angle + math.pi) % TWO_PI - math.pi
