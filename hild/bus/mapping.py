"""From the units of the wire (rev/min, per cent, degrees, thruster numbers) to actuator demands.

A demand is in the units of the core's actuator commands: speed in rev/min (or the
normalized command of a linear or GLF thruster), angle in radians (a waterjet's steering
angle, positive turning the bow to starboard, or an azimuth thruster's direction of thrust,
positive towards starboard), deflector from -1 full astern through 0 neutral to 1 full ahead.
Values beyond an actuator's limits are clamped (and counted) or refused, as the device says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hild.bus.sentence import Rejected
from hild.model.vessel import ActuatorSpec

NEUTRAL_TOLERANCE = 0.01  # a speed within 1 % of its range of idle, a deflector within 0.01
DEFLECTOR_RANGE = (-1.0, 1.0)
# A single-lever jet control: the lever travel that moves the bucket from neutral to full
# (PRC, and ArduPilot's throttle on a jet)
LEVER_BUCKET_PCT = 20.0


def idle_speed(speed_range: tuple[float, float]) -> float:
    """The speed command that makes no thrust: an engine's idle (its minimum), or zero."""
    lo, hi = speed_range
    return lo if lo > 0.0 else min(max(0.0, lo), hi)


@dataclass(frozen=True, slots=True)
class Demand:
    """What one command asks of one actuator; None leaves that part as it was."""

    actuator: int  # index into the vessel's actuators
    speed: float | None = None  # rev/min, or a normalized command in [-1, 1]
    angle: float | None = None  # rad
    deflector: float | None = None  # -1 .. 1

    @property
    def is_empty(self) -> bool:
        return self.speed is None and self.angle is None and self.deflector is None

    @property
    def moves_thrust(self) -> bool:
        """True when the demand sets a speed or a deflector (what makes thrust)."""
        return self.speed is not None or self.deflector is not None


@dataclass(frozen=True, slots=True)
class Actuator:
    """One actuator as the bus sees it: its place in the core, its wire number, its limits."""

    index: int
    name: str
    number: int  # the number on the wire (thruster, engine or shaft number)
    kind: str  # "waterjet", "propeller" or "thruster"
    speed_unit: str  # "rpm" or "normalized"
    speed_range: tuple[float, float]
    angle_kind: str  # "none", "nozzle" or "azimuth"
    angle_range: tuple[float, float]  # rad
    has_deflector: bool
    y: float  # athwartships position [m], negative to port

    @property
    def idle(self) -> float:
        """The speed that makes no thrust: an engine's idle, or zero for a thruster."""
        return idle_speed(self.speed_range)

    def is_neutral(self, demand: Demand) -> bool:
        """True when every thrust part of the demand is neutral (idle, deflector 0)."""
        lo, hi = self.speed_range
        if demand.speed is not None and abs(demand.speed - self.idle) > NEUTRAL_TOLERANCE * (
            hi - lo
        ):
            return False
        return demand.deflector is None or abs(demand.deflector) <= NEUTRAL_TOLERANCE


class ActuatorMap:
    """The vessel's actuators under one device's numbering and out-of-range policy.

    ``numbering`` maps wire numbers to actuator names; 0 always means all actuators.
    """

    def __init__(self, specs: Sequence[ActuatorSpec], numbering: Mapping[int, str], clamp: bool):
        by_name = {s.name: s for s in specs}
        number_of = {name: n for n, name in numbering.items()}
        self.actuators = tuple(
            Actuator(
                index=s.index,
                name=s.name,
                number=number_of.get(s.name, -1),
                kind=s.kind,
                speed_unit=s.speed_unit,
                speed_range=s.speed_range,
                angle_kind=s.angle_kind,
                angle_range=(
                    math.radians(s.angle_range_deg[0]),
                    math.radians(s.angle_range_deg[1]),
                ),
                has_deflector=s.has_deflector,
                y=s.position[1],
            )
            for s in specs
        )
        self._by_number = {n: self.actuators[by_name[name].index] for n, name in numbering.items()}
        self.clamp = clamp
        self.clamped = 0  # values clamped into range since start

    # --- which actuators ------------------------------------------------------------
    def resolve(self, number: int) -> tuple[Actuator, ...]:
        """The actuators a wire number addresses: 0 is all of them."""
        if number == 0:
            return self.actuators
        try:
            return (self._by_number[number],)
        except KeyError:
            known = ", ".join(str(n) for n in sorted(self._by_number))
            raise Rejected("unknown_actuator", f"number {number} (known: 0, {known})") from None

    def by_number(self, number: int) -> Actuator | None:
        return self._by_number.get(number)

    @property
    def steerable(self) -> tuple[Actuator, ...]:
        return tuple(a for a in self.actuators if a.angle_kind != "none")

    def side(self, side: str) -> Actuator:
        """The starboard-most or port-most steerable actuator (by its y position), which the
        starboard and port fields of ROR and RSA name; Rejected when nothing steers."""
        steerable = sorted(self.steerable, key=lambda a: a.y)
        if not steerable:
            raise Rejected("unsupported", "no actuator of this vessel steers")
        return steerable[-1] if side == "starboard" else steerable[0]

    # --- limits ---------------------------------------------------------------------
    def limit(self, value: float, lo: float, hi: float, what: str) -> float:
        """``value`` within [lo, hi]: clamped and counted, or Rejected("out_of_range")."""
        if lo <= value <= hi:
            return value
        if not self.clamp:
            raise Rejected("out_of_range", f"{what} = {value:g}, limits {lo:g} .. {hi:g}")
        self.clamped += 1
        return min(max(value, lo), hi)

    # --- conversions ----------------------------------------------------------------
    def speed_rpm(self, a: Actuator, rpm: float) -> float:
        """An RPM demand in rev/min."""
        if a.speed_unit != "rpm":
            raise Rejected("bad_mode", f"{a.name} takes no rev/min (send per cent, mode P)")
        return self.limit(rpm, *a.speed_range, f"{a.name} rpm")

    def speed_percent(self, a: Actuator, pct: float) -> float:
        """Per cent of the speed range: an engine's 0 % is idle and 100 % its maximum; a
        thruster's -100 .. 100 % runs from full reverse through zero to full ahead."""
        lo, hi = a.speed_range
        if lo > 0.0 or lo == 0.0:  # an engine above idle, or a thruster that cannot reverse
            pct = self.limit(pct, 0.0, 100.0, f"{a.name} per cent")
            return lo + pct / 100.0 * (hi - lo)
        pct = self.limit(pct, -100.0, 100.0, f"{a.name} per cent")
        return pct / 100.0 * (hi if pct >= 0.0 else -lo)

    def speed_demand(self, a: Actuator, value: float | None, mode: str) -> float | None:
        """An RPM demand field with its mode letter: R rev/min, P per cent, V (or no value)
        none."""
        if value is None or mode == "V":
            return None
        return self.speed_rpm(a, value) if mode == "R" else self.speed_percent(a, value)

    def speed_normalized(self, a: Actuator, x: float) -> float:
        """Odin's normalized RPM (thesis 3.10.2): -100 .. 100 spans the range linearly."""
        x = self.limit(x, -100.0, 100.0, f"{a.name} normalized rpm")
        lo, hi = a.speed_range
        return lo + (x + 100.0) / 200.0 * (hi - lo)

    def deflector_percent(self, a: Actuator, pct: float) -> float:
        """-100 full astern, 0 neutral (no thrust), 100 full ahead."""
        if not a.has_deflector:
            raise Rejected("bad_mode", f"{a.name} has no deflector")
        return self.limit(pct, -100.0, 100.0, f"{a.name} deflector per cent") / 100.0

    def lever(self, a: Actuator, lever: float) -> tuple[float, float | None]:
        """A single lever in per cent (-100 .. 100) as (speed, deflector): a jet's first
        LEVER_BUCKET_PCT of travel moves the bucket from neutral to full ahead (or astern) at
        idle, the rest raises the engine from idle to full; a thruster's lever is its thrust
        in per cent (no deflector: None)."""
        lever = self.limit(lever, -100.0, 100.0, f"{a.name} lever")
        if not a.has_deflector:
            return self.speed_percent(a, lever), None
        travel = abs(lever)
        bucket = min(travel / LEVER_BUCKET_PCT, 1.0) * (1.0 if lever >= 0.0 else -1.0)
        throttle = max(travel - LEVER_BUCKET_PCT, 0.0) / (100.0 - LEVER_BUCKET_PCT) * 100.0
        return self.speed_percent(a, throttle), bucket

    def angle_normalized(self, a: Actuator, x: float) -> float:
        """-100 .. 100 to the angle's range, 0 at the centre."""
        x = self.limit(x, -100.0, 100.0, f"{a.name} normalized angle")
        lo, hi = a.angle_range
        return x / 100.0 * (hi if x >= 0.0 else -lo)

    def rudder_order(self, a: Actuator, order_deg: float) -> float:
        """A rudder order (positive turns the bow to starboard) as the actuator's angle.

        A waterjet's nozzle angle is the order itself. An azimuth thruster aft of the
        centre of gravity turns the bow to starboard by thrusting towards port, so its
        direction of thrust is the negated order.
        """
        angle = math.radians(order_deg if a.angle_kind == "nozzle" else -order_deg)
        return self._angle(a, angle)

    def thrust_direction(self, a: Actuator, azimuth_deg: float) -> float:
        """TRC's azimuth demand (direction of thrust, 0-359.9 clockwise from the bow).

        An azimuth thruster turns to it; a waterjet's nozzle angle is its negation (a nozzle
        thrown 10 deg to starboard thrusts the boat towards 350 deg and turns the bow to
        starboard).
        """
        azimuth_deg = self.limit(azimuth_deg, 0.0, 360.0, f"{a.name} azimuth") % 360.0
        signed = (azimuth_deg + 180.0) % 360.0 - 180.0
        angle = math.radians(signed if a.angle_kind == "azimuth" else -signed)
        return self._angle(a, angle)

    def _angle(self, a: Actuator, angle: float) -> float:
        lo, hi = a.angle_range
        limited = self.limit(
            math.degrees(angle), math.degrees(lo), math.degrees(hi), f"{a.name} angle [deg]"
        )
        return math.radians(limited)

    # --- safe state -----------------------------------------------------------------
    def is_neutral(self, demands: tuple[Demand, ...]) -> bool:
        """A neutral command: it sets thrust somewhere, and every thrust it sets is neutral."""
        thrust = [d for d in demands if d.moves_thrust]
        return bool(thrust) and all(self.actuators[d.actuator].is_neutral(d) for d in thrust)


def nonempty(demands: list[Demand], address: str) -> tuple[Demand, ...]:
    """The demands that ask for something; Rejected("empty") when none does."""
    kept = tuple(d for d in demands if not d.is_empty)
    if not kept:
        raise Rejected("empty", f"{address} carries no valid demand")
    return kept
