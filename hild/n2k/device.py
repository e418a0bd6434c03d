"""NMEA 2000 sensors: the 0183 devices' measurements (their noise, faults and lever arms), sent
as PGNs by a node on the bus.

Each N2K device kind is its 0183 kind (hild/sensors/) with ``sentence`` giving PGNs: a device's
``sentences`` are PGN numbers ("129025"), its epoch rate the rate of its rapid PGNs (10 Hz, as
GNSS and heading sensors send 129025/129026 and 127250/127251), and ``pgn_rates`` the rates of
the slower ones (129029 and 126992 at 1 Hz). One epoch's PGNs share one SID. A node:

- has its source address (``source``) and its NAME (``unique_number``, ``manufacturer_code``,
  ``device_function``, ``device_class``, ``device_instance``, ``system_instance``: ISO 11783's
  fields), and claims its address with PGN 60928 at its first epoch, as a device does at
  power-up, then sends its product information (126996, a fast packet);
- sends each message at its PGN's default priority, a fast-packet PGN as a fast packet with its
  own sequence counter;
- speaks the framing of its ports: YDRAW lines (``ydraw+udp://``, ``ydraw+tcp://``, or a plain
  port: YDRAW is the default) or Actisense N2K ASCII (``actisense+serial://``,
  ``actisense+pty://``), hild/n2k/lines.py.

Faults as on 0183: a dropout silences the node, freeze repeats the last measurement, invalid
sends every measured field as "not available", bias_jump shifts a quantity.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from hild.n2k import pgns
from hild.n2k.frames import BROADCAST, Sequences, frame_bits, frames_of
from hild.n2k.lines import actisense, ydraw
from hild.n2k.requests import Requests, answer
from hild.sensors.anemometer import Anemometer
from hild.sensors.device import Device, Measurement
from hild.sensors.gps import Gps
from hild.sensors.heading import Heading
from hild.sensors.speed_log import SpeedLog
from hild.sensors.truth import Truth
from hild.transport.url import parse_port_url
from hild.units import KNOTS_PER_MS

if TYPE_CHECKING:
    from hild.transport.base import Inbound
    from hild.transport.judging import Verdict


class N2kNode:
    """A device's node on the bus: its address, NAME, sequence counters and framing."""

    def __init__(self, device: Device):
        self.device = device
        s = device.config.settings
        self.source = int(s.get("source", 0))
        self.name = pgns.iso_name(
            unique_number=int(s.get("unique_number", 0)),
            manufacturer=int(s.get("manufacturer_code", 2046)),
            device_function=int(s.get("device_function", 0)),
            device_class=int(s.get("device_class", 0)),
            device_instance=int(s.get("device_instance", 0)),
            system_instance=int(s.get("system_instance", 0)),
        )
        # the framing its ports name (one: the bench refuses two), YDRAW on plain ones
        framings = {parse_port_url(url).framing for url in device.config.ports} - {""}
        self.framing = min(framings) if framings else "ydraw"
        self.sequences = Sequences()
        self.sid = 0
        self.claimed = False

    def message(
        self, pgn: pgns.Pgn, payload: bytes, utc: datetime, destination: int = BROADCAST
    ) -> list[bytes]:
        """One message as lines of the node's framing."""
        if self.framing == "actisense":
            return [actisense(pgn.number, pgn.priority, self.source, destination, payload, utc)]
        frames = frames_of(
            pgn.number, payload, pgn.priority, self.source, self.sequences, pgn.fast, destination
        )
        return ydraw(frames, utc)

    def claim(self, utc: datetime) -> list[bytes]:
        """The address claim (60928) and the product information (126996)."""
        return self.message(pgns.ADDRESS_CLAIM, pgns.address_claim(self.name), utc) + self.message(
            pgns.PRODUCT_INFORMATION, self.product_information(), utc
        )

    def product_information(self) -> bytes:
        """126996's payload: what the node is (its settings, or hild's defaults)."""
        s = self.device.config.settings
        return pgns.product_information(
            product_code=int(s.get("product_code", 0)),
            model_id=str(s.get("model_id", "hild " + self.device.model)),
            software_version=str(s.get("software_version", "hild")),
            model_version=str(s.get("model_version", "1")),
            serial_code=str(s.get("serial_code", self.device.config.name)),
        )

    def next_sid(self) -> int:
        """The SID of a new epoch (0 to 252, then again)."""
        self.sid = (self.sid + 1) % 253
        return self.sid

    def bits_per_s(self, messages: list[tuple[pgns.Pgn, bytes, float]]) -> float:
        """The bus bits a second of ``(pgn, payload, rate_hz)`` messages take (worst case)."""
        total = 0.0
        for pgn, payload, rate in messages:
            frames = frames_of(pgn.number, payload, pgn.priority, 0, Sequences(), pgn.fast)
            total += rate * sum(frame_bits(f) for f in frames)
        return total


class N2kSensor:
    """What the N2K kinds add to their 0183 class (first in their bases): the PGNs' schedule,
    the node, and the address claim at the first epoch."""

    config: Any
    stats: Any
    model: ClassVar[str]
    pgn_numbers: ClassVar[tuple[int, ...]]

    def _n2k_setup(self) -> None:
        self.node = N2kNode(self)  # type: ignore[arg-type]
        rates = self.config.settings.get("pgn_rates", {}) or {}
        epoch_hz = float(self.config.rate_hz)
        # each PGN every so many epochs: the rapid ones every epoch
        self.every = {
            name: max(1, round(epoch_hz / float(rates[name]))) if name in rates else 1
            for name in self.config.sentences
        }
        self._epoch_sid = 0
        # the ISO requests heard on its ports, answered at its next epoch (requests.py)
        self.requests = Requests(lambda: self.node.source)
        self._asked: set[str] = set()  # the PGNs asked for, sent at this epoch whatever due

    def sample(self, truth: Truth) -> list[bytes]:
        first = not self.node.claimed
        self._epoch_sid = self.node.next_sid()
        answers = self._answer_requests(truth)
        lines = answers + super().sample(truth)  # type: ignore[misc]
        if first:  # at power-up: claim the address, say what the node is
            self.node.claimed = True
            lines = self.node.claim(truth.utc) + lines
        return lines

    def hear(self, inbound: Inbound) -> Verdict:
        """A line received on one of its ports (the event loop's, between epochs): an ISO
        request for the node is queued for its next epoch (hild/n2k/requests.py)."""
        return self.requests.hear(inbound.line, inbound.overlong)

    def _answer_requests(self, truth: Truth) -> list[bytes]:
        """The answers to the requests heard since the last epoch; the PGNs of its own asked
        for go out with this epoch's. A node in a dropout hears nothing."""
        self._asked = set()
        pending = self.requests.take()
        if not pending:
            return []
        if self._fault("dropout", truth.t):  # type: ignore[attr-defined]
            self.requests.stats.unanswered += len(pending)
            return []
        node = self.node
        lines, self._asked = answer(
            pending,
            self.config.sentences,
            pgns.address_claim(node.name),
            node.product_information(),
            node.message,
            truth.utc,
            self.requests.stats,
        )
        return lines

    def summary(self) -> dict:
        """The device's counters and the requests' (heard, answered, NAKs, malformed, ...)."""
        return {**super().summary(), "requests": dict(vars(self.requests.stats))}  # type: ignore[misc]

    def due(self, name: str) -> bool:
        """Whether the PGN ``name`` goes out at this epoch."""
        return (self.stats.epochs - 1) % self.every.get(name, 1) == 0 or name in self._asked

    def cadence(self) -> str:
        slow = {n: e for n, e in self.every.items() if e > 1}
        rate = float(self.config.rate_hz)
        text = f"at {rate:g} Hz"
        if slow:
            text += ", " + ", ".join(f"{n} at {rate / e:g} Hz" for n, e in slow.items())
        return f"{text}, source {self.node.source}, {self.node.framing}"

    def bytes_per_s(self, utc: datetime, traffic=()) -> float:  # noqa: ANN001
        """The most this node sends a second in bytes of its lines, PGN by PGN at its rate."""
        total = 0.0
        for name in self.config.sentences:
            lines = self._worst(name, utc)
            total += sum(len(line) for line in lines) * self.rate_of(name)
        return total

    def rate_of(self, name: str) -> float:
        return float(self.config.rate_hz) / self.every.get(name, 1)

    def bus_bits_per_s(self, utc: datetime) -> float:
        """The CAN bits a second this node puts on the bus (its PGNs at their rates, frames
        at their worst-case stuffing; its address claim once, not counted)."""
        messages = [
            (pgn, payload, self.rate_of(name))
            for name in self.config.sentences
            for pgn, payload in self._worst_payloads(name, utc)
        ]
        return self.node.bits_per_s(messages)

    def _worst_payloads(self, name: str, utc: datetime) -> list[tuple[pgns.Pgn, bytes]]:
        """PGN ``name``'s messages at the kind's ``worst_case`` measurement."""
        return self.payloads(name, dict(self.worst_case), utc, True)  # type: ignore[attr-defined]

    def _worst(self, name: str, utc: datetime) -> list[bytes]:
        out: list[bytes] = []
        for pgn, payload in self._worst_payloads(name, utc):
            out += self.node.message(pgn, payload, utc)
        return out

    def sentence(self, name: str, m: Measurement, utc: datetime, valid: bool) -> list[bytes]:
        if not self.due(name):
            return []
        out: list[bytes] = []
        for pgn, payload in self.payloads(name, m, utc, valid):  # type: ignore[attr-defined]
            out += self.node.message(pgn, payload, utc)
        return out


def _rad(deg: float | None) -> float | None:
    return None if deg is None or not math.isfinite(deg) else math.radians(deg)


class N2kGnss(N2kSensor, Gps):
    """A GNSS receiver (a GNSS compass with 127250) on NMEA 2000: 129025 and 129026 at its
    epoch rate, 129029 and 126992 at their ``pgn_rates``, 127250 (true heading)."""

    model = "n2k-gnss"
    sentences_available: ClassVar[tuple[str, ...]] = (
        "129025",
        "129026",
        "129029",
        "126992",
        "127250",
    )

    def __init__(self, config, seed, origin):  # noqa: ANN001
        super().__init__(config, seed, origin)
        self._n2k_setup()

    def payloads(self, name: str, m: Measurement, utc: datetime, valid: bool):  # noqa: ANN201
        sid = self._epoch_sid
        lat = m["lat"] if valid else None
        lon = m["lon"] if valid else None
        if name == "129025":
            return [(pgns.POSITION_RAPID, pgns.position_rapid(lat, lon))]
        if name == "129026":
            sog = m["sog_kn"] / KNOTS_PER_MS if valid else None
            cog = _rad(m["cog"]) if valid else None
            return [(pgns.COG_SOG_RAPID, pgns.cog_sog_rapid(sid, cog, sog))]
        if name == "129029":
            method = int(self.setting("fix_quality")) if valid else 0
            satellites = int(self.setting("satellites")) if valid else 0
            payload = pgns.gnss_position(
                sid,
                utc,
                lat,
                lon,
                m["alt"] if valid else None,
                min(method, 8),
                satellites,
                float(self.setting("hdop")),
                float(self.setting("pdop")),
                float(self.setting("geoid_separation")),
            )
            return [(pgns.GNSS_POSITION, payload)]
        if name == "126992":
            return [(pgns.SYSTEM_TIME, pgns.system_time(sid, utc))]
        if name == "127250":
            heading = _rad(m["heading"]) if valid else None
            return [(pgns.VESSEL_HEADING, pgns.vessel_heading(sid, heading))]
        return []


class N2kCompass(N2kSensor, Heading):
    """A heading sensor with rate of turn and attitude on NMEA 2000: 127250, 127251 and 127257
    at its epoch rate, 127258 (the magnetic variation it knows) at its ``pgn_rates``."""

    model = "n2k-compass"
    sentences_available: ClassVar[tuple[str, ...]] = ("127250", "127251", "127257", "127258")

    def __init__(self, config, seed, origin):  # noqa: ANN001
        super().__init__(config, seed, origin)
        self._n2k_setup()

    def payloads(self, name: str, m: Measurement, utc: datetime, valid: bool):  # noqa: ANN201
        sid = self._epoch_sid
        variation = _rad(float(self.setting("variation_deg")))
        if name == "127250":
            heading = _rad(m["heading"]) if valid else None
            return [(pgns.VESSEL_HEADING, pgns.vessel_heading(sid, heading, None, variation))]
        if name == "127251":
            rate = math.radians(m["rot"] / 60.0) if valid else None
            return [(pgns.RATE_OF_TURN, pgns.rate_of_turn(sid, rate))]
        if name == "127257":
            yaw = _rad(m["heading"]) if valid else None
            pitch = _rad(m["pitch"]) if valid else None
            roll = _rad(m["roll"]) if valid else None
            return [(pgns.ATTITUDE, pgns.attitude(sid, yaw, pitch, roll))]
        if name == "127258":
            source = int(self.setting("variation_source"))
            payload = pgns.magnetic_variation(sid, variation, utc, source)
            return [(pgns.MAGNETIC_VARIATION, payload)]
        return []


class N2kWind(N2kSensor, Anemometer):
    """An anemometer on NMEA 2000: 130306 apparent (reference 2) and, with ``true_wind``, true
    boat-referenced (3) at its epoch rate."""

    model = "n2k-wind"
    sentences_available: ClassVar[tuple[str, ...]] = ("130306",)

    def __init__(self, config, seed, origin):  # noqa: ANN001
        super().__init__(config, seed, origin)
        self._n2k_setup()

    def payloads(self, name: str, m: Measurement, utc: datetime, valid: bool):  # noqa: ANN201
        if name != "130306":
            return []
        sid = self._epoch_sid
        speed = m["app_speed"] if valid else None
        out = [(pgns.WIND, pgns.wind(sid, speed, _rad(m["app_angle"]) if valid else None, 2))]
        if self.setting("true_wind"):
            true = m["true_speed"] if valid else None
            angle = _rad(m["true_angle"]) if valid else None
            out.append((pgns.WIND, pgns.wind(sid, true, angle, 3)))
        return out


class N2kSpeed(N2kSensor, SpeedLog):
    """A speed log on NMEA 2000: 128259 (through the water; over ground with
    ``ground_speed``) at its epoch rate."""

    model = "n2k-speed"
    sentences_available: ClassVar[tuple[str, ...]] = ("128259",)

    def __init__(self, config, seed, origin):  # noqa: ANN001
        super().__init__(config, seed, origin)
        self._n2k_setup()

    def payloads(self, name: str, m: Measurement, utc: datetime, valid: bool):  # noqa: ANN201
        if name != "128259":
            return []
        water = m["water_long"] / KNOTS_PER_MS if valid else None
        ground = m["ground_long"] / KNOTS_PER_MS if valid and self.setting("ground_speed") else None
        kind = int(self.setting("transducer_type"))
        return [(pgns.SPEED, pgns.speed(self._epoch_sid, water, ground, kind))]
