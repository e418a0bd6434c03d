"""PID control with output limits and anti-windup, for heading and speed.

One discrete PID serves both loops: the heading controller (PID on the
wrapped heading error, derivative on the measured yaw rate, output a steering
demand in [-1, 1]) and the speed controller (PI on speed over ground, output
a thrust demand in [0, 1]). Time steps come from the sensor sentences, so a
controller behaves the same whatever the daemon's time scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class PidGains:
    """Gains of one loop: kp [output/unit], ki [output/(unit s)], kd [output s/unit]."""

    kp: float
    ki: float = 0.0
    kd: float = 0.0


def clip(value: float, lo: float, hi: float) -> float:
    return lo if value < lo else hi if value > hi else value


class Pid:
    """Parallel PID whose derivative acts on the measurement's rate, not on the error.

    Anti-windup by conditional integration: the integral holds while the
    output is saturated and the error would drive it further into saturation,
    and while the error is outside ``integral_band`` (a turn to a new leg is
    the proportional and derivative terms' job, not a disturbance to learn);
    it never leaves [integral_lo, integral_hi].
    """

    def __init__(
        self,
        gains: PidGains,
        lo: float,
        hi: float,
        integral_lo: float | None = None,
        integral_hi: float | None = None,
        integral_band: float = math.inf,
    ):
        if not lo < hi:
            raise ValueError(f"output limits must satisfy lo < hi, not {lo}, {hi}")
        self.gains = gains
        self.lo = lo
        self.hi = hi
        self.integral_lo = lo if integral_lo is None else integral_lo
        self.integral_hi = hi if integral_hi is None else integral_hi
        self.integral_band = integral_band
        self.integral = clip(0.0, self.integral_lo, self.integral_hi)
        self.output = clip(0.0, lo, hi)

    def update(self, error: float, dt: float, measurement_rate: float = 0.0) -> float:
        """New output from the error, the time since the last update [s] and d(measurement)/dt.

        ``dt`` <= 0 (a repeated time stamp, or a gap the caller chose to skip)
        leaves the integral as it is.
        """
        g = self.gains
        p = g.kp * error
        d = -g.kd * measurement_rate  # d(error)/dt = d(reference)/dt - d(measurement)/dt
        if dt > 0.0 and g.ki != 0.0 and abs(error) <= self.integral_band:
            candidate = clip(self.integral + g.ki * error * dt, self.integral_lo, self.integral_hi)
            unsaturated = p + candidate + d
            pushing_high = unsaturated > self.hi and error > 0.0
            pushing_low = unsaturated < self.lo and error < 0.0
            if not (pushing_high or pushing_low):
                self.integral = candidate
        self.output = clip(p + self.integral + d, self.lo, self.hi)
        return self.output
