"""Vessel profiles: TOML files in profiles/ read and checked into the core's records.

A profile is validated as it is read (positive-definite mass matrix, consistent dimensions,
actuators in range); every error names the file, the key, the value and what was expected,
and every problem of the file is reported at once. The matrices are derived by
hild/model/vessel.py and the core's arrays packed by hild/model/pack.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hild.builtin import builtin_candidates, builtin_folder
from hild.config import ConfigError, FileKind, Problems, Reading, Section, load_toml
from hild.model.pack import LAWS, pack_actuators, pack_parameters
from hild.model.vessel import (
    DEGREES,
    ActuatorSpec,
    CrossFlow,
    FirstOrder,
    IttcFriction,
    NonlinearDamping,
    ThrustLaw,
    Vessel,
    WindLoad,
    cg_from_mass_matrix,
    cross_flow_sway,
    hoerner_cd,
    ittc_coefficient,
    move_to_co,
    rigid_body_mass_matrix,
    symmetric_positive_definite,
    with_relative_damping,
)

PROFILE_DIR = builtin_folder("profiles")


PROFILES = FileKind(
    "profile", "name", PROFILE_DIR, "HILD_PROFILE_PATH", searched=builtin_candidates("profiles")
)


def load_profile(name_or_path: str) -> Vessel:
    """Read, check and compile a vessel profile; every problem of the file is reported at once."""
    path = PROFILES.resolve(name_or_path)
    root = Section(load_toml(path), path)
    return _read_vessel(root, path)


def _read_hull(root: Section, path: Path) -> tuple[str, float, float, float, str]:
    """The [vessel] table, every key read on its own (the hull is refused if any is wrong)."""
    hull = root.table("vessel", required=True)
    problems = Problems()
    r = Reading(problems)
    name = r.get("name", hull.string, "name", path.stem, default="")
    r.get("description", hull.string, "description", "")
    length, beam, draft = (
        r.get(key, hull.number, key, positive=True, unit="m", default=1.0)
        for key in ("length", "beam", "draft")
    )
    if not problems.errors and draft > length:  # (a hull floats on its length, not on end)
        problems.add(
            hull.error("draft", draft, f"a draft of at most the hull's length ({length:g} m)")
        )
    # the point the added mass and linear damping derivatives are given about
    reference = r.get(
        "hydrodynamic_reference",
        hull.string,
        "hydrodynamic_reference",
        "co",
        choices=("co", "cg"),
        default="co",
    )
    problems.attempt(hull.finish)
    problems.raise_any()
    return name, length, beam, draft, reference


def _read_water(root: Section, path: Path) -> tuple[float, float]:
    water = root.table("water") or Section({}, path, "water")
    problems = Problems()
    r = Reading(problems)
    rho = r.get(
        "density",
        water.number,
        "density",
        1025.0,
        lo=990.0,
        hi=1040.0,
        unit="kg/m^3",
        default=1025.0,
    )
    nu_water = r.get(
        "kinematic_viscosity",
        water.number,
        "kinematic_viscosity",
        1.0e-6,
        positive=True,
        unit="m^2/s",
        default=1.0e-6,
    )
    problems.attempt(water.finish)
    problems.raise_any()
    return rho, nu_water


def _read_vessel(root: Section, path: Path) -> Vessel:
    """Each table is read on its own, so that one run lists every problem of the file; a
    table that needs another's values (damping needs the mass) is read once those are good."""
    problems = Problems()
    hull = problems.attempt(_read_hull, root, path)
    rho, nu_water = problems.attempt(_read_water, root, path, default=(1025.0, 1.0e-6))
    length = hull[1] if hull is not None else None
    M_RB = problems.attempt(
        lambda: _read_rigid_body(root.table("rigid_body", required=True), length)
    )
    M_A, munk = problems.attempt(
        lambda: _read_added_mass(root.table("added_mass")), default=(None, True)
    )
    G = problems.attempt(lambda: _read_restoring(root.table("restoring")))
    actuators: tuple[ActuatorSpec, ...] | None = None
    wind: WindLoad | None = None
    if hull is not None:
        _, length, beam, _, _ = hull
        actuators = problems.attempt(_read_actuators, root.tables("actuator"), length, beam)
        wind = problems.attempt(lambda: _read_wind(root.table("wind"), length))
    else:
        root.skip("actuator", "wind")  # they need the hull's size
    wave_gains = problems.attempt(lambda: _read_waves(root.table("waves")))

    if hull is not None and M_RB is not None:
        problems.errors.extend(_size_errors(path, M_RB, hull[1:4], rho))
    D_L = nonlinear = None
    if hull is not None and M_RB is not None and M_A is not None and G is not None:
        reference = hull[4]
        r_g = cg_from_mass_matrix(M_RB)
        if reference == "cg":
            M_A = move_to_co(M_A, r_g)
        M = M_RB + M_A
        if not symmetric_positive_definite(M):
            eig = np.linalg.eigvalsh(0.5 * (M + M.T))
            problems.errors.append(
                ConfigError(
                    path,
                    "added_mass",
                    f"smallest eigenvalue of M {eig.min():.4g}",
                    "M = M_RB + M_A to be positive definite",
                )
            )
            root.skip("damping")  # it needs a positive-definite M
        else:
            r_about = r_g if reference == "cg" else None
            damping = problems.attempt(
                lambda: _read_damping(root.table("damping"), M, G, r_about, hull[1:4], rho)
            )
            if damping is not None:
                D_L, nonlinear = damping
    else:
        root.skip("damping")  # it needs the hull and the mass
    problems.attempt(root.finish)
    problems.raise_any()
    assert hull is not None and M_RB is not None and M_A is not None and G is not None
    assert D_L is not None and nonlinear is not None and actuators is not None
    return Vessel(
        name=hull[0],
        source=str(path),
        params=pack_parameters(M_RB, M_A, D_L, G, nonlinear, nu_water, munk),
        actuator_params=pack_actuators(actuators),
        actuators=actuators,
        M_RB=M_RB,
        M_A=M_A,
        D_L=D_L,
        G=G,
        length=hull[1],
        wind=wind,
        wave_gains=wave_gains,
        beam=hull[2],
    )


def _size_errors(
    path: Path, M_RB: np.ndarray, size: tuple[float, float, float], rho: float
) -> list[ConfigError]:
    """The mass and the principal moments of inertia against the hull's size (the bounds are
    argued at MASS_RANGE_KG and GYRATION_RANGE)."""
    length, beam, draft = size
    m = float(M_RB[0, 0])
    errors = []
    box = rho * length * beam * draft
    if m > MAX_BLOCK_COEFFICIENT * box:
        errors.append(
            ConfigError(
                path,
                "rigid_body.mass",
                m,
                f"at most {MAX_BLOCK_COEFFICIENT:g} x {box:.4g} kg, the "
                f"water a {length:g} x {beam:g} x {draft:g} m hull (vessel.length, beam, draft) "
                "can displace",
            )
        )
    lo, hi = (m * (k * length) ** 2 for k in GYRATION_RANGE)
    moments = np.linalg.eigvalsh(M_RB[3:, 3:])
    if moments.min() < lo or moments.max() > hi:
        shown = ", ".join(f"{v:.4g}" for v in moments)
        errors.append(
            ConfigError(
                path,
                "rigid_body.inertia",
                f"principal moments {shown} kg m^2",
                f"principal moments from {lo:.4g} to {hi:.4g} kg m^2: radii of gyration "
                f"from {GYRATION_RANGE[0]:g} to {GYRATION_RANGE[1]:g} hull lengths ({length:g} m) "
                f"for {m:g} kg",
            )
        )
    return errors


WIND_MODELS = ("blendermann", "symmetric", "vrx")


def _read_wind(s: Section | None, length: float) -> WindLoad | None:
    """Wind-load data for the environment's force models (thesis 2.50-2.72, VRX eqs 23-25).

    ``height`` is where the model takes the wind (thesis eq. 2.43); 10 m, the
    reference height of the presets, leaves the wind as given.
    """
    if s is None:
        return None
    model = s.string("model", choices=WIND_MODELS)
    height = s.number("height", 10.0, positive=True, hi=100.0, unit="m")
    load_length = s.number("length", length, positive=True, unit="m")
    if model == "vrx":
        c = s.array("coefficients", (3,))
        if np.any(c < 0.0):
            raise s.error("coefficients", c.tolist(), "c_x, c_y, c_n >= 0 [kg/m] (VRX eq. 25)")
        s.finish()
        c_x, c_y, c_n = (float(v) for v in c)
        return WindLoad(model, height, load_length, c_x=c_x, c_y=c_y, c_n=c_n)
    areas = {
        "frontal_area": s.number("frontal_area", positive=True, unit="m^2"),
        "lateral_area": s.number("lateral_area", positive=True, unit="m^2"),
    }
    if model == "symmetric":
        # thesis eqs 2.62-2.67 (Fossen's ranges)
        coefficients = {
            "c_x": s.number("c_x", 0.7, lo=0.0, hi=2.0),
            "c_y": s.number("c_y", 0.825, lo=0.0, hi=2.0),
            "c_n": s.number("c_n", 0.125, lo=0.0, hi=1.0),
        }
    else:
        # Blendermann: thesis eqs 2.57-2.61 and Odin's values 3.22-3.25
        coefficients = {
            "side_centre_height": s.number("s_H", lo=0.0, unit="m"),
            "side_centre_ahead": s.number("s_L", lo=-length, hi=length, unit="m"),
            "cd_transverse": s.number("CD_t", positive=True, hi=2.0),
            "cd_lateral_head": s.number("CD_l_af_head", positive=True, hi=2.0),
            "cd_lateral_tail": s.number("CD_l_af_tail", positive=True, hi=2.0),
            "delta": s.number("delta", lo=0.0, hi=1.0),
            "kappa": s.number("kappa", lo=0.0, hi=3.0),
        }
    s.finish()
    return WindLoad(model, height, load_length, **areas, **coefficients)


def _read_waves(s: Section | None) -> tuple[float, float, float]:
    """Multipliers on the wave-force scale in surge, sway and yaw (thesis gains K_w^{i})."""
    if s is None:
        return (1.0, 1.0, 1.0)
    gains = s.array("gains", (3,), [1.0, 1.0, 1.0])
    if np.any(gains < 0.0):
        raise s.error("gains", gains.tolist(), "non-negative surge, sway and yaw gains")
    s.finish()
    return (float(gains[0]), float(gains[1]), float(gains[2]))


# Masses a hull can have: from a 1 kg model boat to 1e9 kg, above the largest ship ever built
# (Seawise Giant, 6.6e8 kg laden). Within that a hull's mass is what it displaces, at most the
# water in the box of its length, beam and draft (a block coefficient of 1), with half as much
# again for a waterline longer than the length between perpendiculars and a rounded draft.
MASS_RANGE_KG = (1.0, 1e9)
MAX_BLOCK_COEFFICIENT = 1.5
# A principal moment of inertia about CO is m k^2 with k the radius of gyration: every part of
# a hull lies within a hull length L of CO, so k <= L; and no hull gathers its mass within a
# hundredth of its length of an axis (Odin's roll, the smallest of the built-in profiles, has
# k = 0.07 L; a solid box L x L/10 x L/20 has k = 0.03 L about its long axis).
GYRATION_RANGE = (0.01, 1.0)  # k / L


def _read_rigid_body(s: Section, length: float | None) -> np.ndarray:
    """``length``: the hull's (None when it did not read), which the centre of gravity lies
    within from CO, as every part of the hull does (see GYRATION_RANGE)."""
    m = s.number("mass", positive=True, unit="kg")
    low, high = MASS_RANGE_KG
    if not low <= m <= high:
        raise s.error("mass", m, f"a mass from {low:g} kg to {high:g} kg")
    r_g = s.array("cg", (3,))
    if length is not None and float(np.linalg.norm(r_g)) > length:
        raise s.error(
            "cg",
            r_g.tolist(),
            f"a centre of gravity within the hull's length "
            f"({length:g} m) of CO, in metres [forward, starboard, down]",
        )
    I_o = s.array("inertia", (3, 3))
    if not np.allclose(I_o, I_o.T):
        raise s.error("inertia", I_o.tolist(), "a symmetric 3x3 inertia tensor about CO")
    if not symmetric_positive_definite(I_o):
        raise s.error("inertia", I_o.tolist(), "a positive-definite inertia tensor")
    s.finish()
    return rigid_body_mass_matrix(m, r_g, I_o)


def _read_added_mass(s: Section | None) -> tuple[np.ndarray, bool]:
    if s is None:
        return np.zeros((6, 6)), True
    M_A = s.matrix_or_diagonal("matrix", "diagonal", 6)
    symmetrize = s.boolean("symmetrize", False)
    munk = s.boolean("munk_moment", True)
    asym = float(np.max(np.abs(M_A - M_A.T)))
    if asym > 1e-9 * max(1.0, float(np.max(np.abs(M_A)))):
        if not symmetrize:
            raise s.error(
                "matrix",
                f"max |M_A - M_A^T| = {asym:.4g}",
                "a symmetric added mass matrix, or symmetrize = true to use its symmetric "
                "part (a passive model, whose energy can only decay, needs one)",
            )
        M_A = 0.5 * (M_A + M_A.T)
    s.finish()
    return M_A, munk


def _read_restoring(s: Section | None) -> np.ndarray:
    if s is None:
        return np.zeros((6, 6))
    G = s.matrix_or_diagonal("matrix", "diagonal", 6)
    for i in (0, 1, 5):
        if np.any(G[i] != 0.0) or np.any(G[:, i] != 0.0):
            raise s.error("matrix", G.tolist(), "no restoring in surge, sway or yaw (eq. 2.33)")
    if not symmetric_positive_definite(G[2:5, 2:5]):
        raise s.error("matrix", G.tolist(), "a positive-definite heave-roll-pitch block")
    s.finish()
    return G


QUAD_KEYS = ("X_uu", "Y_vv", "Y_rv", "Y_vr", "Y_rr", "N_vv", "N_rv", "N_vr", "N_rr")
RELATIVE_DOF = {"heave": 2, "roll": 3, "pitch": 4}


def _read_damping(
    s: Section | None,
    M: np.ndarray,
    G: np.ndarray,
    r_about: np.ndarray | None,
    size: tuple[float, float, float],
    rho: float,
) -> tuple[np.ndarray, NonlinearDamping]:
    """Linear damping at CO (moved from r_about if given) and the nonlinear terms; ``size``
    is the hull's length, beam and draft [m]."""
    if s is None:
        return np.zeros((6, 6)), NonlinearDamping()
    D_L = s.matrix_or_diagonal("linear", "linear_diagonal", 6)
    if np.any(np.diag(D_L) < 0.0):
        raise s.error("linear", D_L.tolist(), "a damping matrix with non-negative diagonal")
    rel = s.table("relative")
    if rel is not None:
        D_L = with_relative_damping(D_L, _read_relative_damping(rel, G), M, G)
    if r_about is not None:
        # all linear damping, the relative terms included, is about the CG
        D_L = move_to_co(D_L, r_about)
    quadratic = tuple(s.number(key, 0.0, hi=0.0) for key in QUAD_KEYS)
    length, beam, draft = size
    ittc = s.table("ittc")
    cf = s.table("cross_flow")
    nonlinear = NonlinearDamping(
        quadratic,
        None if ittc is None else _read_ittc(ittc, rho, length),
        None if cf is None else _read_cross_flow(cf, rho, size),
    )
    s.finish()
    return D_L, nonlinear


def _read_relative_damping(rel: Section, G: np.ndarray) -> dict[int, float]:
    """Fractions of critical damping by degree of freedom (those given and above 0)."""
    zetas = {}
    for dof, i in RELATIVE_DOF.items():
        zeta = rel.number(dof, 0.0, lo=0.0, hi=2.0)
        if zeta > 0.0:
            if G[i, i] <= 0.0:
                raise rel.error(dof, zeta, f"a restoring term G[{i},{i}] > 0 to scale with")
            zetas[i] = zeta
    rel.finish()
    return zetas


def _read_ittc(ittc: Section, rho: float, length: float) -> IttcFriction:
    if ittc.has("wetted_surface"):
        S = ittc.number("wetted_surface", positive=True, unit="m^2")
        form_factor = ittc.number("form_factor", 0.1, lo=0.0, hi=1.0)
        coefficient = ittc_coefficient(rho, S, form_factor)
    else:
        coefficient = ittc.number("coefficient", positive=True, unit="kg/m")
    friction = IttcFriction(
        coefficient,
        ittc.number("residual", 0.0, lo=0.0, hi=0.1),
        ittc.number("length", length, positive=True, unit="m"),
    )
    ittc.finish()
    return friction


def _read_cross_flow(cf: Section, rho: float, size: tuple[float, float, float]) -> CrossFlow:
    length, beam, draft = size
    if cf.has("sway"):
        cy = cf.number("sway", lo=0.0, unit="kg/m^3")
    else:
        cd = cf.raw("cd_2d", "hoerner")
        if cd == "hoerner":
            cd = hoerner_cd(beam, draft)
        elif isinstance(cd, bool) or not isinstance(cd, int | float) or cd < 0:
            raise cf.error("cd_2d", cd, '"hoerner" or a non-negative number')
        cy = cross_flow_sway(rho, draft, float(cd))
    cross_flow = CrossFlow(
        sway=cy,
        yaw=cf.number("yaw", cy, lo=0.0, unit="kg/m^3"),
        length=cf.number("length", length, positive=True, unit="m"),
        strips=cf.integer("strips", 20, lo=1, hi=MAX_STRIPS),
        x_mid=cf.number("x_mid", 0.0, unit="m"),
    )
    cf.finish()
    return cross_flow


# The cross-flow drag's strips (the strip integration of thesis eqs 2.31-2.32, model/dynamics.py):
# each is summed in every RK4 stage, and the sum has converged long before 1,000
# (Odin turning for 600 s: the yaw rate 0.0024298 with 200 strips, 0.0024297 with 1,000;
# 1,000 strips cost 30 % more than 20 in `hild sim`). A hundred million hung the step.
MAX_STRIPS = 1000

GLF_KEYS = ("A", "K", "B", "nu", "C", "M")


def _read_actuators(
    sections: list[Section], length: float, beam: float
) -> tuple[ActuatorSpec, ...]:
    """Every actuator is read on its own: the errors of all of them are reported together."""
    specs: list[ActuatorSpec] = []
    names: set[str] = set()
    problems = Problems()
    for i, s in enumerate(sections):
        spec = problems.attempt(_read_actuator, s, i, names, length, beam)
        if spec is not None:
            specs.append(spec)
    problems.raise_any()
    return tuple(specs)


def _read_actuator(s: Section, i: int, names: set[str], length: float, beam: float) -> ActuatorSpec:
    name = s.string("name")
    if name in names or not name.isidentifier():
        raise s.error("name", name, "a unique identifier such as 'port' or 'starboard'")
    names.add(name)
    kind = s.string("kind", choices=("propeller", "waterjet", "thruster"))
    pos = s.array("position", (3,))
    if abs(pos[0]) > length or abs(pos[1]) > beam:
        raise s.error("position", pos.tolist(), "a position on the hull (x, y, z from CO, m)")
    mount = s.number("mount_deg", 0.0, lo=-180.0, hi=180.0) * DEGREES
    thrust = _read_thrust(s.table("thrust", required=True))

    speed = s.table("speed", required=True)
    unit = speed.string("unit", choices=("rpm", "normalized"))
    hi = speed.number("max", 1.0) if unit == "normalized" else speed.number("max", positive=True)
    lo = speed.number("min", -hi if unit == "normalized" else 0.0)
    if lo >= hi:
        raise speed.error("min", lo, f"less than max ({hi:g})")
    speed_response = _first_order(speed, lo, hi, "rate", "unit/s", 1.0)
    speed0 = speed.number("initial", min(max(0.0, lo), hi), lo=lo, hi=hi)
    speed.finish()

    angle_kind = "none"
    angle_range = (0.0, 0.0)
    angle_response = None
    angle0 = 0.0
    for key in ("azimuth", "nozzle"):
        t = s.table(key)
        if t is None:
            continue
        if angle_kind != "none":
            raise s.error(key, t.data, "either an azimuth or a nozzle, not both")
        angle_kind = key
        lo_deg = t.number("min_deg", lo=-180.0, hi=0.0)
        hi_deg = t.number("max_deg", lo=0.0, hi=180.0)
        angle_response = _first_order(
            t, lo_deg * DEGREES, hi_deg * DEGREES, "rate_deg", "deg/s", DEGREES
        )
        angle0 = t.number("initial_deg", 0.0, lo=lo_deg, hi=hi_deg) * DEGREES
        angle_range = (lo_deg, hi_deg)
        t.finish()

    deflector_response = None
    deflector0 = 1.0
    t = s.table("deflector")
    if t is not None:
        if kind != "waterjet":
            raise s.error("deflector", t.data, "a deflector only on kind = 'waterjet'")
        dlo = t.number("min", -1.0, lo=-1.0, hi=0.0)
        dhi = t.number("max", 1.0, lo=0.0, hi=1.0)
        deflector_response = _first_order(t, dlo, dhi, "rate", "1/s", 1.0)
        deflector0 = t.number("initial", 0.0, lo=dlo, hi=dhi)
        t.finish()
    s.finish()
    return ActuatorSpec(
        name=name,
        index=i,
        kind=kind,
        speed_unit=unit,
        angle_kind=angle_kind,
        angle_range_deg=angle_range,
        initial=(speed0, angle0, deflector0),
        position=(float(pos[0]), float(pos[1]), float(pos[2])),
        mount=mount,
        thrust=thrust,
        speed=speed_response,
        angle=angle_response,
        deflector=deflector_response,
    )


def _read_thrust(thrust: Section) -> ThrustLaw:
    law = thrust.string("law", choices=tuple(LAWS))
    if law == "glf":
        sides = []
        for side in ("forward", "reverse"):
            g = thrust.table(side, required=True)
            values = tuple(g.number(key) for key in GLF_KEYS)
            if values[3] == 0.0:
                raise g.error("nu", 0.0, "a non-zero exponent")
            g.finish()
            sides.append(values)
        result = ThrustLaw(law, glf_forward=sides[0], glf_reverse=sides[1])
    else:
        key = "k_forward" if thrust.has("k_forward") else "k"
        fwd = thrust.number(key, lo=0.0)
        result = ThrustLaw(law, k_forward=fwd, k_reverse=thrust.number("k_reverse", fwd, lo=0.0))
    thrust.finish()
    return result


def _first_order(
    t: Section, lo: float, hi: float, rate_key: str, unit: str, to_si: float
) -> FirstOrder:
    """One actuator state's lag, rate limit and limits; the rate is given in ``unit`` and
    ``to_si`` converts it (DEGREES for deg/s)."""
    return FirstOrder(
        time_constant=t.number("time_constant", 0.0, lo=0.0, unit="s"),
        rate_limit=t.number(rate_key, 0.0, lo=0.0, unit=unit) * to_si,  # 0 means unlimited
        lo=lo,
        hi=hi,
    )
