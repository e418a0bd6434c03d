"""GNSS receiver (optionally a dual-antenna compass): GGA, RMC, VTG, ZDA, GSA, GSV, HDT."""

from __future__ import annotations

import math
import zlib
from datetime import datetime
from typing import ClassVar

import numpy as np

from hild.geodesy import Origin
from hild.nmea import sentences as nmea
from hild.sensors import kinematics
from hild.sensors.course import CourseOverGround
from hild.sensors.device import Device, DeviceConfig, Measurement
from hild.sensors.truth import Truth
from hild.units import KNOTS_PER_MS


class Gps(Device):
    """Position and velocity of the antenna (lever arm), heading from the vessel's yaw; the
    course over ground as a u-blox receiver reports it below 0.1 m/s (``cog_at_rest``)."""

    model = "gps"
    sentences_available: ClassVar[tuple[str, ...]] = (
        "GGA",
        "RMC",
        "VTG",
        "ZDA",
        "GSA",
        "GSV",
        "HDT",
    )
    noise_components = {"position": 2, "altitude": 1, "velocity": 2, "heading": 1}
    worst_case = {
        "lat": -89.99999,
        "lon": -179.99999,
        "alt": -9999.9,  # the widths sentences.py prints them with
        "sog_kn": 999.99,
        "cog": 359.9,
        "heading": 359.99,
    }

    def __init__(self, config: DeviceConfig, seed: int, origin: Origin):
        super().__init__(config, seed, origin)
        self.course = CourseOverGround(str(config.settings.get("cog_at_rest", "empty")))
        rng = np.random.default_rng([seed, zlib.crc32(b"sky:" + config.name.encode())])
        n = int(self.setting("satellites"))
        prns = sorted(rng.choice(np.arange(1, 33), size=min(n, 32), replace=False).tolist())
        self.sky = [
            (p, int(rng.integers(5, 86)), int(rng.integers(0, 360)), int(rng.integers(30, 49)))
            for p in prns
        ]

    def measure(self, truth: Truth) -> Measurement:
        t = truth.t
        pos = kinematics.position_ned(truth, self.lever_arm)
        vel = kinematics.velocity_ned(truth, self.lever_arm)
        north = self.noisy("position", pos[0], t, 0)
        east = self.noisy("position", pos[1], t, 1)
        lat, lon, height = self.origin.to_geodetic(north, east, pos[2])
        v_n = self.noisy("velocity", vel[0], t, 0)
        v_e = self.noisy("velocity", vel[1], t, 1)
        return {
            "lat": lat,
            "lon": lon,
            "alt": self.noisy("altitude", height - self.setting("geoid_separation"), t),
            "sog_kn": math.hypot(v_n, v_e) * KNOTS_PER_MS,
            "cog": self.course(v_n, v_e),  # NaN: an empty field
            "heading": self.noisy("heading", math.degrees(truth.eta[5]), t) % 360.0,
        }

    def sentence(self, name: str, m: Measurement, utc: datetime, valid: bool) -> list[bytes]:
        talker = self.config.talker
        decimals = int(self.setting("position_decimals"))
        used = [p for p, *_ in self.sky][:12] if valid else []
        lat = m["lat"] if valid else None
        lon = m["lon"] if valid else None
        sog = m["sog_kn"] if valid else None
        cog = m["cog"] if valid else None
        if name == "GGA":
            quality = int(self.setting("fix_quality")) if valid else 0
            return [
                nmea.gga(
                    talker,
                    utc,
                    lat,
                    lon,
                    quality,
                    len(used),
                    self.setting("hdop"),
                    m["alt"],
                    self.setting("geoid_separation"),
                    decimals,
                )
            ]
        if name == "RMC":
            return [nmea.rmc(talker, utc, valid, lat, lon, sog, cog, decimals=decimals)]
        if name == "VTG":
            return [nmea.vtg(talker, cog, sog)]
        if name == "ZDA":
            return [nmea.zda(talker, utc)]
        if name == "GSA":
            return [
                nmea.gsa(
                    talker,
                    used,
                    self.setting("pdop"),
                    self.setting("hdop"),
                    self.setting("vdop"),
                    3 if valid else 1,
                )
            ]
        if name == "GSV":
            return nmea.gsv(talker, self.sky)
        if name == "HDT" and valid:
            return [nmea.hdt(talker, m["heading"])]
        return []
