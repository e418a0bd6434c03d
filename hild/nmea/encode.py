"""Framing and field formatting for NMEA 0183 sentences, as real receivers print them.

Our own small formatter: pynmea2 takes pre-formatted field strings anyway, so
the work is in the fields (fixed decimals, ``ddmm.mmmmm``); framing them
ourselves is about 1.2x faster than pynmea2's ``render()`` for the same bytes
(``bench/bench_nmea.py``). pynmea2 parses everything we emit in the tests.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

# NMEA 0183: at most 82 characters from "$" to the final <LF>.
MAX_SENTENCE_CHARS = 82
# The largest magnitude a numeric field is printed with: six integer digits. Values beyond
# it (a runaway noise model, a fault's bias) saturate, as an instrument's display would,
# so that no sentence outgrows its 82 characters.
FIELD_MAX = 999_999.0


class SentenceTooLongError(ValueError):
    """A sentence would exceed the 82 characters that NMEA 0183 allows."""


def checksum(body: str) -> int:
    """XOR of the characters between "$" (or "!") and "*"."""
    value = 0
    for byte in body.encode("ascii"):
        value ^= byte
    return value


def frame(body: str, start: str = "$") -> bytes:
    """Frame ``body`` (e.g. "GPHDT,12.3,T") as ``$body*HH\\r\\n`` with its checksum."""
    line = f"{start}{body}*{checksum(body):02X}\r\n"
    if len(line) > MAX_SENTENCE_CHARS:
        raise SentenceTooLongError(f"{len(line)} characters (max {MAX_SENTENCE_CHARS}): {line!r}")
    return line.encode("ascii")


def fixed(value: float, decimals: int) -> str:
    """A number with a fixed number of decimals, never "-0.00"; empty when not finite."""
    if not math.isfinite(value):
        return ""
    value = min(max(value, -FIELD_MAX), FIELD_MAX)
    text = f"{value:.{decimals}f}"
    if text.startswith("-") and float(text) == 0.0:
        text = text[1:]
    return text


def bounded(value: float, limit: float, decimals: int) -> str:
    """``fixed`` saturated at +-``limit``: the width a field is printed with, whatever the
    value (a diverging model, a fault's bias), as an instrument's display saturates."""
    return fixed(min(max(value, -limit), limit), decimals)


def angle180(value_deg: float, decimals: int) -> str:
    """An angle wrapped into [-180, 180) (roll, pitch), fixed decimals; empty when not finite."""
    if not math.isfinite(value_deg):
        return ""
    return fixed((value_deg + 180.0) % 360.0 - 180.0, decimals)


def signed(value: float, decimals: int) -> str:
    """A number with an explicit sign ("+0.05"), as attitude sentences print roll and pitch."""
    text = fixed(value, decimals)
    return text if not text or text.startswith("-") else "+" + text


def angle360(value_deg: float, decimals: int = 1, width: int = 3) -> str:
    """An angle in [0, 360) with leading zeros ("084.4"), the way receivers print courses;
    empty when not finite."""
    if not math.isfinite(value_deg):
        return ""
    scale = 10**decimals
    units = round((value_deg % 360.0) * scale) % (360 * scale)
    whole, frac = divmod(units, scale)
    return f"{whole:0{width}d}.{frac:0{decimals}d}" if decimals else f"{whole:0{width}d}"


def _degrees_minutes(value_deg: float, decimals: int) -> tuple[int, int, int]:
    scale = 10**decimals
    total = round(abs(value_deg) * 60.0 * scale)  # in units of 10^-decimals minutes
    degrees, rest = divmod(total, 60 * scale)
    minutes, frac = divmod(rest, scale)
    return degrees, minutes, frac


def latitude(lat_deg: float, decimals: int = 5) -> tuple[str, str]:
    """Latitude as (``ddmm.mmmmm``, "N"|"S"), saturating at the poles; empty when not finite."""
    if not math.isfinite(lat_deg):
        return "", ""
    lat_deg = min(max(lat_deg, -90.0), 90.0)
    d, m, f = _degrees_minutes(lat_deg, decimals)
    return f"{d:02d}{m:02d}.{f:0{decimals}d}", "N" if lat_deg >= 0.0 else "S"


def longitude(lon_deg: float, decimals: int = 5) -> tuple[str, str]:
    """Longitude as (``dddmm.mmmmm``, "E"|"W"), wrapped into [-180, 180); empty when not
    finite."""
    if not math.isfinite(lon_deg):
        return "", ""
    lon_deg = (lon_deg + 180.0) % 360.0 - 180.0
    d, m, f = _degrees_minutes(lon_deg, decimals)
    return f"{d:03d}{m:02d}.{f:0{decimals}d}", "E" if lon_deg >= 0.0 else "W"


def utc_time(when: datetime, decimals: int = 2) -> str:
    """UTC time of day as ``hhmmss.ss``, rounded (not truncated) to ``decimals``."""
    when = rounded_time(when, decimals)
    text = f"{when.hour:02d}{when.minute:02d}{when.second:02d}"
    if not decimals:
        return text
    return f"{text}.{when.microsecond // 10 ** (6 - decimals):0{decimals}d}"


def rounded_time(when: datetime, decimals: int = 2) -> datetime:
    """``when`` rounded (half up) to a time field's decimals. A date printed beside the time
    must be the rounded instant's: 23:59:59.996 is 00:00:00.00 of the next day."""
    unit = 10 ** (6 - decimals)  # microseconds
    micro = ((when.hour * 60 + when.minute) * 60 + when.second) * 1_000_000 + when.microsecond
    return when + timedelta(microseconds=(micro + unit // 2) // unit * unit - micro)


def utc_date(when: datetime) -> str:
    """UTC date as ``ddmmyy`` (RMC)."""
    return f"{when.day:02d}{when.month:02d}{when.year % 100:02d}"
