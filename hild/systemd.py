"""systemd's notify protocol for `hild run` under ``Type=notify`` (sd_notify(3), no library).

systemd names a datagram socket in ``$NOTIFY_SOCKET`` (a path, or ``@name`` for the abstract
namespace) and reads newline-separated ``KEY=VALUE`` assignments from it:

- ``READY=1`` once the ports are open (before that, the unit is "activating"), with
  ``MAINPID=`` and a first ``STATUS=``;
- ``WATCHDOG=1`` from inside the loop, every ``$WATCHDOG_USEC`` / 3 of wall time, when the
  unit has ``WatchdogSec=``: a loop that stalls stops pinging, and systemd restarts it (a
  task pings in the same rhythm from READY=1 until the first tick, which waits for the next
  whole second). The tick thread pings only while the event loop (ports, MQTT, commands) has
  also been seen within two ping intervals: the same task marks it, so a stalled event loop
  under a ticking clock is restarted too;
- ``STATUS=`` (what ``systemctl status`` shows) refreshed every few seconds: simulated time,
  ticks, overruns, commands applied;
- ``STOPPING=1`` and a last ``STATUS=`` with the reason when the loop ends.

The socket is non-blocking: a datagram that cannot go out (systemd busy, socket gone) is
counted and dropped, never raised and never waited for, so the notifier cannot hold a tick.
"""

from __future__ import annotations

import asyncio
import math
import os
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from hild.log import RateLimited
from hild.observers import TickObserver

if TYPE_CHECKING:
    from hild.observers import RunView

log = structlog.get_logger("hild.systemd")

STATUS_INTERVAL_S = 5.0  # wall seconds between two STATUS= refreshes
WATCHDOG_DIVISOR = 3  # ping every WATCHDOG_USEC / 3: systemd asks for more often than / 2
LOOP_SILENCE_PINGS = 2  # ping intervals the event loop may go unseen before pings stop


def notifier_from_environment() -> TickObserver | None:
    """The notifier when systemd started us with $NOTIFY_SOCKET, else None.

    Reads $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID; changes nothing in the environment.
    """
    value = os.environ.get("NOTIFY_SOCKET", "")
    if not value:
        return None
    address = notify_address(value)
    if address is None:
        log.warning(
            "systemd.notify_socket_unsupported",
            notify_socket=value,
            expected="an absolute path or @abstract-name (AF_UNIX)",
        )
        return None
    return SystemdNotifier(address, watchdog_usec(os.environ, os.getpid()))


def notify_address(value: str) -> str | None:
    """The AF_UNIX address of $NOTIFY_SOCKET: a path, or '@name' as the abstract '\\0name'."""
    if value.startswith("@") and len(value) > 1:
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    return None  # vsock: and others, which this notifier does not speak


def watchdog_usec(environ, pid: int) -> int | None:
    """$WATCHDOG_USEC when it is meant for this process (as sd_watchdog_enabled(3)), else None."""
    try:
        usec = int(environ.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    if usec <= 0:
        return None
    owner = environ.get("WATCHDOG_PID")
    if owner is not None:
        try:
            if int(owner) != pid:
                return None  # set for another process (we were forked or exec'd by it)
        except ValueError:
            return None
    return usec


def _one_line(text: str) -> str:
    """A STATUS= value: the protocol separates assignments with newlines."""
    return " ".join(text.split())


class SystemdNotifier(TickObserver):
    """Sends READY, WATCHDOG, STATUS and STOPPING datagrams to systemd's notify socket."""

    def __init__(
        self,
        address: str,
        watchdog_usec: int | None = None,
        status_interval_s: float = STATUS_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.address = address
        self.watchdog_interval_s = watchdog_usec / 1e6 / WATCHDOG_DIVISOR if watchdog_usec else None
        self.status_interval_s = status_interval_s
        self._clock = clock
        self.sent = 0  # datagrams that went out
        self.failed = 0  # datagrams dropped: the socket refused them (full, gone, ...)
        self.watchdog_pings = 0  # WATCHDOG=1 sent or attempted
        self._next_watchdog = math.inf
        self._next_status = math.inf
        self._next_due = math.inf  # the earlier of the two: one comparison per quiet tick
        self._started = False
        self._loop_watch: asyncio.Task | None = None
        self.loop_seen_at = -math.inf  # when the event loop last ran the watching task
        self.withheld = 0  # pings not sent because the event loop had stalled
        self._log_stalled = RateLimited(log, "systemd.event_loop_stalled")
        self._log_failed = RateLimited(log, "systemd.notify_failed")
        self._sock: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setblocking(False)

    def send(self, *assignments: str) -> bool:
        """One datagram of ``KEY=VALUE`` lines; False (and counted) if it could not go out."""
        if self._sock is None:
            return False
        try:
            self._sock.sendto("\n".join(assignments).encode(), self.address)
        except (OSError, ValueError) as e:  # EAGAIN, ECONNREFUSED, ENOENT, path too long, ...
            self.failed += 1
            self._log_failed(error=str(e), failed=self.failed)
            return False
        self.sent += 1
        return True

    async def start(self, run: RunView) -> None:
        now = self._clock()
        assignments = [
            "READY=1",
            "STATUS=" + self.starting_status(run),
            f"MAINPID={os.getpid()}",
        ]
        if self.watchdog_interval_s is not None:
            # systemd arms the watchdog at READY=1, and the loop's first tick waits for the
            # next whole second: ping now, and from a task until the ticks take over.
            assignments.append("WATCHDOG=1")
            self.watchdog_pings += 1
            self._next_watchdog = now + self.watchdog_interval_s
            self.loop_seen_at = now
            self._loop_watch = asyncio.create_task(self._watch_the_loop(run))
        self._next_status = now + self.status_interval_s
        self._next_due = min(self._next_watchdog, self._next_status)
        self._started = True
        self.send(*assignments)
        log.info(
            "systemd.ready",
            watchdog_interval_s=self.watchdog_interval_s,
            status_interval_s=self.status_interval_s,
        )

    async def _watch_the_loop(self, run: RunView) -> None:
        """Marks the event loop alive twice per ping interval; until the first tick it also
        sends the pings, on the same schedule as on_tick.

        It never pings once the ticks run: were it to, a tick thread that stopped would look
        alive; and the ticks' pings stop when this task stops running.
        """
        assert self.watchdog_interval_s is not None  # started only with a watchdog
        while True:
            now = self._clock()
            self.loop_seen_at = now
            if run.ticks == 0 and now >= self._next_watchdog:
                self.watchdog_pings += 1
                self.send(self._watchdog_due(now))
                self._next_due = min(self._next_watchdog, self._next_status)
            pause = self.watchdog_interval_s / 2
            if run.ticks == 0:
                pause = min(pause, max(0.0, self._next_watchdog - now))
            await asyncio.sleep(pause)

    def _watchdog_due(self, now: float) -> str:
        """Move the watchdog's schedule on by one ping (due at ``now``)."""
        assert self.watchdog_interval_s is not None  # pings are due only with a watchdog
        self._next_watchdog += self.watchdog_interval_s
        if self._next_watchdog <= now:  # the loop was held up: no burst of pings to catch up
            self._next_watchdog = now + self.watchdog_interval_s
        return "WATCHDOG=1"

    def on_tick(self, run: RunView, t: float) -> None:
        now = self._clock()
        if now < self._next_due:
            return
        assignments = []
        if now >= self._next_watchdog:
            ping = self._watchdog_due(now)
            assert self.watchdog_interval_s is not None  # a ping is due only with a watchdog
            stalled_s = now - self.loop_seen_at
            if stalled_s <= LOOP_SILENCE_PINGS * self.watchdog_interval_s:
                self.watchdog_pings += 1
                assignments.append(ping)
            else:  # let systemd restart us: the ports and the bus are not being served
                self.withheld += 1
                self._log_stalled(stalled_s=round(stalled_s, 3), withheld=self.withheld)
        if now >= self._next_status:
            assignments.append("STATUS=" + self.running_status(run, t))
            self._next_status = now + self.status_interval_s
        self._next_due = min(self._next_watchdog, self._next_status)
        if assignments:
            self.send(*assignments)

    async def stop(self, run: RunView) -> None:
        if self._started:
            status = self.stopping_status(run)
        else:
            status = f"{run.bench.name}: could not start (see the journal)"
        self._next_due = math.inf
        if self._loop_watch is not None:
            self._loop_watch.cancel()
        self.send("STOPPING=1", "STATUS=" + _one_line(status))
        log.info(
            "systemd.stopping",
            sent=self.sent,
            failed=self.failed,
            watchdog_pings=self.watchdog_pings,
            withheld=self.withheld,
        )
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    @staticmethod
    def starting_status(run: RunView) -> str:
        b = run.bench
        return _one_line(
            f"{b.name}: {b.vessel.name} in {b.weather.preset} weather, running "
            f"({b.rate_hz:g} Hz, time scale {b.time_scale:g})"
        )

    @staticmethod
    def _counters(run: RunView, t: float) -> str:
        return (
            f"t={t:.1f} s, {run.ticks} ticks, {run.overruns} overruns, "
            f"{run.commands_applied} commands applied"
        )

    def running_status(self, run: RunView, t: float) -> str:
        return _one_line(f"{run.bench.name}: running, {self._counters(run, t)}")

    def stopping_status(self, run: RunView) -> str:
        reason = run.stop_reason
        # "duration" is the reason the run starts with: if the run did not reach its
        # duration (or had none), the loop ended on an error instead.
        if reason == "duration" and (run.duration is None or run.t + 0.5 * run.dt < run.duration):
            reason = "error"
        # t as run.summary gives it (to the microsecond), so both print the same tenth
        t = round(run.t, 6)
        return f"{run.bench.name}: stopping ({reason}), {self._counters(run, t)}"
