"""Control records and the queue that carries them to the loop, applied between two ticks.

Nothing outside the loop writes the simulation's arrays: a decoded command, a controller's
heading reference, a watchdog's safe state or a change asked for at run time becomes a small
immutable record here, and the loop drains the queue at a tick boundary, so a run with the
same seed and the same records at the same ticks repeats exactly.

Each record applies itself, ``record.apply(run)``, to what the loop owns (``ControlTarget``:
the simulation, the sensors, the actuators' arbiter). A new kind of change is a new record
here and nothing else: the world (hild/world/world.py) drains the queue and calls ``apply``.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Protocol

import structlog

from hild.sensors.device import DeviceConfig
from hild.sensors.faults import FaultSpec

if TYPE_CHECKING:
    from hild.bus.mapping import Demand
    from hild.coupled.simulation import Simulation
    from hild.environment.environment import Environment
    from hild.traffic.targets import Behaviour, Motion
    from hild.traffic.traffic import PreparedTarget

log = structlog.get_logger("hild.control")

QUEUE_RECORDS = 4096


class Controller(Protocol):
    """A command device as a record sees it (hild.bus.device.CommandDevice is one)."""

    heading_reference: HeadingReference | None

    @property
    def config(self) -> DeviceConfig: ...


class FaultySensor(Protocol):
    """A sensor as a fault record changes it (hild.sensors.device.Device is one)."""

    faults: list[FaultSpec]

    @property
    def config(self) -> DeviceConfig: ...


class Applier(Protocol):
    """What applies actuator records (hild.bus.arbiter.Arbiter is one)."""

    def apply(self, record: ControlRecord) -> None: ...


class ControlTarget(Protocol):
    """What a control record may change: the loop's simulation, devices and actuators. (The
    daemon is one; protocols rather than those classes, so that the bus, which makes these
    records, and this module do not import each other.)"""

    @property
    def sim(self) -> Simulation: ...

    @property
    def sensors(self) -> Mapping[str, FaultySensor]: ...

    @property
    def command_devices(self) -> Sequence[Controller]: ...

    @property
    def arbiter(self) -> Applier: ...

    @property
    def fleet_sims(self) -> Sequence[Simulation]:
        """A fleet's other boats' simulations (none for one boat)."""
        ...

    def sim_of(self, device: str) -> Simulation:
        """The simulation of the boat ``device`` is on (the first boat's for no device)."""
        ...

    def follow_rate(self, rate_hz: float) -> float:
        """Step at ``rate_hz`` from the first tick on; the rate it stepped at before."""
        ...


@dataclass(frozen=True, slots=True)
class ActuatorCommand:
    """A valid command from one command device: demands for one or more actuators."""

    source: str  # the command device's name
    t_rx: float  # when its line was received [s, time.monotonic()]
    demands: tuple[Demand, ...]

    def apply(self, run: ControlTarget) -> None:
        run.arbiter.apply(self)


@dataclass(frozen=True, slots=True)
class HeadingReference:
    """The heading a controller steers to (an HSC sentence): moves no actuator, renews no lease.

    Applied between ticks like a command, so the recorder and the mirror see the reference the
    loop had at each tick, never one from inside it. The device keeps it for its summary.
    """

    source: str  # the command device's name
    t_rx: float  # when its line was received [s, time.monotonic()]
    heading: float  # heading to steer [rad, true, 0 .. 2 pi)

    def apply(self, run: ControlTarget) -> None:
        for controller in run.command_devices:
            if controller.config.name == self.source:
                controller.heading_reference = self


@dataclass(frozen=True, slots=True)
class SafeState:
    """A command device's watchdog tripped: its actuators go to idle, neutral and zero thrust."""

    source: str
    t: float  # when the watchdog tripped [s, time.monotonic()]
    centre_angles: bool  # nozzles and azimuths centre (True) or hold where they are (False)

    def apply(self, run: ControlTarget) -> None:
        run.arbiter.apply(self)


@dataclass(frozen=True, slots=True)
class WeatherChange:
    """A new weather, its environment built off the tick and continuing the running one's."""

    environment: Environment
    others: tuple[Environment, ...] = ()  # a fleet's other boats', in the world's order

    def apply(self, run: ControlTarget) -> None:
        sims = (run.sim, *run.fleet_sims)
        for sim, environment in zip(sims, (self.environment, *self.others), strict=True):
            assert sim.environment is not None  # a daemon's simulation always has one
            environment.continue_from(sim.environment)
            sim.adopt_environment(environment)
        log.info("control.weather", **self.environment.summary())


@dataclass(frozen=True, slots=True)
class SensorFault:
    """Add a fault to a sensor device, or (``fault`` None) clear those added at run time."""

    device: str
    fault: FaultSpec | None

    def apply(self, run: ControlTarget) -> None:
        device = run.sensors.get(self.device)
        if device is not None:
            if self.fault is None:
                device.faults = list(device.config.faults)
            else:
                device.faults.append(self.fault)
        log.info(
            "control.fault",
            device=self.device,
            fault=None if self.fault is None else asdict(self.fault),
        )


ACTUATOR_FAULTS = ("stuck", "lost", "clear")


@dataclass(frozen=True, slots=True)
class ActuatorFault:
    """stuck: the actuator holds where it is; lost: it gives no thrust; clear: it obeys again.

    A faulty actuator ignores every command and safe state until cleared. On a fleet's
    ``boat`` (its index in the bench's order; 0, the first boat, for a one-boat bench): the
    world's arbiter hands it to that boat's (hild/world/boats.py).
    """

    actuator: int  # index in the boat's vessel's actuators
    kind: str  # one of ACTUATOR_FAULTS
    boat: int = 0

    def apply(self, run: ControlTarget) -> None:
        run.arbiter.apply(self)


@dataclass(frozen=True, slots=True)
class Reposition:
    """Move a boat: NED position [m], heading [rad] and surge speed [m/s], None: keep. The
    fleet's ``boat`` (its index in the bench's order; 0, the first boat, for a one-boat
    bench)."""

    north: float
    east: float
    heading: float | None = None
    speed: float | None = None
    boat: int = 0

    def apply(self, run: ControlTarget) -> None:
        sim = run.fleet_sims[self.boat - 1] if self.boat else run.sim
        x = sim.x
        x[0], x[1] = self.north, self.east
        if self.heading is not None:
            x[5] = self.heading
        if self.speed is not None:
            x[6:12] = 0.0
            x[6] = self.speed
        sim.update_environment()
        log.info(
            "control.reposition",
            **({"boat": self.boat} if self.boat else {}),
            north=round(self.north, 3),
            east=round(self.east, 3),
            heading_deg=round(math.degrees(x[5]), 2),
            speed=round(float(x[6]), 3),
        )


@dataclass(frozen=True, slots=True)
class Restart:
    """The vessel back as the run began: its state (place, attitude, velocities) and its
    actuators' states and commands. The clock, the weather and the traffic run on. (An
    autopilot's SITL restarted: hild/ardupilot/link.py.)"""

    source: str
    x: tuple[float, ...]
    act_state: tuple[float, ...]
    act_cmd: tuple[float, ...]

    def apply(self, run: ControlTarget) -> None:
        sim = run.sim_of(self.source)  # (a fleet's: the boat its autopilot flies)
        sim.x[:] = self.x
        sim.act_state[:] = self.act_state
        sim.act_cmd[:] = self.act_cmd
        sim.update_environment()
        heading_deg = round(math.degrees(self.x[5]), 2)
        log.info(
            "control.restart",
            source=self.source,
            north=round(self.x[0], 3),
            east=round(self.x[1], 3),
            heading_deg=heading_deg,
        )


@dataclass(frozen=True, slots=True)
class StepRate:
    """The world's step from its first tick on: 1 / ``rate_hz``. An autopilot's SITL asks for
    the step with its first frame (hild/ardupilot/link.py); only before the first step."""

    source: str
    rate_hz: float

    def apply(self, run: ControlTarget) -> None:
        before = run.follow_rate(self.rate_hz)
        log.info(
            "control.step_rate",
            source=self.source,
            rate_hz=self.rate_hz,
            bench_rate_hz=before,
            note="one step per frame, as long as the frame asks (1 / its frame_rate)",
        )


@dataclass(frozen=True, slots=True)
class TrafficAdd:
    """A new traffic target, its rows built off the tick (hild.traffic.traffic.prepare: an
    encounter placed against the own ship as the request found it): applying it copies them
    into room the traffic's arrays already have."""

    prepared: PreparedTarget

    def apply(self, run: ControlTarget) -> None:
        # Checked when it was requested; the run may have changed since (another add of the
        # same name or MMSI before this tick): refused here with a warning, never an error in
        # the tick.
        sim, target = run.sim, self.prepared.target
        name, mmsi = target.name, target.identity.mmsi
        if sim.traffic is None:
            sim.add_traffic(())  # (empty arrays with room for every target a run may have)
        traffic = sim.traffic
        assert traffic is not None
        taken = [t.name for t in traffic.targets if t.identity.mmsi == mmsi]
        try:
            if taken:
                raise ValueError(f"MMSI {mmsi} is taken by {taken[0]}")
            traffic.append(self.prepared, sim.x, sim.t)
        except ValueError as e:
            log.warning("control.traffic.refused", name=name, mmsi=mmsi, error=str(e))
            return
        log.info("control.traffic", added=name, mmsi=mmsi)


@dataclass(frozen=True, slots=True)
class TrafficRemove:
    """A traffic target leaves the run."""

    name: str

    def apply(self, run: ControlTarget) -> None:
        traffic = run.sim.traffic
        if traffic is not None and self.name in {t.name for t in traffic.targets}:
            traffic.remove(self.name)
            log.info("control.traffic", removed=self.name)


@dataclass(frozen=True, slots=True)
class TrafficRetask:
    """A traffic target takes a new motion (from where it is) or behaviour, None: keep."""

    name: str
    motion: Motion | None = None
    behaviour: Behaviour | None = None

    def apply(self, run: ControlTarget) -> None:
        sim = run.sim
        traffic = sim.traffic
        if traffic is not None and self.name in {t.name for t in traffic.targets}:
            traffic.retask(self.name, self.motion, self.behaviour, sim.x, sim.t)
            log.info("control.traffic", retasked=self.name)


ControlRecord = (
    ActuatorCommand
    | HeadingReference
    | SafeState
    | WeatherChange
    | SensorFault
    | ActuatorFault
    | Reposition
    | Restart
    | StepRate
    | TrafficAdd
    | TrafficRemove
    | TrafficRetask
)


class ControlQueue:
    """A bounded FIFO of control records: put() never waits; full drops the oldest, counted."""

    def __init__(self, maxlen: int = QUEUE_RECORDS):
        self._records: collections.deque[ControlRecord] = collections.deque(maxlen=maxlen)
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._records)

    @property
    def full(self) -> bool:
        """Whether the next put would drop the oldest record (runtime control refuses a
        request then, "busy", rather than answer it and lose it)."""
        return len(self._records) == self._records.maxlen

    def put(self, record: ControlRecord) -> None:
        """On the loop. Only the tick thread takes records out: a full deque drops its oldest
        itself as this one goes in, so put never pops (and never races the drain)."""
        if len(self._records) == self._records.maxlen:
            self.dropped += 1
        self._records.append(record)

    def drain(self) -> list[ControlRecord]:
        """Everything queued, oldest first, leaving the queue empty. The loop puts while the
        tick thread drains: each record is taken by popleft, so none put meanwhile is lost."""
        records = []
        while self._records:
            records.append(self._records.popleft())
        return records
