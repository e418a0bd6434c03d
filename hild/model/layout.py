"""Offsets into the flat float64 arrays that the compiled core works on.

The core takes parameters, states and inputs as flat arrays so that numba
functions need no objects and allocate nothing; these names are the contract
between hild/model/pack.py (which fills the arrays) and the kernels.
"""

# --- integration methods, by the name a bench or --method gives ------------------
METHOD_RK4 = 0
METHOD_DOPRI5 = 1
METHODS = {"rk4": METHOD_RK4, "dopri5": METHOD_DOPRI5}

# --- vessel parameter vector -------------------------------------------------
P_M_INV = 0  # 36: inverse of M = M_RB + M_A, row-major
P_MA = 36  # 36: added mass M_A (positive-definite convention), row-major
P_MASS = 72  # rigid-body mass m [kg]
P_RG = 73  # 3: centre of gravity r_g relative to the body origin CO [m]
P_IO = 76  # 9: inertia tensor about CO [kg m^2], row-major (the I_b block of M_RB)
P_DL = 85  # 36: linear damping D_L (positive convention: force = -D_L nu_r)
P_G = 121  # 36: restoring matrix G (force = -G eta)
P_ITTC_ON = 157  # 1.0 when ITTC surge friction is active
P_ITTC_COEF = 158  # 0.5 rho S (1 + k) [kg/m], thesis eq. 3.9
P_ITTC_CR = 159  # residual friction coefficient C_R
P_ITTC_LENGTH = 160  # L_pp used in the Reynolds number [m]
P_WATER_NU = 161  # kinematic viscosity of water [m^2/s]
P_CF_Y = 162  # cross-flow drag coefficient in sway, 0.5 rho T Cd [kg/m^3 per m]
P_CF_N = 163  # cross-flow drag coefficient in yaw [kg/m^3 per m]
P_CF_LENGTH = 164  # hull length integrated over [m]
P_CF_STRIPS = 165  # number of strips
P_CF_XMID = 166  # x of the middle of the integrated length relative to CO [m]
P_QUAD = 167  # 9: VRX eq. 22 derivatives Xuu Yvv Yrv Yvr Yrr Nvv Nrv Nvr Nrr (SNAME, <= 0)
P_MUNK = 176  # 1.0 keeps the Munk moments (v_r x a) of C_A, 0.0 drops them
P_SIZE = 180

Q_XUU, Q_YVV, Q_YRV, Q_YVR, Q_YRR, Q_NVV, Q_NRV, Q_NVR, Q_NRR = range(9)

# --- per-actuator parameter block ---------------------------------------------
A_X, A_Y, A_Z = 0, 1, 2  # position relative to CO [m]
A_LAW = 3  # thrust law, one of LAW_*
A_K_FWD = 4  # quadratic [N/rpm^2] or linear [N per unit] gain, forward
A_K_REV = 5  # the same, reverse
A_GLF_FWD = 6  # 6: GLF A, K, B, nu, C, M for x >= 0 (VRX eq. 26)
A_GLF_REV = 12  # 6: GLF A, K, B, nu, C, M for x < 0
A_SPEED = 18  # 4: time constant [s], rate limit [unit/s], min, max of the speed state
A_ANGLE_KIND = 22  # one of ANGLE_*
A_ANGLE = 23  # 4: time constant, rate limit [rad/s], min, max [rad]
A_HAS_DEFLECTOR = 27  # 1.0 when the actuator has an astern deflector
A_DEFLECTOR = 28  # 4: time constant, rate limit [1/s], min, max
A_MOUNT = 32  # fixed direction of the thrust when the angle is 0 [rad]
# Kept by the step, not packed: the time step the lag factors below were computed for (0: none
# yet), and 1 - exp(-dt / tau) of the speed, angle and deflector states at that step, so that a
# step needs no exponential (hild/model/actuators.py update_actuators)
A_LAG_DT = 33
A_LAG = 34  # 3
A_SIZE = 37

LAW_QUADRATIC = 0.0  # F = K n|n|, thesis eq. 2.40
LAW_LINEAR = 1.0  # F = K x, VRX linear map
LAW_GLF = 2.0  # generalized logistic function, VRX eq. 26

ANGLE_NONE = 0.0
ANGLE_AZIMUTH = 1.0  # the angle is the direction of the thrust (Fossen eq. 2.42)
ANGLE_NOZZLE = 2.0  # the angle is a steering angle: positive turns the boat to starboard

# per-actuator state and command triplets
S_SPEED, S_ANGLE, S_DEFLECTOR = 0, 1, 2
S_SIZE = 3

# --- inputs held constant over one step ----------------------------------------
I_TAU = 0  # 6: environment force in BODY (the actuators' is added in the step)
I_CURRENT = 6  # 3: current velocity in NED [m/s]
I_EXTERNAL = 9  # 6: any other force in BODY set by the shell (tests, faults)
I_SIZE = 16

# --- vessel state -----------------------------------------------------------------
X_ETA = 0  # 6: x, y, z, phi, theta, psi
X_NU = 6  # 6: u, v, w, p, q, r
X_SIZE = 12

STATE_NAMES = ("x", "y", "z", "phi", "theta", "psi", "u", "v", "w", "p", "q", "r")
