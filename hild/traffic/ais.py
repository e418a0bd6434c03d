"""AIS messages as a transponder sends them, and when it sends them (pure: no I/O, no clock).

What a ship's AIS transponder broadcasts (ITU-R M.1371-5): Class A position reports (messages
1 and 3) and static and voyage data (message 5); Class B "CS" position reports (message 18)
and static data (message 24, parts A and B). Each is armoured into AIVDM sentences (AIVDO for
the own ship) by pyais, and the reporting schedule (``ReportSchedule``) says when each is due.

Field encodings (ITU-R M.1371-5, Annex 2, Table 48 and the tables of messages 5, 18, 24; gpsd's
AIVDM.adoc) are done here, to raw integers; pyais only packs the bits. pyais applies its own
scaling on the way in (knots x 10, degrees x 600000, ...), so the raw values are handed to it
as values its converters map back to exactly the same integer (``_pyais_fields``).

A fleet's stations are on one VHF data link (``Air``): each transmission is made once, by its
station's one clock, and heard by every receiver in range at that instant.

Message 2 (the SOTDMA position report in answer to an interrogation) is never sent: nothing
here interrogates a station.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from hild.traffic.layout import T_SPEED, T_YAW_RATE
from hild.traffic.targets import KNOT, Identity
from hild.traffic.view import TrafficView

# --- "not available" values (ITU-R M.1371-5 Annex 2, Table 48) -----------------------------
ROT_NOT_AVAILABLE = -128
SOG_NOT_AVAILABLE = 1023  # 0.1 kn steps; 1022 = 102.2 kn or more
SOG_MAX = 1022
COG_NOT_AVAILABLE = 3600  # 0.1 deg steps
HEADING_NOT_AVAILABLE = 511
LON_NOT_AVAILABLE = 181 * 600000  # 1/10000 min
LAT_NOT_AVAILABLE = 91 * 600000
SECOND_NOT_AVAILABLE = 60
EPFD_GPS = 1
MANEUVER_NOT_AVAILABLE = 0  # special manoeuvre indicator (messages 1-3): the default
AIS_VERSION = 2  # message 5's version indicator: ITU-R M.1371-5
ROT_CODE_SCALE = 4.733  # the rate of turn's code: 4.733 sqrt(|ROT| [deg/min])

# --- the reporting schedule (ITU-R M.1371-5, Annex 1, Table 1 and Table 2) -------------------
STATIC_INTERVAL_S = 360.0  # messages 5 and 24: every 6 min
CLASS_B_FAST_S = 30.0  # Class B "CS" above 2 kn
CLASS_B_SLOW_S = 180.0  # at or below 2 kn
CLASS_B_SLOW_KN = 2.0
ANCHORED_S = 180.0  # Class A at anchor or moored and not faster than 3 kn
ANCHORED_KN = 3.0
MOORED_STATUSES = (1, 5)  # nav status: at anchor, moored
# "Changing course": IEC 61993-2 (the Class A test standard) judges it by comparing the
# present heading with its mean over the last 30 s: more than 5 deg apart, the higher rate.
# In a steady turn at r deg/min that mean is the heading of 15 s ago, so the test trips at
# r * 0.25 min > 5 deg, i.e. r > 20 deg/min. hild has the yaw rate, not a heading history, and
# uses that rate: above 20 deg/min a target is changing course. (A ship coming off a 10 deg
# rudder turns at tens of deg/min; a steady course with yaw noise stays well below.)
CHANGING_COURSE_DEG_PER_MIN = 20.0


def class_a_interval(speed_kn: float, nav_status: int, rot_deg_per_min: float) -> float:
    """The Class A position report interval [s] (ITU-R M.1371-5 Table 1).

    The issue's table gives 2 s above 23 kn and 3 1/3 s when turning but leaves out the 14-23
    kn case when changing course; ITU's Table 1 has it (2 s), and it is followed here.
    """
    turning = abs(rot_deg_per_min) > CHANGING_COURSE_DEG_PER_MIN
    if nav_status in MOORED_STATUSES and speed_kn <= ANCHORED_KN:
        return ANCHORED_S
    if speed_kn <= 14.0:
        return 10.0 / 3.0 if turning else 10.0
    if speed_kn <= 23.0:
        return 2.0 if turning else 6.0
    return 2.0


def class_b_interval(speed_kn: float) -> float:
    """The Class B "CS" position report interval [s] (ITU-R M.1371-5 Table 2)."""
    return CLASS_B_FAST_S if speed_kn > CLASS_B_SLOW_KN else CLASS_B_SLOW_S


def station_interval(
    ais_class: str, speed_kn: float, nav_status: int, rot_deg_per_min: float
) -> float:
    """A station's position report interval [s] by its class (Table 1 or Table 2)."""
    if ais_class == "B":
        return class_b_interval(speed_kn)
    return class_a_interval(speed_kn, nav_status, rot_deg_per_min)


def shortest_interval(ais_class: str) -> float:
    """The shortest position report interval a station of ``ais_class`` can have [s]."""
    return 2.0 if ais_class == "A" else CLASS_B_FAST_S


# --- field encodings -------------------------------------------------------------------------
def rot_field(rot_deg_per_min: float | None) -> int:
    """Rate of turn as AIS codes it: 4.733 sqrt(|ROT|) rounded, signed (positive to starboard),
    capped at +-126 (708 deg/min or more); -128 not available. ITU reserves +-127 for "turning
    at more than 5 deg/30 s, no turn indicator": hild's ships have their rate of turn (it is
    the model's), so they send the coded value, as a ship with a rate-of-turn indicator does."""
    if rot_deg_per_min is None or not math.isfinite(rot_deg_per_min):
        return ROT_NOT_AVAILABLE
    raw = min(126, round(ROT_CODE_SCALE * math.sqrt(abs(rot_deg_per_min))))
    return int(math.copysign(raw, rot_deg_per_min)) if raw else 0


def rot_of_code(code: int) -> float:
    """The rate of turn a code says [deg/min]: (code / 4.733)^2, signed (``rot_field``'s
    inverse on its coded values)."""
    return math.copysign((code / ROT_CODE_SCALE) ** 2, code)


def second_field(second: int) -> int:
    """The time stamp: the UTC second of the report, 0-63 (60-63 ITU's codes); others 60."""
    return second if 0 <= second <= 63 else SECOND_NOT_AVAILABLE


def sog_field(speed_kn: float) -> int:
    """Speed over ground in 0.1 kn, rounded; 1022 for 102.2 kn or more, 1023 unknown."""
    if not math.isfinite(speed_kn):
        return SOG_NOT_AVAILABLE
    return min(SOG_MAX, max(0, round(speed_kn * 10.0)))


def cog_field(course_deg: float) -> int:
    """Course over ground in 0.1 deg, 0-3599; 3600 unknown."""
    if not math.isfinite(course_deg):
        return COG_NOT_AVAILABLE
    return round(course_deg % 360.0 * 10.0) % 3600


def heading_field(heading_deg: float | None) -> int:
    """True heading in whole degrees, 0-359; 511 unknown."""
    if heading_deg is None or not math.isfinite(heading_deg):
        return HEADING_NOT_AVAILABLE
    return round(heading_deg % 360.0) % 360


def lat_field(lat_deg: float | None) -> int:
    """Latitude in 1/10000 min (1/600000 deg), rounded; 91 deg unknown."""
    if lat_deg is None or not math.isfinite(lat_deg) or abs(lat_deg) > 90.0:
        return LAT_NOT_AVAILABLE
    return round(lat_deg * 600000.0)


def lon_field(lon_deg: float | None) -> int:
    """Longitude in 1/10000 min, rounded, -180 .. 180 deg; 181 deg unknown."""
    if lon_deg is None or not math.isfinite(lon_deg) or abs(lon_deg) > 180.0:
        return LON_NOT_AVAILABLE
    return round(lon_deg * 600000.0)


def draught_field(draught_m: float) -> int:
    """Draught in 0.1 m, 0-255 (25.5 m or more); 0 unknown."""
    if not math.isfinite(draught_m) or draught_m <= 0.0:
        return 0
    return min(255, round(draught_m * 10.0))


def dimension(value: int, bits: int) -> int:
    """A dimension to the antenna [m], capped at what its field holds (511 or 63 m)."""
    return max(0, min((1 << bits) - 1, int(value)))


_SIXBIT = set("@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_ !\"#$%&'()*+,-./0123456789:;<=>?")


def text_field(text: str, length: int) -> str:
    """Upper case, AIS 6-bit characters only (others become '?'), at most ``length``."""
    return "".join(c if c in _SIXBIT else "?" for c in text.upper()[:length])


# --- what a report carries -------------------------------------------------------------------
@dataclass(frozen=True)
class Dynamic:
    """One position report's values, in the units of the edge (degrees, knots)."""

    lat_deg: float | None  # None: not available (91)
    lon_deg: float | None  # None: not available (181)
    sog_kn: float
    cog_deg: float
    heading_deg: float | None
    rot_deg_per_min: float | None
    second: int  # UTC second of the report, 60 not available
    accurate: bool  # position accuracy flag: 1 high (< 10 m), 0 low or no fix


def _pyais_fields(raw: dict[str, int]) -> dict[str, str | int | float | bytes | bool]:
    """Raw field integers as pyais takes them: its converters multiply speed, course and
    draught by 10 and truncate (so a quarter of a step is added to land on the integer),
    multiply lat/lon by 600000 and round, and turn a rate of turn from deg/min into its code
    (so the rate is given back as the deg/min that codes to ``turn``)."""
    out: dict[str, str | int | float | bytes | bool] = dict(raw)
    for key in ("speed", "course", "draught"):
        if key in raw:
            out[key] = (raw[key] + 0.25) / 10.0
    for key in ("lat", "lon"):
        if key in raw:
            out[key] = raw[key] / 600000.0
    if "turn" in raw:
        turn = raw["turn"]
        out["turn"] = turn if turn in (0, 127, -127, -128) else rot_of_code(turn)
    return out


@functools.cache
def encoder() -> Callable[..., list[str]]:
    """pyais's encoder, imported at its first use: importing pyais takes about 0.1 s, which a
    bench without AIS need not wait for at every start. An AIS device asks for it when it is
    made (hild.sensors.ais), so that no tick pays for the import."""
    from pyais import encode_dict

    return encode_dict


def _encode(raw: dict, sentence: str, channel: str, seq_id: int | None, talker: str) -> list[bytes]:
    lines = encoder()(
        _pyais_fields(raw),
        talker_id=talker,
        sentence_type=sentence,
        radio_channel=channel,
        seq_id=seq_id,
    )
    return [line.encode("ascii") + b"\r\n" for line in lines]


def _dynamic_raw(d: Dynamic) -> dict[str, int]:
    return {
        "speed": sog_field(d.sog_kn),
        "accuracy": int(d.accurate),
        "lon": lon_field(d.lon_deg),
        "lat": lat_field(d.lat_deg),
        "course": cog_field(d.cog_deg),
        "heading": heading_field(d.heading_deg),
        "second": second_field(d.second),
    }


def position_report_a(
    msg_type: int,
    mmsi: int,
    nav_status: int,
    d: Dynamic,
    channel: str,
    sentence: str = "VDM",
    talker: str = "AI",
) -> list[bytes]:
    """Message 1 (scheduled, SOTDMA) or 3 (ITDMA: the first report at a shortened interval):
    one sentence. The special manoeuvre indicator is 0, not available (pyais's default is 3,
    which ITU-R M.1371-5 leaves unused)."""
    assert msg_type in (1, 3)
    raw = {
        "msg_type": msg_type,
        "mmsi": mmsi,
        "status": nav_status & 15,
        "turn": rot_field(d.rot_deg_per_min),
        **_dynamic_raw(d),
        "maneuver": MANEUVER_NOT_AVAILABLE,
    }
    return _encode(raw, sentence, channel, None, talker)


def static_voyage(
    ident: Identity, seq_id: int, channel: str, sentence: str = "VDM", talker: str = "AI"
) -> list[bytes]:
    """Message 5: 424 bits, two sentences with the sequential message id ``seq_id`` (0-9).
    The ETA is sent as not available (month 0, day 0, hour 24, minute 60)."""
    raw = {
        "msg_type": 5,
        "mmsi": ident.mmsi,
        "ais_version": AIS_VERSION,
        "imo": max(0, ident.imo),
        "callsign": text_field(ident.callsign, 7),
        "shipname": text_field(ident.name, 20),
        "ship_type": ident.ship_type & 255,
        "to_bow": dimension(ident.to_bow, 9),
        "to_stern": dimension(ident.to_stern, 9),
        "to_port": dimension(ident.to_port, 6),
        "to_starboard": dimension(ident.to_starboard, 6),
        "epfd": EPFD_GPS,
        "month": 0,
        "day": 0,
        "hour": 24,
        "minute": 60,
        "draught": draught_field(ident.draught),
        "destination": text_field(ident.destination, 20),
        "dte": 0,
    }
    return _encode(raw, sentence, channel, seq_id, talker)


def position_report_b(
    mmsi: int, d: Dynamic, channel: str, sentence: str = "VDM", talker: str = "AI"
) -> list[bytes]:
    """Message 18, a Class B "CS" unit (carrier-sense flag set): one sentence."""
    raw = {"msg_type": 18, "mmsi": mmsi, **_dynamic_raw(d), "cs": 1}
    return _encode(raw, sentence, channel, None, talker)


def static_b(
    ident: Identity, part: str, channel: str, sentence: str = "VDM", talker: str = "AI"
) -> list[bytes]:
    """Message 24 part A (the name) or B (type, call sign, dimensions): one sentence each."""
    if part == "A":
        raw = {
            "msg_type": 24,
            "partno": 0,
            "mmsi": ident.mmsi,
            "shipname": text_field(ident.name, 20),
        }
    else:
        raw = {
            "msg_type": 24,
            "partno": 1,
            "mmsi": ident.mmsi,
            "ship_type": ident.ship_type & 255,
            "vendorid": "",
            "callsign": text_field(ident.callsign, 7),
            "to_bow": dimension(ident.to_bow, 9),
            "to_stern": dimension(ident.to_stern, 9),
            "to_port": dimension(ident.to_port, 6),
            "to_starboard": dimension(ident.to_starboard, 6),
        }
    return _encode(raw, sentence, channel, None, talker)


# --- when a station transmits ---------------------------------------------------------------
@dataclass
class StationClock:
    """One station's next transmissions: the position report due at ``next_position`` (at
    ``interval``), the static data at ``next_static``, and its channel, which alternates with
    every transmission (as a transponder alternates its slots between AIS 1 and AIS 2)."""

    next_position: float
    next_static: float
    interval: float
    channel: int  # 0: A, 1: B
    last_position: float | None = None
    shortened: bool = False  # the next report is the first at a shorter interval: message 3
    identity: Identity | None = None

    def take_channel(self) -> str:
        c = "AB"[self.channel]
        self.channel ^= 1
        return c


@dataclass
class Due:
    """What one station transmits at an instant."""

    # 0: no position report; 1 a scheduled one; 3 the first at a shortened interval (Class A
    # message 3; a Class B station sends its message 18 for either)
    position: int = 0
    static: bool = False  # message 5 (Class A) or 24 A and B (Class B)

    def kinds(self, class_a: bool) -> list[str]:
        """The messages, in the order sent: the position report ("1", "3"; "18" for Class B),
        then the static data ("5"; "24A" and "24B")."""
        kinds = [str(self.position) if class_a else "18"] if self.position else []
        if self.static:
            kinds += ["5"] if class_a else ["24A", "24B"]
        return kinds


@dataclass
class ReportSchedule:
    """Each station's reporting clock, by a key (a target's name). A station first seen at
    ``t`` reports its position at a phase drawn uniformly within its first interval, and its
    static data within the first 6 min, from ``seed`` and its key: twenty targets do not all
    report in the same tick, and the phases are the same in every run with the seed."""

    seed: int
    clocks: dict[str, StationClock] = field(default_factory=dict)

    def _rng(self, key: str) -> np.random.Generator:
        return np.random.default_rng([self.seed, zlib.crc32(b"ais-phase:" + key.encode())])

    def due(self, key: str, t: float, interval: float, ident: Identity | None = None) -> Due:
        """What the station ``key`` sends at ``t`` [s], its position interval being
        ``interval`` [s] now; advances its clock. A changed identity sends its static data
        at once ("when data has been amended", ITU-R M.1371-5 Table 1 note)."""
        clock = self.clocks.get(key)
        if clock is None:
            rng = self._rng(key)
            clock = StationClock(
                next_position=t + float(rng.uniform(0.0, interval)),
                next_static=t + float(rng.uniform(0.0, STATIC_INTERVAL_S)),
                interval=interval,
                channel=int(rng.integers(0, 2)),
                identity=ident,
            )
            self.clocks[key] = clock
        if interval < clock.interval - 1e-9 and clock.last_position is not None:
            # A shorter interval: a SOTDMA transponder adds slots at once with ITDMA, and the
            # first report in them is a message 3 (ITU-R M.1371-5 Annex 2, 3.3.5.3 / 4.4).
            clock.next_position = min(clock.next_position, clock.last_position + interval)
            clock.shortened = True
        clock.interval = interval
        out = Due()
        eps = 1e-6  # of a 10 Hz tick's float sum
        if t >= clock.next_position - eps:
            out.position = 3 if clock.shortened else 1
            clock.shortened = False
            clock.last_position = t
            clock.next_position += interval
            if clock.next_position <= t + eps:  # behind (a slow device or a jump): no burst
                clock.next_position = t + interval
        # (the same record is the same identity: compared field by field only when replaced)
        if (
            ident is not None
            and ident is not clock.identity
            and _static_part(ident) != _static_part(clock.identity)
        ):
            clock.identity = ident
            clock.next_static = t
        if t >= clock.next_static - eps:
            out.static = True
            clock.next_static += STATIC_INTERVAL_S
            if clock.next_static <= t + eps:
                clock.next_static = t + STATIC_INTERVAL_S
        return out


# --- one VHF data link for a world's stations --------------------------------------------------
@dataclass(frozen=True, slots=True)
class Transmission:
    """One message a station put on the air at ``t``, on one channel: every receiver in range
    hears this one transmission (its kind, channel and instant), each through its own model."""

    station: str  # the station's key: a traffic target's or a boat's name
    t: float  # [s] the instant it was sent
    kind: str  # "1", "3", "5", "18", "24A", "24B"
    channel: str  # "A" (AIS 1) or "B" (AIS 2)
    identity: Identity  # the station's identity as sent
    row: list[float]  # the station's traffic row at ``t`` (hild/traffic/layout.py T_*)


NOTHING_HEARD: tuple[Transmission, ...] = ()
TRIM_AT = 256  # log length from which what every receiver has heard is let go


class Air:
    """A world's AIS stations on one VHF data link: each station's clock (``ReportSchedule``:
    its position and static report times, its A/B alternation) advances once per transmission,
    and every receiver hears the same transmissions.

    ITU-R M.1371-5 Annex 1, 1.1: "The system should automatically broadcast ships dynamic and
    some other information to all other installations in a self-organized manner" -- one
    transmission in one slot on one channel, received by every installation in range at once.

    ``stations()`` gives every station on the air at an instant (the run's targets and every
    boat: hild/world/boats.py). The air advances at most once per instant, when a receiver
    first listens at it (``heard``): every station's due messages go on a log, in the order of
    the stations; each receiver reads the log from its own cursor, so one that listens less
    often (1 Hz against 10 Hz) hears every transmission once, none twice. Work per instant:
    the stations once, then for each receiver what was sent since it last listened.
    """

    def __init__(self, seed: int, stations: Callable[[], TrafficView]):
        self.schedule = ReportSchedule(seed)
        self._stations = stations
        self.t = -math.inf  # the instant the air was last advanced to
        self._log: list[Transmission] = []
        self._base = 0  # the number of the log's first transmission
        self._cursors: list[int] = []  # each receiver's next transmission's number
        self.sent: Counter[str] = Counter()  # transmissions made, by station

    def listener(self) -> int:
        """A new receiver's number: it hears what is sent from now on."""
        self._cursors.append(self._base + len(self._log))
        return len(self._cursors) - 1

    def heard(self, receiver: int, t: float) -> Sequence[Transmission]:
        """What ``receiver`` hears at ``t``: every transmission since it last listened, up to
        and including those of ``t`` (the air advanced to ``t`` first), oldest first."""
        if t > self.t:
            self.advance(t)
        end = self._base + len(self._log)
        start = self._cursors[receiver]
        if start == end:
            return NOTHING_HEARD
        self._cursors[receiver] = end
        new = self._log[start - self._base :]
        if len(self._log) >= TRIM_AT:
            done = min(self._cursors) - self._base  # heard by every receiver
            if done > 0:
                del self._log[:done]
                self._base += done
        return new

    def advance(self, t: float) -> None:
        """Every station's messages due at ``t`` [s] (each station's clock advanced once)."""
        self.t = t
        view = self._stations()
        rows = view.state.tolist()  # (plain floats: a numpy scalar per field costs more)
        schedule, log = self.schedule, self._log
        for target, row in zip(view.targets, rows, strict=False):
            ident = target.identity
            sog_kn = float(row[T_SPEED]) / KNOT
            rot = math.degrees(float(row[T_YAW_RATE])) * 60.0  # deg/min
            interval = station_interval(ident.ais_class, sog_kn, ident.nav_status, rot)
            due = schedule.due(target.name, t, interval, ident)
            if not due.position and not due.static:
                continue
            clock = schedule.clocks[target.name]
            for kind in due.kinds(ident.ais_class != "B"):
                log.append(Transmission(target.name, t, kind, clock.take_channel(), ident, row))
                self.sent[target.name] += 1


def _static_part(ident: Identity | None) -> Identity | None:
    """What messages 5 and 24 carry of an identity (not the navigational status)."""
    return None if ident is None else replace(ident, nav_status=0)


def speed_kn(speed_ms: float) -> float:
    return speed_ms / KNOT
