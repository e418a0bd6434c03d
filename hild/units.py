"""Conversions between SI units inside and the units sentences and people use at the edges."""

import math

KNOTS_PER_MS = 3600.0 / 1852.0  # one international knot is 1852 m per hour
KMH_PER_KNOT = 1.852


def compass_deg(angle_rad: float, decimals: int) -> float:
    """An angle in degrees in [0, 360), rounded to ``decimals`` before it is wrapped, so that
    359.97 to one decimal reads 0.0, not 360.0 (as receivers print courses:
    hild.nmea.encode.angle360 does the same for sentences)."""
    return round(math.degrees(angle_rad) % 360.0, decimals) % 360.0
