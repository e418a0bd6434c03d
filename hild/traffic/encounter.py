"""Placing an encounter: where a target starts and what course it sails so that, if it and
the own ship both hold course and speed, it comes closest (``cpa_m``) at ``tcpa_s`` after the
start, on the side of the own ship that was asked for.

With the own ship's velocity v_o and the target's v_t, the relative velocity is
v_r = v_t - v_o. At the CPA the target's position relative to the own ship, r_c, is square
to v_r (the range is smallest where it stops shrinking) and |r_c| = cpa; so
r_c = +-cpa n with n a unit vector square to v_r, and the start is r_0 = r_c - v_r tcpa.
The sign of r_c picks the side; whether it lies ahead or astern, to port or to starboard
is the sign of its component along, or across, the own ship's course.
"""

from __future__ import annotations

import math

from hild.traffic.targets import PASSING_SIDES, SITUATIONS, Course, Encounter

TWO_PI = 2.0 * math.pi

# the target's course minus the own ship's for the named situations (targets.py: named from
# the own ship's side)
SITUATION_COURSE = {
    "head-on": math.pi,
    "crossing-give-way": -0.5 * math.pi,  # from the own ship's starboard side, right to left
    "crossing-stand-on": 0.5 * math.pi,  # from its port side, left to right
    "overtaking": 0.0,  # the own ship overtakes the slower target
    "overtaken": 0.0,  # the faster target overtakes the own ship
}
# a side is possible when r_c has a component this large (relative to the CPA) that way:
# square to it means neither (a head-on target cannot be ahead at a CPA above zero)
SIDE_EPS = 1e-9
# the relative-bearing solve scans the target's course in steps this fine, then bisects
SCAN_STEPS = 3600


def _deg(a: float) -> str:
    return f"{math.degrees(a):.1f} deg"


def _sides(rc_n: float, rc_e: float, own_course: float, cpa: float) -> set[str]:
    """The sides of the own ship that r_c lies on."""
    along = rc_n * math.cos(own_course) + rc_e * math.sin(own_course)
    across = -rc_n * math.sin(own_course) + rc_e * math.cos(own_course)  # + starboard
    eps = SIDE_EPS * max(cpa, 1.0)
    sides = set()
    if along > eps:
        sides.add("ahead")
    if along < -eps:
        sides.add("astern")
    if across > eps:
        sides.add("starboard")
    if across < -eps:
        sides.add("port")
    return sides


def _candidates(
    course: float, speed: float, own_course: float, own_speed: float, cpa: float, tcpa: float
) -> list[tuple[set[str], float, float]]:
    """The two starts (sides, north, east relative to the own ship) for a target course."""
    vr_n = speed * math.cos(course) - own_speed * math.cos(own_course)
    vr_e = speed * math.sin(course) - own_speed * math.sin(own_course)
    vr = math.hypot(vr_n, vr_e)
    if vr == 0.0:
        return []
    out = []
    for sign in (1.0, -1.0):
        rc_n = -sign * cpa * vr_e / vr
        rc_e = sign * cpa * vr_n / vr
        sides = _sides(rc_n, rc_e, own_course, cpa) if cpa > 0.0 else set(PASSING_SIDES)
        out.append((sides, rc_n - vr_n * tcpa, rc_e - vr_e * tcpa))
    return out


def _pick(cands: list[tuple[set[str], float, float]], passes: str) -> tuple[float, float] | None:
    for side in (passes,) if passes else ("ahead", "port"):
        for sides, n, e in cands:
            if side in sides:
                return n, e
    if not passes and cands:
        return cands[0][1], cands[0][2]
    return None


def _check(encounter: Encounter) -> None:
    e = encounter
    given = [
        name
        for name, value in (
            ("situation", e.situation or None),
            ("relative_course", e.relative_course),
            ("relative_bearing", e.relative_bearing),
        )
        if value is not None
    ]
    if len(given) != 1:
        raise ValueError(
            f"an encounter needs exactly one of situation, relative_course or "
            f"relative_bearing; got {', '.join(given) or 'none'}"
        )
    if e.situation and e.situation not in SITUATIONS:
        raise ValueError(
            f"encounter situation {e.situation!r} is not one of {', '.join(SITUATIONS)}"
        )
    if e.passes and e.passes not in PASSING_SIDES:
        raise ValueError(f"encounter passes {e.passes!r} is not one of {', '.join(PASSING_SIDES)}")
    for name, angle in (
        ("relative_course", e.relative_course),
        ("relative_bearing", e.relative_bearing),
    ):
        if angle is not None and not math.isfinite(angle):
            raise ValueError(f"encounter {name} = {angle}: give an angle in radians")
    if not (e.cpa_m >= 0.0 and math.isfinite(e.cpa_m)):
        raise ValueError(f"encounter cpa_m = {e.cpa_m} m: give a distance of 0 m or more")
    if not (e.tcpa_s >= 0.0 and math.isfinite(e.tcpa_s)):
        raise ValueError(f"encounter tcpa_s = {e.tcpa_s} s: give a time of 0 s or more")
    if not (e.speed >= 0.0 and math.isfinite(e.speed)):
        raise ValueError(f"encounter speed = {e.speed} m/s: give a speed of 0 m/s or more")


def place(
    encounter: Encounter, own_north: float, own_east: float, own_course: float, own_speed: float
) -> Course:
    """The target's start and course for ``encounter`` against an own ship at (own_north,
    own_east) sailing ``own_course`` [rad] at ``own_speed`` [m/s] (``encounter.own_speed``
    instead when it is given). Raises ValueError when no placement fits the request."""
    _check(encounter)
    e = encounter
    u_o = e.own_speed if e.own_speed is not None else own_speed
    if not (u_o >= 0.0 and math.isfinite(u_o)):
        raise ValueError(f"encounter own_speed = {u_o} m/s: give a speed of 0 m/s or more")
    u_t = e.speed
    if e.situation == "overtaking" and not u_t < u_o:
        raise ValueError(
            f"an overtaking encounter needs a target slower than the own ship: the target's "
            f"{u_t:.2f} m/s is not below the own ship's {u_o:.2f} m/s; lower the target's "
            f"speed or use 'overtaken'"
        )
    if e.situation == "overtaken" and not u_t > u_o:
        raise ValueError(
            f"an overtaken encounter needs a target faster than the own ship: the target's "
            f"{u_t:.2f} m/s is not above the own ship's {u_o:.2f} m/s; raise the target's "
            f"speed or use 'overtaking'"
        )
    if e.situation:
        what = f"situation {e.situation!r}"
    elif e.relative_course is not None:
        what = f"relative course {_deg(e.relative_course)}"
    else:
        assert e.relative_bearing is not None  # _check: exactly one is given
        what = f"relative bearing {_deg(e.relative_bearing)}"
        return _place_by_bearing(e, e.relative_bearing, own_north, own_east, own_course, u_o, what)
    if e.situation:
        rel = SITUATION_COURSE[e.situation]
    else:
        assert e.relative_course is not None
        rel = float(e.relative_course)
    course = (own_course + rel) % TWO_PI
    cands = _candidates(course, u_t, own_course, u_o, e.cpa_m, e.tcpa_s)
    if not cands:
        raise ValueError(
            f"encounter with {what}: the target sails the own ship's course at its speed "
            f"({u_t:.2f} m/s), so the range never changes and there is no closest point "
            f"of approach; give the target another speed or course"
        )
    start = _pick(cands, e.passes)
    if start is None:
        possible = sorted(set().union(*(c[0] for c in cands)))
        raise ValueError(
            f"encounter with {what} and cpa_m = {e.cpa_m:g}: the target cannot be "
            f"{e.passes} of the own ship at the CPA, since at the CPA it lies square to "
            f"the relative motion; it can pass {' or '.join(possible)}"
            + (", or give cpa_m = 0" if e.cpa_m > 0.0 else "")
        )
    return Course(own_north + start[0], own_east + start[1], course, u_t)


def _place_by_bearing(
    e: Encounter,
    bearing: float,
    own_north: float,
    own_east: float,
    own_course: float,
    u_o: float,
    what: str,
) -> Course:
    """Solve for the target course that puts the start at the relative bearing asked for:
    scan the course, keep the sign changes of the bearing error, bisect each."""
    want = own_course + float(bearing)

    def error(course: float, k: int) -> float | None:
        cands = _candidates(course, e.speed, own_course, u_o, e.cpa_m, e.tcpa_s)
        if not cands:
            return None
        _, n, east = cands[k]
        if math.hypot(n, east) == 0.0:
            return None
        return (math.atan2(east, n) - want + math.pi) % TWO_PI - math.pi

    roots: list[tuple[float, int]] = []
    for k in (0, 1):
        prev_c = 0.0
        prev = error(prev_c, k)
        for j in range(1, SCAN_STEPS + 1):
            c = TWO_PI * j / SCAN_STEPS
            f = error(c, k)
            if (
                prev is not None
                and f is not None
                and (prev == 0.0 or prev * f < 0.0)
                and abs(prev - f) < math.pi  # a root, not the error wrapping past +-pi
            ):
                lo, hi, flo = prev_c, c, prev
                for _ in range(60):
                    mid = 0.5 * (lo + hi)
                    fm = error(mid, k)
                    if fm is None:
                        break
                    if (fm < 0.0) == (flo < 0.0):
                        lo, flo = mid, fm
                    else:
                        hi = mid
                roots.append((0.5 * (lo + hi) % TWO_PI, k))
            prev_c, prev = c, f
    found = []
    for course, k in roots:
        f = error(course, k)
        if f is None or abs(f) > 1e-6:
            continue  # a jump (the relative motion through zero), not a root
        sides, n, east = _candidates(course, e.speed, own_course, u_o, e.cpa_m, e.tcpa_s)[k]
        vr_n = e.speed * math.cos(course) - u_o * math.cos(own_course)
        vr_e = e.speed * math.sin(course) - u_o * math.sin(own_course)
        found.append((sides, math.hypot(vr_n, vr_e), course, n, east))
    if not found:
        if e.speed < u_o:
            # closing on a collision course, the relative motion -v_r points at the target:
            # v_t = v_o - k u for the unit vector u towards it, and |v_t| = U_t has a real k
            # only within asin(U_t / U_o) of the own ship's bow (a little more or less with
            # a CPA above zero)
            sector = math.degrees(math.asin(e.speed / u_o)) if u_o > 0.0 else 180.0
            hint = (
                f"a target slower than the own ship can only meet it from within about "
                f"{sector:.0f} deg of its bow: choose a bearing nearer ahead or raise the "
                f"target's speed"
            )
        else:
            hint = "try a smaller cpa_m, a longer tcpa_s or another bearing"
        raise ValueError(
            f"encounter with {what}, cpa_m = {e.cpa_m:g}, tcpa_s = {e.tcpa_s:g}: no target "
            f"course at {e.speed:.2f} m/s against the own ship's {u_o:.2f} m/s starts the "
            f"target at that bearing; {hint}"
        )
    # where two courses fit, the one closing faster: the target meets the own ship rather than
    # being caught up with from a longer way off
    found.sort(key=lambda f: -f[1])
    for side in (e.passes,) if e.passes else ("ahead", "port"):
        for sides, _, course, n, east in found:
            if side in sides:
                return Course(own_north + n, own_east + east, course, e.speed)
    if not e.passes:
        _, _, course, n, east = found[0]
        return Course(own_north + n, own_east + east, course, e.speed)
    possible = sorted(set().union(*(f[0] for f in found)))
    raise ValueError(
        f"encounter with {what}, cpa_m = {e.cpa_m:g}: no target course starting at that "
        f"bearing passes {e.passes} of the own ship; it can pass {' or '.join(possible)}"
    )
