"""The command watchdog: a lease renewed by each valid command, judged by local receive time.

Modelled on real propulsion controls (shared/reference/protocols.md, "Loss-of-command
behaviour"): the Heron controller stops thrust after 0.5 s without a command; ZF's
ClearCommand goes to neutral and idle on a signal fault and takes throttle again only with
the lever in the neutral detent; the MIT BlueBoat stack judges freshness by local receive
time. So: when the lease runs out the actuators go to their safe state and the fault is
latched until a neutral command (idle, neutral deflector, zero thrust) arrives.

Before the first command there is no lease to lose, so the watchdog cannot trip; with
``neutral_first`` the very first command must be neutral as well.

In the daemon commands are admitted on the network thread and the lease is judged on the tick
thread; a lock makes each a single step, so a tick never sees a half-renewed lease.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

WAITING = "waiting"  # no command yet
ACTIVE = "active"  # commands arriving within the timeout
TRIPPED = "tripped"  # lease lost: safe state, latched until a neutral command


@dataclass
class Watchdog:
    """Pure state: feed it receive times and tick times; it says when to trip and release."""

    timeout_s: float = 0.5
    neutral_first: bool = False
    state: str = WAITING
    lease_until: float = 0.0
    trips: int = 0
    last_command_t: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def latched(self) -> bool:
        """True while only a neutral command is accepted."""
        return self.state == TRIPPED or (self.state == WAITING and self.neutral_first)

    def admit(self, t_rx: float, neutral: bool) -> bool:
        """A valid command received at ``t_rx``: True if it may act (and renews the lease).

        While latched only a neutral command is admitted, and it releases the latch.
        """
        with self._lock:
            if self.latched and not neutral:
                return False
            self.last_command_t = t_rx
            self.lease_until = max(self.lease_until, t_rx + self.timeout_s)
            self.state = ACTIVE
            return True

    def expired(self, now: float) -> bool:
        """True exactly once when the lease has run out: the caller puts out the safe state."""
        with self._lock:
            if self.state == ACTIVE and now > self.lease_until:
                self.state = TRIPPED
                self.trips += 1
                return True
            return False
