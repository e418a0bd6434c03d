"""The simulated truth a sensor samples: vessel state, environment and time."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from hild.traffic.view import TrafficView


@dataclass
class Truth:
    """One instant of the simulation as the sensors see it (SI units, Fossen's frames)."""

    t: float  # simulation time [s]
    utc: datetime  # the run's start epoch plus t
    eta: np.ndarray  # NED position and Euler angles [m, rad]
    nu: np.ndarray  # body velocities [m/s, rad/s]
    current_ned: tuple[float, float] = (0.0, 0.0)  # current velocity, north and east [m/s]
    wind_ned: tuple[float, float] = (0.0, 0.0)  # air velocity at 10 m, north and east [m/s]
    # actuator states and commands, S_SIZE per actuator (model/layout.py): speed, angle, deflector
    actuators: np.ndarray = field(default_factory=lambda: np.zeros(0))
    commands: np.ndarray = field(default_factory=lambda: np.zeros(0))
    traffic: TrafficView | None = None  # the other ships, when the run has any
    rotation: np.ndarray = field(init=False)  # body -> NED (thesis eq. 2.7)

    @classmethod
    def of(cls, sim, t: float, utc: datetime) -> Truth:
        """A simulation's instant (copies of its arrays: the simulation steps on)."""
        x = sim.x
        return cls(
            t=t,
            utc=utc,
            eta=x[:6].copy(),
            nu=x[6:12].copy(),
            current_ned=sim.environment.current_ned,
            wind_ned=sim.environment.wind_ned,
            actuators=sim.act_state.copy(),
            commands=sim.act_cmd.copy(),
            traffic=None if sim.traffic is None else sim.traffic.view(),
        )

    def __post_init__(self) -> None:
        r9 = np.empty(9)
        _body_to_ned()(self.eta[3], self.eta[4], self.eta[5], r9)  # the model's own R(Theta)
        self.rotation = r9.reshape(3, 3)


@functools.cache
def _body_to_ned():
    """The model's own rotation, imported at the first instant, not with the devices that
    read one (`hild check` loads every device and needs no numba), and looked up once (an
    import statement costs a microsecond at each instant)."""
    from hild.model.dynamics import rotation

    return rotation
