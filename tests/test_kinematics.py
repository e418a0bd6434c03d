"""The lever arm's velocity in plain floats equals numpy's v + cross(omega, r) bit for bit (the
sensors' and the recording's velocities were computed with numpy's cross before, and a run's
output must not change in its last bit)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from hild.sensors.kinematics import velocity_body, velocity_ned
from hild.sensors.truth import Truth


def test_velocity_body_rounds_as_numpy_cross_does():
    rng = np.random.default_rng(7)
    for _ in range(2000):
        # magnitudes from tiny to large, signs mixed: where the order of rounding shows
        eta = rng.normal(size=6) * 10.0 ** rng.integers(-3, 3, size=6)
        nu = rng.normal(size=6) * 10.0 ** rng.integers(-6, 3, size=6)
        arm = rng.normal(size=3) * 10.0 ** rng.integers(-2, 2, size=3)
        truth = Truth(0.0, datetime(2026, 1, 1, tzinfo=UTC), eta, nu)
        expected = nu[:3] + np.cross(nu[3:], arm)
        got = velocity_body(truth, arm)
        assert got.dtype == np.float64 and got.shape == (3,)
        assert np.array_equal(got, expected), (nu, arm, got - expected)
        assert np.array_equal(velocity_ned(truth, arm), truth.rotation @ expected)
    # a lever arm given as a tuple, and the origin (the state's point)
    truth = Truth(0.0, datetime(2026, 1, 1, tzinfo=UTC), np.zeros(6), np.arange(1.0, 7.0))
    assert np.array_equal(
        velocity_body(truth, (1.0, -2.0, 0.5)),
        truth.nu[:3] + np.cross(truth.nu[3:], (1.0, -2.0, 0.5)),
    )
    assert np.array_equal(velocity_body(truth, np.zeros(3)), truth.nu[:3])
