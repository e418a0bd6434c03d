"""Published formulas and closed forms the spectra tests use as oracles; hild does not use them.

Each is written from its source (quoted beside it), not from hild.environment.spectra, and
none of them is a copy of a spectrum hild computes: they are a different printed form of it
(the VRX Pierson-Moskowitz form), its parameters (Torsethaugen), or its integrals.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import quad

G = 9.81  # [m/s^2], the value the VRX paper and hild use

# ----------------------------------------------------------------------------- wave spectra


def pierson_moskowitz_hs(omega_peak: float) -> float:
    """Hs [m] of the one-parameter Pierson-Moskowitz sea with peak omega_peak [rad/s]."""
    # VRX paper eq. 2: Hs = 0.162 g / wp^2
    return 0.162 * G / omega_peak**2


def vrx_pierson_moskowitz(omega: ArrayLike, omega_peak: float, gain: float) -> NDArray:
    """The VRX paper's form of the two-parameter spectrum, for omega > 0 [m^2 s/rad]."""
    # VRX paper eq. 5: K_H^2 alpha g^2 / w^5 exp(-5/4 (wp / w)^4), alpha = 8.1e-3, with
    # K_H = Hs / pierson_moskowitz_hs(wp) (eq. 4)
    w = np.asarray(omega, dtype=np.float64)
    return gain**2 * 8.1e-3 * G**2 / w**5 * np.exp(-1.25 * (omega_peak / w) ** 4)


def torsethaugen_systems(hs: float, tp: float) -> list[tuple[float, float, float]]:
    """(H_j [m], Tp_j [s], gamma_j) of the primary and the secondary wave system.

    The parameter table of the simplified two-peak model (Torsethaugen & Haver 2004, as
    reproduced in DNV-RP-C205, two-peak spectra): Tf = 6.6 Hs^(1/3), Tl = 2 sqrt(Hs),
    Tu = 25 s. Wind-dominated (Tp <= Tf): eps_l = (Tf - Tp) / (Tf - Tl),
    r_pw = 0.7 + 0.3 exp(-(2 eps_l)^2), H1 = r_pw Hs at Tp with
    gamma = 35 (2 pi H1 / (g Tp^2))^0.857; the swell H2 = sqrt(1 - r_pw^2) Hs at Tf + 2 s.
    Swell-dominated (Tp > Tf): eps_u = (Tp - Tf) / (Tu - Tf),
    r_ps = 0.6 + 0.4 exp(-(eps_u / 0.3)^2), H1 = r_ps Hs at Tp with
    gamma = 35 (2 pi Hs / (g Tf^2))^0.857 (1 + 6 eps_u); the wind sea H2 = sqrt(1 - r_ps^2) Hs
    at 6.6 H2^(1/3). The secondary system always has gamma = 1. gamma is as printed, not
    held at 1 from below. (An independent public implementation citing the 2004 paper,
    CFDwavemaker's Wavespectra.cpp, has the same constants, with 6/7 for 0.857.)
    """
    tf = 6.6 * hs ** (1.0 / 3.0)
    if tp <= tf:
        eps_l = (tf - tp) / (tf - 2.0 * math.sqrt(hs))
        r_pw = 0.7 + 0.3 * math.exp(-((2.0 * eps_l) ** 2))
        h1 = r_pw * hs
        gamma = 35.0 * (2.0 * math.pi * h1 / (G * tp**2)) ** 0.857
        return [(h1, tp, gamma), (math.sqrt(1.0 - r_pw**2) * hs, tf + 2.0, 1.0)]
    eps_u = (tp - tf) / (25.0 - tf)
    r_ps = 0.6 + 0.4 * math.exp(-((eps_u / 0.3) ** 2))
    gamma = 35.0 * (2.0 * math.pi * hs / (G * tf**2)) ** 0.857 * (1.0 + 6.0 * eps_u)
    h2 = math.sqrt(1.0 - r_ps**2) * hs
    return [(r_ps * hs, tp, gamma), (h2, 6.6 * h2 ** (1.0 / 3.0), 1.0)]


# -------------------------------------------------------------------------------- wind gusts


def harris_variance(u10: float, kappa: float = 0.0026) -> float:
    """Variance [(m/s)^2] of the whole Harris spectrum, in closed form; it does not depend on L.

    thesis eq. 2.46 with x = L f / U10: the integral is 4 kappa U10^2 times the integral of
    (2 + x^2)^(-5/6) over x > 0, and the standard integral of (a^2 + x^2)^(-p) over x > 0 is
    a^(1 - 2p) sqrt(pi) Gamma(p - 1/2) / (2 Gamma(p)); with a^2 = 2, p = 5/6 the variance is
    6.6775 kappa U10^2 (sigma / U10 = 13.2 % for kappa = 0.0026).
    """
    p = 5.0 / 6.0
    integral = 2.0 ** (0.5 - p) * math.sqrt(math.pi) * math.gamma(p - 0.5) / (2.0 * math.gamma(p))
    return 4.0 * kappa * u10**2 * integral


def forristall_peak_frequency(u10: float, z: float = 10.0, b: float = 63.0) -> float:
    """Frequency [Hz] where the normalized Forristall spectrum f S(f) / sigma^2 peaks."""
    # wind note eq. 4, f*_p = 3 / (2 B), made dimensional with eq. 2, f = f* v / z
    return 3.0 / (2.0 * b) * u10 / z


def forristall_fraction_below(
    f: ArrayLike, u10: float, z: float = 10.0, b: float = 63.0
) -> float | NDArray:
    """Fraction of the Forristall variance below f [Hz]: 1 - (1 + B f z / v)^(-2/3)."""
    # wind note eq. 1 integrated from 0 to f: sigma^2 (A / B) (3/2) (1 - (1 + B f*)^(-2/3)),
    # which is sigma^2 (1 - ...) exactly under the note's constraint A = 2B/3 (eq. 3)
    fa = np.maximum(np.asarray(f, dtype=np.float64), 0.0)
    return (1.0 - (1.0 + b * fa * z / u10) ** (-2.0 / 3.0))[()]


def band_variance(spectrum: Callable[[float], float], lo: float, hi: float) -> float:
    """Integral of a gust spectrum S(f) from lo to hi [Hz], by adaptive quadrature per decade."""
    cuts = [lo]
    edge = 10.0 ** math.floor(math.log10(lo)) if lo > 0.0 else 1e-6
    while edge < hi:
        if edge > cuts[-1]:
            cuts.append(edge)
        edge *= 10.0
    cuts.append(hi)
    return sum(
        quad(lambda f: float(spectrum(f)), a, b, epsabs=0.0, epsrel=1e-11, limit=200)[0]
        for a, b in zip(cuts[:-1], cuts[1:], strict=True)
    )
