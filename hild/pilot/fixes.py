"""Readings -> fixes: one fix per epoch of time-stamped sentences.

A GNSS receiver sends an epoch as a burst (GGA, RMC, VTG, ZDA, HDT in some
order). Only some sentences carry the time; the others belong to the burst
they arrive in. A fix goes out as soon as its epoch has every field the
previous epoch had (so the heading that follows the position in the same
burst is used, not the one of a second ago), when the next epoch's time
arrives, or after ``settle_s`` of wall time; whichever comes first.

Time is the sentences' UTC time (seconds of the day, unwrapped across
midnight), never the wall clock, so the pilot behaves the same whatever the
daemon's time scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hild.nmea.decode import Reading

DAY_S = 86400.0
MOTION = ("heading", "sog", "cog")
TIME_JUMP_S = 10.0  # an earlier time by more than this is a restart, not a late sentence
CARRY_S = 2.5  # motion fields older than this (sentence time) are not carried into a fix


@dataclass(frozen=True)
class GeoFix:
    """One epoch: time [s, unwrapped UTC], position [deg], motion [m/s, rad] (None if unknown)."""

    time_s: float
    latitude_deg: float
    longitude_deg: float
    heading: float | None = None
    sog: float | None = None
    cog: float | None = None


@dataclass
class _Epoch:
    time_s: float
    opened_wall: float
    latitude_deg: float | None = None
    longitude_deg: float | None = None
    fresh: set[str] = field(default_factory=set)
    emitted: bool = False


class FixAssembler:
    """Collects readings into epochs and hands out each epoch's fix once."""

    def __init__(self, settle_s: float = 0.25):
        self.settle_s = settle_s
        self._interval_wall: float | None = None  # smoothed wall time between epochs
        self.required: frozenset[str] = frozenset(("position", *MOTION))
        self.late = 0  # readings with an earlier time than the current epoch
        self._epoch: _Epoch | None = None
        self._day = 0.0
        self._last_of_day: float | None = None
        self._motion: dict[str, tuple[float, float | None]] = {}  # name -> (value, epoch time)

    def add(self, reading: Reading, now_wall: float) -> list[GeoFix]:
        """Take one reading; return the fixes it completes (zero, one, or two)."""
        out: list[GeoFix] = []
        if reading.time_s is not None:
            t = self._unwrap(reading.time_s)
            epoch = self._epoch
            if epoch is not None and epoch.time_s - TIME_JUMP_S <= t < epoch.time_s - 1e-6:
                self.late += 1
                return out
            if epoch is None or abs(t - epoch.time_s) > 1e-6:
                out.extend(self._close())
                if epoch is not None:
                    self._learn_interval(now_wall - epoch.opened_wall)
                self._epoch = _Epoch(t, now_wall)
        self._merge(reading)
        out.extend(self._emit_if(complete=True))
        return out

    def deadline(self) -> float | None:
        """Wall time at which ``poll`` will emit the pending epoch's fix, if one is pending."""
        epoch = self._epoch
        if epoch is None or epoch.emitted or "position" not in epoch.fresh:
            return None
        settle = self.settle_s
        if self._interval_wall is not None:
            settle = min(settle, max(0.005, 0.25 * self._interval_wall))
        return epoch.opened_wall + settle

    def poll(self, now_wall: float) -> list[GeoFix]:
        """The pending epoch's fix once its settling time has passed."""
        deadline = self.deadline()
        if deadline is None or now_wall < deadline:
            return []
        return self._emit_if(complete=False)

    def _learn_interval(self, interval: float) -> None:
        if interval <= 0.0:
            return
        if self._interval_wall is None:
            self._interval_wall = interval
        else:
            self._interval_wall += 0.2 * (interval - self._interval_wall)

    def _unwrap(self, seconds_of_day: float) -> float:
        last = self._last_of_day
        if last is not None and seconds_of_day < last - DAY_S / 2:
            self._day += DAY_S  # past midnight
        elif last is not None and seconds_of_day > last + DAY_S / 2:
            self._day -= DAY_S  # a late sentence from before midnight
        self._last_of_day = seconds_of_day
        return self._day + seconds_of_day

    def _merge(self, r: Reading) -> None:
        epoch = self._epoch
        stamp = None if epoch is None else epoch.time_s
        for name in MOTION:
            value = getattr(r, name)
            if value is not None:
                self._motion[name] = (value, stamp)
                if epoch is not None:
                    epoch.fresh.add(name)
        if epoch is not None and r.has_position:
            epoch.latitude_deg, epoch.longitude_deg = r.latitude_deg, r.longitude_deg
            epoch.fresh.add("position")

    def _close(self) -> list[GeoFix]:
        """The current epoch ends: emit it if still pending; learn what an epoch carries."""
        epoch = self._epoch
        if epoch is None:
            return []
        out = self._emit_if(complete=False)
        if "position" in epoch.fresh:
            self.required = frozenset(epoch.fresh)
        return out

    def _emit_if(self, complete: bool) -> list[GeoFix]:
        epoch = self._epoch
        if epoch is None or epoch.emitted or "position" not in epoch.fresh:
            return []
        if complete and not self.required <= epoch.fresh:
            return []
        epoch.emitted = True
        motion = {name: self._carried(name, epoch.time_s) for name in MOTION}
        assert epoch.latitude_deg is not None and epoch.longitude_deg is not None
        return [GeoFix(epoch.time_s, epoch.latitude_deg, epoch.longitude_deg, **motion)]

    def _carried(self, name: str, t: float) -> float | None:
        value, stamp = self._motion.get(name, (None, None))
        if value is None or (stamp is not None and abs(t - stamp) > CARRY_S):
            return None
        return value
