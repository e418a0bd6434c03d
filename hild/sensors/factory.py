"""Build the device model a configuration names."""

from __future__ import annotations

from hild.ardupilot.link import ArduPilotSitl
from hild.bus.device import CommandDevice
from hild.bus.models import COMMAND_MODELS
from hild.model.vessel import Vessel
from hild.sensors.catalog import SENSOR_MODELS
from hild.sensors.device import Device, DeviceConfig
from hild.sensors.geodesy import Origin


def build_device(
    config: DeviceConfig, seed: int, origin: Origin, vessel: Vessel | None = None
) -> Device | CommandDevice:
    """The runnable device for ``config``, its random streams derived from ``seed``.

    Command devices (the controller's bus) and ArduPilot's link need the ``vessel`` whose
    actuators they drive.
    """
    if config.model == ArduPilotSitl.model:
        if vessel is None:
            raise ValueError(f"device {config.name}: an {config.model} needs the vessel")
        return ArduPilotSitl(config, seed, origin, vessel)
    if config.model in COMMAND_MODELS:
        if vessel is None:
            raise ValueError(f"device {config.name}: a {config.model} needs the vessel")
        return COMMAND_MODELS[config.model](config, vessel, origin)
    return SENSOR_MODELS[config.model](config, seed, origin)
