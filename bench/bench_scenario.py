"""Scenario benchmark (issue 26): lockstep runs per second per core against `hild sim`.

Run:  python bench/bench_scenario.py [--scenario FILE_OR_NAME] [--repeats 7] [--record]

The default scenario is bench/scenarios/fjord-waves-10min.toml: ten minutes of Odin steered by
hild's pilot in lockstep, five traffic targets, a gale with 1 m waves, the default sensors.
After a warm-up, the scenario run (`run_lockstep`) and a `hild sim` run of the same vessel,
length, weather and seed (`run_sim`, jets held at 1800 rpm, no traffic: what `hild sim` does)
alternate in this process, so that both see the same load on a shared machine. Printed: each
one's runs per second on one core and times real time (median and range over the repeats),
the scenario's cost in `hild sim` runs, and where a scenario run's time goes (cProfile's own
time by part; the profiler inflates the parts made of many small Python calls). With
``--record``, the scenario run recorded (as `hild scenario run --record` records it) joins the
alternation, and its cost in plain scenario runs is printed.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hild.log import configure_logging
from hild.record.config import RecordConfig
from hild.record.observer import Recorder
from hild.scenario.file import load_scenario
from hild.scenario.lockstep import run_lockstep
from hild.sim import run_sim

HERE = Path(__file__).resolve().parent
DEFAULT_SCENARIO = HERE / "scenarios" / "fjord-waves-10min.toml"
HELD = ["port.rpm=1800", "starboard.rpm=1800", "port.deflector=1", "starboard.deflector=1"]

# Where a run's time goes: the first part whose marker is in a profiled function's file.
PARTS = (
    (
        "stepping (compiled: vessel, weather, traffic)",
        ("coupled/", "model/", "environment/", "traffic/"),
    ),
    ("pilot: NMEA decoding (pynmea2 and hild.nmea.decode)", ("pynmea2", "nmea/decode")),
    ("pilot: fixes, autopilot, command encoding", ("pilot/", "scenario/controller")),
    ("command device: parse, decode, watchdog, arbiter", ("bus/", "hild/control")),
    ("sensors: truth and NMEA encoding", ("sensors/", "nmea/")),
    ("track and criteria", ("scenario/track", "scenario/criteria")),
    ("the lockstep loop itself", ("scenario/lockstep",)),
    ("numpy", ("numpy",)),
)


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def spread(times: list[float], duration: float) -> str:
    med, lo, hi = (1e3 * v for v in (statistics.median(times), min(times), max(times)))
    return (
        f"{1e3 / med:7.2f} runs/s  {1e3 * duration / med:7.0f}x real time  "
        f"(median {med:.0f} ms, range {lo:.0f}-{hi:.0f})"
    )


def breakdown(run: Callable[[], object]) -> list[tuple[str, float]]:
    """Each part's share of one profiled run's own time."""
    profile = cProfile.Profile()
    profile.runcall(run)
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    totals: dict[str, float] = {}
    for (file, _line, _name), (_cc, _nc, own, _cum, _callers) in stats.items():
        part = next((p for p, marks in PARTS if any(m in file for m in marks)), "other (builtins)")
        totals[part] = totals.get(part, 0.0) + own
    whole = sum(totals.values())
    return sorted(((p, t / whole) for p, t in totals.items()), key=lambda pt: -pt[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=str(DEFAULT_SCENARIO), help="a file or a name")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--record",
        action="store_true",
        help="also the scenario run recorded (`hild scenario run --record`: "
        "lossless, MCAP and the Signal K log in a temporary folder)",
    )
    args = parser.parse_args()
    configure_logging(level="warning")  # (a recorder says where it records, each run)

    scenario = load_scenario(args.scenario)
    bench = scenario.bench
    weather = bench.weather.preset

    def lockstep() -> object:
        return run_lockstep(scenario)

    result = run_lockstep(scenario)  # warm-up: compile or load the kernels, import the rest
    simulated = result.duration_s  # (a run that completes its mission ends early)

    def sim() -> object:
        return run_sim(
            bench.profile,
            simulated,
            dt=1.0 / bench.rate_hz,
            method=bench.method,
            commands=HELD,
            weather=weather,
            seed=bench.seed,
            vessel=bench.vessel,
        )

    folder = tempfile.TemporaryDirectory()

    def recorded() -> object:
        config = RecordConfig.for_file(Path(folder.name) / "run.mcap", bench.rate_hz)
        return run_lockstep(scenario, observers=[Recorder(config, lossless=True)])

    sim()
    if args.record:
        recorded()
    lock_t: list[float] = []
    sim_t: list[float] = []
    record_t: list[float] = []
    for _ in range(args.repeats):
        lock_t.append(timed(lockstep))
        sim_t.append(timed(sim))
        if args.record:
            record_t.append(timed(recorded))

    print(
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} cores; {args.repeats} alternating repeats, one core"
    )
    print(
        f"scenario {scenario.name}: {bench.profile} at {bench.rate_hz:g} Hz, {simulated:g} s "
        f"simulated, weather {weather}, {len(bench.traffic)} targets, "
        f"{len(bench.devices)} devices, controller {scenario.controller.kind}; "
        f"ended {result.ended}, passed {result.passed}"
    )
    print(f"  lockstep scenario  {spread(lock_t, simulated)}")
    print(f"  hild sim           {spread(sim_t, simulated)}")
    ratios = [a / b for a, b in zip(lock_t, sim_t, strict=True)]
    print(
        f"  a scenario run costs {statistics.median(ratios):.2f} hild sim runs of the same "
        f"length (range {min(ratios):.2f}-{max(ratios):.2f})"
    )
    print(
        f"  goal: 5 runs/s per core ({5 * simulated / 600:.2f} runs/s for this length), "
        f"3000x real time"
    )
    if args.record:
        ratios = [a / b for a, b in zip(record_t, lock_t, strict=True)]
        print(f"  recorded scenario  {spread(record_t, simulated)}")
        print(
            f"  a recorded run costs {statistics.median(ratios):.2f} plain scenario runs "
            f"(range {min(ratios):.2f}-{max(ratios):.2f})"
        )
    folder.cleanup()
    print("where a scenario run's time goes (cProfile, own time):")
    for part, share in breakdown(lockstep):
        print(f"  {share * 100:5.1f} %  {part}")


if __name__ == "__main__":
    main()
