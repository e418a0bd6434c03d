"""The controller author's kit: what a controller needs from the wires, in a few names.

A controller reads the boat's sensor sentences and answers with command sentences. On a bench
it does so over a serial line or a socket; in a scenario, in hild's process (the ``step(t,
lines)`` protocol of hild/scenario/controller.py). Either way it needs the same few things,
here, usable from any Python controller:

- ``sentence("APTRC", 1, 1200, "R", 100, "P", "", "B", "C")``: an NMEA 0183 sentence framed
  with its checksum and CR LF (``checksum``, ``parse`` for the other way round);
- ``OwnShip``: the boat's own GNSS and heading lines (GGA, RMC, VTG, HDT, THS) into an
  ``OwnFix``: position, speed and course over ground, heading;
- ``AisTargets``: ``!AIVDM`` lines (an AIS receiver's) decoded with pyais into ``Target``
  records, one per MMSI, with the name and size once the static messages have come;
- ``approach(own, target)``: the target's range, bearing, CPA and TCPA from the own fix,
  both ships' courses and speeds held (the textbook relative-motion solution);
- ``Origin``: a local north/east frame [m] around a latitude and longitude.

In a scenario's in-process controller the context carries an ``OwnShip`` and an
``AisTargets`` already fed with the step's lines (``context.own``, ``context.targets``), so a
controller may read ``context.own.fix`` instead of decoding the lines itself. Over a wire a
controller makes its own and feeds them the lines it reads.

Units: SI (m, m/s, s) and degrees, each name saying which (``sog_ms``, ``cog_deg``). Sentences
are decoded as hild's own pilot decodes them (hild/nmea/decode.py: checksums required, invalid
fixes skipped); AIS message layouts are ITU-R M.1371-5's, as pyais reads them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from hild.geodesy import Origin
from hild.nmea.decode import SentenceDecoder
from hild.nmea.encode import SentenceTooLongError, frame
from hild.nmea.encode import checksum as _checksum
from hild.units import KNOTS_PER_MS

__all__ = [
    "AisTargets",
    "Approach",
    "OwnFix",
    "OwnShip",
    "Origin",
    "SentenceError",
    "SentenceTooLongError",
    "Target",
    "approach",
    "checksum",
    "cpa_tcpa",
    "parse",
    "sentence",
]


class SentenceError(ValueError):
    """A line that is no well-formed NMEA 0183 sentence (framing or checksum)."""


# --- sentences -------------------------------------------------------------------------------
def checksum(body: str) -> str:
    """The two hex digits of a sentence's checksum: the XOR of the characters between "$" (or
    "!") and "*" (NMEA 0183)."""
    return f"{_checksum(body):02X}"


def _field(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        text = f"{value:.6f}".rstrip("0").rstrip(".")
        return "0" if text in ("-0", "") else text
    return str(value)


def sentence(address: str, *fields: object, start: str = "$") -> bytes:
    """``$ADDRESS,field,...*HH`` with CR LF, as bytes: ``address`` is the talker and the
    sentence's type ("APTRC"); a field may be text, a number (floats printed with at most six
    decimals, trailing zeros cut) or None (an empty field). ``start="!"`` for an encapsulated
    one. A sentence longer than NMEA 0183's 82 characters raises ``SentenceTooLongError`` (a
    receiver would drop it)."""
    return frame(",".join([address, *(_field(f) for f in fields)]), start)


def parse(line: bytes | str) -> tuple[str, list[str]]:
    """A sentence's address and fields: ``(b"$GPHDT,12.3,T*1B")`` -> ``("GPHDT", ["12.3",
    "T"])``; raises ``SentenceError`` on bad framing or a wrong checksum."""
    text = line.decode("ascii", "replace") if isinstance(line, bytes) else line
    text = text.strip()
    star = text.rfind("*")
    if len(text) < 2 or text[0] not in "$!" or star < 0:
        raise SentenceError(f"not a sentence: {text!r}")
    body, given = text[1:star], text[star + 1 :]
    if given.upper() != checksum(body):
        raise SentenceError(f"checksum {given!r}, expected {checksum(body)}: {text!r}")
    address, *values = body.split(",")
    return address, values


# --- the own ship ----------------------------------------------------------------------------
@dataclass(frozen=True)
class OwnFix:
    """The boat as its own sensors last said (None where none has said it yet)."""

    t: float  # when the position was heard [s] (the step's simulated time, or the caller's)
    latitude_deg: float
    longitude_deg: float
    sog_ms: float | None = None  # speed over ground
    cog_deg: float | None = None  # course over ground, true, 0 .. 360
    heading_deg: float | None = None  # true heading, 0 .. 360

    def north_east(self, origin: Origin) -> tuple[float, float]:
        """The fix in ``origin``'s local frame: metres north and east of it."""
        north, east, _ = origin.to_ned(self.latitude_deg, self.longitude_deg)
        return north, east


class OwnShip:
    """The latest ``OwnFix`` from the boat's own GNSS and heading sentences, fed line by line.

    Position from GGA or RMC, speed and course from RMC or VTG, heading from HDT or THS; each
    quantity is the last one heard. Other sentences (and AIS lines) are left alone; malformed
    ones, bad checksums and invalid fixes are counted in ``malformed`` and skipped."""

    def __init__(self) -> None:
        self.fix: OwnFix | None = None
        self._decoder = SentenceDecoder()
        self._sog: float | None = None
        self._cog: float | None = None
        self._heading: float | None = None

    @property
    def malformed(self) -> int:
        return self._decoder.malformed

    def feed(self, t: float, lines: Iterable[bytes | str]) -> None:
        """``lines`` heard at ``t`` [s] (any sentences: the own ship's are read)."""
        for line in lines:
            text = line.decode("ascii", "replace") if isinstance(line, bytes) else line
            if text.startswith("!"):
                continue
            reading = self._decoder.decode(text)
            if reading is None:
                continue
            if reading.sog is not None:
                self._sog = reading.sog
            if reading.cog is not None:
                self._cog = math.degrees(reading.cog) % 360.0
            if reading.heading is not None:
                self._heading = math.degrees(reading.heading) % 360.0
            if reading.latitude_deg is not None and reading.longitude_deg is not None:
                self.fix = OwnFix(t, reading.latitude_deg, reading.longitude_deg)
            if self.fix is not None:
                self.fix = replace(
                    self.fix, sog_ms=self._sog, cog_deg=self._cog, heading_deg=self._heading
                )


# --- AIS targets -----------------------------------------------------------------------------
# ITU-R M.1371-5: position reports of Class A (1, 2, 3), Class B (18, 19), long range (27);
# static data: Class A's type 5, Class B's type 24 (part A: the name; part B: the size).
CLASS_A_POSITION = (1, 2, 3)
CLASS_B_POSITION = (18, 19)
LONG_RANGE_POSITION = 27
NOT_AVAILABLE_SOG_KN = 102.3  # message 1 field 6: "102.3 = not available"
NOT_AVAILABLE_COG_DEG = 360.0  # message 1 field 9: "3600 (E10h) = not available"
NOT_AVAILABLE_HEADING_DEG = 511  # message 1 field 10: "511 indicates not available"
NOT_AVAILABLE_LATITUDE = 91.0  # "91 = not available", longitude 181
LONG_RANGE_SOG_NA_KN = 63  # message 27: 6-bit speed, 63 = not available
LONG_RANGE_COG_NA_DEG = 511  # message 27: 9-bit course, 511 = not available
MAX_UNREAD_LINES = 4096  # AIS lines kept undecoded until read; beyond, decoded (bounded memory)


@dataclass(frozen=True)
class Target:
    """An AIS target as its last reports said it. Position and motion at ``t``, when its last
    position report was heard; name and size once its static data came (else None)."""

    mmsi: int
    t: float  # [s] when the last position report was heard
    latitude_deg: float
    longitude_deg: float
    sog_ms: float | None  # None: not available
    cog_deg: float | None
    heading_deg: float | None
    ais_class: str  # "A" or "B" (the message types it sends)
    name: str | None = None
    length_m: float | None = None
    beam_m: float | None = None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


class AisTargets:
    """AIS targets by MMSI from ``!AIVDM`` lines, fed line by line (multi-sentence messages
    joined). Own-ship reports (``!AIVDO``) are not targets; malformed lines are counted in
    ``undecodable`` and skipped. Lines are decoded when ``targets`` is read (a controller that
    never looks pays nothing for them)."""

    def __init__(self) -> None:
        import pyais  # noqa: F401  (loaded now, not at the first target: a wire's controller
        # that paused a fifth of a second there would miss its watchdog's lease)

        self._targets: dict[int, Target] = {}
        self._undecodable = 0
        self._heard: list[tuple[float, str]] = []  # VDM lines not decoded yet
        self._parts: dict[tuple[str, str], list[str]] = {}  # (sequence id, channel) -> parts
        self._static: dict[int, dict[str, object]] = {}  # names and sizes heard before a fix

    @property
    def targets(self) -> dict[int, Target]:
        """Every target heard so far, by MMSI."""
        self._decode_heard()
        return self._targets

    @property
    def undecodable(self) -> int:
        self._decode_heard()
        return self._undecodable

    def feed(self, t: float, lines: Iterable[bytes | str]) -> None:
        """``lines`` heard at ``t`` [s] (any sentences: the AIS ones are kept)."""
        for line in lines:
            text = line.decode("ascii", "replace") if isinstance(line, bytes) else line
            if text[3:6] == "VDM" and text.startswith("!"):
                self._heard.append((t, text.strip()))
        if len(self._heard) > MAX_UNREAD_LINES:
            self._decode_heard()

    def _decode_heard(self) -> None:
        heard, self._heard = self._heard, []
        for t, text in heard:
            self._line(t, text)

    def _line(self, t: float, text: str) -> None:
        fields = text.split(",")
        if len(fields) < 7:
            self._undecodable += 1
            return
        count, number, sequence, channel = fields[1], fields[2], fields[3], fields[4]
        if count == "1":
            self._decode(t, [text])
            return
        key = (sequence, channel)
        if number == "1":
            self._parts[key] = [text]
            return
        parts = self._parts.get(key)
        if parts is None or str(len(parts) + 1) != number:
            self._parts.pop(key, None)  # a part missing: the message is lost, as on the air
            self._undecodable += 1
            return
        parts.append(text)
        if number == count:
            del self._parts[key]
            self._decode(t, parts)

    def _decode(self, t: float, parts: list[str]) -> None:
        from pyais import decode

        try:
            msg = decode(*parts).asdict()
        except Exception:  # pyais raises its own kinds for every malformed input
            self._undecodable += 1
            return
        kind, mmsi = int(str(msg.get("msg_type", 0))), int(str(msg.get("mmsi", 0)))
        if kind in (*CLASS_A_POSITION, *CLASS_B_POSITION, LONG_RANGE_POSITION):
            self._position(t, mmsi, kind, msg)
        if kind in (5, 19, 24):
            self._static_data(mmsi, msg)

    def _position(self, t: float, mmsi: int, kind: int, msg: dict) -> None:
        lat, lon = _number(msg.get("lat")), _number(msg.get("lon"))
        if lat is None or lon is None or abs(lat) >= NOT_AVAILABLE_LATITUDE or abs(lon) > 180:
            return
        sog_kn, cog = _number(msg.get("speed")), _number(msg.get("course"))
        heading = _number(msg.get("heading"))
        if kind == LONG_RANGE_POSITION:
            sog_na, cog_na = float(LONG_RANGE_SOG_NA_KN), float(LONG_RANGE_COG_NA_DEG)
        else:
            sog_na, cog_na = NOT_AVAILABLE_SOG_KN, NOT_AVAILABLE_COG_DEG
        known = self._targets.get(mmsi)
        static = self._static.get(mmsi, {})
        self._targets[mmsi] = Target(
            mmsi=mmsi,
            t=t,
            latitude_deg=lat,
            longitude_deg=lon,
            sog_ms=None if sog_kn is None or sog_kn >= sog_na else sog_kn / KNOTS_PER_MS,
            cog_deg=None if cog is None or cog >= cog_na else cog,
            heading_deg=None
            if heading is None or heading >= NOT_AVAILABLE_HEADING_DEG
            else heading,
            ais_class="B" if kind in CLASS_B_POSITION else "A",
            name=static.get("name", known.name if known else None),  # type: ignore[arg-type]
            length_m=static.get("length_m", known.length_m if known else None),  # type: ignore[arg-type]
            beam_m=static.get("beam_m", known.beam_m if known else None),  # type: ignore[arg-type]
        )

    def _static_data(self, mmsi: int, msg: dict) -> None:
        static = self._static.setdefault(mmsi, {})
        name = msg.get("shipname")
        if isinstance(name, str) and name.strip("@ "):
            static["name"] = name.strip("@ ")
        # dimensions to bow/stern/port/starboard [m] (message 5 fields 16-19, 24B likewise)
        bow, stern = _number(msg.get("to_bow")), _number(msg.get("to_stern"))
        port, starboard = _number(msg.get("to_port")), _number(msg.get("to_starboard"))
        if bow is not None and stern is not None and bow + stern > 0:
            static["length_m"] = bow + stern
        if port is not None and starboard is not None and port + starboard > 0:
            static["beam_m"] = port + starboard
        known = self._targets.get(mmsi)
        if known is not None:
            self._targets[mmsi] = replace(
                known,
                name=static.get("name", known.name),  # type: ignore[arg-type]
                length_m=static.get("length_m", known.length_m),  # type: ignore[arg-type]
                beam_m=static.get("beam_m", known.beam_m),  # type: ignore[arg-type]
            )


# --- encounters ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Approach:
    """A target seen from the own ship: now, and at the closest point if both hold on."""

    mmsi: int
    range_m: float
    bearing_deg: float  # true bearing from the own ship to the target, 0 .. 360
    cpa_m: float  # the closest distance ahead (the range now if they are opening)
    tcpa_s: float  # the time to it (0 if they are opening)


def cpa_tcpa(
    rel_north: float, rel_east: float, rel_vn: float, rel_ve: float
) -> tuple[float, float]:
    """Closest distance [m] and the time to it [s] for a relative position [m] and velocity
    [m/s] held: t = -(r . v) / |v|^2 (negative when opening), d = |r + v t|."""
    speed2 = rel_vn * rel_vn + rel_ve * rel_ve
    tcpa = 0.0 if speed2 < 1e-12 else -(rel_north * rel_vn + rel_east * rel_ve) / speed2
    return math.hypot(rel_north + rel_vn * tcpa, rel_east + rel_ve * tcpa), tcpa


def _velocity(sog_ms: float | None, cog_deg: float | None) -> tuple[float, float]:
    if sog_ms is None or cog_deg is None:
        return 0.0, 0.0
    c = math.radians(cog_deg)
    return sog_ms * math.cos(c), sog_ms * math.sin(c)


def approach(
    own: OwnFix,
    target: Target,
    t: float | None = None,
    own_sog_ms: float | None = None,
    own_cog_deg: float | None = None,
) -> Approach:
    """``target`` seen from ``own`` at time ``t`` (default: the own fix's): each ship dead
    reckoned from its report to ``t`` on its course and speed over ground (a target or own ship
    without them: standing still). ``own_sog_ms``/``own_cog_deg``: the own ship's motion to
    assume instead of its fix's (to ask "what if I kept my cruise speed?")."""
    t = own.t if t is None else t
    origin = Origin(own.latitude_deg, own.longitude_deg)
    own_vn, own_ve = _velocity(
        own.sog_ms if own_sog_ms is None else own_sog_ms,
        own.cog_deg if own_cog_deg is None else own_cog_deg,
    )
    vn, ve = _velocity(target.sog_ms, target.cog_deg)
    north, east, _ = origin.to_ned(target.latitude_deg, target.longitude_deg)
    ahead_own, ahead_target = t - own.t, t - target.t
    rel_n = north + vn * ahead_target - own_vn * ahead_own
    rel_e = east + ve * ahead_target - own_ve * ahead_own
    cpa, tcpa = cpa_tcpa(rel_n, rel_e, vn - own_vn, ve - own_ve)
    if tcpa < 0.0:  # opening: the closest is now
        cpa, tcpa = math.hypot(rel_n, rel_e), 0.0
    bearing = math.degrees(math.atan2(rel_e, rel_n)) % 360.0
    return Approach(target.mmsi, math.hypot(rel_n, rel_e), bearing, cpa, tcpa)
