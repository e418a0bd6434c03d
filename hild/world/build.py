"""What a world starts from: the bench's vessel in its weather, at its initial heading, speed
and held commands, with its traffic."""

from __future__ import annotations

import math

from hild.bench import Bench
from hild.coupled.simulation import Simulation
from hild.environment.environment import Environment


def initial_simulation(
    bench: Bench, duration: float | None = None, weather_may_change: bool = False
) -> Simulation:
    """The bench's vessel at its initial heading, speed and held commands, in its weather
    (with ``weather_may_change``, a daemon's: any weather can follow, see Simulation)."""
    dt = 1.0 / bench.rate_hz
    environment = initial_environment(bench, duration)
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


def initial_environment(bench: Bench, duration: float | None = None) -> Environment:
    """The bench's weather for steps of 1 / its rate, from the start."""
    dt = 1.0 / bench.rate_hz
    return Environment(bench.weather, bench.vessel, dt, seed=bench.seed, duration=duration)
