"""Radar with ARPA: the traffic targets it tracks, as tracked target messages ($RATTM).

What an ARPA (automatic radar plotting aid) gives a controller: for every target it tracks,
once per output interval, its target number, range and true bearing from the antenna, the
target's true course and speed, and the closest point of approach (distance and time) if both
ships hold course and speed.

Choices, and why:

- Output interval. An ARPA updates its tracks once per antenna scan and writes its TTMs after
  each update: at the 20-24 rpm of a ship's X-band antenna that is every 2.5-3 s, at the 40-48
  rpm of a high-speed craft's every 1.25-1.5 s. ``devices/radar.toml`` sends every 2.5 s
  (``rate_hz = 0.4``, 24 rpm); set ``rate_hz`` to rpm / 60 for another antenna. One TTM per
  tracked target per interval, by target number.
- Target numbers. A target gets the next number (01, 02, ... 99, then 01 again, skipping the
  numbers of live tracks) when first acquired and keeps it while tracked. One that is lost
  (out of range, below the radar horizon, gone) is reported once with status L and its last
  values, and its number is freed: should it come back, it is a new acquisition with a new
  number. Targets acquired in the same interval are numbered nearest first. I know of no
  standard rule for the numbering; this one is simple and never hands a freed number to
  the next target while others are left. At most ``capacity`` targets are tracked at once
  (IMO MSC.192(79) asks 20, 30 or 40 by ship size); the nearest untracked ones wait for a
  free track.
- Acquisition. Automatic (field "A"). For ``acquire_s`` after acquisition the track is
  reported with status Q and only its range and bearing (an ARPA needs several scans before
  its vector is stable: IMO asks for a trend within 1 min, full accuracy within 3 min);
  0 (the default) reports T from the first interval.
- Names. A radar track has no name unless the ARPA fuses it with the target's AIS report:
  empty by default; ``names = true`` gives the target's AIS name, cut to the room the
  82 characters leave (``hild.nmea.sentences.TTM_NAME_CHARS``).
- Detection. A target is tracked when within ``range_nm`` of the antenna and within the
  radar horizon, d [nm] = 2.21 (sqrt(h_antenna) + sqrt(h_target)) with heights in metres:
  Bowditch, The American Practical Navigator, radar horizon 1.22 sqrt(h [ft]) nm for
  standard refraction (an earth radius 4/3 of the true one). The antenna's height is its
  height above the body frame's origin (``position``, z down, through the ship's attitude
  and heave) plus ``origin_height_m``, the origin's height above the sea; a target's
  height is ``target_height_m`` for every ship (no rule from ship type or length that I
  could defend). No minimum range, clutter or shadowing.
- Measurement. Range [m] and true bearing [deg] from the antenna with the noise of the
  quantities ``range`` and ``bearing``; the target's course [deg] and speed [m/s] over
  ground from the truth with the noise of ``course`` and ``speed`` (the track filter's
  error). Each target's values draw on the same streams in turn: white noise is every
  report's own, bias, drift and a bias_jump the whole radar's. CPA and TCPA are computed from
  these noisy values, as the ARPA would: the relative position from range and bearing, the
  relative velocity from the target's course and speed less the own ship's velocity over
  ground at the antenna (from the truth: an ARPA takes it from the GNSS); with no relative
  motion the CPA is the range, at TCPA 0.
- Faults. dropout: the output is silent; the tracker runs on (acquisitions and losses
  during it go unreported). freeze: the last interval's reports again, with the current UTC;
  the tracker stands still until the freeze ends. invalid: the radar cannot measure
  (heading or own-ship data lost): every track is reported with status L and no values,
  and keeps its number, tracked again once valid. bias_jump on ``range`` (m), ``bearing``
  (deg), ``course`` (deg), ``speed`` (m/s).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np

from hild.geodesy import Origin
from hild.nmea import sentences as nmea
from hild.sensors import kinematics
from hild.sensors.device import Device, DeviceConfig, Measurement
from hild.sensors.truth import Truth
from hild.traffic.layout import T_EAST, T_HEADING, T_NORTH, T_SPEED
from hild.traffic.targets import Target

NM = 1852.0  # m
HORIZON_NM_PER_SQRT_M = 2.21  # Bowditch: 1.22 nm per sqrt(ft), k = 4/3
UNIT_M = {"N": NM, "K": 1000.0, "S": 1609.344}  # the TTM units' distance [m]
MAX_NUMBER = 99  # TTM's target number: two digits, 01-99 (00 is never given)

# What a device type that leaves a setting out gets (devices/radar.toml gives them all).
DEFAULTS: dict[str, Any] = {
    "range_nm": 12.0,
    "origin_height_m": 0.0,
    "target_height_m": 10.0,
    "capacity": 40,
    "acquire_s": 0.0,
    "names": False,
    "units": "N",
    "budget_targets": 40,
}


def horizon_nm(antenna_m: float, target_m: float) -> float:
    """The radar horizon [nm] between an antenna and a target, heights above the sea [m]."""
    return HORIZON_NM_PER_SQRT_M * (math.sqrt(max(antenna_m, 0.0)) + math.sqrt(max(target_m, 0.0)))


@dataclass(frozen=True)
class Report:
    """One TTM's content: a track's values in SI units and degrees (None: not reported)."""

    number: int
    name: str
    status: str  # L, Q or T
    range_m: float | None
    bearing_deg: float | None
    speed_ms: float | None = None
    course_deg: float | None = None
    cpa_m: float | None = None
    tcpa_s: float | None = None


@dataclass
class Track:
    number: int
    acquired_t: float
    last: Report


class Radar(Device):
    """An ARPA radar on the own ship: TTM for every tracked traffic target (see the module)."""

    model = "radar"
    sentences_available = ("TTM",)
    noise_components = {"range": 1, "bearing": 1, "course": 1, "speed": 1}
    # One TTM at the widest values (``encode``; edge units: the ``units`` setting's distance
    # and speed, degrees, minutes).
    worst_case = {
        "number": 99.0,
        "distance": nmea.TTM_DISTANCE_MAX,
        "bearing": 359.9,
        "speed": nmea.TTM_SPEED_MAX,
        "course": 359.9,
        "cpa": nmea.TTM_DISTANCE_MAX,
        "tcpa": -nmea.TTM_TCPA_MAX_MIN,
    }

    def __init__(self, config: DeviceConfig, seed: int, origin: Origin):
        super().__init__(config, seed, origin)
        self.tracks: dict[str, Track] = {}  # by target name
        self._next_number = 1
        self._last_reports: list[Report] = []
        self.acquired = 0  # acquisitions (a target that comes back counts again)
        self.lost = 0  # tracks lost (out of range, below the horizon, gone)
        self.waiting = 0  # target-intervals detected but not tracked: capacity full

    def setting(self, name: str) -> Any:
        return self.config.settings.get(name, DEFAULTS.get(name))

    # --- one interval -------------------------------------------------------------------------
    def sample(self, truth: Truth) -> list[bytes]:
        """The TTMs of every track at ``truth.t``, by target number."""
        self.stats.epochs += 1
        t = truth.t
        if self._fault("freeze", t) and self._last_reports:
            reports = self._last_reports
        else:
            reports = self._update(truth)
            self._last_reports = reports
        if self._fault("dropout", t):
            self.stats.silent_epochs += 1
            return []
        if self._fault("invalid", t):
            reports = [Report(r.number, r.name, "L", None, None) for r in reports]
        lines = self.failures.build(
            self.config.sentences,
            lambda _name: [self._line(r, truth.utc) for r in reports],
        )
        self.stats.sentences += len(lines)
        return lines

    def _update(self, truth: Truth) -> list[Report]:
        """Track every detected target (acquiring new ones while there is room); report the
        tracks lost since the last interval once, with their last values."""
        t = truth.t
        antenna = kinematics.position_ned(truth, self.lever_arm)
        reach_nm = min(
            float(self.setting("range_nm")),
            horizon_nm(
                float(self.setting("origin_height_m")) - float(antenna[2]),
                float(self.setting("target_height_m")),
            ),
        )
        seen: list[tuple[float, Target, np.ndarray]] = []
        view = truth.traffic
        if view is not None:
            for target, row in zip(view.targets, view.state, strict=False):
                d = math.hypot(float(row[T_NORTH]) - antenna[0], float(row[T_EAST]) - antenna[1])
                if d <= reach_nm * NM:
                    seen.append((d, target, row))
        seen_names = {target.name for _, target, _ in seen}
        reports: list[Report] = []
        for name in [n for n in self.tracks if n not in seen_names]:
            track = self.tracks.pop(name)
            self.lost += 1
            reports.append(replace(track.last, status="L"))
        velocity = kinematics.velocity_ned(truth, self.lever_arm)
        for _, target, row in sorted(seen, key=lambda s: s[0]):
            found = self.tracks.get(target.name)
            if found is None:
                if len(self.tracks) >= int(self.setting("capacity")):
                    self.waiting += 1
                    continue
                found = Track(self._take_number(), t, Report(0, "", "T", None, None))
                self.tracks[target.name] = found
                self.acquired += 1
            track = found
            acquiring = t - track.acquired_t < float(self.setting("acquire_s"))
            track.last = self._measure(truth, target, row, antenna, velocity, track, acquiring)
            reports.append(track.last)
        return sorted(reports, key=lambda r: r.number)

    def _take_number(self) -> int:
        """The next number from the last one given, skipping those of live tracks."""
        used = {track.number for track in self.tracks.values()}
        for k in range(MAX_NUMBER):
            number = (self._next_number - 1 + k) % MAX_NUMBER + 1
            if number not in used:
                self._next_number = number % MAX_NUMBER + 1
                return number
        raise RuntimeError("no free target number")  # capacity <= 99: never

    def _measure(
        self,
        truth: Truth,
        target: Target,
        row: np.ndarray,
        antenna: np.ndarray,
        own_velocity: np.ndarray,
        track: Track,
        acquiring: bool,
    ) -> Report:
        """One target as the radar measures it; CPA and TCPA from the measured values."""
        t = truth.t
        north = float(row[T_NORTH]) - float(antenna[0])
        east = float(row[T_EAST]) - float(antenna[1])
        range_m = max(self.noisy("range", math.hypot(north, east), t), 0.0)
        bearing = self.noisy("bearing", math.degrees(math.atan2(east, north)), t) % 360.0
        name = target.identity.name if self.setting("names") else ""
        if acquiring:
            return Report(track.number, name, "Q", range_m, bearing)
        course = self.noisy("course", math.degrees(float(row[T_HEADING])), t) % 360.0
        speed = max(self.noisy("speed", float(row[T_SPEED]), t), 0.0)
        b, c = math.radians(bearing), math.radians(course)
        px, py = range_m * math.cos(b), range_m * math.sin(b)  # relative position, N and E
        vx = speed * math.cos(c) - float(own_velocity[0])  # relative velocity, N and E
        vy = speed * math.sin(c) - float(own_velocity[1])
        v2 = vx * vx + vy * vy
        tcpa = -(px * vx + py * vy) / v2 if v2 > 1e-12 else 0.0
        cpa = math.hypot(px + vx * tcpa, py + vy * tcpa)
        return Report(track.number, name, "T", range_m, bearing, speed, course, cpa, tcpa)

    def _values(self, r: Report) -> dict[str, float | None]:
        """A report's values in the sentence's units (the ``units`` setting's distance and
        speed, degrees, minutes); None where it has none."""
        per = UNIT_M[str(self.setting("units"))]

        def scaled(value: float | None, factor: float) -> float | None:
            return None if value is None else value * factor

        return {
            "distance": scaled(r.range_m, 1 / per),
            "bearing": r.bearing_deg,
            "speed": scaled(r.speed_ms, 3600.0 / per),
            "course": r.course_deg,
            "cpa": scaled(r.cpa_m, 1 / per),
            "tcpa": scaled(r.tcpa_s, 1 / 60.0),
        }

    def _line(self, r: Report, utc: datetime) -> bytes:
        v = self._values(r)
        return nmea.ttm(
            self.config.talker,
            r.number,
            v["distance"],
            v["bearing"],
            v["speed"],
            v["course"],
            v["cpa"],
            v["tcpa"],
            str(self.setting("units")),
            r.name,
            r.status,
            utc,
        )

    def summary(self) -> dict:
        """The base's counters; ``tracked`` now, ``acquired`` and ``lost`` so far, ``waiting``
        (target-intervals detected while every track was taken)."""
        return {
            **super().summary(),
            "tracked": len(self.tracks),
            "acquired": self.acquired,
            "lost": self.lost,
            "waiting": self.waiting,
        }

    # --- the serial budget --------------------------------------------------------------------
    def line_bytes(self) -> int:
        """The longest TTM: every field at its widest, a name of its room with ``names``."""
        m = dict(self.worst_case)
        return len(self._stand_in(m, datetime(2026, 12, 31, 23, 59, 59), True))

    def bytes_per_s(self, utc: datetime, traffic: Sequence[Target] = ()) -> float:
        """The worst-case load of the line [bytes/s]: one TTM per target per interval, each at
        its widest. Every target can be in view at once, so the targets are the bench's
        ``traffic``, or ``budget_targets`` if more (room for targets added while running);
        each is reported at most once an interval (tracked, acquiring or lost)."""
        n = max(len(traffic), int(self.setting("budget_targets")))
        return self.config.rate_hz * n * self.line_bytes()

    def epoch_bytes(self, utc: datetime) -> int:
        """An interval of ``budget_targets`` TTMs at their widest (for the base's budget,
        rate_hz x epoch_bytes = the line's load)."""
        return int(self.setting("budget_targets")) * self.line_bytes()

    # --- the base's measurement API (one TTM of a stand-in target, e.g. for tests) -------------
    def measure(self, truth: Truth) -> Measurement:
        """The nearest target tracked at the last interval, as its TTM gives it (NaN for a
        value it has none of, and for all with no target tracked)."""
        reports = [r for r in self._last_reports if r.status != "L"]
        if not reports:
            return {key: math.nan for key in self.worst_case}
        r = min(reports, key=lambda r: r.range_m if r.range_m is not None else math.inf)
        values = {k: math.nan if v is None else v for k, v in self._values(r).items()}
        return {"number": float(r.number), **values}

    def sentence(self, name: str, m: Measurement, utc: datetime, valid: bool) -> list[bytes]:
        """One TTM with ``m``'s values (status L and no values when not valid)."""
        return [self._stand_in(m, utc, valid)] if name == "TTM" else []

    def _stand_in(self, m: Measurement, utc: datetime, valid: bool) -> bytes:
        number = m["number"]
        number = int(min(max(number, 0), MAX_NUMBER)) if math.isfinite(number) else 0
        name = "W" * nmea.TTM_NAME_CHARS if self.setting("names") else ""
        if not valid:
            return nmea.ttm(
                self.config.talker,
                number,
                None,
                None,
                None,
                None,
                None,
                None,
                str(self.setting("units")),
                name,
                "L",
                utc,
            )
        return nmea.ttm(
            self.config.talker,
            number,
            m["distance"],
            m["bearing"],
            m["speed"],
            m["course"],
            m["cpa"],
            m["tcpa"],
            str(self.setting("units")),
            name,
            "T",
            utc,
        )
