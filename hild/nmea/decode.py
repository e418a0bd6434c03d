"""Sensor sentences -> readings: what one sentence says about time, position, motion, heading.

Parsed with pynmea2, checksums required. Used: GGA and RMC (time, position;
RMC also speed and course over ground), VTG (speed and course), HDT and THS
(heading), and the Heron frontseat's CPNVG (time, position, heading). Other
well-formed sentences are counted as ignored; anything malformed, with a bad
or missing checksum, or with an invalid status is counted and skipped.
Encapsulated sentences (``!AIVDM``, an AIS receiver's on the same line) are counted as
ignored and handed to ``on_encapsulated`` when one is set.

Two shortcuts make no difference to what is read, only to how fast (the pilot and a
recording's /fix read a GGA or an RMC every epoch): a well-formed sentence of a type no decoder
reads is counted as ignored without parsing it, and GGA and RMC of the usual shape are read
from their fields, to the bit what pynmea2 reads (2.4 and 2.7 times faster); anything else,
and everything with ``shortcuts=False``, is pynmea2's.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import pynmea2

from hild.nmea import extra_types  # noqa: F401  (registers THS and CPNVG with pynmea2)
from hild.nmea.encode import checksum
from hild.units import KNOTS_PER_MS

# $CPNVG field positions (protocols.md): time, lat, N/S, lon, E/W, quality, alt, depth, heading
NVG_TIME, NVG_LAT, NVG_NS, NVG_LON, NVG_EW, NVG_QUALITY, NVG_HEADING = 0, 1, 2, 3, 4, 5, 8


@dataclass(frozen=True)
class Reading:
    """What one sentence said; None where it said nothing (SI units, radians)."""

    time_s: float | None = None  # seconds into the UTC day
    latitude_deg: float | None = None
    longitude_deg: float | None = None
    sog: float | None = None  # speed over ground [m/s]
    cog: float | None = None  # course over ground [rad]
    heading: float | None = None  # true heading [rad]
    height_m: float | None = None  # GGA: altitude above MSL + geoid separation (the ellipsoid's)

    @property
    def has_position(self) -> bool:
        return self.latitude_deg is not None and self.longitude_deg is not None


class UnusableError(ValueError):
    """A sentence that parsed but carries nothing valid (bad field, invalid status)."""


def seconds_of_day(value: object) -> float:
    if not isinstance(value, dt.time):
        raise UnusableError(f"bad time {value!r}")
    return _day_seconds(value.hour, value.minute, value.second, value.microsecond)


def _day_seconds(hour: int, minute: int, second: int, microsecond: int) -> float:
    return hour * 3600.0 + minute * 60.0 + second + microsecond * 1e-6


def _number(value: object) -> float | None:
    """A field as a finite float; None when empty."""
    if value is None or value == "":
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise UnusableError(f"bad number {value!r}") from None
    if not math.isfinite(number):
        raise UnusableError(f"bad number {value!r}")
    return number


def _angle(value: object) -> float | None:
    deg = _number(value)
    return None if deg is None else math.radians(deg)


def _coordinate(text: str, hemisphere: str, negative: str, limit: float) -> float:
    if not text or hemisphere not in ("NS" if negative == "S" else "EW"):
        raise UnusableError(f"bad coordinate {text!r},{hemisphere!r}")
    try:
        deg = pynmea2.nmea_utils.dm_to_sd(text)
    except (ValueError, TypeError):
        raise UnusableError(f"bad coordinate {text!r}") from None
    if not (math.isfinite(deg) and 0.0 <= deg <= limit):
        raise UnusableError(f"coordinate out of range {text!r}")
    return -deg if hemisphere == negative else deg


def _position(msg: pynmea2.NMEASentence) -> tuple[float, float]:
    return (
        _coordinate(msg.lat, msg.lat_dir, "S", 90.0),
        _coordinate(msg.lon, msg.lon_dir, "W", 180.0),
    )


def _gga(msg) -> Reading:
    t = seconds_of_day(msg.timestamp)
    quality = msg.gps_qual
    if not isinstance(quality, int):
        raise UnusableError(f"bad fix quality {quality!r}")
    if quality == 0:
        return Reading(time_s=t)  # no fix: the epoch's time, no position
    lat, lon = _position(msg)
    # GGA fields 9 and 11 (NMEA 0183): altitude above mean sea level, geoid separation
    altitude = _number(msg.data[8]) if len(msg.data) > 8 else None
    separation = _number(msg.data[10]) if len(msg.data) > 10 else None
    height = None if altitude is None else altitude + (separation or 0.0)
    return Reading(time_s=t, latitude_deg=lat, longitude_deg=lon, height_m=height)


def _rmc(msg) -> Reading:
    t = seconds_of_day(msg.timestamp)
    if msg.status != "A":
        return Reading(time_s=t)
    lat, lon = _position(msg)
    knots = _number(msg.data[6])
    sog = None if knots is None else knots / KNOTS_PER_MS
    return Reading(t, lat, lon, sog, _angle(msg.data[7]))


def _vtg(msg) -> Reading:
    if getattr(msg, "faa_mode", None) == "N":
        raise UnusableError("VTG mode N (not valid)")
    knots = _number(msg.data[4]) if len(msg.data) > 4 else None
    sog: float | None
    if knots is not None:
        sog = knots / KNOTS_PER_MS
    else:
        kmh = _number(msg.data[6]) if len(msg.data) > 6 else None
        sog = None if kmh is None else kmh / 3.6
    return Reading(sog=sog, cog=_angle(msg.data[0]) if msg.data else None)


def _hdt(msg) -> Reading:
    heading = _angle(msg.data[0]) if msg.data else None
    if heading is None:
        raise UnusableError("empty heading")
    return Reading(heading=heading)


def _ths(msg) -> Reading:
    if len(msg.data) < 2 or msg.data[1] in ("", "V"):
        raise UnusableError("THS not valid")
    return _hdt(msg)


def _nvg(msg) -> Reading:
    d = msg.data
    if len(d) <= NVG_HEADING:
        raise UnusableError("CPNVG too short")
    t = seconds_of_day(pynmea2.nmea_utils.timestamp(d[NVG_TIME]) if d[NVG_TIME] else None)
    if d[NVG_QUALITY] in ("", "0"):
        return Reading(time_s=t, heading=_angle(d[NVG_HEADING]))
    lat = _coordinate(d[NVG_LAT], d[NVG_NS], "S", 90.0)
    lon = _coordinate(d[NVG_LON], d[NVG_EW], "W", 180.0)
    return Reading(time_s=t, latitude_deg=lat, longitude_deg=lon, heading=_angle(d[NVG_HEADING]))


DECODERS = {"GGA": _gga, "RMC": _rmc, "VTG": _vtg, "HDT": _hdt, "THS": _ths, "NVG": _nvg}


# A talker sentence framed as pynmea2 reads one: "$", a two-letter talker that is not the P of
# a proprietary address, three letters (no query's Q last), its fields (printable ASCII but
# "*"), "*" and the checksum.
_TALKER_SENTENCE = re.compile(r"\$[A-OQ-Z][A-Z]([A-Z]{2}[A-PR-Z]),[ -)+-~]*\*([0-9A-F]{2})")


def _checksum_matches(line: str, framed: re.Match) -> bool:
    """Whether a line that fullmatched _TALKER_SENTENCE carries its own checksum."""
    return int(framed.group(2), 16) == checksum(line[1 : framed.start(2) - 1])


# The shortcuts: GGA and RMC as receivers print them (hild's GPS among them; the pilot and a
# recording's /fix read one or two every epoch) are read from their fields here, to the bit
# what pynmea2's fields give through _gga and _rmc: the same conversions (pynmea2's
# ``timestamp`` and ``dm_to_sd`` written out, _number for the rest) and the same checks. A
# field of any other shape (and anything the checks would refuse) makes the shortcut give up
# and pynmea2 read the line, so what is malformed is counted by the one path.
# tests/test_decode_shortcuts.py holds them to pynmea2 over many thousand lines.
_TIME = re.compile(r"([0-2][0-9])([0-5][0-9])([0-5][0-9])(\.[0-9]+)?")  # hhmmss[.ss]
_DIGITS = frozenset("0123456789")  # a GGA quality the shortcut reads: one digit
_DEGREES_MINUTES = re.compile(r"[0-9]{3,}\.[0-9]+")  # ddmm.mm (lat), dddmm.mm (lon)


def _shortcut_time(text: str) -> float | None:
    """seconds_of_day(pynmea2's timestamp(text)), or None where that is not a valid time."""
    match = _TIME.fullmatch(text)
    if match is None:
        return None
    hour, minute, second = int(match.group(1)), int(match.group(2)), int(match.group(3))
    if hour > 23:
        return None
    fraction = match.group(4)
    microsecond = int(float(fraction) * 1000000) if fraction else 0
    if microsecond > 999999:  # ".99999999999999999" is 1.0 as a float: no valid time
        return None
    return _day_seconds(hour, minute, second, microsecond)


def _shortcut_coordinate(
    text: str, hemisphere: str, positive: str, negative: str, limit: float
) -> float | None:
    """_coordinate's value, or None where it is not a plain one (pynmea2 judges those)."""
    if hemisphere != positive and hemisphere != negative:
        return None
    if _DEGREES_MINUTES.fullmatch(text) is None:
        return None
    split = text.index(".") - 2  # dm_to_sd: all but two integer digits are degrees
    deg = float(text[:split]) + float(text[split:]) / 60
    if not deg <= limit:
        return None
    return -deg if hemisphere == negative else deg


def _shortcut_position(d: list[str]) -> tuple[float, float] | None:
    """(lat, lon) from fields 1-4 of GGA or 2-5 of RMC, passed as d[0:4]."""
    lat = _shortcut_coordinate(d[0], d[1], "N", "S", 90.0)
    lon = _shortcut_coordinate(d[2], d[3], "E", "W", 180.0)
    return None if lat is None or lon is None else (lat, lon)


def _shortcut_gga(d: list[str]) -> Reading | None:
    if len(d) < 6 or d[5] not in _DIGITS:
        return None
    t = _shortcut_time(d[0])
    if t is None:
        return None
    if d[5] == "0":
        return Reading(time_s=t)
    position = _shortcut_position(d[1:5])
    if position is None:
        return None
    try:
        altitude = _number(d[8]) if len(d) > 8 else None
        separation = _number(d[10]) if len(d) > 10 else None
    except UnusableError:
        return None
    height = None if altitude is None else altitude + (separation or 0.0)
    return Reading(time_s=t, latitude_deg=position[0], longitude_deg=position[1], height_m=height)


def _shortcut_rmc(d: list[str]) -> Reading | None:
    if len(d) < 8:
        return None
    t = _shortcut_time(d[0])
    if t is None:
        return None
    if d[1] != "A":
        return Reading(time_s=t)
    position = _shortcut_position(d[2:6])
    if position is None:
        return None
    try:
        knots = _number(d[6])
        cog = _angle(d[7])
    except UnusableError:
        return None
    sog = None if knots is None else knots / KNOTS_PER_MS
    return Reading(t, position[0], position[1], sog, cog)


SHORTCUTS = {"GGA": _shortcut_gga, "RMC": _shortcut_rmc}


class SentenceDecoder:
    """Lines -> readings, with counts of what was used, ignored and malformed."""

    def __init__(
        self, on_encapsulated: Callable[[str], None] | None = None, shortcuts: bool = True
    ) -> None:
        """``shortcuts``: False reads every line with pynmea2 (the reference they equal)."""
        self.used = 0
        self.ignored = 0
        self.malformed = 0
        self.on_encapsulated = on_encapsulated
        self.shortcuts = shortcuts

    def decode(self, line: str) -> Reading | None:
        line = line.strip()
        if not line:
            return None
        if line.startswith("!"):  # AIS: no reading of the own ship; a watcher may want it
            self.ignored += 1
            if self.on_encapsulated is not None:
                self.on_encapsulated(line)
            return None
        framed = _TALKER_SENTENCE.fullmatch(line) if self.shortcuts else None
        if framed is not None:
            kind = framed.group(1)
            shortcut = SHORTCUTS.get(kind)
            # (a type with a decoder but no shortcut goes to pynmea2, which checks the sum)
            if (shortcut is not None or kind not in DECODERS) and _checksum_matches(line, framed):
                if shortcut is None:  # well-formed, of a type no decoder reads (ZDA, TRD)
                    self.ignored += 1
                    return None
                reading = shortcut(line[7 : framed.start(2) - 1].split(","))
                if reading is not None:
                    self.used += 1
                    return reading
        return self._parsed(line)

    def _parsed(self, line: str) -> Reading | None:
        """``line`` read by pynmea2 and the decoders of its fields."""
        try:
            msg = pynmea2.parse(line, check=True)
        except pynmea2.SentenceTypeError:  # framed, good checksum, a type pynmea2 lacks (TRD)
            self.ignored += 1
            return None
        except (pynmea2.ParseError, ValueError, TypeError, AttributeError):
            self.malformed += 1  # bad framing, checksum or fields
            return None
        decoder = DECODERS.get(getattr(msg, "sentence_type", ""))
        if decoder is None:
            self.ignored += 1
            return None
        try:
            reading = decoder(msg)
        except (UnusableError, ValueError, TypeError, IndexError, AttributeError):
            self.malformed += 1
            return None
        self.used += 1
        return reading
