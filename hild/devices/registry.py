"""The registry of device kinds: a type name (a device file's ``model``) to its class and role.

Kinds are named here by module and class and loaded when first used, so that this room sits
below the ones it names (sensors/, bus/, ardupilot/ import nothing of it) and a run loads
only the kinds its bench has.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hild.devices.roles import COMMANDS, FRAMES, SENSOR

if TYPE_CHECKING:
    from hild.geodesy import Origin
    from hild.model.vessel import Vessel
    from hild.sensors.device import DeviceConfig


NMEA0183, NMEA2000 = "nmea0183", "nmea2000"  # what a kind's lines on its ports are


@dataclass(frozen=True)
class Kind:
    """One device kind: its type name, its role (hild/devices/roles.py), where it lives and
    what its lines are (NMEA 0183 sentences, or NMEA 2000 CAN frames in a gateway's framing)."""

    model: str
    role: str
    module: str
    name: str
    lines: str = NMEA0183

    @property
    def needs_vessel(self) -> bool:
        """A kind that drives the actuators is built for (and checked against) the vessel."""
        return self.role != SENSOR

    def load(self) -> Any:
        """The kind's class."""
        return getattr(importlib.import_module(self.module), self.name)


KINDS: dict[str, Kind] = {
    k.model: k
    for k in (
        Kind("gps", SENSOR, "hild.sensors.gps", "Gps"),
        Kind("heading", SENSOR, "hild.sensors.heading", "Heading"),
        Kind("anemometer", SENSOR, "hild.sensors.anemometer", "Anemometer"),
        Kind("speed-log", SENSOR, "hild.sensors.speed_log", "SpeedLog"),
        Kind("ais", SENSOR, "hild.sensors.ais", "Ais"),
        Kind("radar", SENSOR, "hild.sensors.radar", "Radar"),
        Kind("n2k-gnss", SENSOR, "hild.n2k.device", "N2kGnss", NMEA2000),
        Kind("n2k-compass", SENSOR, "hild.n2k.device", "N2kCompass", NMEA2000),
        Kind("n2k-wind", SENSOR, "hild.n2k.device", "N2kWind", NMEA2000),
        Kind("n2k-speed", SENSOR, "hild.n2k.device", "N2kSpeed", NMEA2000),
        Kind("n2k-ais", SENSOR, "hild.n2k.ais", "N2kAis", NMEA2000),
        Kind("n2k-engine", SENSOR, "hild.n2k.engines", "N2kEngine", NMEA2000),
        Kind("jet-controller", COMMANDS, "hild.bus.device", "JetController"),
        Kind("thruster-controller", COMMANDS, "hild.bus.device", "ThrusterController"),
        Kind("frontseat", COMMANDS, "hild.bus.frontseat", "Frontseat"),
        Kind("ardupilot-sitl", FRAMES, "hild.ardupilot.link", "ArduPilotSitl"),
    )
}


def speaks_n2k(model: str) -> bool:
    """Whether a kind's lines are NMEA 2000 frames (an unknown type name: no)."""
    kind = KINDS.get(model)
    return kind is not None and kind.lines == NMEA2000


def models(role: str) -> tuple[str, ...]:
    """The type names of the kinds that play ``role``."""
    return tuple(k.model for k in KINDS.values() if k.role == role)


def build_device(
    config: DeviceConfig, seed: int, origin: Origin, vessel: Vessel | None = None
) -> Any:
    """The runnable device for ``config``, its random streams derived from ``seed``.

    Kinds that drive the actuators (the controller's bus, ArduPilot's link) need the
    ``vessel`` whose actuators they drive.
    """
    kind = KINDS[config.model]
    cls = kind.load()
    if not kind.needs_vessel:
        return cls(config, seed, origin)
    if vessel is None:
        raise ValueError(f"device {config.name}: a {config.model} needs the vessel")
    if kind.role == FRAMES:
        return cls(config, seed, origin, vessel)
    return cls(config, vessel, origin)


__all__ = ["COMMANDS", "FRAMES", "KINDS", "SENSOR", "Kind", "build_device", "models"]
