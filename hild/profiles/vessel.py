"""Vessel profiles: TOML files in profiles/ read, checked and packed into a core Vessel.

A profile is validated as it is read (positive-definite mass matrix, consistent dimensions,
actuators in range); every error names the file, the key, the value and what was expected,
and every problem of the file is reported at once.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from hild.config import ConfigError, Problems, Section, builtin_names, load_toml, resolve_file
from hild.model import layout as L
from hild.model.vessel import (
    DEGREES,
    ActuatorSpec,
    Vessel,
    cg_from_mass_matrix,
    hoerner_cd,
    move_to_co,
    rigid_body_mass_matrix,
    symmetric_positive_definite,
)

PROFILE_DIR = Path(__file__).resolve().parents[2] / "profiles"


def available_profiles() -> list[str]:
    """Names of the built-in vessel profiles."""
    return builtin_names(PROFILE_DIR)


def resolve_profile(name_or_path: str) -> Path:
    """A profile's file from a path or a built-in name (HILD_PROFILE_PATH adds folders)."""
    return resolve_file(name_or_path, PROFILE_DIR, "HILD_PROFILE_PATH", "profile", "name")


def load_profile(name_or_path: str) -> Vessel:
    """Read, check and compile a vessel profile; every problem of the file is reported at once."""
    path = resolve_profile(name_or_path)
    root = Section(load_toml(path), path)
    return _read_vessel(root, path)


def _read_hull(root: Section, path: Path) -> tuple[str, float, float, float, str]:
    hull = root.table("vessel", required=True)
    assert hull is not None
    name = hull.string("name", path.stem)
    hull.string("description", "")
    length = hull.number("length", positive=True, unit="m")
    beam = hull.number("beam", positive=True, unit="m")
    draft = hull.number("draft", positive=True, unit="m")
    # the point the added mass and linear damping derivatives are given about
    reference = hull.string("hydrodynamic_reference", "co", choices=("co", "cg"))
    hull.finish()
    return name, length, beam, draft, reference


def _read_water(root: Section, path: Path) -> tuple[float, float]:
    water = root.table("water") or Section({}, path, "water")
    rho = water.number("density", 1025.0, lo=990.0, hi=1040.0, unit="kg/m^3")
    nu_water = water.number("kinematic_viscosity", 1.0e-6, positive=True, unit="m^2/s")
    water.finish()
    return rho, nu_water


def _read_vessel(root: Section, path: Path) -> Vessel:
    """Each table is read on its own, so that one run lists every problem of the file; a
    table that needs another's values (damping needs the mass) is read once those are good."""
    problems = Problems()
    hull = problems.attempt(_read_hull, root, path)
    rho, nu_water = problems.attempt(_read_water, root, path, default=(1025.0, 1.0e-6))
    M_RB = problems.attempt(lambda: _read_rigid_body(root.table("rigid_body", required=True)))
    M_A, munk = problems.attempt(
        lambda: _read_added_mass(root.table("added_mass")), default=(None, True)
    )
    G = problems.attempt(lambda: _read_restoring(root.table("restoring")))
    if hull is not None:
        _, length, beam, _, _ = hull
        actuators, A = problems.attempt(
            _read_actuators, root.tables("actuator"), length, beam, default=(None, None)
        )
        wind = problems.attempt(lambda: _read_wind(root.table("wind"), length))
    else:
        root.skip("actuator", "wind")  # they need the hull's size
    wave_gains = problems.attempt(lambda: _read_waves(root.table("waves")))

    P = np.zeros(L.P_SIZE)
    P[L.P_WATER_NU] = nu_water
    D_L = None
    if hull is not None and M_RB is not None and M_A is not None and G is not None:
        reference = hull[4]
        r_g = cg_from_mass_matrix(M_RB)
        if reference == "cg":
            M_A = move_to_co(M_A, r_g)
        M = M_RB + M_A
        if not symmetric_positive_definite(M):
            eig = np.linalg.eigvalsh(0.5 * (M + M.T))
            problems.errors.append(ConfigError(
                path, "added_mass", f"smallest eigenvalue of M {eig.min():.4g}",
                "M = M_RB + M_A to be positive definite",
            ))  # fmt: skip
        else:
            r_about = r_g if reference == "cg" else None
            damping = problems.attempt(
                lambda: _read_damping(root.table("damping"), M, G, r_about, hull[1:4], rho)
            )
            if damping is not None:
                D_L, nonlinear = damping
                for slot, value in nonlinear.items():
                    P[slot] = value
    else:
        root.skip("damping")  # it needs the hull and the mass
    problems.attempt(root.finish)
    problems.raise_any()
    assert hull is not None and M_RB is not None and M_A is not None and D_L is not None

    P[L.P_M_INV : L.P_M_INV + 36] = np.linalg.inv(M_RB + M_A).ravel()
    P[L.P_MA : L.P_MA + 36] = M_A.ravel()
    P[L.P_MASS] = M_RB[0, 0]
    P[L.P_RG : L.P_RG + 3] = cg_from_mass_matrix(M_RB)
    P[L.P_IO : L.P_IO + 9] = M_RB[3:, 3:].ravel()
    P[L.P_DL : L.P_DL + 36] = D_L.ravel()
    P[L.P_G : L.P_G + 36] = G.ravel()
    P[L.P_MUNK] = 1.0 if munk else 0.0
    return Vessel(
        name=hull[0], source=str(path), params=P, actuator_params=A, actuators=actuators,
        M_RB=M_RB, M_A=M_A, D_L=D_L, G=G, length=hull[1], wind=wind, wave_gains=wave_gains,
    )  # fmt: skip


WIND_MODELS = ("blendermann", "symmetric", "vrx")


def _read_wind(s: Section | None, length: float) -> dict[str, Any]:
    """Wind-load data for the environment's force models (thesis 2.50-2.72, VRX eqs 23-25).

    ``height`` is where the model takes the wind (thesis eq. 2.43); 10 m, the
    reference height of the presets, leaves the wind as given.
    """
    if s is None:
        return {}
    model = s.string("model", choices=WIND_MODELS)
    wind: dict[str, Any] = {"model": model}
    wind["height"] = s.number("height", 10.0, positive=True, hi=100.0, unit="m")
    wind["length"] = s.number("length", length, positive=True, unit="m")
    if model == "vrx":
        c = s.array("coefficients", (3,))
        if np.any(c < 0.0):
            raise s.error("coefficients", c.tolist(), "c_x, c_y, c_n >= 0 [kg/m] (VRX eq. 25)")
        wind["coefficients"] = c.tolist()
    else:
        wind["frontal_area"] = s.number("frontal_area", positive=True, unit="m^2")
        wind["lateral_area"] = s.number("lateral_area", positive=True, unit="m^2")
    if model == "symmetric":
        # thesis eqs 2.62-2.67 (Fossen's ranges)
        wind["c_x"] = s.number("c_x", 0.7, lo=0.0, hi=2.0)
        wind["c_y"] = s.number("c_y", 0.825, lo=0.0, hi=2.0)
        wind["c_n"] = s.number("c_n", 0.125, lo=0.0, hi=1.0)
    if model == "blendermann":
        # thesis eqs 2.57-2.61 and Odin's values 3.22-3.25
        wind["s_H"] = s.number("s_H", lo=0.0, unit="m")
        wind["s_L"] = s.number("s_L", lo=-length, hi=length, unit="m")
        wind["CD_t"] = s.number("CD_t", positive=True, hi=2.0)
        wind["CD_l_af_head"] = s.number("CD_l_af_head", positive=True, hi=2.0)
        wind["CD_l_af_tail"] = s.number("CD_l_af_tail", positive=True, hi=2.0)
        wind["delta"] = s.number("delta", lo=0.0, hi=1.0)
        wind["kappa"] = s.number("kappa", lo=0.0, hi=3.0)
    s.finish()
    return wind


def _read_waves(s: Section | None) -> tuple[float, float, float]:
    """Multipliers on the wave-force scale in surge, sway and yaw (thesis gains K_w^{i})."""
    if s is None:
        return (1.0, 1.0, 1.0)
    gains = s.array("gains", (3,), [1.0, 1.0, 1.0])
    if np.any(gains < 0.0):
        raise s.error("gains", gains.tolist(), "non-negative surge, sway and yaw gains")
    s.finish()
    return (float(gains[0]), float(gains[1]), float(gains[2]))


def _read_rigid_body(s: Section) -> np.ndarray:
    m = s.number("mass", positive=True, unit="kg")
    r_g = s.array("cg", (3,))
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
                "matrix", f"max |M_A - M_A^T| = {asym:.4g}",
                "a symmetric added mass matrix, or symmetrize = true to use its symmetric "
                "part (a passive model, whose energy can only decay, needs one)",
            )  # fmt: skip
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
) -> tuple[np.ndarray, dict[int, float]]:
    """Linear damping at CO (moved from r_about if given), and the nonlinear terms' parameters
    by their P_* slot; ``size`` is the hull's length, beam and draft [m]."""
    length, beam, draft = size
    slots: dict[int, float] = {}
    if s is None:
        return np.zeros((6, 6)), slots
    D_L = s.matrix_or_diagonal("linear", "linear_diagonal", 6)
    if np.any(np.diag(D_L) < 0.0):
        raise s.error("linear", D_L.tolist(), "a damping matrix with non-negative diagonal")
    rel = s.table("relative")
    if rel is not None:
        # extra linear damping 2 zeta omega_n M_ii with omega_n = sqrt(G_ii / M_ii)
        for dof, i in RELATIVE_DOF.items():
            zeta = rel.number(dof, 0.0, lo=0.0, hi=2.0)
            if zeta > 0.0:
                if G[i, i] <= 0.0:
                    raise rel.error(dof, zeta, f"a restoring term G[{i},{i}] > 0 to scale with")
                D_L[i, i] += 2.0 * zeta * math.sqrt(G[i, i] * M[i, i])
        rel.finish()
    if r_about is not None:
        # all linear damping, the relative terms included, is about the CG
        D_L = move_to_co(D_L, r_about)
    for k, key in enumerate(QUAD_KEYS):
        slots[L.P_QUAD + k] = s.number(key, 0.0, hi=0.0)
    ittc = s.table("ittc")
    if ittc is not None:
        slots[L.P_ITTC_ON] = 1.0
        if ittc.has("wetted_surface"):
            S = ittc.number("wetted_surface", positive=True, unit="m^2")
            form_factor = ittc.number("form_factor", 0.1, lo=0.0, hi=1.0)
            slots[L.P_ITTC_COEF] = 0.5 * rho * S * (1.0 + form_factor)
        else:
            slots[L.P_ITTC_COEF] = ittc.number("coefficient", positive=True, unit="kg/m")
        slots[L.P_ITTC_CR] = ittc.number("residual", 0.0, lo=0.0, hi=0.1)
        slots[L.P_ITTC_LENGTH] = ittc.number("length", length, positive=True, unit="m")
        ittc.finish()
    cf = s.table("cross_flow")
    if cf is not None:
        if cf.has("sway"):
            cy = cf.number("sway", lo=0.0, unit="kg/m^3")
        else:
            cd = cf.raw("cd_2d", "hoerner")
            if cd == "hoerner":
                cd = hoerner_cd(beam, draft)
            elif isinstance(cd, bool) or not isinstance(cd, int | float) or cd < 0:
                raise cf.error("cd_2d", cd, '"hoerner" or a non-negative number')
            cy = 0.5 * rho * draft * float(cd)  # thesis eq. 2.31 with T(x) = T
        slots[L.P_CF_Y] = cy
        slots[L.P_CF_N] = cf.number("yaw", cy, lo=0.0, unit="kg/m^3")
        slots[L.P_CF_LENGTH] = cf.number("length", length, positive=True, unit="m")
        slots[L.P_CF_STRIPS] = cf.integer("strips", 20, lo=1)
        slots[L.P_CF_XMID] = cf.number("x_mid", 0.0, unit="m")
        cf.finish()
    s.finish()
    return D_L, slots


LAWS = {"quadratic": L.LAW_QUADRATIC, "linear": L.LAW_LINEAR, "glf": L.LAW_GLF}
GLF_KEYS = ("A", "K", "B", "nu", "C", "M")


def _read_actuators(sections: list[Section], length: float, beam: float):
    """Every actuator is read on its own: the errors of all of them are reported together."""
    specs: list[ActuatorSpec] = []
    A = np.zeros(max(1, len(sections)) * L.A_SIZE)
    names: set[str] = set()
    problems = Problems()
    for i, s in enumerate(sections):
        spec = problems.attempt(_read_actuator, s, i, A, names, length, beam)
        if spec is not None:
            specs.append(spec)
    problems.raise_any()
    return specs, A


def _read_actuator(
    s: Section, i: int, A: np.ndarray, names: set[str], length: float, beam: float
) -> ActuatorSpec:
    a = i * L.A_SIZE
    name = s.string("name")
    if name in names or not name.isidentifier():
        raise s.error("name", name, "a unique identifier such as 'port' or 'starboard'")
    names.add(name)
    kind = s.string("kind", choices=("propeller", "waterjet", "thruster"))
    pos = s.array("position", (3,))
    if abs(pos[0]) > length or abs(pos[1]) > beam:
        raise s.error("position", pos.tolist(), "a position on the hull (x, y, z from CO, m)")
    A[a + L.A_X : a + L.A_Z + 1] = pos
    A[a + L.A_MOUNT] = s.number("mount_deg", 0.0, lo=-180.0, hi=180.0) * DEGREES

    thrust = s.table("thrust", required=True)
    law = thrust.string("law", choices=tuple(LAWS))
    A[a + L.A_LAW] = LAWS[law]
    if law == "glf":
        for k0, side in ((L.A_GLF_FWD, "forward"), (L.A_GLF_REV, "reverse")):
            g = thrust.table(side, required=True)
            for j, key in enumerate(GLF_KEYS):
                A[a + k0 + j] = g.number(key)
            if A[a + k0 + 3] == 0.0:
                raise g.error("nu", 0.0, "a non-zero exponent")
            g.finish()
    else:
        key = "k_forward" if thrust.has("k_forward") else "k"
        fwd = thrust.number(key, lo=0.0)
        rev = thrust.number("k_reverse", fwd, lo=0.0)
        A[a + L.A_K_FWD] = fwd
        A[a + L.A_K_REV] = rev
    thrust.finish()

    speed = s.table("speed", required=True)
    unit = speed.string("unit", choices=("rpm", "normalized"))
    hi = speed.number("max", 1.0) if unit == "normalized" else speed.number("max", positive=True)
    lo = speed.number("min", -hi if unit == "normalized" else 0.0)
    if lo >= hi:
        raise speed.error("min", lo, f"less than max ({hi:g})")
    _first_order(speed, A, a + L.A_SPEED, lo, hi, "rate", "unit/s", 1.0)
    speed0 = speed.number("initial", min(max(0.0, lo), hi), lo=lo, hi=hi)
    speed.finish()

    angle_kind = "none"
    angle_range = (0.0, 0.0)
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
        _first_order(
            t, A, a + L.A_ANGLE, lo_deg * DEGREES, hi_deg * DEGREES, "rate_deg", "deg/s", DEGREES
        )
        angle0 = t.number("initial_deg", 0.0, lo=lo_deg, hi=hi_deg) * DEGREES
        angle_range = (lo_deg, hi_deg)
        t.finish()
    A[a + L.A_ANGLE_KIND] = {"none": 0.0, "azimuth": 1.0, "nozzle": 2.0}[angle_kind]

    has_deflector = False
    deflector0 = 1.0
    t = s.table("deflector")
    if t is not None:
        if kind != "waterjet":
            raise s.error("deflector", t.data, "a deflector only on kind = 'waterjet'")
        has_deflector = True
        A[a + L.A_HAS_DEFLECTOR] = 1.0
        dlo = t.number("min", -1.0, lo=-1.0, hi=0.0)
        dhi = t.number("max", 1.0, lo=0.0, hi=1.0)
        _first_order(t, A, a + L.A_DEFLECTOR, dlo, dhi, "rate", "1/s", 1.0)
        deflector0 = t.number("initial", 0.0, lo=dlo, hi=dhi)
        t.finish()
    s.finish()
    return ActuatorSpec(
        name=name, index=i, kind=kind, speed_unit=unit, speed_range=(lo, hi),
        angle_kind=angle_kind, angle_range_deg=angle_range, has_deflector=has_deflector,
        initial=(speed0, angle0, deflector0),
    )  # fmt: skip


def _first_order(
    t: Section,
    A: np.ndarray,
    k: int,
    lo: float,
    hi: float,
    rate_key: str,
    unit: str,
    to_si: float,
) -> None:
    """Fill time constant, rate limit, min and max of one actuator state (A_* layout: k, k+1,
    k+2, k+3); the rate is given in ``unit`` and ``to_si`` converts it (DEGREES for deg/s)."""
    A[k] = t.number("time_constant", 0.0, lo=0.0, unit="s")
    A[k + 1] = t.number(rate_key, 0.0, lo=0.0, unit=unit) * to_si  # 0 means unlimited
    A[k + 2] = lo
    A[k + 3] = hi
