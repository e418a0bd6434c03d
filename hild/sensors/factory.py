"""Build the device model a configuration names."""

from __future__ import annotations

from hild.sensors.catalog import MODELS
from hild.sensors.device import Device, DeviceConfig
from hild.sensors.geodesy import Origin


def build_device(config: DeviceConfig, seed: int, origin: Origin) -> Device:
    """The runnable device for ``config``, its random streams derived from ``seed``."""
    return MODELS[config.model](config, seed, origin)
