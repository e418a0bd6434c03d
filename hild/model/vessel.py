"""A vessel as the core knows it: the arrays of its model and the matrices they came from.

Pure data and the derivations of Fossen's matrices (thesis section 2.2); reading and checking
a profile file is hild/profiles/vessel.py's job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hild.model import layout as L

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
class FirstOrder:
    """One actuator state's response (thesis eq. 2.41): a first-order lag towards the command,
    a rate limit and the state's limits, in SI units (rad for angles)."""

    time_constant: float  # [s]; 0 follows the command at once
    rate_limit: float  # [unit/s]; 0 means unlimited
    lo: float
    hi: float


@dataclass(frozen=True)
class ThrustLaw:
    """Thrust against the speed state: quadratic K n|n| (thesis eq. 2.40), linear K x (VRX),
    or the generalized logistic function (VRX eq. 26) with A, K, B, nu, C, M per direction."""

    law: str  # "quadratic", "linear" or "glf"
    k_forward: float = 0.0
    k_reverse: float = 0.0
    glf_forward: tuple[float, ...] = ()
    glf_reverse: tuple[float, ...] = ()


@dataclass(frozen=True)
class ActuatorSpec:
    """One actuator: what the shell needs (its name, commands and ranges) and what the core's
    A_* block is packed from."""

    name: str
    index: int
    kind: str  # "propeller", "waterjet" or "thruster"
    speed_unit: str  # "rpm" or "normalized"
    angle_kind: str  # "none", "azimuth" or "nozzle"
    angle_range_deg: tuple[float, float]  # as the profile gives it, for commands in degrees
    initial: tuple[float, float, float]  # speed, angle [rad], deflector
    position: tuple[float, float, float]  # from CO [m]
    mount: float  # direction of the thrust at angle 0 [rad]
    thrust: ThrustLaw
    speed: FirstOrder
    angle: FirstOrder | None = None
    deflector: FirstOrder | None = None

    @property
    def speed_range(self) -> tuple[float, float]:
        return self.speed.lo, self.speed.hi

    @property
    def has_deflector(self) -> bool:
        return self.deflector is not None

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

    @cached_property  # (an immutable spec: worked out once, at its first use)
    def state_columns(self) -> tuple[str, str, str]:
        """Column names of this actuator's three states in output files."""
        speed = self.commands[0]
        angle = "azimuth" if self.angle_kind == "azimuth" else "nozzle"
        return (f"{self.name}.{speed}", f"{self.name}.{angle}", f"{self.name}.deflector")

    @cached_property
    def present_states(self) -> tuple[tuple[str, int], ...]:
        """The states this actuator has (its speed, and its angle and deflector if it has
        them): each one's column name and its slot in the actuator's block of the state
        (hild/model/layout.py's S_SPEED, S_ANGLE, S_DEFLECTOR)."""
        speed, angle, deflector = self.state_columns
        present = [(speed, L.S_SPEED)]
        if self.angle_kind != "none":
            present.append((angle, L.S_ANGLE))
        if self.has_deflector:
            present.append((deflector, L.S_DEFLECTOR))
        return tuple(present)


@dataclass(frozen=True)
class IttcFriction:
    """ITTC-57 surge friction (thesis eq. 3.9)."""

    coefficient: float  # 0.5 rho S (1 + k) [kg/m]
    residual: float  # C_R
    length: float  # L_pp in the Reynolds number [m]


@dataclass(frozen=True)
class CrossFlow:
    """Cross-flow drag integrated over strips of the hull (thesis eqs 2.30-2.31)."""

    sway: float  # 0.5 rho T Cd [kg/m^3 per m]
    yaw: float  # [kg/m^3 per m]
    length: float  # [m] integrated over
    strips: int
    x_mid: float  # [m] middle of the integrated length from CO


@dataclass(frozen=True)
class NonlinearDamping:
    """The damping terms beyond D_L: VRX eq. 22's quadratic derivatives (SNAME, <= 0, in the
    order Xuu Yvv Yrv Yvr Yrr Nvv Nrv Nvr Nrr), ITTC friction and cross-flow drag."""

    quadratic: tuple[float, ...] = (0.0,) * 9
    ittc: IttcFriction | None = None
    cross_flow: CrossFlow | None = None


@dataclass(frozen=True)
class WindLoad:
    """The hull's wind-load data for the environment's force models: Blendermann's (thesis
    eqs 2.57-2.61), the symmetric one (2.62-2.67) or VRX's (VRX eqs 23-25). ``height`` is where
    the model takes the wind (thesis eq. 2.43); the fields a model does not use stay 0."""

    model: str  # "blendermann", "symmetric" or "vrx"
    height: float  # [m]
    length: float  # [m] the length the coefficients are made with
    frontal_area: float = 0.0  # [m^2]
    lateral_area: float = 0.0  # [m^2]
    c_x: float = 0.0  # symmetric: dimensionless; vrx: [kg/m]
    c_y: float = 0.0
    c_n: float = 0.0
    # Blendermann's, with the thesis' symbols (eqs 2.57-2.61):
    side_centre_height: float = 0.0  # s_H: centre of the lateral area above the water [m]
    side_centre_ahead: float = 0.0  # s_L: ... and its longitudinal position [m]
    cd_transverse: float = 0.0  # CD_t
    cd_lateral_head: float = 0.0  # CD_l_AF in head wind
    cd_lateral_tail: float = 0.0  # CD_l_AF in tail wind
    delta: float = 0.0  # cross-force parameter
    kappa: float = 0.0


@dataclass(frozen=True)
class Vessel:
    """A loaded vessel profile: the core's arrays plus the matrices they came from."""

    name: str
    source: str
    params: np.ndarray
    actuator_params: np.ndarray
    actuators: tuple[ActuatorSpec, ...]
    M_RB: np.ndarray
    M_A: np.ndarray
    D_L: np.ndarray
    G: np.ndarray
    length: float
    # wind-force data for the environment, None for no wind load
    wind: WindLoad | None = None
    # multipliers on the wave-force scale in surge, sway and yaw
    wave_gains: tuple[float, float, float] = (1.0, 1.0, 1.0)
    beam: float = 0.0  # [m] the hull's (its AIS dimensions by default); 0: not known

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
            return (
                f"one of {full} ({self.name}.{actuator} has no command {command!r}; it "
                f"takes: {', '.join(spec.commands)})"
            )
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


def ittc_coefficient(rho: float, wetted_surface: float, form_factor: float) -> float:
    """0.5 rho S (1 + k) [kg/m] of the ITTC friction line (thesis eq. 3.9)."""
    return 0.5 * rho * wetted_surface * (1.0 + form_factor)


def cross_flow_sway(rho: float, draft: float, cd_2d: float) -> float:
    """0.5 rho T Cd [kg/m^3 per m], thesis eq. 2.31 with a constant draft T(x) = T."""
    return 0.5 * rho * draft * cd_2d


def with_relative_damping(
    D_L: np.ndarray, zetas: dict[int, float], M: np.ndarray, G: np.ndarray
) -> np.ndarray:
    """D_L plus 2 zeta omega_n M_ii on the diagonal of each restored degree of freedom i in
    ``zetas``, omega_n = sqrt(G_ii / M_ii): a fraction of critical damping."""
    D = D_L.copy()
    for i, zeta in zetas.items():
        D[i, i] += 2.0 * zeta * math.sqrt(G[i, i] * M[i, i])
    return D
