"""The loop's tick-lateness statistics against numpy on the same samples."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hild.clock import JitterStats


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_percentiles_bound_numpys_within_one_bin(seed):
    rng = np.random.default_rng(seed)
    # lateness as a loaded loop has it: mostly a fraction of a ms, a tail of a few ms
    late = np.concatenate([rng.exponential(2e-4, 5000), rng.uniform(1e-3, 2e-2, 50)])
    stats = JitterStats()
    for x in late:
        stats.add(float(x))
    assert stats.ticks == len(late) and stats.max_s == late.max()
    for p in (50, 99):
        # the smallest sample with at least p % of the samples at or below it ("inverted CDF")
        exact_ms = float(np.percentile(late, p, method="inverted_cdf")) * 1e3
        got = stats.percentile_ms(p)
        # the histogram reports the upper edge of the sample's 10 us bin
        assert exact_ms <= got <= exact_ms + stats.bin_s * 1e3 + 1e-9, (p, exact_ms, got)


def test_percentiles_of_known_samples():
    stats = JitterStats()
    for ms in (0.005, 0.015, 0.025, 0.035):  # bins 0, 1, 2, 3 of 10 us each
        stats.add(ms * 1e-3)
    assert stats.percentile_ms(50) == pytest.approx(0.02)  # the 2nd sample's bin, upper edge
    assert stats.percentile_ms(99) == pytest.approx(0.04)
    assert stats.percentile_ms(25) == pytest.approx(0.01)


def test_lateness_beyond_100_ms_lands_in_the_last_bin_and_the_maximum_keeps_it():
    stats = JitterStats()
    stats.add(0.5)
    assert stats.percentile_ms(50) == pytest.approx(100.01) and stats.max_s == 0.5
    summary = stats.summary()
    assert summary["jitter_max_ms"] == 500.0 and summary["ticks"] == 1


def test_no_ticks_reports_zero():
    assert JitterStats().percentile_ms(99) == 0.0 and not math.isnan(JitterStats().max_s)
