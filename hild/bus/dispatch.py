"""The inbound path's fan-out: each received line goes to the command devices on its port, and
to the devices that hear their ports (an NMEA 2000 node's ISO requests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from hild.bus.reference import FORMATTER as HSC_FORMATTER
from hild.bus.screen import Screen
from hild.bus.sentence import CHECKSUMS, MALFORMED
from hild.control import ActuatorCommand, ControlQueue, HeadingReference
from hild.transport.base import Inbound, Verdict

if TYPE_CHECKING:
    from hild.devices.roles import TakesCommands

# (device name, the line, its command or None, (reason, detail) when refused)
Listener = Callable[[str, Inbound, ActuatorCommand | None, tuple[str, str] | None], None]


class Hears(Protocol):
    """A sampled device that hears its ports' lines and answers them itself, at its next epoch
    (an NMEA 2000 node: hild/n2k/requests.py). ``hear`` runs on the event loop: it only notes
    the line (thread-safe, never raises, never awaits) and says what the line was to it."""

    def hear(self, inbound: Inbound) -> Verdict: ...


class Dispatcher:
    """Hands received lines to the command devices attached to the receiving port.

    A valid command or heading reference (HSC) becomes a record on the control queue;
    everything else is counted by the device that refused it. Lines on ports with no command
    device are only counted here.
    """

    def __init__(self, queue: ControlQueue, now: Callable[[], float]):
        self.queue = queue
        self.now = now  # the simulated time, the watchdogs' clock (the world's)
        self.received_lines = 0
        self._devices: dict[str, list[TakesCommands]] = {}
        self._hearers: dict[str, list[Hears]] = {}  # by port URL, as _devices
        self.listeners: list[Listener] = []  # told of every decoding (the recorder)

    def attach(self, port_url: str, device: TakesCommands) -> None:
        """Send the lines of the port named ``port_url`` (its PortSpec.url) to ``device``."""
        devices = self._devices.setdefault(port_url, [])
        if device not in devices:
            devices.append(device)

    def listen(self, port_url: str, device: Hears) -> None:
        """Let ``device`` hear the lines of the port named ``port_url`` (its PortSpec.url)."""
        hearers = self._hearers.setdefault(port_url, [])
        if device not in hearers:
            hearers.append(device)

    def receive(self, inbound: Inbound) -> Verdict | None:
        """A port's on_line callback: decode, and queue what is valid. Never raises.

        The line's verdict, for the port's defences (hild/transport/senders.py): APPLIED when
        a device took it (or refused it only because its watchdog is latched: a controller's
        lines then are commands still, waiting for its neutral one); MALFORMED when every
        device found it malformed (sentence.MALFORMED: not a sentence at all); IGNORED for a
        well-formed sentence that no device takes, another talker's on a shared bus; None on
        a port with no device. A port's hearing devices (``listen``) hear every line too, and
        the best of their verdicts and the command devices' is the line's.
        """
        self.received_lines += 1
        hearers = self._hearers.get(inbound.port)
        heard = max(h.hear(inbound) for h in hearers) if hearers else None
        devices = self._devices.get(inbound.port, ())
        if not devices:
            return heard
        applied, malformed = False, 0
        for device in devices:
            record = self.deliver(device, inbound)
            rejection = device.last_rejection
            if record is not None or (rejection is not None and rejection[0] == "latched"):
                applied = True
            elif rejection is not None and rejection[0] in MALFORMED:
                malformed += 1
        if applied:
            return Verdict.APPLIED
        verdict = Verdict.MALFORMED if malformed == len(devices) else Verdict.IGNORED
        return verdict if heard is None else max(verdict, heard)

    def screen(self, port_url: str) -> Screen:
        """The cheap test of lines for the port named ``port_url`` (Port.screen): well-formed
        as its most lenient device reads the checksum, and a sentence one of its devices takes
        (a command of its protocols, or a heading reference)."""
        devices = self._devices.get(port_url, ())
        policies = {device.checksum for device in devices}
        protocols = [p for device in devices for p in device.protocols]
        return Screen(
            max(policies, key=CHECKSUMS.index, default=CHECKSUMS[-1]),
            formatters=[HSC_FORMATTER, *(p.formatter for p in protocols if p.formatter)],
            addresses=[p.address for p in protocols if p.address],
        )

    def deliver(
        self, device: TakesCommands, inbound: Inbound
    ) -> ActuatorCommand | HeadingReference | None:
        """One device decodes one line: a valid command or reference is queued, and the
        listeners hear of it either way (a reference as neither command nor rejection: it
        reaches them applied, as a control record). Lines from outside the ports (MQTT
        control/commands) come in here too."""
        record = device.receive(inbound, self.now())
        if record is not None:
            self.queue.put(record)
        command = record if isinstance(record, ActuatorCommand) else None
        for listener in self.listeners:
            listener(device.config.name, inbound, command, device.last_rejection)
        return record
