"""Course over ground as a GNSS receiver reports it, also when the boat barely moves.

Below 0.1 m/s a u-blox receiver's course is too inaccurate to use: it freezes the last course
and, by default, leaves the course fields of RMC and VTG empty; configured to, it prints the
frozen course instead (u-blox M10 and F9 integration manuals, "Freezing the course over
ground"). ``at_rest`` picks which: "empty" (the receiver's default) or "hold". Before the first
course of motion there is nothing to hold, and the fields are empty either way.
"""

from __future__ import annotations

import math

COG_AT_REST = ("empty", "hold")
COG_MIN_SPEED_MS = 0.1  # u-blox: below this the course is frozen


class CourseOverGround:
    """One receiver's course over ground [deg, 0-360), or NaN (an empty field)."""

    def __init__(self, at_rest: str = "empty"):
        if at_rest not in COG_AT_REST:
            raise ValueError(f"cog_at_rest = {at_rest!r}: expected one of {COG_AT_REST}")
        self.hold = at_rest == "hold"
        self.frozen = math.nan  # the last course of motion

    def __call__(self, v_north: float, v_east: float) -> float:
        """The course for a velocity over ground (m/s, north and east)."""
        speed = math.hypot(v_north, v_east)
        if not speed >= COG_MIN_SPEED_MS:  # also NaN
            return self.frozen if self.hold else math.nan
        if math.isinf(speed):
            return math.nan
        self.frozen = math.degrees(math.atan2(v_east, v_north)) % 360.0
        return self.frozen
