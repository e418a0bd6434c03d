"""Speed log: speed through water (VHW, VBW) and, for a Doppler log, over ground (VBW)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import ClassVar

from hild.nmea import sentences as nmea
from hild.sensors import kinematics
from hild.sensors.device import Device, Measurement
from hild.sensors.truth import Truth
from hild.units import KNOTS_PER_MS


class SpeedLog(Device):
    """Longitudinal and transverse speed at the transducer, through water and over ground."""

    model = "speed-log"
    sentences_available: ClassVar[tuple[str, ...]] = ("VHW", "VBW")
    noise_components = {"speed": 2, "heading": 1}
    worst_case = {
        "water_long": -999.99,
        "water_trans": -999.99,
        "ground_long": -999.99,
        "ground_trans": -999.99,
        "heading": 359.9,
    }

    def measure(self, truth: Truth) -> Measurement:
        t = truth.t
        water = kinematics.water_velocity_body(truth, self.lever_arm)
        ground = kinematics.velocity_body(truth, self.lever_arm)
        return {
            "water_long": self.noisy("speed", water[0], t, 0) * KNOTS_PER_MS,
            "water_trans": self.noisy("speed", water[1], t, 1) * KNOTS_PER_MS,
            "ground_long": ground[0] * KNOTS_PER_MS,
            "ground_trans": ground[1] * KNOTS_PER_MS,
            "heading": self.noisy("heading", math.degrees(truth.eta[5]), t) % 360.0,
        }

    def sentence(self, name: str, m: Measurement, utc: datetime, valid: bool) -> list[bytes]:
        talker = self.config.talker
        if name == "VHW":
            heading = m["heading"] if self.setting("heading") else None
            return [nmea.vhw(talker, heading, m["water_long"] if valid else None)]
        if name == "VBW":
            has_ground = valid and self.setting("ground_speed")
            return [
                nmea.vbw(
                    talker,
                    m["water_long"],
                    m["water_trans"],
                    m["ground_long"] if has_ground else None,
                    m["ground_trans"] if has_ground else None,
                    valid,
                )
            ]
        return []
