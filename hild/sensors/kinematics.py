"""Where a sensor is and how it moves: the lever arm from the body origin to the sensor."""

from __future__ import annotations

import math

import numpy as np

from hild.environment.spectra import G
from hild.sensors.truth import Truth


def position_ned(truth: Truth, lever_arm: np.ndarray) -> np.ndarray:
    """NED position of a point fixed at ``lever_arm`` (body frame) [m]: p + R r."""
    return truth.eta[:3] + truth.rotation @ lever_arm


def velocity_body(truth: Truth, lever_arm: np.ndarray) -> np.ndarray:
    """Body-frame velocity over ground of a point at ``lever_arm``: v + omega x r
    (``point_velocity``, as an array)."""
    return np.array(
        point_velocity(truth.nu, (float(lever_arm[0]), float(lever_arm[1]), float(lever_arm[2])))
    )


def velocity_ned(truth: Truth, lever_arm: np.ndarray) -> np.ndarray:
    """NED velocity over ground of a point at ``lever_arm`` (thesis eq. 2.13 at that point)."""
    return truth.rotation @ velocity_body(truth, lever_arm)


def water_velocity_body(truth: Truth, lever_arm: np.ndarray) -> np.ndarray:
    """Body-frame velocity through the water at ``lever_arm``: nu_r = nu - nu_c, plus omega x r."""
    current = np.array([truth.current_ned[0], truth.current_ned[1], 0.0])
    return velocity_body(truth, lever_arm) - truth.rotation.T @ current


def air_velocity_body(truth: Truth, lever_arm: np.ndarray, wind_factor: float = 1.0) -> np.ndarray:
    """Velocity of the air relative to the sensor, body frame (thesis eqs 2.70-2.71, negated).

    ``wind_factor`` scales the 10 m wind to the sensor's height (thesis eq. 2.43).
    """
    wind = wind_factor * np.array([truth.wind_ned[0], truth.wind_ned[1], 0.0])
    return truth.rotation.T @ wind - velocity_body(truth, lever_arm)


def yaw_rate(truth: Truth) -> float:
    """psi_dot [rad/s] from the body rates (thesis eq. 2.4, third row)."""
    phi, theta = truth.eta[3], truth.eta[4]
    q, r = truth.nu[4], truth.nu[5]
    return (q * math.sin(phi) + r * math.cos(phi)) / math.cos(theta)


def point_velocity(nu: np.ndarray, lever_arm: tuple[float, float, float]) -> tuple[float, ...]:
    """Body-frame velocity over ground of a point at ``lever_arm``, v + omega x r, in plain
    floats (numpy's ``cross`` takes 15 us for three numbers). Each component is rounded as
    ``nu[:3] + np.cross(nu[3:], r)`` rounds it: the products, their difference, then the sum
    (a test holds it to numpy's result, bit for bit)."""
    u, v, w, p, q, r = nu.tolist()
    rx, ry, rz = lever_arm
    return (u + (q * rz - r * ry), v + (r * rx - p * rz), w + (p * ry - q * rx))


class Accelerometer:
    """What an accelerometer fixed at ``lever_arm`` reads: the specific force in body axes,
    f = dv/dt + omega x v - R^T g (with the lever arm's v = v_o + omega x r: the rigid-body
    kinematics of thesis eqs 2.13-2.14 at that point), about (0, 0, -9.81) m/s^2 at rest and
    level, as ArduPilot's JSON description and the Heron's IMU give it. R^T g is g (-sin theta,
    cos theta sin phi, cos theta cos phi), the last column of R(Theta) (thesis eq. 2.7) times g.
    dv/dt is the difference between this instant and the one before (0 at the first, and
    after ``reset``). Plain floats: ArduPilot's link asks for it at every step."""

    def __init__(self, lever_arm: np.ndarray):
        self.lever_arm = lever_arm
        self._arm = (float(lever_arm[0]), float(lever_arm[1]), float(lever_arm[2]))
        self._last: tuple[float, tuple[float, ...]] | None = None  # (t, body velocity there)

    def reset(self) -> None:
        self._last = None

    def specific_force(self, truth: Truth) -> tuple[float, float, float]:
        vx, vy, vz = velocity = point_velocity(truth.nu, self._arm)
        p, q, r = truth.nu[3:6].tolist()
        phi, theta = float(truth.eta[3]), float(truth.eta[4])
        if not (math.isfinite(phi) and math.isfinite(theta)):  # (a diverged state: no reading)
            return math.nan, math.nan, math.nan
        g_cos_theta = G * math.cos(theta)
        fx = q * vz - r * vy + G * math.sin(theta)
        fy = r * vx - p * vz - g_cos_theta * math.sin(phi)
        fz = p * vy - q * vx - g_cos_theta * math.cos(phi)
        last, self._last = self._last, (truth.t, velocity)
        if last is not None and truth.t > last[0]:
            dt = truth.t - last[0]
            before = last[1]
            fx += (vx - before[0]) / dt
            fy += (vy - before[1]) / dt
            fz += (vz - before[2]) / dt
        return fx, fy, fz
