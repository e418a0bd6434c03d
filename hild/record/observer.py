"""The recorder as a tick observer: what happened copied in the tick, written by the writer's
thread.

Every ``record_every`` ticks it samples the truth (copies, from which the writer's thread
builds the state, actuator, environment, location and pose messages: ``sample_messages``;
for a fleet, every boat's own too: ``sample_boat``);
every sentence, received line, heading reference and control change is queued as it happens;
each second of simulated time it adds the loop's tick jitter over that second.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import structlog

from hild import __version__
from hild.clock import JitterStats
from hild.environment import layout as EL
from hild.environment.environment import current_ned_of, wind_ned_of
from hild.geodesy import Origin
from hild.mirror import payloads
from hild.names import TemplateError
from hild.observers import TickObserver
from hild.record import channels, events
from hild.record.channels import utc_ns
from hild.record.config import RecordConfig, filled_name
from hild.sensors.truth import Truth
from hild.traffic.report import target_reports

if TYPE_CHECKING:
    from hild.control import ActuatorCommand, ControlRecord
    from hild.model.vessel import ActuatorSpec
    from hild.observers import BoatView, EnvironmentView, RunView
    from hild.record.writer import RecordWriter
    from hild.transport.base import Inbound

log = structlog.get_logger("hild.record")

STATS_PERIOD_S = 1.0  # simulated seconds per /stats message


def file_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def run_metadata(
    kind: str, origin: Origin, files: dict[str, str], **facts: object
) -> dict[str, dict[str, str]]:
    """How a recording was made: MCAP metadata records of string values, the run's facts under
    ``hild`` and each configuration file (``files``: record name -> path) with its text."""
    info = {
        "kind": kind,
        "hild": __version__,
        "command": " ".join(sys.argv),
        "origin": f"{origin.latitude_deg},{origin.longitude_deg}",
    }
    info.update({k: str(v) for k, v in facts.items()})
    metadata = {"hild": info}
    for name, path in files.items():
        metadata[name] = {"file": path, "text": file_text(path)}
    return metadata


def sample_messages(
    t: float,
    utc: datetime,
    x: np.ndarray,
    actuators: np.ndarray,
    commands: np.ndarray,
    force: np.ndarray,
    sea: np.ndarray | None,
    hs: float,
    weather: str,
    origin: Origin,
    specs: Sequence[ActuatorSpec],
) -> list[tuple[str, object]]:
    """One instant of the simulation for the recording: the state, actuator, environment,
    location and pose messages, built in the writer's thread from what a tick copied
    (``sample``): time ``t`` [s] and its ``utc``, the vessel's state ``x`` (eta then nu), the
    actuators' states and commands, their force, the environment's outputs ``sea``
    (``Environment.O``; None for a run without an environment), the sea's hs and the weather's
    name. (A function of the copies, not a record of them: a frozen record's 13 fields took a
    tenth of a sample's building.)"""
    if sea is None:
        current, wind, elevation = (0.0, 0.0), (0.0, 0.0), 0.0
    else:
        current, wind = current_ned_of(sea), wind_ned_of(sea)
        elevation = float(sea[EL.O_ELEVATION])
    truth = Truth(t, utc, x[:6], x[6:12], current, wind, actuators, commands)
    state, acts, fix, pose = events.vessel_payloads(truth, origin, specs, force)
    return [
        (channels.STATE, state),  # (the writer adds the nested copies)
        (channels.ACTUATORS, acts),
        (channels.ENVIRONMENT, payloads.environment_of(truth, elevation, hs, weather)),
        (channels.LOCATION, fix),
        (channels.POSE, pose),
    ]


SAMPLE_MESSAGES = 6  # a sample's messages in the file: the five above and the pose's /tf


class Sampled(Protocol):
    """What ``sample`` copies: a simulation's arrays and environment (`hild sim`'s simulation,
    or a run's view: hild.observers.RunView)."""

    @property
    def x(self) -> np.ndarray: ...

    @property
    def act_state(self) -> np.ndarray: ...

    @property
    def act_cmd(self) -> np.ndarray: ...

    @property
    def actuator_force(self) -> np.ndarray: ...

    @property
    def environment(self) -> EnvironmentView | None: ...


def sample(
    writer: RecordWriter,
    sim: Sampled,
    t: float,
    utc: datetime,
    origin: Origin,
    specs: Sequence[ActuatorSpec],
) -> None:
    """The truth's channels at the simulation's present state, time ``t`` and ``utc`` (shared
    by the run's recorder and `hild sim`): copied here, built and written in the writer's
    thread. The tick pays for the copies only (the environment's outputs are copied whole, the
    weather's two fields read; ``sample_messages`` and everything from it are the thread's)."""
    environment = sim.environment
    if environment is None:
        sea, hs, weather = None, 0.0, ""
    else:
        conditions = environment.weather
        sea, hs, weather = environment.O.copy(), conditions.waves.hs, conditions.preset
    taken = (
        t,
        utc,
        sim.x.copy(),
        sim.act_state.copy(),
        sim.act_cmd.copy(),
        sim.actuator_force.copy(),
        sea,
        hs,
        weather,
        origin,
        specs,
    )
    writer.defer(utc_ns(utc), lambda: sample_messages(*taken), SAMPLE_MESSAGES)


def sample_boat(
    writer: RecordWriter, boat: BoatView, t: float, utc: datetime, origin: Origin
) -> None:
    """A fleet's boat's own channels (``/boats/<boat>/``) at its present state, as ``sample``:
    its arrays copied here, its messages built in the writer's thread
    (``events.boat_messages``)."""
    taken = (
        t,
        utc,
        boat.x.copy(),
        boat.act_state.copy(),
        boat.act_cmd.copy(),
        boat.actuator_force.copy(),
        origin,
        boat.actuators,
        boat.name,
    )
    writer.defer(utc_ns(utc), lambda: events.boat_messages(*taken), events.BOAT_MESSAGES)


class Recorder(TickObserver):
    """Records a run to MCAP (and its sentences to a Signal K log) while it runs."""

    def __init__(self, config: RecordConfig, lossless: bool = False):
        """``lossless``: wait for the writer rather than drop (a run on no clock: lockstep)."""
        self.config = config
        self.lossless = lossless
        self.writer: RecordWriter | None = None
        self._run: RunView | None = None
        self._boats: tuple[BoatView, ...] = ()  # a fleet's boats, the first included
        self._every = 1
        self._tick = 0
        self._stats_due = STATS_PERIOD_S
        self._window = JitterStats()  # tick lateness over the current /stats period

    async def start(self, run: RunView) -> None:
        bench = run.bench
        self._run = run
        self._boats = tuple(run.boat(i) for i in range(len(run.boats)))
        self._every = max(1, round(bench.rate_hz / self.config.rate_hz))
        metadata = run_metadata(
            "run",
            bench.origin,
            {"bench": bench.file, "profile": bench.vessel.source, "weather": bench.weather.source},
            bench=bench.name,
            bench_file=bench.file,
            profile=bench.profile,
            weather=bench.weather.preset,
            seed=bench.seed,
            rate_hz=bench.rate_hz,
            time_scale=bench.time_scale,
            devices=",".join(d.name for d in bench.devices),
            start_utc=bench.start_time.isoformat() if bench.start_time else "wall",
        )
        metadata[channels.PORTS] = {d.name: json.dumps(list(d.ports)) for d in bench.devices}
        from hild.record.writer import RecordWriter  # (mcap and zstandard load only when a
        # run records: 12 ms of every other run's start)

        path = self.file_for(bench.name, bench.start_time)
        self.writer = RecordWriter(path, metadata, self.config.nmea_log, self.lossless)
        try:
            await asyncio.to_thread(self.writer.start)  # opens files: not on the loop's thread
        except OSError as e:
            self.writer = None
            raise self.config.unwritable(path, e.strerror or str(e)) from None
        self._declare(run)
        log.info(
            "record.start",
            file=str(self.writer.path),
            rate_hz=self.config.rate_hz,
            nmea_log=str(self.writer.nmea_path or ""),
        )

    def _declare(self, run: RunView) -> None:
        """Every channel of the run, with its keys, before the first tick."""
        assert self.writer is not None
        for topic, example in events.declared(run):
            self.writer.declare(topic, example)

    def file_for(self, bench: str, start: datetime | None) -> Path:
        """The file name with ``{bench}`` and ``{utc}`` (the start, 20260601T120000Z: the
        bench's start time, or now for a run on the wall clock) filled."""
        try:  # (hild.names: a name cannot take the file out of the template's folder)
            return filled_name(self.config.file, {"bench": bench}, start)
        except TemplateError as e:
            raise self.config.unwritable(self.config.file, str(e)) from None

    def _now(self) -> tuple[float, datetime, int]:
        """Simulation time, its UTC and that in ns (cheap: no copy of the state)."""
        run = self._run
        assert run is not None and run.start_utc is not None
        t = run.t
        utc = run.start_utc + timedelta(seconds=t)
        return t, utc, utc_ns(utc)

    def on_tick(self, run: RunView, t: float) -> None:
        writer = self.writer
        if writer is None:
            return
        self._window.add(run.late_s, run.tick_period_s)
        self._tick += 1
        if self._tick % self._every == 0:
            assert run.start_utc is not None
            utc = run.start_utc + timedelta(seconds=t)
            origin = run.bench.origin
            sample(writer, run, t, utc, origin, run.bench.vessel.actuators)
            for boat in self._boats:  # (a fleet's: each boat's own channels)
                sample_boat(writer, boat, t, utc, origin)
        if t + 1e-9 >= self._stats_due:
            self._stats_due += STATS_PERIOD_S
            self._put_stats(run, t)

    def _put_stats(self, run: RunView, t: float) -> None:
        _, truth_utc, ns = self._now()
        assert self.writer is not None
        self.writer.put(
            channels.STATS,
            ns,
            {
                **payloads.stamp(t, truth_utc),
                **self._window.summary(),
                "record_dropped": self.writer.dropped,
            },
        )
        self._window.reset()
        traffic = run.traffic()
        if traffic is not None:
            reports = target_reports(traffic, run.bench.origin)
            self.writer.put(
                channels.TRAFFIC, ns, {**payloads.stamp(t, truth_utc), "targets": reports}
            )

    def on_sentences(self, device: str, lines: Sequence[bytes]) -> None:
        if self.writer is None:
            return
        t, utc, ns = self._now()
        topic = channels.SENSORS + device
        lines = tuple(lines)  # (bytes: the writer's thread decodes them)

        def build() -> list[tuple[str, object]]:
            return [(topic, message) for message in events.sentences(payloads.stamp(t, utc), lines)]

        self.writer.defer(ns, build, len(lines))

    def on_received(
        self,
        device: str,
        inbound: Inbound,
        command: ActuatorCommand | None,
        rejected: tuple[str, str] | None,
    ) -> None:
        if self.writer is None or self._run is None or self._run.start_utc is None:
            return
        t, utc, ns = self._now()
        topic = channels.BUS + device

        def build() -> list[tuple[str, object]]:  # in the writer's thread (what it reads is
            # immutable: the line, its command and its rejection)
            return [(topic, events.bus_line(payloads.stamp(t, utc), inbound, command, rejected))]

        self.writer.defer(ns, build, 1)

    def on_control(self, run: RunView, record: ControlRecord) -> None:
        """A heading reference goes to /reference, a watchdog's trip and a SITL restart to
        /control; the runtime requests behind the other records are on /control already
        (``on_request``)."""
        if self.writer is None:
            return
        # (ArduPilot's first frame may set the world's step: StepRate, before the first tick)
        self._every = max(1, round(run.bench.rate_hz / self.config.rate_hz))
        t, utc, ns = self._now()
        event = events.control(payloads.stamp(t, utc), record)
        if event is not None:
            self.writer.put(event[0], ns, event[1])

    def on_request(self, run: RunView, request: str, source: str, sent: dict, answer: dict) -> None:
        """A runtime request as its sender sent it, and the answer it got."""
        if self.writer is None:
            return
        t, utc, ns = self._now()
        message = events.request(payloads.stamp(t, utc), request, source, sent, answer)
        self.writer.put(channels.CONTROL, ns, message)

    async def stop(self, run: RunView) -> None:
        if self.writer is None:
            return
        stats = await asyncio.to_thread(self.writer.close)  # joins the thread: off the loop
        log.info(
            "record.stop",
            file=str(self.writer.path),
            **dataclasses.asdict(stats),
            error=self.writer.error or "",
        )

    @property
    def failed(self) -> bool:
        """The recording stopped on an error before the run did (``hild run`` exits 3)."""
        return self.writer is not None and self.writer.error is not None

    def describe(self) -> str | None:
        if self.writer is None:
            return None
        nmea = self.writer.nmea_path
        also = f" and {nmea}" if nmea else ""
        return f"Recording: {self.writer.path}{also} (hild plot {self.writer.path})"

    def summary(self) -> dict:
        return {"record": self.writer.summary()} if self.writer is not None else {}
