"""Tick observers: what watches a run (the MQTT mirror, the systemd notifier) without slowing it.

The daemon calls ``on_tick`` after every tick, ``on_sentences`` whenever a device has
sent an epoch, ``on_received`` for every line a command device decodes, ``on_control`` for
every other change applied between ticks and ``on_request`` for every runtime request. All
run inside the loop: they must return at once, never await, never block on I/O, and only copy
what they need into a latest-value store or a bounded queue that their own task (started in
``start``) drains. ``start`` runs once the
ports are open, before the first tick; ``stop`` once the loop has ended, before the ports
close.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hild.bench import Bench
    from hild.bus.arbiter import Arbiter
    from hild.bus.dispatch import Dispatcher
    from hild.clock import JitterStats
    from hild.control import ActuatorCommand, ControlQueue, ControlRecord
    from hild.coupled.simulation import Simulation
    from hild.devices.roles import TakesCommands
    from hild.sensors.truth import Truth
    from hild.transport import Port
    from hild.transport.base import Inbound
    from hild.world.devices import DeviceRuntime


class RunningDaemon(Protocol):
    """What an observer (and the runtime control) may see of the running daemon: its bench and
    simulation, its devices and ports, the control queue it applies between ticks, and the
    loop's clock. ``hild.daemon.Daemon`` is one; observers name this, not the daemon, so
    that neither module imports the other's."""

    bench: Bench
    sim: Simulation
    dt: float  # the simulation's step [s]
    tick_period_s: float  # of wall time
    duration: float | None
    start_utc: datetime | None
    devices: list[DeviceRuntime]
    command_devices: list[TakesCommands]
    sensors: dict[str, Any]  # the sensor devices, by name
    ports: dict[tuple, Port]
    queue: ControlQueue
    dispatcher: Dispatcher
    arbiter: Arbiter
    jitter: JitterStats
    late_s: float  # the last tick's lateness against its deadline [s]
    stop_reason: str
    observers: list[TickObserver]

    def truth(self, t: float) -> Truth:
        """The vessel's state at simulated time ``t``, for the sensors and the observers."""
        ...

    @property
    def runtime_control(self) -> RuntimeRequests:
        """The run's runtime control (hild.runtime.RuntimeControl), shared by every front end
        that takes requests."""
        ...


class RuntimeRequests(Protocol):
    """What a front end that takes runtime requests (MQTT control, hild ctl, Foxglove) hands
    them to: the run's one hild.runtime.RuntimeControl."""

    async def handle(self, request: str, payload: bytes, source: str) -> dict[str, Any]:
        """One request from ``source``: its answer (logged and told to the observers)."""
        ...


class TickObserver:
    """The base: every hook does nothing, so an observer overrides only what it needs."""

    async def start(self, daemon: RunningDaemon) -> None:
        """The ports are open and the loop is about to start."""

    def on_tick(self, daemon: RunningDaemon, t: float) -> None:
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
        ``rejected`` (reason, detail). Called between ticks: return at once."""  # fmt: skip

    def on_control(self, daemon: RunningDaemon, record: ControlRecord) -> None:
        """A record other than a command was applied between two ticks (a watchdog's safe
        state, a weather change, a fault, a reposition): return at once."""

    def on_request(
        self, daemon: RunningDaemon, request: str, source: str, sent: dict, answer: dict
    ) -> None:
        """A runtime request (``request``: weather, fault, reposition, commands) came from
        ``source``: ``sent`` is what its sender sent (the JSON object, or ``{"text": ...}``),
        ``answer`` what it was answered. On the loop: return at once."""

    async def stop(self, daemon: RunningDaemon) -> None:
        """The loop has ended (``daemon.stop_reason`` says why); the ports are still open."""

    def summary(self) -> dict:
        """What the observer adds to ``run.summary`` (after ``stop``): a key of its own."""
        return {}

    def describe(self) -> str | None:
        """The banner's line for it, once started (where to find what it serves), if any."""
        return None
