"""Fixed-step integrators and the compiled simulation step (thesis section 4.3).

The vessel state is integrated with the inputs (actuator force, environment
force, current) held over the step; the actuators are advanced afterwards with
their own exact first-order update, as a controller's commands arrive at
discrete times anyway.

The step is one kernel per integrator (``step_rk4``, ``step_dopri5``; the compiled loops choose
with the inlined ``step``), so a run compiles only the method it uses.
"""

import math

from numba import njit

from hild.compiled import kernel, variant
from hild.model.actuators import actuator_forces, update_actuators
from hild.model.dynamics import rhs_at
from hild.model.layout import I_EXTERNAL, I_TAU, METHOD_DOPRI5, METHOD_RK4, X_SIZE

# The stages k1..k7 and one trial state, each X_SIZE long, at these offsets of one flat work
# array of WORK_SIZE (offsets, not row views: hild/model/dynamics.py hydrodynamic_force)
K1, K2, K3, K4, K5, K6 = (i * X_SIZE for i in range(6))
XT = 7 * X_SIZE
WORK_SIZE = 8 * X_SIZE

# Dormand-Prince 5(4) tableau (Dormand & Prince 1980); the fifth-order weights
# advance the state, the step is fixed as in the thesis' simulator.
A21 = 1.0 / 5.0
A31, A32 = 3.0 / 40.0, 9.0 / 40.0
A41, A42, A43 = 44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0
A51, A52, A53, A54 = 19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0
A61, A62, A63 = 9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0
A64, A65 = 49.0 / 176.0, -5103.0 / 18656.0
B1, B3, B4, B5, B6 = 35.0 / 384.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0


@kernel
def rk4_step(x, P, inp, dt, work, w):
    """Advance x in place by one classical Runge-Kutta step of dt.

    The stages are a loop around one call of the right-hand side, each stage's trial state
    written first (the first stage's a copy of x): the compiled step then holds one copy of
    the right-hand side, not four (each copy costs seconds of a cold compile)."""
    n = x.shape[0]
    for stage in range(4):
        if stage == 0:
            for i in range(n):
                work[XT + i] = x[i]
        elif stage == 1:
            for i in range(n):
                work[XT + i] = x[i] + 0.5 * dt * work[K1 + i]
        elif stage == 2:
            for i in range(n):
                work[XT + i] = x[i] + 0.5 * dt * work[K2 + i]
        else:
            for i in range(n):
                work[XT + i] = x[i] + dt * work[K3 + i]
        rhs_at(work, XT, P, inp, work, stage * X_SIZE, w)  # into K1, K2, K3, K4
    for i in range(n):
        x[i] += dt / 6.0 * (work[K1 + i] + 2.0 * work[K2 + i] + 2.0 * work[K3 + i] + work[K4 + i])


@kernel
def dopri5_step(x, P, inp, dt, work, w):
    """Advance x in place by one fixed Dormand-Prince step (fifth-order solution); its stages a
    loop around one call of the right-hand side, as rk4_step's."""
    n = x.shape[0]
    for stage in range(6):
        if stage == 0:
            for i in range(n):
                work[XT + i] = x[i]
        elif stage == 1:
            for i in range(n):
                work[XT + i] = x[i] + dt * A21 * work[K1 + i]
        elif stage == 2:
            for i in range(n):
                work[XT + i] = x[i] + dt * (A31 * work[K1 + i] + A32 * work[K2 + i])
        elif stage == 3:
            for i in range(n):
                work[XT + i] = x[i] + dt * (
                    A41 * work[K1 + i] + A42 * work[K2 + i] + A43 * work[K3 + i]
                )
        elif stage == 4:
            for i in range(n):
                work[XT + i] = x[i] + dt * (
                    A51 * work[K1 + i]
                    + A52 * work[K2 + i]
                    + A53 * work[K3 + i]
                    + A54 * work[K4 + i]
                )
        else:
            for i in range(n):
                work[XT + i] = x[i] + dt * (
                    A61 * work[K1 + i]
                    + A62 * work[K2 + i]
                    + A63 * work[K3 + i]
                    + A64 * work[K4 + i]
                    + A65 * work[K5 + i]
                )
        rhs_at(work, XT, P, inp, work, stage * X_SIZE, w)  # into K1 ... K6
    for i in range(n):
        x[i] += dt * (
            B1 * work[K1 + i]
            + B3 * work[K3 + i]
            + B4 * work[K4 + i]
            + B5 * work[K5 + i]
            + B6 * work[K6 + i]
        )


@njit(cache=True, inline="always")
def integrate(method, x, P, inp, dt, work, w):
    """One step of the chosen method (METHOD_RK4 or METHOD_DOPRI5). Inlined: in a kernel
    where ``method`` is a constant, numba drops the other branch before typing it, so the
    other integrator is never compiled."""
    if method == METHOD_DOPRI5:
        dopri5_step(x, P, inp, dt, work, w)
    else:
        rk4_step(x, P, inp, dt, work, w)


@kernel
def wrap_angle(a):
    """Angle wrapped to [-pi, pi)."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def _step_kernel(method: int):
    """The simulation step with one integrator: a kernel of its own, compiled only when a run
    uses that method (the method is a constant of the closure). numba caches each such kernel
    apart: its cache key includes the closure's values."""

    @variant(method=method)
    def step(x, P, A, n_act, act_state, act_cmd, env, inp, tau_act, dt, work, w):
        """One simulation step: actuator force, vessel integration, actuator update.

        ``env`` holds the environment inputs (force in BODY and current in NED) in
        the I_* layout; ``inp`` and ``tau_act`` are caller-owned buffers.
        """
        actuator_forces(A, n_act, act_state, tau_act)
        for i in range(inp.shape[0]):
            inp[i] = env[i]
        for i in range(6):
            inp[I_TAU + i] += inp[I_EXTERNAL + i] + tau_act[i]
        integrate(method, x, P, inp, dt, work, w)
        x[5] = wrap_angle(x[5])
        update_actuators(A, n_act, act_state, act_cmd, dt)

    return step


step_rk4 = _step_kernel(METHOD_RK4)
step_dopri5 = _step_kernel(METHOD_DOPRI5)


@njit(cache=True, inline="always")
def step(method, x, P, A, n_act, act_state, act_cmd, env, inp, tau_act, dt, work, w):
    """The step of ``method`` inside a compiled loop: where ``method`` is a constant (a loop
    kernel made for one method), only that method's step kernel is compiled."""
    if method == METHOD_DOPRI5:
        step_dopri5(x, P, A, n_act, act_state, act_cmd, env, inp, tau_act, dt, work, w)
    else:
        step_rk4(x, P, A, n_act, act_state, act_cmd, env, inp, tau_act, dt, work, w)
