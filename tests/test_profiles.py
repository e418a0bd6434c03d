"""Profiles load and validate; Jolner's calibration holds the thesis' speeds."""

import math
import re
import shutil

import numpy as np
import pytest
from conftest import PROFILES, vessel

from hild.config import ConfigError
from hild.coupled.simulation import Simulation
from hild.model import layout as L
from hild.profiles.vessel import PROFILE_DIR, load_profile


@pytest.mark.parametrize("name", PROFILES)
def test_profile_loads_with_positive_definite_mass_and_two_named_actuators(name):
    v = vessel(name)
    M = v.M
    np.testing.assert_allclose(M, M.T, atol=1e-9)
    assert np.linalg.eigvalsh(M).min() > 0
    assert [a.name for a in v.actuators] == ["port", "starboard"]
    assert v.actuator("port").commands[0] in ("rpm", "cmd")


def steady_speed(name, fraction, seconds=300.0):
    sim = Simulation(vessel(name), dt=0.02)
    n_max = vessel(name).actuator("port").speed_range[1]
    for side in ("port", "starboard"):
        sim.set_command(f"{side}.rpm", fraction * n_max)
    sim.advance(int(seconds / 0.02))
    return sim.x[L.X_NU]


def test_jolner_holds_3_m_per_s_at_full_rpm():
    # thesis sec. 3.10.1: both thrusters at n_max hold 3.0 m/s
    assert steady_speed("jolner", 1.0) == pytest.approx(3.0, rel=0.05)


def test_jolner_at_35_percent_rpm_is_slower_than_the_thesis_reports():
    # The thesis reports 1.2 m/s at 0.35 n_max. With K n|n| thrust and the
    # thesis' own damping (eqs 3.6, 3.10) the force at 0.35 n_max is 12 % of
    # full, which this hull's resistance balances near 0.8 m/s: the recorded
    # 1.2 m/s and 3.0 m/s cannot both hold with one K. docs/vessels.md.
    u = steady_speed("jolner", 0.35)
    assert 0.75 < u < 0.85


def test_otter_reaches_fossens_design_speed_at_n_max():
    # Fossen sizes X_u so that full thrust balances linear drag at 6 knots
    assert steady_speed("otter", 1.0) == pytest.approx(6 * 0.5144, rel=0.01)


def write_variant(tmp_path, name, old, new):
    text = (PROFILE_DIR / f"{name}.toml").read_text()
    assert old in text
    path = tmp_path / f"{name}-variant.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_negative_mass_names_file_key_value_and_expectation(tmp_path):
    path = write_variant(tmp_path, "odin", "mass = 6000.0", "mass = -6000.0")
    with pytest.raises(ConfigError) as e:
        load_profile(str(path))
    msg = str(e.value)
    assert str(path) in msg and "rigid_body.mass" in msg and "-6000" in msg
    assert "greater than 0" in msg


def test_misspelt_key_is_refused_with_a_suggestion(tmp_path):
    path = write_variant(tmp_path, "odin", "X_uu = -135.0", "X_uuu = -135.0")
    with pytest.raises(ConfigError, match=re.escape("did you mean 'X_uu'")):
        load_profile(str(path))


def test_asymmetric_added_mass_needs_an_explicit_choice(tmp_path):
    path = write_variant(tmp_path, "odin", "symmetrize = true", "symmetrize = false")
    with pytest.raises(ConfigError, match="symmetrize = true"):
        load_profile(str(path))


def test_mass_matrix_that_is_not_positive_definite_is_refused(tmp_path):
    path = write_variant(tmp_path, "wamv", "[0.0, 0.0, 446.0]", "[0.0, 0.0, -446.0]")
    with pytest.raises(ConfigError, match="positive-definite"):
        load_profile(str(path))


def test_actuator_out_of_range_is_refused(tmp_path):
    path = write_variant(tmp_path, "odin", "initial = 400.0", "initial = 4000.0")
    with pytest.raises(ConfigError, match=r"actuator\[0\]\.speed\.initial.*at most 2000"):
        load_profile(str(path))


def test_wrong_matrix_shape_is_refused(tmp_path):
    path = write_variant(
        tmp_path,
        "jolner",
        "[12.76, 51.57, 0.0, 0.21, 0.0, 13.19]",
        "[12.76, 51.57, 0.0, 0.21, 13.19]",
    )
    with pytest.raises(ConfigError, match=r"damping\.linear_diagonal.*6 numbers"):
        load_profile(str(path))


def test_unknown_profile_lists_the_built_in_ones():
    with pytest.raises(ConfigError, match="jolner, odin, otter, wamv"):
        load_profile("titanic")


def test_profile_path_works_from_anywhere(tmp_path):
    shutil.copy(PROFILE_DIR / "otter.toml", tmp_path / "my-otter.toml")
    v = load_profile(str(tmp_path / "my-otter.toml"))
    assert v.name == "otter" and math.isclose(v.M_RB[0, 0], 80.0)


def test_wind_data_is_kept_for_the_environment():
    odin = vessel("odin").wind
    assert odin is not None and odin.model == "blendermann"
    assert odin.frontal_area == 6.4 and odin.lateral_area == 11.31
    # profiles/odin.toml [wind], read under the thesis' symbols
    assert (odin.side_centre_height, odin.side_centre_ahead, odin.cd_transverse) == (0.4, 1.2, 0.9)
    wamv = vessel("wamv").wind
    assert wamv is not None and (wamv.c_x, wamv.c_y, wamv.c_n) == (0.5, 0.5, 0.33)


def test_wind_data_must_be_numbers(tmp_path):
    path = write_variant(tmp_path, "odin", "kappa = 1.1", 'kappa = "high"')
    with pytest.raises(ConfigError, match=r"wind\.kappa.*a number"):
        load_profile(str(path))


@pytest.mark.parametrize(
    "old, new, needles",
    [
        ('model = "blendermann"', 'model = "blenderman"', ["wind.model", "'symmetric'"]),
        ("CD_t = 0.9", "CD_tt = 0.9", ["wind.CD_t", "present"]),
        ("delta = 0.6", "delta = 1.6", ["wind.delta", "at most 1"]),
    ],
)
def test_wind_load_errors_name_the_key(tmp_path, old, new, needles):
    path = write_variant(tmp_path, "odin", old, new)
    with pytest.raises(ConfigError) as e:
        load_profile(str(path))
    for needle in needles:
        assert needle in str(e.value)


@pytest.mark.parametrize(
    ("old", "new", "key", "says"),
    [
        # blamed on the added mass's eigenvalue before: the mass matrix went indefinite
        ("cg = [", "cg = [-1500.0, 0.0, 0.0] # was [", "rigid_body.cg", "within the hull's length"),
        ("draft = ", "draft = 1e9 # was ", "vessel.draft", "at most the hull's length"),
    ],
)
def test_a_hull_s_geometry_is_blamed_on_the_key_that_is_wrong(tmp_path, old, new, key, says):
    path = write_variant(tmp_path, "odin", old, new)
    with pytest.raises(ConfigError) as e:
        load_profile(str(path))
    errors = getattr(e.value, "errors", [e.value])
    assert [err.key for err in errors] == [key] and says in errors[0].expected, errors


@pytest.mark.parametrize(
    ("strips", "says"), [(0, "from 1 to 1000"), (100_000_000, "from 1 to 1000")]
)
def test_cross_flow_strips_are_bounded(tmp_path, strips, says):
    """A hundred million strips hung the compiled step (each is summed in every RK4 stage)."""
    path = write_variant(tmp_path, "odin", "strips = 20", f"strips = {strips}")
    with pytest.raises(ConfigError) as e:
        load_profile(str(path))
    assert e.value.key == "damping.cross_flow.strips" and says in e.value.expected, e.value


def test_wind_load_data_per_profile():
    # Odin: Blendermann with the thesis' areas (3.22-3.25); WAM-V: VRX coefficients;
    # Otter and BlueBoat: the symmetric model; Jolner: none (thesis 3.11.1.2 neglects its
    # windage).
    models = {name: getattr(vessel(name).wind, "model", None) for name in PROFILES}
    assert models == {
        "odin": "blendermann",
        "wamv": "vrx",
        "otter": "symmetric",
        "jolner": None,
        "blueboat": "symmetric",
    }
