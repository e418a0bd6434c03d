"""From a one-sided spectrum to a time realization: sums of harmonics with random phases.

Two uses: a periodic table of a zero-mean gust by spectral representation (wind note
eqs 16-20, thesis eq. 2.48), evaluated with one real FFT; and a set of wave components
(thesis eq. 2.84, VRX paper eqs 1 and 6-11) for the elevation and the wave forces.
Only numpy is used here.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from hild.environment.spectra import G, spreading_second_moment

FloatArray = NDArray[np.float64]
Spectrum = Callable[[FloatArray], FloatArray]


def _spectrum_values(spectrum: Spectrum, x: FloatArray) -> FloatArray:
    values = np.asarray(spectrum(x), dtype=np.float64)
    if values.shape != x.shape:
        values = np.broadcast_to(values, x.shape).astype(np.float64)
    if not np.all(np.isfinite(values)) or np.any(values < 0.0):
        raise ValueError("the spectrum must be finite and non-negative on the frequencies used")
    return values


def harmonic_table(
    spectrum: Spectrum,
    period: float,
    dt: float,
    rng: np.random.Generator,
    f_max: float | None = None,
) -> tuple[FloatArray, float]:
    """One period of sum_m sqrt(2 S(f_m) df) cos(2 pi f_m t + phi_m) at t = k dt, and its variance.

    ``spectrum`` maps frequencies [Hz] (an array) to S(f). df = 1/period, f_m = m df for
    m = 1..M, M the largest m with f_m <= f_max (if given) and f_m strictly below the Nyquist
    frequency 1/(2 dt). The phases are rng.uniform(0, 2 pi, size=M), drawn in the order
    m = 1..M, so the first ones do not depend on dt or f_max. There is no m = 0 term, so the
    mean is zero, and the table repeats with ``period``. Returns the table (length
    n = period/dt) and the discrete variance sum S(f_m) df, which is also its mean square.
    """
    # wind note eqs 16-20 (A_0 = 0, eq. 19; period 2 pi / d_omega, eq. 20) and thesis eq. 2.48
    if not (period > 0.0 and dt > 0.0):
        raise ValueError(f"period and dt must be positive, got {period!r} and {dt!r}")
    ratio = period / dt
    n = round(ratio)
    if abs(ratio - n) > 1e-9 * ratio:
        raise ValueError(f"period / dt must be a whole number of steps, got {ratio!r}")
    if n < 4:
        raise ValueError(f"a table needs at least 4 steps, got {n}")
    if f_max is not None and not f_max >= 0.0:
        raise ValueError(f"f_max must be zero or positive, got {f_max!r}")
    df = 1.0 / period
    m_count = (n - 1) // 2  # largest m with m df < n df / 2, the Nyquist frequency
    if f_max is not None and math.isfinite(f_max):
        m_count = min(m_count, math.floor(f_max * period + 1e-9))
    if m_count < 1:
        return np.zeros(n), 0.0
    f = np.arange(1, m_count + 1, dtype=np.float64) * df
    s = _spectrum_values(spectrum, f)
    amplitude = np.sqrt(2.0 * s * df)
    phase = rng.uniform(0.0, 2.0 * math.pi, size=m_count)
    # irfft gives (1/n) [X_0 + 2 Re sum_m X_m e^(2 pi i m k / n)], so X_m = (n/2) a_m e^(i phi_m)
    half = np.zeros(n // 2 + 1, dtype=np.complex128)
    half[1 : m_count + 1] = 0.5 * n * amplitude * np.exp(1j * phase)
    table = np.fft.irfft(half, n=n)
    return table, float(np.sum(s) * df)


def _cumulative(spectrum: Spectrum, w: FloatArray) -> FloatArray:
    """The trapezoid integral of S from w[0] to each point of the ascending grid w."""
    s = _spectrum_values(spectrum, w)
    return np.concatenate(([0.0], np.cumsum(0.5 * (s[1:] + s[:-1]) * np.diff(w))))


def band_edges(
    spectrum: Spectrum,
    omega_max: float,
    lo_fraction: float = 0.001,
    hi_fraction: float = 0.999,
    grid: int = 20000,
) -> tuple[float, float]:
    """The frequencies [rad/s] below which lo_fraction and hi_fraction of the energy lie.

    The energy is the cumulative trapezoid integral of S on ``grid`` equal steps of
    [0, omega_max]; the fractions are of the energy below omega_max.
    """
    # a practical choice of the sampled band for thesis eq. 2.84 / VRX eq. 6 (not in the sources)
    if not omega_max > 0.0:
        raise ValueError(f"omega_max must be positive, got {omega_max!r}")
    if not 0.0 <= lo_fraction < hi_fraction <= 1.0:
        raise ValueError(
            f"need 0 <= lo_fraction < hi_fraction <= 1, got {lo_fraction}, {hi_fraction}"
        )
    w = np.linspace(0.0, omega_max, grid + 1)
    cumulative = _cumulative(spectrum, w)
    total = cumulative[-1]
    if not total > 0.0:
        raise ValueError("the spectrum has no energy below omega_max")
    lo, hi = _crossing(cumulative, w, np.array([lo_fraction, hi_fraction]) * total)
    return float(lo), float(hi)


def _crossing(cumulative: FloatArray, w: FloatArray, target: FloatArray) -> FloatArray:
    """The omegas where the non-decreasing cumulative energy first reaches each target (linear
    between grid points), so flat stretches (S = 0) are never chosen."""
    i = np.searchsorted(cumulative, target, side="left")
    j = np.clip(i, 1, len(w) - 1)
    c0, c1 = cumulative[j - 1], cumulative[j]
    rise = np.where(c1 > c0, c1 - c0, 1.0)
    inside = w[j - 1] + np.clip((target - c0) / rise, 0.0, 1.0) * (w[j] - w[j - 1])
    return np.where(i <= 0, w[0], np.where(i >= len(w), w[-1], inside))


MAX_BAND_RATIO = 1.2  # a wave band's upper edge is at most this times its lower edge


@dataclass(frozen=True, eq=False)
class EnergyBands:
    """n adjacent bands of [omega_lo, omega_hi] [rad/s] and the energy of each [m^2].

    edges: n + 1 ascending frequencies; energy: the integral of S over each band (the
    trapezoid rule on the grid ``energy_bands`` uses), summing to the energy of the
    interval. ``frequency(u)`` maps fractions u in [0, 1), one per band, to the omega below
    which u of the band's energy lies: u uniform draws a frequency with the density S.
    """

    edges: FloatArray
    energy: FloatArray
    grid: FloatArray
    cumulative: FloatArray  # the energy from omega_lo to each grid point

    def __post_init__(self) -> None:
        for name in ("edges", "energy", "grid", "cumulative"):
            getattr(self, name).setflags(write=False)

    def frequency(self, u: FloatArray) -> FloatArray:
        u = np.asarray(u, dtype=np.float64)
        lower, upper = self.edges[:-1], self.edges[1:]
        start = np.interp(lower, self.grid, self.cumulative)
        omega = _crossing(self.cumulative, self.grid, start + u * self.energy)
        # a band without energy (S = 0 all across it) has its frequency uniform in it
        omega = np.where(self.energy > 0.0, omega, lower + u * (upper - lower))
        return np.clip(omega, lower, upper)


def energy_bands(
    spectrum: Spectrum,
    n: int,
    omega_lo: float,
    omega_hi: float,
    max_ratio: float = MAX_BAND_RATIO,
    grid: int = 20000,
) -> EnergyBands:
    """n bands of [omega_lo, omega_hi] [rad/s] of equal energy, none wider than max_ratio.

    From omega_lo up, each band ends where it holds the energy e or where its upper edge
    reaches max_ratio times its lower one, whichever comes first; e is the smallest energy
    (found by bisection) that fills the interval with n bands. Where the spectrum is high
    the bands therefore hold e each, its n-th quantiles when no band is held by the ratio;
    in the thin tails the bands hold less, so that the short waves (which carry the slopes,
    the fourth moment) keep several components. When bands of max_ratio alone would take
    more than half of the n bands to span the interval, the ratio is widened to
    (omega_hi / omega_lo)^(2/n). The cumulative energy is the trapezoid integral on
    ``grid`` equal steps of the interval.
    """
    # equal-energy discretization of thesis eq. 2.84 / VRX eq. 6 with a width cap (ours)
    if n < 1:
        raise ValueError(f"need at least one band, got {n}")
    if not 0.0 <= omega_lo < omega_hi:
        raise ValueError(f"need 0 <= omega_lo < omega_hi, got {omega_lo!r}, {omega_hi!r}")
    if not max_ratio > 1.0:
        raise ValueError(f"max_ratio must be above 1, got {max_ratio!r}")
    w = np.linspace(omega_lo, omega_hi, grid + 1)
    cumulative = _cumulative(spectrum, w)
    total = float(cumulative[-1])
    if not total > 0.0:
        raise ValueError("the spectrum has no energy between omega_lo and omega_hi")
    ratio = max_ratio
    if omega_lo > 0.0:
        # the cap alone may take at most half the bands, the rest share the energy
        ratio = max(ratio, (omega_hi / omega_lo) ** (2.0 / n) * (1.0 + 1e-9))
    slack = 1e-9  # the last band may hold this much over e (bisection and rounding)
    grid_w = w.tolist()  # scalar look-ups on lists: the walk runs a few thousand of them
    grid_c = cumulative.tolist()

    def energy_below(x: float) -> float:
        i = min(max(bisect.bisect_right(grid_w, x), 1), grid)
        w0, w1 = grid_w[i - 1], grid_w[i]
        return grid_c[i - 1] + (x - w0) / (w1 - w0) * (grid_c[i] - grid_c[i - 1])

    def reach(c: float) -> float:
        """Where the cumulative energy first reaches c (as _crossing)."""
        i = bisect.bisect_left(grid_c, c)
        if i <= 0:
            return grid_w[0]
        if i > grid:
            return grid_w[-1]
        c0, c1 = grid_c[i - 1], grid_c[i]
        return grid_w[i - 1] + (c - c0) / (c1 - c0) * (grid_w[i] - grid_w[i - 1])

    def walk(e: float) -> list[float]:
        """The edges with band energy e, stopped once there are more than n bands."""
        edges = [omega_lo]
        x = omega_lo
        while len(edges) <= n + 1:
            below = energy_below(x)
            cap = ratio * x if x > 0.0 else math.inf
            if total - below <= e * (1.0 + slack) and cap >= omega_hi:
                edges.append(omega_hi)
                break
            x = min(reach(below + e), cap, omega_hi)
            edges.append(x)
        return edges

    low, high = total / n, total
    if len(walk(low)) - 1 > n:
        # the smallest e whose walk needs at most n bands: fewer bands for a larger e
        for _ in range(200):
            middle = 0.5 * (low + high)
            if len(walk(middle)) - 1 <= n:
                high = middle
            else:
                low = middle
            if high - low <= 1e-12 * high:
                break
        low = high
    edges = np.array(walk(low))
    while len(edges) < n + 1:  # e = total / n with a rounding short of n bands
        i = int(np.argmax(np.diff(edges)))
        edges = np.insert(edges, i + 1, 0.5 * (edges[i] + edges[i + 1]))
    energy = np.diff(np.interp(edges, w, cumulative))
    return EnergyBands(edges=edges, energy=energy, grid=w, cumulative=cumulative)


@dataclass(frozen=True, eq=False)
class WaveComponents:
    """Regular wave components; all read-only float64 arrays of one length.

    amplitude [m], omega [rad/s], k wave number [rad/m], direction [rad] the waves travel
    towards, phase [rad] at t = 0 at the origin.
    """

    amplitude: FloatArray
    omega: FloatArray
    k: FloatArray
    direction: FloatArray
    phase: FloatArray

    def __post_init__(self) -> None:
        for name in ("amplitude", "omega", "k", "direction", "phase"):
            value = np.array(getattr(self, name), dtype=np.float64)
            value.setflags(write=False)
            object.__setattr__(self, name, value)


def wave_components(
    spectrum: Spectrum,
    n: int,
    omega_lo: float,
    omega_hi: float,
    rng: np.random.Generator,
    mean_direction: float,
    omega_peak: float | None = None,
    spreading: bool = False,
) -> WaveComponents:
    """n wave components, one in each band of ``energy_bands`` of [omega_lo, omega_hi].

    A component's amplitude is sqrt(2 x its band's energy) (VRX eq. 6), so the components
    carry the interval's energy exactly; the bands hold equal energy except in the thin
    tails (see ``energy_bands``). Its frequency is drawn inside its band with the density S
    (a uniform fraction of the band's energy, mapped through the cumulative energy): no two
    components share a period, the sum does not repeat, and on average over seeds each
    band's energy sits where the spectrum has it. Its phase is uniform on [0, 2 pi).
    Draw order from ``rng``: rng.random(n) for the frequencies, then
    rng.uniform(0, 2 pi, n) for the phases, then, only when ``spreading``,
    rng.standard_normal(n) for the directions, so spreading leaves the rest unchanged.
    The direction is mean_direction [rad, travelling towards], plus with spreading a normal
    offset of variance spreading_second_moment(omega / omega_peak). k = omega^2 / G.
    """
    # thesis eq. 2.84 and VRX paper eq. 6 (amplitudes), sec. II-A-3 and eq. 11 (directions),
    # deep-water dispersion omega^2 = g k (VRX paper, below eq. 1)
    if n < 1:
        raise ValueError(f"need at least one wave component, got {n}")
    if not 0.0 <= omega_lo < omega_hi:
        raise ValueError(f"need 0 <= omega_lo < omega_hi, got {omega_lo!r}, {omega_hi!r}")
    if spreading and not (omega_peak is not None and omega_peak > 0.0):
        raise ValueError("directional spreading needs a positive omega_peak")
    bands = energy_bands(spectrum, n, omega_lo, omega_hi)
    fraction = rng.random(n)
    phase = rng.uniform(0.0, 2.0 * math.pi, size=n)
    omega = bands.frequency(fraction)
    amplitude = np.sqrt(2.0 * bands.energy)

    direction = np.full(n, float(mean_direction))
    if spreading:
        assert omega_peak is not None
        variance = np.asarray(spreading_second_moment(omega / omega_peak), dtype=np.float64)
        direction = direction + np.sqrt(variance) * rng.standard_normal(n)
    return WaveComponents(
        amplitude=amplitude, omega=omega, k=omega**2 / G, direction=direction, phase=phase
    )
