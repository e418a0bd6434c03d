"""The compiled traffic core: target motion against closed forms, route guidance, encounter
placement checked by an independent CPA reckoning, the COLREG give-way manoeuvre,
determinism and the absence of allocation in the step."""

import cmath
import math
import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from hild.traffic.encounter import place
from hild.traffic.kernel import cpa_tcpa, traffic_step
from hild.traffic.layout import (
    MODE_GIVE_WAY,
    MODE_SAIL,
    MODE_STOPPED,
    SIT_CROSSING_GIVE_WAY,
    SIT_CROSSING_STAND_ON,
    SIT_HEAD_ON,
    SIT_NONE,
    SIT_OVERTAKEN,
    SIT_OVERTAKING,
    T_BASE_COURSE,
    T_COURSE_CMD,
    T_EAST,
    T_HEADING,
    T_MIN_RANGE,
    T_MODE,
    T_NORTH,
    T_SITUATION,
    T_SIZE,
    T_SPEED,
    T_SPEED_CMD,
    T_WAYPOINT,
    T_YAW_RATE,
)
from hild.traffic.targets import (
    Behaviour,
    Course,
    Encounter,
    Identity,
    Route,
    ShipDynamics,
    Target,
    Waypoint,
)
from hild.traffic.traffic import Traffic

OWN_N, OWN_E, OWN_COURSE, OWN_SPEED = 200.0, -100.0, 0.3, 5.0  # off the axes on purpose


def own_state(north=OWN_N, east=OWN_E, course=OWN_COURSE, speed=OWN_SPEED):
    x = np.zeros(12)
    x[0], x[1], x[5], x[6] = north, east, course, speed
    return x


def target(name, motion, kind="hold", dynamics=None, mmsi=257000001):
    return Target(
        name, Identity(mmsi, name.upper()), motion, Behaviour(kind), dynamics or ShipDynamics()
    )


def sail(traffic, own0, dt, steps):
    """Step the traffic with the own ship holding course and speed from own0 (a straight
    line in the test); rows[k] and own[k] are at k dt."""
    x = own0.copy()
    n0, e0, c, u = own0[0], own0[1], own0[5], own0[6]
    rows = np.empty((steps + 1, traffic.n, T_SIZE))
    own = np.empty((steps + 1, 2))
    rows[0] = traffic.T
    own[0] = n0, e0
    for k in range(steps):
        t = k * dt
        x[0] = n0 + u * math.cos(c) * t
        x[1] = e0 + u * math.sin(c) * t
        traffic.step(x, dt, t)
        rows[k + 1] = traffic.T
        own[k + 1] = n0 + u * math.cos(c) * (t + dt), e0 + u * math.sin(c) * (t + dt)
    return own, rows


def wrap(a):
    return (np.asarray(a) + math.pi) % (2 * math.pi) - math.pi


# --- motion ------------------------------------------------------------------------------


def test_a_course_target_sails_a_straight_line_at_its_speed():
    course, speed = 2.2, 4.0
    tr = Traffic([target("a", Course(100.0, -50.0, course, speed))], own_state())
    _, rows = sail(tr, own_state(), 0.5, 2000)
    t = 0.5 * np.arange(2001)
    # exact: no heading error means no yaw, the chord is the distance, U dt each step; what
    # is left is the rounding of 2000 sums of numbers up to 4 km (2000 * 4e3 * 2.2e-16 m)
    np.testing.assert_allclose(rows[:, 0, T_NORTH], 100.0 + speed * math.cos(course) * t, atol=1e-8)
    np.testing.assert_allclose(rows[:, 0, T_EAST], -50.0 + speed * math.sin(course) * t, atol=1e-8)
    assert (rows[:, 0, T_HEADING] == course).all()
    assert (rows[:, 0, T_SPEED] == speed).all()
    assert (rows[:, 0, T_YAW_RATE] == 0.0).all()


def test_speed_step_reaches_63_percent_at_one_time_constant():
    tau, u_cmd, dt = 40.0, 8.0, 0.5
    tr = Traffic(
        [target("a", Course(0.0, 0.0, 1.0, 0.0), dynamics=ShipDynamics(speed_time_constant_s=tau))],
        own_state(),
    )
    tr.retask("a", Course(0.0, 0.0, 1.0, u_cmd))
    _, rows = sail(tr, own_state(), dt, int(3 * tau / dt))
    t = dt * np.arange(len(rows))
    # the lag is stepped by its exact solution, so the closed form U = U_cmd (1 - e^(-t/tau))
    # holds to rounding at every step, and in particular 1 - 1/e = 63.2 % at t = tau
    k = int(tau / dt)
    assert rows[k, 0, T_SPEED] / u_cmd == pytest.approx(1.0 - math.exp(-1.0), abs=1e-12)
    np.testing.assert_allclose(rows[:, 0, T_SPEED], u_cmd * -np.expm1(-t / tau), rtol=1e-12)
    # and the distance sailed is its integral, U_cmd (t - tau (1 - e^(-t/tau)))
    dist = np.hypot(rows[:, 0, T_NORTH], rows[:, 0, T_EAST])
    np.testing.assert_allclose(dist, u_cmd * (t + tau * np.expm1(-t / tau)), atol=1e-9)


def fit_circle(n, e):
    """Least-squares circle (Kasa): n^2 + e^2 = 2 a n + 2 b e + c; radius sqrt(c + a^2 + b^2)."""
    A = np.column_stack([2 * n, 2 * e, np.ones_like(n)])
    (a, b, c), *_ = np.linalg.lstsq(A, n * n + e * e, rcond=None)
    r = math.sqrt(c + a * a + b * b)
    return a, b, r, np.hypot(n - a, e - b) - r


def test_a_steady_turn_has_the_turning_radius_and_closes_its_circle():
    radius, speed, tau_r, dt = 250.0, 6.0, 2.0, 0.25
    dyn = ShipDynamics(yaw_time_constant_s=tau_r, turning_radius_m=radius)
    tr = Traffic([target("a", Course(0.0, 0.0, 0.0, speed), dynamics=dyn)], own_state())
    x = own_state()
    period = 2 * math.pi * radius / speed  # 262 s
    steps = int(round((20 * tau_r + 2 * period) / dt))
    track = np.empty((steps, 2))
    for k in range(steps):
        # a course always 1 rad to starboard: the heading loop asks for 1 / (4 tau_r) = 0.125
        # rad/s, far above U / R = 0.024 rad/s, so the turn is rate-limited throughout
        tr.T[0, T_COURSE_CMD] = tr.T[0, T_HEADING] + 1.0
        tr.step(x, dt, k * dt)
        track[k] = tr.T[0, T_NORTH], tr.T[0, T_EAST]
    assert tr.T[0, T_YAW_RATE] == pytest.approx(speed / radius, rel=1e-12)
    # after 20 yaw time constants the rate is U / R to e^-20 = 2e-9; the chord step puts
    # every point of a steady turn on a circle of radius U / r, so the fit matches R to the
    # rounding of the fit (1e-9 relative allowed)
    steady = track[int(20 * tau_r / dt) :]
    _, _, r, residual = fit_circle(steady[:, 0], steady[:, 1])
    assert r == pytest.approx(radius, rel=1e-9)
    assert np.abs(residual).max() < 1e-6
    # the circle closes: one period later the target is where it was (to a micrometre)
    k0 = int(20 * tau_r / dt)
    k1 = k0 + int(round(period / dt))
    # the period is not a whole number of steps: allow the arc of the leftover fraction
    leftover = abs(period / dt - round(period / dt)) * speed * dt
    assert math.dist(track[k0], track[k1]) <= leftover + 1e-6


def test_a_course_change_is_critically_damped_and_to_starboard_for_a_positive_change():
    dyn = ShipDynamics(yaw_time_constant_s=10.0, turning_radius_m=100.0)
    tr = Traffic([target("a", Course(0.0, 0.0, 0.5, 5.0), dynamics=dyn)], own_state())
    tr.retask("a", Course(0.0, 0.0, 0.5 + math.radians(20.0), 5.0))
    _, rows = sail(tr, own_state(), 0.5, 400)
    change = wrap(rows[:, 0, T_HEADING] - 0.5)
    assert (np.diff(change) >= -1e-15).all()  # turns one way only: to starboard
    # critically damped (K = 1 / (4 T_r)): no overshoot beyond the rounding, and within
    # 0.1 % of the new course after 200 s = 20 T_r ((1 + t/2T) e^(-t/2T) = 5e-4 at t = 20 T)
    assert change.max() <= math.radians(20.0) + 1e-12
    assert change[-1] == pytest.approx(math.radians(20.0), rel=1e-3)


# --- routes ------------------------------------------------------------------------------

SQUARE = (
    Waypoint(0.0, 0.0, 0.0),
    Waypoint(2000.0, 0.0, 6.0),
    Waypoint(2000.0, 2000.0, 4.0),
    Waypoint(0.0, 2000.0, 5.0),
)


def test_a_route_target_reaches_every_waypoint_and_stops_at_the_end():
    tr = Traffic([target("a", Route(SQUARE))], own_state())
    assert tr.T[0, T_WAYPOINT] == 1 and tr.T[0, T_SPEED] == 6.0 and tr.T[0, T_HEADING] == 0.0
    _, rows = sail(tr, own_state(), 1.0, 2500)
    r = rows[:, 0]
    # every waypoint is passed within the acceptance radius (the turning radius, 300 m)
    for w in SQUARE[1:]:
        assert np.hypot(r[:, T_NORTH] - w.north, r[:, T_EAST] - w.east).min() <= 300.0
    # in order, each leg at its waypoint's speed, and stopped at the last
    wp = r[:, T_WAYPOINT]
    assert (np.diff(wp) >= 0).all() and set(wp) == {1.0, 2.0, 3.0}
    sailing = r[:, T_MODE] == MODE_SAIL
    speeds = np.array([w.speed for w in SQUARE])
    assert (r[sailing, T_SPEED_CMD] == speeds[wp[sailing].astype(int)]).all()
    assert r[-1, T_MODE] == MODE_STOPPED and r[-1, T_SPEED_CMD] == 0.0
    assert r[-1, T_SPEED] < 1e-3  # several speed time constants after stopping
    # it stops about one speed time constant's run (U tau = 300 m) past the acceptance circle
    assert math.hypot(r[-1, T_NORTH] - 0.0, r[-1, T_EAST] - 2000.0) < 300.0


def test_a_looping_route_goes_round_again():
    loop = (Waypoint(0.0, 0.0, 5.0), *SQUARE[1:])  # back to the first at 5 m/s
    tr = Traffic([target("a", Route(loop, loop=True, acceptance_m=150.0))], own_state())
    _, rows = sail(tr, own_state(), 1.0, 5000)
    wp = rows[:, 0, T_WAYPOINT].astype(int)
    changes = wp[1:][np.diff(wp) != 0]
    assert (rows[:, 0, T_MODE] == MODE_SAIL).all()
    # after the last waypoint (3) the first (0) again, and round: 2 3 0 1 2 3 0 ...
    assert list(changes[:6]) == [2, 3, 0, 1, 2, 3]
    for w in SQUARE:
        d = np.hypot(rows[:, 0, T_NORTH] - w.north, rows[:, 0, T_EAST] - w.east)
        assert d.min() <= 150.0


# --- encounter placement -----------------------------------------------------------------


def sampled_cpa(start: Course, own_course, own_speed, horizon):
    """The CPA by brute force: both straight tracks sampled every few milliseconds, the
    smallest distance and when; and where the target then is, seen from the own ship
    (along its course, across to starboard), by a complex rotation."""
    t = np.linspace(0.0, horizon, 400_001)
    own = (OWN_N + 1j * OWN_E) + own_speed * cmath.exp(1j * own_course) * t
    tgt = (start.north + 1j * start.east) + start.speed * cmath.exp(1j * start.course) * t
    rel = tgt - own
    k = int(np.argmin(np.abs(rel)))
    seen = rel[k] * cmath.exp(-1j * own_course)
    return abs(rel[k]), t[k], seen.real, seen.imag, t[1] - t[0]


SIDE_OF = {
    "ahead": lambda along, across: along > 1e-3,
    "astern": lambda along, across: along < -1e-3,
    "port": lambda along, across: across < -1e-3,
    "starboard": lambda along, across: across > 1e-3,
}
CASES = [
    # (encounter, expected side, relative course or None for the bearing solve)
    (Encounter(120.0, 500.0, 5.0, situation="head-on"), "port", math.pi),
    (Encounter(120.0, 500.0, 5.0, situation="head-on", passes="starboard"), "starboard", math.pi),
    (Encounter(200.0, 400.0, 6.0, situation="crossing-give-way"), "ahead", -math.pi / 2),
    (Encounter(200.0, 400.0, 6.0, situation="crossing-give-way", passes="astern"), "astern", None),
    (Encounter(150.0, 700.0, 4.0, situation="crossing-stand-on"), "ahead", math.pi / 2),
    (Encounter(150.0, 700.0, 4.0, situation="crossing-stand-on", passes="port"), "port", None),
    (Encounter(80.0, 600.0, 3.0, situation="overtaking"), "port", 0.0),
    (Encounter(80.0, 600.0, 7.5, situation="overtaken", passes="starboard"), "starboard", 0.0),
    (Encounter(300.0, 450.0, 5.5, relative_course=2.0), "ahead", 2.0),
    (Encounter(0.0, 450.0, 5.5, relative_course=2.0, passes="astern"), None, 2.0),
    (Encounter(100.0, 600.0, 7.0, relative_bearing=math.radians(45.0)), "ahead", None),
    (Encounter(250.0, 500.0, 7.0, relative_bearing=-2.1, passes="port"), "port", None),
    (Encounter(100.0, 300.0, 3.0, relative_bearing=0.1, own_speed=6.0), "ahead", None),
]


@pytest.mark.parametrize("encounter, side, rel_course", CASES)
def test_an_encounter_is_placed_for_its_cpa_tcpa_and_side(encounter, side, rel_course):
    start = place(encounter, OWN_N, OWN_E, OWN_COURSE, OWN_SPEED)
    own_speed = encounter.own_speed if encounter.own_speed is not None else OWN_SPEED
    assert start.speed == encounter.speed
    if rel_course is not None:
        assert wrap(start.course - OWN_COURSE - rel_course) == pytest.approx(0.0, abs=1e-12)
    if encounter.relative_bearing is not None:
        seen = math.atan2(start.east - OWN_E, start.north - OWN_N) - OWN_COURSE
        assert wrap(seen - encounter.relative_bearing) == pytest.approx(0.0, abs=1e-9)
    cpa, tcpa, along, across, step = sampled_cpa(
        start, OWN_COURSE, own_speed, 2.0 * encounter.tcpa_s
    )
    # sampled every 2 tcpa / 4e5 s (<= 3.5 ms): the time is right to a step, and the sampled
    # minimum overshoots the CPA by at most v_r^2 step^2 / (2 cpa) (micrometres)
    assert tcpa == pytest.approx(encounter.tcpa_s, abs=step)
    assert cpa == pytest.approx(encounter.cpa_m, abs=1e-3)
    if side is not None:
        assert SIDE_OF[side](along, across), (along, across)


@pytest.mark.parametrize(
    "encounter, words",
    [
        (Encounter(100.0, 600.0, 5.0, situation="head-on", passes="ahead"), ["ahead", "port"]),
        (Encounter(100.0, 600.0, 3.0, situation="overtaken"), ["faster", "overtaking"]),
        (Encounter(100.0, 600.0, 6.0, situation="overtaking"), ["slower", "overtaken"]),
        (Encounter(100.0, 600.0, 3.0, situation="overtaking", passes="astern"), ["astern"]),
        (Encounter(100.0, 600.0, 5.0, relative_course=0.0), ["never changes"]),
        (Encounter(100.0, 600.0, 5.0, situation="head-on", relative_course=1.0), ["exactly one"]),
        (Encounter(100.0, 600.0, 5.0), ["exactly one"]),
        (Encounter(100.0, 600.0, 5.0, situation="crossing"), ["head-on"]),
        (Encounter(-1.0, 600.0, 5.0, situation="head-on"), ["cpa_m"]),
        (Encounter(100.0, 600.0, 5.0, situation="head-on", passes="aft"), ["astern"]),
        # slower than the own ship, a target cannot close from astern
        (Encounter(100.0, 600.0, 2.0, relative_bearing=math.pi), ["bearing", "speed"]),
    ],
)
def test_an_impossible_encounter_says_why(encounter, words):
    with pytest.raises(ValueError) as err:
        place(encounter, OWN_N, OWN_E, OWN_COURSE, OWN_SPEED)
    for word in words:
        assert word in str(err.value)


def test_cpa_tcpa_helper():
    # a target 1000 m north sailing east at 10 m/s past a still own ship: CPA 1000 m now
    assert cpa_tcpa(1000.0, 0.0, 0.0, 10.0) == (1000.0, 0.0)
    cpa, tcpa = cpa_tcpa(-300.0, 400.0, 3.0, -4.0)  # straight at it: 500 m at 5 m/s
    assert cpa == pytest.approx(0.0, abs=1e-12) and tcpa == pytest.approx(100.0)
    assert cpa_tcpa(30.0, 40.0, 0.0, 0.0) == (50.0, 0.0)  # no relative motion


# --- COLREG ------------------------------------------------------------------------------

# own-ship situation -> (what the target makes of it, whether it gives way), target speed
COLREG = {
    "head-on": (SIT_HEAD_ON, True, 5.0),
    "crossing-stand-on": (SIT_CROSSING_GIVE_WAY, True, 5.0),  # the own ship on its starboard
    "crossing-give-way": (SIT_CROSSING_STAND_ON, False, 5.0),  # the own ship on its port
    "overtaken": (SIT_OVERTAKING, True, 8.0),  # it comes up from astern, faster
    "overtaking": (SIT_OVERTAKEN, False, 3.0),  # the own ship comes up on it
}


def encounter_run(situation, kind, passes=""):
    sit, _, speed = COLREG[situation]
    enc = Encounter(50.0, 600.0, speed, situation=situation, passes=passes)
    tr = Traffic([target("a", enc, kind)], own_state())
    own, rows = sail(tr, own_state(), 1.0, 2400)
    return tr, own, rows


@pytest.mark.parametrize("situation", list(COLREG))
def test_colreg_targets_give_way_or_stand_on(situation):
    sit, gives_way, _ = COLREG[situation]
    tr, own, rows = encounter_run(situation, "colreg")
    _, _, hold = encounter_run(situation, "hold")
    r, h = rows[:, 0], hold[:, 0]
    base = r[0, T_HEADING]
    # the hold twin never judges nor turns, and passes at the placed CPA (50 m, to the
    # rounding of one-second samples of the range)
    assert (h[:, T_HEADING] == base).all() and (h[:, T_SITUATION] == SIT_NONE).all()
    assert h[-1, T_MIN_RANGE] == pytest.approx(50.0, abs=5.0)
    assert r[-1, T_SITUATION] == sit
    turned = wrap(r[:, T_HEADING] - base)
    if not gives_way:
        # rule 17: the stand-on vessel keeps her course and speed, to the bit
        assert (r[:, T_HEADING] == base).all() and (r[:, T_MODE] == MODE_SAIL).all()
        return
    # it turns to starboard, up to the give-way turn (60 deg) and no further (critically
    # damped); it may come back before the full turn once its own course would pass clear
    assert (r[:, T_MODE] == MODE_GIVE_WAY).any()
    # (its way back to the base course may pass it by a few nanoradians: the loop's input is
    # held over each step, which shifts its damping a hair from critical)
    assert turned.min() > -1e-6
    assert math.radians(30.0) < turned.max() <= math.radians(60.0) + 1e-9
    # passes much wider than it would have on its course,
    assert r[-1, T_MIN_RANGE] > h[-1, T_MIN_RANGE] + 300.0
    # and comes back to its course once clear
    assert r[-1, T_MODE] == MODE_SAIL and r[-1, T_COURSE_CMD] == base
    assert abs(turned[-1]) < 1e-3


def test_the_give_way_crossing_target_passes_astern_of_the_own_ship():
    tr, own, rows = encounter_run("crossing-stand-on", "colreg", passes="ahead")
    _, _, hold = encounter_run("crossing-stand-on", "hold", passes="ahead")

    def crossing(rows):
        # where the target crosses the own ship's track: along its course (+ ahead) at the
        # step where its side (across, + starboard) changes sign
        rel = (rows[:, 0, T_NORTH] - own[:, 0]) + 1j * (rows[:, 0, T_EAST] - own[:, 1])
        seen = rel * cmath.exp(-1j * OWN_COURSE)
        k = np.flatnonzero(np.diff(np.sign(seen.imag)) != 0)[0]
        return seen.real[k]

    assert crossing(hold) > 0.0  # on its course it would have crossed ahead
    assert crossing(rows) < -100.0  # giving way, it crosses astern


def test_a_hold_target_retasked_while_giving_way_sails_again():
    enc = Encounter(50.0, 600.0, 5.0, situation="head-on")
    tr = Traffic([target("a", enc, "colreg")], own_state())
    sail(tr, own_state(), 1.0, 330)
    assert tr.T[0, T_MODE] == MODE_GIVE_WAY
    tr.retask("a", behaviour=Behaviour("hold"))
    assert tr.T[0, T_MODE] == MODE_SAIL and tr.T[0, T_COURSE_CMD] == tr.T[0, T_BASE_COURSE]
    assert tr.targets[0].behaviour.kind == "hold"
    _, rows = sail(tr, own_state(), 1.0, 200)
    assert (rows[:, 0, T_MODE] == MODE_SAIL).all()  # and stays on its course


def test_a_route_target_giving_way_keeps_its_waypoint_and_finishes_its_route():
    # its first leg meets the own ship head-on (the own ship sails north from the origin)
    route = Route(
        (
            Waypoint(4000.0, 0.0, 0.0),
            Waypoint(-2000.0, 0.0, 5.0),
            Waypoint(-2000.0, -2000.0, 5.0),
        )
    )
    tr = Traffic([target("a", route, "colreg")], own_state(0.0, 0.0, 0.0, 5.0))
    _, rows = sail(tr, own_state(0.0, 0.0, 0.0, 5.0), 1.0, 2500)
    r = rows[:, 0]
    giving_way = r[:, T_MODE] == MODE_GIVE_WAY
    assert giving_way.any() and r[-1, T_SITUATION] == SIT_HEAD_ON
    assert (r[giving_way, T_WAYPOINT] == 1).all()  # still bound for the waypoint it had
    assert r[:, T_MIN_RANGE].min() > 500.0  # (its route alone would have run it down)
    for w in route.waypoints[1:]:
        assert np.hypot(r[:, T_NORTH] - w.north, r[:, T_EAST] - w.east).min() <= 300.0
    assert r[-1, T_MODE] == MODE_STOPPED


# --- the Traffic container ---------------------------------------------------------------


def test_traffic_add_remove_retask_and_summary():
    own = own_state()
    tr = Traffic([target("a", Course(0.0, 0.0, 0.0, 3.0))], own)
    with pytest.raises(ValueError, match="already"):
        tr.add(target("a", Course(0.0, 0.0, 0.0, 3.0)), own)
    with pytest.raises(ValueError, match="unique"):
        Traffic([target("a", Course(0, 0, 0, 1)), target("a", Course(0, 0, 0, 1))], own)
    tr.add(target("b", Route(SQUARE), mmsi=257000002), own)
    tr.add(target("c", Encounter(100.0, 300.0, 4.0, situation="head-on"), mmsi=257000003), own)
    assert [t.name for t in tr.targets] == ["a", "b", "c"] and tr.index("c") == 2
    assert tr.P[1, 9] == 0 and tr.WP.shape == (4, 3)  # b's waypoints, the first rows
    sail(tr, own, 1.0, 100)
    tr.remove("a")
    assert tr.index("b") == 0 and tr.T.shape[0] == 2
    # a course keeps the present position and takes the new course and speed
    where = tr.T[1, [T_NORTH, T_EAST]].copy()
    tr.retask("c", Course(9999.0, 9999.0, 1.0, 2.0))
    assert (tr.T[1, [T_NORTH, T_EAST]] == where).all()
    assert tr.T[1, T_COURSE_CMD] == 1.0 and tr.T[1, T_SPEED_CMD] == 2.0
    assert (tr.targets[1].motion.north, tr.targets[1].motion.east) == tuple(where)
    # a route sails from where it is to the route's first waypoint
    tr.retask("c", Route((Waypoint(5000.0, 5000.0, 7.0),)))
    assert tr.T[1, T_WAYPOINT] == 0 and tr.T[1, T_SPEED_CMD] == 7.0 and tr.WP.shape == (5, 3)
    assert isinstance(tr.targets[1].motion, Route)
    view = tr.view()
    assert view.state.shape == (2, T_SIZE) and view.targets == tr.targets
    view.state[:] = 0.0
    assert tr.T[0, T_SPEED] != 0.0  # a copy
    s = tr.summary()
    assert set(s) == {"b", "c"}
    assert set(s["c"]) == {"mmsi", "min_range_m", "min_range_t", "cpa_m", "tcpa_s"}
    assert s["c"]["mmsi"] == 257000003 and s["c"]["min_range_m"] < 6000.0
    with pytest.raises(KeyError):
        tr.remove("a")
    with pytest.raises(ValueError, match="'z'"):
        tr.add(target("z", Encounter(100.0, 300.0, 4.0, situation="head-on", passes="ahead")), own)


def test_a_target_prepared_off_the_tick_joins_as_one_added_and_the_arrays_never_move():
    """A target added while running grew T, P and WP in the tick (a copy of every row per
    target, 2,000 of them taken at run time); now its rows are built beforehand (``prepare``)
    and copied into room the arrays have had from the start, up to a bench's cap."""
    from hild.traffic.targets import MAX_TARGETS
    from hild.traffic.traffic import prepare

    own = own_state()
    added, appended = Traffic([], own), Traffic([], own)
    where = [a.__array_interface__["data"][0] for a in (appended.T, appended.P)]
    fleet = mixed_fleet()
    for i in range(MAX_TARGETS):
        t = target(f"t{i}", Course(float(i), 0.0, 0.0, 3.0), mmsi=i + 1)
        new = fleet[i] if i < len(fleet) else t
        added.add(new, own, 0.5)
        appended.append(prepare(new, own, 0.0), own, 0.5)  # (its rows made at another time)
    assert appended.T.tobytes() == added.T.tobytes() and appended.n == MAX_TARGETS
    assert appended.P.tobytes() == added.P.tobytes()
    assert appended.WP.tobytes() == added.WP.tobytes() and appended.WP.shape == (4, 3)
    assert [a.__array_interface__["data"][0] for a in (appended.T, appended.P)] == where
    with pytest.raises(ValueError, match=f"the run has {MAX_TARGETS} targets, at most "):
        appended.add(target("one-more", Course(0.0, 0.0, 0.0, 1.0)), own)
    prepared = prepare(target("x", Course(0.0, 0.0, 0.0, 1.0)), own)
    assert not prepared.row.flags.writeable  # (a record on the control queue: read-only)
    # removed, the rows close up in place and the waypoints are packed again
    appended.remove("r")
    assert appended.n == MAX_TARGETS - 1 and appended.WP.shape == (0, 3)
    assert appended.T.__array_interface__["data"][0] == where[0]
    assert appended.T[3].tobytes() == added.T[4].tobytes()
    sail(appended, own, 1.0, 10)  # and it steps


# --- determinism and allocation ------------------------------------------------------------


def mixed_fleet():
    return [
        target("h", Encounter(50.0, 600.0, 5.0, situation="head-on"), "colreg", mmsi=1),
        target("x", Encounter(50.0, 500.0, 6.0, situation="crossing-stand-on"), "colreg", mmsi=2),
        target("s", Encounter(50.0, 500.0, 6.0, situation="crossing-give-way"), "colreg", mmsi=3),
        target("r", Route(SQUARE), "colreg", mmsi=4),
        target("c", Course(-500.0, 300.0, 4.0, 3.0), mmsi=5),
    ]


def test_two_runs_are_identical_to_the_bit():
    runs = []
    for _ in range(2):
        tr = Traffic(mixed_fleet(), own_state())
        _, rows = sail(tr, own_state(), 0.1, 8000)
        runs.append(rows)
    assert runs[0].tobytes() == runs[1].tobytes()
    # and it did something worth comparing: a give-way and a route under way
    assert (runs[0][:, 0, T_MODE] == MODE_GIVE_WAY).any()


def test_step_allocates_no_python_memory_and_keeps_its_arrays():
    tr = Traffic(mixed_fleet(), own_state())
    x = own_state()
    tr.step(x, 0.1, 0.0)  # compiled and warm
    ids = (id(tr.T), id(tr.P), id(tr.WP))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for k in range(1, 5001):
            tr.step(x, 0.1, k * 0.1)
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # a numpy temporary per step (a row is 160 bytes, the five rows 800) would show in the
    # peak; what is left is Python's float boxing of the loop's arguments
    assert after - before < 256 and peak - before < 512
    assert (id(tr.T), id(tr.P), id(tr.WP)) == ids


NRT_PROBE = """
import numpy as np
from numba import njit
from numba.core.runtime import rtsys
from hild.traffic.kernel import traffic_step
from hild.traffic.targets import Behaviour, Encounter, Identity, Route, Target, Waypoint
from hild.traffic.traffic import Traffic

@njit
def touch(T, P, WP, n, x, dt, t):  # the same arguments, boxed the same way, no work
    T[0, 0] += 0.0

x = np.zeros(12)
x[5], x[6] = 0.3, 5.0
ident = Identity(1, "A")
fleet = [
    Target(s, ident, Encounter(50.0, 100.0, 7.0, situation=s), Behaviour("colreg"))
    for s in ("head-on", "crossing-give-way", "crossing-stand-on", "overtaken")
] + [Target("r", ident, Route((Waypoint(0, 0, 0), Waypoint(10, 10, 3), Waypoint(9, 0, 3))))]
tr = Traffic(fleet, x)
args = (tr.T, tr.P, tr.WP, tr.n, x, 1.0, 0.0)
traffic_step(*args); touch(*args)
def count(f, calls):
    before = rtsys.get_allocation_stats().alloc
    for _ in range(calls):
        f(*args)
    return rtsys.get_allocation_stats().alloc - before
# 200 one-second steps: the encounters judged, turned and cleared, the route run and stopped
print(count(traffic_step, 200), count(touch, 200), int((tr.T[:, 16] != 0).sum()), tr.T[4, 8])
"""


def test_the_compiled_step_allocates_nothing_beyond_its_arguments():
    # numba counts its heap allocations only with NRT stats on at import. A call of a plain
    # compiled function that only takes the same arguments allocates their boxes (the counter
    # counts); the step, compiled without numba's runtime (hild/compiled.py), allocates not
    # even those, and could not compile an allocation of its own
    env = dict(os.environ, NUMBA_NRT_STATS="1")
    out = subprocess.run(
        [sys.executable, "-c", NRT_PROBE],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert int(out[0]) == 0 and int(out[1]) > 0
    assert int(out[2]) == 4 and float(out[3]) == MODE_STOPPED  # all judged, the route run


def test_the_kernel_steps_only_the_first_n_rows():
    tr = Traffic(mixed_fleet(), own_state())
    T = tr.T.copy()
    traffic_step(T, tr.P, tr.WP, 2, own_state(), 1.0, 0.0)
    assert (T[2:] == tr.T[2:]).all() and (T[:2] != tr.T[:2]).any()
