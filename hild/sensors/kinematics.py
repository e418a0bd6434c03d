"""Where a sensor is and how it moves: the lever arm from the body origin to the sensor."""

from __future__ import annotations

import math

import numpy as np

from hild.sensors.truth import Truth


def position_ned(truth: Truth, lever_arm: np.ndarray) -> np.ndarray:
    """NED position of a point fixed at ``lever_arm`` (body frame) [m]: p + R r."""
    return truth.eta[:3] + truth.rotation @ lever_arm


def velocity_body(truth: Truth, lever_arm: np.ndarray) -> np.ndarray:
    """Body-frame velocity over ground of a point at ``lever_arm``: v + omega x r."""
    return truth.nu[:3] + np.cross(truth.nu[3:], lever_arm)


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
