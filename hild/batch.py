"""`hild sim --repeat N` and repeated `--schedule`: many runs in one process, start-up paid once.

Tuning a controller means hundreds of short runs (seeds of the weather, command schedules);
started one by one, each pays the interpreter's, numpy's and numba's start-up (over a second
here, several on a Raspberry Pi) for milliseconds of simulation. A batch runs every schedule
with every seed (SEED, SEED + 1, ..., SEED + N - 1) in turn, writes one JSON line per run on
stdout as it ends, and its throughput on stderr. A run that diverges is reported in its line
and the batch goes on; the exit status is then 1.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hild.config import ConfigError, MultipleConfigError
from hild.coupled.simulation import DivergedError
from hild.log import json_line, write_or_drop
from hild.profiles.vessel import load_profile
from hild.record.config import EXIT_RECORDING_FAILED
from hild.sim import checked_commands, record_file, run_sim


@dataclass(frozen=True)
class BatchRun:
    """One run of a batch: its seed, its schedule (None: --cmd alone) and its files."""

    seed: int
    schedule: Path | None
    out: Path | None
    record: Path | None


def batch_runs(
    seed: int, repeat: int, schedules: list[Path], out: Path | None, record: Path | None
) -> list[BatchRun]:
    """Every schedule with every seed, schedule by schedule; --out and --record name each run's
    file after it: ``track.csv`` becomes ``track-seed3.csv``, and with several schedules
    ``track-turn-seed3.csv`` (the schedule file's stem)."""
    runs = []
    each: list[Path | None] = [*schedules] or [None]
    for schedule in each:
        for k in range(repeat):
            tag = f"seed{seed + k}"
            if schedule is not None and len(schedules) > 1:
                tag = f"{schedule.stem}-{tag}"
            runs.append(BatchRun(seed + k, schedule, tagged(out, tag), tagged(record, tag)))
    return runs


def tagged(path: Path | None, tag: str) -> Path | None:
    """``path`` with ``-tag`` before its suffix (None stays None)."""
    return None if path is None else path.with_name(f"{path.stem}-{tag}{path.suffix}")


def run_batch(
    profile: str,
    duration: float,
    *,
    seed: int = 0,
    repeat: int = 1,
    schedules: list[Path] | None = None,
    out: Path | None = None,
    record: Path | None = None,
    emit: Callable[[str], Any] | None = None,
    **options: Any,
) -> int:
    """Run the batch; each run's JSON line goes to ``emit`` (stdout by default). Returns the
    exit status: 0, 1 if a run diverged, else 3 if a recording failed (a full disk). An error
    of the command line or a file (a schedule, the profile) raises before anything runs, as
    for a single run."""
    say = emit or (lambda line: write_or_drop(sys.stdout, line + "\n"))
    schedules = schedules or []
    vessel = load_profile(profile)
    errors: list[ConfigError] = []  # every schedule's errors before the first run, file by file
    for schedule in schedules:
        try:
            checked_commands(vessel, options.get("commands") or [], schedule)
        except MultipleConfigError as e:
            errors.extend(e.errors)
        except ConfigError as e:
            errors.append(e)
    if errors:
        raise errors[0] if len(errors) == 1 else MultipleConfigError(errors)
    if record is not None:  # its {utc} is the batch's start, one for all its runs
        record = record_file(record, vessel.name)
    runs = batch_runs(seed, repeat, schedules, out, record)
    diverged = failed_records = 0
    t0 = time.perf_counter()
    simulated = 0.0
    for run in runs:
        line: dict[str, Any] = {
            "seed": run.seed,
            "schedule": None if run.schedule is None else str(run.schedule),
        }
        try:
            s = run_sim(
                profile,
                duration,
                seed=run.seed,
                schedule=run.schedule,
                out=run.out,
                record=run.record,
                vessel=vessel,
                **options,
            )
        except DivergedError as e:
            diverged += 1
            line["diverged"] = {"t": e.t, "problem": e.problem, "advice": e.advice}
        else:
            if s.get("record", {}).get("error"):
                failed_records += 1
                line["record_error"] = s["record"]["error"]
            simulated += s["t"]
            line.update(
                t=s["t"],
                state=s["state"],
                actuators=s["actuators"],
                environment=s["environment"],
                real_time_factor=s["real_time_factor"],
                wall_s=s["wall_s"],
            )
        say(json_line(line))
    wall = time.perf_counter() - t0
    rate = f"{len(runs) / wall:.1f} runs/s" if wall > 0.0 else "instantly"
    write_or_drop(
        sys.stderr,
        f"hild sim: {len(runs)} run(s) of {duration:g} s in {wall:.2f} s "
        f"wall ({rate}, {simulated / max(wall, 1e-9):.0f}x real time)"
        + (f"; {diverged} diverged" if diverged else "")
        + (f"; {failed_records} recording(s) failed" if failed_records else "")
        + "\n",
    )
    return 1 if diverged else EXIT_RECORDING_FAILED if failed_records else 0
