"""A vessel as the core knows it: the arrays of its model and the matrices they came from.

Pure data and the derivations of Fossen's matrices (thesis section 2.2); reading and checking
a profile file is hild/profiles/vessel.py's job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DEGREES = math.pi / 180.0

# Hoerner's 2-D cross-flow drag coefficient against B/(2T) (Hoerner 1965, as
# tabulated in Fossen's MSS toolbox); interpolated linearly, held at the ends.
HOERNER_B_2T = np.array(
    [0.0109, 0.1766, 0.3530, 0.4519, 0.4728, 0.4929, 0.4933, 0.5585, 0.6464, 0.8336,
     0.9880, 1.3081, 1.6392, 1.8600, 2.3129, 2.6000, 3.0088, 3.4508, 3.7379, 4.0031]
)  # fmt: skip
HOERNER_CD = np.array(
    [1.9661, 1.9657, 1.8976, 1.7872, 1.5837, 1.2786, 1.2108, 1.0836, 0.9986, 0.8796,
     0.8284, 0.7599, 0.6914, 0.6571, 0.6307, 0.5962, 0.5868, 0.5859, 0.5599, 0.5593]
)  # fmt: skip


def hoerner_cd(beam: float, draft: float) -> float:
    """2-D cross-flow drag coefficient of a hull section from Hoerner's curve."""
    return float(np.interp(beam / (2.0 * draft), HOERNER_B_2T, HOERNER_CD))


@dataclass(frozen=True)
class ActuatorSpec:
    """What the shell needs to know about one actuator: its name, commands and ranges."""

    name: str
    index: int
    kind: str  # "propeller", "waterjet" or "thruster"
    speed_unit: str  # "rpm" or "normalized"
    speed_range: tuple[float, float]
    angle_kind: str  # "none", "azimuth" or "nozzle"
    angle_range_deg: tuple[float, float]
    has_deflector: bool
    initial: tuple[float, float, float]  # speed, angle [rad], deflector

    @property
    def commands(self) -> tuple[str, ...]:
        """Command names this actuator accepts, as used by --cmd NAME.COMMAND=VALUE."""
        names = ["rpm" if self.speed_unit == "rpm" else "cmd"]
        if self.angle_kind != "none":
            names.append(f"{self.angle_kind}_deg")
        if self.has_deflector:
            names.append("deflector")
        return tuple(names)

    def command_range(self, command: str) -> tuple[float, float, str]:
        """What one of ``commands`` may be, with its unit: the speed range, the angle range
        in degrees, or the deflector's -1 (astern) to 1 (ahead)."""
        if command in ("rpm", "cmd"):
            lo, hi = self.speed_range
            return lo, hi, " rpm" if command == "rpm" else ""
        if command.endswith("_deg"):
            lo, hi = self.angle_range_deg
            return lo, hi, " deg"
        return -1.0, 1.0, ""

    @property
    def state_columns(self) -> tuple[str, str, str]:
        """Column names of this actuator's three states in output files."""
        speed = self.commands[0]
        angle = "azimuth" if self.angle_kind == "azimuth" else "nozzle"
        return (f"{self.name}.{speed}", f"{self.name}.{angle}", f"{self.name}.deflector")


@dataclass
class Vessel:
    """A loaded vessel profile: the core's arrays plus the matrices they came from."""

    name: str
    source: str
    params: np.ndarray
    actuator_params: np.ndarray
    actuators: list[ActuatorSpec]
    M_RB: np.ndarray
    M_A: np.ndarray
    D_L: np.ndarray
    G: np.ndarray
    length: float
    # wind-force data for the environment (model name and its coefficients)
    wind: dict[str, Any] = field(default_factory=dict)
    # multipliers on the wave-force scale in surge, sway and yaw
    wave_gains: tuple[float, float, float] = (1.0, 1.0, 1.0)

    @property
    def M(self) -> np.ndarray:
        return self.M_RB + self.M_A

    @property
    def n_act(self) -> int:
        return len(self.actuators)

    def actuator(self, name: str) -> ActuatorSpec:
        for a in self.actuators:
            if a.name == name:
                return a
        known = ", ".join(a.name for a in self.actuators)
        raise KeyError(f"{self.name} has no actuator {name!r} (it has: {known})")

    def command_problem(self, name: str, value: float | None = None) -> str:
        """What is wrong with the command ``name`` (``port.rpm``) and, if given, its ``value``
        ('' if nothing), as the ``expected`` of an error: an unknown actuator or command is
        named with what there is; a value outside the actuator's range, which the model would
        silently clip, with the range. The one check of bench files, --cmd, schedules and
        Simulation.set_command."""
        actuator, _, command = name.partition(".")
        try:
            spec = self.actuator(actuator)
        except KeyError as e:
            return f"'<actuator>.<command>' ({e.args[0]})"
        if command not in spec.commands:
            full = ", ".join(f"{actuator}.{c}" for c in spec.commands)
            return (f"one of {full} ({self.name}.{actuator} has no command {command!r}; it "
                    f"takes: {', '.join(spec.commands)})")  # fmt: skip
        if value is not None:
            lo, hi, unit = spec.command_range(command)
            if not lo <= value <= hi:
                return f"a value from {lo:g} to {hi:g}{unit} ({self.name}'s {actuator} limits)"
        return ""


def rigid_body_mass_matrix(m: float, r_g: np.ndarray, I_o: np.ndarray) -> np.ndarray:
    """M_RB = [[m I, -m S(r_g)], [m S(r_g), I_o]] (thesis eqs 2.14-2.15)."""
    S = skew(r_g)
    M = np.zeros((6, 6))
    M[:3, :3] = m * np.eye(3)
    M[:3, 3:] = -m * S
    M[3:, :3] = m * S
    M[3:, 3:] = I_o
    return M


def move_to_co(A_cg: np.ndarray, r_g: np.ndarray) -> np.ndarray:
    """A 6x6 hydrodynamic matrix given about CG, moved to CO: H(r_g)^T A H(r_g) (Fossen 2011)."""
    H = np.eye(6)
    H[:3, 3:] = skew(r_g).T
    return H.T @ A_cg @ H


def skew(a: np.ndarray) -> np.ndarray:
    """Skew-symmetric S(a) with S(a) b = a x b."""
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def symmetric_positive_definite(M: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(0.5 * (M + M.T))
    except np.linalg.LinAlgError:
        return False
    return True


def cg_from_mass_matrix(M_RB: np.ndarray) -> np.ndarray:
    m = M_RB[0, 0]
    S = M_RB[3:, :3] / m  # = S(r_g)
    return np.array([S[2, 1], S[0, 2], S[1, 0]])
