"""The loop's statistics window, logged every ``stats_interval`` simulated seconds as
``loop.stats``: the ticks' lateness, what the controller's bus did, and the time scale held
against the wall clock (a wall-clock figure: it says whether the machine keeps up)."""

from __future__ import annotations

import time

import structlog

from hild.bus.sentence import REASONS
from hild.clock import JitterStats
from hild.world.world import World

log = structlog.get_logger("hild.daemon")

TIME_SCALE_HELD = 0.95  # below this share of the asked time scale over a stats window: warn
# More than this share of a window's ticks a whole tick late (an overrun: a sensor's epoch a
# step off its time, a command applied a step later): warn, once, that the machine is not
# keeping up.
# A quiet machine overruns none in hours at 100 Hz; one in a hundred is a busy one's.
OVERRUNS_WARN = 0.01


class LoopStats:
    """One window of the loop's figures, from the last ``loop.stats`` to the next."""

    def __init__(self, world: World, paced_by_frames: bool):
        self.world = world
        self.paced_by_frames = paced_by_frames  # (then ArduPilot's pace is the time scale)
        self.every = max(1, round(world.bench.stats_interval / world.dt))
        self.window = JitterStats()
        self.latency = JitterStats()  # command arrival to the tick that applies it [wall s]
        self._applied = 0  # commands applied by the last loop.stats
        self._reasons: dict[str, int] = {}  # lines rejected by reason, likewise
        self._trips = 0  # watchdog trips (safe states applied), likewise
        self._clock: tuple[float, float] = (0.0, time.monotonic())  # (sim t, wall) of that
        self.overruns_warned = False  # loop.overruns said (once a run)

    def started(self, wall0: float, t: float = 0.0) -> None:
        """The window runs from simulated time ``t`` at ``wall0`` (monotonic), in ticks of the
        world's step as it is now (ArduPilot's first frame may have set it)."""
        self._clock = (t, wall0)
        self.every = max(1, round(self.world.bench.stats_interval / self.world.dt))

    def command_applied(self, record, t: float) -> None:
        """The world's ``on_command``: how long the command waited for its tick (wall)."""
        self.latency.add(max(time.monotonic() - record.t_rx, 0.0))

    def latency_summary(self) -> dict:
        return {
            "command_latency_p50_ms": round(self.latency.percentile_ms(50), 3),
            "command_latency_p99_ms": round(self.latency.percentile_ms(99), 3),
            "command_latency_max_ms": round(self.latency.max_s * 1e3, 3),
        }

    def log(self, t: float) -> None:
        world = self.world
        ports = {p.spec.url: p.stats.as_dict() for p in world.ports.values()}
        dropped = sum(s["dropped_lines"] for s in ports.values())
        applied = world.arbiter.commands
        reasons = self._rejected_by_reason()
        by_reason = {
            r: n - self._reasons.get(r, 0)
            for r, n in reasons.items()
            if n > self._reasons.get(r, 0)
        }
        now = time.monotonic()
        t_prev, wall_prev = self._clock
        achieved = (t - t_prev) / max(now - wall_prev, 1e-9)
        self._clock = (t, now)
        log.info(
            "loop.stats",
            t=round(t, 3),
            **self.window.summary(),
            dropped_lines=dropped,
            commands=applied - self._applied,
            watchdog_trips=world.arbiter.safe_states - self._trips,
            rejected=sum(by_reason.values()),  # a window's rejected is its reasons' sum
            **({"rejected_by_reason": by_reason} if by_reason else {}),
            time_scale=round(achieved, 3),
        )
        wanted = world.bench.time_scale
        overruns, ticks = self.window.overruns, self.window.ticks
        if not (self.paced_by_frames or self.overruns_warned) and overruns > OVERRUNS_WARN * ticks:
            self.overruns_warned = True  # once a run: loop.stats counts every window's after it
            log.warning(
                "loop.overruns",
                overruns=overruns,
                ticks=ticks,
                share=round(overruns / ticks, 3),
                hint=f"the machine is not keeping up: {overruns / ticks:.0%} of the ticks of the "
                "last window came a whole step late (sensor epochs off their time, commands "
                "applied a step later); what helps: fewer devices, a lower --rate or "
                "--time-scale, a quieter machine (said once a run; loop.stats counts them)",
            )
        if not self.paced_by_frames and achieved < TIME_SCALE_HELD * wanted:
            log.warning(
                "loop.time_scale_not_held",
                wanted=wanted,
                achieved=round(achieved, 2),
                hint="lower --time-scale or --rate; the machine cannot step this fast",
            )
        self._applied, self._reasons = applied, reasons
        self._trips = world.arbiter.safe_states
        self.window.reset()

    def _rejected_by_reason(self) -> dict[str, int]:
        """Lines the command devices refused since start, by reason, in REASONS' order (only
        reasons seen). Read with single lookups: the loop's thread counts while this one reads."""
        devices = self.world.command_devices
        totals = {r: sum(d.stats.rejected.get(r, 0) for d in devices) for r in REASONS}
        return {r: n for r, n in totals.items() if n}
