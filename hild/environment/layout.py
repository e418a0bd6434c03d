"""Offsets into the environment's flat arrays: parameters, process states, outputs, noise.

The parameters (E_*), states (S_*) and outputs (O_*) are blocks of one buffer,
in that order, followed by the gust table; each block's offsets start at 0.

The compiled environment step works on these arrays as the vessel core does on
its own (see hild/model/layout.py); the builder in environment.py fills them.
"""

# --- the forcing vector the environment writes each step -----------------------------
# (the vessel model reads it as its input vector; hild/coupled/loop.py checks the two agree)
F_TAU = 0  # 6: wind and wave force in BODY [N, N m]
F_CURRENT = 6  # 2: current velocity, north and east [m/s]

# --- a saturated first-order Gauss-Markov process: 5 parameters ---------------------
GM_MEAN = 0  # the mean the process varies around
GM_A = 1  # exp(-dt / T): exact discretization of dx = -x/T dt + sqrt(2 sigma^2 / T) dW
GM_B = 2  # sigma sqrt(1 - a^2)
GM_LO = 3  # lowest deviation from the mean (<= 0)
GM_HI = 4  # highest deviation from the mean (>= 0)
GM_SIZE = 5

# --- parameters ---------------------------------------------------------------------
E_WIND = 0  # GM: mean wind speed at 10 m [m/s]
E_WDIR = 5  # GM: direction the wind comes from [rad]
E_GUST_KIND = 10  # one of GUST_*
E_GUST_A = 11  # vrx: dt / tau_g; random walk: step [m/s]
E_GUST_B = 12  # vrx: K_w (VRX eq. 15); random walk: steps between moves
E_GUST_C = 13  # random walk: largest deviation [m/s]
E_FORCE_KIND = 14  # one of FORCE_*
E_RHO_AIR = 15  # [kg/m^3]
E_AF = 16  # frontal projected area A_Fw [m^2]
E_AL = 17  # lateral projected area A_Lw [m^2]
E_HL = 18  # height of the lateral area's centroid above the waterline H_Lw [m]
E_LOA = 19  # length overall [m]
E_SL = 20  # longitudinal position of the lateral area's centroid s_L [m]
E_CDT = 21  # Blendermann CD_t
E_CDL_HEAD = 22  # CD_lAF for head winds
E_CDL_TAIL = 23  # CD_lAF for tail winds
E_DELTA = 24  # cross-force parameter
E_KAPPA = 25  # rolling-moment factor
E_CX = 26  # symmetric c_x (dimensionless) or VRX c_x [kg/m]
E_CY = 27
E_CN = 28
E_HEIGHT_FACTOR = 29  # U(z) / U10 at the height the force model takes the wind (thesis eq. 2.43)
E_CUR = 30  # GM: current speed [m/s]
E_CDIR = 35  # GM: direction the current sets to [rad]
E_WAVE_ON = 40
E_WAVE_OMEGA0 = 41  # peak frequency omega_0 [rad/s]
E_WAVE_LAMBDA = 42  # damping lambda of the transfer functions (thesis eqs 3.28-3.30)
E_WAVE_KW = 43  # K_w = 2 lambda omega_0 sigma, sigma = sqrt(max S) (Fossen 2011)
E_WAVE_GAIN = 45  # 3: force per metre of transfer-function output, surge, sway, yaw
E_WAVE_G = 48  # 9: the heave-roll-pitch block of the restoring matrix G, row-major
E_WAVE_TO_COS = 57  # cos and sin of the mean direction the waves travel towards
E_WAVE_TO_SIN = 58
E_SLOW_EVERY = 59  # the slow Gauss-Markov processes move every this many steps
E_GUST_N = 60  # length of the gust table (1 when there is none)
E_WAVE_OMEGA_MAX = 61  # the largest component frequency [rad/s]
E_WAVE_K_MAX = 62  # the largest wave number [1/m]
E_SIZE = 63

GUST_NONE, GUST_TABLE, GUST_VRX, GUST_RANDOM_WALK = 0.0, 1.0, 2.0, 3.0
FORCE_NONE, FORCE_BLENDERMANN, FORCE_SYMMETRIC, FORCE_VRX = 0.0, 1.0, 2.0, 3.0

# --- process states ---------------------------------------------------------------
S_WIND = 0  # deviation of the mean wind speed from its mean [m/s]
S_WDIR = 1  # deviation of the wind direction [rad]
S_GUST = 2  # gust [m/s] (vrx and random walk; tables need no state)
S_CUR = 3  # deviation of the current speed [m/s]
S_CDIR = 4  # deviation of the current direction [rad]
S_TF = 5  # 6: (x1, x2) of the surge, sway and yaw wave-force transfer functions
S_PREV_N = 11  # vessel position the wave phases were last moved to [m]
S_PREV_E = 12
S_WAVE_K = 13  # step the wave phases stand at
S_OUT_K = 14  # step the outputs were computed for (-1: never)
S_ENCOUNTER = 15  # encounter frequency omega_e at the last outputs [rad/s]
S_WIND_ANGLE = 16  # the wind direction whose unit vector (towards) is cached next
S_WIND_N = 17
S_WIND_E = 18
S_CUR_ANGLE = 19  # the same for the current
S_CUR_N = 20
S_CUR_E = 21
S_SIZE = 24

# --- outputs (what the sensors, the recorder and the shell see) -------------------------
O_WIND_SPEED = 0  # true wind at 10 m [m/s]
O_WIND_FROM = 1  # where it comes from [rad], clockwise from north
O_CUR_SPEED = 2  # [m/s]
O_CUR_TO = 3  # where it sets to [rad]
O_ELEVATION = 4  # sea-surface elevation at the vessel, up positive [m]
O_SLOPE_N = 5  # d(elevation)/d(north)
O_SLOPE_E = 6  # d(elevation)/d(east)
O_TAU_WIND = 7  # 6: wind force in BODY
O_TAU_WAVE = 13  # 6: wave force in BODY
O_SIZE = 19

OUTPUT_COLUMNS = (
    "wind_speed", "wind_dir", "current_speed", "current_dir", "wave_elevation",
    "X_wind", "Y_wind", "Z_wind", "K_wind", "M_wind", "N_wind",
    "X_wave", "Y_wave", "Z_wave", "K_wave", "M_wave", "N_wave",
)  # fmt: skip

# --- white-noise channels: one row of the noise block each, one value per step -------------
N_WIND = 0
N_WDIR = 1
N_GUST = 2
N_CUR = 3
N_CDIR = 4
N_TF = 5  # 3: surge, sway, yaw
N_CHANNELS = 8
SLOW_CHANNELS = (N_WIND, N_WDIR, N_CUR, N_CDIR)  # one value per E_SLOW_EVERY steps
NOISE_STREAMS = (
    "wind.slow",
    "wind.direction",
    "wind.gust",
    "current.slow",
    "current.direction",
    "waves.surge",
    "waves.sway",
    "waves.yaw",
)

# --- wave components: rows of the component array W ---------------------------------------
C_AMPLITUDE, C_OMEGA, C_KN, C_KE = 0, 1, 2, 3  # A_i [m], omega_i, wave vector north/east [1/m]
W_THETA, W_COS, W_SIN = 4, 5, 6  # phase, and its cosine and sine carried by rotation
W_ROWS = 7
WAVE_RESYNC_STEPS = 256  # the rotated cosines are recomputed exactly this often
