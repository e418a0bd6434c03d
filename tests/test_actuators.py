"""Actuator dynamics, thrust laws and steering conventions."""

import math

import numpy as np
import pytest
from conftest import vessel

from hild.coupled.simulation import CommandError, Simulation
from hild.model import layout as L
from hild.model.actuators import actuator_forces, first_order_state, thrust_magnitude


def test_first_order_lag_reaches_63_percent_after_one_time_constant():
    A = np.array([0.4, 0.0, 0.0, 2000.0])  # time constant, no rate limit, range
    x, dt = 0.0, 0.001
    for _ in range(400):
        x = first_order_state(x, 1000.0, dt, A, 0)
    assert x == pytest.approx(1000.0 * (1 - math.exp(-1)), rel=1e-9)


def test_rate_limit_and_saturation():
    A = np.array([0.0, 10.0, -27.0, 27.0])  # instant, 10 units/s, +-27
    x = 0.0
    for _ in range(100):  # 1 s at 10 units/s
        x = first_order_state(x, 90.0, 0.01, A, 0)
    assert x == pytest.approx(10.0)
    for _ in range(1000):
        x = first_order_state(x, 90.0, 0.01, A, 0)
    assert x == 27.0


def glf(x, a, k, b, nu, c, m):
    return a + (k - a) / (c + math.exp(-b * (x - m))) ** (1 / nu)  # VRX eq. 26


def test_wamv_glf_thrust_matches_vrx_curve():
    v = vessel("wamv")
    fwd = (0.01, 59.82, 5.0, 0.38, 0.56, 0.28)
    rev = (-199.13, -0.09, 8.84, 5.34, 0.99, -0.57)
    for x in (0.1, 0.5, 1.0):
        assert thrust_magnitude(v.actuator_params, 0, x) == pytest.approx(glf(x, *fwd))
        assert thrust_magnitude(v.actuator_params, 0, -x) == pytest.approx(glf(-x, *rev))
    assert thrust_magnitude(v.actuator_params, 0, 1.0) == pytest.approx(242.7, abs=0.5)
    assert thrust_magnitude(v.actuator_params, 0, -1.0) == pytest.approx(-101.85, abs=0.5)
    assert thrust_magnitude(v.actuator_params, 0, 0.0) == 0.0


def test_odin_jet_gives_10_kN_at_2000_rpm():
    assert thrust_magnitude(vessel("odin").actuator_params, 0, 2000.0) == pytest.approx(10000.0)


def test_otter_reverse_thrust_uses_its_own_coefficient():
    A = vessel("otter").actuator_params
    n_max = 103.931 * 60 / (2 * math.pi)  # Fossen's n_max in rpm
    assert thrust_magnitude(A, 0, n_max) == pytest.approx(0.5 * 24.4 * 9.81, rel=1e-4)
    assert thrust_magnitude(A, 0, -n_max) == pytest.approx(-0.01289 / 2 * 103.931**2, rel=1e-4)


def run_with(name, commands, seconds=30.0):
    sim = Simulation(vessel(name), dt=0.01)
    for k, val in commands.items():
        sim.set_command(k, val)
    sim.advance(int(seconds / 0.01))
    return sim


FULL_AHEAD = {
    "odin": {
        "port.rpm": 1500,
        "starboard.rpm": 1500,
        "port.deflector": 1,
        "starboard.deflector": 1,
    },
    "jolner": {"port.rpm": 2000, "starboard.rpm": 2000},
    "otter": {"port.rpm": 700, "starboard.rpm": 700},
    "wamv": {"port.cmd": 0.7, "starboard.cmd": 0.7},
}


@pytest.mark.parametrize("name", sorted(FULL_AHEAD))
def test_equal_thrust_gives_no_yaw(name):
    sim = run_with(name, FULL_AHEAD[name], 60.0)
    assert sim.x[L.X_NU] > 0.5
    # Odin's products of inertia (I_xy, I_yz of eq. 3.1) couple the pitch
    # transient of starting up into yaw at the 1e-7 rad/s level; anything a
    # thrust asymmetry would cause is orders of magnitude larger (next test)
    assert abs(sim.x[L.X_NU + 5]) < 1e-6
    assert abs(sim.x[5]) < 1e-5 and abs(sim.x[1]) < 1e-3


@pytest.mark.parametrize("name", sorted(FULL_AHEAD))
def test_more_port_thrust_turns_to_starboard(name):
    cmds = dict(FULL_AHEAD[name])
    key = "port.cmd" if name == "wamv" else "port.rpm"
    cmds[key] *= 1.3
    sim = run_with(name, cmds, 5.0)
    assert sim.x[L.X_NU + 5] > 1e-3  # r > 0: turning to starboard
    assert 0 < sim.x[5] < math.pi


def test_odin_positive_nozzle_turns_to_starboard():
    cmds = dict(FULL_AHEAD["odin"], **{"port.nozzle_deg": 15, "starboard.nozzle_deg": 15})
    sim = run_with("odin", cmds, 20.0)
    assert sim.x[L.X_NU + 5] > 0.02


def test_odin_deflector_reverse_backs_and_neutral_holds_with_steering():
    astern = run_with(
        "odin",
        {"port.rpm": 1500, "starboard.rpm": 1500, "port.deflector": -1, "starboard.deflector": -1},
        20.0,
    )
    assert astern.x[L.X_NU] < -1.0
    v = vessel("odin")
    state = np.array([1500.0, math.radians(20), 0.0] * 2)  # neutral deflectors, nozzles over
    tau = np.zeros(6)
    actuator_forces(v.actuator_params, 2, state, tau)
    assert tau[0] == 0.0  # zero surge force in neutral (thesis sec. 3.10.2)
    assert tau[5] > 0.0  # but the nozzles still yaw the boat to starboard


def test_wamv_azimuth_turns_thrust():
    v = vessel("wamv")
    state = np.array([1.0, math.radians(30), 0.0] * 2)
    tau = np.zeros(6)
    actuator_forces(v.actuator_params, 2, state, tau)
    # thrust rotated 30 deg to starboard at the stern swings the bow to port
    assert tau[1] > 0 and tau[5] < 0
    assert math.hypot(tau[0], tau[1]) == pytest.approx(2 * 242.7, rel=0.01)


def test_unknown_commands_are_named_in_the_error():
    sim = Simulation(vessel("odin"))
    with pytest.raises(CommandError, match="rpm, nozzle_deg, deflector"):
        sim.set_command("port.azimuth_deg", 3)
    with pytest.raises(CommandError, match="port, starboard"):
        sim.set_command("bow.rpm", 3)


def test_the_kept_lag_factors_step_as_the_exponential_does_at_every_dt():
    """update_actuators keeps 1 - exp(-dt/tau) per actuator state (layout A_LAG) instead of
    taking the exponential each step: the states it gives are first_order_state's to the bit,
    at a first dt and again after the dt changes (the factors are computed afresh); the
    vessel's own packed parameters are left as they were by a simulation."""
    from hild.model.actuators import update_actuators

    v = vessel("odin")
    packed = v.actuator_params.copy()
    A = v.actuator_params.copy()
    n = v.n_act
    state = np.zeros(n * L.S_SIZE)
    cmd = np.zeros_like(state)
    for a in v.actuators:
        cmd[a.index * L.S_SIZE + L.S_SPEED] = 1500.0
        cmd[a.index * L.S_SIZE + L.S_ANGLE] = math.radians(20.0)
        cmd[a.index * L.S_SIZE + L.S_DEFLECTOR] = -0.5
    expected = state.copy()
    slots = (L.A_SPEED, L.A_ANGLE, L.A_DEFLECTOR)
    for dt in (0.01, 0.02):
        for _ in range(300):
            update_actuators(A, n, state, cmd, dt)
            for i in range(n):
                for j, k in enumerate(slots):
                    s = i * L.S_SIZE + j
                    expected[s] = first_order_state(expected[s], cmd[s], dt, A, i * L.A_SIZE + k)
            assert np.array_equal(state, expected)
        assert A[L.A_LAG_DT] == dt
    assert 0.0 < state[L.S_SPEED] < 1500.0  # (still lagging: the factors are in use)
    sim = Simulation(v, dt=0.01)
    sim.set_command("port.rpm", 1500.0)
    sim.advance(100)
    assert np.array_equal(v.actuator_params, packed)
