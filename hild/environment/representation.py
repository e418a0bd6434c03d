"""From a one-sided spectrum to a time realization: sums of harmonics with random phases.

Two uses: a periodic table of a zero-mean gust by spectral representation (wind note
eqs 16-20, thesis eq. 2.48), evaluated with one real FFT; and a set of wave components
(thesis eq. 2.84, VRX paper eqs 1 and 6-11) for the elevation and the wave forces.
Only numpy is used here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from hild.environment.spectra import G, spreading_second_moment

FloatArray = NDArray[np.float64]
Spectrum = Callable[[FloatArray], FloatArray]

_BAND_POINTS = 9  # Simpson points across one wave band (8 intervals)


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
    s = _spectrum_values(spectrum, w)
    cumulative = np.concatenate(([0.0], np.cumsum(0.5 * (s[1:] + s[:-1]) * np.diff(w))))
    total = cumulative[-1]
    if not total > 0.0:
        raise ValueError("the spectrum has no energy below omega_max")
    return _crossing(cumulative, w, lo_fraction * total), _crossing(
        cumulative, w, hi_fraction * total
    )


def _crossing(cumulative: FloatArray, w: FloatArray, target: float) -> float:
    """The omega where the non-decreasing cumulative energy first reaches target (linear)."""
    i = int(np.searchsorted(cumulative, target, side="left"))
    if i == 0:
        return float(w[0])
    if i >= len(w):
        return float(w[-1])
    c0, c1 = cumulative[i - 1], cumulative[i]
    return float(w[i - 1] + (target - c0) / (c1 - c0) * (w[i] - w[i - 1]))


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
    """n wave components on n equal bands of [omega_lo, omega_hi] [rad/s].

    Each frequency is uniform within its band (so the sum does not repeat), its amplitude
    sqrt(2 * integral of S over the band) (Simpson, 9 points) and its phase uniform on
    [0, 2 pi). Draw order from ``rng``: rng.random(n) for the frequencies, then
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
    width = (omega_hi - omega_lo) / n
    lower = omega_lo + width * np.arange(n)
    jitter = rng.random(n)
    phase = rng.uniform(0.0, 2.0 * math.pi, size=n)
    omega = lower + jitter * width

    across = np.linspace(0.0, width, _BAND_POINTS)
    points = lower[:, np.newaxis] + across
    values = _spectrum_values(spectrum, points.ravel()).reshape(points.shape)
    simpson = np.ones(_BAND_POINTS)
    simpson[1:-1:2], simpson[2:-1:2] = 4.0, 2.0
    energy = values @ simpson * (width / (_BAND_POINTS - 1) / 3.0)
    amplitude = np.sqrt(2.0 * energy)

    direction = np.full(n, float(mean_direction))
    if spreading:
        assert omega_peak is not None
        variance = np.asarray(spreading_second_moment(omega / omega_peak), dtype=np.float64)
        direction = direction + np.sqrt(variance) * rng.standard_normal(n)
    return WaveComponents(
        amplitude=amplitude, omega=omega, k=omega**2 / G, direction=direction, phase=phase
    )
