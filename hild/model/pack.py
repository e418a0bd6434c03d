"""A vessel's records packed into the flat arrays the compiled core reads (layout.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hild.model import layout as L
from hild.model.vessel import ActuatorSpec, FirstOrder, NonlinearDamping, cg_from_mass_matrix

LAWS = {"quadratic": L.LAW_QUADRATIC, "linear": L.LAW_LINEAR, "glf": L.LAW_GLF}
ANGLE_KINDS = {"none": L.ANGLE_NONE, "azimuth": L.ANGLE_AZIMUTH, "nozzle": L.ANGLE_NOZZLE}


def pack_parameters(
    M_RB: np.ndarray,
    M_A: np.ndarray,
    D_L: np.ndarray,
    G: np.ndarray,
    nonlinear: NonlinearDamping,
    water_viscosity: float,
    munk_moment: bool,
) -> np.ndarray:
    """The P_* vector: matrices at CO, the nonlinear damping's terms and the water."""
    P = np.zeros(L.P_SIZE)
    P[L.P_M_INV : L.P_M_INV + 36] = np.linalg.inv(M_RB + M_A).ravel()
    P[L.P_MA : L.P_MA + 36] = M_A.ravel()
    P[L.P_MASS] = M_RB[0, 0]
    P[L.P_RG : L.P_RG + 3] = cg_from_mass_matrix(M_RB)
    P[L.P_IO : L.P_IO + 9] = M_RB[3:, 3:].ravel()
    P[L.P_DL : L.P_DL + 36] = D_L.ravel()
    P[L.P_G : L.P_G + 36] = G.ravel()
    P[L.P_MUNK] = 1.0 if munk_moment else 0.0
    P[L.P_WATER_NU] = water_viscosity
    P[L.P_QUAD : L.P_QUAD + 9] = nonlinear.quadratic
    if nonlinear.ittc is not None:
        P[L.P_ITTC_ON] = 1.0
        P[L.P_ITTC_COEF] = nonlinear.ittc.coefficient
        P[L.P_ITTC_CR] = nonlinear.ittc.residual
        P[L.P_ITTC_LENGTH] = nonlinear.ittc.length
    if nonlinear.cross_flow is not None:
        cf = nonlinear.cross_flow
        P[L.P_CF_Y] = cf.sway
        P[L.P_CF_N] = cf.yaw
        P[L.P_CF_LENGTH] = cf.length
        P[L.P_CF_STRIPS] = cf.strips
        P[L.P_CF_XMID] = cf.x_mid
    return P


def pack_actuators(actuators: Sequence[ActuatorSpec]) -> np.ndarray:
    """The A_* blocks, one per actuator in order (one empty block for a vessel without any)."""
    A = np.zeros(max(1, len(actuators)) * L.A_SIZE)
    for i, spec in enumerate(actuators):
        _pack_actuator(A[i * L.A_SIZE : (i + 1) * L.A_SIZE], spec)
    return A


def _pack_actuator(block: np.ndarray, spec: ActuatorSpec) -> None:
    block[L.A_X : L.A_Z + 1] = spec.position
    block[L.A_MOUNT] = spec.mount
    thrust = spec.thrust
    block[L.A_LAW] = LAWS[thrust.law]
    if thrust.law == "glf":
        block[L.A_GLF_FWD : L.A_GLF_FWD + 6] = thrust.glf_forward
        block[L.A_GLF_REV : L.A_GLF_REV + 6] = thrust.glf_reverse
    else:
        block[L.A_K_FWD] = thrust.k_forward
        block[L.A_K_REV] = thrust.k_reverse
    _pack_first_order(block, L.A_SPEED, spec.speed)
    block[L.A_ANGLE_KIND] = ANGLE_KINDS[spec.angle_kind]
    if spec.angle is not None:
        _pack_first_order(block, L.A_ANGLE, spec.angle)
    if spec.deflector is not None:
        block[L.A_HAS_DEFLECTOR] = 1.0
        _pack_first_order(block, L.A_DEFLECTOR, spec.deflector)


def _pack_first_order(block: np.ndarray, k: int, response: FirstOrder) -> None:
    """Time constant, rate limit, min and max at k, k+1, k+2, k+3 (the A_SPEED layout)."""
    block[k : k + 4] = (response.time_constant, response.rate_limit, response.lo, response.hi)
