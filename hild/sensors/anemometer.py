"""Anemometer: apparent (relative) and true wind, MWV R and T, and MWD."""

from __future__ import annotations

import math
from datetime import datetime
from typing import ClassVar

from hild.environment.wind import height_factor
from hild.nmea import sentences as nmea
from hild.sensors import kinematics
from hild.sensors.device import Device, Measurement
from hild.sensors.truth import Truth

# Below this speed a sonic anemometer leaves the wind's direction out: Gill WindSonic user
# manual (doc. 1405-PS-0019, issue 28, Nov 2019), "Kxx to Kxxxx - Minimum Direction Velocity":
# "The default is 50, which means that any wind magnitude less than 0.05m/s will have the wind
# direction omitted in Comma Separated Variable mode" (its NMEA set-up is CSV, O1, with K50).
# It is also where MWV's 0.1 m/s speed field starts to print 0.0.
MIN_DIRECTION_SPEED_MS = 0.05


def direction_of(angle_deg: float, speed_ms: float) -> float:
    """A wind's direction as the sensor reports it: NaN (an empty field, "not available" on
    NMEA 2000) for a wind slower than ``MIN_DIRECTION_SPEED_MS`` (also a NaN speed)."""
    return angle_deg if speed_ms >= MIN_DIRECTION_SPEED_MS else math.nan


class Anemometer(Device):
    """Apparent wind from the air's velocity relative to the sensor (thesis 4.4.1, 2.68-2.71).

    The MWV angle is clockwise from the bow, where the wind comes from: it equals
    -gamma_rw of thesis eq. 2.69. True wind (MWV T, MWD) removes the vessel's motion.
    With ``height_correction`` the wind is the one at the sensor's height above
    the water (from its position), not the presets' 10 m wind. A wind below 0.05 m/s has no
    direction (``direction_of``): MWV's angle and MWD's direction are left empty, the status
    stays A (valid), as a Gill WindSonic in its NMEA set-up does; a still boat in still air
    sends ``MWV,,R,0.0,M,A``.
    """

    model = "anemometer"
    sentences_available: ClassVar[tuple[str, ...]] = ("MWV", "MWD")
    noise_components = {"wind_speed": 1, "wind_angle": 1}
    worst_case = {
        "app_angle": 359.9,
        "app_speed": 999.9,
        "true_angle": 359.9,
        "true_speed": 999.9,
        "true_from": 359.9,
    }

    def wind_factor(self, truth: Truth) -> float:
        """The sensor's wind over the 10 m wind: the log profile at its height (thesis eq. 2.43)."""
        if not self.setting("height_correction"):
            return 1.0
        return height_factor(max(0.0, -(truth.eta[2] + self.lever_arm[2])))

    def measure(self, truth: Truth) -> Measurement:
        t = truth.t
        factor = self.wind_factor(truth)
        air = kinematics.air_velocity_body(truth, self.lever_arm, factor)
        # The wind comes from the direction opposite to the air's relative velocity.
        app_angle = math.degrees(math.atan2(-air[1], -air[0]))
        wind_n, wind_e = truth.wind_ned
        true_speed = factor * math.hypot(wind_n, wind_e)
        true_from = math.degrees(math.atan2(-wind_e, -wind_n))
        # (noise drawn at every epoch, with or without a direction: the streams stay the same)
        app_angle = self.noisy("wind_angle", app_angle, t) % 360.0
        app_speed = max(0.0, self.noisy("wind_speed", math.hypot(air[0], air[1]), t))
        return {
            "app_angle": direction_of(app_angle, app_speed),
            "app_speed": app_speed,
            "true_angle": direction_of(
                (true_from - math.degrees(truth.eta[5])) % 360.0, true_speed
            ),
            "true_speed": true_speed,
            "true_from": direction_of(true_from % 360.0, true_speed),
        }

    def sentence(self, name: str, m: Measurement, utc: datetime, valid: bool) -> list[bytes]:
        talker = self.config.talker
        if name == "MWV":
            out = [nmea.mwv(talker, m["app_angle"], "R", m["app_speed"], valid)]
            if self.setting("true_wind"):
                out.append(nmea.mwv(talker, m["true_angle"], "T", m["true_speed"], valid))
            return out
        if name == "MWD" and valid:
            return [nmea.mwd(talker, m["true_from"], m["true_speed"])]
        return []
