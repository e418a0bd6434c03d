"""Offsets into the traffic arrays the compiled core steps: one row per target.

``T`` (n x T_SIZE) is the targets' state, ``P`` (n x P_SIZE) their parameters, ``WP``
(k x WP_SIZE) every route's waypoints one after another. The contract between
hild/traffic/traffic.py (which fills them) and hild/traffic/kernel.py.
"""

# --- state, one row per target -----------------------------------------------------------
T_NORTH = 0  # position from the run's origin [m]
T_EAST = 1
T_HEADING = 2  # heading = course over ground (no drift) [rad, 0 .. 2 pi)
T_SPEED = 3  # speed over ground [m/s]
T_YAW_RATE = 4  # [rad/s], positive to starboard
T_COURSE_CMD = 5  # the course the ship steers to [rad]
T_SPEED_CMD = 6  # the speed its telegraph asks for [m/s]
T_WAYPOINT = 7  # index (within its route) of the waypoint it sails to
T_MODE = 8  # one of MODE_*
T_BASE_COURSE = 9  # the course it comes back to once clear [rad]
T_RANGE = 10  # from the own ship [m]
T_BEARING = 11  # true bearing of the target from the own ship [rad, 0 .. 2 pi)
T_CPA = 12  # closest point of approach if both hold course and speed [m]
T_TCPA = 13  # time to it [s]; negative: passed
T_MIN_RANGE = 14  # the smallest range so far [m]
T_MIN_RANGE_T = 15  # when [s, simulation time]
T_SITUATION = 16  # one of SIT_*: what the target made of the encounter when it judged it
T_ENGAGED = 17  # 1.0 from that judgment until the encounter is over (passed and clear)
# In a fleet (several boats, kernel.py traffic_fleet_tick): the boat (its index in the bench's
# order, 0 the first) the target judges: while engaged the one it engaged with, else the most
# dangerous that threatens it (0 when none does). Always 0 for one boat. T_RANGE .. T_MIN_RANGE_T
# stay against the first boat; each boat's ranges are Traffic's *_by_boat arrays.
T_OWN = 18
T_SIZE = 20

# --- modes -------------------------------------------------------------------------------
MODE_SAIL = 0.0  # on its course or route
MODE_GIVE_WAY = 1.0  # turned to starboard for the own ship
MODE_STOPPED = 2.0  # at the end of a route that does not loop

# --- the situation as the target judged it (COLREG part B, section II) ---------------------
SIT_NONE = 0.0
SIT_HEAD_ON = 1.0  # rule 14: both give way
SIT_CROSSING_GIVE_WAY = 2.0  # rule 15: the own ship on its starboard side
SIT_CROSSING_STAND_ON = 3.0  # rule 15/17: the own ship on its port side
SIT_OVERTAKING = 4.0  # rule 13: it overtakes the own ship, keeps out of the way
SIT_OVERTAKEN = 5.0  # rule 13/17: the own ship overtakes it, it stands on

# --- parameters, one row per target ----------------------------------------------------------
P_MOTION = 0  # MOTION_COURSE or MOTION_ROUTE
P_BEHAVIOUR = 1  # BEHAVIOUR_HOLD or BEHAVIOUR_COLREG
P_SPEED_TAU = 2  # speed time constant [s]
P_YAW_TAU = 3  # yaw-rate time constant [s]
P_TURN_RADIUS = 4  # [m]
P_TURN = 5  # the give-way turn to starboard [rad]
P_ACT_RANGE = 6  # [m]
P_ACT_TCPA = 7  # [s]
P_SAFE_CPA = 8  # [m]
P_WP_FIRST = 9  # row of its first waypoint in WP
P_WP_COUNT = 10
P_WP_LOOP = 11  # 1.0: after the last waypoint, the first again
P_ACCEPTANCE = 12  # a waypoint is reached within this [m]
P_SIZE = 16

MOTION_COURSE = 0.0
MOTION_ROUTE = 1.0
BEHAVIOUR_HOLD = 0.0
BEHAVIOUR_COLREG = 1.0

# --- waypoints ---------------------------------------------------------------------------------
WP_NORTH = 0
WP_EAST = 1
WP_SPEED = 2  # on the leg towards it [m/s]
WP_SIZE = 3
