"""The 6-DOF model against the thesis' equations: structure, rest, energy, steady states."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import PROFILES, vessel
from scipy.optimize import brentq
from scipy.spatial.transform import Rotation

from hild.coupled.simulation import Simulation
from hild.model import layout as L
from hild.model.dynamics import (
    added_mass_coriolis,
    cross_flow_drag,
    rigid_body_coriolis,
)

RNG = np.random.default_rng(20170605)


def coriolis_rigid_body_matrix(m: float, r_g: np.ndarray, I_o: np.ndarray, nu: np.ndarray):
    """C_RB(nu) as the matrix of thesis eq. 2.18: an oracle independent of the compiled
    vector form."""
    xg, yg, zg = r_g
    u, v, w, p, q, r = nu
    Ix, Iy, Iz = I_o[0, 0], I_o[1, 1], I_o[2, 2]
    Ixy, Ixz, Iyz = -I_o[0, 1], -I_o[0, 2], -I_o[1, 2]
    C = np.zeros((6, 6))
    C[3:6, 0:3] = [
        [-m * (yg * q + zg * r), m * (yg * p + w), m * (zg * p - v)],
        [m * (xg * q - w), -m * (zg * r + xg * p), m * (zg * q + u)],
        [m * (xg * r + v), m * (yg * r - u), -m * (xg * p + yg * q)],
    ]
    C[0:3, 3:6] = -C[3:6, 0:3].T
    C[3:6, 3:6] = [
        [0.0, -Iyz * q - Ixz * p + Iz * r, Iyz * r + Ixy * p - Iy * q],
        [Iyz * q + Ixz * p - Iz * r, 0.0, -Ixz * r - Ixy * q + Ix * p],
        [-Iyz * r - Ixy * p + Iy * q, Ixz * r + Ixy * q - Ix * p, 0.0],
    ]
    return C


def m2c_added_mass(M_A, nu_r):
    """C_A(nu_r) of thesis eq. 2.19 built independently as a matrix."""
    a = M_A[:3, :] @ nu_r
    b = M_A[3:, :] @ nu_r

    def S(x):
        return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])

    C = np.zeros((6, 6))
    C[:3, 3:] = -S(a)
    C[3:, :3] = -S(a)
    C[3:, 3:] = -S(b)
    return C


@pytest.mark.parametrize("name", PROFILES)
def test_rigid_body_coriolis_matches_matrix_form(name):
    v = vessel(name)
    P = v.params
    r_g = P[L.P_RG : L.P_RG + 3]
    I_o = P[L.P_IO : L.P_IO + 9].reshape(3, 3)
    for _ in range(20):
        nu = RNG.normal(size=6)
        out = np.zeros(6)
        rigid_body_coriolis(P, nu, 0, out, 0)
        C = coriolis_rigid_body_matrix(P[L.P_MASS], r_g, I_o, nu)
        np.testing.assert_allclose(out, C @ nu, rtol=1e-12, atol=1e-9)
        # eq. 2.18 is skew-symmetric: it does no work
        np.testing.assert_allclose(C, -C.T, atol=1e-9)
        assert abs(nu @ out) < 1e-9 * (1 + np.abs(out).max())


@pytest.mark.parametrize("name", PROFILES)
def test_added_mass_coriolis_matches_matrix_form(name):
    v = vessel(name)
    P = v.params.copy()
    P[L.P_MUNK] = 1.0  # compare the full eq. 2.19
    for _ in range(20):
        nu_r = RNG.normal(size=6)
        out = np.zeros(6)
        added_mass_coriolis(P, nu_r, 0, out, 0)
        np.testing.assert_allclose(out, m2c_added_mass(v.M_A, nu_r) @ nu_r, atol=1e-9)


def test_odin_rigid_body_mass_matrix_is_thesis_eq_3_1():
    thesis = np.array(
        [
            [6000, 0, 0, 0, -480, 0],
            [0, 6000, 0, 480, 0, -9000],
            [0, 0, 6000, 0, 9000, 0],
            [0, 480, 0, 3066.5, -21.13, -519.34],
            [-480, 0, 9000, -21.13, 18992.13, -1.21],
            [0, -9000, 0, -519.34, -1.21, 20927.7],
        ]
    )
    np.testing.assert_allclose(vessel("odin").M_RB, thesis, atol=1e-9)


def test_jolner_rigid_body_mass_matrix_is_eq_3_3_made_symmetric():
    M = vessel("jolner").M_RB
    np.testing.assert_allclose(M, M.T)
    # the printed eq. 3.3 has +11.4 in roll-sway; a rigid body needs -m z_g
    assert M[3, 1] == pytest.approx(-11.41)
    assert M[1, 3] == pytest.approx(-11.41)
    assert M[0, 4] == pytest.approx(11.41) and M[1, 5] == pytest.approx(-22.82)


def test_cross_flow_strips_match_closed_form():
    # integral of |v + x r|(v + x r) over [-L/2, L/2] in closed form
    P = np.zeros(L.P_SIZE)
    P[L.P_CF_Y], P[L.P_CF_N] = 116.5, 233.0
    P[L.P_CF_LENGTH], P[L.P_CF_STRIPS] = 10.5, 400
    half = 5.25
    for v_r, r in [(0.7, 0.0), (0.3, 0.05), (-0.2, 0.12), (0.0, -0.1)]:
        y, n = cross_flow_drag(P, v_r, r)
        xs = np.linspace(-half, half, 200001)
        strip = np.abs(v_r + xs * r) * (v_r + xs * r)
        Y_ref = -116.5 * np.trapezoid(strip, xs)
        N_ref = -233.0 * np.trapezoid(xs * strip, xs)
        assert y == pytest.approx(Y_ref, rel=1e-4, abs=1e-6)
        assert n == pytest.approx(N_ref, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("name", PROFILES)
def test_vessel_at_rest_stays_at_rest(name):
    sim = Simulation(vessel(name), dt=0.01)
    sim.advance(6000)
    assert np.abs(sim.x).max() < 1e-12


def mechanical_energy(sim):
    """Kinetic 0.5 nu^T M nu plus hydrostatic 0.5 eta^T G eta."""
    eta = sim.x[:6]
    return sim.kinetic_energy() + 0.5 * float(eta @ sim.vessel.G @ eta)


@pytest.mark.parametrize("name", PROFILES)
def test_initial_velocity_loses_energy_monotonically(name):
    v = vessel(name)
    sim = Simulation(v, dt=0.01)
    speed = 0.5 * v.length**0.5  # a Froude number of about 0.16
    sim.x[L.X_NU : L.X_NU + 6] = [speed, 0.3 * speed, 0.0, 0.0, 0.0, 0.2 * speed / v.length]
    ke = [sim.kinetic_energy()]
    energy = [mechanical_energy(sim)]
    for _ in range(3000):
        sim.advance(1)
        ke.append(sim.kinetic_energy())
        energy.append(mechanical_energy(sim))
    ke, energy = np.array(ke), np.array(energy)
    # kinetic energy trades a little with hydrostatic energy through the heave,
    # roll and pitch couplings; their sum is what damping must drain each step
    assert np.all(np.diff(energy) <= 1e-12 * energy[0])
    assert np.all(np.diff(ke) <= 1e-3 * ke[0]), "kinetic energy may only dip and rise at 0.1 %"
    assert ke[-1] < 0.5 * ke[0]


def damped_roll_period(v):
    """Roll period with sway and yaw free to move and the roll damping of D_L.

    A heeled hull's sway and yaw accelerate with it through the couplings of
    M (z_g, added mass), so the effective roll inertia is the Schur complement
    of M's lateral block; the linear roll damping lengthens the period by
    1 / sqrt(1 - zeta^2).
    """
    lat = [1, 3, 5]
    M = 0.5 * (v.M + v.M.T)[np.ix_(lat, lat)]
    others = [0, 2]
    m_eff = M[1, 1] - M[1, others] @ np.linalg.solve(M[np.ix_(others, others)], M[others, 1])
    omega = math.sqrt(v.G[3, 3] / m_eff)
    zeta = v.D_L[3, 3] / (2.0 * m_eff * omega)
    return 2 * math.pi / (omega * math.sqrt(1.0 - zeta**2))


@pytest.mark.parametrize("name", PROFILES)
def test_perturbed_roll_oscillates_back_to_zero(name):
    v = vessel(name)
    sim = Simulation(v, dt=0.01)
    sim.x[3] = 0.1
    rows = sim.advance(int(600 / 0.01), 1)
    t, phi = rows[:, 0], rows[:, 1 + 3]
    i = np.flatnonzero(np.diff(np.sign(phi)) != 0)
    assert len(i) >= 6, "roll should oscillate, not creep back"
    zeros = t[i] - phi[i] * (t[i + 1] - t[i]) / (phi[i + 1] - phi[i])  # interpolated
    measured = 2 * np.mean(np.diff(zeros[:5]))
    # heave and pitch couplings and the quadratic terms are left out of the
    # estimate; they shift the period by well under 1 % for these hulls
    assert measured == pytest.approx(damped_roll_period(v), rel=0.01)
    assert abs(phi[-200:]).max() < 0.05 * 0.1


def test_vessel_drifts_with_the_current():
    # thesis eqs 2.11-2.13: with no thrust the hull ends up at rest relative to
    # the water, so it moves over ground with the current (0.5 m/s towards
    # east); the heading it drifts to is neutral, so only speeds are checked
    sim = Simulation(vessel("otter"), dt=0.02)
    sim.set_current(0.0, 0.5)
    sim.advance(int(300 / 0.02))
    assert math.hypot(sim.x[L.X_NU], sim.x[L.X_NU + 1]) == pytest.approx(0.5, rel=1e-4)
    assert abs(sim.x[L.X_NU + 5]) < 1e-6
    north, east = sim.x[0], sim.x[1]
    sim.advance(int(10 / 0.02))
    assert sim.x[1] - east == pytest.approx(5.0, rel=1e-4)
    assert abs(sim.x[0] - north) < 1e-3


# Surge resistance written out from the references, independently of the loader:
# (D_L[0,0], ITTC coefficient, C_R, L_pp, X_uu)
SURGE = {
    "odin": (266.26, 21487.33, 0.014, 10.5, -135.0),  # thesis 3.5, 3.9; model files
    "jolner": (12.76, 736.48, 0.014, 1.65, 0.0),  # thesis 3.6, 3.10
    "wamv": (51.3, 0.0, 0.0, 1.0, -72.4),  # VRX xU, xUU
    "otter": (24.4 * 9.81 / (6 * 0.5144), 0.0, 0.0, 1.0, 0.0),  # Fossen: Xu = 24.4 g / U_max
    # X_u + X_uu = 16 % of 70 N at 1 m/s (ArduPilot's cruise pair), 3 X_u + 9 X_uu = 70 N at 3 m/s
    "blueboat": ((9 * 11.2 - 70.0) / 6, 0.0, 0.0, 1.0, -(70.0 - 3 * 11.2) / 6),
}


def surge_resistance(name, u):
    d, k, cr, lpp, xuu = SURGE[name]
    rn = max(u * lpp / 1e-6, 1e5)
    cf = 0.075 / (math.log10(rn) - 2.0) ** 2 + cr  # thesis eq. 2.29
    return d * u + k * cf * u * u - xuu * u * u


@pytest.mark.parametrize("name", PROFILES)
def test_constant_surge_force_reaches_the_speed_where_damping_balances_it(name):
    v = vessel(name)
    force = 0.02 * v.M_RB[0, 0] * 9.81  # 2 % of the weight
    expected = brentq(lambda u: surge_resistance(name, u) - force, 1e-6, 50.0)
    sim = Simulation(v, dt=0.02)
    tau = np.zeros(6)
    tau[0] = force
    sim.set_external_force(tau)
    sim.advance(int(600 / 0.02))
    assert sim.x[L.X_NU] == pytest.approx(expected, rel=0.01)
    assert abs(sim.x[L.X_NU + 5]) < 1e-9  # and no yaw from a surge force


ALLOCATION_PROBE = """
import numpy as np
from numba import njit
from numba.core.runtime import rtsys
from hild.profiles.vessel import load_profile
from hild.coupled.simulation import Simulation
sim = Simulation(load_profile("odin"), dt=0.01, method="{method}")
sim.set_command("port.rpm", 1500)
sim.set_command("port.deflector", 1)
sim.set_command("starboard.nozzle_deg", 10)
sim.advance(1)
counts = []
for n in (10, 10000):
    before = rtsys.get_allocation_stats().alloc
    sim.advance(n)
    counts.append(rtsys.get_allocation_stats().alloc - before)
@njit
def plain(x):  # numba's defaults: a call boxes its array for the runtime
    x[0] += 0.0
x = np.zeros(1)
plain(x)
before = rtsys.get_allocation_stats().alloc
plain(x)
print(counts[1] - counts[0], counts[0], rtsys.get_allocation_stats().alloc - before)
"""


@pytest.mark.parametrize("method", ["rk4", "dopri5"])
def test_compiled_step_allocates_nothing(method):
    # numba counts its own heap allocations only when NRT stats are on at import. The loop
    # is compiled without numba's runtime (hild/compiled.py): 10 and 10,000 steps allocate
    # nothing, not even a box for an argument, which a plain compiled function's call does
    env = dict(os.environ, NUMBA_NRT_STATS="1")
    out = subprocess.run(
        [sys.executable, "-c", ALLOCATION_PROBE.format(method=method)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    delta, total, plain = int(out[0]), int(out[1]), int(out[2])
    assert delta == 0, f"{delta} more allocations in 10,000 steps than in 10"
    assert total == 0
    assert plain > 0  # the probe does see a call's allocations


def body_from_ned(eta: np.ndarray) -> np.ndarray:
    """R(Theta)^T for zyx Euler angles, from scipy's rotations (not hild's)."""
    return Rotation.from_euler("ZYX", [eta[5], eta[4], eta[3]]).as_matrix().T


def turning_commands(sim: Simulation) -> None:
    """Port ahead harder than starboard, angles at half their starboard-turning range: a turn."""
    for spec in sim.vessel.actuators:
        lo, hi = spec.speed_range
        sim.set_command(
            f"{spec.name}.{spec.commands[0]}", (0.8 if spec.name == "port" else 0.3) * hi
        )
        if spec.angle_kind != "none":
            sim.set_command(f"{spec.name}.{spec.angle_kind}_deg", 0.5 * spec.angle_range_deg[1])


@pytest.mark.parametrize("profile", PROFILES)
def test_turning_in_a_uniform_current_is_turning_in_still_water(profile):
    # For a current constant in NED the added mass acts on the acceleration relative to the
    # water (Fossen 2011, ch. 10), so the motion relative to the water is the still-water
    # motion and the positions differ by the current's drift. (No environment here, so no
    # wind: a hull's air drag rightly depends on its velocity over ground.)
    current = np.array([0.3, -0.4, 0.0])  # 0.5 m/s towards south-east-ish
    still, drifting = Simulation(vessel(profile), dt=0.01), Simulation(vessel(profile), dt=0.01)
    drifting.set_current(*current[:2])
    drifting.x[6:9] = body_from_ned(drifting.x[:6]) @ current  # both start at rest in the water
    for sim in (still, drifting):
        turning_commands(sim)
    worst_velocity = worst_position = 0.0
    headings = []
    for k in range(1, 13):  # 120 s in 10 s pieces: several turns for every profile
        headings.extend(still.advance(1000, 50)[:, 1 + 5])
        drifting.advance(1000)
        nu_r = drifting.x[6:12].copy()
        nu_r[:3] -= body_from_ned(drifting.x[:6]) @ current
        worst_velocity = max(worst_velocity, float(np.max(np.abs(nu_r - still.x[6:12]))))
        drift = drifting.x[:6].copy()
        drift[:3] -= current * 10.0 * k
        worst_position = max(worst_position, float(np.max(np.abs(drift - still.x[:6]))))
    # it really turned: the heading went round at least once
    turned = np.unwrap(headings)
    assert abs(turned[-1] - turned[0]) > 2 * math.pi, turned[-1] - turned[0]
    # RK4 integrates nu, not nu_r: the two runs differ by the step's truncation error only,
    # measured at most 2e-10 m/s at 0.01 s and falling 16-fold with each halving of the step
    # (dt^4); before the M_A (w x nu_c) term they differed by centimetres per second
    assert worst_velocity < 1e-8, worst_velocity
    assert worst_position < 1e-7, worst_position


def roll_damping_ratio(v) -> float:
    """The fraction of critical damping of roll from D_L, with the effective roll inertia of
    damped_roll_period (sway and yaw free)."""
    lat = [1, 3, 5]
    M = 0.5 * (v.M + v.M.T)[np.ix_(lat, lat)]
    others = [0, 2]
    m_eff = M[1, 1] - M[1, others] @ np.linalg.solve(M[np.ix_(others, others)], M[others, 1])
    return v.D_L[3, 3] / (2.0 * math.sqrt(v.G[3, 3] * m_eff))


@pytest.mark.parametrize("name", PROFILES)
def test_roll_decays_at_its_damping_ratio(name):
    # A linear oscillator's successive peaks fall by exp(2 pi zeta / sqrt(1 - zeta^2)), the
    # logarithmic decrement; released from 10 deg, the hull's roll must fall at the rate of
    # the damping its profile gives (the heave, pitch and nonlinear terms are second order)
    v = vessel(name)
    zeta = roll_damping_ratio(v)
    if name in ("odin", "jolner"):
        # planing and semi-displacement hulls decay at 5-10 % of critical (the profiles argue
        # their 7 % addition to the thesis' eqs 3.5-3.6, which alone gave 0.4 and 0.9 %)
        assert 0.05 <= zeta <= 0.10, zeta
    sim = Simulation(v, dt=0.005)
    sim.x[3] = math.radians(10.0)
    rows = sim.advance(int(8 * damped_roll_period(v) / 0.005), 1)
    phi = rows[:, 1 + 3]
    peaks = [i for i in range(1, len(phi) - 1) if phi[i - 1] < phi[i] >= phi[i + 1] and phi[i] > 0]
    assert len(peaks) >= 3, peaks
    decrement = np.log(phi[peaks[0]] / phi[peaks[2]]) / 2  # over two periods
    expected = 2 * math.pi * zeta / math.sqrt(1 - zeta**2)
    # 5 % relative: the quadratic sway and yaw damping and the heave and pitch couplings move
    # the decay slightly; a wrong damping (another zeta by 10 %, or the relative roll term
    # left out) is far outside
    assert decrement == pytest.approx(expected, rel=0.05), (decrement, expected, zeta)
