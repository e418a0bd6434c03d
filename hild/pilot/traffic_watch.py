"""`hild pilot --stop-cpa`: watch the AIS targets on the sensor line and stop the run when
one would pass closer than a limit.

The pilot does not avoid anyone (that is the job of the controller under test); this is the
bench's safety line: the AIS position reports (types 1, 2, 3 and 18, ITU-R M.1371-5) on the
pilot's NMEA input, decoded with pyais as any AIS client would, each target dead-reckoned
from its last report to the own fix's time; CPA and TCPA from the two velocities over
ground, both held (the textbook relative-motion solution).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hild.geodesy import Origin
from hild.kit import cpa_tcpa  # (the one home of the formula a controller uses too)
from hild.units import KNOTS_PER_MS

POSITION_TYPES = (1, 2, 3, 18)
NOT_AVAILABLE_SOG = 102.3  # kn: "not available" (ITU-R M.1371-5, message 1 field 6)
NOT_AVAILABLE_COG = 360.0  # deg


@dataclass(frozen=True)
class Contact:
    """A target as its last position report said it, at sensor time ``t`` [s]."""

    mmsi: int
    latitude_deg: float
    longitude_deg: float
    sog: float  # m/s
    cog: float  # rad
    t: float


@dataclass(frozen=True)
class Approach:
    mmsi: int
    range_m: float
    cpa_m: float
    tcpa_s: float


def _number(value: object) -> float | None:
    """A decoded field as a float; None when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


class TrafficWatch:
    """The AIS contacts heard so far, and the first one that comes too close."""

    def __init__(self, limit_m: float, horizon_s: float):
        self.limit_m = limit_m
        self.horizon_s = horizon_s
        self.contacts: dict[int, Contact] = {}
        self.reports = 0
        self.undecodable = 0

    def feed(self, line: str, t: float) -> None:
        """An encapsulated line (``!AIVDM``...) heard at sensor time ``t``."""
        from pyais import decode  # (imported by a pilot that watches traffic, only)

        try:
            msg = decode(line).asdict()
        except Exception:  # pyais raises its own kinds for every malformed input
            self.undecodable += 1
            return
        if msg.get("msg_type") not in POSITION_TYPES:
            return
        lat, lon = _number(msg.get("lat")), _number(msg.get("lon"))
        if lat is None or lon is None or abs(lat) > 90.0:
            return  # 91 / 181: position not available
        sog_kn = _number(msg.get("speed")) or 0.0
        cog_deg = _number(msg.get("course")) or 0.0
        sog = 0.0 if sog_kn >= NOT_AVAILABLE_SOG else sog_kn / KNOTS_PER_MS
        cog = 0.0 if cog_deg >= NOT_AVAILABLE_COG else math.radians(cog_deg)
        mmsi = int(str(msg["mmsi"]))
        self.contacts[mmsi] = Contact(mmsi, float(lat), float(lon), sog, cog, t)
        self.reports += 1

    def closest(
        self, origin: Origin, north: float, east: float, sog: float, cog: float, t: float
    ) -> Approach | None:
        """The contact whose CPA from the own ship (at NED ``north``, ``east`` from ``origin``,
        moving at ``sog`` along ``cog``) is under the limit within the horizon, if any."""
        own_vn, own_ve = sog * math.cos(cog), sog * math.sin(cog)
        worst: Approach | None = None
        for c in self.contacts.values():
            n, e, _ = origin.to_ned(c.latitude_deg, c.longitude_deg)
            vn, ve = c.sog * math.cos(c.cog), c.sog * math.sin(c.cog)
            ahead = t - c.t  # dead reckoning from its report to this fix
            rel_n, rel_e = n + vn * ahead - north, e + ve * ahead - east
            cpa, tcpa = cpa_tcpa(rel_n, rel_e, vn - own_vn, ve - own_ve)
            if tcpa < 0.0:  # opening: the closest is now
                cpa, tcpa = math.hypot(rel_n, rel_e), 0.0
            if cpa < self.limit_m and tcpa <= self.horizon_s:
                approach = Approach(c.mmsi, math.hypot(rel_n, rel_e), cpa, tcpa)
                if worst is None or approach.cpa_m < worst.cpa_m:
                    worst = approach
        return worst
