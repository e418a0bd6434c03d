"""The longest step the integrators take stably for a vessel, and the check that a run's state
is still one a boat can be in.

The step limit
--------------
An explicit Runge-Kutta method applied to the linear test equation x' = lambda x multiplies
the state by its stability function R(z), z = lambda dt, at each step; the step is stable
while |R(z)| <= 1 (Hairer & Wanner, Solving Ordinary Differential Equations II, 2nd ed.,
sec. IV.2; Butcher, Numerical Methods for Ordinary Differential Equations, 3rd ed., sec. 238).
The classical RK4 has R(z) = 1 + z + z^2/2 + z^3/6 + z^4/24 (as every four-stage method of
order 4 has): on the negative real axis it is stable up to |z| = 2.785, on the imaginary
axis up to |z| = 2 sqrt(2) = 2.83. The fixed Dormand-Prince step (its fifth-order weights,
Dormand & Prince 1980) has R(z) = the sum of z^k/k! for k <= 5, plus z^6/600: stable up to
|z| = 3.31 on the negative real axis but only up to |z| = 1.0 on the imaginary axis, so a
lightly damped oscillation limits it sooner than it limits RK4. ``reach`` gives, along the
ray of an eigenvalue, the |z| where |R| first exceeds 1, and the step may be as long as
reach(lambda) / |lambda| for every eigenvalue lambda of the linearized dynamics.

The dynamics are linearized where they are stiffest for the hull's own forces:

- At rest (Fossen, Handbook of Marine Craft Hydrodynamics and Motion Control, 2011,
  sec. 7.5: M nu_dot + D_L nu + G eta = tau, with eta_dot = nu at zero roll and pitch),
  d/dt [eta, nu] = [[0, I], [-M^-1 G, -M^-1 D_L]] [eta, nu]: the linear damping's decays
  (eigenvalues of M^-1 D_L) and the restoring oscillations in heave, roll and pitch
  (omega_n^2 from M^-1 G), with their couplings. At rest the Coriolis and centripetal
  forces, the quadratic and cross-flow drag and the ITTC friction have no linear part.
- Along a manoeuvre at full power (``manoeuvre``: full ahead, then the helm hard over, then
  full astern), by the Jacobian of the equations (hild/model/dynamics.py rhs) at its states:
  the drag terms c |u| u there add 2 |c u| to the damping, and the Coriolis terms couple the
  modes in proportion to the speed. In a full-power turn Odin's quadratic sway and yaw drag
  make its sway-yaw decay limit the step more than any of its modes at rest does.

The step allowed is MARGIN = 0.7 of the least linear limit. The linear analysis holds for
small departures from a state, and within a step the stages of an explicit method visit
states off the trajectory where a quadratic drag is stiffer than its tangent says, the more
so for Dormand-Prince's large stage coefficients (A52 = -11.6). Measured on the built-in
profiles at full power ahead and then in a hard turn: Odin with dopri5 runs away at 1.0 of
its linear limit (its sway speed jumps several-fold in one step as the turn starts) and
stays bounded at 0.9, with rk4 it stays bounded at 1.0 and runs away at 1.2; the other
profiles stay bounded at 0.84 with either method. With the margin a run at 0.9 of the
allowed step is at 0.63 of the linear limit (tests/test_stability.py).

The actuators set no limit: hild/model/actuators.py solves each first-order lag exactly over
the step (x + (target - x)(1 - exp(-dt/T))), which is stable for any dt, and their states do
not depend on the vessel's; so their time constants bound the accuracy of a run (a lag
shorter than the step is followed a step late) but not its stability.

What the bound does not cover: the weather (a current across the hull drives the cross-flow
drag as a turn does; the wind's and the waves' processes are integrated with the same step in
hild/environment/) and commands beyond the manoeuvre's. A run that goes unstable all the same
is stopped while it runs by ``state_problem``.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from hild.kernel_cache import announce_compiling, recall, remember
from hild.model import layout as L
from hild.model.vessel import Vessel

# The compiled kernels (hild/model/actuators.py, dynamics.py, integrators.py) are imported
# where the limit is computed, not here: a limit remembered from an earlier run (kernel_cache
# recall) needs no numba, so `hild check` on a known profile starts without the compiler.

# Each method's stability polynomial R(z), lowest power first (see above; tests derive
# DOPRI5's from the tableau in hild/model/integrators.py).
STABILITY_POLYNOMIALS = {
    "rk4": (1.0, 1.0, 1.0 / 2.0, 1.0 / 6.0, 1.0 / 24.0),
    "dopri5": (1.0, 1.0, 1.0 / 2.0, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 600.0),
}
# The share of the linear limit allowed (see the module's docstring).
MARGIN = 0.7
GROWTH_TOLERANCE = 1e-9  # |R| up to 1 + this counts as stable (rounding, not growth)
TABLE_STEP_DEG = 0.1  # the reach is tabulated at this spacing from 90 to 180 deg
DOF_NAMES = ("surge", "sway", "heave", "roll", "pitch", "yaw")


@functools.cache
def reach_table(method: str) -> np.ndarray:
    """The reach along rays at angles 90, 90.1, ..., 180 deg from the positive real axis:
    the first |z| where |R(z)| exceeds 1, on a grid of 0.01 and then by bisection."""
    poly = STABILITY_POLYNOMIALS[method]
    angles = np.radians(np.arange(0, round(90.0 / TABLE_STEP_DEG) + 1) * TABLE_STEP_DEG + 90.0)
    rays = np.exp(1j * angles)

    def unstable(z: np.ndarray) -> np.ndarray:
        value = np.zeros_like(z)
        for c in reversed(poly):
            value = value * z + c
        return np.abs(value) > 1.0 + GROWTH_TOLERANCE

    grid = np.arange(1, 401) * 0.01  # every method here leaves its region by |z| = 3.5
    first = np.argmax(unstable(grid[None, :] * rays[:, None]), axis=1)
    lo, hi = grid[first] - 0.01, grid[first]
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        out = unstable(mid * rays)
        lo, hi = np.where(out, lo, mid), np.where(out, mid, hi)
    return lo


def reach(method: str, direction: complex) -> float:
    """|lambda| dt may go up to this along the ray of ``direction`` (in the closed left
    half-plane): the lesser of the two tabulated rays around it (the reach changes
    monotonically between them)."""
    table = reach_table(method)
    angle = math.degrees(math.atan2(abs(direction.imag), direction.real))  # 0 to 180
    position = (min(max(angle, 90.0), 180.0) - 90.0) / TABLE_STEP_DEG
    i = min(int(position), len(table) - 2)
    return float(min(table[i], table[i + 1]))


def linearized(vessel: Vessel) -> np.ndarray:
    """The 12 x 12 system matrix of the vessel's dynamics linearized at rest, x = [eta, nu]."""
    M_inv = np.linalg.inv(vessel.M)
    A = np.zeros((12, 12))
    A[:6, 6:] = np.eye(6)
    A[6:, :6] = -M_inv @ vessel.G
    A[6:, 6:] = -M_inv @ vessel.D_L
    return A


@dataclass(frozen=True)
class StepLimit:
    """The longest step a method integrates a vessel with, and the mode that sets it."""

    vessel: str
    method: str
    linear_dt: float  # [s] the linear stability limit; inf when no mode limits the step
    eigenvalue: complex  # [1/s] of the limiting mode
    mode: str  # e.g. "the heave-pitch oscillation"
    reach: float  # |lambda| dt the method allows along that mode
    where: str = "at rest"  # where the dynamics were linearized

    @property
    def dt(self) -> float:
        """The longest step allowed [s]: the linear limit with the MARGIN."""
        return MARGIN * self.linear_dt

    @property
    def time_constant(self) -> float:
        """1/|lambda| of the limiting mode [s]."""
        return 1.0 / abs(self.eigenvalue)

    def describe(self) -> str:
        """The limit and why, e.g. for an error message."""
        if math.isinf(self.linear_dt):
            return f"{self.vessel}'s dynamics set no step limit with {self.method}"
        period = ""
        if self.eigenvalue.imag != 0.0:
            period = f" and a period of {2.0 * math.pi / abs(self.eigenvalue.imag):.3g} s"
        return (
            f"{MARGIN:g} of its linear stability limit, {round_down(self.linear_dt)} s: "
            f"its fastest mode for {self.method}, {self.mode} {self.where}, has a time "
            f"constant 1/|lambda| of {self.time_constant:.3g} s{period}, and {self.method} "
            f"is stable to {self.reach:.2f} time constants along it; the margin is for the "
            "drag's nonlinearity"
        )

    def problem(self, dt: float) -> str:
        """What is wrong with the step ``dt`` ('' if nothing), as the expected of an error."""
        if dt <= self.dt:
            return ""
        return (
            f"a step of at most {round_down(self.dt)} s for {self.vessel} with "
            f"{self.method} ({self.describe()})"
        )


def step_limit(vessel: Vessel, method: str) -> StepLimit:
    """The longest step ``method`` integrates ``vessel`` with: MARGIN times the least linear
    limit over its dynamics linearized at rest and along ``manoeuvre``. Remembered per vessel
    and method beside the compiled kernels (forgotten with them when the core changes)."""
    known = remembered_step_limit(vessel, method)
    if known is not None:
        return known
    announce_compiling()  # the manoeuvre steps the compiled model
    limit = computed_step_limit(vessel, method)
    lam = limit.eigenvalue
    kept = [limit.linear_dt, lam.real, lam.imag, limit.mode, limit.reach, limit.where]
    remember(limit_key(vessel, method), kept)
    return limit


def remembered_step_limit(vessel: Vessel, method: str) -> StepLimit | None:
    """step_limit when an earlier run has worked it out (a lookup: nothing compiles), else
    None."""
    known = recall(limit_key(vessel, method))
    if not remembered_limit(known):
        return None
    dt, re, im, mode, reach_, where = known
    return StepLimit(vessel.name, method, dt, complex(re, im), mode, reach_, where)


def remembered_limit(known: object) -> bool:
    """Whether a remembered value has the shape step_limit keeps (else it is computed again)."""
    return (
        isinstance(known, list)
        and len(known) == 6
        and all(isinstance(v, float) for v in known[:3] + known[4:5])
        and all(isinstance(v, str) for v in known[3:4] + known[5:])
    )


def limit_key(vessel: Vessel, method: str) -> str:
    """What a vessel's step limit depends on, hashed: the method, the model's arrays and the
    actuators the manoeuvre commands (the core's own sources key the memo's directory)."""
    digest = hashlib.sha256(f"{vessel.name}|{method}".encode())
    for array in (
        vessel.params,
        vessel.actuator_params,
        vessel.M_RB,
        vessel.M_A,
        vessel.D_L,
        vessel.G,
    ):
        digest.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
    digest.update(repr(vessel.actuators).encode())  # frozen records of floats, str, tuples
    return f"step_limit:{digest.hexdigest()[:32]}"


def computed_step_limit(vessel: Vessel, method: str) -> StepLimit:
    """step_limit, computed: linearized at rest and along the manoeuvre."""
    best = fastest_mode(method, linearized(vessel)), "at rest"
    for x, tau, where in manoeuvre(vessel, min(REFERENCE_DT, 0.1 * best[0][0])):
        found = fastest_mode(method, jacobian(vessel, x, tau))
        if found[0] < best[0][0]:
            best = found, where
    (dt, lam, velocities), where = best
    if math.isinf(dt):
        return StepLimit(vessel.name, method, dt, 0j, "", math.inf, where)
    mode = mode_name(vessel, velocities, lam)
    return StepLimit(vessel.name, method, dt, lam, mode, dt * abs(lam), where)


def fastest_mode(method: str, A: np.ndarray) -> tuple[float, complex, np.ndarray]:
    """The longest stable step for the linear system x_dot = A (x = [eta, nu]), the eigenvalue
    that sets it and its eigenvector's velocities (inf, 0, zeros if none does)."""
    eigenvalues, vectors = np.linalg.eig(A)
    best: tuple[float, complex, np.ndarray] = (math.inf, 0j, np.zeros(6))
    for k, lam in enumerate(eigenvalues):
        size = abs(lam)
        if size < 1e-9:  # a free position or heading: nothing grows or decays
            continue
        if lam.real > 1e-9 * size:  # growing whatever the step (a directionally unstable hull)
            continue
        dt = reach(method, lam) / size
        if dt < best[0]:
            best = (dt, complex(lam), vectors[6:, k])
    return best


def mode_name(vessel: Vessel, velocities: np.ndarray, eigenvalue: complex) -> str:
    """A mode named by the degrees of freedom that hold at least a quarter of its kinetic
    energy (|nu_i|^2 M_ii), e.g. "the heave-pitch oscillation" or "the sway decay"."""
    energy = np.abs(velocities) ** 2 * np.diag(vessel.M)
    share = energy / energy.sum() if energy.sum() > 0.0 else energy
    names = [DOF_NAMES[i] for i in range(6) if share[i] >= 0.25] or [DOF_NAMES[int(share.argmax())]]
    kind = "oscillation" if abs(eigenvalue.imag) > 1e-9 * abs(eigenvalue) else "decay"
    return f"the {'-'.join(names)} {kind}"


def round_down(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, rounded towards zero (a limit stays one)."""
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(value)))
    return f"{math.floor(value * scale) / scale:.{digits}g}"


# The manoeuvre the bound follows besides rest, in calm water from rest:
LEGS = (("ahead", 20.0), ("turn", 40.0), ("astern", 20.0))  # [s] each
WHERE = {
    "ahead": "at full power ahead",
    "turn": "in a full-power turn",
    "astern": "at full power astern",
}
REFERENCE_DT = 0.01  # [s] its step (or a tenth of the limit at rest, if that is shorter)
SAMPLE_S = 0.5  # [s] between linearizations


def manoeuvre_commands(vessel: Vessel) -> dict[str, np.ndarray]:
    """The actuators' commands (in the S_* layout) of each leg of the manoeuvre. Ahead: every
    actuator at the top of its speed range, deflectors ahead, angles at 0. Turn: the same
    with every angle at its largest (helm to starboard) or, for a vessel that steers by
    thrust alone, the actuators on its starboard side at the bottom of their speed range.
    Astern: deflectors astern (jets stay at the top of their speed range), other actuators
    at the bottom of theirs, angles at 0."""
    n = vessel.n_act * L.S_SIZE
    legs = {name: np.zeros(n) for name, _ in LEGS}
    steered = any(a.angle is not None for a in vessel.actuators)
    for a in vessel.actuators:
        k = a.index * L.S_SIZE
        lo, hi = a.speed_range
        legs["ahead"][k + L.S_SPEED] = legs["turn"][k + L.S_SPEED] = hi
        if a.deflector is not None:
            legs["ahead"][k + L.S_DEFLECTOR] = legs["turn"][k + L.S_DEFLECTOR] = a.deflector.hi
            legs["astern"][k + L.S_DEFLECTOR] = a.deflector.lo
            legs["astern"][k + L.S_SPEED] = hi
        else:
            legs["astern"][k + L.S_SPEED] = lo
        if a.angle is not None:
            legs["turn"][k + L.S_ANGLE] = a.angle.hi
        elif not steered and a.position[1] > 0.0:
            legs["turn"][k + L.S_SPEED] = lo
    return legs


def manoeuvre(vessel: Vessel, dt: float) -> Iterator[tuple[np.ndarray, np.ndarray, str]]:
    """States of the full-power manoeuvre every SAMPLE_S, with the actuators' force and where
    the vessel is ("in a full-power turn at 4.8 m/s"): where the drag and the Coriolis terms
    are largest. Integrated with the model's own step; it ends early should the vessel's
    state become absurd."""
    from hild.model.actuators import actuator_forces
    from hild.model.dynamics import W_SIZE
    from hild.model.integrators import WORK_SIZE, step_rk4

    n = vessel.n_act
    state = np.zeros(n * L.S_SIZE)
    for a in vessel.actuators:
        state[a.index * L.S_SIZE : (a.index + 1) * L.S_SIZE] = a.initial
    legs = manoeuvre_commands(vessel)
    x = np.zeros(L.X_SIZE)
    env, inp, tau = np.zeros(L.I_SIZE), np.zeros(L.I_SIZE), np.zeros(6)
    work, w = np.zeros(WORK_SIZE), np.zeros(W_SIZE)
    A = vessel.actuator_params.copy()  # (the step keeps its lag factors in it: not the vessel's)
    every = max(1, round(SAMPLE_S / dt))
    for leg, duration in LEGS:
        command = legs[leg]
        for k in range(1, round(duration / dt) + 1):
            step_rk4(x, vessel.params, A, n, state, command, env, inp, tau, dt, work, w)
            if k % every == 0:
                if state_problem(x):  # the model itself runs away: nothing more to learn
                    return
                actuator_forces(A, n, state, tau)
                speed = math.hypot(x[L.X_NU], x[L.X_NU + 1])
                yield x.copy(), tau.copy(), f"{WHERE[leg]} at {speed:.2g} m/s"


def jacobian(vessel: Vessel, x: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """d(x_dot)/dx of the vessel's equations at the state x under the force tau, by central
    differences (the actuators' force does not depend on x)."""
    from hild.model.dynamics import W_SIZE, rhs

    inp = np.zeros(L.I_SIZE)
    inp[L.I_TAU : L.I_TAU + 6] = tau
    w = np.zeros(W_SIZE)
    plus, minus = np.zeros(L.X_SIZE), np.zeros(L.X_SIZE)
    J = np.zeros((L.X_SIZE, L.X_SIZE))
    for j in range(L.X_SIZE):
        h = 1e-6 * max(1.0, abs(x[j]))
        xp, xm = x.copy(), x.copy()
        xp[j] += h
        xm[j] -= h
        rhs(xp, vessel.params, inp, plus, w)
        rhs(xm, vessel.params, inp, minus, w)
        J[:, j] = (plus - minus) / (2.0 * h)
    return J


# A state beyond these is no boat's: a run that reaches one has diverged (or capsized).
MAX_SPEED = 100.0  # [m/s], about 200 kn
MAX_RATE = 4.0 * math.pi  # [rad/s], two turns a second
MAX_TILT = math.pi / 2.0  # [rad] of roll or pitch


def state_problem(x: np.ndarray) -> str:
    """What makes the state x = [eta, nu] absurd ('' if nothing): a value that is not finite,
    a speed above 100 m/s, an angular rate above 720 deg/s, or roll or pitch beyond 90 deg."""
    bad = [
        f"{name} = {value}"
        for name, value in zip(L.STATE_NAMES, x, strict=True)
        if not math.isfinite(value)
    ]
    if bad:
        return f"the state is not finite ({', '.join(bad)})"
    speed = math.hypot(x[6], x[7], x[8])
    if speed > MAX_SPEED:
        return f"the speed reached {speed:.3g} m/s (more than {MAX_SPEED:g} m/s)"
    rate = math.hypot(x[9], x[10], x[11])
    if rate > MAX_RATE:
        return (
            f"the angular rate reached {math.degrees(rate):.3g} deg/s (more than "
            f"{math.degrees(MAX_RATE):g} deg/s)"
        )
    for name, value in (("roll", x[3]), ("pitch", x[4])):
        if abs(value) > MAX_TILT:
            return f"the {name} angle reached {math.degrees(value):.3g} deg (beyond 90 deg)"
    return ""


def absurd(states: np.ndarray) -> np.ndarray:
    """Which rows of ``states`` (n x 12, [eta, nu] each) ``state_problem`` faults, at numpy's
    speed: for every recorded row of a long run."""
    with np.errstate(over="ignore", invalid="ignore"):
        speed2 = (states[:, 6:9] ** 2).sum(axis=1)
        rate2 = (states[:, 9:12] ** 2).sum(axis=1)
        tilt = np.abs(states[:, 3:5]).max(axis=1)
    finite = np.isfinite(states).all(axis=1)
    return ~finite | (speed2 > MAX_SPEED**2) | (rate2 > MAX_RATE**2) | (tilt > MAX_TILT)
