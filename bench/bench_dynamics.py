"""Dynamics-core benchmark: steps per second per profile and integrator.

Run:  python bench/bench_dynamics.py [--seconds 1.0]

Prints, for each profile, RK4 and Dormand-Prince steps per second inside one
compiled loop (numba cache warm, one core), the real-time factor that gives at
dt = 0.01 s, the same step called tick by tick from Python, as the
real-time daemon calls it, and the RK4 step's time against the floor estimate
for this model (FLOOR_STEP_S). Other ratios compare within the run.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from hild.coupled.simulation import Simulation
from hild.profiles.vessel import PROFILES, load_profile

DT = 0.01
# The floor estimate of one RK4 step of this model on this project's 2-core x86_64 machine:
# its trigonometry and about 1.8 kflop, most of them in the serial chain of the four stages,
# take about 0.45 us; the last column is how many times that a step takes.
FLOOR_STEP_S = 0.45e-6


def loop_rate(sim: Simulation, seconds: float) -> float:
    """Steps per second of the compiled loop, best of three timed blocks."""
    sim.advance(100)  # compile or load from cache
    n = 10_000
    while True:
        t0 = time.perf_counter()
        sim.advance(n)
        if time.perf_counter() - t0 > seconds / 3:
            break
        n *= 2
    best = 0.0
    for _ in range(3):
        t0 = time.perf_counter()
        sim.advance(n)
        best = max(best, n / (time.perf_counter() - t0))
    return best


def tick_rate(sim: Simulation, seconds: float) -> float:
    """Steps per second when each step is one call from Python."""
    sim.tick()
    n = 20_000
    best = 0.0
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            sim.tick()
        best = max(best, n / (time.perf_counter() - t0))
    return best


def moving(sim: Simulation) -> Simulation:
    """Put the vessel in a turn so every term of the model is exercised."""
    v = sim.vessel
    for a in v.actuators:
        lo, hi = a.speed_range
        sim.set_command(f"{a.name}.{a.commands[0]}", 0.7 * hi)
        if a.angle_kind != "none":
            sim.set_command(f"{a.name}.{a.angle_kind}_deg", 10.0)
        if a.has_deflector:
            sim.set_command(f"{a.name}.deflector", 1.0)
    sim.advance(1000)
    return sim


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    args = parser.parse_args()
    print(
        f"hild dynamics benchmark: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, dt = {DT} s"
    )
    header = (
        f"{'profile':8} {'rk4 steps/s':>12} {'RTF@100Hz':>10} {'dopri5 steps/s':>15} "
        f"{'RTF@100Hz':>10} {'dopri5/rk4':>10} {'rk4 tick/s':>11} {'tick/loop':>9} "
        f"{'rk4/floor':>9}"
    )
    print(header)
    print("-" * len(header))
    for name in PROFILES.names():
        v = load_profile(name)
        rk4 = loop_rate(moving(Simulation(v, DT, "rk4")), args.seconds)
        dp5 = loop_rate(moving(Simulation(v, DT, "dopri5")), args.seconds)
        tick = tick_rate(moving(Simulation(v, DT, "rk4")), args.seconds)
        print(
            f"{name:8} {rk4:12,.0f} {rk4 * DT:10,.0f} {dp5:15,.0f} {dp5 * DT:10,.0f} "
            f"{dp5 / rk4:10.2f} {tick:11,.0f} {tick / rk4:9.2f} {1.0 / rk4 / FLOOR_STEP_S:9.2f}"
        )


if __name__ == "__main__":
    main()
