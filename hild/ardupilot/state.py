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

from hild.ardupilot.protocol import PhysicsState
from hild.sensors import kinematics
from hild.sensors.truth import Truth


def physics_state(
    truth: Truth,
    timestamp: float,
    lever_arm: tuple[float, float, float],
    specific_force: tuple[float, float, float],
    gyro: tuple[float, float, float],
    wind: bool,
) -> PhysicsState:
    """The answer for ``truth``: ``gyro`` and ``specific_force`` as measured (noise applied by
    the caller), the rest exact. Plain floats throughout (once per step: numpy's small-array
    calls would cost more than the arithmetic)."""
    R = truth.rotation.tolist()  # body -> NED (thesis eq. 2.7)
    rx, ry, rz = lever_arm
    vx, vy, vz = kinematics.point_velocity(truth.nu, lever_arm)
    n, e, d = truth.eta[:3].tolist()
    position = (
        n + R[0][0] * rx + R[0][1] * ry + R[0][2] * rz,
        e + R[1][0] * rx + R[1][1] * ry + R[1][2] * rz,
        d + R[2][0] * rx + R[2][1] * ry + R[2][2] * rz,
    )
    velocity = (
        R[0][0] * vx + R[0][1] * vy + R[0][2] * vz,
        R[1][0] * vx + R[1][1] * vy + R[1][2] * vz,
        R[2][0] * vx + R[2][1] * vy + R[2][2] * vz,
    )
    phi, theta, psi = truth.eta[3:6].tolist()
    velocity_wind = windvane = None
    if wind:
        wind_n, wind_e = (float(c) for c in truth.wind_ned)
        velocity_wind = (wind_n, wind_e, 0.0)
        # the air past the vane, body axes: R^T wind - v (thesis eqs 2.70-2.71, negated); the
        # wind comes from where that air goes to, clockwise from the bow (0: head to wind)
        air_x = R[0][0] * wind_n + R[1][0] * wind_e - vx
        air_y = R[0][1] * wind_n + R[1][1] * wind_e - vy
        windvane = (math.atan2(-air_y, -air_x), math.hypot(air_x, air_y))
    return PhysicsState(
        timestamp=timestamp,
        gyro=gyro,
        accel_body=specific_force,
        position=position,
        velocity=velocity,
        # yaw in -pi .. pi, as ArduPilot's own models keep it
        attitude=(phi, theta, math.remainder(psi, 2.0 * math.pi)),
        velocity_wind=velocity_wind,
        windvane=windvane,
    )
