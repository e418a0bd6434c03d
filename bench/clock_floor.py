"""The floors a daemon's CPU is measured against: loops woken by the same clock as `hild run`
(a timerfd on CLOCK_MONOTONIC, armed once at the first deadline and periodic after it) that do
nothing else, or only step the default bench's simulation.

    python bench/clock_floor.py bare|bare-step|asyncio [--rate 100] [--duration 20]

- ``bare``: a plain Python loop that blocks in read() on the timerfd (hild's BlockingClock,
  as the daemon's tick thread does);
- ``bare-step``: the same, stepping the default bench's vessel and environment each tick
  (the floor for Python on this machine: the least a daemon that steps the model can cost);
- ``asyncio``: an empty asyncio loop woken by hild's own DeadlineTimer.

Prints one JSON line: ticks, wall and CPU seconds, CPU per cent of one core and per tick.
bench_daemon.py runs these beside the daemon and prints the difference.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from hild.clock import BlockingClock, DeadlineTimer


def blocking_ticks(rate_hz: float, duration_s: float, work, late: list[float]) -> int:
    """Block on hild's BlockingClock until each absolute deadline; call ``work`` after each."""
    period = 1.0 / rate_hz
    clock = BlockingClock(period)
    t0 = time.monotonic()
    n = round(duration_s * rate_hz)
    for k in range(1, n + 1):
        deadline = t0 + k * period
        clock.sleep_until(deadline)
        late.append(time.monotonic() - deadline)
        work()
    clock.close()
    return n


async def asyncio_ticks(rate_hz: float, duration_s: float, late: list[float]) -> int:
    timer = DeadlineTimer()
    period = 1.0 / rate_hz
    t0 = time.monotonic()
    n = round(duration_s * rate_hz)
    for k in range(1, n + 1):
        await timer.sleep_until(t0 + k * period)
        late.append(time.monotonic() - (t0 + k * period))
    timer.close()
    return n


def default_step():
    """The default bench's simulation, warmed up: its tick is the model's work per tick."""
    from hild.bench import load_bench
    from hild.world.build import initial_simulation

    sim = initial_simulation(load_bench())
    sim.tick()
    return sim.tick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("bare", "bare-step", "asyncio"))
    parser.add_argument("--rate", type=float, default=100.0, help="ticks per second (100)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds (20)")
    args = parser.parse_args()
    work = default_step() if args.kind == "bare-step" else (lambda: None)
    late: list[float] = []
    wall0, cpu0 = time.monotonic(), time.process_time()
    if args.kind == "asyncio":
        ticks = asyncio.run(asyncio_ticks(args.rate, args.duration, late))
    else:
        ticks = blocking_ticks(args.rate, args.duration, work, late)
    wall, cpu = time.monotonic() - wall0, time.process_time() - cpu0
    late.sort()
    period = 1.0 / args.rate
    print(
        json.dumps(
            {
                "kind": args.kind,
                "ticks": ticks,
                "wall_s": wall,
                "cpu_s": cpu,
                "cpu_percent": 100.0 * cpu / wall,
                "cpu_per_tick_us": 1e6 * cpu / ticks,
                "jitter_p50_ms": 1e3 * late[len(late) // 2],
                "jitter_p99_ms": 1e3 * late[min(len(late) - 1, int(0.99 * len(late)))],
                "jitter_max_ms": 1e3 * late[-1],
                "overruns": sum(x > period for x in late),
            }
        )
    )


if __name__ == "__main__":
    main()
