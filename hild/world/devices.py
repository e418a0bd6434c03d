"""A device as the world holds it: the device, its role, its open ports (a driver's), its
schedule on simulated time and its failures (the observers see it through the world's view,
hild/world/view.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import structlog

from hild.devices.roles import COMMANDS, SENSOR
from hild.log import RateLimited
from hild.transport import Port

log = structlog.get_logger("hild.daemon")  # the run's events, under the daemon's name


@dataclass
class DeviceRuntime:
    device: Any  # a Sampled device (hild/devices/roles.py)
    ports: list[Port]
    period_s: float
    next_due_s: float = 0.0
    failures: int = 0  # epochs lost to an error in sampling or encoding
    role: str = SENSOR  # its kind's (hild/devices/registry.py)
    boat: int = 0  # the index of the boat it is on (a fleet's; 0: the first, or the only)
    log_failure: RateLimited = field(
        default_factory=lambda: RateLimited(log, "device.sample_failed", level="error")
    )

    @property
    def takes_commands(self) -> bool:
        return self.role == COMMANDS

    @property
    def takes_requests(self) -> bool:
        """A device that hears its ports and answers at its next epoch (an NMEA 2000 node's
        ISO requests: hild/bus/dispatch.py ``Hears``)."""
        return callable(getattr(self.device, "hear", None))
