"""Heading and attitude sensor (gyro compass, GNSS compass or MRU): HDT, THS, ROT, PASHR, XDR."""

from __future__ import annotations

import math
from datetime import datetime
from typing import ClassVar

from hild.nmea import sentences as nmea
from hild.sensors import kinematics
from hild.sensors.device import Device, Measurement
from hild.sensors.truth import Truth


class Heading(Device):
    """Heading from psi, rate of turn from psi_dot, roll and pitch from phi and theta.

    Attitude goes out as PASHR (the RT300/TSS format of POS MV, SPAN and many MRUs):
    roll positive starboard down, pitch positive bow up (Fossen's phi and theta),
    heave positive up at the sensor. Roll and pitch also go out as XDR for chart plotters:
    ``A,<roll>,D,ROLL,A,<pitch>,D,PTCH`` in the same signs (see ``attitude_xdr``).
    """

    model = "heading"
    sentences_available: ClassVar[tuple[str, ...]] = ("HDT", "THS", "ROT", "PASHR", "XDR")
    noise_components = {"heading": 1, "rate_of_turn": 1, "roll": 1, "pitch": 1, "heave": 1}
    worst_case = {
        "heading": 359.99,
        "rot": -9999.9,
        "roll": -179.99,
        "pitch": -179.99,
        "heave": -99.99,
    }

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
            return [
                nmea.pashr(
                    utc, m["heading"], m["roll"], m["pitch"], m["heave"], sd, sd, sd, status, status
                )
            ]
        if name == "XDR":
            return attitude_xdr(talker, m["roll"], m["pitch"]) if valid else []
        return []


# OpenCPN's dashboard (plugins/dashboard_pi/src/dashboard_pi.cpp, its XDR branch; the parser
# in plugins/dashboard_pi/src/nmea0183/xdr.cpp) reads attitude from XDR quadruplets whose
# transducer type is "A" (angular displacement): a name containing "PTCH" or "PITCH" is the
# pitch, positive shown as up, negative as down; a name containing "ROLL" is the heel,
# positive shown to starboard, negative to port. It does not look at the unit field (hild
# sends "D", degrees) and displays one decimal. The parser takes the number of fields over 4
# as the count of quadruplets (1 to 10), checks the checksum, and reads an empty value as
# NaN. NMEA 2000's PGN 127257 is read with the same signs.
XDR_ROLL = "ROLL"
XDR_PITCH = "PTCH"


def attitude_xdr(talker: str, roll_deg: float, pitch_deg: float) -> list[bytes]:
    """XDR with roll (positive starboard down) and pitch (positive bow up) in degrees, each
    wrapped into [-180, 180) as PASHR's are. A value that is not finite leaves its
    quadruplet out, rather than an empty field a plotter might show as 0; none, no line."""
    groups = [
        ("A", (value + 180.0) % 360.0 - 180.0, "D", name)
        for value, name in ((roll_deg, XDR_ROLL), (pitch_deg, XDR_PITCH))
        if math.isfinite(value)
    ]
    return [nmea.xdr(talker, groups)] if groups else []
