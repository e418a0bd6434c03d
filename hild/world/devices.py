"""A device as the running daemon holds it: the device, its open ports, its schedule and its
failures (read by the tick observers through ``RunningDaemon.devices``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from hild.bus.device import CommandDevice
from hild.log import RateLimited
from hild.sensors.device import Device
from hild.transport import Port

log = structlog.get_logger("hild.daemon")  # the daemon's events, under its name


@dataclass
class DeviceRuntime:
    device: Device | CommandDevice
    ports: list[Port]
    period_s: float
    next_due_s: float = 0.0
    failures: int = 0  # epochs lost to an error in sampling or encoding
    log_failure: RateLimited = field(
        default_factory=lambda: RateLimited(log, "device.sample_failed", level="error")
    )
