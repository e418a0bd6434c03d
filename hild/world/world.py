"""One world: everything a run is, with no clock and no I/O of its own.

A world holds the simulation (the own ship, its weather and the traffic), the devices (each in
the role its kind says: hild/devices/roles.py), the control queue and the runtime control, and
the tick observers. ``tick`` steps it one tick, in the one order every driver uses:

1. the controls: the watchdogs polled at the world's simulated time, the queue applied;
2. the step (or, in lockstep, a quiet stretch of steps ending in this tick);
3. the frames' answers (ArduPilot's SITL waits on them: first);
4. the devices whose epoch is due sample the truth: their lines, per device, are returned;
5. the observers are told (they never await), each handed the world's one read-only view
   (``view``, hild/world/view.py), not the world;
6. once a simulated second, the state is checked (a diverged run stops).

Whoever owns time (hild/drivers/) calls it: the real-time driver on its deadlines, the frames
driver once per frame, the lockstep driver as fast as the machine goes. Every timer inside
runs on simulated time: the watchdogs' leases, the devices' epochs, the statistics windows.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import structlog

from hild.bench import Bench
from hild.bus.arbiter import Arbiter
from hild.bus.dispatch import Dispatcher
from hild.clock import JitterStats
from hild.control import ActuatorCommand, ControlQueue
from hild.coupled.simulation import Simulation
from hild.devices.registry import COMMANDS, FRAMES, KINDS, SENSOR, build_device
from hild.devices.roles import TakesCommands
from hild.model.layout import S_SIZE
from hild.observers import TickObserver
from hild.runtime import RuntimeControl
from hild.sensors.truth import Truth
from hild.traffic.report import closest_approaches, closest_approaches_by_boat
from hild.traffic.view import TrafficView
from hild.transport import Port
from hild.units import compass_deg
from hild.world.boats import Afloat, FleetArbiter, FleetViews, as_target, share_air
from hild.world.build import afloat, initial_environment, initial_simulation
from hild.world.devices import DeviceRuntime
from hild.world.view import WorldView

log = structlog.get_logger("hild.daemon")

STATE_CHECK_S = 1.0  # simulated seconds between checks that the simulation has not diverged

Outbox = Sequence[tuple[DeviceRuntime, list[bytes]]]  # a tick's lines, per device
NOTHING: Outbox = ()  # a tick at which no device was due (most of them: no list made)


class World:
    """A bench's run: built once, stepped by a driver (``tick``), seen by the observers through
    its ``view`` (read-only, made once)."""

    def __init__(
        self,
        bench: Bench,
        duration: float | None = None,
        observers: Sequence[TickObserver] = (),
        weather_may_change: bool = False,
    ):
        self.bench = bench
        self.duration = duration
        self.dt = 1.0 / bench.rate_hz
        self.sim = initial_simulation(bench, duration, weather_may_change)
        self.k = 0  # ticks stepped
        self.t = 0.0  # the simulated time [s]: k dt
        self.check_every = max(1, round(STATE_CHECK_S / self.dt))
        self.start_utc: datetime | None = bench.start_time  # (a wall-clock run: its driver's)
        self.queue = ControlQueue()
        self.dispatcher = Dispatcher(self.queue, self.now)
        self.arbiter: Arbiter | FleetArbiter = Arbiter(
            bench.vessel.actuators, self.sim.act_cmd, self.sim.act_state
        )
        # a fleet's other boats (hild/world/boats.py): each its own simulation and arbiter
        self.afloat: list[Afloat] = [
            afloat(bench, boat, duration, weather_may_change) for boat in bench.boats[1:]
        ]
        # every boat's simulation in the bench's order, the first the world's own (one boat:
        # just it); never replaced (each is stepped and repositioned in place)
        self.sims: list[Simulation] = [self.sim, *(a.sim for a in self.afloat)]
        # a fleet's traffic steps once every boat has, against them all (``_tick_fleet``): the
        # boats' states at the step's start and end, one row each, made once
        self._fleet_before = np.zeros((len(self.sims), self.sim.x.size))
        self._fleet_after = np.zeros_like(self._fleet_before)
        self._fleet_rows = [
            (s, self._fleet_before[b], self._fleet_after[b]) for b, s in enumerate(self.sims)
        ]
        if self.afloat and self.sim.traffic is not None:
            self.sim.traffic.use_boats(len(self.sims))
        boat_of = {b.name: i for i, b in enumerate(bench.boats)}
        self.observers: list[TickObserver] = list(observers)
        self.dispatcher.listeners.extend(
            o.on_received
            for o in self.observers
            if type(o).on_received is not TickObserver.on_received  # a call per line otherwise
        )
        self.devices: list[DeviceRuntime] = []  # sampled on their epochs (sensors, buses)
        self.command_devices: list[TakesCommands] = []  # the devices that take commands
        self.sensors: dict[str, Any] = {}  # the sensors, by name (faults apply to them)
        self.links: list = []  # the devices whose frames pace the loop (PacesFrames)
        self.link_boats: list[int] = []  # the boat each link flies (its index)
        self.boat_of = {c.name: boat_of.get(c.boat, 0) for c in bench.devices}
        for config in bench.devices:
            boat = boat_of.get(config.boat, 0)
            vessel = self.afloat[boat - 1].boat.vessel if boat else bench.vessel
            device = build_device(config, bench.seed, bench.origin, vessel)
            role = KINDS[config.model].role
            if role == FRAMES:
                self.links.append(device)
                self.link_boats.append(boat)
                continue
            if role == COMMANDS:
                self.command_devices.append(device)
            elif role == SENSOR:
                self.sensors[config.name] = device
            self.devices.append(
                DeviceRuntime(device, [], 1.0 / config.rate_hz, role=role, boat=boat)
            )
        if self.afloat:
            arbiters = [self.arbiter] + [a.arbiter for a in self.afloat]
            self.arbiter = FleetArbiter(arbiters, self.boat_of)
        # a fleet's AIS stations (the traffic and all boats) on one data link, each transmission
        # heard by every boat's receiver in range (hild/world/boats.py share_air); a lone
        # boat's receivers keep their own schedules
        stations = functools.partial(self._fleet_view, -1)
        self.air = share_air(bench, self.devices, stations) if self.afloat else None
        # each boat as the others' sensors see it (a fleet's; none for one boat)
        self._fleet_views = FleetViews([as_target(b) for b in bench.boats], self.sims)
        self._boat_truths: dict[int, Truth] = {}  # (a fleet's: the last instant of each boat)
        self._rate_followed: float | None = None  # the step a SITL's first frame set
        # a driver's hook for each command applied, with the simulated time it applied at
        self.on_command: Callable[[ActuatorCommand, float], None] | None = None
        self.stop_reason = "duration"
        self._stopped = threading.Event()  # set by stop(), from any thread
        # The driver's clock as the observers see it: the wall time a tick takes, the ticks'
        # lateness, the last tick's, and the open ports (none in lockstep).
        self.tick_period_s = self.dt
        self.jitter = JitterStats()
        self.late_s = 0.0
        self.ports: dict[tuple, Port] = {}
        # what the observers see of it: made once, handed to every hook (hild/world/view.py)
        self.view = WorldView(self)

    def sim_of(self, device: str) -> Simulation:
        """The simulation of the boat ``device`` is on (the first boat's for no device)."""
        return self.sims[self.boat_of.get(device, 0)]

    @property
    def fleet_sims(self) -> list[Simulation]:
        """A fleet's other boats' simulations, in the bench's order (none for one boat)."""
        return self.sims[1:]

    # --- time -------------------------------------------------------------------------------
    def now(self) -> float:
        """The simulated time (the watchdogs' clock, read from any thread)."""
        return self.t

    def truth(self, t: float, boat: int = 0) -> Truth:
        """The instant ``t`` of the first boat (of a fleet's ``boat``: its traffic the run's
        and the other boats)."""
        assert self.start_utc is not None
        truth = Truth.of(self.sims[boat], t, self.start_utc + timedelta(seconds=t))
        if self.afloat:
            truth.traffic = self._fleet_view(boat)
        return truth

    def _boat_truth(self, boat: int, t: float) -> Truth:
        """A fleet's other boat's instant ``t``, made once for all its devices due at ``t``."""
        seen = self._boat_truths.get(boat)
        if seen is None or seen.t != t:
            seen = self._boat_truths[boat] = self.truth(t, boat)
        return seen

    def _fleet_view(self, boat: int) -> TrafficView:
        """The run's traffic and every boat but ``boat``, as its sensors see them (every boat
        for -1: the AIS stations on the air)."""
        views = self._fleet_views
        views.at(self.k, self._traffic_view)
        return views.view(boat)

    def _traffic_view(self) -> TrafficView | None:
        traffic = self.sim.traffic
        return traffic.view() if traffic is not None else None

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def stop(self, reason: str = "stop") -> None:
        """End the run after the current tick (from any thread; the last reason is kept)."""
        self.stop_reason = reason
        self._stopped.set()

    def follow_rate(self, rate_hz: float) -> float:
        """Step at ``rate_hz`` from the first tick on (ArduPilot's first frame says its step:
        hild/ardupilot/link.py), the weather made again for that step; the rate it stepped at
        before. Only before the first tick: a run's step never changes once it has stepped."""
        if self.k:
            raise RuntimeError(f"the world has stepped at {self.bench.rate_hz:g} Hz already")
        before = self.bench.rate_hz
        if self._rate_followed is not None:  # a fleet's second SITL: one rate for all
            if abs(rate_hz - self._rate_followed) > 1e-9:
                log.error(
                    "ardupilot.rates_differ",
                    stepping_hz=self._rate_followed,
                    asked_hz=rate_hz,
                    note="a fleet's SITLs share one world and its step: the first frame's "
                    "rate holds; run every instance at one SIM_RATE_HZ",
                )
            return before
        self._rate_followed = float(rate_hz)
        bench = dataclasses.replace(self.bench, rate_hz=float(rate_hz))
        self.sim.restep(1.0 / bench.rate_hz, initial_environment(bench, self.duration))
        for other in self.afloat:  # (a fleet's boats: each its own hull in the weather)
            own = dataclasses.replace(bench, vessel=other.boat.vessel)
            other.sim.restep(1.0 / bench.rate_hz, initial_environment(own, self.duration))
        self.tick_period_s *= self.sim.dt / self.dt  # (the driver's wall time per tick)
        self.bench, self.dt = bench, self.sim.dt
        self.check_every = max(1, round(STATE_CHECK_S / self.dt))
        return before

    # --- the tick ---------------------------------------------------------------------------
    def first_epoch(self) -> Outbox:
        """The devices' lines of step 0, before the first tick."""
        return self.sample_due(0.0)

    def tick(self, advance: Callable[[int], int] | None = None) -> Outbox:
        """One tick (the module's order); its lines, per device. ``advance(k)``, when given,
        steps the simulation from tick k and says how many steps it made (the lockstep
        driver's quiet stretches: nothing is due on the steps before the last); by default
        one step."""
        self.apply_controls()
        if advance is None:
            if self.afloat:
                self._tick_fleet()
            else:
                self.sim.tick()
            self.k += 1
        else:
            if self.afloat:  # (a quiet stretch steps the first boat only)
                raise RuntimeError("a fleet steps tick by tick: lockstep is for one boat")
            self.k += advance(self.k)
        t = self.t = self.k * self.dt
        truth = None
        if self.links:
            truth = self.truth(t)
            for link, boat in zip(self.links, self.link_boats, strict=True):
                link.answer(self._boat_truth(boat, t) if boat else truth, self.k)
        out = self.sample_due(t, truth)
        view = self.view
        for observer in self.observers:
            observer.on_tick(view, t)
        if self.k % self.check_every == 0:
            self.check_state()
        return out

    def _tick_fleet(self) -> None:
        """A fleet's step: every boat, then the run's traffic once, against every boat's states
        at the step's start and end (each target judging the boat that threatens it most:
        hild/traffic/kernel.py traffic_fleet_tick), copied into the arrays made once."""
        traffic = self.sim.traffic  # (it may have come since: `hild ctl traffic`)
        if traffic is None:
            for sim, _, _ in self._fleet_rows:
                sim.tick()
            return
        t = self.sim.t
        for sim, before, _ in self._fleet_rows:
            np.copyto(before, sim.x)
            sim.tick(step_traffic=False)
        for sim, _, after in self._fleet_rows:
            np.copyto(after, sim.x)
        traffic.tick_fleet(self._fleet_before, self._fleet_after, self.sim.dt, t, self.sim.t)

    def apply_controls(self) -> None:
        """Between two ticks: trip the watchdogs whose lease ran out, apply what is queued."""
        t = self.t
        for device in self.command_devices:
            device.poll(t, self.queue.put)  # a trip's safe state goes on the queue
        if not self.queue:
            return
        for record in self.queue.drain():
            record.apply(self)  # hild/control.py: each kind of record applies itself
            if isinstance(record, ActuatorCommand):
                if self.on_command is not None:
                    self.on_command(record, t)
            else:
                for observer in self.observers:
                    observer.on_control(self.view, record)

    def sample_due(self, t: float, truth: Truth | None = None) -> Outbox:
        """Let each device whose epoch has come sample the truth (``truth``, when the tick has
        made it already); their lines, per device."""
        out: list[tuple[DeviceRuntime, list[bytes]]] | None = None
        for rt in self.devices:
            if t + 1e-9 < rt.next_due_s:
                continue
            rt.next_due_s += rt.period_s
            if rt.next_due_s <= t:  # fell behind (resync): skip the missed epochs
                rt.next_due_s = t + rt.period_s
            if rt.boat:
                seen = self._boat_truth(rt.boat, t)
            else:
                seen = truth = truth or self.truth(t)
            try:
                lines = rt.device.sample(seen)
            except Exception as e:  # one device's bug or absurd value must not end the run
                rt.failures += 1
                rt.log_failure(
                    device=rt.device.config.name,
                    t=round(t, 3),
                    error=repr(e)[:300],
                    failures=rt.failures,
                )
                continue
            if lines:
                if out is None:
                    out = []
                out.append((rt, lines))
                for observer in self.observers:
                    observer.on_sentences(rt.device.config.name, lines)
        return NOTHING if out is None else out

    def check_state(self) -> None:
        """Stop a run whose simulation has diverged (a non-finite or absurd state): its sensors
        would send nonsense. Once per simulated second, off the hot path."""
        problem = self.sim.state_problem()
        for other in self.afloat:
            if not problem and other.sim.state_problem():
                problem = f"{other.boat.name}: {other.sim.state_problem()}"
        if problem:
            log.error(
                "sim.diverged",
                t=round(self.t, 3),
                problem=problem,
                hint="a higher rate_hz (a shorter step) or a milder weather may hold it; if "
                "not, the model does not hold this boat in this sea",
            )
            self.stop("diverged")

    @functools.cached_property
    def runtime_control(self) -> RuntimeControl:
        """The run's one runtime control (hild/runtime.py), made when a front end that takes
        requests (MQTT control, hild ctl, Foxglove) first asks for it: each hands it theirs."""
        return RuntimeControl(self)

    # --- what the run did -------------------------------------------------------------------
    def bus_summary(self, latency: dict) -> dict:
        """The controller's side: commands applied and refused, the queue's drops, the
        ``latency`` a driver measured, each actuator's commanded and actual state."""
        if not self.command_devices:
            return {}
        rejected = sum(sum(d.stats.rejected.values()) for d in self.command_devices)
        return {
            "commands_applied": self.arbiter.commands,
            "commands_rejected": rejected,
            "control_dropped": self.queue.dropped,
            **latency,
            "actuators": self.actuator_summary(),
        }

    def actuator_summary(self) -> dict:
        """Each actuator's commanded and actual speed, angle [deg] and deflector."""
        out = {}
        for a in self.bench.vessel.actuators:
            span = slice(a.index * S_SIZE, (a.index + 1) * S_SIZE)
            cmd, state = self.sim.act_cmd[span], self.sim.act_state[span]
            out[a.name] = {
                "commanded": [_r(cmd[0], 2), round(math.degrees(cmd[1]), 2), _r(cmd[2], 3)],
                "actual": [_r(state[0], 2), round(math.degrees(state[1]), 2), _r(state[2], 3)],
            }
        return out

    def device_summaries(self) -> dict:
        return {
            **{
                rt.device.config.name: {**rt.device.summary(), "failures": rt.failures}
                for rt in self.devices
            },
            **{link.config.name: link.summary() for link in self.links},
        }

    def vessel_summary(self) -> dict:
        """Where the own ship ended, and each target's closest approach to it (and when); a
        fleet's boats each under ``boats`` (by name, the bench's order), with each target's
        closest approach to that boat."""
        x, traffic = self.sim.x, self.sim.traffic
        out = {
            "position_ned": [round(float(v), 3) for v in x[:3]],
            "heading_deg": compass_deg(float(x[5]), 3),
            **({"traffic": closest_approaches(traffic.view())} if traffic is not None else {}),
        }
        if self.afloat:
            names = [boat.name for boat in self.bench.boats]
            by_boat = closest_approaches_by_boat(traffic, names) if traffic is not None else {}
            out["boats"] = {
                name: {
                    "position_ned": [round(float(v), 3) for v in sim.x[:3]],
                    "heading_deg": compass_deg(float(sim.x[5]), 3),
                    **({"traffic": by_boat[name]} if traffic is not None else {}),
                }
                for name, (sim, _, _) in zip(names, self._fleet_rows, strict=True)
            }
        return out


def _r(value: float, digits: int) -> float:
    return round(float(value), digits)
