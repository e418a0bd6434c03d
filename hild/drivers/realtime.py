"""The real-time driver: `hild run`'s clock and its I/O, around one world (hild/world/).

Ticks run against absolute deadlines (start + k dt / time_scale), so sleeping never
accumulates drift; the world's tick does the rest. A bench with ArduPilot's SITL is paced by
its frames instead (hild/drivers/frames.py). Each tick's lines go to their devices' ports,
which write from their own tasks, so a slow line never holds the loop.

The clock and the tick run in a thread of their own that blocks on the clock (a timerfd)
between ticks; the asyncio loop keeps every port, the MQTT session, `hild ctl`, Foxglove and
the signals. They meet at four points only: the control queue (filled on the loop, drained by
the tick), the stop flag, the tick's lines, handed to the loop in one call per tick that sends
any, and the paced ptys' lines, which the tick thread writes as their bytes fall due
(hild/transport/pacer.py). A tick that sends nothing does not wake the loop.
"""

from __future__ import annotations

import asyncio
import gc
import math
import signal
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

import structlog

from hild.bench import Bench
from hild.clock import BlockingClock
from hild.drivers.frames import run_frames
from hild.drivers.ports import close_ports, open_ports
from hild.drivers.stats import LoopStats
from hild.heap import frozen_heap
from hild.log import route_asyncio_errors
from hild.observers import TickObserver
from hild.rundir import STOP_SIGNALS
from hild.threads import name_os_thread
from hild.transport.pacer import TickPacer
from hild.transport.pty import PACE_QUANTUM_S, PtyPort
from hild.world.rehearsal import prepare
from hild.world.world import Outbox, World

log = structlog.get_logger("hild.daemon")

RESYNC_AFTER_S = 1.0  # a loop this far behind (suspend, debugger) jumps ahead instead of racing
# How long a thread that wants the GIL waits before asking its holder to drop it: Python's
# 5 ms would let a recorder's or a client library's thread delay a tick's wake-up by 5 ms.
GIL_SWITCH_S = 0.0005


class Daemon:
    """Runs a bench's world in real time (or scaled time, or ArduPilot's frames) until stopped
    or ``duration`` simulated seconds; its observers see the world's view (``World.view``)."""

    def __init__(self, bench: Bench, duration: float | None = None, observers: list | None = None):
        self.bench = bench
        self.world = World(bench, duration, observers or [], weather_may_change=True)
        self.world.tick_period_s = self.world.dt / bench.time_scale  # of wall time
        self.link = self.world.links[0] if self.world.links else None  # its frames pace it
        # (a fleet's several links: every one's frame paces it, hild/drivers/frames.py)
        self.stats = LoopStats(self.world, self.link is not None)
        self.world.on_command = self.stats.command_applied
        self.pacer = TickPacer()  # the paced ptys' bytes, written by the tick thread
        self._event_loop: asyncio.AbstractEventLoop | None = None
        self.loop_wall_s = 0.0
        self.loop_cpu_s = 0.0

    @property
    def observers(self) -> list[TickObserver]:
        return self.world.observers

    def stop(self, reason: str = "stop") -> None:
        """Ask the loop to finish after the current tick."""
        self.world.stop(reason)

    @property
    def stop_reason(self) -> str:
        return self.world.stop_reason

    async def open(self) -> None:
        """Open every port and link; pace the ptys from the tick thread on a fine grid."""
        await open_ports(self.world)
        if self.link is None and self.world.tick_period_s <= PACE_QUANTUM_S:  # fine, steady
            for port in self.world.ports.values():
                if isinstance(port, PtyPort):
                    port.pace_from(self.pacer)

    async def close(self) -> None:
        await close_ports(self.world)

    def hand_over(self, out: Outbox) -> None:
        """From the tick thread: give the loop the tick's lines to send, in one call, and only
        when there are any (a tick that sends nothing does not wake the loop)."""
        if out:
            assert self._event_loop is not None
            self._event_loop.call_soon_threadsafe(_send, out)

    async def run(self, on_ready: Callable[[Daemon], None] | None = None) -> dict:
        """Open everything, run the loop, close everything; return the run's summary."""
        loop = asyncio.get_running_loop()
        route_asyncio_errors(loop)
        # Signals reach the main thread only: a run in another (a sweep's worker) leaves them
        # to whoever owns that thread, and is stopped by its duration or stop().
        signals = STOP_SIGNALS if threading.current_thread() is threading.main_thread() else ()
        for sig in signals:
            loop.add_signal_handler(sig, self.stop, signal.Signals(sig).name)
        prepare(self.bench)
        switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(GIL_SWITCH_S)
        try:
            gc.collect()  # before the ports open: a client told they are ready waits for none
            await self.open()
            for observer in self.observers:
                await observer.start(self.world.view)
            if on_ready:
                on_ready(self)
            with frozen_heap():  # what start-up made needs no scanning in a tick
                await self._loop()
        finally:
            for observer in self.observers:
                try:
                    await observer.stop(self.world.view)
                except Exception:  # an observer's trouble must not keep the ports open
                    log.exception("observer.stop_failed", observer=type(observer).__name__)
            await self.close()
            sys.setswitchinterval(switch_interval)
            for sig in signals:
                loop.remove_signal_handler(sig)
        summary = self.summary()
        log.info("run.summary", **summary)
        return summary

    def _start_clock(self) -> float:
        """Pick the run's UTC epoch and when, on the monotonic clock, its step 0 is: on the wall
        clock the next whole second (the tick thread waits for it on its precise clock), else
        now."""
        if self.bench.start_time is not None:
            self.world.start_utc = self.bench.start_time
            return time.monotonic()
        now, now_monotonic = time.time(), time.monotonic()
        start = math.floor(now) + 1.0
        self.world.start_utc = datetime.fromtimestamp(start, UTC)
        return now_monotonic + (start - now)

    async def _loop(self) -> None:
        world = self.world
        t0 = self._start_clock()
        assert world.start_utc is not None and world.sim.environment is not None
        log.info(
            "run.start",
            bench=self.bench.name,
            utc=world.start_utc.isoformat(),
            rate_hz=self.bench.rate_hz,
            time_scale=self.bench.time_scale,
        )
        environment = world.sim.environment
        log.info("run.weather", **environment.summary())
        for note in environment.notes:
            log.info("run.weather.note", note=note)
        # the run's wall time and CPU from step 0 (the tick thread waits for it, and waiting
        # costs no CPU)
        wall0, cpu0 = t0, time.process_time()
        self.stats.started(wall0)
        self._event_loop = asyncio.get_running_loop()
        finished: asyncio.Future[None] = self._event_loop.create_future()
        thread = threading.Thread(
            target=self._tick_thread, args=(finished, t0), name="hild-tick", daemon=True
        )
        thread.start()
        try:
            await finished
        finally:
            world.stop(world.stop_reason)  # (cancelled: the thread ends after its current tick)
            thread.join()
            self.loop_wall_s = time.monotonic() - wall0
            self.loop_cpu_s = time.process_time() - cpu0

    def _tick_thread(self, finished: asyncio.Future, t0: float) -> None:
        """The clock and the tick, in a thread that blocks on the clock between ticks: the
        event loop keeps the I/O and wakes only when a port has something to do."""
        name_os_thread("hild-tick")
        assert self._event_loop is not None
        try:
            self._ticks(t0)
        except BaseException as e:  # noqa: BLE001 (handed to the loop, which raises it)
            self._event_loop.call_soon_threadsafe(_settle, finished, e)
        else:
            self._event_loop.call_soon_threadsafe(_settle, finished, None)

    def _ticks(self, t0: float) -> None:
        """The devices' epoch of step 0 at ``t0``, then the ticks: each on its deadline, or on
        its frame when ArduPilot paces the loop."""
        world = self.world
        if self.link is not None:
            self.hand_over(world.first_epoch())
            run_frames(world, world.links, self._after_frame)
            return
        duration = world.duration
        last_k = None if duration is None else round(duration / world.dt)
        wall_dt = world.tick_period_s
        clock = BlockingClock(wall_dt)  # armed once, periodic, at the first deadline
        try:
            # step 0 at t0 (a whole second of UTC on the wall clock): waited for here, on the
            # thread's own clock, with the thread already started (started at t0, it made the
            # first ticks of a fast run late: 3-4 ms at --time-scale 10)
            clock.sleep_until(t0)
            self.hand_over(world.first_epoch())
            while not world.stopped and (last_k is None or world.k < last_k):
                deadline = t0 + (world.k + 1) * wall_dt
                clock.sleep_until(deadline)  # returns at once when late
                late = time.monotonic() - deadline
                if late > RESYNC_AFTER_S:
                    log.warning("loop.resync", behind_s=round(late, 3))
                    t0 += late
                    late = 0.0
                world.late_s = late
                world.jitter.add(late, wall_dt)
                self.stats.window.add(late, wall_dt)
                self._after_tick(world.tick())
        finally:
            clock.close()

    def _after_frame(self, out: Outbox) -> None:
        if self.world.k == 1:  # the time scale from the first frame: not the wait for a SITL
            self.stats.started(time.monotonic(), self.world.t)  # (and its step: the frame's)
        self.world.jitter.add(0.0)  # (no deadline: a frame is never late; its answer time is
        self.stats.window.add(0.0)  # the link's summary)
        self._after_tick(out)

    def _after_tick(self, out: Outbox) -> None:
        if self.world.k % self.stats.every == 0:
            self.stats.log(self.world.t)
        self.hand_over(out)
        self.pacer.after_tick()

    def summary(self) -> dict:
        world = self.world
        return {
            "reason": world.stop_reason,
            "t": round(world.sim.t, 6),
            **world.jitter.summary(),
            "loop_wall_s": round(self.loop_wall_s, 3),
            "cpu_percent": round(100.0 * self.loop_cpu_s / max(self.loop_wall_s, 1e-9), 2),
            "received_lines": world.dispatcher.received_lines,
            **world.bus_summary(self.stats.latency_summary()),
            "devices": world.device_summaries(),
            "ports": {p.spec.url: p.stats.as_dict() for p in world.ports.values()},
            **world.vessel_summary(),
            **{k: v for o in self.observers for k, v in o.summary().items()},
        }


def _send(batch: Outbox) -> None:
    """On the loop: queue each line on its device's ports (the writer tasks send them)."""
    for rt, lines in batch:
        for line in lines:
            for port in rt.ports:
                port.send(line)


def _settle(future: asyncio.Future, error: BaseException | None) -> None:
    """On the loop: finish ``future`` with the tick thread's outcome (once)."""
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
