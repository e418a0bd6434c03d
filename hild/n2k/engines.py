"""The propulsion on NMEA 2000, as an engine gateway reports it: each engine's speed (127488 at
10 Hz, 127489 at 1 Hz) and each steerable actuator's angle as a rudder (127245 at 10 Hz).

The values are the truth's actuator states (hild/model/layout.py: S_SIZE per actuator, speed
[rpm for a jet or a propeller], angle [rad], deflector): one engine instance per actuator, the
vessel's first ``engines`` in its order (0 port, 1 starboard for a twin), a jet's RPM its
engine's. A sensor kind builds without the vessel (hild/devices/registry.py), so the gateway
is wired as an installer wires one: ``engines`` says how many it reports, and 127245 among its
``sentences`` that they steer (a waterjet's nozzle, an azimuth's angle): each engine's angle
then goes out as the rudder of its instance.

Field layouts and default priorities from canboat's PGN database (canboat.json 6.2.0, shipped
with canboatjs: @canboat/ts-pgns/canboat.json), quoted at each encoder; the Pgn records
(127488 and 127245 single frames at priority 2, 127489 a fast packet at priority 2) are
pgns.py's.
"""

from __future__ import annotations

import math
import struct
from datetime import datetime
from typing import Any, ClassVar

from hild.geodesy import Origin
from hild.model.layout import S_ANGLE, S_SIZE, S_SPEED
from hild.n2k import pgns
from hild.n2k.device import N2kSensor
from hild.n2k.pgns import signed, unsigned
from hild.sensors.device import Device, DeviceConfig, Measurement
from hild.sensors.truth import Truth

MAX_ENGINES = 16  # engines one gateway reports: each its own noise streams
RUDDER_PGN = "127245"
NO_ORDER, TO_STARBOARD, TO_PORT = 0, 1, 2  # canboat's DIRECTION_RUDDER lookup
HALF_STEP = 0.5e-4  # rad: an order within half the field's resolution of the position is met


# --- the PGNs --------------------------------------------------------------------------------
def engine_rapid(
    instance: int,
    speed_rpm: float | None,
    boost_pressure: float | None = None,
    tilt_trim_pct: float | None = None,
) -> bytes:
    """127488 "Engine Parameters, Rapid Update" (8 bytes; canboat.json: Single, priority 2):
    Instance uint8 (ENGINE_INSTANCE: 0 single engine or dual engine port, 1 dual engine
    starboard); Speed uint16 0.25 rpm; Boost Pressure uint16 100 Pa; Tilt/Trim int8 1 %;
    16 reserved."""
    return struct.pack(
        "<BHHbH",
        instance & 0xFF,
        unsigned(speed_rpm, 0.25, 16),
        unsigned(boost_pressure, 100.0, 16),
        signed(tilt_trim_pct, 1.0, 8),
        0xFFFF,
    )


def engine_dynamic(
    instance: int,
    total_engine_hours_s: float | None = None,
    oil_pressure: float | None = None,
    oil_temperature: float | None = None,
    temperature: float | None = None,
    alternator_potential: float | None = None,
    fuel_rate_lph: float | None = None,
    coolant_pressure: float | None = None,
    fuel_pressure: float | None = None,
    engine_load_pct: float | None = None,
    engine_torque_pct: float | None = None,
) -> bytes:
    """127489 "Engine Parameters, Dynamic" (26 bytes, a fast packet; canboat.json: Fast,
    priority 2): Instance uint8 (ENGINE_INSTANCE); Oil pressure uint16 100 Pa; Oil temperature
    uint16 0.1 K; Temperature uint16 0.01 K; Alternator Potential int16 0.01 V; Fuel Rate int16
    0.1 L/h; Total Engine hours uint32 1 s; Coolant Pressure uint16 100 Pa; Fuel Pressure
    uint16 1000 Pa; 8 reserved; Discrete Status 1 and 2 uint16 bits each (ENGINE_STATUS_1,
    ENGINE_STATUS_2: 0, no warning raised); Engine Load int8 1 %; Engine Torque int8 1 %."""
    return struct.pack(
        "<BHHHhhIHHBHHbb",
        instance & 0xFF,
        unsigned(oil_pressure, 100.0, 16),
        unsigned(oil_temperature, 0.1, 16),
        unsigned(temperature, 0.01, 16),
        signed(alternator_potential, 0.01, 16),
        signed(fuel_rate_lph, 0.1, 16),
        unsigned(total_engine_hours_s, 1.0, 32),
        unsigned(coolant_pressure, 100.0, 16),
        unsigned(fuel_pressure, 1000.0, 16),
        0xFF,
        0,
        0,
        signed(engine_load_pct, 1.0, 8),
        signed(engine_torque_pct, 1.0, 8),
    )


def rudder(
    instance: int, position: float | None, order: float | None = None, direction: int = NO_ORDER
) -> bytes:
    """127245 "Rudder" (8 bytes; canboat.json: Single, priority 2): Instance uint8; Direction
    Order 3 bits (DIRECTION_RUDDER: 0 no order, 1 move to starboard, 2 move to port) + 5
    reserved; Angle Order int16 1e-4 rad; Position int16 1e-4 rad; 16 reserved. Angles
    positive to starboard, within (-pi, pi]."""
    return struct.pack(
        "<BBhhH",
        instance & 0xFF,
        0xF8 | (direction & 0x7),
        pgns.signed_angle(order),
        pgns.signed_angle(position),
        0xFFFF,
    )


def direction_order(order: float, position: float) -> int:
    """Which way the rudder is ordered to move: to the order from where it is."""
    if not (math.isfinite(order) and math.isfinite(position)) or abs(order - position) < (
        HALF_STEP
    ):
        return NO_ORDER
    return TO_STARBOARD if order > position else TO_PORT


# --- the device ------------------------------------------------------------------------------
def _engines(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ENGINES:
        raise ValueError(f"settings.engines = {value!r}: expected 1 to {MAX_ENGINES} engines")
    return value


def _or_none(value: float, valid: bool) -> float | None:
    return value if valid and math.isfinite(value) else None


class N2kEngine(N2kSensor, Device):
    """An engine gateway on NMEA 2000: per engine (the vessel's first ``engines`` actuators,
    instances 0, 1, ...) 127488 at its epoch rate, 127489 at its ``pgn_rates`` (the engine
    hours it keeps) and, for steerable ones, 127245 (the rudder of the same instance). Noise on
    the quantities ``rpm`` [rpm] and ``angle`` [deg], one stream per engine; faults as on any
    device."""

    model = "n2k-engine"
    sentences_available: ClassVar[tuple[str, ...]] = ("127488", "127489", "127245")
    noise_components: ClassVar[dict[str, int]] = {"rpm": MAX_ENGINES, "angle": MAX_ENGINES}
    # every field has a fixed size: a measurement with no value gives the longest lines too
    worst_case: ClassVar[Measurement] = {}

    def __init__(self, config: DeviceConfig, seed: int, origin: Origin):
        super().__init__(config, seed, origin)
        s = config.settings
        self.engines = _engines(s.get("engines", 2))
        self.rpm_per_unit = float(s.get("rpm_per_unit", 1.0))
        # running hours (127489's total engine hours), kept on simulated time from the
        # setting's start; an engine runs while its speed is not zero
        start_s = float(s.get("engine_hours", 0.0)) * 3600.0
        self.hours_s = [start_s] * self.engines
        self._last_t: float | None = None
        self._n2k_setup()

    def measure(self, truth: Truth) -> Measurement:
        t, state, commands = truth.t, truth.actuators, truth.commands
        n = state.size // S_SIZE
        dt = 0.0 if self._last_t is None else max(t - self._last_t, 0.0)
        self._last_t = t
        m: Measurement = {}
        for i in range(self.engines):  # (an engine the vessel has not: nothing available)
            base = i * S_SIZE
            speed = float(state[base + S_SPEED]) if i < n else math.nan
            if math.isfinite(speed) and speed != 0.0:
                self.hours_s[i] += dt
            # an engine's speed is its shaft's, whichever way it turns (its gear is 127493's)
            m[f"rpm{i}"] = self.noisy("rpm", abs(speed) * self.rpm_per_unit, t, i)
            m[f"hours{i}"] = self.hours_s[i] if i < n else math.nan
            angle = math.degrees(float(state[base + S_ANGLE])) if i < n else math.nan
            m[f"angle{i}"] = math.radians(self.noisy("angle", angle, t, i))
            ordered = i < commands.size // S_SIZE
            m[f"order{i}"] = float(commands[base + S_ANGLE]) if ordered else math.nan
        return m

    def payloads(self, name: str, m: Measurement, utc: datetime, valid: bool):  # noqa: ANN201
        def value(key: str) -> float | None:
            return _or_none(m.get(key, math.nan), valid)

        if name == "127488":
            return [
                (pgns.ENGINE_RAPID, engine_rapid(i, value(f"rpm{i}"))) for i in range(self.engines)
            ]
        if name == "127489":
            return [
                (pgns.ENGINE_DYNAMIC, engine_dynamic(i, value(f"hours{i}")))
                for i in range(self.engines)
            ]
        if name == RUDDER_PGN:
            out = []
            for i in range(self.engines):
                position, order = value(f"angle{i}"), value(f"order{i}")
                direction = NO_ORDER
                if position is not None and order is not None:
                    direction = direction_order(order, position)
                out.append((pgns.RUDDER, rudder(i, position, order, direction)))
            return out
        return []
