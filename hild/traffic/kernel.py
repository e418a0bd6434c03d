"""The compiled traffic step: other ships' guidance, COLREG behaviour and motion.

``traffic_step`` advances the first n rows of T (hild/traffic/layout.py) by dt, judged
against the own ship's state vector at the step's start; it allocates nothing, and the same
arrays and inputs give the same result bit for bit.

Each target is a point that sails along its heading (no drift: heading = course over
ground) with a first-order speed and a first-order yaw rate, the yaw rate no higher than
speed over turning radius (the Nomoto-like models of traffic simulators, e.g. Fossen,
Handbook of Marine Craft Hydrodynamics and Motion Control, 2nd ed., sec. 7.2, first-order
Nomoto T r' + r = K delta with the rudder replaced by a desired yaw rate). The first-order
lags are stepped by their exact solutions for inputs held over the step, and the position by
the exact chord of the arc sailed, so a course held is a straight line at the speed to the
last bit a float allows and a steady turn closes its circle.

The order within a step, per target: (1) range, bearing, CPA and TCPA from the own ship at
the step's start (time t), the smallest range so far; (2) behaviour: give way or come back;
(3) guidance: course and speed commands; (4) dynamics from t to t + dt. Once the own ship
has stepped to t + dt too, ``traffic_geometry`` works out the geometry again (the
simulation calls it), so that what is reported of a target is of one instant.

A fleet (several own ships) steps the traffic with ``traffic_fleet_tick`` instead, the same
order against every boat's state (each target judging the boat that threatens it most: see
"a fleet" below); the one-boat kernels above are untouched by it.
"""

import math

import numpy as np
from numba import njit

from hild.compiled import kernel
from hild.traffic import layout as L
from hild.traffic.layout import (
    BEHAVIOUR_COLREG,
    MODE_GIVE_WAY,
    MODE_SAIL,
    MODE_STOPPED,
    MOTION_ROUTE,
    P_ACCEPTANCE,
    P_ACT_RANGE,
    P_ACT_TCPA,
    P_BEHAVIOUR,
    P_MOTION,
    P_SAFE_CPA,
    P_SPEED_TAU,
    P_TURN,
    P_TURN_RADIUS,
    P_WP_COUNT,
    P_WP_FIRST,
    P_WP_LOOP,
    P_YAW_TAU,
    SIT_CROSSING_GIVE_WAY,
    SIT_CROSSING_STAND_ON,
    SIT_HEAD_ON,
    SIT_OVERTAKEN,
    SIT_OVERTAKING,
    T_BASE_COURSE,
    T_BEARING,
    T_COURSE_CMD,
    T_CPA,
    T_EAST,
    T_ENGAGED,
    T_HEADING,
    T_MIN_RANGE,
    T_MIN_RANGE_T,
    T_MODE,
    T_NORTH,
    T_OWN,
    T_RANGE,
    T_SITUATION,
    T_SPEED,
    T_SPEED_CMD,
    T_TCPA,
    T_WAYPOINT,
    T_YAW_RATE,
    WP_EAST,
    WP_NORTH,
    WP_SPEED,
)

TWO_PI = 2.0 * math.pi

# COLREG rule 13(b): a vessel is overtaking when it comes up from more than 22.5 deg abaft
# the other's beam (where it would see only her stern light): beyond 90 + 22.5 = 112.5 deg
# relative bearing on either side. Rule 15's crossing sectors share this limit.
ABAFT_BEAM = math.radians(112.5)
# Rule 14(b): head-on when a vessel sees the other "ahead or nearly ahead", her masthead lights
# in line or nearly in line, on "reciprocal or nearly reciprocal courses". Nearly ahead: 6 deg,
# about the widest angle at which both sidelights of the other are seen together (rule 21(b)
# sidelights show to 22.5 deg abaft the beam, their cut-off across the bow is a few degrees in
# practice; annex I 9(a)(i) lets them fade over 1 to 3 deg outside their sector), and the
# sector used for rule 14 by e.g. Woerner, "COLREGS-compliant autonomous collision avoidance",
# MIT thesis 2014, and Tam & Bucknall, Ocean Eng. 2010. Nearly reciprocal: within 15 deg, so
# that a yawing or slightly crossing vessel meeting end on still counts as head-on (the
# same references use 10 to 15 deg); a wider angle would swallow fine crossings, which
# rule 15 governs.
HEAD_ON_BEARING = math.radians(6.0)
HEAD_ON_COURSE = math.radians(15.0)


@njit(cache=True, inline="always")
def wrap_pi(a):
    """An angle in [-pi, pi)."""
    return (a + math.pi) % TWO_PI - math.pi


@njit(cache=True, inline="always")
def wrap_2pi(a):
    """An angle in [0, 2 pi) (the remainder of a tiny negative angle rounds to 2 pi)."""
    a = a % TWO_PI
    if a >= TWO_PI:
        a -= TWO_PI
    return a


@kernel
def cpa_tcpa(rel_north, rel_east, rel_vn, rel_ve):
    """Closest point of approach [m] and the time to it [s, negative: passed] of a target at
    (rel_north, rel_east) from the own ship with the velocity (rel_vn, rel_ve) relative to
    it (its NED velocity minus the own ship's), both holding course and speed.

    The range |r + v t| is smallest at t = -(r . v) / |v|^2. With no relative motion the
    range never changes: the CPA is the range now and the TCPA 0.
    """
    v2 = rel_vn * rel_vn + rel_ve * rel_ve
    tcpa = 0.0
    if v2 > 0.0:
        tcpa = -(rel_north * rel_vn + rel_east * rel_ve) / v2
    cpa = math.hypot(rel_north + rel_vn * tcpa, rel_east + rel_ve * tcpa)
    return cpa, tcpa


@kernel
def own_velocity(x):
    """The own ship's velocity over ground, north and east [m/s], from hild's state vector
    (x[3:6] roll, pitch, heading; x[6:9] body velocities u, v, w): the north and east rows of
    R(phi, theta, psi) [u, v, w], Fossen eq. 2.18. (With the hull's trim u alone is not the
    speed over ground: 6e-5 m/s apart at Odin's 0.3 deg under way.)"""
    cph = math.cos(x[3])
    sph = math.sin(x[3])
    cth = math.cos(x[4])
    sth = math.sin(x[4])
    cps = math.cos(x[5])
    sps = math.sin(x[5])
    u, v, w = x[6], x[7], x[8]
    vn = cps * cth * u + (-sps * cph + cps * sth * sph) * v + (sps * sph + cps * cph * sth) * w
    ve = sps * cth * u + (cps * cph + sph * sth * sps) * v + (-cps * sph + sth * sps * cph) * w
    return vn, ve


@njit(cache=True, inline="always")
def lag_factor(dt, tau):
    """1 - exp(-dt / tau): the fraction of the way a first-order lag goes in dt; a lag with
    no time constant follows at once."""
    if tau > 0.0:
        return -math.expm1(-dt / tau)
    return 1.0


@njit(cache=True, inline="always")
def situation(bearing_own_from_target, target_heading, own_bearing_rel, own_heading, faster):
    """The situation as the target judges it (COLREG rules 13 to 15), from where the own
    ship is seen relative to the target's heading, where the target is seen relative to the
    own ship's heading, and whether the target is the faster."""
    rel_t = wrap_pi(bearing_own_from_target - target_heading)  # own ship seen from the target
    if abs(own_bearing_rel) > ABAFT_BEAM and faster:
        return SIT_OVERTAKING  # rule 13: it comes up from abaft the own ship's beam
    if abs(rel_t) > ABAFT_BEAM:
        return SIT_OVERTAKEN  # rule 13: the own ship comes up from abaft its beam
    reciprocal = abs(wrap_pi(own_heading - target_heading - math.pi))
    if abs(rel_t) <= HEAD_ON_BEARING and reciprocal <= HEAD_ON_COURSE:
        return SIT_HEAD_ON  # rule 14
    if rel_t >= 0.0:
        return SIT_CROSSING_GIVE_WAY  # rule 15: the own ship on its starboard side
    return SIT_CROSSING_STAND_ON  # rule 15 / 17: the own ship on its port side


@njit(cache=True, inline="always")
def relative(T, i, own_n, own_e, own_vn, own_ve):
    """Target i seen from an own ship at (own_n, own_e) moving at (own_vn, own_ve): returns
    (dn, de, range, cpa, tcpa), dn and de its offset from the own ship. Writes nothing."""
    heading = T[i, T_HEADING]
    speed = T[i, T_SPEED]
    dn = T[i, T_NORTH] - own_n
    de = T[i, T_EAST] - own_e
    rng = math.hypot(dn, de)
    cpa, tcpa = cpa_tcpa(
        dn, de, speed * math.cos(heading) - own_vn, speed * math.sin(heading) - own_ve
    )
    return dn, de, rng, cpa, tcpa


@njit(cache=True, inline="always")
def geometry(T, i, own_n, own_e, own_vn, own_ve, t):
    """Target i's range, true bearing, CPA and TCPA from the own ship (at own_n, own_e moving
    at own_vn, own_ve) into its row, and its smallest range so far; returns (dn, de, range,
    cpa, tcpa)."""
    dn, de, rng, cpa, tcpa = relative(T, i, own_n, own_e, own_vn, own_ve)
    T[i, T_RANGE] = rng
    T[i, T_BEARING] = wrap_2pi(math.atan2(de, dn))
    T[i, T_CPA] = cpa
    T[i, T_TCPA] = tcpa
    if rng < T[i, T_MIN_RANGE]:
        T[i, T_MIN_RANGE] = rng
        T[i, T_MIN_RANGE_T] = t
    return dn, de, rng, cpa, tcpa


@kernel
def traffic_geometry(T, n, own_x, t):
    """Every target's geometry against the own ship at t (after both have stepped to t), so
    that what is reported of a target (its position and its range, CPA and TCPA) is of one
    instant. Allocates nothing."""
    own_vn, own_ve = own_velocity(own_x)
    for i in range(n):
        geometry(T, i, own_x[0], own_x[1], own_vn, own_ve, t)


@njit(cache=True, inline="always")
def threatens(P, i, rng, cpa, tcpa):
    """Whether an own ship at range ``rng`` with the CPA ``cpa`` in ``tcpa`` makes colreg
    target i act: a collision threatens (the CPA under the safe CPA, ahead) and it is near
    (within the action range, or the CPA within the action time)."""
    threat = cpa < P[i, P_SAFE_CPA] and tcpa > 0.0
    near = rng <= P[i, P_ACT_RANGE] or tcpa <= P[i, P_ACT_TCPA]
    return threat and near


@njit(cache=True, inline="always")
def behave(
    T,
    P,
    WP,
    i,
    mode,
    route,
    heading,
    speed,
    dn,
    de,
    rng,
    cpa,
    tcpa,
    bearing,
    psi,
    own_vn,
    own_ve,
    own_speed,
):
    """Step (2) of target i (the module's order): its behaviour against the own ship seen at
    (dn, de) from it (the target's offset from the own ship) with its range, CPA, TCPA and
    bearing, the own ship's heading psi, velocity (own_vn, own_ve) and speed. Returns its
    mode."""
    # (2) behaviour: only a colreg target manoeuvres, and only for the own ship. It
    # judges an encounter once, when the collision first threatens, and keeps to that
    # judgment until the encounter is over (rule 13(d): a later change of bearing does
    # not make an overtaking vessel a crossing one; rule 17: the stand-on vessel keeps
    # her course and speed), so a crossing target does not turn into an "overtaken" one
    # as the own ship draws abaft its beam.
    if P[i, P_BEHAVIOUR] == BEHAVIOUR_COLREG:
        if T[i, T_ENGAGED] == 1.0:
            # Clear: the range beyond the safe CPA and the CPA passed, judged on the course
            # it would come back to (so that coming back does not make a new threat: an
            # overtaking target turned away falls behind at once, its TCPA negative on the
            # turned course, but would close again on its own), or that course passing
            # wide of the own ship anyway.
            clear = rng > P[i, P_SAFE_CPA]
            if clear and mode == MODE_GIVE_WAY:
                base = T[i, T_BASE_COURSE]
                if route:  # the course its route guidance would steer from here
                    w = int(P[i, P_WP_FIRST] + T[i, T_WAYPOINT])
                    base = math.atan2(
                        WP[w, WP_EAST] - T[i, T_EAST], WP[w, WP_NORTH] - T[i, T_NORTH]
                    )
                cpa_b, tcpa_b = cpa_tcpa(
                    dn, de, speed * math.cos(base) - own_vn, speed * math.sin(base) - own_ve
                )
                clear = tcpa_b < 0.0 or cpa_b >= P[i, P_SAFE_CPA]
            elif clear:
                clear = tcpa < 0.0
            if clear:
                T[i, T_ENGAGED] = 0.0
                if mode == MODE_GIVE_WAY:  # back to its course or route
                    mode = MODE_SAIL
                    T[i, T_COURSE_CMD] = T[i, T_BASE_COURSE]
        elif mode == MODE_SAIL and threatens(P, i, rng, cpa, tcpa):
            sit = situation(
                wrap_2pi(bearing + math.pi),
                heading,
                wrap_pi(bearing - psi),
                psi,
                speed > own_speed,
            )
            T[i, T_SITUATION] = sit
            T[i, T_ENGAGED] = 1.0
            if sit != SIT_CROSSING_STAND_ON and sit != SIT_OVERTAKEN:  # it gives way
                # rules 14, 15, 13; rule 16: early and substantial action
                mode = MODE_GIVE_WAY
                T[i, T_COURSE_CMD] = wrap_2pi(T[i, T_BASE_COURSE] + P[i, P_TURN])
    elif mode == MODE_GIVE_WAY or T[i, T_ENGAGED] == 1.0:
        T[i, T_ENGAGED] = 0.0  # retasked to hold during an encounter
        if mode == MODE_GIVE_WAY:
            mode = MODE_SAIL
            T[i, T_COURSE_CMD] = T[i, T_BASE_COURSE]
    return mode


@njit(cache=True, inline="always")
def sail(T, P, WP, i, mode, route, heading, speed, dt):
    """Steps (3) and (4) of target i (the module's order): guidance, then its motion over dt;
    ``mode`` as its behaviour left it, ``heading`` and ``speed`` at the step's start."""
    # (3) guidance: a course target keeps its commands; a route target steers to its
    # waypoint (line of sight), taking the next within the acceptance radius
    if route and mode == MODE_SAIL:
        first = int(P[i, P_WP_FIRST])
        count = int(P[i, P_WP_COUNT])
        k = int(T[i, T_WAYPOINT])
        for _ in range(count):  # at most once round the route in one step
            w = first + k
            to_go = math.hypot(WP[w, WP_NORTH] - T[i, T_NORTH], WP[w, WP_EAST] - T[i, T_EAST])
            if to_go > P[i, P_ACCEPTANCE]:
                break
            k += 1
            if k >= count:
                if P[i, P_WP_LOOP] == 1.0:
                    k = 0
                else:
                    k = count - 1
                    mode = MODE_STOPPED
                    break
        T[i, T_WAYPOINT] = k
        if mode == MODE_STOPPED:
            T[i, T_SPEED_CMD] = 0.0
        else:
            w = first + k
            course = wrap_2pi(
                math.atan2(WP[w, WP_EAST] - T[i, T_EAST], WP[w, WP_NORTH] - T[i, T_NORTH])
            )
            T[i, T_COURSE_CMD] = course
            T[i, T_BASE_COURSE] = course
            T[i, T_SPEED_CMD] = WP[w, WP_SPEED]
    T[i, T_MODE] = mode

    # (4) dynamics. Speed: U' = (U_cmd - U) / T_U, exact for U_cmd held over the step;
    # the distance sailed is its integral, U_cmd dt + (U0 - U_cmd) T_U (1 - exp(-dt/T_U)).
    u_cmd = T[i, T_SPEED_CMD]
    tau_u = P[i, P_SPEED_TAU]
    a_u = lag_factor(dt, tau_u)
    distance = u_cmd * dt + (speed - u_cmd) * tau_u * a_u if tau_u > 0.0 else u_cmd * dt
    speed_new = speed + (u_cmd - speed) * a_u
    # Heading: desired yaw rate r_d = K e from the heading error e, and T_r r' + r = r_d.
    # With psi' = r and the course held, T_r psi'' + psi' + K psi = K psi_cmd: a second
    # order loop with w_n^2 = K / T_r and 2 zeta w_n = 1 / T_r, so zeta = 1 / (2 sqrt(K T_r)).
    # K = 1 / (4 T_r) makes it critically damped (zeta = 1, w_n = 1 / (2 T_r)): the fastest
    # response that does not overshoot the new course, within 2 % of a course change in
    # about 12 T_r ((1 + w_n t) exp(-w_n t) = 0.02 at w_n t = 5.8).
    tau_r = P[i, P_YAW_TAU]
    error = wrap_pi(T[i, T_COURSE_CMD] - heading)
    r_d = error / (4.0 * tau_r) if tau_r > 0.0 else error / dt
    # a ship turns on a circle no tighter than its turning radius: |r| <= U / R
    r_max = speed / P[i, P_TURN_RADIUS] if P[i, P_TURN_RADIUS] > 0.0 else math.inf
    r_d = min(max(r_d, -r_max), r_max)
    r0 = T[i, T_YAW_RATE]
    a_r = lag_factor(dt, tau_r)
    turned = r_d * dt + (r0 - r_d) * tau_r * a_r if tau_r > 0.0 else r_d * dt
    r_new = r0 + (r_d - r0) * a_r
    # Position: the chord of an arc turned through `turned`, along the mean heading;
    # exact for a steady turn (length 2 R sin(turned / 2) = distance sinc(turned / 2)).
    half = 0.5 * turned
    chord = distance * (math.sin(half) / half if abs(half) > 1e-9 else 1.0 - half * half / 6.0)
    mid = heading + half
    T[i, T_NORTH] += chord * math.cos(mid)
    T[i, T_EAST] += chord * math.sin(mid)
    T[i, T_HEADING] = wrap_2pi(heading + turned)
    T[i, T_SPEED] = speed_new
    T[i, T_YAW_RATE] = r_new


@kernel
def traffic_step(T, P, WP, n, own_x, dt, t):
    """Advance the first n targets from t to t + dt against the own ship's state own_x
    (hild's state vector: x[0], x[1] north, east [m]; x[3:6] roll, pitch, heading psi;
    x[6:9] body velocities u, v, w over ground [m/s]). Allocates nothing."""
    own_n = own_x[0]
    own_e = own_x[1]
    psi = own_x[5]
    own_vn, own_ve = own_velocity(own_x)
    own_speed = math.hypot(own_vn, own_ve)
    for i in range(n):
        heading = T[i, T_HEADING]
        speed = T[i, T_SPEED]
        mode = T[i, T_MODE]
        route = P[i, P_MOTION] == MOTION_ROUTE

        # (1) geometry against the own ship at t
        dn, de, rng, cpa, tcpa = geometry(T, i, own_n, own_e, own_vn, own_ve, t)
        bearing = T[i, T_BEARING]

        # (2) behaviour, (3) guidance, (4) dynamics
        mode = behave(
            T,
            P,
            WP,
            i,
            mode,
            route,
            heading,
            speed,
            dn,
            de,
            rng,
            cpa,
            tcpa,
            bearing,
            psi,
            own_vn,
            own_ve,
            own_speed,
        )
        sail(T, P, WP, i, mode, route, heading, speed, dt)


@kernel
def traffic_tick(T, P, WP, n, own_before, own_after, dt, t, t_after):
    """One tick of the loop in one compiled call: the targets from t to t + dt against the own
    ship at t (``own_before``), then their geometry against it at t + dt (``own_after``), so
    that what is reported of a target is of one instant. (One call rather than two: in a
    real-time loop each call from Python costs far more than its arithmetic.) ``t_after``
    is t + dt as the caller's clock says it (a product of whole steps, not a float sum)."""
    traffic_step(T, P, WP, n, own_before, dt, t)
    traffic_geometry(T, n, own_after, t_after)


# --- a fleet: several own ships -------------------------------------------------------------
# With several boats in the sea (a fleet bench) a target judges each of them, and acts for one:
# while engaged in an encounter, the boat it engaged with (T_OWN), until that encounter is over
# (COLREG rule 8(d): the effectiveness of the action is checked "until the other vessel is
# finally past and clear"; rules 13(d) and 17 as for one boat: its judgment holds); when sailing,
# of the boats that threaten it and are near (``threatens``), the most dangerous:
#
#     the smallest TCPA; of equal TCPAs the smaller CPA; of equal both, the first in the bench.
#
# Why the time first: rule 8(a) asks that action be taken "in ample time", rule 16 that the
# give-way vessel take "early and substantial action", and rule 7(a) that every means be used
# to judge whether risk of collision exists; every boat here already passes the one test of a
# risk (CPA under the safe CPA, ahead), so the encounter whose CPA comes first is the one whose
# time for early action runs out first, and the one to resolve now; another boat's risk is
# judged again, afresh, once that encounter is over. Among equally pressing threats the closer
# pass is the worse (rule 8(d)'s "safe distance"). A limit of this rule, as of one boat's: a
# target engaged with one boat does not act for another until clear of the first (no
# manoeuvre for two vessels at once; a stand-on vessel's last-moment action, rule 17(b), is not
# modelled either).
#
# The row's reported geometry (T_RANGE, T_BEARING, T_CPA, T_TCPA, T_MIN_RANGE, T_MIN_RANGE_T)
# stays against the first boat, what one boat's reports and sensors read; each boat's range now
# and its smallest so far, with when, go in the n x m arrays R, RMIN and RMINT (Traffic's
# range_by_boat, min_range_by_boat, min_range_t_by_boat), one column per boat.


@njit(cache=True, inline="always")
def more_dangerous(tcpa, cpa, best_tcpa, best_cpa):
    """Whether a threat (its TCPA and CPA) is more dangerous than the best so far (see above:
    the sooner; of two as soon, the closer)."""
    return tcpa < best_tcpa or (tcpa == best_tcpa and cpa < best_cpa)


@njit(cache=True, inline="always")
def record_range(R, RMIN, RMINT, i, b, rng, t):
    """Target i's range to boat b at t, and its smallest so far."""
    R[i, b] = rng
    if rng < RMIN[i, b]:
        RMIN[i, b] = rng
        RMINT[i, b] = t


@kernel
def traffic_fleet_step(T, P, WP, n, R, RMIN, RMINT, boats, dt, t):
    """``traffic_step`` for a fleet: advance the first n targets from t to t + dt, each against
    the boat it judges (above), ``boats`` the boats' state vectors at t, one row each (m x
    hild's state size, row 0 the first boat). Every boat's range to every target into R, RMIN
    and RMINT (n x m). Allocates nothing."""
    m = boats.shape[0]
    for i in range(n):
        heading = T[i, T_HEADING]
        speed = T[i, T_SPEED]
        mode = T[i, T_MODE]
        route = P[i, P_MOTION] == MOTION_ROUTE

        # (1) geometry: the row's against the first boat, every boat's range
        vn, ve = own_velocity(boats[0])
        dn, de, rng, cpa, tcpa = geometry(T, i, boats[0, 0], boats[0, 1], vn, ve, t)
        bearing = T[i, T_BEARING]
        colreg = P[i, P_BEHAVIOUR] == BEHAVIOUR_COLREG
        choose = colreg and T[i, T_ENGAGED] != 1.0 and mode == MODE_SAIL
        judged = 0
        if colreg and not choose and T[i, T_ENGAGED] == 1.0:
            judged = int(T[i, T_OWN])  # the boat it engaged with
            if judged < 0 or judged >= m:
                judged = 0
        best_tcpa = math.inf
        best_cpa = math.inf
        for b in range(m):
            if b == 0:
                rng_b, cpa_b, tcpa_b = rng, cpa, tcpa
            else:
                vn_b, ve_b = own_velocity(boats[b])
                _, _, rng_b, cpa_b, tcpa_b = relative(T, i, boats[b, 0], boats[b, 1], vn_b, ve_b)
            record_range(R, RMIN, RMINT, i, b, rng_b, t)
            if (
                choose
                and threatens(P, i, rng_b, cpa_b, tcpa_b)
                and more_dangerous(tcpa_b, cpa_b, best_tcpa, best_cpa)
            ):
                judged, best_tcpa, best_cpa = b, tcpa_b, cpa_b
        if choose:
            T[i, T_OWN] = judged
        if judged != 0:  # the geometry it judges: that boat's
            vn, ve = own_velocity(boats[judged])
            dn, de, rng, cpa, tcpa = relative(T, i, boats[judged, 0], boats[judged, 1], vn, ve)
            bearing = wrap_2pi(math.atan2(de, dn))

        # (2) behaviour against the judged boat, (3) guidance, (4) dynamics
        mode = behave(
            T,
            P,
            WP,
            i,
            mode,
            route,
            heading,
            speed,
            dn,
            de,
            rng,
            cpa,
            tcpa,
            bearing,
            boats[judged, 5],
            vn,
            ve,
            math.hypot(vn, ve),
        )
        sail(T, P, WP, i, mode, route, heading, speed, dt)


@kernel
def traffic_fleet_geometry(T, n, R, RMIN, RMINT, boats, t):
    """``traffic_geometry`` for a fleet: the row's geometry against the first boat (``boats``'
    row 0), every boat's range and smallest so far into R, RMIN and RMINT. Allocates nothing."""
    for b in range(boats.shape[0]):
        vn, ve = own_velocity(boats[b])
        for i in range(n):
            if b == 0:
                _, _, rng, _, _ = geometry(T, i, boats[0, 0], boats[0, 1], vn, ve, t)
            else:
                _, _, rng, _, _ = relative(T, i, boats[b, 0], boats[b, 1], vn, ve)
            record_range(R, RMIN, RMINT, i, b, rng, t)


@kernel
def traffic_fleet_tick(T, P, WP, n, R, RMIN, RMINT, before, after, dt, t, t_after):
    """``traffic_tick`` for a fleet, in one compiled call: the targets from t to t + dt against
    the boats at t (``before``, m x state size), then their geometry against the boats at
    t + dt (``after``)."""
    traffic_fleet_step(T, P, WP, n, R, RMIN, RMINT, before, dt, t)
    traffic_fleet_geometry(T, n, R, RMIN, RMINT, after, t_after)


def warm_up() -> None:
    """Compile (or load from the cache) the step, off the tick: one target, one step."""
    T = np.zeros((1, L.T_SIZE))
    P = np.zeros((1, L.P_SIZE))
    P[0, L.P_SPEED_TAU] = P[0, L.P_YAW_TAU] = P[0, L.P_TURN_RADIUS] = 1.0
    T[0, L.T_MIN_RANGE] = np.inf
    traffic_step(T, P, np.zeros((0, L.WP_SIZE)), 1, np.zeros(12), 0.01, 0.01)
    traffic_geometry(T, 1, np.zeros(12), 0.02)
    traffic_tick(T, P, np.zeros((0, L.WP_SIZE)), 1, np.zeros(12), np.zeros(12), 0.01, 0.01, 0.02)
    R, RMIN, RMINT = np.zeros((1, 2)), np.full((1, 2), np.inf), np.zeros((1, 2))
    boats = np.zeros((2, 12))
    traffic_fleet_tick(
        T, P, np.zeros((0, L.WP_SIZE)), 1, R, RMIN, RMINT, boats, boats, 0.01, 0.01, 0.02
    )
