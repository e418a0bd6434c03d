"""What the observers see of a world: one read-only view, made once per world (``World.view``).

Every hook of a tick observer (hild/observers.py) is handed it instead of the world: the tick's
simulated time and the own ship's state, the run's facts, its devices and ports as counters,
the driver's clock, and ``put`` to put a control record on the world's queue. Nothing of it
can be written: it has no setters and takes no attributes, and its arrays are read-only
views of the simulation's own (made once: a tick reads them without a copy or an allocation).
Reading a per-tick field costs an attribute's read; what a snapshot needs (``truth``,
``traffic``, ``clients``, ``sensor_faults``, ``actuator_faults``, ``summary``) is made when
an observer asks for it.

It satisfies hild.observers.RunView, which the observers name (they import neither the world
nor this module).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar

import numpy as np

from hild.world.boats import FleetArbiter

if TYPE_CHECKING:
    from hild.bench import Bench
    from hild.bus.arbiter import Arbiter
    from hild.bus.dispatch import Dispatcher
    from hild.clock import JitterStats
    from hild.control import ControlQueue, ControlRecord
    from hild.coupled.simulation import Simulation
    from hild.devices.roles import TakesCommands
    from hild.environment.environment import Environment
    from hild.environment.weather import Weather
    from hild.model.vessel import ActuatorSpec
    from hild.observers import RuntimeRequests, TickObserver
    from hild.sensors.device import DeviceConfig
    from hild.sensors.faults import FaultSpec
    from hild.sensors.truth import Truth
    from hild.traffic.view import TrafficView
    from hild.transport import Port
    from hild.world.devices import DeviceRuntime

O = TypeVar("O")  # an observer's type (WorldView.observers_of)


class Viewed(Protocol):
    """What a view reads of its world (hild/world/world.py's World is one; named here so that
    the world and its view do not import each other)."""

    bench: Bench
    dt: float
    duration: float | None
    start_utc: datetime | None
    t: float
    sim: Simulation
    devices: list[DeviceRuntime]
    command_devices: list[TakesCommands]
    sensors: dict[str, Any]  # the sensor devices, by name: each one's ``faults``
    observers: list[TickObserver]
    queue: ControlQueue
    dispatcher: Dispatcher
    arbiter: Arbiter | FleetArbiter
    ports: dict[tuple, Port]
    tick_period_s: float
    late_s: float
    jitter: JitterStats
    stop_reason: str

    def truth(self, t: float, boat: int = 0) -> Truth: ...

    @property
    def fleet_sims(self) -> list[Simulation]: ...

    @property
    def runtime_control(self) -> RuntimeRequests: ...


def read_only(array: np.ndarray) -> np.ndarray:
    """A view of ``array`` that cannot be written (``array`` still can: the view follows it)."""
    view = array.view()
    view.flags.writeable = False
    return view


class _ReadOnly:
    """A view's base: its attributes are set once, by its own ``__init__`` (``_init``)."""

    __slots__ = ()

    def _init(self, **values: object) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is read-only: {name} cannot be set")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is read-only: {name} cannot be deleted")


@dataclass(frozen=True, slots=True)
class DeviceSeen:
    """A device sampled on its epochs (hild.observers.DeviceView)."""

    name: str
    config: DeviceConfig
    takes_commands: bool

    @classmethod
    def of(cls, rt: DeviceRuntime) -> DeviceSeen:
        return cls(rt.device.config.name, rt.device.config, rt.takes_commands)


class CommandDeviceSeen(_ReadOnly):
    """A device that takes commands: its counters and its watchdog, read where they are kept
    (hild.observers.CommandDeviceView)."""

    __slots__ = ("_device",)
    _device: TakesCommands

    def __init__(self, device: TakesCommands) -> None:
        self._init(_device=device)

    @property
    def name(self) -> str:
        return self._device.config.name

    @property
    def config(self) -> DeviceConfig:
        return self._device.config

    @property
    def watchdog_state(self) -> str:
        return self._device.watchdog.state

    @property
    def watchdog_release(self) -> str:
        return self._device.watchdog.release

    @property
    def lease_s(self) -> float:
        return self._device.watchdog.timeout_s

    @property
    def commands(self) -> int:
        return self._device.stats.commands

    @property
    def refused(self) -> int:
        return sum(self._device.stats.rejected.values())

    def summary(self) -> dict:
        return self._device.summary()


class EnvironmentSeen(_ReadOnly):
    """An environment's outputs (read-only) and its weather (hild.observers.EnvironmentView);
    one per environment the world runs (a weather change brings a new one)."""

    __slots__ = ("_source", "_O")
    _source: Environment
    _O: np.ndarray

    def __init__(self, environment: Environment) -> None:
        self._init(_source=environment, _O=read_only(environment.O))

    def of(self, environment: Environment) -> bool:
        """Whether this is a view of ``environment``."""
        return self._source is environment

    @property
    def O(self) -> np.ndarray:  # noqa: E743 (the environment's own name)
        return self._O

    @property
    def weather(self) -> Weather:
        return self._source.weather

    @property
    def elevation(self) -> float:
        return self._source.elevation


class _ArraysSeen(_ReadOnly):
    """A simulation's state and actuator arrays as read-only views made once (a tick reads them
    without a copy or an allocation): what a boat's view and the world's (its own ship's)
    share."""

    __slots__ = ("_x", "_act_state", "_act_cmd", "_force")
    _x: np.ndarray
    _act_state: np.ndarray
    _act_cmd: np.ndarray
    _force: np.ndarray

    @property
    def x(self) -> np.ndarray:
        return self._x

    @property
    def act_state(self) -> np.ndarray:
        return self._act_state

    @property
    def act_cmd(self) -> np.ndarray:
        return self._act_cmd

    @property
    def actuator_force(self) -> np.ndarray:
        return self._force


class BoatSeen(_ArraysSeen):
    """One boat of a fleet as the observers see it (hild.observers.BoatView): its name, its
    actuators' specifications and its simulation's arrays, read-only views made once (a tick
    reads them without a copy or an allocation), and its environment."""

    __slots__ = ("name", "actuators", "_sim", "_env")
    name: str
    actuators: Sequence[ActuatorSpec]
    _sim: Simulation
    _env: EnvironmentSeen | None

    def __init__(self, name: str, sim: Simulation) -> None:
        self._init(
            name=name,
            actuators=tuple(sim.vessel.actuators),
            _sim=sim,
            _x=read_only(sim.x),
            _act_state=read_only(sim.act_state),
            _act_cmd=read_only(sim.act_cmd),
            _force=read_only(sim.actuator_force),
            _env=None,
        )

    @property
    def environment(self) -> EnvironmentSeen | None:
        environment = self._sim.environment
        if environment is None:
            return None
        seen = self._env
        if seen is None or not seen.of(environment):  # the first look, or a new weather
            seen = EnvironmentSeen(environment)
            object.__setattr__(self, "_env", seen)
        return seen


class WorldView(_ArraysSeen):
    """A world as its observers see it (hild.observers.RunView): made once, with the world."""

    __slots__ = (
        "_world",
        "_devices",
        "_command_devices",
        "_own",
        "_put",
        "_boats",
    )
    _world: Viewed
    _devices: tuple[DeviceSeen, ...]
    _command_devices: tuple[CommandDeviceSeen, ...]
    _own: BoatSeen  # the world's own ship (a fleet's first boat)
    _put: Callable[[ControlRecord], None]
    _boats: tuple[BoatSeen, ...]

    def __init__(self, world: Viewed) -> None:
        # (the sims' arrays are written in place, never replaced: the views stay true)
        boats = world.bench.boats
        own = BoatSeen(boats[0].name if boats else world.bench.vessel.name, world.sim)
        self._init(
            _world=world,
            _x=own.x,  # (the own ship's arrays kept here too: a tick reads one attribute)
            _act_state=own.act_state,
            _act_cmd=own.act_cmd,
            _force=own.actuator_force,
            _devices=tuple(DeviceSeen.of(rt) for rt in world.devices),
            _command_devices=tuple(CommandDeviceSeen(d) for d in world.command_devices),
            _own=own,
            _put=world.queue.put,
            _boats=(  # a fleet's boats, the first the world's own ship (one boat: none)
                (
                    own,
                    *(
                        BoatSeen(b.name, s)
                        for b, s in zip(boats[1:], world.fleet_sims, strict=True)
                    ),
                )
                if boats
                else ()
            ),
        )

    # --- the run's facts ----------------------------------------------------------------------
    @property
    def bench(self) -> Bench:
        return self._world.bench

    @property
    def dt(self) -> float:
        return self._world.dt

    @property
    def duration(self) -> float | None:
        return self._world.duration

    @property
    def start_utc(self) -> datetime | None:
        return self._world.start_utc

    # --- the tick (x, act_state, act_cmd, actuator_force: the own ship's, _ArraysSeen) --------
    @property
    def t(self) -> float:
        return self._world.t

    @property
    def environment(self) -> EnvironmentSeen | None:
        return self._own.environment

    def truth(self, t: float, boat: int = 0) -> Truth:
        return self._world.truth(t, boat)

    @property
    def boats(self) -> tuple[str, ...]:
        """A fleet's boats' names, in the bench's order (index = the ``boat`` of ``truth``);
        empty for a one-boat bench."""
        return tuple(b.name for b in self._world.bench.boats)

    def boat(self, index: int) -> BoatSeen:
        """A fleet's boat ``index`` (in ``boats``; 0 the first, the world's own ship): its
        arrays as read-only views, made once with the view (no copy, no allocation)."""
        return self._boats[index]

    def traffic(self) -> TrafficView | None:
        traffic = self._world.sim.traffic
        return None if traffic is None else traffic.view()

    # --- the devices, the bus and the ports ---------------------------------------------------
    @property
    def devices(self) -> tuple[DeviceSeen, ...]:
        return self._devices

    @property
    def command_devices(self) -> tuple[CommandDeviceSeen, ...]:
        return self._command_devices

    @property
    def commands_applied(self) -> int:
        return self._world.arbiter.commands

    @property
    def received_lines(self) -> int:
        return self._world.dispatcher.received_lines

    @property
    def control_dropped(self) -> int:
        return self._world.queue.dropped

    def clients(self) -> dict[str, int]:
        return {p.spec.url: p.stats.clients for p in self._world.ports.values()}

    # --- faults -------------------------------------------------------------------------------
    def sensor_faults(self) -> dict[str, tuple[FaultSpec, ...]]:
        """Each sensor device's faults, by its name: the bench's and those added at run time,
        active or not (each has its start and end; hild/sensors/faults.py). Written at a tick
        boundary (hild/control.py SensorFault): read in the tick, a consistent copy."""
        return {name: tuple(d.faults) for name, d in self._world.sensors.items()}

    def actuator_faults(self) -> dict[int, dict[int, str]]:
        """The actuators faulty now, by boat (its index; 0 the first boat, a one-boat bench's
        only one): actuator index -> "stuck" or "lost" (hild/bus/arbiter.py)."""
        arbiter = self._world.arbiter
        arbiters = arbiter.arbiters if isinstance(arbiter, FleetArbiter) else [arbiter]
        return {boat: dict(a.faulty) for boat, a in enumerate(arbiters) if a.faulty}

    @property
    def dropped_lines(self) -> int:
        return sum(p.stats.dropped_lines for p in self._world.ports.values())

    # --- the driver's clock -------------------------------------------------------------------
    @property
    def tick_period_s(self) -> float:
        return self._world.tick_period_s

    @property
    def late_s(self) -> float:
        return self._world.late_s

    @property
    def ticks(self) -> int:
        return self._world.jitter.ticks

    @property
    def overruns(self) -> int:
        return self._world.jitter.overruns

    def jitter(self) -> dict[str, float | int]:
        return self._world.jitter.summary()

    @property
    def stop_reason(self) -> str:
        return self._world.stop_reason

    # --- what an observer may do --------------------------------------------------------------
    def put(self, record: ControlRecord) -> None:
        self._put(record)

    @property
    def runtime_control(self) -> RuntimeRequests:
        return self._world.runtime_control

    def observers_of(self, kind: type[O]) -> tuple[O, ...]:
        """The run's observers of type ``kind``, in their order: one observer reading another's
        counters (the status board, Foxglove's viewers)."""
        return tuple(o for o in self._world.observers if isinstance(o, kind))
