"""Actuator dynamics and thrust (thesis eqs 2.37-2.42, 3.16-3.21; VRX paper eq. 26).

Each actuator has three states, in native units: speed (rev/min for a
propeller or jet, a normalized command in [-1, 1] for a linear or GLF thrust
map), angle (azimuth or nozzle, rad) and astern deflector position in [-1, 1].
"""

import math

from hild.compiled import kernel
from hild.model.layout import (
    A_ANGLE,
    A_ANGLE_KIND,
    A_DEFLECTOR,
    A_GLF_FWD,
    A_GLF_REV,
    A_HAS_DEFLECTOR,
    A_K_FWD,
    A_K_REV,
    A_LAG,
    A_LAG_DT,
    A_LAW,
    A_MOUNT,
    A_SIZE,
    A_SPEED,
    A_X,
    A_Y,
    A_Z,
    ANGLE_AZIMUTH,
    ANGLE_NONE,
    ANGLE_NOZZLE,
    LAW_GLF,
    LAW_LINEAR,
    S_ANGLE,
    S_DEFLECTOR,
    S_SIZE,
    S_SPEED,
)


@kernel
def first_order_state(x, cmd, dt, A, k):
    """Advance one first-order actuator state over dt (thesis eq. 2.37).

    ``A[k:k+4]`` holds the time constant, rate limit, minimum and maximum.
    The command is saturated first, the lag is solved exactly for a command
    held over the step, and the rate limit and saturation bound the result.
    """
    tau = A[k]
    return lagged_state(x, cmd, dt, 1.0 - math.exp(-dt / tau) if tau > 0.0 else 0.0, A, k)


@kernel
def lagged_state(x, cmd, dt, lag, A, k):
    """``first_order_state`` with its lag factor ``lag`` = 1 - exp(-dt / tau) given (the same
    expression, computed once per time step: the result is the same to the bit)."""
    tau, rate, lo, hi = A[k], A[k + 1], A[k + 2], A[k + 3]
    target = min(max(cmd, lo), hi)
    if tau > 0.0:
        nxt = x + (target - x) * lag
    else:
        nxt = target
    if rate > 0.0:
        limit = rate * dt
        nxt = min(max(nxt, x - limit), x + limit)
    return min(max(nxt, lo), hi)


@kernel
def update_actuators(A, n_act, state, cmd, dt):
    """Advance all actuator states in place over one step of dt seconds. Each actuator's lag
    factors are computed at its first step of this dt and kept in A (A_LAG_DT, A_LAG)."""
    for i in range(n_act):
        a = i * A_SIZE
        s = i * S_SIZE
        if A[a + A_LAG_DT] != dt:
            for j, k in ((0, A_SPEED), (1, A_ANGLE), (2, A_DEFLECTOR)):
                tau = A[a + k]
                A[a + A_LAG + j] = 1.0 - math.exp(-dt / tau) if tau > 0.0 else 0.0
            A[a + A_LAG_DT] = dt
        state[s + S_SPEED] = lagged_state(
            state[s + S_SPEED], cmd[s + S_SPEED], dt, A[a + A_LAG], A, a + A_SPEED
        )
        if A[a + A_ANGLE_KIND] != ANGLE_NONE:
            state[s + S_ANGLE] = lagged_state(
                state[s + S_ANGLE], cmd[s + S_ANGLE], dt, A[a + A_LAG + 1], A, a + A_ANGLE
            )
        if A[a + A_HAS_DEFLECTOR] != 0.0:
            state[s + S_DEFLECTOR] = lagged_state(
                state[s + S_DEFLECTOR],
                cmd[s + S_DEFLECTOR],
                dt,
                A[a + A_LAG + 2],
                A,
                a + A_DEFLECTOR,
            )


@kernel
def glf(x, A, k):
    """Generalized logistic thrust curve T = A + (K-A) / (C + exp(-B(x-M)))^(1/nu), VRX eq. 26."""
    a, kk, b, nu, c, m = A[k], A[k + 1], A[k + 2], A[k + 3], A[k + 4], A[k + 5]
    return a + (kk - a) / (c + math.exp(-b * (x - m))) ** (1.0 / nu)


@kernel
def thrust_magnitude(A, a, speed):
    """Axial thrust [N] of one actuator at its speed state.

    Zero speed gives zero thrust for every law: the GLF fit of VRX leaves about
    1 N at a zero command, which would push a boat whose thrusters are stopped.
    """
    if speed == 0.0:
        return 0.0
    law = A[a + A_LAW]
    if law == LAW_GLF:
        if speed > 0.0:
            return glf(speed, A, a + A_GLF_FWD)
        return glf(speed, A, a + A_GLF_REV)
    k = A[a + A_K_FWD] if speed > 0.0 else A[a + A_K_REV]
    if law == LAW_LINEAR:
        return k * speed
    return k * speed * abs(speed)  # thesis eq. 2.40, F = K n|n|


@kernel
def actuator_forces(A, n_act, state, tau):
    """Generalized force tau (6, BODY) of all actuators, overwriting tau.

    Thrust configuration after thesis eqs 2.39-2.42 and 3.21, in full 6-DOF:
    each actuator's force f acts at its position r, giving [f, r x f].

    Waterjets (thesis eq. 3.21): the deflector state beta in [-1, 1] scales the
    surge component only, from full ahead (1) through zero (0) to full astern
    (-1); the sway component F sin(alpha) is kept whatever the deflector does.
    Why: the reversing bucket turns the axial part of the jet back under the
    hull, but the steering nozzle still sets the side part of the jet, which
    the bucket does not reverse. A jet in neutral or astern therefore still
    steers, and a given nozzle angle swings the stern the same way as ahead
    (the thesis notes that at deflector 0 the nozzle still gives a yaw moment
    with zero surge force, and eq. 3.21 leaves beta out of the sway row). The
    yaw moment is then the moment of that force vector, x Fy - y Fx, so the
    stern arm of the surge force sees beta too. (Eq. 3.21 as printed leaves
    beta out of its -l_y cos(alpha) term; that would give a yaw moment from a
    surge force that does not exist at beta = 0.)
    """
    for i in range(6):
        tau[i] = 0.0
    for i in range(n_act):
        a = i * A_SIZE
        s = i * S_SIZE
        thrust = thrust_magnitude(A, a, state[s + S_SPEED])
        if thrust == 0.0:
            continue
        kind = A[a + A_ANGLE_KIND]
        alpha = A[a + A_MOUNT]
        if kind == ANGLE_AZIMUTH:
            alpha += state[s + S_ANGLE]
        elif kind == ANGLE_NOZZLE:
            # a positive steering angle throws the jet to starboard, so the
            # reaction pushes the stern to port and the bow turns to starboard
            alpha -= state[s + S_ANGLE]
        beta = state[s + S_DEFLECTOR] if A[a + A_HAS_DEFLECTOR] != 0.0 else 1.0
        fx = beta * thrust * math.cos(alpha)
        fy = thrust * math.sin(alpha)
        x, y, z = A[a + A_X], A[a + A_Y], A[a + A_Z]
        tau[0] += fx
        tau[1] += fy
        # r x f with f = (fx, fy, 0)
        tau[3] += -z * fy
        tau[4] += z * fx
        tau[5] += x * fy - y * fx
