"""The coupled step: the vessel and its environment advanced together, and the recorded row.

The model knows nothing of weather and the environment nothing of the hull's equations; this
module is where the two meet. Each step the environment's outputs (its force in BODY and the
current in NED) are written into the model's input vector, the vessel is integrated, and the
environment's processes are advanced. The environment writes those inputs at its own forcing
slots (environment/layout.py F_*), which must be the model's input slots (model/layout.py I_*):
checked here, once, at import.
"""

import functools
import math

from numba import njit

from hild.compiled import kernel, variant
from hild.environment import layout as EL
from hild.environment.kernel import env_advance, env_outputs
from hild.environment.layout import (
    E_SIZE,
    O_CUR_SPEED,
    O_CUR_TO,
    O_ELEVATION,
    O_TAU_WIND,
    O_WIND_FROM,
    O_WIND_SPEED,
    S_SIZE,
)
from hild.model import layout as L
from hild.model.actuators import actuator_forces
from hild.model.integrators import step
from hild.model.layout import X_SIZE

if (EL.F_TAU, EL.F_CURRENT) != (L.I_TAU, L.I_CURRENT):
    raise ImportError("the environment's forcing slots are not the model's input slots")

# The recorded row: t, the state, each actuator's three states, the actuator force, then (with
# an environment) its outputs in EL.OUTPUT_COLUMNS. `hild sim` and its CSV read it by name.
ROW_T = 0
ROW_STATE = 1
ROW_ACTUATORS = ROW_STATE + X_SIZE


def row_force(n_act: int) -> int:
    """Where a row's actuator force (6) starts, for n_act actuators."""
    return ROW_ACTUATORS + L.S_SIZE * n_act


def row_environment(n_act: int) -> int:
    """Where a row's environment outputs start, for n_act actuators."""
    return row_force(n_act) + 6


@njit(cache=True, inline="always")
def coupled_step(
    method,
    sea,
    k,
    j,
    x,
    P,
    A,
    n_act,
    act_state,
    act_cmd,
    env,
    inp,
    tau_act,
    dt,
    work,
    w,
    B,
    W,
    noise,
):
    """Step k to k + 1, the same in every compiled loop (``run``, ``tick``, hild/coupled/ticks.py
    ``ticks``): with an environment (its buffer B not empty), its outputs at step k (done
    already if evaluated at k: env_outputs is idempotent), the vessel's step
    (hild/model/integrators.py step), and the environment's processes with noise column j.
    Inlined: ``method`` and ``sea`` are constants of each loop's kernel, and only their code is
    compiled."""
    has_env = B.shape[0] > 0
    if has_env:
        env_outputs(B, W, k, x, dt, env, sea)
    step(method, x, P, A, n_act, act_state, act_cmd, env, inp, tau_act, dt, work, w)
    if has_env:
        env_advance(B, noise, j, k, x, dt, sea)


@functools.cache
def run_kernel(method: int, sea: int):
    """The compiled loop for one integrator (METHOD_*) and one sea (SEA_* of
    hild/environment/kernel.py): a kernel of its own each, so a run compiles only what it
    uses (hild/model/integrators.py step, hild/environment/kernel.py env_outputs)."""

    @variant(method=method, sea=sea)
    def run(
        n_steps,
        record_every,
        k0,
        x,
        P,
        A,
        n_act,
        act_state,
        act_cmd,
        env,
        inp,
        tau_act,
        dt,
        work,
        w,
        out,
        B,
        W,
        noise,
        j0,
    ):
        """Advance n_steps from global step k0, writing a row into ``out`` at each
        global step that is a multiple of ``record_every``.

        With an environment (its buffer B not empty) its outputs are computed before each step
        and its processes advanced after it, with noise columns j0, j0 + 1, ...
        A row is [t, x (12), actuator states (3 per actuator), actuator force (6)]
        and, with an environment, its recorded outputs (ENV_COLUMNS). Returns the
        number of rows written. ``inp``, ``tau_act``, ``work`` and ``w`` are the step's
        buffers, as ``step`` takes them (the caller's: a kernel compiled without numba's
        reference counting allocates nothing, hild/compiled.py); ``tau_act`` is left holding
        the last step's actuator force, as a step leaves it.
        """
        rows = 0
        na = act_state.shape[0]
        has_env = B.shape[0] > 0
        for k in range(n_steps):
            kk = k0 + k
            coupled_step(
                method,
                sea,
                kk,
                j0 + k,
                x,
                P,
                A,
                n_act,
                act_state,
                act_cmd,
                env,
                inp,
                tau_act,
                dt,
                work,
                w,
                B,
                W,
                noise,
            )
            if record_every > 0 and (kk + 1) % record_every == 0:
                row = out[rows]
                row[ROW_T] = (kk + 1) * dt
                for i in range(X_SIZE):
                    row[ROW_STATE + i] = x[i]
                for i in range(na):
                    row[ROW_ACTUATORS + i] = act_state[i]
                f0 = ROW_ACTUATORS + na  # the force at the row's actuator states, into the row
                actuator_forces(A, n_act, act_state, row[f0 : f0 + 6])
                if has_env:
                    env_outputs(B, W, kk + 1, x, dt, env, sea)
                    record_outputs(B, row, ROW_ACTUATORS + na + 6)  # = row_environment(n_act)
                rows += 1
        return rows

    return run


@functools.cache
def tick_kernel(method: int, sea: int):
    """The real-time loop's tick in one compiled call (``Simulation.tick``), a kernel for one
    integrator and one sea as ``run_kernel``'s: one call from Python where four were (the
    environment, the step, the environment's processes, the environment again), each of which
    cost a dispatch and, after the loop's wait, the caches it missed."""

    @variant(method=method, sea=sea)
    def tick(k, x, P, A, n_act, act_state, act_cmd, env, inp, tau_act, dt, work, w, B, W, noise, j):
        """Step k to k + 1 with noise column j, then the environment at the new step (what the
        shell reads between ticks). Returns nothing."""
        coupled_step(
            method,
            sea,
            k,
            j,
            x,
            P,
            A,
            n_act,
            act_state,
            act_cmd,
            env,
            inp,
            tau_act,
            dt,
            work,
            w,
            B,
            W,
            noise,
        )
        if B.shape[0] > 0:
            env_outputs(B, W, k + 1, x, dt, env, sea)

    return tick


@kernel
def record_outputs(B, row, start):
    """The environment's outputs (in buffer B) in the recorded units (directions in degrees)."""
    o = E_SIZE + S_SIZE
    row[start] = B[o + O_WIND_SPEED]
    row[start + 1] = math.degrees(B[o + O_WIND_FROM]) % 360.0
    row[start + 2] = B[o + O_CUR_SPEED]
    row[start + 3] = math.degrees(B[o + O_CUR_TO]) % 360.0
    row[start + 4] = B[o + O_ELEVATION]
    for i in range(12):
        row[start + 5 + i] = B[o + O_TAU_WIND + i]
