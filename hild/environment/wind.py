"""Wind with height: the logarithmic profile of the mean wind over the sea."""

from __future__ import annotations

import math

REFERENCE_HEIGHT = 10.0  # [m]: presets give the wind at this height
SEA_DRAG = 0.0026  # sea-surface drag coefficient kappa (Sorensen 2013)


def height_factor(height: float, kappa: float = SEA_DRAG) -> float:
    """U(z) / U10 over the sea (thesis eq. 2.43); 0 at and below the roughness length."""
    z0 = REFERENCE_HEIGHT * math.exp(-2.0 / (5.0 * math.sqrt(kappa)))
    if height <= z0:
        return 0.0
    return 2.5 * math.sqrt(kappa) * math.log(height / z0)
