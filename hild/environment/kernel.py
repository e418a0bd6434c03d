"""The compiled environment step: processes, wind and wave forces, current.

The kernels work on one flat buffer B (parameters E_*, then process states
S_*, outputs O_* and the gust table; see layout.py) and one 2-D array W of
wave components, so that each call passes few arrays.

``env_outputs`` evaluates the environment at step k for the vessel state at
that step (idempotent: a second call at the same step does nothing);
``env_advance`` moves the stochastic processes on to step k + 1, drawing one
white-noise value per channel from the caller's noise block. Both allocate
nothing.

Each comes as a kernel per sea: calm, with waves (``sea_of`` tells them by the buffer's
E_WAVE_ON) and, for a daemon whose weather can change as it runs, any (the flag read each
step). So a calm simulation never compiles the wave code: the sea is a constant of each
kernel's closure, and numba drops the branch not taken before typing it.
"""

import math

from numba import njit

from hild.compiled import variant
from hild.environment.layout import (
    C_AMPLITUDE,
    C_KE,
    C_KN,
    C_OMEGA,
    E_AF,
    E_AL,
    E_CDIR,
    E_CDL_HEAD,
    E_CDL_TAIL,
    E_CDT,
    E_CN,
    E_CUR,
    E_CX,
    E_CY,
    E_DELTA,
    E_FORCE_KIND,
    E_GUST_A,
    E_GUST_B,
    E_GUST_C,
    E_GUST_KIND,
    E_GUST_N,
    E_HEIGHT_FACTOR,
    E_HL,
    E_KAPPA,
    E_LOA,
    E_RHO_AIR,
    E_SIZE,
    E_SL,
    E_SLOW_EVERY,
    E_WAVE_G,
    E_WAVE_GAIN,
    E_WAVE_K_MAX,
    E_WAVE_KW,
    E_WAVE_LAMBDA,
    E_WAVE_OMEGA0,
    E_WAVE_OMEGA_MAX,
    E_WAVE_ON,
    E_WAVE_TO_COS,
    E_WAVE_TO_SIN,
    E_WDIR,
    E_WIND,
    F_CURRENT,
    F_TAU,
    FORCE_BLENDERMANN,
    FORCE_VRX,
    GM_A,
    GM_B,
    GM_HI,
    GM_LO,
    GM_MEAN,
    GUST_RANDOM_WALK,
    GUST_TABLE,
    GUST_VRX,
    N_CDIR,
    N_CUR,
    N_GUST,
    N_TF,
    N_WDIR,
    N_WIND,
    O_CUR_SPEED,
    O_CUR_TO,
    O_ELEVATION,
    O_SIZE,
    O_SLOPE_E,
    O_SLOPE_N,
    O_TAU_WAVE,
    O_TAU_WIND,
    O_WIND_FROM,
    O_WIND_SPEED,
    S_CDIR,
    S_CUR,
    S_CUR_ANGLE,
    S_ENCOUNTER,
    S_GUST,
    S_OUT_K,
    S_PREV_E,
    S_PREV_N,
    S_SIZE,
    S_TF,
    S_WAVE_K,
    S_WDIR,
    S_WIND,
    S_WIND_ANGLE,
    W_COS,
    W_SIN,
    W_THETA,
    WAVE_RESYNC_STEPS,
)
from hild.environment.spectra import G  # one gravity for the whole environment

S0 = E_SIZE  # the process states follow the parameters in the buffer
O0 = E_SIZE + S_SIZE  # then the outputs
G0 = E_SIZE + S_SIZE + O_SIZE  # then the gust table
TWO_PI = 2.0 * math.pi
# The seas a kernel is made for: calm and waves for a run whose weather is fixed (a simulation,
# a scenario), any for a daemon's, whose weather can change while it runs (it reads E_WAVE_ON
# each step, and is compiled once, before the clock starts).
SEA_CALM, SEA_WAVES, SEA_ANY = 0, 1, 2


@njit(cache=True, inline="always")
def gauss_markov_step(x, B, g, n):
    """One exact step of a first-order Gauss-Markov deviation, saturated (thesis 2.44-2.45)."""
    x = B[g + GM_A] * x + B[g + GM_B] * n
    return min(max(x, B[g + GM_LO]), B[g + GM_HI])


@njit(cache=True, inline="always")
def blendermann_cs(abs_gamma, cos_gamma, sin_gamma, B):
    """Blendermann's (C_X, C_Y, C_K, C_N) from |gamma| and gamma's cosine and sine."""
    cdl_af = B[E_CDL_HEAD] if cos_gamma >= 0.0 else B[E_CDL_TAIL]
    cdl = cdl_af * B[E_AF] / B[E_AL]  # eq. 2.61
    s2 = 2.0 * sin_gamma * cos_gamma  # sin(2 gamma)
    denom = 1.0 - 0.5 * B[E_DELTA] * (1.0 - cdl / B[E_CDT]) * s2 * s2
    cy = B[E_CDT] * sin_gamma / denom  # eq. 2.58 (sign, see blendermann)
    cx = -cdl * B[E_AL] / B[E_AF] * cos_gamma / denom  # eq. 2.57
    ck = B[E_KAPPA] * cy  # eq. 2.59
    cn = (B[E_SL] / B[E_LOA] - 0.18 * (abs_gamma - 0.5 * math.pi)) * cy  # eq. 2.60
    return cx, cy, ck, cn


@njit(cache=True, inline="always")
def wind_force(B, air_x, air_y, u, v):
    """Wind force (X, Y, K, N) in BODY from the air's velocity in BODY at 10 m and the
    hull's (thesis eqs 2.68-2.72); no early returns, so numba can inline it."""
    fx = 0.0
    fy = 0.0
    fk = 0.0
    fn = 0.0
    kind = B[E_FORCE_KIND]
    f = B[E_HEIGHT_FACTOR]  # eq. 2.43 at the model's height
    u_rw = u - f * air_x  # eq. 2.70
    v_rw = v - f * air_y  # eq. 2.71
    v2 = u_rw * u_rw + v_rw * v_rw
    if kind == FORCE_VRX:
        # VRX paper eqs 23-25, with the air's velocity relative to the hull
        # (-u_rw, -v_rw) as the VRX plugin applies it: the force follows the wind.
        fx = -B[E_CX] * u_rw * abs(u_rw)
        fy = -B[E_CY] * v_rw * abs(v_rw)
        fn = -2.0 * B[E_CN] * u_rw * v_rw
    elif kind != 0.0 and v2 > 0.0:
        q = 0.5 * B[E_RHO_AIR] * v2  # eq. 2.68 squared
        v_rel = math.sqrt(v2)
        # gamma = -atan2(v_rw, u_rw) (eq. 2.69), used through its cosine and sine
        cg = u_rw / v_rel
        sg = -v_rw / v_rel
        if kind == FORCE_BLENDERMANN:
            cx, cy, ck, cn = blendermann_cs(abs(math.atan2(v_rw, u_rw)), cg, sg, B)
        else:  # FORCE_SYMMETRIC, eqs 2.62-2.64
            cx = -B[E_CX] * cg
            cy = B[E_CY] * sg
            ck = 0.0
            cn = B[E_CN] * 2.0 * sg * cg
        fx = q * cx * B[E_AF]  # eq. 3.26
        fy = q * cy * B[E_AL]
        fk = q * ck * B[E_AL] * B[E_HL]
        fn = q * cn * B[E_AL] * B[E_LOA]
    return fx, fy, fk, fn


@njit(cache=True, inline="always")
def unit_vector(B, slot, angle):
    """cos and sin of angle, cached in B[slot + 1], B[slot + 2] while the angle holds."""
    if B[slot] != angle or (B[slot + 1] == 0.0 and B[slot + 2] == 0.0):
        B[slot] = angle
        B[slot + 1] = math.cos(angle)
        B[slot + 2] = math.sin(angle)
    return B[slot + 1], B[slot + 2]


@njit(cache=True, inline="always")
def wave_sums(B, W, k, north, east, dt):
    """Elevation and slopes at the vessel at step k (thesis eq. 2.84), into O.

    Each phase theta_i = omega_i t - k_i . r + phi_i moves by a small angle per
    step; its cosine and sine are rotated by a sixth-order Taylor rotation and
    recomputed exactly every WAVE_RESYNC_STEPS steps, which keeps the cost to a
    few multiplications per component.
    """
    steps = k - B[S0 + S_WAVE_K]
    dn = north - B[S0 + S_PREV_N]
    de = east - B[S0 + S_PREV_E]
    moved = steps != 0.0 or dn != 0.0 or de != 0.0
    resync = int(k) // WAVE_RESYNC_STEPS != int(B[S0 + S_WAVE_K]) // WAVE_RESYNC_STEPS
    B[S0 + S_PREV_N] = north
    B[S0 + S_PREV_E] = east
    B[S0 + S_WAVE_K] = k
    th = W[W_THETA]
    co = W[W_COS]
    si = W[W_SIN]
    om = W[C_OMEGA]
    kn = W[C_KN]
    ke = W[C_KE]
    amp = W[C_AMPLITUDE]
    n = W.shape[1]
    tdt = steps * dt
    if moved:
        # the largest phase step bounds the Taylor rotation's error (< 2e-9 per step at 0.3)
        d_max = B[E_WAVE_OMEGA_MAX] * abs(tdt) + B[E_WAVE_K_MAX] * (abs(dn) + abs(de))
        if resync or d_max > 0.3:
            for i in range(n):
                th[i] = (th[i] + om[i] * tdt - (kn[i] * dn + ke[i] * de)) % TWO_PI
                co[i] = math.cos(th[i])
                si[i] = math.sin(th[i])
        else:
            for i in range(n):  # branch-free, so the compiler can vectorize it
                d = om[i] * tdt - (kn[i] * dn + ke[i] * de)
                th[i] += d
                d2 = d * d
                cd = 1.0 - d2 * (0.5 - d2 * (1.0 / 24.0 - d2 / 720.0))
                sd = d * (1.0 - d2 * (1.0 / 6.0 - d2 / 120.0))
                c = co[i]
                co[i] = c * cd - si[i] * sd
                si[i] = si[i] * cd + c * sd
    zeta = 0.0
    sn = 0.0
    se = 0.0
    for i in range(n):
        a = amp[i]
        zeta += a * co[i]
        a_s = a * si[i]
        sn += a_s * kn[i]
        se += a_s * ke[i]
    B[O0 + O_ELEVATION] = zeta
    B[O0 + O_SLOPE_N] = sn
    B[O0 + O_SLOPE_E] = se


def _outputs_kernel(sea: int):
    """env_outputs for one SEA_*: a kernel of its own each, so that a calm run never compiles
    the wave code (the sea is a constant of the closure; numba drops the branch not taken)."""

    @variant(sea=sea)
    def env_outputs(B, W, k, x, dt, env):
        """The environment at step k for vessel state x: outputs into O, forces and current
        into env. A second call at the same step does nothing. (No early returns in these
        kernels: numba then keeps the arrays' reference counts out of the loop.)"""
        if B[S0 + S_OUT_K] != k:
            B[S0 + S_OUT_K] = k
            evaluate(B, W, k, x, dt, env, sea)

    return env_outputs


@njit(cache=True, inline="always")
def evaluate(B, W, k, x, dt, env, sea):
    """The body of env_outputs (the wave forces for SEA_WAVES, or for SEA_ANY if E_WAVE_ON)."""
    cpsi = math.cos(x[5])
    spsi = math.sin(x[5])
    u = x[6]
    v = x[7]
    # wind at 10 m: slowly varying mean (eqs 2.44-2.45) plus gust (2.49)
    gust = 0.0
    kind = B[E_GUST_KIND]
    if kind == GUST_TABLE:
        gust = B[G0 + int(k) % int(B[E_GUST_N])]
    elif kind != 0.0:  # vrx and random walk carry their gust in the state
        gust = B[S0 + S_GUST]
    speed = max(0.0, B[E_WIND + GM_MEAN] + B[S0 + S_WIND] + gust)
    from_rad = B[E_WDIR + GM_MEAN] + B[S0 + S_WDIR]
    B[O0 + O_WIND_SPEED] = speed
    B[O0 + O_WIND_FROM] = from_rad
    to_n, to_e = unit_vector(B, S0 + S_WIND_ANGLE, from_rad + math.pi)
    wn = speed * to_n
    we = speed * to_e
    # the air's velocity in BODY: R(psi)^T (thesis eqs 2.70-2.71)
    fx, fy, fk, fn = wind_force(B, cpsi * wn + spsi * we, -spsi * wn + cpsi * we, u, v)
    B[O0 + O_TAU_WIND] = fx
    B[O0 + O_TAU_WIND + 1] = fy
    B[O0 + O_TAU_WIND + 3] = fk
    B[O0 + O_TAU_WIND + 5] = fn

    # current, irrotational in NED (thesis eqs 2.73, 2.75-2.78)
    cur = max(0.0, B[E_CUR + GM_MEAN] + B[S0 + S_CUR])
    to = B[E_CDIR + GM_MEAN] + B[S0 + S_CDIR]
    B[O0 + O_CUR_SPEED] = cur
    B[O0 + O_CUR_TO] = to
    c_n, c_e = unit_vector(B, S0 + S_CUR_ANGLE, to)
    env[F_CURRENT] = cur * c_n
    env[F_CURRENT + 1] = cur * c_e

    if sea == SEA_WAVES or (sea == SEA_ANY and B[E_WAVE_ON] != 0.0):
        wave_sums(B, W, k, x[0], x[1], dt)
        sn = B[O0 + O_SLOPE_N]
        se = B[O0 + O_SLOPE_E]
        slope_x = cpsi * sn + spsi * se
        slope_y = -spsi * sn + cpsi * se
        # heave, roll and pitch: the restoring matrix acting on the hull's offset
        # from the local surface, -G (eta - eta_s) with eta_s = (-zeta, -slope_y, slope_x)
        surf0 = -B[O0 + O_ELEVATION]
        surf1 = -slope_y
        surf2 = slope_x
        for r in range(3):
            g = E_WAVE_G + 3 * r
            B[O0 + O_TAU_WAVE + 2 + r] = B[g] * surf0 + B[g + 1] * surf1 + B[g + 2] * surf2
        # surge, sway, yaw: second-order transfer functions (thesis eqs 3.28-3.32),
        # scaled by the encounter direction beta = (wave direction) - psi
        cb = B[E_WAVE_TO_COS] * cpsi + B[E_WAVE_TO_SIN] * spsi
        sb = B[E_WAVE_TO_SIN] * cpsi - B[E_WAVE_TO_COS] * spsi
        B[O0 + O_TAU_WAVE] = B[E_WAVE_GAIN] * cb * B[S0 + S_TF + 1]
        B[O0 + O_TAU_WAVE + 1] = B[E_WAVE_GAIN + 1] * sb * B[S0 + S_TF + 3]
        B[O0 + O_TAU_WAVE + 5] = B[E_WAVE_GAIN + 2] * 2.0 * sb * cb * B[S0 + S_TF + 5]
        # encounter frequency, thesis eq. 3.33 (beta = 0: following seas); held off
        # zero so that the transfer functions stay oscillators on a crest
        w0 = B[E_WAVE_OMEGA0]
        B[S0 + S_ENCOUNTER] = max(abs(w0 - w0 * w0 / G * u * cb), 0.1 * w0)
    for i in range(6):
        env[F_TAU + i] = B[O0 + O_TAU_WIND + i] + B[O0 + O_TAU_WAVE + i]


def _advance_kernel(sea: int):
    """env_advance for one SEA_*, a kernel of its own each (see _outputs_kernel)."""

    @variant(sea=sea)
    def env_advance(B, noise, j, k, x, dt):
        """Move the stochastic processes from step k to k + 1 with noise column j.

        The slow Gauss-Markov processes move every E_SLOW_EVERY steps (their time
        constants are minutes), drawing from column j // E_SLOW_EVERY.
        """
        every = int(B[E_SLOW_EVERY])
        if (k + 1) % every == 0:
            js = j // every
            B[S0 + S_WIND] = gauss_markov_step(B[S0 + S_WIND], B, E_WIND, noise[N_WIND, js])
            B[S0 + S_WDIR] = gauss_markov_step(B[S0 + S_WDIR], B, E_WDIR, noise[N_WDIR, js])
            B[S0 + S_CUR] = gauss_markov_step(B[S0 + S_CUR], B, E_CUR, noise[N_CUR, js])
            B[S0 + S_CDIR] = gauss_markov_step(B[S0 + S_CDIR], B, E_CDIR, noise[N_CDIR, js])
        kind = B[E_GUST_KIND]
        if kind == GUST_VRX:
            # VRX paper eq. 13, with K_w of eq. 15 in E_GUST_B and dt / tau_g in E_GUST_A
            g = B[S0 + S_GUST]
            B[S0 + S_GUST] = g + B[E_GUST_A] * (-g + B[E_GUST_B] * noise[N_GUST, j])
        elif kind == GUST_RANDOM_WALK and (k + 1) % int(B[E_GUST_B]) == 0:
            # student notes: a step up or down with equal probability every interval
            step = B[E_GUST_A] if noise[N_GUST, j] >= 0.0 else -B[E_GUST_A]
            B[S0 + S_GUST] = min(max(B[S0 + S_GUST] + step, -B[E_GUST_C]), B[E_GUST_C])
        if sea == SEA_WAVES or (sea == SEA_ANY and B[E_WAVE_ON] != 0.0):
            we = B[S0 + S_ENCOUNTER]
            lam = B[E_WAVE_LAMBDA]
            kick = B[E_WAVE_KW] * math.sqrt(dt)
            for i in range(3):
                x1 = B[S0 + S_TF + 2 * i]
                x2 = B[S0 + S_TF + 2 * i + 1]
                # eq. 3.31 by semi-implicit Euler; unit-intensity white noise
                x2 += dt * (-we * we * x1 - 2.0 * lam * we * x2) + kick * noise[N_TF + i, j]
                x1 += dt * x2
                B[S0 + S_TF + 2 * i] = x1
                B[S0 + S_TF + 2 * i + 1] = x2

    return env_advance


SEAS = (SEA_CALM, SEA_WAVES, SEA_ANY)
env_outputs_calm, env_outputs_waves, env_outputs_any = (_outputs_kernel(sea) for sea in SEAS)
env_advance_calm, env_advance_waves, env_advance_any = (_advance_kernel(sea) for sea in SEAS)


def sea_of(B) -> int:
    """The sea (SEA_CALM or SEA_WAVES) of the environment in buffer B: its E_WAVE_ON."""
    return SEA_WAVES if B[E_WAVE_ON] != 0.0 else SEA_CALM


# the (env_outputs, env_advance) kernels of each SEA_*: the Python side's choice (a Simulation
# evaluates the environment between ticks with its env_outputs); compiled code chooses with the
# inlined selectors below
ENVIRONMENT_KERNELS = {
    SEA_CALM: (env_outputs_calm, env_advance_calm),
    SEA_WAVES: (env_outputs_waves, env_advance_waves),
    SEA_ANY: (env_outputs_any, env_advance_any),
}


@njit(cache=True, inline="always")
def env_outputs(B, W, k, x, dt, env, sea):
    """env_outputs inside a compiled loop: where ``sea`` is a constant (a loop kernel made for
    one sea), only that sea's kernel is compiled."""
    if sea == SEA_WAVES:
        env_outputs_waves(B, W, k, x, dt, env)
    elif sea == SEA_ANY:
        env_outputs_any(B, W, k, x, dt, env)
    else:
        env_outputs_calm(B, W, k, x, dt, env)


@njit(cache=True, inline="always")
def env_advance(B, noise, j, k, x, dt, sea):
    """env_advance inside a compiled loop (see env_outputs)."""
    if sea == SEA_WAVES:
        env_advance_waves(B, noise, j, k, x, dt)
    elif sea == SEA_ANY:
        env_advance_any(B, noise, j, k, x, dt)
    else:
        env_advance_calm(B, noise, j, k, x, dt)
