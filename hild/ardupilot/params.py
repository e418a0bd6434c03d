"""ArduPilot Rover parameters for a vessel profile, measured from hild's own model.

`hild show ardupilot odin > odin.parm` prints the shipped file (profiles/ardupilot/); this
module makes it: ``python -m hild.ardupilot.params --write`` regenerates every profile's file
in the source tree, ``python -m hild.ardupilot.params odin`` prints one.

Every value is either the device type's own (FRAME_CLASS, the servo functions and pulse widths
of devices/ardupilot-sitl.toml's default mapping) or measured in calm water on the vessel's
model, driven through that mapping exactly as ArduPilot's servo outputs would drive it
(``ServoMapping.demands`` for a frame of pulses):

- cruise: the steady speed at a throttle, from rest; a run is steady when its surge speed
  changed by less than ``SETTLED_SPEED`` over the last ``CHUNK_S`` (and its yaw rate, in a
  turn, by less than ``SETTLED_RATE``);
- the full turn at cruise: full steering (throttle-steering) or full differential (skid: the
  outer side at full throttle, the inner one at 2 * cruise - 1, so the mean stays at cruise),
  from the steady cruise until steady again;
- top speed, acceleration at cruise speed, stopping deceleration, and for skid steering the
  thrust asymmetry (MOT_THST_ASYM: full-ahead over full-astern thrust at rest) and pivot rate
  (from rest, as ArduPilot's skid mixer pivots: equal thrusts, one side full astern).

The parameters, their units and meanings are ArduPilot Rover's (parameter reference at
https://ardupilot.org/rover/docs/parameters.html, generated from the @Param blocks of
Rover/Parameters.cpp, libraries/APM_Control/AR_AttitudeControl.cpp,
libraries/AR_WPNav/AR_WPNav.cpp and libraries/AR_WPNav/AR_PivotTurn.cpp).
"""

from __future__ import annotations

import argparse
import math
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hild.ardupilot.paramfile import parse_params
from hild.ardupilot.servos import ServoMapping, build_mapping
from hild.coupled.simulation import Simulation
from hild.model import layout as L
from hild.model.vessel import Vessel

PROFILE_NAMES = ("odin", "jolner", "otter", "wamv", "blueboat")
# A profile whose owners' boats come with outputs of their own: the file hild makes for it gives
# those outputs (and the device reads them from it), so that the owners' own file and hild's
# agree. The BlueBoat's as Blue Robotics ship it (BlueOS's parameter repository,
# ArduRover/4.6/Navigator/BlueBoat120.params): the right thruster on SERVO1, the left on SERVO3
# reversed, 1100-1900 us about 1510.
OWN_OUTPUTS = {
    "blueboat": (
        "BlueOS's BlueBoat120.params",
        """
        SERVO1_FUNCTION 74
        SERVO1_MIN 1100
        SERVO1_TRIM 1510
        SERVO1_MAX 1900
        SERVO1_REVERSED 0
        SERVO3_FUNCTION 73
        SERVO3_MIN 1100
        SERVO3_TRIM 1510
        SERVO3_MAX 1900
        SERVO3_REVERSED 1
        """,
    ),
}
DEVICE_TYPE = "ardupilot-sitl"
REGENERATE = "python -m hild.ardupilot.params --write"
DT = 0.01  # [s] the bench's usual step, RK4
CHUNK_S = 10.0  # [s] one compiled advance between two looks at the state
SETTLED_SPEED = 1e-4  # [m/s] change of surge speed over a chunk below which it is steady
SETTLED_RATE = 1e-3  # [deg/s] change of yaw rate over a chunk below which it is steady
MAX_S = 1800.0  # [s] a run that is not steady by then is an error (a model problem)
CRUISE_FRACTION = 0.5  # cruise at half the top speed (see cruise_throttle)
STOP_SPEED = 0.1  # [m/s] ATC_STOP_SPEED's default: "stopped" for the deceleration
COMMENT_WIDTH = 99  # the files' comment lines, wrapped
G = 9.80665  # [m/s^2] standard gravity: ATC_TURN_MAX_G is in gravities


class NotSteadyError(RuntimeError):
    """A run that did not settle within MAX_S."""


@dataclass(frozen=True)
class Measured:
    """What the model did (SI units, rates in deg/s)."""

    top_speed: float  # steady surge speed at full throttle [m/s]
    cruise_throttle: int  # [%]
    cruise_speed: float  # steady surge speed at cruise_throttle [m/s]
    turn_rate: float  # steady yaw rate, full steering at cruise throttle [deg/s]
    turn_speed: float  # steady speed over ground in that turn [m/s]
    turn_surge: float  # steady forward (surge) speed in that turn [m/s]
    accel: float  # dU/dt at full throttle as the speed passes cruise_speed [m/s^2]
    decel: float  # mean deceleration, full astern from cruise to STOP_SPEED [m/s^2]
    pivot_rate: float | None  # skid: steady yaw rate in ArduPilot's pivot [deg/s]
    thrust_asymmetry: float | None = None  # skid: full-ahead / full-astern thrust at rest

    @property
    def turn_radius(self) -> float:
        """The radius of the steady full turn [m]: speed over ground / yaw rate."""
        return self.turn_speed / math.radians(self.turn_rate)

    @property
    def lateral_g(self) -> float:
        """ArduPilot's lateral acceleration in the full turn (forward speed * yaw rate), in g."""
        return self.turn_surge * math.radians(self.turn_rate) / G


class Driver:
    """One vessel driven by servo pulses, as ArduPilot's SITL frames drive it."""

    def __init__(self, vessel: Vessel, mapping: ServoMapping):
        self.vessel, self.mapping = vessel, mapping

    def pulses(self, **inputs: float) -> list[int]:
        """The frame's 16 outputs for inputs -1 .. 1 by name (the rest at trim)."""
        return self.mapping.pulses_for(**inputs)

    def throttle(self, throttle: float, steering: float = 0.0) -> list[int]:
        """Pulses for a throttle and a steering, -1 .. 1: the steering output for
        throttle-steering, the difference of the sides for skid steering (positive: the port
        side more, bow to starboard)."""
        if self.mapping.kind == "skid":
            return self.pulses(left=throttle + steering, right=throttle - steering)
        return self.pulses(throttle=throttle, steering=steering)

    def command(self, sim: Simulation, pwm: Sequence[int]) -> None:
        for d in self.mapping.demands(pwm):
            base = d.actuator * L.S_SIZE
            for slot, value in (
                (L.S_SPEED, d.speed),
                (L.S_ANGLE, d.angle),
                (L.S_DEFLECTOR, d.deflector),
            ):
                if value is not None:
                    sim.act_cmd[base + slot] = value

    def at_rest(self) -> Simulation:
        return Simulation(self.vessel, dt=DT, method="rk4")

    def settle(self, sim: Simulation, pwm: Sequence[int], turning: bool = False) -> Simulation:
        """Hold the pulses until the state is steady (see the module's docstring)."""
        self.command(sim, pwm)
        n = round(CHUNK_S / DT)
        u, r = sim.x[L.X_NU], math.degrees(sim.x[L.X_NU + 5])
        for _ in range(round(MAX_S / CHUNK_S)):
            sim.advance(n)
            u_new, r_new = sim.x[L.X_NU], math.degrees(sim.x[L.X_NU + 5])
            steady = abs(u_new - u) < SETTLED_SPEED and (
                not turning or abs(r_new - r) < SETTLED_RATE
            )
            u, r = u_new, r_new
            if steady:
                return sim
        raise NotSteadyError(f"{self.vessel.name}: no steady state within {MAX_S:.0f} s")

    def track(
        self, sim: Simulation, pwm: Sequence[int], reached: Callable[[np.ndarray], np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Hold the pulses, a row a step, until ``reached(u)`` holds for a surge speed and one
        step more; the times and surge speeds from the start."""
        self.command(sim, pwm)
        n = round(CHUNK_S / DT)
        chunks = [sim.row()[None, :]]  # the start, then a row after each step
        for _ in range(round(MAX_S / CHUNK_S)):
            chunks.append(sim.advance(n, record_every=1))
            rows = np.concatenate(chunks)
            hit = reached(rows[:-1, 1 + L.X_NU])
            if hit.any():
                return rows[:, 0], rows[:, 1 + L.X_NU]
        raise NotSteadyError(f"{self.vessel.name}: not there within {MAX_S:.0f} s")

    def steady_speed(self, throttle_pct: int) -> float:
        return float(self.settle(self.at_rest(), self.throttle(throttle_pct / 100.0)).x[L.X_NU])


def cruise_throttle(driver: Driver, top_speed: float) -> int:
    """The whole per cent of throttle whose steady speed is nearest to CRUISE_FRACTION of the
    top speed (CRUISE_THROTTLE is a whole number, the pulses step 5 us a per cent); bisection,
    the steady speed rising with the throttle."""
    target = CRUISE_FRACTION * top_speed
    lo, hi = 0, 100
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if driver.steady_speed(mid) < target:
            lo = mid
        else:
            hi = mid
    return min((lo, hi), key=lambda pct: abs(driver.steady_speed(pct) - target))


def measure(vessel: Vessel, mapping: ServoMapping) -> Measured:
    driver = Driver(vessel, mapping)
    top = driver.steady_speed(100)
    pct = cruise_throttle(driver, top)
    cruise = driver.throttle(pct / 100.0)
    speed = driver.steady_speed(pct)

    # full turn from the steady cruise, to either side; the weaker side counts
    differential = 1.0 - pct / 100.0  # skid: outer side full, inner at 2 * cruise - 1
    rates = []
    for side in (1.0, -1.0):
        sim = driver.settle(driver.at_rest(), cruise)
        steering = side * (differential if mapping.kind == "skid" else 1.0)
        sim = driver.settle(sim, driver.throttle(pct / 100.0, steering), turning=True)
        u, v, r = sim.x[L.X_NU], sim.x[L.X_NU + 1], sim.x[L.X_NU + 5]
        rates.append((abs(math.degrees(r)), math.hypot(u, v), float(u)))
    turn_rate, turn_speed, turn_surge = min(rates)

    # acceleration at full throttle from rest as the speed passes cruise
    t, u = driver.track(driver.at_rest(), driver.throttle(1.0), lambda u: u >= speed)
    i = int(np.argmax(u >= speed))
    accel = float((u[i + 1] - u[i - 1]) / (t[i + 1] - t[i - 1]))

    # stopping: full astern from the steady cruise until the speed is below STOP_SPEED
    sim = driver.settle(driver.at_rest(), cruise)
    t, u = driver.track(sim, driver.throttle(-1.0), lambda u: u < STOP_SPEED)
    stopped = int(np.argmax(u < STOP_SPEED))
    decel = float((speed - STOP_SPEED) / (t[stopped] - t[0]))

    pivot = asymmetry = None
    if mapping.kind == "skid":
        asymmetry = thrust_asymmetry(driver)
        sim = driver.settle(driver.at_rest(), pivot_pulses(driver, asymmetry), turning=True)
        pivot = abs(math.degrees(sim.x[L.X_NU + 5]))
    return Measured(
        top, pct, speed, turn_rate, turn_speed, turn_surge, accel, decel, pivot, asymmetry
    )


def thrust_asymmetry(driver: Driver) -> float:
    """MOT_THST_ASYM: the surge force at rest at full throttle ahead over that at full astern,
    within ArduPilot's range of the parameter (1 to 10)."""
    return min(max(bollard_thrust(driver, 1.0) / -bollard_thrust(driver, -1.0), 1.0), 10.0)


def pivot_pulses(driver: Driver, asymmetry: float) -> list[int]:
    """A pivot to starboard as ArduPilot's skid-steering mixer makes it (AP_MotorsUGV's
    output_skid_steering at no throttle and full steering): the port side 1 / MOT_THST_ASYM
    ahead, the starboard side -1 / MOT_THST_ASYM, scaled by MOT_THST_ASYM astern to full
    astern: equal thrusts."""
    return driver.pulses(left=1.0 / asymmetry, right=-1.0)


def bollard_thrust(driver: Driver, throttle: float) -> float:
    """The actuators' surge force at rest [N] with every one at the throttle's steady state
    (held there for one step: their lag left out, the hull not yet moving)."""
    sim = driver.at_rest()
    driver.command(sim, driver.throttle(throttle))
    sim.act_state[:] = sim.act_cmd
    sim.tick()
    return float(sim.actuator_force[0])


def _number(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}"


def parameter_lines(
    name: str, vessel: Vessel, mapping: ServoMapping, m: Measured
) -> list[tuple[str, str, str]]:
    """(NAME, VALUE, how it was had) for every parameter of the file, in its order."""
    kind = mapping.kind
    rows: list[tuple[str, str, str]] = [
        ("FRAME_CLASS", "2", "2 = Boat (Rover/Parameters.cpp FRAME_CLASS values)"),
    ]
    uses = {
        26: "GroundSteering: every nozzle or azimuth as a rudder order",
        70: "Throttle: every actuator together (a waterjet as a single lever)",
        73: "ThrottleLeft: the port actuators",
        74: "ThrottleRight: the starboard actuators",
    }
    whose = f"{DEVICE_TYPE} mapping {kind!r} for {name}"
    if mapping.source:
        whose = f"{kind} as {OWN_OUTPUTS[name][0]} has it"

    def of(key: str) -> str:  # where a pulse width comes from
        return f"as {OWN_OUTPUTS[name][0]}" if mapping.source else f"{key} of {DEVICE_TYPE}"

    for out in sorted(mapping.outputs.values(), key=lambda o: o.channel):
        n, p = out.channel, out.pulses
        ends = (
            ("full port", "full starboard") if out.function == 26 else ("full astern", "full ahead")
        )
        low, high = reversed(ends) if out.reversed else ends
        rows += [
            (f"SERVO{n}_FUNCTION", str(out.function), f"{uses[out.function]} ({whose})"),
            (f"SERVO{n}_MIN", str(p.low), f"[us] {of('pwm_min')}: {low}"),
            (f"SERVO{n}_TRIM", str(p.trim), f"[us] {of('pwm_trim')}: zero"),
            (f"SERVO{n}_MAX", str(p.high), f"[us] {of('pwm_max')}: {high}"),
            (
                f"SERVO{n}_REVERSED",
                str(int(out.reversed)),
                "1: the output mirrored about its trim (ArduPilot negates the value first)"
                if out.reversed
                else "0: not reversed",
            ),
        ]
    inner = 2 * m.cruise_throttle - 100
    turn = (
        "full steering (SERVO1 at max)"
        if kind == "throttle-steering"
        else f"full differential (outer side 100 %, inner {inner} %)"
    )
    rows += [
        (
            "CRUISE_THROTTLE",
            str(m.cruise_throttle),
            f"[%] the whole per cent whose steady speed is nearest half the top speed "
            f"({CRUISE_FRACTION * m.top_speed:.2f} m/s; ArduPilot's rover-quicktune.md suggests "
            "about half the maximum speed for tuning), found by bisection",
        ),
        (
            "CRUISE_SPEED",
            _number(m.cruise_speed, 2),
            f"[m/s] steady surge speed at CRUISE_THROTTLE, calm water, from rest (steady: change "
            f"< {SETTLED_SPEED:g} m/s over {CHUNK_S:g} s)",
        ),
        (
            "SPEED_MAX",
            _number(m.top_speed, 2),
            "[m/s] steady surge speed at 100 % throttle, the same way (else ArduPilot "
            "extrapolates it from CRUISE_*; the model's speed is not linear in throttle)",
        ),
        (
            "WP_SPEED",
            _number(m.cruise_speed, 2),
            "[m/s] = CRUISE_SPEED: missions at the measured cruise (the default 2 m/s is not)",
        ),
        (
            "ATC_STR_RAT_MAX",
            _number(m.turn_rate, 1),
            f"[deg/s] steady yaw rate at CRUISE_THROTTLE with {turn}, from the steady cruise "
            f"(steady: change < {SETTLED_RATE:g} deg/s over {CHUNK_S:g} s; the weaker side)",
        ),
        (
            "ACRO_TURN_RATE",
            _number(m.turn_rate, 1),
            "[deg/s] = ATC_STR_RAT_MAX: full stick in Acro asks what full steering gives",
        ),
        (
            "ATC_TURN_MAX_G",
            _number(max(m.lateral_g, 0.1), 2),
            f"[g] forward speed x yaw rate / g in that steady turn, ArduPilot's own lateral "
            f"acceleration ({m.turn_surge:.2f} m/s x {m.turn_rate:.1f} deg/s = "
            f"{m.lateral_g:.3f} g), at least 0.1: ArduPilot never uses less "
            "(AR_AttitudeControl.h get_turn_lat_accel_max); ATC_STR_RAT_MAX binds first at cruise",
        ),
        (
            "ATC_ACCEL_MAX",
            _number(m.accel, 2),
            "[m/s/s] dU/dt at 100 % throttle from rest as the speed passes CRUISE_SPEED: what the "
            "boat still has there (more below, less above)",
        ),
        (
            "ATC_DECEL_MAX",
            _number(m.decel, 2),
            f"[m/s/s] mean deceleration from the steady cruise to {STOP_SPEED:g} m/s "
            "(ATC_STOP_SPEED's default) at full astern (throttle at min)",
        ),
        (
            "WP_RADIUS",
            _number(math.ceil(10.0 * max(vessel.length, m.turn_radius)) / 10.0, 1),
            f"[m] the larger of the hull length ({vessel.length:g} m) and the radius of that "
            f"steady turn (speed over ground / yaw rate = {m.turn_radius:.2f} m), rounded up: a "
            "waypoint the boat cannot turn onto is never reached",
        ),
    ]
    if kind == "throttle-steering":
        rows.append(
            (
                "TURN_RADIUS",
                _number(m.turn_radius, 1),
                "[m] the radius of that steady full turn (Steering mode's lateral "
                "acceleration limit V^2/R); a hull's full-rudder radius barely changes with "
                "speed",
            )
        )
    if m.pivot_rate is not None:
        rows.append(
            (
                "WP_PIVOT_RATE",
                str(max(1, math.floor(m.pivot_rate))),
                f"[deg/s] steady yaw rate from rest in ArduPilot's pivot: starboard full astern, "
                f"port ahead at 1 / MOT_THST_ASYM (its skid mixer's equal thrusts; "
                f"{m.pivot_rate:.2f} deg/s, rounded down to whole degrees); pivot turns stay "
                "off unless WP_PIVOT_ANGLE is set",
            )
        )
    if m.thrust_asymmetry is not None:
        rows.append(
            (
                "MOT_THST_ASYM",
                _number(m.thrust_asymmetry, 2),
                "forward / reverse thrust: the actuators' surge force at rest at full throttle "
                "ahead over that at full astern (its range 1-10); ArduPilot's skid-steering "
                "mixer shares the throttle between the sides with it",
            )
        )
    return rows


def render(name: str, rows: Sequence[tuple[str, str, str]]) -> str:
    """The .parm text: a header, then each parameter after its comment."""
    head = [
        f"ArduPilot Rover parameters for hild's {name} (SITL JSON physics, device type "
        f"{DEVICE_TYPE}).",
        f"Generated from hild's model: regenerate with `{REGENERATE}`, print with "
        f"`hild show ardupilot {name}`; use: ardurover --model JSON:127.0.0.1 --defaults "
        f"{name}.parm",
        f"Measured in calm water on the vessel's model (RK4, dt = {DT:g} s), driven through "
        "the device type's default servo mapping as ArduPilot's outputs drive it.",
        "Parameter names, units and meanings: ArduPilot Rover's parameter reference, "
        "https://ardupilot.org/rover/docs/parameters.html (from Rover/Parameters.cpp, "
        "libraries/APM_Control/AR_AttitudeControl.cpp, libraries/AR_WPNav/AR_WPNav.cpp and "
        "AR_PivotTurn.cpp). Controller gains (ATC_STR_RAT_*, ATC_SPEED_*) are left to "
        "ArduPilot's defaults and its tuning.",
    ]
    head = [
        line
        for para in head
        for line in textwrap.wrap(
            para, COMMENT_WIDTH, initial_indent="# ", subsequent_indent="#   "
        )
    ]
    body = []
    for param, value, how in rows:
        body += textwrap.wrap(how, COMMENT_WIDTH, initial_indent="# ", subsequent_indent="#   ")
        body.append(f"{param} {value}")
    return "\n".join(head) + "\n\n" + "\n".join(body) + "\n"


def parameters(name: str, settings: Mapping[str, object] | None = None) -> str:
    """The .parm text for a profile, measured now."""
    from hild.builtin import builtin_folder
    from hild.config import load_toml
    from hild.profiles.vessel import load_profile

    if settings is None:  # the shipped device type's (what the shipped .parm files are for)
        settings = load_toml(builtin_folder("devices") / f"{DEVICE_TYPE}.toml")["settings"]
    vessel = load_profile(name)
    own = OWN_OUTPUTS.get(name)
    mapping = build_mapping(settings, vessel, parse_params(own[1], own[0]) if own else None)
    return render(name, parameter_lines(name, vessel, mapping, measure(vessel, mapping)))


def parse(text: str) -> dict[str, float]:
    """NAME -> value of a .parm text (comments and blank lines skipped)."""
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            param, value = line.split()
            values[param] = float(value)
    return values


def source_folder() -> Path:
    """Where the shipped files live in the source tree (profiles/ardupilot/)."""
    from hild.builtin import SOURCE_TREE

    return SOURCE_TREE / "profiles" / "ardupilot"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hild.ardupilot.params", description=__doc__.splitlines()[0]
    )
    parser.add_argument("profile", nargs="*", help=f"profiles ({', '.join(PROFILE_NAMES)})")
    parser.add_argument(
        "--write", action="store_true", help="write profiles/ardupilot/NAME.parm in the source tree"
    )
    args = parser.parse_args(argv)
    names = args.profile or (PROFILE_NAMES if args.write else ())
    if not names:
        parser.error("name a profile, or --write")
    for name in names:
        text = parameters(name)
        if args.write:
            path = source_folder() / f"{name}.parm"
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}")
        else:
            sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
