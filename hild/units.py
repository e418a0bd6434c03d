"""Conversions between SI units inside and the units sentences and people use at the edges."""

KNOTS_PER_MS = 3600.0 / 1852.0  # one international knot is 1852 m per hour
KMH_PER_KNOT = 1.852
