"""Many ticks in one compiled call: what ``Simulation.tick()`` does n times over, traffic and
all, with the own ship's track written row by row (a lockstep run's quiet stretch between two
events: no device due, no controller step, no command).

Each tick is the same arithmetic in the same order as ``tick()``: the environment at the
step's start, the vessel's step, the environment's processes, the targets against the own ship
before and after, the environment at the new step. A run stepped this way is the run stepped
tick by tick, bit for bit. (Imported when first used: it compiles the traffic's kernel too.)
"""

import functools

import numpy as np

from hild.compiled import variant
from hild.coupled.loop import coupled_step
from hild.environment.kernel import env_outputs
from hild.traffic.kernel import traffic_tick

TRACK_ROW = 5  # t, north, east, down, roll (hild/scenario/track.py TRACK_COLUMNS)


@functools.cache
def ticks_kernel(method: int, sea: int):
    """The compiled ticks for one integrator (METHOD_*) and one sea (SEA_*), a kernel of
    its own each (see hild/coupled/loop.py run_kernel)."""

    @variant(method=method, sea=sea)
    def ticks(
        n,
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
        B,
        W,
        noise,
        j0,
        T,
        TP,
        WP,
        n_targets,
        x_before,
        rows,
        row0,
        stop_n,
        stop_e,
        stop_r2,
    ):
        """Advance n ticks from global step k0, writing the track row after each into
        ``rows[row0 + i]``. Stops early after the first tick that ends within ``stop_r2`` (a
        squared distance; negative: never) of (stop_n, stop_e). Returns the ticks done."""
        has_env = B.shape[0] > 0
        for i in range(n):
            kk = k0 + i
            if n_targets > 0:  # the own ship at the tick's start, the targets' reference
                for j in range(x.shape[0]):
                    x_before[j] = x[j]
            coupled_step(
                method,
                sea,
                kk,
                j0 + i,
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
            if n_targets > 0:
                traffic_tick(T, TP, WP, n_targets, x_before, x, dt, kk * dt, (kk + 1) * dt)
            if has_env:
                env_outputs(B, W, kk + 1, x, dt, env, sea)
            row = rows[row0 + i]
            row[0] = (kk + 1) * dt
            row[1] = x[0]
            row[2] = x[1]
            row[3] = x[2]
            row[4] = x[3]
            if stop_r2 >= 0.0:
                dn, de = x[0] - stop_n, x[1] - stop_e
                if dn * dn + de * de <= stop_r2:
                    return i + 1
        return n

    return ticks


def no_targets() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Empty traffic arrays in the traffic layout's widths (a run without targets)."""
    from hild.traffic.layout import P_SIZE, T_SIZE, WP_SIZE

    return np.zeros((0, T_SIZE)), np.zeros((0, P_SIZE)), np.zeros((0, WP_SIZE))
