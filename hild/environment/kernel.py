"""The compiled environment step: processes, wind and wave forces, current.

``env_outputs`` evaluates the environment at step k for the vessel state at
that step (idempotent: a second call at the same step does nothing);
``env_advance`` moves the stochastic processes on to step k + 1, drawing one
white-noise value per channel from the caller's noise block. Both allocate
nothing.
"""

import math

from numba import njit

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
    E_HEIGHT_FACTOR,
    E_HL,
    E_KAPPA,
    E_LOA,
    E_RHO_AIR,
    E_SL,
    E_WAVE_G,
    E_WAVE_GAIN,
    E_WAVE_KW,
    E_WAVE_LAMBDA,
    E_WAVE_OMEGA0,
    E_WAVE_ON,
    E_WAVE_TO,
    E_WDIR,
    E_WIND,
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
    O_SLOPE_E,
    O_SLOPE_N,
    O_TAU_WAVE,
    O_TAU_WIND,
    O_WIND_FROM,
    O_WIND_SPEED,
    S_CDIR,
    S_CUR,
    S_GUST,
    S_OUT_K,
    S_PREV_E,
    S_PREV_N,
    S_TF,
    S_WAVE_K,
    S_WDIR,
    S_WIND,
    W_COS,
    W_SIN,
    W_THETA,
    WAVE_RESYNC_STEPS,
)  # fmt: skip
from hild.model.layout import I_CURRENT, I_TAU

GRAVITY = 9.81
TWO_PI = 2.0 * math.pi


@njit(cache=True)
def gauss_markov_step(x, E, g, n):
    """One exact step of a first-order Gauss-Markov deviation, saturated (thesis 2.44-2.45)."""
    x = E[g + GM_A] * x + E[g + GM_B] * n
    return min(max(x, E[g + GM_LO]), E[g + GM_HI])


@njit(cache=True)
def blendermann(gamma, E, out):
    """C_X, C_Y, C_K, C_N of Blendermann (1994) (thesis eqs 2.57-2.61) into out[0:4].

    gamma is the relative wind's angle of attack of eq. 2.69 (0 for a head
    wind, -pi/2 for a wind from starboard). C_Y is signed as in Fossen's MSS
    toolbox, so that a wind from starboard pushes the hull to port; eq. 2.58
    as printed carries the opposite sign. C_N uses |gamma| so that port and
    starboard winds are mirror images.
    """
    g = abs(gamma)
    cdl_af = E[E_CDL_HEAD] if g <= 0.5 * math.pi else E[E_CDL_TAIL]
    cdl = cdl_af * E[E_AF] / E[E_AL]  # eq. 2.61
    s2 = math.sin(2.0 * gamma)
    denom = 1.0 - 0.5 * E[E_DELTA] * (1.0 - cdl / E[E_CDT]) * s2 * s2
    cx = -cdl * E[E_AL] / E[E_AF] * math.cos(gamma) / denom  # eq. 2.57
    cy = E[E_CDT] * math.sin(gamma) / denom  # eq. 2.58 (sign, see above)
    out[0] = cx
    out[1] = cy
    out[2] = E[E_KAPPA] * cy  # eq. 2.59
    out[3] = (E[E_SL] / E[E_LOA] - 0.18 * (g - 0.5 * math.pi)) * cy  # eq. 2.60


@njit(cache=True)
def wind_force(E, speed, from_rad, psi, u, v, tau):
    """Wind force in BODY from the true wind and the vessel's velocity (thesis eqs 2.68-2.72)."""
    for i in range(6):
        tau[i] = 0.0
    kind = E[E_FORCE_KIND]
    if kind == 0.0 or speed <= 0.0:
        return
    speed_z = speed * E[E_HEIGHT_FACTOR]  # eq. 2.43 at the model's height
    beta = from_rad + math.pi  # the direction the air moves towards
    u_w = speed_z * math.cos(beta - psi)  # eq. 2.70
    v_w = speed_z * math.sin(beta - psi)  # eq. 2.71
    u_rw = u - u_w
    v_rw = v - v_w
    if kind == FORCE_VRX:
        # VRX paper eqs 23-25, with the air's velocity relative to the hull
        # (-u_rw, -v_rw) as the VRX plugin applies it: the force follows the wind.
        ax = -u_rw
        ay = -v_rw
        tau[0] = E[E_CX] * ax * abs(ax)
        tau[1] = E[E_CY] * ay * abs(ay)
        tau[5] = -2.0 * E[E_CN] * ax * ay
        return
    q = 0.5 * E[E_RHO_AIR] * (u_rw * u_rw + v_rw * v_rw)  # eq. 2.68 squared
    gamma = -math.atan2(v_rw, u_rw)  # eq. 2.69
    if kind == FORCE_BLENDERMANN:
        c = tau[2:6]  # scratch for the four coefficients, overwritten below
        blendermann(gamma, E, c)
        cx, cy, ck, cn = c[0], c[1], c[2], c[3]
    else:  # FORCE_SYMMETRIC, eqs 2.62-2.64
        cx = -E[E_CX] * math.cos(gamma)
        cy = E[E_CY] * math.sin(gamma)
        ck = 0.0
        cn = E[E_CN] * math.sin(2.0 * gamma)
    tau[0] = q * cx * E[E_AF]  # eq. 3.26
    tau[1] = q * cy * E[E_AL]
    tau[2] = 0.0
    tau[3] = q * ck * E[E_AL] * E[E_HL]
    tau[4] = 0.0
    tau[5] = q * cn * E[E_AL] * E[E_LOA]


@njit(cache=True)
def move_waves(E, S, comps, wstate, k, north, east, dt):
    """Carry every component's phase to step k at the vessel's position (thesis eq. 2.84).

    Each phase theta_i = omega_i t - k_i . r + phi_i moves by a small angle per
    step; its cosine and sine are rotated by a fifth-order Taylor rotation
    and recomputed exactly every WAVE_RESYNC_STEPS steps, which keeps the cost
    to a few multiplications per component.
    """
    steps = k - S[S_WAVE_K]
    dn = north - S[S_PREV_N]
    de = east - S[S_PREV_E]
    if steps == 0.0 and dn == 0.0 and de == 0.0:
        return
    S[S_PREV_N] = north
    S[S_PREV_E] = east
    resync = math.floor(k / WAVE_RESYNC_STEPS) != math.floor(S[S_WAVE_K] / WAVE_RESYNC_STEPS)
    S[S_WAVE_K] = k
    n = comps.shape[1]
    th = wstate[W_THETA]
    co = wstate[W_COS]
    si = wstate[W_SIN]
    tdt = steps * dt
    for i in range(n):
        d = comps[C_OMEGA, i] * tdt - (comps[C_KN, i] * dn + comps[C_KE, i] * de)
        th[i] += d
        if resync or abs(d) > 0.3:
            th[i] = th[i] % TWO_PI
            co[i] = math.cos(th[i])
            si[i] = math.sin(th[i])
        else:
            d2 = d * d
            cd = 1.0 - d2 * (0.5 - d2 * (1.0 / 24.0 - d2 / 720.0))
            sd = d * (1.0 - d2 * (1.0 / 6.0 - d2 / 120.0))
            c = co[i]
            co[i] = c * cd - si[i] * sd
            si[i] = si[i] * cd + c * sd


@njit(cache=True)
def env_outputs(E, S, O, comps, wstate, gust_table, k, x, dt, env):
    """The environment at step k for vessel state x: outputs into O, forces and current into env."""
    if S[S_OUT_K] == k:
        return
    S[S_OUT_K] = k
    psi = x[5]
    u = x[6]
    v = x[7]
    # wind at 10 m: slowly varying mean (eqs 2.44-2.45) plus gust (2.49)
    gust = 0.0
    kind = E[E_GUST_KIND]
    if kind == GUST_TABLE:
        gust = gust_table[int(k) % gust_table.shape[0]]
    elif kind != 0.0:  # vrx and random walk carry their gust in the state
        gust = S[S_GUST]
    speed = max(0.0, E[E_WIND + GM_MEAN] + S[S_WIND] + gust)
    from_rad = E[E_WDIR + GM_MEAN] + S[S_WDIR]
    O[O_WIND_SPEED] = speed
    O[O_WIND_FROM] = from_rad % TWO_PI
    tau_wind = O[O_TAU_WIND : O_TAU_WIND + 6]
    wind_force(E, speed, from_rad, psi, u, v, tau_wind)

    # current, irrotational in NED (thesis eqs 2.73, 2.75-2.78)
    cur = max(0.0, E[E_CUR + GM_MEAN] + S[S_CUR])
    to = E[E_CDIR + GM_MEAN] + S[S_CDIR]
    O[O_CUR_SPEED] = cur
    O[O_CUR_TO] = to % TWO_PI
    env[I_CURRENT] = cur * math.cos(to)
    env[I_CURRENT + 1] = cur * math.sin(to)

    tau_wave = O[O_TAU_WAVE : O_TAU_WAVE + 6]
    for i in range(6):
        tau_wave[i] = 0.0
    if E[E_WAVE_ON] != 0.0:
        move_waves(E, S, comps, wstate, k, x[0], x[1], dt)
        zeta = 0.0
        sn = 0.0
        se = 0.0
        co = wstate[W_COS]
        si = wstate[W_SIN]
        for i in range(comps.shape[1]):
            a = comps[C_AMPLITUDE, i]
            zeta += a * co[i]
            sn += a * comps[C_KN, i] * si[i]
            se += a * comps[C_KE, i] * si[i]
        O[O_ELEVATION] = zeta
        O[O_SLOPE_N] = sn
        O[O_SLOPE_E] = se
        cpsi = math.cos(psi)
        spsi = math.sin(psi)
        slope_x = cpsi * sn + spsi * se
        slope_y = -spsi * sn + cpsi * se
        # heave, roll and pitch: the restoring matrix acting on the hull's offset
        # from the local surface, -G (eta - eta_s) with eta_s = (-zeta, -slope_y, slope_x)
        surf0 = -zeta
        surf1 = -slope_y
        surf2 = slope_x
        for r in range(3):
            g = E_WAVE_G + 3 * r
            tau_wave[2 + r] = E[g] * surf0 + E[g + 1] * surf1 + E[g + 2] * surf2
        # surge, sway, yaw: second-order transfer functions (thesis eqs 3.28-3.32),
        # scaled by the encounter direction
        beta = E[E_WAVE_TO] - psi
        cb = math.cos(beta)
        sb = math.sin(beta)
        tau_wave[0] = E[E_WAVE_GAIN] * cb * S[S_TF + 1]
        tau_wave[1] = E[E_WAVE_GAIN + 1] * sb * S[S_TF + 3]
        tau_wave[5] = E[E_WAVE_GAIN + 2] * 2.0 * sb * cb * S[S_TF + 5]
    for i in range(6):
        env[I_TAU + i] = tau_wind[i] + tau_wave[i]


@njit(cache=True)
def env_advance(E, S, noise, j, k, x, dt):
    """Move the stochastic processes from step k to k + 1 with noise column j."""
    S[S_WIND] = gauss_markov_step(S[S_WIND], E, E_WIND, noise[N_WIND, j])
    S[S_WDIR] = gauss_markov_step(S[S_WDIR], E, E_WDIR, noise[N_WDIR, j])
    S[S_CUR] = gauss_markov_step(S[S_CUR], E, E_CUR, noise[N_CUR, j])
    S[S_CDIR] = gauss_markov_step(S[S_CDIR], E, E_CDIR, noise[N_CDIR, j])
    kind = E[E_GUST_KIND]
    if kind == GUST_VRX:
        # VRX paper eq. 13, with K_w of eq. 15 in E_GUST_B and dt / tau_g in E_GUST_A
        g = S[S_GUST]
        S[S_GUST] = g + E[E_GUST_A] * (-g + E[E_GUST_B] * noise[N_GUST, j])
    elif kind == GUST_RANDOM_WALK and (k + 1) % int(E[E_GUST_B]) == 0:
        # student notes: a step up or down with equal probability every interval
        step = E[E_GUST_A] if noise[N_GUST, j] >= 0.0 else -E[E_GUST_A]
        S[S_GUST] = min(max(S[S_GUST] + step, -E[E_GUST_C]), E[E_GUST_C])
    if E[E_WAVE_ON] != 0.0:
        # encounter frequency, thesis eq. 3.33 (beta = 0: following seas); held off zero
        # so that the transfer functions stay oscillators when the hull rides a crest
        w0 = E[E_WAVE_OMEGA0]
        beta = E[E_WAVE_TO] - x[5]
        we = max(abs(w0 - w0 * w0 / GRAVITY * x[6] * math.cos(beta)), 0.1 * w0)
        lam = E[E_WAVE_LAMBDA]
        kick = E[E_WAVE_KW] * math.sqrt(dt)
        for i in range(3):
            x1 = S[S_TF + 2 * i]
            x2 = S[S_TF + 2 * i + 1]
            # eq. 3.31 by semi-implicit Euler; unit-intensity white noise
            x2 += dt * (-we * we * x1 - 2.0 * lam * we * x2) + kick * noise[N_TF + i, j]
            x1 += dt * x2
            S[S_TF + 2 * i] = x1
            S[S_TF + 2 * i + 1] = x2
