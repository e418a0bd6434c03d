"""What a world starts from: the bench's vessel in its weather, at its initial heading, speed
and held commands, with its traffic."""

from __future__ import annotations

import dataclasses
import math

from hild.bench import Bench
from hild.bus.arbiter import Arbiter
from hild.coupled.simulation import Simulation
from hild.environment.environment import Environment
from hild.fleet import Boat
from hild.traffic.read import placed
from hild.traffic.targets import Encounter, Target
from hild.world.boats import Afloat


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
    if bench.boats:  # a fleet (of one: hild/fleet.py RUNS_BOATS): its boat's start
        sim.x[0], sim.x[1] = bench.boats[0].north, bench.boats[0].east
    sim.x[5] = math.radians(bench.heading_deg)
    sim.x[6] = bench.speed
    for name, value in bench.commands.items():
        sim.set_command(name, value)
    if bench.traffic:
        sim.add_traffic([placed_against_boat(t, bench) for t in bench.traffic])
    sim.update_environment()
    return sim


def afloat(
    bench: Bench, boat: Boat, duration: float | None = None, weather_may_change: bool = False
) -> Afloat:
    """A fleet's boat beside its first: its own simulation in the bench's weather (its own
    environment of the same weather and seed), at its own start, with its own arbiter; the
    run's traffic stays with the first boat's simulation."""
    own = dataclasses.replace(
        bench,
        vessel=boat.vessel,
        method=boat.method,
        heading_deg=boat.heading_deg,
        speed=boat.speed,
        commands=boat.commands,
        traffic=(),
        boats=(boat,),
    )
    sim = initial_simulation(own, duration, weather_may_change)
    return Afloat(boat, sim, Arbiter(boat.vessel.actuators, sim.act_cmd, sim.act_state))


def initial_environment(bench: Bench, duration: float | None = None) -> Environment:
    """The bench's weather for steps of 1 / its rate, from the start."""
    dt = 1.0 / bench.rate_hz
    return Environment(bench.weather, bench.vessel, dt, seed=bench.seed, duration=duration)


def placed_against_boat(target: Target, bench: Bench) -> Target:
    """A fleet's encounter placed against another boat than the first (``boat`` in its
    table), at that boat's start, as a course; any other target as it is (the traffic places
    an encounter against the first boat's state: hild/traffic/traffic.py)."""
    motion = target.motion
    if not isinstance(motion, Encounter) or not motion.boat:
        return target
    boat = next(b for b in bench.boats if b.name == motion.boat)  # (the bench checked it)
    if boat is bench.boats[0]:
        return target
    course = placed(motion, boat.north, boat.east, math.radians(boat.heading_deg), boat.speed)
    return dataclasses.replace(target, motion=course)
