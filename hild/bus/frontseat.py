"""The Clearpath Heron frontseat: the boat side of MOOS-IvP's backseat-driver protocol.

A backseat driver (MOOS-IvP's iM200) connects over TCP and sends ``$PYDIR,<left>,<right>``
(thrust per cent); the frontseat streams its navigation back on the same connection, at the
rates of MOOS's simulators (shared/reference/protocols.md): CPNVG, GPRMC and GPGGA at 5 Hz,
CPNVR and CPRCM at 10 Hz, CPRBS every 2 s. The device's rate (10 Hz) is the fastest of them;
the others go out every few epochs.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import ClassVar

import numpy as np

from hild.bus.device import CommandDevice, SettingError
from hild.model.vessel import Vessel
from hild.nmea import sentences as nmea
from hild.sensors import kinematics
from hild.sensors.device import DeviceConfig
from hild.sensors.geodesy import Origin
from hild.sensors.truth import Truth
from hild.units import KNOTS_PER_MS

PERIODS_S = {  # seconds between two of each sentence
    "CPNVG": 0.2,
    "GPRMC": 0.2,
    "GPGGA": 0.2,
    "CPNVR": 0.1,
    "CPRCM": 0.1,
    "CPRBS": 2.0,
}


class Frontseat(CommandDevice):
    """PYDIR drives a twin-thruster boat; the navigation sentences report it."""

    model = "frontseat"
    sentences_available: ClassVar[tuple[str, ...]] = tuple(PERIODS_S)
    protocols_available = ("PYDIR", "PYDEV", "PYDEP")

    def __init__(self, config: DeviceConfig, vessel: Vessel, origin: Origin):
        super().__init__(config, vessel, origin)
        self.lever_arm = np.array(config.lever_arm, dtype=float)
        self._every = {
            name: max(1, round(PERIODS_S[name] * config.rate_hz)) for name in config.sentences
        }

    @classmethod
    def check_vessel(cls, vessel: Vessel) -> list[SettingError]:
        kinds = [a.kind for a in vessel.actuators]
        if len(kinds) != 2 or "waterjet" in kinds:
            have = ", ".join(f"{a.name}: {a.kind}" for a in vessel.actuators)
            return [SettingError("type", cls.model, f"a twin-thruster vessel ({vessel.name} has "
                                 f"{have})")]  # fmt: skip
        return []

    def sample(self, truth: Truth) -> list[bytes]:
        """This epoch's navigation sentences (the epoch counter picks the slower ones)."""
        epoch = self.stats.epochs
        self.stats.epochs += 1
        due = [name for name in self.config.sentences if epoch % self._every[name] == 0]
        lines = self.navigation(truth, due) if due else []
        self.stats.sentences += len(lines)
        return lines

    def navigation(self, truth: Truth, names: list[str]) -> list[bytes]:
        pos = kinematics.position_ned(truth, self.lever_arm)
        vel = kinematics.velocity_ned(truth, self.lever_arm)
        lat, lon, height = self.origin.to_geodetic(pos[0], pos[1], pos[2])
        heading = math.degrees(truth.eta[5]) % 360.0
        roll, pitch = math.degrees(truth.eta[3]), math.degrees(truth.eta[4])
        utc = truth.utc
        out: list[bytes] = []
        for name in names:
            if name == "CPNVG":
                out.append(nmea.cpnvg(utc, lat, lon, 1, heading, roll, pitch))
            elif name == "CPNVR":
                p, q = math.degrees(truth.nu[3]), math.degrees(truth.nu[4])
                r = math.degrees(kinematics.yaw_rate(truth))
                out.append(nmea.cpnvr(utc, vel[1], vel[0], vel[2], q, p, r))
            elif name == "CPRCM":
                out.append(nmea.cprcm(utc, "1", heading, pitch, roll))
            elif name == "CPRBS":
                out.append(nmea.cprbs(utc, float(self.config.settings["battery_voltage"])))
            elif name == "GPRMC":
                sog = math.hypot(vel[0], vel[1]) * KNOTS_PER_MS
                cog = math.degrees(math.atan2(vel[1], vel[0])) % 360.0
                out.append(nmea.rmc("GP", utc, True, lat, lon, sog, cog))
            elif name == "GPGGA":
                out.append(nmea.gga("GP", utc, lat, lon, 1, 10, 0.9, height, 0.0))
        return out

    def epoch_bytes(self, utc: datetime) -> int:
        """Bytes of the epoch that carries every sentence (a serial line's worst case)."""
        eta = np.array([0.0, 0.0, 0.0, -0.5, -0.5, 6.2])
        nu = np.array([-9.9, -9.9, -9.9, -1.0, -1.0, -1.0])
        truth = Truth(0.0, utc, eta, nu)
        return sum(len(line) for line in self.navigation(truth, list(self.config.sentences)))
