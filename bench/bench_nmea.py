"""Benchmark: hild's NMEA framing against pynmea2's render() for the same fields.

python bench/bench_nmea.py
"""

from __future__ import annotations

import timeit
from datetime import UTC, datetime

import pynmea2

from hild.nmea import sentences
from hild.nmea.encode import fixed, latitude, longitude, utc_time

UTC_NOW = datetime(2026, 6, 1, 12, 34, 56, 789000, tzinfo=UTC)


def ours() -> bytes:
    return sentences.gga("GP", UTC_NOW, 59.41234567, 10.48765432, 1, 10, 0.9, 1.5, 39.2)


def with_pynmea2() -> bytes:
    lat, ns = latitude(59.41234567)
    lon, ew = longitude(10.48765432)
    fields = (
        utc_time(UTC_NOW),
        lat,
        ns,
        lon,
        ew,
        "1",
        "10",
        fixed(0.9, 1),
        fixed(1.5, 1),
        "M",
        fixed(39.2, 1),
        "M",
        "",
        "",
    )
    return (pynmea2.GGA("GP", "GGA", fields).render() + "\r\n").encode("ascii")


def main() -> None:
    assert ours() == with_pynmea2(), (ours(), with_pynmea2())
    n = 20000
    t_ours = min(timeit.repeat(ours, number=n, repeat=5)) / n
    t_pynmea2 = min(timeit.repeat(with_pynmea2, number=n, repeat=5)) / n
    print("GGA sentence, same fields and bytes")
    print(f"  hild framing     {t_ours * 1e6:7.2f} us")
    print(f"  pynmea2 render() {t_pynmea2 * 1e6:7.2f} us  ({t_pynmea2 / t_ours:.2f}x hild's time)")


if __name__ == "__main__":
    main()
