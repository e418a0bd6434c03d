"""From the pilot's demands (thrust 0..1, steer -1..1) to each actuator's setpoint.

- Waterjets: engine RPM from idle (thrust 0) to maximum (thrust 1), linear;
  the astern deflector full ahead while under way; both nozzles at
  ``steer`` times their range (positive turns the bow to starboard).
- Azimuth thrusters: thrust as demanded; the rudder order ``steer`` times
  ``AZIMUTH_STEER_DEG`` (capped by the range) turns the thrust the other way
  (thrust towards port at the stern turns the bow to starboard).
- Fixed twin thrusters or propellers: differential thrust, the port one
  ``thrust + steer * DIFFERENTIAL_SHARE`` and the starboard one
  ``thrust - steer * DIFFERENTIAL_SHARE``, clipped to [-1, 1], so that
  a positive steer turns the bow to starboard (thesis eq. 3.17).

Numbering on the wire follows IEC 61162-1's engine and shaft convention:
1 (odd) starboard, 2 (even) port.
"""

from __future__ import annotations

from dataclasses import dataclass

from hild.model.vessel import ActuatorSpec, Vessel
from hild.pilot.autopilot import Demand
from hild.pilot.control import clip

DIFFERENTIAL_SHARE = 0.5  # of full thrust given to steering by fixed twin thrusters
AZIMUTH_STEER_DEG = 30.0  # rudder order of an azimuth thruster at full steering demand
WIRE_NUMBERS = {"starboard": 1, "port": 2}


class ActuationError(ValueError):
    """A vessel the pilot cannot drive (e.g. no actuators)."""


@dataclass(frozen=True)
class Setpoint:
    """One actuator's commanded state, in the model's own units and conventions."""

    spec: ActuatorSpec
    number: int  # on the wire: 1 starboard, 2 port
    level: float  # waterjets: 0 idle .. 1 max RPM; others: -1 .. 1 of full thrust
    angle_deg: float  # nozzle (positive: bow to starboard) or azimuth (thrust towards starboard)
    deflector: float  # -1 full astern .. 1 full ahead (waterjets)

    @property
    def is_waterjet(self) -> bool:
        return self.spec.kind == "waterjet"

    @property
    def rpm(self) -> float:
        """Engine or shaft speed [rev/min] (waterjets: idle..max; others: level of the maximum)."""
        lo, hi = self.spec.speed_range
        if self.is_waterjet:
            return lo + self.level * (hi - lo)
        return self.level * (hi if self.level >= 0.0 else -lo)

    @property
    def rudder_deg(self) -> float | None:
        """The rudder order this angle means (positive: bow to starboard); None if fixed."""
        if self.spec.angle_kind == "nozzle":
            return self.angle_deg
        if self.spec.angle_kind == "azimuth":
            return -self.angle_deg
        return None


def wire_number(spec: ActuatorSpec) -> int:
    return WIRE_NUMBERS.get(spec.name, spec.index + 1)


def steerable(vessel: Vessel) -> bool:
    return any(a.angle_kind != "none" for a in vessel.actuators)


class Actuation:
    """Setpoints of one vessel's actuators for a demand, and its neutral command."""

    def __init__(self, vessel: Vessel):
        if not vessel.actuators:
            raise ActuationError(f"{vessel.name} has no actuators to drive")
        self.vessel = vessel
        self.specs = sorted(vessel.actuators, key=wire_number)
        self.differential = not steerable(vessel)

    def setpoints(self, demand: Demand) -> list[Setpoint]:
        thrust = clip(demand.thrust, 0.0, 1.0)
        steer = clip(demand.steer, -1.0, 1.0)
        return [self._one(spec, thrust, steer) for spec in self.specs]

    def neutral(self) -> list[Setpoint]:
        """Idle RPM and deflector at zero thrust for waterjets, zero thrust otherwise, angle 0."""
        return [Setpoint(spec, wire_number(spec), 0.0, 0.0, 0.0) for spec in self.specs]

    def _one(self, spec: ActuatorSpec, thrust: float, steer: float) -> Setpoint:
        n = wire_number(spec)
        lo_deg, hi_deg = spec.angle_range_deg
        if spec.kind == "waterjet":
            nozzle = 0.0
            if spec.angle_kind != "none":
                nozzle = steer * (hi_deg if steer >= 0.0 else -lo_deg)
            deflector = 1.0 if spec.has_deflector else 0.0
            return Setpoint(spec, n, thrust, nozzle, deflector)
        if spec.angle_kind == "azimuth":
            rudder = steer * AZIMUTH_STEER_DEG
            azimuth = clip(-rudder, lo_deg, hi_deg)
            return Setpoint(spec, n, thrust, azimuth, 0.0)
        if spec.angle_kind == "nozzle":
            return Setpoint(spec, n, thrust, clip(steer * hi_deg, lo_deg, hi_deg), 0.0)
        level = thrust
        if self.differential:
            # port pushes harder to turn the bow to starboard (thesis eq. 3.17)
            side = 1.0 if n % 2 == 0 else -1.0
            level = clip(thrust + side * steer * DIFFERENTIAL_SHARE, -1.0, 1.0)
        return Setpoint(spec, n, level, 0.0, 0.0)
