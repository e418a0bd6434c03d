"""The command watchdog: a lease renewed by each valid command, judged by local receive time.

Modelled on real propulsion controls (shared/reference/protocols.md, "Loss-of-command
behaviour"): the Heron controller stops thrust after 0.5 s without a command; ZF's
ClearCommand goes to neutral and idle on a signal fault and takes throttle again only with
the lever in the neutral detent; the MIT BlueBoat stack judges freshness by local receive
time. So: when the lease runs out the actuators go to their safe state, and what ends the
trip is the device's ``release``:

- ``"neutral"``: latched until a neutral command (idle, neutral deflector, zero thrust), as
  jet and outboard controls want the lever in neutral before they take throttle again;
- ``"next-command"``: the next valid command is taken and renews the lease, as the Heron's
  controller, MOOS's iM200 and the VRX thrusters resume on the next command.

Either way the trip is counted and the state reads tripped until a command ends it.

Before the first command there is no lease to lose, so the watchdog cannot trip; with
``neutral_first`` the very first command must be neutral as well (whatever the release).

In the daemon commands are admitted on the network thread and the lease is judged on the tick
thread; a lock makes each a single step, so a tick never sees a half-renewed lease, and what
a trip hands on (the safe state, to the control queue) goes out within that step, before any
command admitted after the trip can be queued behind it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

WAITING = "waiting"  # no command yet
ACTIVE = "active"  # commands arriving within the timeout
TRIPPED = "tripped"  # lease lost: safe state until a command the release takes

NEUTRAL = "neutral"  # release: latched until a neutral command
NEXT_COMMAND = "next-command"  # release: the next valid command
RELEASES = (NEUTRAL, NEXT_COMMAND)


@dataclass
class Watchdog:
    """Pure state: feed it receive times and tick times; it says when to trip and release."""

    timeout_s: float = 0.5
    neutral_first: bool = False
    release: str = NEUTRAL
    state: str = WAITING
    lease_until: float = 0.0
    trips: int = 0
    last_command_t: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.release not in RELEASES:
            raise ValueError(f"release = {self.release!r}: expected one of {', '.join(RELEASES)}")

    @property
    def latched(self) -> bool:
        """True while only a neutral command is accepted."""
        if self.state == WAITING:
            return self.neutral_first
        return self.state == TRIPPED and self.release == NEUTRAL

    def admit(self, t_rx: float, neutral: bool) -> bool:
        """A valid command received at ``t_rx``: True if it may act (and renews the lease).

        While latched only a neutral command is admitted, and it releases the latch; tripped
        with the release ``next-command``, any valid command is admitted and ends the trip.
        """
        with self._lock:
            if self.latched and not neutral:
                return False
            self.last_command_t = t_rx
            self.lease_until = max(self.lease_until, t_rx + self.timeout_s)
            self.state = ACTIVE
            return True

    def may_have_expired(self, now: float) -> bool:
        """A look without the lock, for the tick that most often finds the lease running: False
        when it has not run out (``expired`` would say False too), True when ``expired`` must
        decide. Each attribute read is whole, and a lease only grows while active, so a look
        that overlaps an ``admit`` sees the lease as it was or as it became, never shorter."""
        return self.state == ACTIVE and now > self.lease_until

    def expired(self, now: float, on_trip: Callable[[], object] | None = None) -> bool:
        """True exactly once when the lease has run out: the caller puts out the safe state.

        ``on_trip`` runs within the trip's step (under the lock): a command admitted after
        the trip is admitted after it has run.
        """
        with self._lock:
            if self.may_have_expired(now):  # (the same test, now under the lock)
                self.state = TRIPPED
                self.trips += 1
                if on_trip is not None:
                    on_trip()
                return True
            return False
