"""Odin's turning circle: the tactical diameter at full nozzle and the yaw rates at small nozzle
angles, against the model the thesis fitted to its sea trials (profiles/odin.toml, [damping]).

The manoeuvre: both jets at the given rpm, deflectors ahead, nozzles at 0 for 60 s (a steady
straight run), then both nozzles stepped to the angle for 120 s. The tactical diameter is the
offset across the approach course when the heading has turned 180 deg; the yaw rate is the
last sample's, when the turn is steady (the rate settles within 5 s of the step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from hild.coupled.simulation import Simulation
from hild.model.vessel import Vessel
from hild.profiles.vessel import load_profile

PROFILE = Path(__file__).resolve().parents[1] / "profiles" / "odin.toml"
LENGTH = 10.5  # Odin's L_pp [m], thesis Table 3.1
DT = 0.01
JETS = ("port", "starboard")
# The quadratic sway and yaw damping of the thesis' author's model files, which hild
# replaced to widen the full-nozzle turn; with them the profile is the model fitted to
# the sea trials of thesis figs 3.10-3.11 (eq. 3.5 and the cross-flow of eqs 3.11-3.12,
# which the re-fit kept).
THESIS_QUADRATIC = {"Y_vv": -2000.0, "N_rr": -2000.0}


@dataclass(frozen=True)
class Turn:
    yaw_rate_deg_s: float
    tactical_diameter_m: float


def turn(vessel: Vessel, nozzle_deg: float, rpm: float) -> Turn:
    sim = Simulation(vessel, dt=DT)
    for jet in JETS:
        sim.set_command(f"{jet}.rpm", rpm)
        sim.set_command(f"{jet}.deflector", 1.0)
    sim.advance(round(60.0 / DT))
    north0, east0, psi0 = sim.x[0], sim.x[1], sim.x[5]
    for jet in JETS:
        sim.set_command(f"{jet}.nozzle_deg", nozzle_deg)
    rows = sim.advance(round(120.0 / DT), 1)  # columns: t, then x (north, east, ..., psi, ...)
    turned = np.unwrap(rows[:, 6]) - psi0
    across = -math.sin(psi0) * (rows[:, 1] - north0) + math.cos(psi0) * (rows[:, 2] - east0)
    half = np.flatnonzero(np.abs(turned) >= math.pi)
    tactical = abs(across[half[0]]) if len(half) else math.inf
    return Turn(math.degrees(rows[-1, 12]), tactical)


def thesis_model(tmp_path: Path) -> Vessel:
    text = PROFILE.read_text(encoding="utf-8")
    for key, value in THESIS_QUADRATIC.items():
        lines = [line for line in text.splitlines() if line.startswith(f"{key} = ")]
        assert len(lines) == 1, key
        text = text.replace(lines[0], f"{key} = {value}")
    path = tmp_path / "odin-thesis-damping.toml"
    path.write_text(text, encoding="utf-8")
    return load_profile(str(path))


@pytest.mark.parametrize("rpm", [1000.0, 1500.0, 2000.0])
def test_full_nozzle_turns_on_two_to_three_boat_lengths(rpm):
    """Waterjet craft of Odin's size turn on a tactical diameter of 2-3 L at full nozzle."""
    diameter = turn(load_profile("odin"), 27.0, rpm).tactical_diameter_m
    assert 2.0 * LENGTH <= diameter <= 3.0 * LENGTH, diameter / LENGTH


@pytest.mark.parametrize("rpm", [1000.0, 1500.0, 2000.0])
def test_small_nozzle_yaw_rates_stay_with_the_sea_trial_fit(rpm, tmp_path):
    """At 2 and 5 deg of nozzle, the re-fitted damping turns Odin within 10 % of the rate the
    thesis' fitted model gives. 10 %: the re-fit trades these rates against the full-nozzle
    diameter, and with the two quadratic coefficients 10 % is what holds at 2.35 L (the
    profile's comment); the thesis itself calls its fit close "with some occasional
    deviations" in unknown weather, so a closer match to its model would claim more than
    its figures show. The rates are also checked to be well apart from each other, so the
    check cannot pass on a rate that does not depend on the nozzle."""
    refit, thesis = load_profile("odin"), thesis_model(tmp_path)
    rates = []
    for nozzle_deg in (2.0, 5.0):
        ours = turn(refit, nozzle_deg, rpm).yaw_rate_deg_s
        theirs = turn(thesis, nozzle_deg, rpm).yaw_rate_deg_s
        assert ours == pytest.approx(theirs, rel=0.10), (nozzle_deg, ours, theirs)
        rates.append(ours)
    assert rates[1] > 1.3 * rates[0] > 0.0


def test_the_thesis_damping_turned_too_tightly(tmp_path):
    """The fault the re-fit mends: with the model files' quadratic damping, full nozzle at
    1500 rpm gave a tactical diameter of 1.5 L."""
    diameter = turn(thesis_model(tmp_path), 27.0, 1500.0).tactical_diameter_m
    assert diameter < 1.6 * LENGTH
