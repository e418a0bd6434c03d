"""Command devices: the boat's actuator electronics as a controller's bus sees them.

A command device is attached to ports like any sensor. Each received line goes through
``receive``: framing, the device's protocols, the actuator mapping and the watchdog; a valid
command comes out as one control record. Every device also takes HSC, the controller's
heading reference (hild/bus/reference.py): a record of its own that moves no actuator and
renews no lease. ``poll`` trips the watchdog when commands stop, and
``sample`` sends the feedback sentences (TRD, RPM, RSA, XDR) at the device's rate, as
ordinary device output.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

import numpy as np
import structlog

from hild.bus.mapping import Actuator, ActuatorMap, Demand
from hild.bus.protocols import PROTOCOLS, Protocol
from hild.bus.reference import decode_hsc, is_hsc
from hild.bus.sentence import CHECKSUMS, REASONS, Rejected, Sentence, parse_sentence
from hild.bus.watchdog import NEUTRAL, RELEASES, TRIPPED, Watchdog
from hild.control import ActuatorCommand, HeadingReference, SafeState
from hild.geodesy import Origin
from hild.log import RateLimited
from hild.model import layout as L
from hild.model.vessel import Vessel
from hild.nmea import sentences as nmea
from hild.nmea.encode import frame as nmea_frame
from hild.nmea.epoch import SentenceFailures, build_all
from hild.sensors.device import DeviceConfig
from hild.sensors.truth import Truth
from hild.traffic.targets import Target
from hild.transport.base import Inbound

log = structlog.get_logger("hild.bus")

CHECKSUM_POLICIES = CHECKSUMS
RANGE_POLICIES = ("clamp", "refuse")
ANGLE_POLICIES = ("hold", "centre")
DECODED_KEPT = 64  # the sentences a command device remembers decoded (CommandDevice._decode)
DEFAULT_NUMBERING = {"1": "starboard", "2": "port"}  # IEC engine/shaft numbers: odd starboard
# A neutral command (idle, deflector neutral, no thrust for all actuators) in each protocol.
NEUTRAL_SENTENCES = {
    "TRC": "RCTRC,0,0.0,P,0.0,P,,B,C",
    "PRC": "RCPRC,0.0,A,,V,,V,B,0",
    "PHLDC": "PHLDC,0,-100.0,,0.0",
    "PHLDT": "PHLDT,0,0.0",
    "PYDIR": "PYDIR,0,0",
}


class SettingError(ValueError):
    """A device setting that cannot work with this vessel: key, value and what was expected."""

    def __init__(self, key: str, value: Any, expected: str):
        self.key, self.value, self.expected = key, value, expected
        super().__init__(f"settings.{key} = {value!r}: expected {expected}")


@dataclass
class BusStats:
    """Counters of one command device, cheap to update on every line."""

    lines: int = 0  # lines received on the device's ports
    commands: int = 0  # valid commands passed to the loop
    references: int = 0  # valid heading references (HSC) passed to the loop
    clamped: int = 0  # values clamped into the actuators' limits
    rejected: Counter = field(default_factory=Counter)  # by reason (sentence.REASONS)
    watchdog_trips: int = 0
    epochs: int = 0  # feedback epochs
    sentences: int = 0  # feedback sentences

    def as_dict(self) -> dict:
        return {
            "lines": self.lines,
            "commands": self.commands,
            "references": self.references,
            "clamped": self.clamped,
            "rejected": {r: self.rejected[r] for r in REASONS if self.rejected[r]},
            "rejected_total": sum(self.rejected.values()),
            "watchdog_trips": self.watchdog_trips,
            "epochs": self.epochs,
            "sentences": self.sentences,
        }


class CommandDevice:
    """Base of the command device models; subclasses say which vessels and protocols fit."""

    model: ClassVar[str]
    sentences_available: ClassVar[tuple[str, ...]] = ("TRD", "RPM", "RSA", "XDR")
    noise_components: ClassVar[dict[str, int]] = {}
    protocols_available: ClassVar[tuple[str, ...]] = tuple(PROTOCOLS)

    def __init__(self, config: DeviceConfig, vessel: Vessel, origin: Origin):
        problems = self.check(config, vessel)
        if problems:
            raise problems[0]
        self.config = config
        self.vessel = vessel
        self.origin = origin
        s = config.settings
        numbering = {int(k): v for k, v in s.get("numbering", DEFAULT_NUMBERING).items()}
        self.amap = ActuatorMap(
            vessel.actuators, numbering, s.get("out_of_range", "clamp") == "clamp"
        )
        self.protocols: tuple[Protocol, ...] = tuple(PROTOCOLS[p] for p in s["protocols"])
        self.checksum: str = s.get("checksum", "required")
        self.centre_angles = s.get("on_timeout_angle", "hold") == "centre"
        self.watchdog = Watchdog(
            float(s.get("watchdog_s", 0.5)), bool(s.get("neutral_first")), s.get("release", NEUTRAL)
        )
        self.stats = BusStats()
        self.failures = SentenceFailures(config.name)
        self.last_rejection: tuple[str, str] | None = None  # (reason, detail) of the last line
        self.heading_reference: HeadingReference | None = None  # the latest the loop applied
        self._log_rejected = RateLimited(log, "bus.rejected")
        self._decoded: dict[Sentence, tuple[tuple[Demand, ...], int]] = {}  # see _decode
        self._numbered = sorted(
            (a for a in self.amap.actuators if a.number > 0), key=lambda a: a.number
        )

    # --- configuration ----------------------------------------------------------------
    @classmethod
    def check(cls, config: DeviceConfig, vessel: Vessel) -> list[SettingError]:
        """Everything in the device's settings that cannot work with ``vessel``."""
        s = config.settings
        problems: list[SettingError] = []
        protocols = s.get("protocols")
        if (
            not isinstance(protocols, list | tuple)
            or not protocols
            or any(p not in cls.protocols_available for p in protocols)
        ):
            problems.append(
                SettingError(
                    "protocols",
                    protocols,
                    "a list of protocols from: " + ", ".join(cls.protocols_available),
                )
            )
        elif all(p == "ROR" for p in protocols) and (
            s.get("release", NEUTRAL) == NEUTRAL or s.get("neutral_first")
        ):
            problems.append(
                SettingError(
                    "protocols",
                    protocols,
                    "a thrust protocol besides ROR "
                    "(a neutral command, which only a thrust protocol can "
                    "send, clears a watchdog trip)",
                )
            )
        for key, choices in (
            ("out_of_range", RANGE_POLICIES),
            ("checksum", CHECKSUM_POLICIES),
            ("on_timeout_angle", ANGLE_POLICIES),
            ("release", RELEASES),
        ):
            if key in s and s[key] not in choices:
                problems.append(SettingError(key, s[key], "one of " + ", ".join(choices)))
        timeout = s.get("watchdog_s", 0.5)
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not (0.01 <= timeout <= 3600.0)
        ):
            problems.append(SettingError("watchdog_s", timeout, "seconds, 0.01 .. 3600"))
        names = [a.name for a in vessel.actuators]
        numbering = s.get("numbering", DEFAULT_NUMBERING)
        if not isinstance(numbering, dict) or not numbering:
            problems.append(SettingError("numbering", numbering, "a table of number = actuator"))
        else:
            for number, name in numbering.items():
                if not (str(number).isdigit() and int(number) > 0) or name not in names:
                    problems.append(
                        SettingError(
                            f"numbering.{number}",
                            name,
                            f"a number from 1 (0 means all) = an actuator of {vessel.name}: "
                            + ", ".join(names),
                        )
                    )
            if len(set(numbering.values())) != len(numbering):
                problems.append(SettingError("numbering", numbering, "each actuator once"))
        problems.extend(cls.check_vessel(vessel))
        return problems

    @classmethod
    def check_vessel(cls, vessel: Vessel) -> list[SettingError]:
        return []

    # --- commands in --------------------------------------------------------------------
    def receive(
        self, inbound: Inbound, t: float | None = None
    ) -> ActuatorCommand | HeadingReference | None:
        """Decode one received line, at simulated time ``t`` (the watchdog's clock, so a paused
        or scaled run holds the lease as its time holds; by default the line's own stamp, for
        lines stamped on the simulated clock): a control record for a valid command or heading
        reference, else None (counted)."""
        if t is None:
            t = inbound.t_rx
        self.stats.lines += 1
        self.last_rejection = None
        was_tripped = self.watchdog.state == TRIPPED
        demands: tuple[Demand, ...] = ()
        heading: float | None = None
        try:
            if inbound.overlong:
                raise Rejected("overlong", "longer than the port's line buffer")
            sentence = parse_sentence(inbound.line, self.checksum)
            if is_hsc(sentence):  # a reference, not a command: no lease, and taken when latched
                heading = decode_hsc(sentence)
            else:
                demands = self._decode(sentence)
                if not self.watchdog.admit(t, self.amap.is_neutral(demands)):
                    raise Rejected(
                        "latched", "send a neutral command (idle, deflector 0, no thrust)"
                    )
        except Rejected as r:
            self.last_rejection = (r.reason, r.detail)
            self.stats.rejected[r.reason] += 1
            self.stats.clamped = self.amap.clamped
            self._log_rejected(
                inbound.t_rx,
                device=self.config.name,
                port=inbound.port,
                reason=r.reason,
                detail=r.detail,
                line=inbound.line[:90].decode("ascii", "replace"),
                rejected=sum(self.stats.rejected.values()),
            )
            return None
        if heading is not None:
            self.stats.references += 1
            return HeadingReference(self.config.name, inbound.t_rx, heading)
        self.stats.clamped = self.amap.clamped
        self.stats.commands += 1
        if was_tripped:
            log.info(
                "bus.watchdog_released",
                device=self.config.name,
                port=inbound.port,
                release=self.watchdog.release,
            )
        return ActuatorCommand(self.config.name, inbound.t_rx, demands)

    def _decode(self, sentence: Sentence) -> tuple[Demand, ...]:
        """The sentence's demands; a sentence decoded before gives the same demands and the
        same count of clamped values again without decoding (decoding reads only the
        device's settings)."""
        known = self._decoded.get(sentence)
        if known is not None:
            demands, clamped = known
            self.amap.clamped += clamped
            return demands
        before = self.amap.clamped
        demands = self._protocol(sentence).decode(sentence, self.amap)
        if len(self._decoded) >= DECODED_KEPT:
            self._decoded.clear()
        self._decoded[sentence] = (demands, self.amap.clamped - before)
        return demands

    def _protocol(self, sentence: Sentence) -> Protocol:
        for p in self.protocols:
            if p.claims(sentence):
                return p
        raise Rejected("unknown_sentence", sentence.address)

    def neutral_line(self) -> bytes:
        """A neutral command this device accepts (for warming up the decoding path)."""
        for p in self.protocols:
            if p.name in NEUTRAL_SENTENCES:
                return nmea_frame(NEUTRAL_SENTENCES[p.name]).rstrip(b"\r\n")
        return b""

    def example_line(self) -> bytes:
        """A typical command in the device's first protocol, for the banner and the docs."""
        examples = {
            "TRC": "RCTRC,0,1200.0,R,100.0,P,,B,C" if self._jets() else "RCTRC,0,50.0,P,,V,,B,C",
            "PRC": "RCPRC,60.0,A,,V,,V,B,0",
            "ROR": "RCROR,10.0,A,10.0,A,B",
            "PHLDC": "PHLDC,0,0.0,0.0,100.0",
            "PHLDT": "PHLDT,0,50.0,0.0",
            "PYDIR": "PYDIR,40,40",
        }
        return nmea_frame(examples.get(self.protocols[0].name, "")).rstrip(b"\r\n")

    def _jets(self) -> bool:
        return any(a.has_deflector for a in self.amap.actuators)

    def poll(self, now: float, put: Callable[[SafeState], None] | None = None) -> SafeState | None:
        """At a tick: the safe state once, when the watchdog's lease has run out. ``put`` (the
        control queue's) is handed it within the trip's step, so a command the watchdog takes
        after the trip (``release = "next-command"``) is always queued after its safe state."""
        if not self.watchdog.may_have_expired(now):
            return None  # (most ticks: no lock taken, no safe state built)
        safe = SafeState(self.config.name, now, self.centre_angles)
        if not self.watchdog.expired(now, None if put is None else lambda: put(safe)):
            return None
        self.stats.watchdog_trips = self.watchdog.trips
        last = self.watchdog.last_command_t
        silent = now - (now if last is None else last)
        log.warning(
            "bus.watchdog_tripped",
            device=self.config.name,
            silent_s=round(silent, 3),
            timeout_s=self.watchdog.timeout_s,
            trips=self.watchdog.trips,
            release=self.watchdog.release,
        )
        return safe

    def describe(self) -> str:
        """What it is and takes, for the banner."""
        protocols = " ".join(p.name for p in self.protocols)
        return f"{self.config.name} ({self.config.type}: {protocols} in)"

    def summary(self) -> dict:
        """The counters and the watchdog; ``heading_ref`` [rad] once the loop has applied a
        heading reference."""
        out = {
            **self.stats.as_dict(),
            "sentences_failed": self.failures.summary(),
            "watchdog": self.watchdog.state,
        }
        if self.heading_reference is not None:
            out["heading_ref"] = self.heading_reference.heading
        return out

    # --- feedback out -----------------------------------------------------------------
    def sample(self, truth: Truth) -> list[bytes]:
        """One feedback epoch: the configured sentences for the actuators' actual states."""
        self.stats.epochs += 1
        state, valid = truth.actuators, self.watchdog.state != TRIPPED
        lines = self.failures.build(
            self.config.sentences, lambda name: self.feedback_sentence(name, state, valid)
        )
        self.stats.sentences += len(lines)
        return lines

    def feedback(self, state: np.ndarray, valid: bool) -> list[bytes]:
        """Every configured feedback sentence; raises if one cannot be encoded."""
        return build_all(
            self.config.sentences, lambda name: self.feedback_sentence(name, state, valid)
        )

    def feedback_sentence(self, name: str, state: np.ndarray, valid: bool) -> list[bytes]:
        """The lines of one feedback sentence type (one per actuator for TRD and RPM)."""
        talker = self.config.talker
        if name == "TRD":
            return [self._trd(talker, a, state, valid) for a in self._numbered]
        if name == "RPM":
            return [
                self._rpm(talker, a, state, valid) for a in self._numbered if a.speed_unit == "rpm"
            ]
        if name == "RSA" and self.amap.steerable:
            return [nmea.rsa(talker, *self._rudders(state))]
        if name == "XDR":
            groups = [
                (
                    "G",
                    100.0 * state[a.index * L.S_SIZE + L.S_DEFLECTOR],
                    "P",
                    f"DEFLECTOR_{a.number}",
                )
                for a in self._numbered
                if a.has_deflector
            ]
            return nmea.xdr_lines(talker, groups)
        return []

    @staticmethod
    def _trd(talker: str, a: Actuator, state: np.ndarray, valid: bool) -> bytes:
        base = a.index * L.S_SIZE
        speed, angle = state[base + L.S_SPEED], math.degrees(state[base + L.S_ANGLE])
        if a.speed_unit == "rpm":
            rpm, rpm_mode = speed, "R"
        else:
            rpm, rpm_mode = 100.0 * speed, "P"
        pitch, pitch_mode = None, "V"
        if a.has_deflector:
            pitch, pitch_mode = 100.0 * state[base + L.S_DEFLECTOR], "P"
        azimuth = None  # direction of thrust, clockwise from the bow
        if a.angle_kind == "azimuth":
            azimuth = angle % 360.0
        elif a.angle_kind == "nozzle":
            azimuth = -angle % 360.0
        if not valid:
            rpm_mode, pitch_mode = "V", "V"
        return nmea.trd(talker, a.number, rpm, rpm_mode, pitch, pitch_mode, azimuth)

    @staticmethod
    def _rpm(talker: str, a: Actuator, state: np.ndarray, valid: bool) -> bytes:
        base = a.index * L.S_SIZE
        pitch = 100.0 * state[base + L.S_DEFLECTOR] if a.has_deflector else None
        source = "E" if a.kind == "waterjet" else "S"
        return nmea.rpm(talker, source, a.number, state[base + L.S_SPEED], pitch, valid)

    def _rudders(self, state: np.ndarray) -> tuple[float, float | None]:
        """The starboard-most and port-most steering angles as rudder angles (positive turns
        the bow to starboard); a vessel with one steerable actuator has no port sensor."""

        def rudder(a: Actuator) -> float:
            angle = math.degrees(state[a.index * L.S_SIZE + L.S_ANGLE])
            return angle if a.angle_kind == "nozzle" else -angle

        starboard, port = self.amap.side("starboard"), self.amap.side("port")
        return rudder(starboard), None if port is starboard else rudder(port)

    def bytes_per_s(self, utc: datetime, traffic: Sequence[Target] = ()) -> float:
        """The most this device sends a second, in bytes (the serial budget): its longest
        epoch at its rate. (``traffic``: the run's targets, for devices that report them.)"""
        return self.config.rate_hz * self.epoch_bytes(utc)

    def epoch_bytes(self, utc: datetime) -> int:
        """The longest feedback epoch in bytes (for a serial line's budget)."""
        worst = np.zeros(self.vessel.n_act * L.S_SIZE)
        for a in self.amap.actuators:
            base = a.index * L.S_SIZE
            worst[base + L.S_SPEED] = -max(abs(v) for v in a.speed_range) - 0.05
            worst[base + L.S_ANGLE] = -math.radians(179.0)
            worst[base + L.S_DEFLECTOR] = -1.0
        return sum(len(line) for line in self.feedback(worst, True))


class JetController(CommandDevice):
    """Two (or more) waterjets: engine RPM, nozzle angle and astern deflector per jet (Odin)."""

    model = "jet-controller"
    protocols_available = ("TRC", "PRC", "ROR", "PHLDC")

    @classmethod
    def check_vessel(cls, vessel: Vessel) -> list[SettingError]:
        if not any(a.kind == "waterjet" for a in vessel.actuators):
            kinds = ", ".join(f"{a.name}: {a.kind}" for a in vessel.actuators)
            return [
                SettingError(
                    "type",
                    cls.model,
                    f"a vessel with waterjets ({vessel.name} has "
                    f"{kinds}; use a thruster-controller)",
                )
            ]
        return []


class ThrusterController(CommandDevice):
    """Electric thrusters: RPM or per cent, and azimuth where the profile has it."""

    model = "thruster-controller"
    protocols_available = ("TRC", "PRC", "ROR", "PHLDT")

    @classmethod
    def check_vessel(cls, vessel: Vessel) -> list[SettingError]:
        jets = [a.name for a in vessel.actuators if a.kind == "waterjet"]
        if jets:
            expected = f"a vessel with thrusters ({', '.join(jets)} are waterjets)"
            return [SettingError("type", cls.model, expected + "; use a jet-controller")]
        return []
