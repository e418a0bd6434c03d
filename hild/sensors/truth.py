"""The simulated truth a sensor samples: vessel state, environment and time."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np


@dataclass
class Truth:
    """One instant of the simulation as the sensors see it (SI units, Fossen's frames)."""

    t: float  # simulation time [s]
    utc: datetime  # the run's start epoch plus t
    eta: np.ndarray  # NED position and Euler angles [m, rad]
    nu: np.ndarray  # body velocities [m/s, rad/s]
    current_ned: tuple[float, float] = (0.0, 0.0)  # current velocity, north and east [m/s]
    wind_ned: tuple[float, float] = (0.0, 0.0)  # air velocity at 10 m, north and east [m/s]
    rotation: np.ndarray = field(init=False)  # body -> NED (thesis eq. 2.3)

    def __post_init__(self) -> None:
        self.rotation = rotation_matrix(self.eta[3], self.eta[4], self.eta[5])


def rotation_matrix(phi: float, theta: float, psi: float) -> np.ndarray:
    """R(Theta), zyx Euler angles, body to NED (thesis eq. 2.3)."""
    cf, sf = math.cos(phi), math.sin(phi)
    ct, st = math.cos(theta), math.sin(theta)
    cp, sp = math.cos(psi), math.sin(psi)
    return np.array(
        [
            [cp * ct, -sp * cf + cp * st * sf, sp * sf + cp * cf * st],
            [sp * ct, cp * cf + sf * st * sp, -cp * sf + sp * st * cf],
            [-st, ct * sf, ct * cf],
        ]
    )
