"""Geodesy against independent integrals of the WGS-84 radii of curvature."""

import math

import pytest
from scipy.integrate import quad

from hild.geodesy import Origin, meridian_radius, prime_vertical_radius

HORTEN = Origin(59.41, 10.48)


def test_radii_at_equator_and_pole():
    a, f = 6378137.0, 1 / 298.257223563
    b = a * (1 - f)
    # Textbook values: M(0) = b^2/a, N(0) = a, M(90) = N(90) = a^2/b.
    assert meridian_radius(0.0) == pytest.approx(b * b / a, rel=1e-12)
    assert prime_vertical_radius(0.0) == pytest.approx(a, rel=1e-12)
    assert meridian_radius(math.pi / 2) == pytest.approx(a * a / b, rel=1e-12)
    assert prime_vertical_radius(math.pi / 2) == pytest.approx(a * a / b, rel=1e-12)


@pytest.mark.parametrize("north", [-10_000.0, 10_000.0, 50_000.0])
def test_north_offset_is_the_meridian_arc_to_a_centimetre(north):
    lat, lon, _ = HORTEN.to_geodetic(north, 0.0)
    assert lon == pytest.approx(HORTEN.longitude_deg, abs=1e-12)
    # Arc length along the meridian from the origin to the computed latitude.
    arc, _ = quad(
        meridian_radius, math.radians(HORTEN.latitude_deg), math.radians(lat), epsabs=1e-12
    )
    assert abs(arc - north) < 0.01


@pytest.mark.parametrize("east", [-10_000.0, 10_000.0])
def test_east_offset_is_the_parallel_arc_to_a_centimetre(east):
    lat, lon, _ = HORTEN.to_geodetic(0.0, east)
    assert lat == pytest.approx(HORTEN.latitude_deg, abs=1e-12)
    phi = math.radians(lat)
    # the parallel's radius N cos(phi), N = a / sqrt(1 - e^2 sin^2 phi) written out here
    a, f = 6378137.0, 1 / 298.257223563
    e2 = f * (2.0 - f)
    radius = a / math.sqrt(1.0 - e2 * math.sin(phi) ** 2) * math.cos(phi)
    arc = math.radians(lon - HORTEN.longitude_deg) * radius
    assert abs(arc - east) < 0.01


def test_one_minute_of_latitude_is_about_a_nautical_mile():
    # Nautical tables: a minute of latitude is 1843 m at the equator, 1862 m at the poles
    # and 1856.7 m at 59.4 N (1852 m is the rounded mean).
    lat, _, _ = HORTEN.to_geodetic(1852.0, 0.0)
    assert (lat - HORTEN.latitude_deg) * 60 == pytest.approx(1852 / 1856.7, rel=1e-4)


@pytest.mark.parametrize(
    "ned",
    [(0.0, 0.0, 0.0), (8000.0, -6000.0, 0.0), (-9999.0, 9999.0, -20.0), (123.456, 0.001, 3.0)],
)
def test_round_trip_is_exact(ned):
    lat, lon, h = HORTEN.to_geodetic(*ned)
    back = HORTEN.to_ned(lat, lon, h)
    assert back == pytest.approx(ned, abs=1e-6)


def test_longitude_wraps_at_the_antimeridian():
    origin = Origin(0.0, 179.99)
    _, lon, _ = origin.to_geodetic(0.0, 5000.0)
    assert -180.0 <= lon < -179.9
    assert origin.to_ned(*origin.to_geodetic(0.0, 5000.0)[:2])[1] == pytest.approx(5000.0, abs=1e-6)
