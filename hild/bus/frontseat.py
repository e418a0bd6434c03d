"""The Clearpath Heron frontseat: the boat side of MOOS-IvP's backseat-driver protocol.

A backseat driver (MOOS-IvP's iM200) connects over TCP and sends ``$PYDIR,<left>,<right>``
(thrust per cent); the frontseat streams its navigation back on the same connection, as the
Heron's heron_nmea does (heron/heron_robot: launch/nmea_if.launch, nodes/nav_publisher,
nodes/imu_publisher, REFERENCE.md): CPNVG, CPNVR, CPIMU, CPRCM, GPRMC and GPGGA at 5 Hz,
CPRBS and CPALT every 2 s. The device's rate is the fastest of them; the others go out every
few epochs.

What the Heron puts in the fields (its nav and IMU publishers):
- CPNVG: heading from the compass, or the GPS course over ground above 0.2 m/s
  (``cpnvg_heading = "heron"``; "compass" keeps the compass); roll, pitch, altitude and depth
  0.
- CPNVR: GPS velocity east and north, 0 down, then the gyro's pitch, roll and yaw rates
  about the body axes (x forward, y starboard, z down) [deg/s].
- CPIMU: the gyro's rates about x, y, z [deg/s] and the accelerometer's specific force along
  them [m/s^2] (about (0, 0, -9.81) at rest and level), same axes.
- CPRCM: compass ID 0, heading zero facing south and increasing counter-clockwise, i.e.
  (180 - heading) mod 360, pitch positive bow down, roll positive starboard down.
- GPRMC, GPGGA: the GPS receiver's own (a u-blox), its course at rest as ``cog_at_rest``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

import numpy as np

from hild.bus.device import CommandDevice, SettingError
from hild.geodesy import Origin
from hild.model.vessel import Vessel
from hild.nmea import sentences as nmea
from hild.nmea.epoch import build_all
from hild.sensors import kinematics
from hild.sensors.course import CourseOverGround
from hild.sensors.device import DeviceConfig
from hild.sensors.truth import Truth
from hild.units import KNOTS_PER_MS

PERIODS_S = {  # seconds between two of each sentence (nmea_if.launch: nav and imu 5 Hz,
    "CPNVG": 0.2,  # battery and lights 0.5 Hz; the GPS's own sentences relayed as they come)
    "GPRMC": 0.2,
    "GPGGA": 0.2,
    "CPNVR": 0.2,
    "CPRCM": 0.2,
    "CPIMU": 0.2,
    "CPRBS": 2.0,
    "CPALT": 2.0,
}
CPNVG_HEADINGS = ("heron", "compass")
GPS_HEADING_MIN_SPEED_MS = 0.2  # nav_publisher: the GPS course replaces the compass above it
COMPASS_ID = "0"  # imu_publisher's compass_id


@dataclass(frozen=True)
class Navigation:
    """One instant as the frontseat's sentences carry it (degrees, m/s, knots; NaN: empty)."""

    lat: float
    lon: float
    height: float  # m above the ellipsoid
    heading: float  # compass, 0-360 clockwise from north
    nvg_heading: float  # CPNVG's: compass or GPS course
    roll: float
    pitch: float
    vel_north: float
    vel_east: float
    rates: tuple[float, float, float]  # p, q, r [deg/s]
    accel: tuple[float, float, float]  # specific force along x, y, z [m/s^2]
    sog_kn: float
    cog: float


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
        s = config.settings
        self.compass_only = s.get("cpnvg_heading", "heron") == "compass"
        self.course = CourseOverGround(str(s.get("cog_at_rest", "hold")))
        self.accelerometer = kinematics.Accelerometer(self.lever_arm)  # CPIMU's

    @classmethod
    def check_vessel(cls, vessel: Vessel) -> list[SettingError]:
        kinds = [a.kind for a in vessel.actuators]
        if len(kinds) != 2 or "waterjet" in kinds:
            have = ", ".join(f"{a.name}: {a.kind}" for a in vessel.actuators)
            return [
                SettingError(
                    "type", cls.model, f"a twin-thruster vessel ({vessel.name} has {have})"
                )
            ]
        return []

    @classmethod
    def check(cls, config: DeviceConfig, vessel: Vessel) -> list[SettingError]:
        problems = super().check(config, vessel)
        value = config.settings.get("cpnvg_heading", "heron")
        if value not in CPNVG_HEADINGS:
            problems.append(
                SettingError("cpnvg_heading", value, "one of " + ", ".join(CPNVG_HEADINGS))
            )
        return problems

    def sample(self, truth: Truth) -> list[bytes]:
        """This epoch's navigation sentences (the epoch counter picks the slower ones)."""
        epoch = self.stats.epochs
        self.stats.epochs += 1
        due = [name for name in self.config.sentences if epoch % self._every[name] == 0]
        if not due:
            return []
        nav = self.navigation_state(truth)
        lines = self.failures.build(due, self._builder(nav, truth.utc))
        self.stats.sentences += len(lines)
        return lines

    def navigation(self, truth: Truth, names: list[str]) -> list[bytes]:
        """The sentences ``names`` for one instant; raises if one cannot be encoded."""
        return build_all(names, self._builder(self.navigation_state(truth), truth.utc))

    def navigation_state(self, truth: Truth) -> Navigation:
        """The instant in the Heron's terms (its nav and IMU publishers)."""
        pos = kinematics.position_ned(truth, self.lever_arm)
        vel = kinematics.velocity_ned(truth, self.lever_arm)
        lat, lon, height = self.origin.to_geodetic(pos[0], pos[1], pos[2])
        compass = math.degrees(truth.eta[5]) % 360.0
        nvg_heading = compass
        if not self.compass_only and math.hypot(vel[0], vel[1]) > GPS_HEADING_MIN_SPEED_MS:
            nvg_heading = math.degrees(math.atan2(vel[1], vel[0])) % 360.0
        p, q, r = (math.degrees(w) for w in truth.nu[3:6])
        return Navigation(
            lat=lat,
            lon=lon,
            height=height,
            heading=compass,
            nvg_heading=nvg_heading,
            roll=math.degrees(truth.eta[3]),
            pitch=math.degrees(truth.eta[4]),
            vel_north=float(vel[0]),
            vel_east=float(vel[1]),
            rates=(p, q, r),
            accel=self.accelerometer.specific_force(truth),
            sog_kn=math.hypot(vel[0], vel[1]) * KNOTS_PER_MS,
            cog=self.course(float(vel[0]), float(vel[1])),
        )

    def _builder(self, nav: Navigation, utc: datetime) -> Callable[[str], list[bytes]]:
        def one(name: str) -> list[bytes]:
            return [self.sentence(name, nav, utc)]

        return one

    def sentence(self, name: str, nav: Navigation, utc: datetime) -> bytes:
        """One sentence of the instant ``nav`` (the Heron's fields: the module's docstring)."""
        p, q, r = nav.rates
        if name == "CPNVG":  # the Heron reports roll and pitch as 0
            return nmea.cpnvg(utc, nav.lat, nav.lon, 1, nav.nvg_heading, 0.0, 0.0)
        if name == "CPNVR":  # the Heron sends 0 for the vertical velocity
            return nmea.cpnvr(utc, nav.vel_east, nav.vel_north, 0.0, q, p, r)
        if name == "CPIMU":
            return nmea.cpimu(utc, nav.rates, nav.accel)
        if name == "CPRCM":  # REFERENCE.md: zero facing south, counter-clockwise
            return nmea.cprcm(utc, COMPASS_ID, (180.0 - nav.heading) % 360.0, -nav.pitch, nav.roll)
        if name == "CPRBS":
            return nmea.cprbs(utc, float(self.config.settings["battery_voltage"]))
        if name == "CPALT":
            return nmea.cpalt(utc, bool(self.config.settings.get("lights", True)))
        if name == "GPRMC":
            return nmea.rmc("GP", utc, True, nav.lat, nav.lon, nav.sog_kn, nav.cog)
        if name == "GPGGA":
            return nmea.gga("GP", utc, nav.lat, nav.lon, 1, 10, 0.9, nav.height, 0.0)
        raise ValueError(f"{name}: not a frontseat sentence")

    def epoch_bytes(self, utc: datetime) -> int:
        """Bytes of the epoch that carries every sentence (a serial line's worst case): each
        field at the widest value it is printed with."""
        rates, accel = (-999.99,) * 3, (-999.999,) * 3
        worst = Navigation(
            lat=-89.99999,
            lon=-179.99999,
            height=-9999.9,
            heading=359.9,
            nvg_heading=359.9,
            roll=-179.9,
            pitch=179.9,
            vel_north=-99.99,
            vel_east=-99.99,
            rates=rates,
            accel=accel,
            sog_kn=999.99,
            cog=359.9,
        )
        lines = build_all(self.config.sentences, self._builder(worst, utc))
        return sum(len(line) for line in lines)
