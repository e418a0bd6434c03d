"""The mirror as a tick observer: due topics are built in the tick, published by a task.

``on_tick`` costs one clock read when nothing is due; when a topic's time has come (by the
wall clock, so a broker sees the configured rates whatever the time scale) it builds that
topic's payload from the truth and puts it in the latest-value store. The session task does
the JSON encoding and the network.
"""

from __future__ import annotations

import asyncio
import collections
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import structlog

from hild import __version__
from hild.mirror import payloads
from hild.mirror.config import MirrorConfig
from hild.mirror.store import LatestStore, Message
from hild.observers import TickObserver
from hild.traffic.report import signalk_paths, target_reports

if TYPE_CHECKING:
    from hild.control import ControlRecord
    from hild.mirror.session import Session
    from hild.observers import RuntimeRequests, RunView

log = structlog.get_logger("hild.mirror")

SOURCE = "mqtt:control"  # the requests' source in the recording: mqtt:control/weather
SENTENCES_KEPT = 256  # per device between two sensors/<device> messages; older ones are dropped
STOP_TIMEOUT_S = 2.0


def _boat_truth(run: RunView, truth, boats: dict, i: int):
    """A fleet's boat ``i``'s instant at ``truth``'s time (the first boat's is ``truth``),
    made at most once a tick (``boats``: those made already) for all the topics that show it."""
    if i == 0:
        return truth
    seen = boats.get(i)
    if seen is None:
        seen = boats[i] = run.truth(truth.t, i)
    return seen


class Mirror(TickObserver):
    """Publishes a run's state, actuators, environment, sensors, bus and stats over MQTT."""

    def __init__(self, config: MirrorConfig):
        self.config = config
        self.prefix = ""
        self.store: LatestStore | None = None
        self.session: Session | None = None
        self.runtime: RuntimeRequests | None = None  # runtime control, when enabled
        self._task: asyncio.Task | None = None
        self._due: dict[str, float] = {}
        self._next_due = 0.0
        self._sentences: dict[str, collections.deque[bytes]] = {}
        self._sentences_dropped: dict[str, int] = {}
        self._cpu = (time.monotonic(), time.process_time())

    def topic(self, name: str) -> str:
        return f"{self.prefix}/{name}"

    # --- the observer's hooks -------------------------------------------------------------
    async def start(self, run: RunView) -> None:
        bench = run.bench
        self.prefix = self.config.topic_prefix(bench.name)
        self.store = LatestStore()
        if self.config.control:
            self.runtime = run.runtime_control
        online = {
            "state": "online",
            "bench": bench.name,
            "file": bench.file,
            "vessel": bench.vessel.name,
            "profile": bench.profile,
            "weather": bench.weather.preset,
            "rate_hz": bench.rate_hz,
            "time_scale": bench.time_scale,
            "seed": bench.seed,
            "devices": [d.name for d in bench.devices],
            "pid": os.getpid(),
            "hild": __version__,
            "signalk": self.config.signalk,
            "control": self.runtime is not None,
        }
        from hild.mirror.session import Session  # (aiomqtt and paho load only when a run
        # mirrors: 18 ms of every other run's start)

        self.session = Session(
            self.config,
            self.store,
            self.topic("status"),
            online,
            self.topic("control/+") if self.runtime is not None else None,
            self._on_control,
        )
        now = time.monotonic()
        self._due = {name: now for name in self.config.topics}
        if not self.config.signalk:
            self._due.pop("signalk", None)
        for device in run.devices:
            if not device.takes_commands:
                name = device.name
                self._sentences[name] = collections.deque(maxlen=SENTENCES_KEPT)
                self._sentences_dropped[name] = 0
        self._task = asyncio.create_task(self.session.run(), name="hild-mirror")
        log.info(
            "mirror.start",
            broker=self.config.url,
            prefix=self.prefix,
            control=self.runtime is not None,
            signalk=self.config.signalk,
        )

    async def _on_control(self, topic: str, payload: bytes) -> None:
        request = topic.rsplit("/", 1)[-1]
        if request == "result" or self.runtime is None:
            return  # our own answers come back on the same subscription
        answer = await self.runtime.handle(request, payload, SOURCE)
        assert self.session is not None
        self.session.answer(Message(self.topic("control/result"), answer, qos=1))

    def on_control(self, run: RunView, record: ControlRecord) -> None:
        """The status a (re)connection publishes follows the world's step (ArduPilot's first
        frame may set it: StepRate, before the first tick)."""
        if self.session is not None:
            self.session.online["rate_hz"] = run.bench.rate_hz

    def on_sentences(self, device: str, lines: Sequence[bytes]) -> None:
        kept = self._sentences.get(device)
        if kept is not None:
            overflow = len(kept) + len(lines) - SENTENCES_KEPT
            if overflow > 0:
                self._sentences_dropped[device] += overflow
            kept.extend(lines)

    def on_tick(self, run: RunView, t: float) -> None:
        now = time.monotonic()
        if now < self._next_due:
            return
        truth = run.truth(t)
        boats: dict = {}  # a fleet's other boats' instants, each made once for every topic
        for name, due in self._due.items():
            if now >= due:
                self._publish_topic(name, run, truth, boats)
                period = 1.0 / self.config.topics[name].rate_hz
                self._due[name] = due + period if now - due < period else now + period
        self._next_due = min(self._due.values())

    async def stop(self, run: RunView) -> None:
        if self.session is None or self._task is None:
            return
        await self.session.close({"state": "offline", "reason": run.stop_reason})
        try:
            await asyncio.wait_for(asyncio.shield(self._task), STOP_TIMEOUT_S)
        except (TimeoutError, Exception):
            self._task.cancel()
        log.info("mirror.stop", **self.summary())

    # --- the payloads ---------------------------------------------------------------------
    def _publish_topic(self, name: str, run: RunView, truth, boats: dict) -> None:
        put, qos = self._put, self.config.topics[name].qos
        bench = run.bench
        if name == "state":
            put("state", payloads.state(truth, bench.origin), qos)
            for i, boat in enumerate(run.boats):  # a fleet's: each boat's own, the first's too
                seen = _boat_truth(run, truth, boats, i)
                put(f"boats/{boat}/state", payloads.state(seen, bench.origin), qos)
        elif name == "actuators":
            force = run.actuator_force
            put("actuators", payloads.actuators(truth, bench.vessel.actuators, force), qos)
            for i, boat in enumerate(run.boats):  # a fleet's: each boat's own, the first's too
                seen, own = _boat_truth(run, truth, boats, i), run.boat(i)
                put(
                    f"boats/{boat}/actuators",
                    payloads.actuators(seen, own.actuators, own.actuator_force),
                    qos,
                )
        elif name == "environment":
            put("environment", payloads.environment(truth, run.environment), qos)
            for i, boat in enumerate(run.boats):  # (the sea as each boat feels it)
                seen = _boat_truth(run, truth, boats, i)
                put(
                    f"boats/{boat}/environment",
                    payloads.environment(seen, run.boat(i).environment),
                    qos,
                )
        elif name == "sensors":
            for sensor, kept in self._sentences.items():
                dropped = self._sentences_dropped[sensor]
                put(f"sensors/{sensor}", payloads.sentences(truth.t, truth.utc, kept, dropped), qos)
                kept.clear()
        elif name == "bus":
            for device in run.command_devices:
                put(f"bus/{device.name}", payloads.bus(truth.t, truth.utc, device.summary()), qos)
        elif name == "stats":
            put("stats", self._stats(run, truth), qos)
        elif name == "signalk":
            base = self.config.signalk_prefix
            paths = payloads.signalk(truth, bench.origin, bench.vessel.actuators)
            assert self.store is not None
            for path, value in paths.items():
                self.store.put(Message(f"{base}/{path}", value, qos))
            if truth.traffic is not None:  # the other vessels, beside vessels/self
                others = base.rsplit("/", 1)[0] if "/" in base else base
                for path, value in signalk_paths(truth.traffic, bench.origin).items():
                    self.store.put(Message(f"{others}/{path}", value, qos))
        elif name == "traffic" and truth.traffic is not None:
            stamp = payloads.stamp(truth.t, truth.utc)
            for report in target_reports(truth.traffic, bench.origin):
                put(f"traffic/{report['name']}", {**stamp, **report}, qos)

    def _put(self, name: str, payload: object, qos: int) -> None:
        assert self.store is not None
        self.store.put(Message(self.topic(name), payload, qos))

    def _stats(self, run: RunView, truth) -> dict:
        wall, cpu = time.monotonic(), time.process_time()
        cpu_percent = 100.0 * (cpu - self._cpu[1]) / max(wall - self._cpu[0], 1e-9)
        self._cpu = (wall, cpu)
        return {
            **payloads.stamp(truth.t, truth.utc),
            **run.jitter(),
            "cpu_percent": round(cpu_percent, 2),
            "dropped_lines": run.dropped_lines,
            "received_lines": run.received_lines,
            "control_dropped": run.control_dropped,
            **{f"mqtt_{k}": v for k, v in self.summary().items()},
        }

    def describe(self) -> str:
        where = f"MQTT: {self.config.url}, topics {self.prefix}/#"
        if self.runtime is not None:
            where += f", runtime control on {self.prefix}/control/..."
        return where + f"  (mosquitto_sub -t '{self.prefix}/#' -v)"

    def summary(self) -> dict:
        s = self.session.stats if self.session is not None else None
        return {
            "published": s.published if s else 0,
            "dropped": s.dropped if s else 0,
            "superseded": self.store.superseded if self.store is not None else 0,
            "connects": s.connects if s else 0,
            "connected": s.connected if s else False,
        }
