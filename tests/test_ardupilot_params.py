"""The ArduPilot parameter files shipped in profiles/ardupilot/: in step with the model, right for
the device's servo mapping, and true of the boat when it is driven by pulses as ArduPilot would
drive it; `hild show ardupilot NAME` prints them."""

from __future__ import annotations

import math
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from hild.ardupilot.paramfile import read_params
from hild.ardupilot.params import PROFILE_NAMES, REGENERATE, parameters, parse
from hild.ardupilot.servos import build_mapping
from hild.coupled.simulation import Simulation
from hild.model import layout as L
from hild.profiles.vessel import load_profile

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "profiles" / "ardupilot"
BLUEOS = ROOT / "tests" / "data" / "ardupilot" / "BlueBoat120.params"
DEVICE = tomllib.loads((ROOT / "devices" / "ardupilot-sitl.toml").read_text())["settings"]


def shipped(name: str) -> dict[str, float]:
    return parse((SHIPPED / f"{name}.parm").read_text())


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return {name: parameters(name) for name in PROFILE_NAMES}


def decimals(text: str) -> int:
    return len(text.partition(".")[2])


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_the_shipped_file_is_what_the_model_measures_now(name, generated):
    # The runs are deterministic, so on the machine that wrote the files the texts are equal.
    # Elsewhere (another CPU, numba or libm) a measured value may differ in its last bits, and
    # a value lying on a rounding boundary may then print one unit of its last digit apart:
    # that much, and no more, is allowed.
    text = (SHIPPED / f"{name}.parm").read_text()
    assert REGENERATE in text and f"hild show ardupilot {name}" in text
    now = parse(generated[name])
    assert list(now) == list(parse(text)), f"regenerate: {REGENERATE}"
    printed = {
        line.split()[0]: line.split()[1]
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    for param, value in parse(text).items():
        unit = 10.0 ** -decimals(printed[param])
        assert abs(now[param] - value) <= 1.01 * unit, f"{param}: regenerate: {REGENERATE}"


def outputs(p: dict[str, float]) -> dict[int, tuple[int, float, float, float, float]]:
    """SERVOn -> (FUNCTION, MIN, TRIM, MAX, REVERSED) of a file's outputs that have one."""
    return {
        n: tuple(p[f"SERVO{n}_{key}"] for key in ("FUNCTION", "MIN", "TRIM", "MAX", "REVERSED"))
        for n in range(1, 17)
        if p.get(f"SERVO{n}_FUNCTION", 0)
    }


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_the_servo_functions_are_those_the_device_maps(name):
    # read from the device type's file itself (or, for the BlueBoat, from Blue Robotics' own
    # parameter file), not from the mapping code
    p = shipped(name)
    if name == "blueboat":  # the boat's own outputs, as BlueOS ships them
        expected = outputs(parse(BLUEOS.read_text()))
    else:
        kind = DEVICE["profile_mappings"][name]
        pulses = (DEVICE["pwm_min"], DEVICE["pwm_trim"], DEVICE["pwm_max"], 0)
        if kind == "throttle-steering":
            functions = {DEVICE["steering_channel"]: 26, DEVICE["throttle_channel"]: 70}
        else:
            functions = {DEVICE["throttle_left_channel"]: 73, DEVICE["throttle_right_channel"]: 74}
        expected = {n: (f, *pulses) for n, f in functions.items()}
    assert outputs(p) == expected
    assert p["FRAME_CLASS"] == 2  # a boat
    # the device reads the file as it maps without one (a shipped file fits the device as is)
    from_file = build_mapping(DEVICE, load_profile(name), read_params(SHIPPED / f"{name}.parm"))
    assert from_file.functions == {n: int(o[0]) for n, o in expected.items()}
    if name != "blueboat":
        assert build_mapping(DEVICE, load_profile(name)).functions == from_file.functions


class Boat:
    """A vessel driven by the outputs of the parameter file: the pulse of each SERVOn by its
    function (26 steering, 70 throttle, 73 left, 74 right), -1 .. 1 between MIN, TRIM, MAX."""

    def __init__(self, name: str):
        self.p = shipped(name)
        self.vessel = load_profile(name)
        self.mapping = build_mapping(DEVICE, self.vessel, read_params(SHIPPED / f"{name}.parm"))
        self.sim = Simulation(self.vessel, dt=0.01, method="rk4")

    def drive(self, seconds: float, **by_function: float) -> None:
        pwm = [0] * 16
        for key, value in self.p.items():
            if key.startswith("SERVO") and key.endswith("_FUNCTION"):
                n = int(key[5:].partition("_")[0])
                x = by_function.get(f"f{int(value)}", 0.0)
                if self.p.get(f"SERVO{n}_REVERSED") == 1:  # ArduPilot negates the value first
                    x = -x
                lo, trim, hi = (self.p[f"SERVO{n}_{e}"] for e in ("MIN", "TRIM", "MAX"))
                pwm[n - 1] = round(trim + x * ((hi - trim) if x >= 0 else (trim - lo)))
        for d in self.mapping.demands(pwm):
            for slot, v in (
                (L.S_SPEED, d.speed),
                (L.S_ANGLE, d.angle),
                (L.S_DEFLECTOR, d.deflector),
            ):
                if v is not None:
                    self.sim.act_cmd[d.actuator * L.S_SIZE + slot] = v
        self.sim.advance(round(seconds / self.sim.dt))

    def ahead(self, throttle: float, seconds: float, turn: float = 0.0) -> None:
        """Throttle (0 .. 1) and a turn to starboard (0 .. 1): the steering output, or for
        skid steering the port side up and the starboard side down by it."""
        self.drive(seconds, f26=turn, f70=throttle, f73=throttle + turn, f74=throttle - turn)

    @property
    def u(self) -> float:
        return float(self.sim.x[L.X_NU])

    @property
    def r_deg(self) -> float:
        return math.degrees(self.sim.x[L.X_NU + 5])


# A fixed 400 s from rest settles every profile to well under 1 mm/s (the slowest, odin, has a
# surge time constant of tens of seconds); the file prints speeds to 0.01 m/s (rounding: 0.005)
# and rates to 0.1 deg/s (0.05): these tolerances are the rounding plus that margin.
SPEED_TOL = 0.006
RATE_TOL = 0.06


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_cruise_throttle_gives_cruise_speed_and_full_throttle_the_top_speed(name):
    boat = Boat(name)
    cruise = boat.p["CRUISE_THROTTLE"] / 100.0
    boat.ahead(cruise, 400.0)
    assert boat.u == pytest.approx(boat.p["CRUISE_SPEED"], abs=SPEED_TOL)
    assert boat.p["WP_SPEED"] == boat.p["CRUISE_SPEED"]
    boat.ahead(1.0, 400.0)
    assert boat.u == pytest.approx(boat.p["SPEED_MAX"], abs=SPEED_TOL)
    # the chosen cruise: half the top speed, to within what one per cent of throttle moves
    assert boat.p["CRUISE_SPEED"] == pytest.approx(boat.p["SPEED_MAX"] / 2, rel=0.05)


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_full_steering_at_cruise_turns_at_the_rate_limit(name):
    boat = Boat(name)
    cruise = boat.p["CRUISE_THROTTLE"] / 100.0
    boat.ahead(cruise, 400.0)
    # throttle-steering: full steering; skid: the outer side full, the mean kept at cruise
    turn = 1.0 if "SERVO1_FUNCTION" in boat.p and boat.p["SERVO1_FUNCTION"] == 26 else 1 - cruise
    boat.ahead(cruise, 400.0, turn=turn)
    assert boat.r_deg > 0.0  # ArduPilot's positive steering (or more left throttle): starboard
    assert boat.r_deg == pytest.approx(boat.p["ATC_STR_RAT_MAX"], abs=RATE_TOL)
    # the boat cannot exceed what ArduPilot is told: its lateral acceleration in that turn is at
    # most ATC_TURN_MAX_G, and the radius at most WP_RADIUS, which is at least the hull length
    lateral_g = boat.u * math.radians(boat.r_deg) / 9.80665
    assert lateral_g <= boat.p["ATC_TURN_MAX_G"]
    assert boat.p["ATC_TURN_MAX_G"] >= 0.1  # the least ArduPilot uses
    speed = math.hypot(boat.u, float(boat.sim.x[L.X_NU + 1]))
    assert speed / math.radians(boat.r_deg) <= boat.p["WP_RADIUS"]
    assert boat.p["WP_RADIUS"] >= boat.vessel.length


@pytest.mark.parametrize("name", [n for n in PROFILE_NAMES if n != "odin"])
def test_a_skid_boat_pivots_at_its_pivot_rate(name):
    """ArduPilot's pivot (its skid mixer at no throttle and full steering, AP_MotorsUGV): the
    port side ahead at 1 / MOT_THST_ASYM, the starboard side full astern."""
    boat = Boat(name)
    boat.drive(200.0, f73=1.0 / boat.p["MOT_THST_ASYM"], f74=-1.0)
    assert abs(boat.u) < 0.5 * boat.p["CRUISE_SPEED"]  # turning, hardly moving
    # the file rounds the rate down to whole degrees per second (AR_PivotTurn's RATE)
    assert 0.0 <= boat.r_deg - boat.p["WP_PIVOT_RATE"] < 1.0


def test_hild_show_ardupilot_prints_the_file_and_lists_the_profiles():
    run = [sys.executable, "-m", "hild.cli", "show", "ardupilot"]
    shown = subprocess.run([*run, "odin"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == (SHIPPED / "odin.parm").read_text()
    listed = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert listed.stdout.split() == ["blueboat", "jolner", "odin", "otter", "wamv"]
