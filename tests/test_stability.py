"""The stable step of each built-in vessel (hild/model/stability.py): the integrators' stability
functions, a limit that the default step passes with room, that a run just under it survives
full thrust and a turn, and that a step well above it does diverge; and the check of an
absurd state."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hild import kernel_cache
from hild.coupled.simulation import Simulation
from hild.kernel_cache import PREFIX
from hild.model import integrators as I
from hild.model.stability import (
    STABILITY_POLYNOMIALS,
    absurd,
    computed_step_limit,
    reach,
    round_down,
    state_problem,
    step_limit,
)
from hild.profiles.vessel import PROFILES, load_profile

# Full thrust ahead for 20 s, then a hard turn for 40 s, in each vessel's own commands.
FULL_AHEAD = {
    "odin": {
        "port.rpm": 2000,
        "starboard.rpm": 2000,
        "port.deflector": 1,
        "starboard.deflector": 1,
    },
    "jolner": {"port.rpm": 3000, "starboard.rpm": 3000},
    "otter": {"port.rpm": 992, "starboard.rpm": 992},
    "wamv": {"port.cmd": 1, "starboard.cmd": 1},
    "blueboat": {"port.cmd": 1, "starboard.cmd": 1},
}
HARD_TURN = {
    "odin": {"port.nozzle_deg": 27, "starboard.nozzle_deg": 27},
    "jolner": {"starboard.rpm": 1000},
    "otter": {"starboard.rpm": 300},
    "wamv": {"port.azimuth_deg": 30, "starboard.azimuth_deg": 30},
    "blueboat": {"starboard.cmd": -1},  # full ahead and full astern: its tightest turn
}
METHODS = ("rk4", "dopri5")
CASES = [(p, m) for p in sorted(FULL_AHEAD) for m in METHODS]


def test_every_built_in_profile_is_covered():
    assert sorted(FULL_AHEAD) == PROFILES.names()


def test_dopri5s_stability_polynomial_is_its_tableaus():
    """R(z) = sum_k z^k b^T A^(k-1) 1 (Hairer & Wanner II, sec. IV.2)."""
    A = np.zeros((6, 6))
    A[1, :1] = [I.A21]
    A[2, :2] = [I.A31, I.A32]
    A[3, :3] = [I.A41, I.A42, I.A43]
    A[4, :4] = [I.A51, I.A52, I.A53, I.A54]
    A[5, :5] = [I.A61, I.A62, I.A63, I.A64, I.A65]
    b = np.array([I.B1, 0.0, I.B3, I.B4, I.B5, I.B6])
    coefficients, v = [1.0], np.ones(6)
    for _ in range(7):
        coefficients.append(float(b @ v))
        v = A @ v
    assert coefficients[-1] == pytest.approx(0.0, abs=1e-12)  # six stages: degree 6
    assert coefficients[:7] == pytest.approx(STABILITY_POLYNOMIALS["dopri5"], rel=1e-12)


# (Hairer & Wanner II, sec. IV.2: RK4 reaches -2.785 and 2 sqrt(2) i, DOPRI5 -3.307)
AXES = [
    ("rk4", -1.0, 2.7853),
    ("rk4", 1j, 2.0 * math.sqrt(2.0)),
    ("dopri5", -1.0, 3.3066),
    ("dopri5", 1j, 0.9972),
]


@pytest.mark.parametrize(("method", "direction", "expected"), AXES)
def test_the_reach_along_the_axes_is_the_published_one(method, direction, expected):
    assert reach(method, complex(direction)) == pytest.approx(expected, abs=2e-3)


def run(profile: str, method: str, dt: float) -> tuple[str, np.ndarray]:
    """60 s of full thrust and a hard turn at the step dt: the first problem of a recorded
    row ('' if none) and the rows."""
    sim = Simulation(load_profile(profile), dt=dt, method=method)
    for name, value in FULL_AHEAD[profile].items():
        sim.set_command(name, value)
    rows = [sim.advance(round(20.0 / dt), 1)]
    for name, value in HARD_TURN[profile].items():
        sim.set_command(name, value)
    rows.append(sim.advance(round(60.0 / dt) - sim.steps, 1))
    table = np.vstack(rows)
    for row in table:
        problem = state_problem(row[1:13])
        if problem:
            return f"t = {row[0]:.2f} s: {problem}", table
    return "", table


@pytest.mark.parametrize(("profile", "method"), CASES)
def test_the_default_step_is_well_within_the_limit(profile, method):
    limit = step_limit(load_profile(profile), method)
    assert limit.dt > 5 * 0.01, limit.describe()
    assert limit.problem(0.01) == ""
    assert limit.problem(1.05 * limit.dt).startswith("a step of at most ")


@pytest.mark.parametrize(("profile", "method"), CASES)
def test_a_run_at_nine_tenths_of_the_limit_stays_bounded(profile, method):
    dt = 0.9 * step_limit(load_profile(profile), method).dt
    problem, rows = run(profile, method, dt)
    assert problem == "", problem
    # and it is the same manoeuvre as at a short step: a speed within 0.5 m/s of it at the end
    _, reference = run(profile, method, 0.01)
    speed = np.hypot(rows[-1, 7], rows[-1, 8])
    assert speed == pytest.approx(np.hypot(reference[-1, 7], reference[-1, 8]), abs=0.5)
    assert np.degrees(np.abs(rows[:, 4:6]).max()) < 30.0  # roll and pitch stay moderate


@pytest.mark.parametrize(("profile", "method"), CASES)
def test_a_step_well_above_the_limit_diverges(profile, method):
    dt = 3.0 * step_limit(load_profile(profile), method).dt
    problem, _ = run(profile, method, dt)
    assert problem != ""


def test_the_message_names_the_limit_and_the_mode():
    limit = step_limit(load_profile("odin"), "rk4")
    text = limit.problem(1.0)
    assert text.startswith(f"a step of at most {round_down(limit.dt)} s for odin with rk4 (")
    assert float(round_down(limit.dt)) <= limit.dt < float(round_down(limit.dt)) + 0.001
    assert limit.mode in text and limit.where in text and "time constant" in text


@pytest.mark.parametrize(
    ("index", "value", "says"),
    [
        (6, math.nan, "not finite (u = nan)"),
        (0, math.inf, "not finite (x = inf)"),
        (7, 101.0, "speed reached 101 m/s"),
        (11, 13.0, "angular rate reached 745 deg/s"),
        (3, 1.6, "roll angle reached 91.7 deg"),
        (4, -1.6, "pitch angle reached -91.7 deg"),
        (7, 1e300, "speed reached 1e+300 m/s"),
    ],
)
def test_an_absurd_state_is_named_and_found_among_rows(index, value, says):
    x = np.zeros(12)
    x[index] = value
    assert says in state_problem(x)
    rows = np.zeros((5, 12))
    rows[3] = x
    assert absurd(rows).tolist() == [False, False, False, True, False]


def test_a_boat_in_hard_weather_is_no_absurd_state():
    x = np.zeros(12)
    x[3:5] = np.radians([60.0, -45.0])
    x[6:12] = [15.0, -3.0, 2.0, 2.0, 1.5, 1.0]
    assert state_problem(x) == "" and not absurd(x[None, :]).any()


def test_a_remembered_limit_is_the_computed_one_and_a_damaged_memo_is_recomputed(
    tmp_path, monkeypatch
):
    # `hild check` reads the limit from the memo beside the kernels instead of stepping the
    # model: what it reads must be what it would compute, to the last bit
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / (PREFIX + "0123456789abcdef")))
    (tmp_path / (PREFIX + "0123456789abcdef")).mkdir()
    odin, otter = load_profile("odin"), load_profile("otter")
    for vessel in (odin, otter):
        computed = computed_step_limit(vessel, "rk4")
        assert step_limit(vessel, "rk4") == computed  # computed and remembered
        assert step_limit(vessel, "rk4") == computed  # remembered
    assert step_limit(odin, "rk4") != step_limit(otter, "rk4")  # one entry each
    assert (
        len(
            json.loads(
                (tmp_path / (PREFIX + "0123456789abcdef") / kernel_cache.MEMO_FILE).read_text()
            )
        )
        == 2
    )
    memo = tmp_path / (PREFIX + "0123456789abcdef") / kernel_cache.MEMO_FILE
    memo.write_text(json.dumps({k: [1.0, "x"] for k in json.loads(memo.read_text())}))
    assert step_limit(odin, "rk4") == computed_step_limit(odin, "rk4")
