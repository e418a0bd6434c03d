"""The emulated device: samples the truth, applies noise and faults, encodes its sentences."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

import numpy as np

from hild.geodesy import Origin
from hild.nmea.epoch import SentenceFailures, build_all
from hild.sensors.faults import FaultSpec
from hild.sensors.noise import NoiseSpec, QuantityNoise
from hild.sensors.truth import Truth
from hild.traffic.targets import Target

Measurement = dict[str, float]


@dataclass(frozen=True)
class DeviceConfig:
    """One device instance as the bench file wires it: type defaults merged with overrides."""

    name: str
    type: str
    model: str  # the implementation: gps, heading, anemometer, speed-log
    talker: str
    rate_hz: float
    baud: int
    sentences: tuple[str, ...]
    lever_arm: tuple[float, float, float]  # sensor position in the body frame [m]
    ports: tuple[str, ...]
    noise: dict[str, NoiseSpec] = field(default_factory=dict)
    faults: tuple[FaultSpec, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)
    boat: str = ""  # the boat it is on, in a fleet bench (hild/fleet.py); "" in a one-boat bench


@dataclass
class DeviceStats:
    epochs: int = 0
    sentences: int = 0
    silent_epochs: int = 0  # epochs lost to a dropout fault


class Device:
    """Base class: each model says what it measures (``measure``) and how it speaks, one
    sentence type at a time (``sentence``)."""

    model: ClassVar[str]
    sentences_available: ClassVar[tuple[str, ...]]
    # Per quantity: number of components that get independent noise.
    noise_components: ClassVar[dict[str, int]]
    worst_case: ClassVar[Measurement]  # values that give the longest sentences (budget check)

    def __init__(self, config: DeviceConfig, seed: int, origin: Origin):
        self.config = config
        self.origin = origin
        self.lever_arm = np.array(config.lever_arm, dtype=float)
        self.stats = DeviceStats()
        self.failures = SentenceFailures(config.name)
        # One stream per device instance, keyed by its name: adding a device changes no other.
        base = np.random.SeedSequence(
            seed, spawn_key=(zlib.crc32(b"sensor:" + config.name.encode()),)
        )
        self._noise: dict[tuple[str, int], QuantityNoise] = {}
        for q_index, (quantity, n) in enumerate(sorted(self.noise_components.items())):
            spec = config.noise.get(quantity, NoiseSpec())
            for component in range(n):
                child = np.random.SeedSequence(
                    base.entropy, spawn_key=(*base.spawn_key, q_index, component)
                )
                self._noise[(quantity, component)] = QuantityNoise(
                    spec, np.random.default_rng(child)
                )
        self._last: Measurement | None = None
        # the bench's faults, and those added while running (runtime control)
        self.faults: list[FaultSpec] = list(config.faults)

    def noisy(self, quantity: str, value: float, t: float, component: int = 0) -> float:
        """``value`` as the device measures it: noise, drift, bias and any bias-jump fault."""
        offset = sum(
            f.value
            for f in self.faults
            if f.kind == "bias_jump" and f.quantity == quantity and f.active(t)
        )
        return self._noise[(quantity, component)].apply(value, t, offset)

    def _fault(self, kind: str, t: float) -> bool:
        return any(f.kind == kind and f.active(t) for f in self.faults)

    def sample(self, truth: Truth) -> list[bytes]:
        """The sentences of one epoch, back to back, or nothing during a dropout."""
        self.stats.epochs += 1
        if self._fault("dropout", truth.t):
            self.stats.silent_epochs += 1
            return []
        if self._last is not None and self._fault("freeze", truth.t):
            measurement = self._last
        else:
            measurement = self.measure(truth)
            self._last = measurement
        utc, valid = truth.utc, not self._fault("invalid", truth.t)
        lines = self.failures.build(
            self.config.sentences, lambda name: self.sentence(name, measurement, utc, valid)
        )
        self.stats.sentences += len(lines)
        return lines

    def summary(self) -> dict:
        """The device's counters, for the run's summary (``sentences_failed``: sentences left
        out because they could not be encoded, by type)."""
        return {**vars(self.stats), "sentences_failed": self.failures.summary()}

    def describe(self) -> str:
        """What it is and says, for the banner."""
        c = self.config
        return f"{c.name} ({c.type}: {' '.join(c.sentences)} {self.cadence()})"

    def cadence(self) -> str:
        """When it speaks, for the banner: at its epoch rate."""
        return f"at {self.config.rate_hz:g} Hz"

    def bytes_per_s(self, utc: datetime, traffic: Sequence[Target] = ()) -> float:
        """The most this device sends a second, in bytes (the serial budget): its longest
        epoch at its rate. (``traffic``: the run's targets, for devices that report them.)"""
        return self.config.rate_hz * self.epoch_bytes(utc)

    def epoch_bytes(self, utc: datetime) -> int:
        """The longest epoch this device can send, in bytes (for the serial budget)."""
        return sum(len(line) for line in self.encode(dict(self.worst_case), utc, True))

    def measure(self, truth: Truth) -> Measurement:
        raise NotImplementedError

    def encode(self, m: Measurement, utc: datetime, valid: bool) -> list[bytes]:
        """Every configured sentence of one epoch; raises if one cannot be encoded."""
        return build_all(self.config.sentences, lambda name: self.sentence(name, m, utc, valid))

    def sentence(self, name: str, m: Measurement, utc: datetime, valid: bool) -> list[bytes]:
        """The lines of one configured sentence type (none when the device has no data)."""
        raise NotImplementedError

    def setting(self, name: str) -> Any:
        return self.config.settings[name]
