"""Right-hand side of the 6-DOF vessel model (thesis eqs 2.5-2.33, VRX paper eqs 16-22).

Everything here is compiled with numba, works on flat float64 arrays laid out
in :mod:`hild.model.layout`, and writes into arrays the caller owns.
"""

import math

from numba import njit

from hild.compiled import kernel
from hild.model.layout import (
    I_CURRENT,
    I_TAU,
    P_CF_LENGTH,
    P_CF_N,
    P_CF_STRIPS,
    P_CF_XMID,
    P_CF_Y,
    P_DL,
    P_G,
    P_IO,
    P_ITTC_COEF,
    P_ITTC_CR,
    P_ITTC_LENGTH,
    P_ITTC_ON,
    P_M_INV,
    P_MA,
    P_MASS,
    P_MUNK,
    P_QUAD,
    P_RG,
    P_WATER_NU,
    Q_NRR,
    Q_NRV,
    Q_NVR,
    Q_NVV,
    Q_XUU,
    Q_YRR,
    Q_YRV,
    Q_YVR,
    Q_YVV,
    X_ETA,
    X_NU,
)

# Below this Reynolds number the ITTC-57 line (thesis eq. 2.29) is outside its
# turbulent range and blows up at Rn = 100; the drag there is negligible anyway.
REYNOLDS_MIN = 1.0e5

# scratch slots used by rhs()
W_NUR = 0  # 6: relative velocity nu_r
W_F = 6  # 6: generalized force sum
W_TMP = 12  # 6: scratch for hydrodynamic_force
W_SIZE = 18


@kernel
def rotation(phi, theta, psi, R):
    """BODY-to-NED rotation R(Theta), row-major into the 9-array R (thesis eq. 2.7)."""
    entries = rotation_entries(
        math.cos(phi), math.sin(phi), math.cos(theta), math.sin(theta), math.cos(psi), math.sin(psi)
    )
    for i in range(9):
        R[i] = entries[i]


@njit(cache=True, inline="always")
def rotation_entries(cphi, sphi, cth, sth, cpsi, spsi):
    """The nine entries of R(Theta), row-major, from the cosines and sines of roll, pitch and
    yaw (rhs has them already).

    The thesis prints the (1,3) entry as s(psi)s(phi) + c(psi)c(theta); the
    correct zyx entry (Fossen 2011) is s(psi)s(phi) + c(psi)c(phi)s(theta).
    """
    return (
        cpsi * cth,
        -spsi * cphi + cpsi * sth * sphi,
        spsi * sphi + cpsi * cphi * sth,
        spsi * cth,
        cpsi * cphi + sphi * sth * spsi,
        -cpsi * sphi + sth * spsi * cphi,
        -sth,
        cth * sphi,
        cth * cphi,
    )


@njit(cache=True, inline="always")
def ittc_surge_force(P, u_r):
    """Nonlinear surge friction -0.5 rho S (1+k) C_f(Rn) |u_r| u_r (thesis eqs 2.27-2.30, 3.9)."""
    if P[P_ITTC_ON] == 0.0:
        return 0.0
    rn = abs(u_r) * P[P_ITTC_LENGTH] / P[P_WATER_NU]  # thesis eq. 2.30
    if rn < REYNOLDS_MIN:
        rn = REYNOLDS_MIN
    d = math.log10(rn) - 2.0
    cf = 0.075 / (d * d) + P[P_ITTC_CR]  # thesis eq. 2.29
    return -P[P_ITTC_COEF] * cf * abs(u_r) * u_r


@njit(cache=True, inline="always")
def cross_flow_drag(P, v_r, r):
    """Sway force and yaw moment of cross-flow drag by strip integration (thesis eqs 2.31-2.32).

    Midpoint rule over the hull length; the coefficients are 0.5 rho T(x) Cd_2D
    with a constant draft, as fitted for Odin in thesis eqs 3.11-3.12.
    """
    cy = P[P_CF_Y]
    cn = P[P_CF_N]
    if cy == 0.0 and cn == 0.0:
        return 0.0, 0.0
    n = int(P[P_CF_STRIPS])
    length = P[P_CF_LENGTH]
    dx = length / n
    x = P[P_CF_XMID] - 0.5 * length + 0.5 * dx
    sway = 0.0
    yaw = 0.0
    for _ in range(n):
        vl = v_r + x * r
        q = abs(vl) * vl * dx
        sway += q
        yaw += x * q
        x += dx
    return -cy * sway, -cn * yaw


@njit(cache=True, inline="always")
def rigid_body_coriolis(P, nu, k, out, o):
    """out[o:o+6] = C_RB(nu) nu for nu = nu[k:k+6], with the centre of gravity offset
    (thesis eq. 2.18).

    Written as the Newton-Euler cross products about CO, which equal the
    matrix product of eq. 2.18 (a test checks this) at a fraction of the cost:
    linear  m (w x v + w x (w x r_g)),  angular  w x (I_o w) + m r_g x (w x v).
    """
    m = P[P_MASS]
    xg, yg, zg = P[P_RG], P[P_RG + 1], P[P_RG + 2]
    u, v, w, p, q, r = nu[k], nu[k + 1], nu[k + 2], nu[k + 3], nu[k + 4], nu[k + 5]
    # w x v
    a0 = q * w - r * v
    a1 = r * u - p * w
    a2 = p * v - q * u
    # w x r_g, then w x (w x r_g)
    b0 = q * zg - r * yg
    b1 = r * xg - p * zg
    b2 = p * yg - q * xg
    out[o] = m * (a0 + q * b2 - r * b1)
    out[o + 1] = m * (a1 + r * b0 - p * b2)
    out[o + 2] = m * (a2 + p * b1 - q * b0)
    # I_o w
    i0 = P[P_IO + 0] * p + P[P_IO + 1] * q + P[P_IO + 2] * r
    i1 = P[P_IO + 3] * p + P[P_IO + 4] * q + P[P_IO + 5] * r
    i2 = P[P_IO + 6] * p + P[P_IO + 7] * q + P[P_IO + 8] * r
    out[o + 3] = q * i2 - r * i1 + m * (yg * a2 - zg * a1)
    out[o + 4] = r * i0 - p * i2 + m * (zg * a0 - xg * a2)
    out[o + 5] = p * i1 - q * i0 + m * (xg * a1 - yg * a0)


@njit(cache=True, inline="always")
def added_mass_coriolis(P, nu_r, k, out, o):
    """out[o:o+6] = C_A(nu_r) nu_r for nu_r = nu_r[k:k+6], built from M_A
    (thesis eqs 2.19-2.25).

    With a = (M_A nu_r)[0:3] and b = (M_A nu_r)[3:6]:
    linear  w x a,  angular  v_r x a + w x b.  The angular part v_r x a is
    the Munk moment (ideal-fluid moment of a body translating at an angle),
    which a profile may drop where the hull-lift terms that balance it on a
    real hull are missing (Odin and Jolner do; Fossen's simulator keeps it
    for the Otter, whose straight course it makes unstable at full speed).
    """
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    b0 = 0.0
    b1 = 0.0
    b2 = 0.0
    for j in range(6):
        n = nu_r[k + j]
        a0 += P[P_MA + j] * n
        a1 += P[P_MA + 6 + j] * n
        a2 += P[P_MA + 12 + j] * n
        b0 += P[P_MA + 18 + j] * n
        b1 += P[P_MA + 24 + j] * n
        b2 += P[P_MA + 30 + j] * n
    u, v, w = nu_r[k], nu_r[k + 1], nu_r[k + 2]
    p, q, r = nu_r[k + 3], nu_r[k + 4], nu_r[k + 5]
    out[o] = q * a2 - r * a1
    out[o + 1] = r * a0 - p * a2
    out[o + 2] = p * a1 - q * a0
    munk = P[P_MUNK]
    out[o + 3] = munk * (v * a2 - w * a1) + q * b2 - r * b1
    out[o + 4] = munk * (w * a0 - u * a2) + r * b0 - p * b2
    out[o + 5] = munk * (u * a1 - v * a0) + p * b1 - q * b0


@njit(cache=True, inline="always")
def hydrodynamic_force(P, xs, xo, w):
    """w[W_F:W_F+6] = -C_RB(nu)nu - C_A(nu_r)nu_r - D(nu_r)nu_r - G eta (thesis eq. 2.12, left
    side), for the state xs[xo:xo+12] and the relative velocity in w[W_NUR:W_NUR+6]; w[W_TMP:]
    is its scratch. (Offsets, not views: each view of an array is reference-counted where
    numba's runtime is on, docs/benchmarks.md "The reference counts out of the step".)
    """
    rigid_body_coriolis(P, xs, xo + X_NU, w, W_F)
    added_mass_coriolis(P, w, W_NUR, w, W_TMP)
    for i in range(6):
        w[W_F + i] = -w[W_F + i] - w[W_TMP + i]
    u, v, r = w[W_NUR], w[W_NUR + 1], w[W_NUR + 5]
    # linear damping D_L nu_r (thesis eq. 2.26) and restoring G eta (eq. 2.33)
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += P[P_DL + 6 * i + j] * w[W_NUR + j] + P[P_G + 6 * i + j] * xs[xo + X_ETA + j]
        w[W_F + i] -= s
    # nonlinear surge friction (thesis eqs 2.27-2.30)
    w[W_F] += ittc_surge_force(P, u)
    # cross-flow drag in sway and yaw (thesis eqs 2.31-2.32)
    ycf, ncf = cross_flow_drag(P, v, r)
    w[W_F + 1] += ycf
    w[W_F + 5] += ncf
    # quadratic damping, VRX paper eq. 22 (derivatives are <= 0)
    au, av, ar = abs(u), abs(v), abs(r)
    w[W_F] += P[P_QUAD + Q_XUU] * au * u
    w[W_F + 1] += (P[P_QUAD + Q_YVV] * av + P[P_QUAD + Q_YRV] * ar) * v
    w[W_F + 1] += (P[P_QUAD + Q_YVR] * av + P[P_QUAD + Q_YRR] * ar) * r
    w[W_F + 5] += (P[P_QUAD + Q_NVV] * av + P[P_QUAD + Q_NRV] * ar) * v
    w[W_F + 5] += (P[P_QUAD + Q_NVR] * av + P[P_QUAD + Q_NRR] * ar) * r


@kernel
def rhs(x, P, inp, xdot, w):
    """Time derivative of the vessel state x = [eta, nu] (thesis eqs 2.12-2.13).

    ``inp`` holds the body-frame force tau (actuators plus environment) and the
    current velocity in NED; ``w`` is caller-owned scratch of at least W_SIZE.
    """
    rhs_at(x, 0, P, inp, xdot, 0, w)


@njit(cache=True, inline="always")
def rhs_at(xs, xo, P, inp, ds, do, w):
    """``rhs`` of the state xs[xo:xo+12] into ds[do:do+12]: an integrator's stages live at
    offsets of one work array (hild/model/integrators.py)."""
    phi, theta, psi = xs[xo + X_ETA + 3], xs[xo + X_ETA + 4], xs[xo + X_ETA + 5]
    cphi, sphi = math.cos(phi), math.sin(phi)  # once for R and for T(Theta) below
    cth = math.cos(theta)
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = rotation_entries(
        cphi, sphi, cth, math.sin(theta), math.cos(psi), math.sin(psi)
    )
    # current: NED velocity to BODY, nu_r = nu - nu_c (thesis eq. 2.11); irrotational
    cn = inp[I_CURRENT]
    ce = inp[I_CURRENT + 1]
    cd = inp[I_CURRENT + 2]
    nu = xo + X_NU
    w[W_NUR] = xs[nu] - (r00 * cn + r10 * ce + r20 * cd)
    w[W_NUR + 1] = xs[nu + 1] - (r01 * cn + r11 * ce + r21 * cd)
    w[W_NUR + 2] = xs[nu + 2] - (r02 * cn + r12 * ce + r22 * cd)
    w[W_NUR + 3] = xs[nu + 3]
    w[W_NUR + 4] = xs[nu + 4]
    w[W_NUR + 5] = xs[nu + 5]
    # kinematics: eta_dot = J(eta) nu_r + nu_c^n (thesis eqs 2.5-2.8, 2.13)
    u, v, wv = w[W_NUR], w[W_NUR + 1], w[W_NUR + 2]
    ds[do] = r00 * u + r01 * v + r02 * wv + cn
    ds[do + 1] = r10 * u + r11 * v + r12 * wv + ce
    ds[do + 2] = r20 * u + r21 * v + r22 * wv + cd
    p, q, r = xs[nu + 3], xs[nu + 4], xs[nu + 5]
    tth = math.tan(theta)
    ds[do + 3] = p + sphi * tth * q + cphi * tth * r
    ds[do + 4] = cphi * q - sphi * r
    ds[do + 5] = (sphi * q + cphi * r) / cth
    # kinetics: M_RB nu_dot + M_A nu_r_dot = tau - C_RB nu - C_A nu_r - D nu_r - G eta
    # (Fossen 2011, ch. 10, the equations of relative motion; thesis eq. 2.12 writes M nu_dot,
    # the same only without a current). A current constant in NED turns in BODY as the vessel
    # turns, nu_c_dot = -w x nu_c, so nu_r_dot = nu_dot + w x nu_c and, with M = M_RB + M_A,
    # M nu_dot = (the forces) - M_A (w x nu_c).
    hydrodynamic_force(P, xs, xo, w)
    for i in range(6):
        w[W_F + i] += inp[I_TAU + i]
    if cn != 0.0 or ce != 0.0 or cd != 0.0:
        c0, c1, c2 = xs[nu] - u, xs[nu + 1] - v, xs[nu + 2] - wv  # nu_c in BODY
        a0 = q * c2 - r * c1  # w x nu_c
        a1 = r * c0 - p * c2
        a2 = p * c1 - q * c0
        for i in range(6):
            w[W_F + i] -= P[P_MA + 6 * i] * a0 + P[P_MA + 6 * i + 1] * a1 + P[P_MA + 6 * i + 2] * a2
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += P[P_M_INV + 6 * i + j] * w[W_F + j]
        ds[do + X_NU + i] = s
