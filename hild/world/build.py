"""What a world starts from: the bench's vessel in its weather, and a warm-up of every code
path of a tick before a clock starts."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

import structlog

from hild.bench import Bench
from hild.bus.arbiter import Arbiter
from hild.bus.screen import warm_up as warm_screen
from hild.control import ControlQueue, SafeState
from hild.coupled.simulation import Simulation
from hild.devices.registry import COMMANDS, FRAMES, KINDS, build_device
from hild.environment.environment import Environment
from hild.kernel_cache import started_cold
from hild.sensors.truth import Truth
from hild.transport.base import Inbound

log = structlog.get_logger("hild.daemon")


def initial_simulation(
    bench: Bench, duration: float | None = None, weather_may_change: bool = False
) -> Simulation:
    """The bench's vessel at its initial heading, speed and held commands, in its weather
    (with ``weather_may_change``, a daemon's: any weather can follow, see Simulation)."""
    dt = 1.0 / bench.rate_hz
    environment = Environment(bench.weather, bench.vessel, dt, seed=bench.seed, duration=duration)
    sim = Simulation(
        bench.vessel,
        dt=dt,
        method=bench.method,
        environment=environment,
        weather_may_change=weather_may_change,
    )
    sim.x[5] = math.radians(bench.heading_deg)
    sim.x[6] = bench.speed
    for name, value in bench.commands.items():
        sim.set_command(name, value)
    if bench.traffic:
        sim.add_traffic(bench.traffic)
    sim.update_environment()
    return sim


def prepare(bench: Bench) -> None:
    """Before a clock starts: the warm-up, said in the log (``run.preparing``, with whether the
    kernels compile now or load from the cache, and ``run.prepared``, with how long it took)."""
    started = time.monotonic()
    note = (
        "the first run compiles the vessel model, which takes a while (up to a minute on a "
        "Raspberry Pi; hild warm does it ahead); later runs load it from the cache"
        if started_cold()
        else "loading the compiled vessel model from the cache"
    )
    log.info("run.preparing", note=note)
    warm_up(bench)
    log.info("run.prepared", seconds=round(time.monotonic() - started, 2))


def warm_up(bench: Bench) -> None:
    """Run every code path of a tick once before the clock starts (numba cache, imports).

    Throwaway copies do the work, so the run's state and random streams are untouched.
    """
    sim = initial_simulation(bench, weather_may_change=True)
    sim.tick()
    truth = Truth(
        0.0,
        datetime.now(UTC),
        sim.x[:6].copy(),
        sim.x[6:12].copy(),
        actuators=sim.act_state.copy(),
        commands=sim.act_cmd.copy(),
    )
    queue = ControlQueue()
    arbiter = Arbiter(bench.vessel.actuators, sim.act_cmd, sim.act_state)
    for config in bench.devices:
        role = KINDS[config.model].role
        if role == FRAMES:
            continue  # (it answers frames: no sentences to warm)
        device = build_device(config, bench.seed, bench.origin, bench.vessel)
        device.sample(truth)
        if role == COMMANDS:
            warm_screen()  # the throttled senders' screen (hild/bus/screen.py), compiled
            line = device.neutral_line()
            record = device.receive(Inbound(line, "warm-up", None, time.monotonic()), 0.0)
            if record is not None:
                queue.put(record)
                queue.put(SafeState(config.name, 0.0, centre_angles=False))
    for queued in queue.drain():
        arbiter.apply(queued)
