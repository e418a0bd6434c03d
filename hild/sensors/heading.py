"""Heading and attitude sensor (gyro compass, GNSS compass or MRU): HDT, THS, ROT, PASHR."""

from __future__ import annotations

import math
from datetime import datetime

from hild.nmea import sentences as nmea
from hild.sensors import kinematics
from hild.sensors.device import Device, Measurement
from hild.sensors.truth import Truth


class Heading(Device):
    """Heading from psi, rate of turn from psi_dot, roll and pitch from phi and theta.

    Attitude goes out as PASHR (the RT300/TSS format of POS MV, SPAN and many MRUs):
    roll positive starboard down, pitch positive bow up (Fossen's phi and theta),
    heave positive up at the sensor.
    """

    model = "heading"
    sentences_available = ("HDT", "THS", "ROT", "PASHR")
    noise_components = {"heading": 1, "rate_of_turn": 1, "roll": 1, "pitch": 1, "heave": 1}
    worst_case = {"heading": 359.99, "rot": -9999.9, "roll": -179.99, "pitch": -179.99,
                  "heave": -99.99}  # fmt: skip

    def measure(self, truth: Truth) -> Measurement:
        t = truth.t
        down = kinematics.position_ned(truth, self.lever_arm)[2]
        return {
            "heading": self.noisy("heading", math.degrees(truth.eta[5]), t) % 360.0,
            "rot": self.noisy("rate_of_turn", math.degrees(kinematics.yaw_rate(truth)) * 60.0, t),
            "roll": self.noisy("roll", math.degrees(truth.eta[3]), t),
            "pitch": self.noisy("pitch", math.degrees(truth.eta[4]), t),
            "heave": self.noisy("heave", -down, t),
        }

    def sentence(self, name: str, m: Measurement, utc: datetime, valid: bool) -> list[bytes]:
        talker = self.config.talker
        if name == "HDT":
            return [nmea.hdt(talker, m["heading"])] if valid else []
        if name == "THS":
            return [nmea.ths(talker, m["heading"] if valid else None)]
        if name == "ROT":
            return [nmea.rot(talker, m["rot"] if valid else None)]
        if name == "PASHR":
            sd = self.setting("accuracy_deg")
            status = 1 if valid else 0
            return [nmea.pashr(utc, m["heading"], m["roll"], m["pitch"], m["heave"], sd, sd, sd,
                               status, status)]  # fmt: skip
        return []
