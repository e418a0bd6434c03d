"""Tick observers: what watches a run (the MQTT mirror, the systemd notifier) without slowing it.

The world calls ``on_tick`` after every tick, ``on_sentences`` whenever a device has
sent an epoch, ``on_received`` for every line a command device decodes, ``on_control`` for
every other change applied between ticks and ``on_request`` for every runtime request. All
run inside the loop: they must return at once, never await, never block on I/O, and only copy
what they need into a latest-value store or a bounded queue that their own task (started in
``start``) drains. ``start`` runs once the
ports are open, before the first tick; ``stop`` once the loop has ended, before the ports
close.

Every hook is handed the run's view (``RunView``): a read-only look at the world, made once
per world (hild/world/view.py), and a way to put control records on its queue. Observers name
the protocols here, never the world or a driver, so that none imports the other's module.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from hild.bench import Bench
    from hild.control import ActuatorCommand, ControlRecord
    from hild.environment.weather import Weather
    from hild.model.vessel import ActuatorSpec
    from hild.sensors.device import DeviceConfig
    from hild.sensors.faults import FaultSpec
    from hild.sensors.truth import Truth
    from hild.traffic.view import TrafficView
    from hild.transport.base import Inbound


O = TypeVar("O")  # an observer's type (RunView.observers_of)


class RunView(Protocol):
    """What an observer sees of a run: the tick's simulated time and the own ship's state (as
    read-only arrays, the simulation's own: no copy, no allocation), the run's facts, its
    devices and ports as counters, the driver's clock, and ``put`` for a control record.
    Nothing of it can be written; the world (hild/world/world.py) makes one, ``World.view``,
    and hands it to every hook."""

    # --- the run's facts ----------------------------------------------------------------------
    @property
    def bench(self) -> Bench: ...

    @property
    def dt(self) -> float:
        """The simulation's step [s]."""
        ...

    @property
    def duration(self) -> float | None:
        """The run's simulated duration [s] (None: until stopped)."""
        ...

    @property
    def start_utc(self) -> datetime | None:
        """The UTC of simulated time 0 (set by the driver as its clock starts)."""
        ...

    # --- the tick -----------------------------------------------------------------------------
    @property
    def t(self) -> float:
        """The simulated time [s] the world has stepped to."""
        ...

    @property
    def x(self) -> np.ndarray:
        """The own ship's state (eta then nu, hild/model/layout.py), read-only."""
        ...

    @property
    def act_state(self) -> np.ndarray:
        """The actuators' states (layout S_*), read-only."""
        ...

    @property
    def act_cmd(self) -> np.ndarray:
        """The actuators' commands (layout S_*), read-only."""
        ...

    @property
    def actuator_force(self) -> np.ndarray:
        """The actuators' generalized force of the last step, body frame, read-only."""
        ...

    @property
    def environment(self) -> EnvironmentView | None:
        """The weather as it runs (None: a run without an environment)."""
        ...

    def truth(self, t: float, boat: int = 0) -> Truth:
        """The vessel's state at simulated time ``t``: copies, for the observers to keep (a
        fleet's ``boat``, by its index in ``boats``)."""
        ...

    @property
    def boats(self) -> tuple[str, ...]:
        """A fleet's boats' names (empty for a one-boat bench)."""
        ...

    def boat(self, index: int) -> BoatView:
        """A fleet's boat ``index`` (in ``boats``; 0 the first): its arrays as read-only views
        of its simulation's own, made once (no copy, no allocation)."""
        ...

    def traffic(self) -> TrafficView | None:
        """The traffic targets and a copy of their state rows (None: no traffic)."""
        ...

    # --- the devices, the bus and the ports ---------------------------------------------------
    @property
    def devices(self) -> Sequence[DeviceView]:
        """The devices sampled on their epochs (sensors, command devices' feedback)."""
        ...

    @property
    def command_devices(self) -> Sequence[CommandDeviceView]: ...

    @property
    def commands_applied(self) -> int:
        """Commands the actuators took (the arbiter's count)."""
        ...

    @property
    def received_lines(self) -> int:
        """Lines the command devices' ports received."""
        ...

    @property
    def control_dropped(self) -> int:
        """Control records dropped by a full queue."""
        ...

    def clients(self) -> dict[str, int]:
        """The clients of each port, by its URL."""
        ...

    def sensor_faults(self) -> dict[str, tuple[FaultSpec, ...]]:
        """Each sensor device's faults, by its name, active or not."""
        ...

    def actuator_faults(self) -> dict[int, dict[int, str]]:
        """The actuators faulty now, by boat index: actuator index -> "stuck" or "lost"."""
        ...

    def observers_of(self, kind: type[O]) -> tuple[O, ...]:
        """The run's observers of a kind (the status board finds the Foxglove server so)."""
        ...

    @property
    def dropped_lines(self) -> int:
        """Lines the ports dropped (a slow or absent reader)."""
        ...

    # --- the driver's clock -------------------------------------------------------------------
    @property
    def tick_period_s(self) -> float:
        """The wall time a tick takes [s]."""
        ...

    @property
    def late_s(self) -> float:
        """The last tick's lateness against its deadline [s] (0 in lockstep)."""
        ...

    @property
    def ticks(self) -> int:
        """Ticks the driver's clock has counted."""
        ...

    @property
    def overruns(self) -> int:
        """Ticks later than a tick's period."""
        ...

    def jitter(self) -> dict[str, float | int]:
        """The ticks' lateness so far: ticks, overruns, percentiles (JitterStats.summary)."""
        ...

    @property
    def stop_reason(self) -> str:
        """Why the run ends ("duration" until it is stopped otherwise)."""
        ...

    # --- what an observer may do --------------------------------------------------------------
    def put(self, record: ControlRecord) -> None:
        """Put ``record`` on the world's control queue: applied at the next tick boundary."""
        ...

    @property
    def runtime_control(self) -> RuntimeRequests:
        """The run's runtime control (hild.runtime.RuntimeControl), shared by every front end
        that takes requests."""
        ...


class BoatView(Protocol):
    """One boat of a fleet as an observer sees it: its name, its actuators and its state,
    read-only (the first boat's arrays are the run's own: ``RunView.x`` ...)."""

    @property
    def name(self) -> str: ...

    @property
    def actuators(self) -> Sequence[ActuatorSpec]: ...

    @property
    def x(self) -> np.ndarray:
        """Its state (eta then nu, hild/model/layout.py), read-only."""
        ...

    @property
    def act_state(self) -> np.ndarray: ...

    @property
    def act_cmd(self) -> np.ndarray: ...

    @property
    def actuator_force(self) -> np.ndarray: ...

    @property
    def environment(self) -> EnvironmentView | None:
        """The weather as this boat feels it (its own environment of the run's weather)."""
        ...


class DeviceView(Protocol):
    """A device sampled on its epochs, as an observer sees it."""

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> DeviceConfig: ...

    @property
    def takes_commands(self) -> bool: ...


class CommandDeviceView(Protocol):
    """A device that takes commands, as an observer sees it: its counters and its watchdog."""

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> DeviceConfig: ...

    @property
    def watchdog_state(self) -> str:
        """waiting, active or tripped (hild/bus/watchdog.py)."""
        ...

    @property
    def watchdog_release(self) -> str:
        """What releases a trip: neutral or next-command."""
        ...

    @property
    def lease_s(self) -> float:
        """The watchdog's timeout: how long a command holds the actuators [s]."""
        ...

    @property
    def commands(self) -> int:
        """Valid commands it passed on."""
        ...

    @property
    def refused(self) -> int:
        """Lines it refused, whatever the reason."""
        ...

    def summary(self) -> dict:
        """Its counters and watchdog (a new dict)."""
        ...


class EnvironmentView(Protocol):
    """The weather as it runs: its outputs at the vessel (hild/environment/layout.py O_*,
    read-only) and the weather it realises."""

    @property
    def O(self) -> np.ndarray: ...  # noqa: E743 (the environment's own name)

    @property
    def weather(self) -> Weather: ...

    @property
    def elevation(self) -> float:
        """Sea-surface elevation at the vessel, up positive [m]."""
        ...


class RuntimeRequests(Protocol):
    """What a front end that takes runtime requests (MQTT control, hild ctl, Foxglove) hands
    them to: the run's one hild.runtime.RuntimeControl."""

    async def handle(self, request: str, payload: bytes, source: str) -> dict[str, Any]:
        """One request from ``source``: its answer (logged and told to the observers)."""
        ...


class TickObserver:
    """The base: every hook does nothing, so an observer overrides only what it needs."""

    async def start(self, run: RunView) -> None:
        """The ports are open and the loop is about to start."""

    def on_tick(self, run: RunView, t: float) -> None:
        """After the tick that brought the simulation to ``t`` [s]: return at once."""

    def on_sentences(self, device: str, lines: Sequence[bytes]) -> None:
        """``device`` has just queued ``lines`` (one epoch) on its ports: return at once."""

    def on_received(
        self,
        device: str,
        inbound: Inbound,
        command: ActuatorCommand | None,
        rejected: tuple[str, str] | None,
    ) -> None:
        """Command device ``device`` decoded ``inbound``: ``command`` when valid, else
        ``rejected`` (reason, detail). Called between ticks: return at once."""

    def on_control(self, run: RunView, record: ControlRecord) -> None:
        """A record other than a command was applied between two ticks (a watchdog's safe
        state, a weather change, a fault, a reposition): return at once."""

    def on_request(self, run: RunView, request: str, source: str, sent: dict, answer: dict) -> None:
        """A runtime request (``request``: weather, fault, reposition, commands) came from
        ``source``: ``sent`` is what its sender sent (the JSON object, or ``{"text": ...}``),
        ``answer`` what it was answered. On the loop: return at once."""

    async def stop(self, run: RunView) -> None:
        """The loop has ended (``run.stop_reason`` says why); the ports are still open."""

    def summary(self) -> dict:
        """What the observer adds to ``run.summary`` (after ``stop``): a key of its own."""
        return {}

    def describe(self) -> str | None:
        """The banner's line for it, once started (where to find what it serves), if any."""
        return None
