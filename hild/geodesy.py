"""WGS-84 geodesy: the run's NED offsets to latitude and longitude and back.

The simulation integrates position on a flat NED plane. hild reads north as
distance along the meridian through the origin and east as distance along the
parallel at the current latitude, using the meridian and prime-vertical radii
of curvature (thesis eqs 4.1-4.3). The meridian arc is integrated with the
radius at the midpoint latitude, which keeps the error far below a centimetre
over tens of kilometres; the round trip is exact to rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# WGS-84 (thesis Table 4.1 gives r_e; the flattening is the defining constant).
SEMI_MAJOR_AXIS = 6378137.0
FLATTENING = 1.0 / 298.257223563
ECCENTRICITY_SQ = FLATTENING * (2.0 - FLATTENING)


def meridian_radius(lat: float) -> float:
    """Meridian radius of curvature at latitude ``lat`` [rad] (thesis eq. 4.2)."""
    s = math.sin(lat)
    return SEMI_MAJOR_AXIS * (1.0 - ECCENTRICITY_SQ) / (1.0 - ECCENTRICITY_SQ * s * s) ** 1.5


def prime_vertical_radius(lat: float) -> float:
    """Prime-vertical radius of curvature at latitude ``lat`` [rad] (thesis eq. 4.3)."""
    s = math.sin(lat)
    return SEMI_MAJOR_AXIS / math.sqrt(1.0 - ECCENTRICITY_SQ * s * s)


@dataclass(frozen=True)
class Origin:
    """The geodetic position of the NED origin: latitude and longitude in degrees, height in m."""

    latitude_deg: float
    longitude_deg: float
    height: float = 0.0

    def to_geodetic(
        self, north: float, east: float, down: float = 0.0
    ) -> tuple[float, float, float]:
        """NED offset [m] -> (latitude_deg, longitude_deg, height_m) (integrated thesis eq. 4.1);
        NaN for an offset that is not finite (a diverged state has no position)."""
        if not (math.isfinite(north) and math.isfinite(east) and math.isfinite(down)):
            return math.nan, math.nan, math.nan
        lat0 = math.radians(self.latitude_deg)
        h = self.height - down
        # Meridian arc: d(lat) = dn / (r_mer + h); midpoint radius, two passes.
        lat = lat0 + north / (meridian_radius(lat0) + h)
        for _ in range(2):
            lat = lat0 + north / (meridian_radius(0.5 * (lat0 + lat)) + h)
        # Parallel at the current latitude: d(lon) = de / ((r_prime + h) cos(lat)).
        lon = math.radians(self.longitude_deg) + east / (
            (prime_vertical_radius(lat) + h) * math.cos(lat)
        )
        lon_deg = (math.degrees(lon) + 180.0) % 360.0 - 180.0
        return math.degrees(lat), lon_deg, h

    def to_ned(
        self, latitude_deg: float, longitude_deg: float, height: float = 0.0
    ) -> tuple[float, float, float]:
        """(latitude_deg, longitude_deg, height_m) -> NED offset [m]; inverse of ``to_geodetic``."""
        lat0 = math.radians(self.latitude_deg)
        lat = math.radians(latitude_deg)
        north = (lat - lat0) * (meridian_radius(0.5 * (lat0 + lat)) + height)
        dlon = (longitude_deg - self.longitude_deg + 180.0) % 360.0 - 180.0
        east = math.radians(dlon) * (prime_vertical_radius(lat) + height) * math.cos(lat)
        return north, east, self.height - height


# Where a run is when nothing says otherwise: the thesis' sea-trial site off Horten.
DEFAULT_ORIGIN = Origin(59.41, 10.48)
