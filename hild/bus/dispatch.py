"""The inbound path's fan-out: each received line goes to the command devices on its port."""

from __future__ import annotations

from collections.abc import Callable

from hild.bus.device import CommandDevice
from hild.control import ActuatorCommand, ControlQueue, HeadingReference
from hild.transport.base import Inbound

# (device name, the line, its command or None, (reason, detail) when refused)
Listener = Callable[[str, Inbound, ActuatorCommand | None, tuple[str, str] | None], None]


class Dispatcher:
    """Hands received lines to the command devices attached to the receiving port.

    A valid command or heading reference (HSC) becomes a record on the control queue;
    everything else is counted by the device that refused it. Lines on ports with no command
    device are only counted here.
    """

    def __init__(self, queue: ControlQueue):
        self.queue = queue
        self.received_lines = 0
        self._devices: dict[str, list[CommandDevice]] = {}
        self.listeners: list[Listener] = []  # told of every decoding (the recorder)

    def attach(self, port_url: str, device: CommandDevice) -> None:
        """Send the lines of the port named ``port_url`` (its PortSpec.url) to ``device``."""
        devices = self._devices.setdefault(port_url, [])
        if device not in devices:
            devices.append(device)

    def receive(self, inbound: Inbound) -> bool:
        """A port's on_line callback: decode, and queue what is valid. Never raises.

        Returns False when the line was of no use to any device on its port: every one refused
        it, and not because its watchdog is latched (a controller's lines then are commands
        still, waiting for its neutral one). A port may throttle a sender whose lines are all
        of no use (hild/transport/udp.py); True for anything else, a port with no device too.
        """
        self.received_lines += 1
        devices = self._devices.get(inbound.port, ())
        useful = not devices
        for device in devices:
            record = self.deliver(device, inbound)
            rejection = device.last_rejection
            if record is not None or (rejection is not None and rejection[0] == "latched"):
                useful = True
        return useful

    def deliver(
        self, device: CommandDevice, inbound: Inbound
    ) -> ActuatorCommand | HeadingReference | None:
        """One device decodes one line: a valid command or reference is queued, and the
        listeners hear of it either way (a reference as neither command nor rejection: it
        reaches them applied, as a control record). Lines from outside the ports (MQTT
        control/commands) come in here too."""
        record = device.receive(inbound)
        if record is not None:
            self.queue.put(record)
        command = record if isinstance(record, ActuatorCommand) else None
        for listener in self.listeners:
            listener(device.config.name, inbound, command, device.last_rejection)
        return record
