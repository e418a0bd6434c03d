"""What hild answers a frame with: the vessel as ArduPilot's sensors would see it.

ArduPilot's JSON description (`libraries/SITL/examples/JSON/readme.md`) asks for the body
rates and the specific force in body axes (x forward, y right, z down; about (0, 0, -9.81)
m/s^2 at rest and level), the position and velocity in NED from its home, the attitude as
roll, pitch and yaw, and optionally the wind: ``velocity_wind`` (the air's velocity, NED) and
``windvane`` (apparent wind, direction clockwise from the bow, 0 head to wind). All of it is
taken at the autopilot's place on the hull (the device's ``position``, a lever arm from the body
origin).
"""

from __future__ import annotations

import math

import numpy as np

from hild.ardupilot.protocol import PhysicsState
from hild.sensors import kinematics
from hild.sensors.truth import Truth


def apparent_wind(truth: Truth, lever_arm: np.ndarray) -> tuple[float, float]:
    """The wind a vane at ``lever_arm`` feels: direction it comes from, clockwise from the bow
    [rad, -pi .. pi, 0 head to wind], and speed [m/s] (thesis eqs 2.68-2.71, the 10 m wind)."""
    air = kinematics.air_velocity_body(truth, lever_arm)  # the air's velocity past the vane
    return math.atan2(-air[1], -air[0]), math.hypot(air[0], air[1])


def physics_state(
    truth: Truth,
    timestamp: float,
    lever_arm: np.ndarray,
    specific_force: tuple[float, float, float],
    gyro: tuple[float, float, float],
    wind: bool,
) -> PhysicsState:
    """The answer for ``truth``: ``gyro`` and ``specific_force`` as measured (noise applied by
    the caller), the rest exact."""
    position = kinematics.position_ned(truth, lever_arm)
    velocity = kinematics.velocity_ned(truth, lever_arm)
    phi, theta, psi = truth.eta[3], truth.eta[4], truth.eta[5]
    velocity_wind = windvane = None
    if wind:
        wind_n, wind_e = truth.wind_ned
        velocity_wind = (float(wind_n), float(wind_e), 0.0)
        windvane = apparent_wind(truth, lever_arm)
    return PhysicsState(
        timestamp=timestamp,
        gyro=gyro,
        accel_body=specific_force,
        position=(float(position[0]), float(position[1]), float(position[2])),
        velocity=(float(velocity[0]), float(velocity[1]), float(velocity[2])),
        # yaw in -pi .. pi, as ArduPilot's own models keep it
        attitude=(float(phi), float(theta), math.remainder(float(psi), 2.0 * math.pi)),
        velocity_wind=velocity_wind,
        windvane=windvane,
    )
