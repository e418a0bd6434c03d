"""One-sided spectra of the sea state and of the wind gusts, and a few helpers around them.

Wave spectra take the angular frequency ``omega`` [rad/s] (a float or an array) and return
S(omega) [m^2 s/rad]; they are zero for omega <= 0. Gust spectra take the frequency ``f`` [Hz]
and return S(f) [(m/s)^2/Hz]; they are zero for f < 0. Only numpy and math are used here.

Sources: the HIL thesis (NTNU 2017, eqs 2.46-2.47 and 2.80-2.82), the VRX paper (eqs 3 and
8-11), the VRX wind note (eqs 1-15), and the JONSWAP and Torsethaugen forms as published (the
latter as simplified by Torsethaugen & Haver 2004 and reproduced in DNV-RP-C205).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

G = 9.81  # gravitational acceleration [m/s^2], used everywhere in hild.environment

FloatArray = NDArray[np.float64]

# JONSWAP and Torsethaugen peak-width parameters below and above the peak
_SIGMA_BELOW = 0.07
_SIGMA_ABOVE = 0.09
# exp(-800) is below the smallest subnormal double, so exp(-b / omega^4) is exactly 0 there
_EXP_FLOOR = 800.0


def _array(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def _require_positive(**values: float) -> None:
    for name, value in values.items():
        if not value > 0.0:
            raise ValueError(f"{name} must be positive, got {value!r}")


def _require_non_negative(**values: float) -> None:
    for name, value in values.items():
        if not value >= 0.0:
            raise ValueError(f"{name} must be zero or positive, got {value!r}")


def _simpson(y: FloatArray, x: FloatArray) -> float:
    """Composite Simpson rule on a uniform grid with an even number of intervals."""
    h = x[1] - x[0]
    return float(h / 3.0 * (y[0] + y[-1] + 4.0 * y[1:-1:2].sum() + 2.0 * y[2:-1:2].sum()))


def _pm_form(omega: ArrayLike, a: float, b: float) -> float | FloatArray:
    """a omega^-5 exp(-b omega^-4) for omega > 0, else 0: the common Pierson-Moskowitz shape."""
    w = _array(omega)
    out = np.zeros_like(w)
    live = w > (b / _EXP_FLOOR) ** 0.25  # below this the exponential underflows to 0 anyway
    wl = w[live]
    out[live] = a / wl**5 * np.exp(-b / wl**4)
    return out[()]


def _peak_enhancement(x: FloatArray, gamma: float) -> FloatArray:
    """gamma^r with r = exp(-(x - 1)^2 / (2 sigma^2)), x = omega / omega_peak (JONSWAP)."""
    sigma = np.where(x <= 1.0, _SIGMA_BELOW, _SIGMA_ABOVE)
    return gamma ** np.exp(-((x - 1.0) ** 2) / (2.0 * sigma**2))


# ----------------------------------------------------------------------------- wave spectra


def ittc(omega: ArrayLike, hs: float, omega_peak: float) -> float | FloatArray:
    """ITTC/ISSC wave spectrum A/omega^5 exp(-B/omega^4), A = 0.31 Hs^2 wp^4, B = 1.25 wp^4.

    Kept as printed: its zeroth moment is 0.062 Hs^2, 0.8% under Hs^2/16 (rounded 0.31).
    """
    # thesis eqs 2.80-2.82
    _require_non_negative(hs=hs)
    _require_positive(omega_peak=omega_peak)
    return _pm_form(omega, 0.31 * hs**2 * omega_peak**4, 1.25 * omega_peak**4)


def bretschneider(omega: ArrayLike, hs: float, omega_peak: float) -> float | FloatArray:
    """Two-parameter Pierson-Moskowitz (Bretschneider) spectrum; its zeroth moment is Hs^2/16."""
    # VRX paper eq. 3
    _require_non_negative(hs=hs)
    _require_positive(omega_peak=omega_peak)
    return _pm_form(omega, 1.25 / 4.0 * omega_peak**4 * hs**2, 1.25 * omega_peak**4)


@functools.lru_cache(maxsize=64)
def _jonswap_scale(gamma: float) -> float:
    """1 / (zeroth moment of the unit-Hs JONSWAP shape x 16), by Simpson on a fine grid.

    In x = omega / omega_peak the Bretschneider shape integrates to exactly 1/16 per Hs^2,
    so only the excess (gamma^r - 1) needs quadrature; it is below 1e-27 of its peak value
    outside [0.15, 2.2] for both sigmas. The grid is split at x = 1 where sigma switches.
    """
    if gamma == 1.0:
        return 1.0
    excess = 0.0
    for lo, hi in ((0.15, 1.0), (1.0, 2.2)):
        x = np.linspace(lo, hi, 8001)
        unit_pm = 5.0 * x**-5 * np.exp(-1.25 * x**-4)  # integrates to 1 over (0, inf)
        excess += _simpson(unit_pm * (_peak_enhancement(x, gamma) - 1.0), x)
    return 1.0 / (1.0 + excess)


def jonswap(
    omega: ArrayLike, hs: float, omega_peak: float, gamma: float = 3.3
) -> float | FloatArray:
    """JONSWAP: Bretschneider times gamma^r, r = exp(-(omega - wp)^2 / (2 sigma^2 wp^2)).

    sigma is 0.07 below the peak, 0.09 above; scaled (by quadrature, cached) to m0 = Hs^2/16.
    """
    # JONSWAP (Hasselmann et al. 1973) in the Hs-Tp form of DNV-RP-C205; VRX paper eq. 3 base
    _require_positive(gamma=gamma)
    w = _array(omega)
    base = _array(bretschneider(w, hs, omega_peak))
    scale = _jonswap_scale(float(gamma))
    return (scale * base * _peak_enhancement(w / omega_peak, gamma))[()]


def _torsethaugen_system(w: FloatArray, h: float, tp: float, gamma: float) -> FloatArray:
    """One wave system: (h^2 tp / 16) G0 A_gamma x^-4 exp(-x^-4) gamma^r per Hz, in rad/s."""
    out = np.zeros_like(w)
    if h <= 0.0:
        return out
    wp = 2.0 * math.pi / tp
    x = w / wp
    live = x > _EXP_FLOOR**-0.25  # exp(-x^-4) underflows to 0 below this
    xl = x[live]
    a_gamma = (1.0 + 1.1 * math.log(gamma) ** 1.19) / gamma
    shape = 3.26 * a_gamma * xl**-4 * np.exp(-(xl**-4)) * _peak_enhancement(xl, gamma)
    out[live] = h**2 * tp / 16.0 * shape / (2.0 * math.pi)  # S(omega) = S(f) / (2 pi)
    return out


def torsethaugen(omega: ArrayLike, hs: float, tp: float) -> float | FloatArray:
    """Two-peak Torsethaugen spectrum (wind sea plus swell), simplified 2004 form, peak period tp.

    m0 is Hs^2/16 only up to the published A_gamma and G0 = 3.26 approximations (within ~3%).
    """
    # Torsethaugen & Haver (2004) Table 1, as in DNV-RP-C205 (two-peak spectra):
    # Tf = 6.6 Hs^(1/3); wind sea dominates for Tp <= Tf, swell for Tp > Tf
    _require_positive(hs=hs, tp=tp)
    tf = 6.6 * hs ** (1.0 / 3.0)
    if tp <= tf:
        eps_l = (tf - tp) / (tf - 2.0 * math.sqrt(hs))
        r = 0.7 + 0.3 * math.exp(-((eps_l / 0.5) ** 2))
        h1 = r * hs
        gamma = 35.0 * (2.0 * math.pi * h1 / (G * tp**2)) ** 0.857
        h2, tp2 = math.sqrt(1.0 - r**2) * hs, tf + 2.0
    else:
        eps_u = (tp - tf) / (25.0 - tf)
        r = 0.6 + 0.4 * math.exp(-((eps_u / 0.3) ** 2))
        h1 = r * hs
        gamma = 35.0 * (2.0 * math.pi * hs / (G * tf**2)) ** 0.857 * (1.0 + 6.0 * eps_u)
        h2 = math.sqrt(1.0 - r**2) * hs
        tp2 = 6.6 * h2 ** (1.0 / 3.0)
    # the published A_gamma needs gamma >= 1; low, gentle seas (Hs below about 1.3 m near
    # Tp = Tf) give less, which is held at 1 (a plain Pierson-Moskowitz-like peak)
    gamma = max(gamma, 1.0)
    w = _array(omega)
    return (_torsethaugen_system(w, h1, tp, gamma) + _torsethaugen_system(w, h2, tp2, 1.0))[()]


# ----------------------------------------------------------------------- directional spreading


def spreading_exponent(omega_ratio: ArrayLike) -> float | FloatArray:
    """Spreading exponent s: 17.01 r^5 up to the peak and 17.01 r^-2.5 above, r = omega/wp."""
    # VRX paper eq. 10
    r = np.maximum(_array(omega_ratio), 0.0)
    above = r > 1.0
    safe = np.where(above, r, 1.0)
    return np.where(above, 17.01 * safe**-2.5, 17.01 * r**5)[()]


_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def spreading_function(omega_ratio: ArrayLike, dtheta: ArrayLike) -> float | FloatArray:
    """Directional spreading D = N(s) cos(dtheta/2)^(2s) [1/rad], integrating to 1 over a turn.

    ``dtheta`` [rad] is wrapped into [-pi, pi); the arguments broadcast together.
    """
    # VRX paper eqs 8-9, N(s) = Gamma(s + 1) / (2 sqrt(pi) Gamma(s + 1/2)) taken through lgamma
    s = _array(spreading_exponent(omega_ratio))
    log_norm = _lgamma(s + 1.0) - _lgamma(s + 0.5) - math.log(2.0 * math.sqrt(math.pi))
    d = np.mod(_array(dtheta) + math.pi, 2.0 * math.pi) - math.pi
    return (np.exp(log_norm) * np.abs(np.cos(0.5 * d)) ** (2.0 * s))[()]


# tanh-sinh (double exponential) nodes on (0, pi): theta = (pi/2)(1 + tanh((pi/2) sinh t)).
# They crowd towards both ends, which keeps the quadrature exact to ~1e-12 even when D goes
# like (pi - theta)^(2s) with small s (far from the peak) and is not smooth at theta = pi.
_DE_STEP = 0.04
_DE_T = np.arange(-80, 81) * _DE_STEP
_DE_A = 0.5 * math.pi * np.sinh(_DE_T)
_DE_THETA = math.pi / (1.0 + np.exp(-2.0 * _DE_A))
_DE_WEIGHT = _DE_STEP * 0.25 * math.pi**2 * np.cosh(_DE_T) / np.cosh(_DE_A) ** 2


def spreading_second_moment(omega_ratio: ArrayLike) -> float | FloatArray:
    """Second moment of the spreading, integral of dtheta^2 D over [-pi, pi] [rad^2].

    Twice the integral over (0, pi) (D is even), by tanh-sinh quadrature; vectorized.
    """
    # VRX paper eq. 11 (evaluated numerically, as the paper does)
    r = _array(omega_ratio)
    d = _array(spreading_function(r[..., np.newaxis], _DE_THETA))
    return (2.0 * np.sum(_DE_WEIGHT * _DE_THETA**2 * d, axis=-1))[()]


# -------------------------------------------------------------------------------- wind gusts


def harris(
    f: ArrayLike, u10: float, length: float = 1800.0, kappa: float = 0.0026
) -> float | FloatArray:
    """Harris gust spectrum 4 kappa L U10 / (2 + (L f / U10)^2)^(5/6) [(m/s)^2/Hz].

    ``length`` is the scaling length L [m], ``kappa`` the sea-surface drag coefficient.
    """
    # thesis eqs 2.46-2.47
    _require_positive(u10=u10, length=length)
    _require_non_negative(kappa=kappa)
    fa = _array(f)
    f_tilde = length * fa / u10
    s = 4.0 * kappa * length * u10 / (2.0 + f_tilde**2) ** (5.0 / 6.0)
    return np.where(fa >= 0.0, s, 0.0)[()]


def forristall_variance(u10: float, w: float = 1.0) -> float:
    """Gust variance sigma^2 = [3 w (0.00076 U10^2 + 0.0304 U10)]^2 [(m/s)^2].

    ``w`` is the wave factor of eq. 9, 1 for a developed sea.
    """
    # wind note eq. 14 (with eqs 8, 9 and 13)
    _require_non_negative(u10=u10)
    return (3.0 * w * (0.00076 * u10**2 + 0.0304 * u10)) ** 2


def forristall(
    f: ArrayLike, u10: float, z: float = 10.0, a: float = 42.0, b: float = 63.0, w: float = 1.0
) -> float | FloatArray:
    """Forristall gust spectrum sigma^2 A (z/v) / (1 + B f z / v)^(5/3) [(m/s)^2/Hz].

    v is ``u10`` used as the mean speed at height z [m]; integrates to sigma^2 when A = 2B/3.
    """
    # wind note eqs 1-2 with sigma^2 from eq. 14; at z = 10 m this is eq. 15
    _require_positive(u10=u10, z=z)
    fa = _array(f)
    f_star = fa * z / u10
    s = forristall_variance(u10, w) * a * (z / u10) / (1.0 + b * np.maximum(f_star, 0.0)) ** (5 / 3)
    return np.where(fa >= 0.0, s, 0.0)[()]
