"""Environment benchmark: what wind, current and waves add to the dynamics step.

Run:  python bench/bench_environment.py [--seconds 2.0] [--profile odin]

For each weather preset, prints RK4 steps per second inside one compiled loop
(numba cache warm, one core) with the environment, against the same vessel
with no environment at all, timed in 15 alternating short blocks each (the best of each,
so the shared machine's drifts hit both alike), and the overhead
(time per step with the environment over time per step without, minus one).
The issue's budget is 30 % for the full environment (gale-hs1: Harris gust,
Gauss-Markov wind, direction and current, 32 wave components, three
wave-force transfer functions, Blendermann wind force). Then the waves alone: gale-hs1
against gale-calm-sea, the same gale without its sea, timed the same way (the performance
issue's goal: waves at most 10 % more).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from hild.coupled.simulation import Simulation
from hild.environment.environment import Environment
from hild.profiles.vessel import load_profile
from hild.profiles.weather import load_weather

DT = 0.01
PRESETS = ("calm", "gale-calm-sea", "gale-hs1", "beaufort-8")
WAVES_ON, WAVES_OFF = "gale-hs1", "gale-calm-sea"  # the same gale, with and without its sea


def block_rate(sim: Simulation, n: int) -> float:
    t0 = time.perf_counter()
    sim.advance(n)
    return n / (time.perf_counter() - t0)


def paired_rates(a: Simulation, b: Simulation, seconds: float) -> tuple[float, float]:
    """Best steps per second of each, timed in alternating blocks so drifts hit both alike."""
    a.advance(100)  # compile or load from cache
    b.advance(100)
    n = 10_000
    while n / block_rate(a, n) < seconds / 30:
        n *= 2
    best_a = best_b = 0.0
    for _ in range(15):
        best_a = max(best_a, block_rate(a, n))
        best_b = max(best_b, block_rate(b, n))
    return best_a, best_b


def under_way(sim: Simulation) -> Simulation:
    """Every actuator ahead at 70 %, nozzles over: all of the model's terms at work."""
    for a in sim.vessel.actuators:
        sim.set_command(f"{a.name}.{a.commands[0]}", 0.7 * a.speed_range[1])
        if a.angle_kind != "none":
            sim.set_command(f"{a.name}.{a.angle_kind}_deg", 10.0)
        if a.has_deflector:
            sim.set_command(f"{a.name}.deflector", 1.0)
    return sim


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    parser.add_argument("--profile", default="odin")
    args = parser.parse_args()
    vessel = load_profile(args.profile)
    print(
        f"hild environment benchmark: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, dt = {DT} s, "
        f"{vessel.name}"
    )
    header = f"{'weather':14} {'steps/s':>10} {'no env steps/s':>15} {'ns/step':>8} {'overhead':>9}"
    print(header)
    print("-" * len(header))
    for preset in PRESETS:
        env = Environment(load_weather(preset), vessel, DT, seed=1)
        with_env, without = paired_rates(
            under_way(Simulation(vessel, DT, environment=env)),
            under_way(Simulation(vessel, DT)),
            args.seconds,
        )
        extra_ns = (1.0 / with_env - 1.0 / without) * 1e9
        print(
            f"{preset:14} {with_env:10,.0f} {without:15,.0f} {extra_ns:8.0f} "
            f"{without / with_env - 1.0:9.1%}"
        )
    # the waves alone: the same gale (wind, gust, current, seed) with and without its sea
    with_waves, without_waves = (
        under_way(
            Simulation(vessel, DT, environment=Environment(load_weather(p), vessel, DT, seed=1))
        )
        for p in (WAVES_ON, WAVES_OFF)
    )
    with_rate, without_rate = paired_rates(with_waves, without_waves, args.seconds)
    print(
        f"the waves alone ({WAVES_ON} against {WAVES_OFF}, the same wind, gust and current): "
        f"{(1.0 / with_rate - 1.0 / without_rate) * 1e9:.0f} ns a step, "
        f"{without_rate / with_rate - 1.0:.1%} (the goal: at most 10 %)"
    )


if __name__ == "__main__":
    main()
