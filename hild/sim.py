"""`hild sim`: run the vessel model faster than real time from the command line."""

from __future__ import annotations

import csv
import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from hild.config import MISSING, ConfigError, Problems, read_text
from hild.coupled.loop import ROW_ACTUATORS, ROW_STATE, ROW_T, row_environment
from hild.coupled.simulation import CommandError, DivergedError, Simulation
from hild.environment.environment import Environment
from hild.geodesy import DEFAULT_ORIGIN
from hild.kernel_cache import announce_compiling
from hild.log import json_line
from hild.model import layout as L
from hild.model.stability import StepLimit, absurd, round_down, state_problem, step_limit
from hild.model.vessel import Vessel
from hild.names import TemplateError
from hild.profiles.vessel import load_profile
from hild.profiles.weather import load_weather
from hild.record.config import filled_name
from hild.record.observer import run_metadata, sample
from hild.units import KNOTS_PER_MS


@dataclass(frozen=True)
class ScheduledCommand:
    """One row of a schedule file: at time t [s], set command name to value."""

    t: float
    name: str
    value: float
    line: int = 0  # the schedule file's line, for errors


def parse_command(text: str) -> tuple[str, float]:
    """Parse ``NAME=VALUE`` as given to --cmd."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise CommandError(f"--cmd {text!r}: expected NAME=VALUE, e.g. port.rpm=1500")
    try:
        return name.strip(), float(value)
    except ValueError:
        raise CommandError(f"--cmd {text!r}: the value {value!r} is not a number") from None


MAX_SCHEDULE_BYTES = 64 << 20  # about three million rows


def read_schedule(path: Path) -> list[ScheduledCommand]:
    """Read ``t,name,value`` rows (a header row is optional), sorted by time; every bad row
    is reported at once."""
    problems = Problems()
    rows = schedule_rows(path, problems)
    problems.raise_any()
    return rows


def schedule_rows(path: Path, problems: Problems) -> list[ScheduledCommand]:
    """The schedule's good rows sorted by time; each bad row is a problem in ``problems``,
    placed by its line."""
    rows: list[ScheduledCommand] = []
    text = read_text(path, "schedule", MAX_SCHEDULE_BYTES)
    for lineno, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or row[0].lstrip().startswith("#"):
            continue
        if lineno == 1 and row[0].strip() == "t":
            continue
        command = problems.attempt(_schedule_row, path, row, lineno, at=(lineno,))
        if command is not None:
            rows.append(command)
    rows.sort(key=lambda r: r.t)
    return rows


def _schedule_row(path: Path, row: list[str], lineno: int) -> ScheduledCommand:
    key = f"line {lineno}"
    if len(row) != 3:
        raise ConfigError(path, key, ",".join(row), "three columns: t,name,value")
    try:
        t, value = float(row[0]), float(row[2])
    except ValueError:
        raise ConfigError(path, key, ",".join(row), "numbers for t and value") from None
    if not (math.isfinite(t) and t >= 0.0 and math.isfinite(value)):
        raise ConfigError(path, key, ",".join(row), "t >= 0 and finite values")
    return ScheduledCommand(t, row[1].strip(), value, lineno)


SIM_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)  # a batch run's UTC at t = 0: fixed, repeatable


def record_file(template: Path, profile: str) -> Path:
    """``--record``'s name with ``{profile}`` (the profile's name) and ``{utc}`` (now: a sim's
    own clock always starts at SIM_EPOCH, which would name every file alike) filled, as `hild
    run --record` fills {bench} and {utc}; a name with none is as it is. Folders missing on
    its way are made when it is opened, as for hild run."""
    try:  # (hild.names: a name cannot take the file out of the template's folder)
        return filled_name(template, {"profile": profile})
    except TemplateError as e:
        raise ConfigError(
            f"--record {template}", "", MISSING, f"a file that can be written ({e})"
        ) from None


class SimRecording:
    """`hild sim --record`: the truth's channels at every output interval, in the same format
    as a daemon's recording (sentences, bus and loop channels stay empty: nothing is sent)."""

    def __init__(
        self,
        path: Path,
        vessel: Vessel,
        profile: str,
        weather: str,
        seed: int,
        dt: float,
        method: str,
        every: int,
    ):
        metadata = run_metadata(
            "sim",
            DEFAULT_ORIGIN,
            {"profile": vessel.source},
            profile=profile,
            weather=weather,
            seed=seed,
            dt=dt,
            method=method,
            start_utc=SIM_EPOCH.isoformat(),
            output_interval=every * dt,
        )
        from hild.record.writer import RecordWriter  # (mcap loads only when a sim records)

        # a batch run has no deadline to keep: the writer waits for room rather than drop
        self.writer = RecordWriter(path, metadata, nmea_log=False, lossless=True)
        try:
            self.writer.start()
        except OSError as e:
            raise ConfigError(
                f"--record {path}", "", MISSING, f"a file that can be written ({e.strerror})"
            ) from None
        self.vessel = vessel

    def sample(self, sim: Simulation) -> None:
        sample(
            self.writer,
            sim,
            sim.t,
            SIM_EPOCH + timedelta(seconds=sim.t),
            DEFAULT_ORIGIN,
            self.vessel.actuators,
        )

    def close(self) -> None:
        self.writer.close()


CHUNK_STEPS = 100_000  # steps per compiled call: 1,000 s at 100 Hz
MAX_STEPS = 10**12  # steps of a run: more than a day of computing at any step


def run_sim(
    profile: str,
    duration: float,
    dt: float = 0.01,
    method: str = "rk4",
    commands: list[str] | None = None,
    schedule: Path | None = None,
    out: Path | None = None,
    output_interval: float = 0.1,
    weather: str = "calm",
    seed: int = 0,
    record: Path | None = None,
    vessel: Vessel | None = None,
) -> dict:
    """Run one simulation; write the CSV if asked; return the summary. ``vessel`` is
    ``profile`` already loaded (a batch loads it once; the core only reads it).

    A step longer than the vessel's stable limit (hild/model/stability.py) is refused before
    anything runs (CommandError); a run whose state becomes absurd all the same stops there
    (DivergedError, with the rows up to it in the CSV)."""
    n_total, every = checked_steps(duration, dt, output_interval)
    if vessel is None:
        vessel = load_profile(profile)
    if record is not None:
        record = record_file(record, vessel.name)
    weather_spec = load_weather(weather)
    held, events = checked_commands(vessel, commands or [], schedule)
    announce_compiling()
    limit = step_limit(vessel, method)
    problem = limit.problem(dt)
    if problem:
        raise CommandError(f"--dt {dt:g}: expected {problem}")
    environment = Environment(weather_spec, vessel, dt, seed=seed, duration=duration)
    sim = Simulation(vessel, dt=dt, method=method, environment=environment)
    for name, value in held:
        sim.set_command(name, value)
    for ev in events:  # those at t = 0 apply before the first step
        if ev.t == 0.0:
            sim.set_command(ev.name, ev.value)

    writer = CsvRows(out, sim.columns()) if out is not None else None
    recording = None
    try:
        if record is not None:
            recording = SimRecording(record, vessel, profile, weather, seed, dt, method, every)
        last, wall = advance_to_end(
            sim,
            n_total,
            every,
            [ev for ev in events if ev.t > 0.0],
            writer,
            recording,
        )
    except DivergedError as e:
        e.advice = divergence_advice(limit, dt, weather, out)
        raise
    finally:
        if writer is not None:
            writer.close()
        if recording is not None:
            recording.close()
    recorded = {"record": recording.writer.summary()} if recording is not None else {}
    return {
        **recorded,
        "profile": vessel.name,
        "weather": environment.weather.preset,
        "seed": seed,
        **final_values(sim, last),
        "notes": environment.notes,
        "method": method,
        "dt": dt,
        "t": sim.t,
        "steps": sim.steps,
        "speed": float(math.hypot(sim.x[6], sim.x[7])),
        "wall_s": wall,
        "real_time_factor": sim.t / wall if wall > 0 else math.inf,
    }


def checked_steps(duration: float, dt: float, output_interval: float) -> tuple[int, int]:
    """The run's number of steps and the steps between output rows, checked: at least one
    step, and not more than MAX_STEPS."""
    if not duration > 0.0:
        raise CommandError(f"--duration must be positive, not {duration}")
    steps = duration / dt
    if not steps <= MAX_STEPS:
        raise CommandError(
            f"--duration {duration:g}: expected at most {MAX_STEPS:.0e} steps of --dt {dt:g} s"
        )
    n_total = int(round(steps))
    if n_total < 1:
        raise CommandError(f"--duration {duration:g}: expected at least one step of --dt {dt:g} s")
    # a row every output interval; beyond MAX_STEPS, one is as good as any: only t = 0
    every = max(1, int(round(min(output_interval / dt, MAX_STEPS + 1))))
    return n_total, every


SUSPECT_STEP = 0.25  # a step above this share of the stable limit may be why a run diverged


def divergence_advice(limit: StepLimit, dt: float, weather: str, out: Path | None) -> str:
    """What to try after a run diverged: a smaller step, or milder forces when the step is
    already well within the vessel's limit."""
    within = (
        f"{limit.vessel}'s stable step with {limit.method}, {round_down(limit.dt)} s in calm water"
    )
    if dt > SUSPECT_STEP * limit.dt:
        text = (
            f"--dt {dt:g} is more than a quarter of {within} (the weather, and commands "
            f"beyond a full-power turn, can need a shorter one): try a smaller --dt, e.g. "
            f"{dt / 4:.2g}"
        )
    else:
        text = (
            f"--dt {dt:g} is well within {within}, so the forces (of the weather "
            f"'{weather}', the commands or the profile) are likely beyond what the model "
            "holds; a run with a smaller --dt tells: if it stops at the same time, the "
            "step is not the cause"
        )
    if out is not None:
        text += f" ({out} has the rows up to the last sound one)"
    return text


def checked_commands(
    vessel: Vessel, commands: list[str], schedule: Path | None
) -> tuple[list[tuple[str, float]], list[ScheduledCommand]]:
    """The --cmd values and the schedule's rows, every one checked before anything runs."""
    held = [parse_command(text) for text in commands]
    for (name, value), text in zip(held, commands, strict=True):
        problem = vessel.command_problem(name, value)
        if problem:
            raise CommandError(f"--cmd {text!r}: expected {problem}")
    problems = Problems()
    events = schedule_rows(schedule, problems) if schedule else []
    for ev in events:  # a row read wrong is reported once, as read, not also as a command
        problem = vessel.command_problem(ev.name, ev.value)
        if problem:
            error = ConfigError(
                schedule or "", f"line {ev.line}", f"{ev.name},{ev.value:g}", problem
            )
            problems.add(error, at=(ev.line,))
    problems.raise_any()
    return held, events


def advance_to_end(
    sim: Simulation,
    n_total: int,
    every: int,
    pending: list[ScheduledCommand],
    writer: CsvRows | None,
    recording: SimRecording | None,
) -> tuple[np.ndarray, float]:
    """Step to ``n_total`` applying the schedule's ``pending`` rows on time, writing a row every
    ``every`` steps; returns the last rows and the wall time spent stepping [s]. Every row is
    checked: at the first absurd one the rows before it are written and DivergedError says
    when and what."""
    last = sim.row()[None, :]
    if writer is not None:
        writer.write(last)
    sim.advance(0, every)  # compile (or load from cache) before timing
    if recording is not None:
        recording.sample(sim)
    wall = 0.0
    dt = sim.dt
    while sim.steps < n_total:
        # events apply at the first step that starts at or after their time
        while pending and math.ceil(pending[0].t / dt - 1e-9) <= sim.steps:
            ev = pending.pop(0)
            sim.set_command(ev.name, ev.value)
        # at most CHUNK_STEPS at a time: rows go to the file as they come, memory stays flat
        stop = min(n_total, sim.steps + CHUNK_STEPS)
        if recording is not None:  # a sample at every output interval
            stop = min(stop, (sim.steps // every + 1) * every)
        if pending:
            stop = min(stop, max(sim.steps + 1, math.ceil(pending[0].t / dt - 1e-9)))
        t0 = time.perf_counter()
        rows = sim.advance(stop - sim.steps, every)
        wall += time.perf_counter() - t0
        stopped = diverged(sim, rows)
        if stopped is not None:
            bad, t, problem = stopped
            if writer is not None:
                writer.write(rows[:bad])
            raise DivergedError(t, problem)
        if recording is not None and sim.steps % every == 0:
            recording.sample(sim)
        if len(rows):
            last = rows
            if writer is not None:
                writer.write(rows)
    return last, wall


def diverged(sim: Simulation, rows: np.ndarray) -> tuple[int, float, str] | None:
    """The first of ``rows`` (and then the present state) that is absurd or not finite: its
    index, its time and what is wrong (None if all are sound)."""
    bad = absurd(rows[:, ROW_STATE : ROW_STATE + L.X_SIZE]) | ~np.isfinite(rows).all(axis=1)
    if bad.any():
        i = int(bad.argmax())
        row = rows[i]
        problem = state_problem(row[ROW_STATE : ROW_STATE + L.X_SIZE])
        if not problem:
            names = [c for c, v in zip(sim.columns(), row, strict=True) if not math.isfinite(v)]
            problem = f"not finite: {', '.join(names)}"
        return i, float(row[ROW_T]), problem
    problem = sim.state_problem()
    if not (problem or np.isfinite(sim.act_state).all() and np.isfinite(sim.env).all()):
        problem = "the actuators' or the environment's state is not finite"
    return (len(rows), sim.t, problem) if problem else None


def final_values(sim: Simulation, last: np.ndarray) -> dict[str, dict[str, float]]:
    """The state, the actuators and the environment of the last recorded row, by name."""
    columns, last_row = sim.columns(), last[-1]
    env_start = row_environment(sim.vessel.n_act)  # the actuators' states and force come before
    return {
        "state": {name: float(val) for name, val in zip(L.STATE_NAMES, sim.x, strict=True)},
        "actuators": dict(
            zip(
                columns[ROW_ACTUATORS:env_start],
                map(float, last_row[ROW_ACTUATORS:env_start]),
                strict=True,
            )
        ),
        "environment": dict(
            zip(columns[env_start:], map(float, last_row[env_start:]), strict=True)
        ),
    }


class CsvRows:
    """The --out file: a header, then rows as the run produces them (full precision)."""

    def __init__(self, path: Path, columns: list[str]):
        self.path = path
        try:  # (its folder made as --record's is)
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._file = open(path, "w", newline="")  # noqa: SIM115  (closed by close())
        except OSError as e:
            raise self._unwritable(e) from None
        self._csv = csv.writer(self._file)
        self._csv.writerow(columns)

    def _unwritable(self, e: OSError) -> CommandError:
        return CommandError(f"--out {self.path}: cannot write it ({e.strerror or e})")

    def write(self, table: np.ndarray) -> None:
        try:
            for row in table:
                self._csv.writerow([f"{v:.9g}" for v in row])
        except OSError as e:  # a full disk, a file-size limit
            raise self._unwritable(e) from None

    def close(self) -> None:
        try:
            self._file.close()
        except OSError as e:
            raise self._unwritable(e) from None


def summary_text(s: dict) -> str:
    """A few human lines followed by one JSON line with the final state."""
    st = s["state"]
    speed_up = s["real_time_factor"]
    lines = [
        f"hild sim {s['profile']}: {s['t']:.2f} s in {s['steps']} steps of {s['dt']} s "
        f"({s['method']}), {s['wall_s']:.3f} s wall"
        + (f", {speed_up:.0f}x real time" if math.isfinite(speed_up) else ""),
        f"  position  x={st['x']:.2f} m  y={st['y']:.2f} m  heading "
        f"{math.degrees(st['psi']) % 360.0:.1f} deg",
        f"  velocity  u={st['u']:.3f} m/s  v={st['v']:.3f} m/s  r={math.degrees(st['r']):.2f} deg/s"
        f"  speed {s['speed']:.3f} m/s ({s['speed'] * KNOTS_PER_MS:.2f} kn)",
    ]
    env = s["environment"]
    if s["weather"] != "calm" or any(env.values()):
        lines.append(
            f"  weather   {s['weather']} (seed {s['seed']}): wind {env['wind_speed']:.1f} m/s "
            f"from {env['wind_dir']:.0f} deg, current {env['current_speed']:.2f} m/s to "
            f"{env['current_dir']:.0f} deg, elevation {env['wave_elevation']:.2f} m"
        )
    lines.extend(f"  note: {note}" for note in s["notes"])
    if s.get("record", {}).get("error"):
        r = s["record"]
        lines.append(
            f"  recording failed: {r['error']} ({r['messages']} messages written, {r['lost']} lost)"
        )
    final = {
        "t": s["t"],
        "state": st,
        "actuators": s["actuators"],
        "environment": env,
        "real_time_factor": speed_up,
    }
    lines.append(json_line(final))
    return "\n".join(lines)
