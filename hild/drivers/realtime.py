"""The real-time daemon: one scheduler ticks the vessel model and the sensors on one clock.

Ticks run against absolute deadlines (start + k dt / time_scale), so sleeping
never accumulates drift. A tick steps the model once and lets every device whose
epoch is due sample the truth; its sentences go to its ports, which write from
their own tasks, so a slow line never holds the loop.

The clock and the tick run in a thread of their own that blocks on the clock (a
timerfd) between ticks; the asyncio loop keeps every port, the MQTT session and
the signals. They meet at four points only: the control queue (filled on the
loop, drained by the tick), the stop flag, the tick's lines, handed to the loop
in one call per tick that sends any, and the paced ptys' lines, which the tick
thread writes as their bytes fall due (hild/transport/pacer.py). A tick that
sends nothing does not wake the loop, so the process wakes once per tick, not
twice.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import math
import signal
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import structlog

from hild.ardupilot.link import ArduPilotSitl
from hild.bench import Bench
from hild.bus.arbiter import Arbiter
from hild.bus.device import CommandDevice
from hild.bus.dispatch import Dispatcher
from hild.bus.screen import warm_up as warm_screen
from hild.bus.sentence import REASONS
from hild.clock import BlockingClock, JitterStats
from hild.control import ActuatorCommand, ControlQueue, SafeState
from hild.coupled.simulation import Simulation
from hild.device_runtime import DeviceRuntime
from hild.environment.environment import Environment
from hild.heap import frozen_heap
from hild.kernel_cache import started_cold
from hild.log import route_asyncio_errors
from hild.model.layout import S_SIZE
from hild.observers import TickObserver
from hild.rundir import STOP_SIGNALS
from hild.runtime import RuntimeControl
from hild.sensors.device import Device
from hild.sensors.factory import build_device
from hild.sensors.truth import Truth
from hild.threads import name_os_thread
from hild.traffic.report import closest_approaches
from hild.transport import Inbound, Port, open_port, parse_port_url
from hild.transport.pacer import TickPacer
from hild.transport.pty import PACE_QUANTUM_S, PtyPort
from hild.units import compass_deg

log = structlog.get_logger("hild.daemon")

STATE_CHECK_S = 1.0  # simulated seconds between checks that the simulation has not diverged
RESYNC_AFTER_S = 1.0  # a loop this far behind (suspend, debugger) jumps ahead instead of racing
# How long a thread that wants the GIL waits before asking its holder to drop it: Python's
# 5 ms would let a recorder's or a client library's thread delay a tick's wake-up by 5 ms.
GIL_SWITCH_S = 0.0005
TIME_SCALE_HELD = 0.95  # below this share of the asked time scale over a stats window: warn


def initial_simulation(bench: Bench, duration: float | None = None,
                       weather_may_change: bool = False) -> Simulation:  # fmt: skip
    """The bench's vessel at its initial heading, speed and held commands, in its weather
    (with ``weather_may_change``, a daemon's: any weather can follow, see Simulation)."""
    dt = 1.0 / bench.rate_hz
    environment = Environment(bench.weather, bench.vessel, dt, seed=bench.seed, duration=duration)
    sim = Simulation(bench.vessel, dt=dt, method=bench.method, environment=environment,
                     weather_may_change=weather_may_change)  # fmt: skip
    sim.x[5] = math.radians(bench.heading_deg)
    sim.x[6] = bench.speed
    for name, value in bench.commands.items():
        sim.set_command(name, value)
    if bench.traffic:
        sim.add_traffic(bench.traffic)
    sim.update_environment()
    return sim


class Daemon:
    """Runs a bench in real time (or scaled time) until stopped or ``duration`` sim seconds."""

    def __init__(
        self,
        bench: Bench,
        duration: float | None = None,
        observers: list[TickObserver] | None = None,
    ):
        self.bench = bench
        self.observers: list[TickObserver] = list(observers or [])
        self.duration = duration
        self.dt = 1.0 / bench.rate_hz
        self.tick_period_s = self.dt / bench.time_scale  # of wall time
        self.sim = initial_simulation(bench, duration, weather_may_change=True)
        self.ports: dict[tuple, Port] = {}
        self.devices: list[DeviceRuntime] = []
        self.jitter = JitterStats()
        self.window = JitterStats()
        self.start_utc: datetime | None = None
        self.queue = ControlQueue()
        self.dispatcher = Dispatcher(self.queue)
        self.dispatcher.listeners.extend(
            o.on_received for o in self.observers
            if type(o).on_received is not TickObserver.on_received  # a call per line otherwise
        )  # fmt: skip
        self.arbiter = Arbiter(bench.vessel.actuators, self.sim.act_cmd, self.sim.act_state)
        self.command_devices: list[CommandDevice] = []
        self.link: ArduPilotSitl | None = None  # ArduPilot's SITL: its frames pace the loop
        self.latency = JitterStats()  # command arrival to the tick that applies it
        self._window_applied = 0  # commands applied by the last loop.stats
        self._window_reasons: dict[str, int] = {}  # lines rejected by reason, likewise
        self._window_trips = 0  # watchdog trips (safe states applied), likewise
        self._window_clock: tuple[float, float] | None = None  # (sim t, wall) of that event
        self._stop = threading.Event()  # set from the loop (signals) or the tick thread
        self._outbox: list[tuple[DeviceRuntime, list[bytes]]] = []  # a tick's lines to send
        self.pacer = TickPacer()  # the paced ptys' bytes, written by the tick thread
        self._event_loop: asyncio.AbstractEventLoop | None = None
        self.stop_reason = "duration"
        self.loop_wall_s = 0.0
        self.loop_cpu_s = 0.0
        self.late_s = 0.0  # the last tick's lateness against its deadline [s]

    def stop(self, reason: str = "stop") -> None:
        """Ask the loop to finish after the current tick."""
        self.stop_reason = reason
        self._stop.set()

    def _warm_up(self) -> None:
        """Run every code path of a tick once before the clock starts (numba cache, imports).

        Throwaway copies do the work, so the run's state and random streams are untouched.
        """
        sim = initial_simulation(self.bench, weather_may_change=True)
        sim.tick()
        truth = Truth(0.0, datetime.now(UTC), sim.x[:6].copy(), sim.x[6:12].copy(),
                      actuators=sim.act_state.copy(), commands=sim.act_cmd.copy())  # fmt: skip
        queue = ControlQueue()
        arbiter = Arbiter(self.bench.vessel.actuators, sim.act_cmd, sim.act_state)
        for config in self.bench.devices:
            device = self._build(config)
            if isinstance(device, ArduPilotSitl):
                continue  # (it answers frames: no sentences to warm)
            device.sample(truth)
            if isinstance(device, CommandDevice):
                warm_screen()  # the throttled senders' screen (hild/bus/screen.py), compiled
                line = device.neutral_line()
                record = device.receive(Inbound(line, "warm-up", None, time.monotonic()))
                if record is not None:
                    queue.put(record)
                    queue.put(SafeState(config.name, 0.0, centre_angles=False))
        for queued in queue.drain():
            arbiter.apply(queued)

    def _build(self, config) -> Device | CommandDevice:
        b = self.bench
        return build_device(config, b.seed, b.origin, b.vessel)

    async def open(self) -> None:
        """Create every port (ptys, sockets, serial lines) and every device."""
        opened: dict[tuple, tuple[Port, str]] = {}
        for config in self.bench.devices:
            device = self._build(config)
            if isinstance(device, ArduPilotSitl):
                self._open_link(device)
                continue
            commands = device if isinstance(device, CommandDevice) else None
            if commands is not None:
                self.command_devices.append(commands)
            ports = []
            for url in config.ports:
                spec = parse_port_url(url, self.bench.run_dir)
                key = spec.identity
                if key not in opened:
                    port = open_port(spec, default_baud=config.baud)
                    port.on_line = self.dispatcher.receive
                    opened[key] = (port, url)
                port = opened[key][0]
                if commands is not None:
                    port.accepts_commands = True
                    self.dispatcher.attach(port.spec.url, commands)
                    port.screen = self.dispatcher.screen(port.spec.url)
                ports.append(port)
            self.devices.append(DeviceRuntime(device, ports, 1.0 / config.rate_hz))
        for key, (port, url) in opened.items():
            try:
                await port.start()
            except OSError as e:
                # Name the port: "address already in use" alone is a puzzle.
                owners = [c.name for c in self.bench.devices if url in c.ports]
                where = f"device {', '.join(owners)}, port {url}"
                raise OSError(e.errno, f"{where}: {e.strerror or e}") from e
            finally:
                self.ports[key] = port  # started or not, close() releases it
        if self.link is None and self.tick_period_s <= PACE_QUANTUM_S:  # a fine, steady grid
            for port in self.ports.values():
                if isinstance(port, PtyPort):
                    port.pace_from(self.pacer)

    def _open_link(self, link: ArduPilotSitl) -> None:
        """ArduPilot's link: its own socket, read by the tick thread (frames pace the loop)."""
        url = link.config.ports[0]
        try:
            link.open(parse_port_url(url, self.bench.run_dir))
        except OSError as e:
            where = f"device {link.config.name}, port {url}"
            raise OSError(e.errno, f"{where}: {e.strerror or e}") from e
        link.start(self.sim.x, self.sim.act_state, self.sim.act_cmd, self.dt)
        if self.bench.time_scale != 1.0:
            note = "ArduPilot's frames pace the run: its --speedup sets the scale"
            log.warning("ardupilot.time_scale_unused", time_scale=self.bench.time_scale, note=note)
        self.link = link

    def apply_controls(self) -> None:
        """Between two ticks: trip the watchdogs whose lease ran out, apply what is queued."""
        now = time.monotonic()
        for device in self.command_devices:
            device.poll(now, self.queue.put)  # a trip's safe state goes on the queue
        if not self.queue:
            return
        for record in self.queue.drain():
            record.apply(self)  # hild/control.py: each kind of record applies itself
            if isinstance(record, ActuatorCommand):
                self.latency.add(max(now - record.t_rx, 0.0))
            else:
                for observer in self.observers:
                    observer.on_control(self, record)

    async def close(self) -> None:
        for port in self.ports.values():
            await port.close()
        if self.link is not None:
            self.link.close()

    @functools.cached_property
    def runtime_control(self) -> RuntimeControl:
        """The run's one runtime control (hild/runtime.py), made when a front end that takes
        requests (MQTT control, hild ctl, Foxglove) first asks for it: each hands it theirs."""
        return RuntimeControl(self)

    def truth(self, t: float) -> Truth:
        assert self.start_utc is not None
        return Truth.of(self.sim, t, self.start_utc + timedelta(seconds=t))

    def emit_due(self, t: float, truth: Truth | None = None) -> None:
        """Let each device whose epoch has come sample the truth (``truth``, when the tick has
        made it already); put its sentences in the outbox, which ``hand_over`` gives the loop
        to send."""
        for rt in self.devices:
            if t + 1e-9 < rt.next_due_s:
                continue
            rt.next_due_s += rt.period_s
            if rt.next_due_s <= t:  # fell behind (resync): skip the missed epochs
                rt.next_due_s = t + rt.period_s
            truth = truth or self.truth(t)
            try:
                lines = rt.device.sample(truth)
            except Exception as e:  # one device's bug or absurd value must not end the run
                rt.failures += 1
                rt.log_failure(device=rt.device.config.name, t=round(t, 3), error=repr(e)[:300],
                               failures=rt.failures)  # fmt: skip
                continue
            if lines:
                self._outbox.append((rt, lines))
                for observer in self.observers:
                    observer.on_sentences(rt.device.config.name, lines)

    def hand_over(self) -> None:
        """From the tick thread: give the loop the tick's lines to send, in one call, and only
        when there are any (a tick that sends nothing does not wake the loop)."""
        if self._outbox:
            batch, self._outbox = self._outbox, []
            assert self._event_loop is not None
            self._event_loop.call_soon_threadsafe(self._send, batch)

    def _send(self, batch: list[tuple[DeviceRuntime, list[bytes]]]) -> None:
        """On the loop: queue each line on its device's ports (the writer tasks send them)."""
        for rt, lines in batch:
            for line in lines:
                for port in rt.ports:
                    port.send(line)

    async def run(self, on_ready: Callable[[Daemon], None] | None = None) -> dict:
        """Open everything, run the loop, close everything; return the run's summary."""
        loop = asyncio.get_running_loop()
        route_asyncio_errors(loop)
        # Signals reach the main thread only: a run in another (a sweep's worker) leaves them
        # to whoever owns that thread, and is stopped by its duration or stop().
        signals = STOP_SIGNALS if threading.current_thread() is threading.main_thread() else ()
        for sig in signals:
            loop.add_signal_handler(sig, self.stop, signal.Signals(sig).name)
        started = time.monotonic()
        note = (
            "the first run compiles the vessel model, which takes a while (up to a minute on a "
            "Raspberry Pi; hild warm does it ahead); later runs load it from the cache"
            if started_cold() else "loading the compiled vessel model from the cache"
        )  # fmt: skip
        log.info("run.preparing", note=note)
        self._warm_up()
        log.info("run.prepared", seconds=round(time.monotonic() - started, 2))
        switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(GIL_SWITCH_S)
        try:
            gc.collect()  # before the ports open: a client told they are ready waits for none
            await self.open()
            for observer in self.observers:
                await observer.start(self)
            if on_ready:
                on_ready(self)
            with frozen_heap():  # what start-up made needs no scanning in a tick
                await self._loop()
        finally:
            for observer in self.observers:
                try:
                    await observer.stop(self)
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
            self.start_utc = self.bench.start_time
            return time.monotonic()
        now, now_monotonic = time.time(), time.monotonic()
        start = math.floor(now) + 1.0
        self.start_utc = datetime.fromtimestamp(start, UTC)
        return now_monotonic + (start - now)

    async def _loop(self) -> None:
        scale = self.bench.time_scale
        wall_dt = self.tick_period_s
        t0 = self._start_clock()
        assert self.start_utc is not None and self.sim.environment is not None
        log.info("run.start", bench=self.bench.name, utc=self.start_utc.isoformat(),
                 rate_hz=self.bench.rate_hz, time_scale=scale)  # fmt: skip
        environment = self.sim.environment
        log.info("run.weather", **environment.summary())
        for note in environment.notes:
            log.info("run.weather.note", note=note)
        stats_every = max(1, round(self.bench.stats_interval / self.dt))
        last_k = None if self.duration is None else round(self.duration / self.dt)
        # the run's wall time and CPU from step 0 (the tick thread waits for it, and waiting
        # costs no CPU)
        wall0, cpu0 = t0, time.process_time()
        self._window_clock = (0.0, wall0)
        self._event_loop = asyncio.get_running_loop()
        finished: asyncio.Future[None] = self._event_loop.create_future()
        thread = threading.Thread(
            target=self._tick_thread, args=(finished, t0, wall_dt, last_k, stats_every),
            name="hild-tick", daemon=True,
        )  # fmt: skip
        thread.start()
        try:
            await finished
        finally:
            self._stop.set()  # (cancelled: the thread ends after its current tick)
            thread.join()
            self.loop_wall_s = time.monotonic() - wall0
            self.loop_cpu_s = time.process_time() - cpu0

    def _tick_thread(self, finished: asyncio.Future, *args) -> None:
        """The clock and the tick, in a thread that blocks on the clock between ticks: the
        event loop keeps the I/O and wakes only when a port has something to do."""
        name_os_thread("hild-tick")
        assert self._event_loop is not None
        try:
            self._ticks(*args)
        except BaseException as e:  # noqa: BLE001 (handed to the loop, which raises it)
            self._event_loop.call_soon_threadsafe(_settle, finished, e)
        else:
            self._event_loop.call_soon_threadsafe(_settle, finished, None)

    def _ticks(self, t0: float, wall_dt: float, last_k: int | None, stats_every: int) -> None:
        """The tick thread's loop: the devices' epoch of step 0 at ``t0``, then for each tick
        wait for the deadline, apply the controls, step, sample, tell the observers, hand the
        lines over."""
        k = 0
        check_every = max(1, round(STATE_CHECK_S / self.dt))
        if self.link is not None:
            self._first_epoch()
            self._frame_ticks(self.link, last_k, stats_every, check_every)
            return
        clock = BlockingClock(wall_dt)  # armed once, periodic, at the first deadline
        try:
            # step 0 at t0 (a whole second of UTC on the wall clock): waited for here, on the
            # thread's own clock, with the thread already started (started at t0, it made the
            # first ticks of a fast run late: 3-4 ms at --time-scale 10)
            clock.sleep_until(t0)
            self._first_epoch()
            while not self._stop.is_set() and (last_k is None or k < last_k):
                k, t0 = self._tick(clock, k, t0, wall_dt, stats_every, check_every)
        finally:
            clock.close()

    def _first_epoch(self) -> None:
        """The devices' sentences of step 0, before the first tick."""
        self.emit_due(0.0)
        self.hand_over()

    def _frame_ticks(self, link: ArduPilotSitl, last_k: int | None, stats_every: int,
                     check_every: int) -> None:  # fmt: skip
        """Lockstep with ArduPilot's SITL: a step for each frame, none without (paused)."""
        k = 0
        while not self._stop.is_set() and (last_k is None or k < last_k):
            if link.next_frame(self.queue.put, k) is None:
                continue
            self.jitter.add(0.0)  # (no deadline: a frame is never late; its answer time is
            self.window.add(0.0)  # the link's summary)
            k = self._step(k, stats_every, check_every, link)

    def _tick(self, clock: BlockingClock, k: int, t0: float, wall_dt: float, stats_every: int,
              check_every: int) -> tuple[int, float]:  # fmt: skip
        deadline = t0 + (k + 1) * wall_dt
        clock.sleep_until(deadline)  # returns at once when late
        late = time.monotonic() - deadline
        if late > RESYNC_AFTER_S:
            log.warning("loop.resync", behind_s=round(late, 3))
            t0 += late
            late = 0.0
        self.late_s = late
        self.jitter.add(late, wall_dt)
        self.window.add(late, wall_dt)
        return self._step(k, stats_every, check_every), t0

    def _step(self, k: int, stats_every: int, check_every: int,
              link: ArduPilotSitl | None = None) -> int:  # fmt: skip
        """One tick after its wait: apply the controls, step, answer ArduPilot (first: it waits
        on it), sample, tell the observers, hand the lines over. Returns the step count."""
        self.apply_controls()
        self.sim.tick()
        k += 1
        truth = None
        if link is not None:
            truth = self.truth(k * self.dt)
            link.answer(truth, k)
        self.emit_due(k * self.dt, truth)
        for observer in self.observers:
            observer.on_tick(self, k * self.dt)
        if k % stats_every == 0:
            self._log_stats(k * self.dt)
        if k % check_every == 0:
            self._check_state(k * self.dt)
        self.hand_over()
        self.pacer.after_tick()
        return k

    def _check_state(self, t: float) -> None:
        """Stop a run whose simulation has diverged (a non-finite or absurd state): its sensors
        would send nonsense. Once per simulated second, off the hot path."""
        problem = self.sim.state_problem()
        if problem:
            log.error("sim.diverged", t=round(t, 3), problem=problem,
                      hint="a higher rate_hz (a shorter step) or a milder weather may hold "
                      "it; if not, the model does not hold this boat in this sea")  # fmt: skip
            self.stop("diverged")

    def _log_stats(self, t: float) -> None:
        ports = {p.spec.url: p.stats.as_dict() for p in self.ports.values()}
        dropped = sum(s["dropped_lines"] for s in ports.values())
        applied = self.arbiter.commands
        reasons = self._rejected_by_reason()
        by_reason = {r: n - self._window_reasons.get(r, 0) for r, n in reasons.items()
                     if n > self._window_reasons.get(r, 0)}  # fmt: skip
        now = time.monotonic()
        t_prev, wall_prev = self._window_clock or (0.0, now)
        achieved = (t - t_prev) / max(now - wall_prev, 1e-9)
        self._window_clock = (t, now)
        log.info("loop.stats", t=round(t, 3), **self.window.summary(), dropped_lines=dropped,
                 commands=applied - self._window_applied,
                 watchdog_trips=self.arbiter.safe_states - self._window_trips,
                 rejected=sum(by_reason.values()),  # a window's rejected is its reasons' sum
                 **({"rejected_by_reason": by_reason} if by_reason else {}),
                 time_scale=round(achieved, 3))  # fmt: skip
        wanted = self.bench.time_scale
        if self.link is None and achieved < TIME_SCALE_HELD * wanted:  # (else ArduPilot's pace)
            log.warning("loop.time_scale_not_held", wanted=wanted, achieved=round(achieved, 2),
                        hint="lower --time-scale or --rate; the machine cannot step this "
                        "fast")  # fmt: skip
        self._window_applied, self._window_reasons = applied, reasons
        self._window_trips = self.arbiter.safe_states
        self.window.reset()

    def _rejected_by_reason(self) -> dict[str, int]:
        """Lines the command devices refused since start, by reason, in REASONS' order (only
        reasons seen). Read with single lookups: the loop's thread counts while this one reads."""
        totals = {r: sum(d.stats.rejected.get(r, 0) for d in self.command_devices) for r in REASONS}
        return {r: n for r, n in totals.items() if n}

    def _command_totals(self) -> tuple[int, int]:
        """Command records applied, and lines the command devices refused, since start."""
        rejected = sum(sum(d.stats.rejected.values()) for d in self.command_devices)
        return self.arbiter.commands, rejected

    def _bus_summary(self) -> dict:
        if not self.command_devices:
            return {}
        applied, rejected = self._command_totals()
        return {
            "commands_applied": applied,
            "commands_rejected": rejected,
            "control_dropped": self.queue.dropped,
            "command_latency_p50_ms": round(self.latency.percentile_ms(50), 3),
            "command_latency_p99_ms": round(self.latency.percentile_ms(99), 3),
            "command_latency_max_ms": round(self.latency.max_s * 1e3, 3),
            "actuators": self.actuator_summary(),
        }

    def actuator_summary(self) -> dict:
        """Each actuator's commanded and actual speed, angle [deg] and deflector."""
        out = {}
        for a in self.bench.vessel.actuators:
            span = slice(a.index * S_SIZE, (a.index + 1) * S_SIZE)
            cmd, state = self.sim.act_cmd[span], self.sim.act_state[span]
            out[a.name] = {
                "commanded": [round(float(cmd[0]), 2), round(math.degrees(cmd[1]), 2),
                              round(float(cmd[2]), 3)],
                "actual": [round(float(state[0]), 2), round(math.degrees(state[1]), 2),
                           round(float(state[2]), 3)],
            }  # fmt: skip
        return out

    def summary(self) -> dict:
        x = self.sim.x
        return {
            "reason": self.stop_reason,
            "t": round(self.sim.t, 6),
            **self.jitter.summary(),
            "loop_wall_s": round(self.loop_wall_s, 3),
            "cpu_percent": round(100.0 * self.loop_cpu_s / max(self.loop_wall_s, 1e-9), 2),
            "received_lines": self.dispatcher.received_lines,
            **self._bus_summary(),
            "devices": {
                **{
                    rt.device.config.name: {**rt.device.summary(), "failures": rt.failures}
                    for rt in self.devices
                },
                **({self.link.config.name: self.link.summary()} if self.link else {}),
            },  # fmt: skip
            "ports": {p.spec.url: p.stats.as_dict() for p in self.ports.values()},
            "position_ned": [round(float(v), 3) for v in x[:3]],
            "heading_deg": compass_deg(float(x[5]), 3),
            **self._traffic_summary(),
            **{k: v for o in self.observers for k, v in o.summary().items()},
        }

    def _traffic_summary(self) -> dict:
        """Each target's closest approach to the own ship, and when (none: nothing)."""
        traffic = self.sim.traffic
        return {"traffic": closest_approaches(traffic.view())} if traffic is not None else {}


def _settle(future: asyncio.Future, error: BaseException | None) -> None:
    """On the loop: finish ``future`` with the tick thread's outcome (once)."""
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
