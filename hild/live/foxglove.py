"""`hild run --foxglove [HOST:]PORT`: the run live in Foxglove (or Lichtblick), over the Foxglove
WebSocket protocol served by the ``foxglove-sdk`` package.

The topics, schema names and payloads are the recording's (hild/record/channels.py: the
recorder's own builders), so a layout made on a recording works live and back: ``/tf`` gives
the 3D panel its frames with no set-up, ``/fix/<device>`` the map each fix a GPS sent; a
fleet's every boat has its own ``/boats/<boat>/`` state, actuators, location, pose and tf
(``ned`` -> ``<boat>/vessel``), declared before the first tick (hild/record/events.py).
Runtime control is offered as services ``/control/<request>`` (weather, fault, reposition,
commands, traffic): a call's JSON payload is the MQTT control topic's request, its response
the same answer (one RuntimeControl, hild/runtime.py).

What the SDK (foxglove-sdk 0.30.3) does, as relied on here (its docstrings in
foxglove/__init__.py, foxglove/channel.py and _foxglove_py/websocket.pyi; checked by hand
against the server):

- ``start_server(host, port, capabilities, services, supported_encodings, context, ...)``
  serves on its own (Rust, tokio) threads; ``port`` 0 picks a free one (``server.port``).
- It negotiates the subprotocol ``foxglove.sdk.v1``: a client that offers it (alone or with
  ``foxglove.websocket.v1``, as today's Foxglove app and Lichtblick do) is answered with
  it. A client that offers ``foxglove.websocket.v1`` only is refused (HTTP 400): this SDK
  gives no way to accept the older name alone.
- ``Channel(topic, schema=dict, context=...)`` is a JSON channel whose schema name is the
  dict's ``title``; ``Channel.log(dict, log_time=ns)`` serialises and hands the message to
  each subscribed client's queue and returns (``message_backlog_size``, 1024 by default,
  per client: the oldest data message is dropped when a slow client's queue is full), so a
  log never waits for a viewer. ``Channel.has_sinks()`` is true while a client subscribes:
  nothing is built for a channel no one watches.
- A service's handler is called on one of the SDK's threads, not the caller's, and may
  block it without holding up messages on the channels: the handler here hands the request
  to the daemon's loop and waits for its answer there.
- A ``server_listener`` is told of subscriptions (``on_subscribe``, ``on_unsubscribe``: the
  latter once per subscribed channel when its client disconnects, cleanly or not), on the
  SDK's threads; the SDK tells of no connection as such. So the viewers counted here
  (``viewers``, shown by ``hild ctl status`` and the status line) are the clients subscribed
  to at least one topic: a client that only calls services, or has opened no panel, is not
  one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import json
import logging
import threading
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

import structlog

from hild.clock import JitterStats
from hild.live.address import FOXGLOVE_HOST, FOXGLOVE_PORT
from hild.mirror import payloads
from hild.observers import TickObserver
from hild.record import channels, events, fixes
from hild.record.config import DEFAULT_RATE_HZ
from hild.record.observer import STATS_PERIOD_S, utc_ns
from hild.runtime import REQUESTS
from hild.traffic.report import target_reports

if TYPE_CHECKING:
    from foxglove.websocket import ServerListener

    from hild.control import ActuatorCommand, ControlRecord
    from hild.observers import BoatView, RuntimeRequests, RunView
    from hild.transport.base import Inbound

log = structlog.get_logger("hild.foxglove")

SOURCE = "foxglove:control"  # the requests' source in the recording: foxglove:control/weather
SERVICE_PREFIX = "/control/"
CALL_TIMEOUT_S = 10.0  # a service call the loop has not answered by then is answered an error
SAMPLED = (
    channels.STATE,
    channels.ACTUATORS,
    channels.ENVIRONMENT,
    channels.LOCATION,
    channels.POSE,
    channels.TF,
)


def service_schema(request: str) -> dict:
    return {"title": f"hild.control.{request}", "type": "object"}


class ViewerCount:
    """The server's listener: counts the clients subscribed to at least one channel (see the
    module). Called on the SDK's threads, which share a lock among themselves; ``count`` is a
    plain int, assigned whole, that any thread (the tick's too) reads without the lock."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()
        self._channels: dict[int, set[int]] = {}  # client id -> the channels it subscribes to

    def on_subscribe(self, client: Any, channel: Any) -> None:
        with self._lock:
            self._channels.setdefault(client.id, set()).add(channel.id)
            self.count = len(self._channels)

    def on_unsubscribe(self, client: Any, channel: Any) -> None:
        with self._lock:
            subscribed = self._channels.get(client.id)
            if subscribed is not None:
                subscribed.discard(channel.id)
                if not subscribed:
                    del self._channels[client.id]
            self.count = len(self._channels)


class FoxgloveLive(TickObserver):
    """Serves the run over the Foxglove WebSocket protocol while it runs."""

    def __init__(
        self, host: str = FOXGLOVE_HOST, port: int = FOXGLOVE_PORT, rate_hz: float = DEFAULT_RATE_HZ
    ):
        self.host = host
        self.port = port
        self.rate_hz = rate_hz
        self.server: Any = None
        self.runtime: RuntimeRequests | None = None
        self._fox: Any = None  # the foxglove module, imported only for a run that serves
        self._context: Any = None
        self._channels: dict[str, Any] = {}
        self._run: RunView | None = None
        # a fleet's boats (the first included) and each one's own topics (channels.PER_BOAT)
        self._boats: tuple[tuple[BoatView, tuple[str, ...]], ...] = ()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._every = 1
        self._tick = 0
        self._stats_due = STATS_PERIOD_S
        self._window = JitterStats()
        self._fixes = fixes.FixReader()
        self.calls = 0
        self.logged = 0
        self._viewers = ViewerCount()

    @property
    def viewers(self) -> int:
        """The clients watching now: subscribed to at least one topic (never waits)."""
        return self._viewers.count

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}"

    # --- start and stop ------------------------------------------------------------------------
    async def start(self, run: RunView) -> None:
        import foxglove  # (a run without --foxglove never loads the SDK)
        from foxglove.websocket import Capability

        self._fox = foxglove
        self._run = run
        self._loop = asyncio.get_running_loop()
        self._every = max(1, round(run.bench.rate_hz / self.rate_hz))
        self._boats = tuple(
            (run.boat(i), tuple(channels.boat_topic(name, c) for c in channels.PER_BOAT))
            for i, name in enumerate(run.boats)
        )
        self._context = foxglove.Context()  # its own: nothing else logs to this server
        self.runtime = run.runtime_control
        services = [self._service(request) for request in REQUESTS]
        try:
            self.server = foxglove.start_server(
                name=f"hild {run.bench.name}",
                host=self.host,
                port=self.port,
                capabilities=[Capability.Services],
                supported_encodings=["json"],
                services=services,
                context=self._context,
                # (the SDK calls only the listener's methods it has: these two)
                server_listener=cast("ServerListener", self._viewers),
            )
        except Exception as e:  # the SDK raises its own error type (an address in use, ...)
            code = errno.EADDRINUSE if "in use" in str(e).lower() else errno.EADDRNOTAVAIL
            raise OSError(code, f"--foxglove {self.host}:{self.port}: {e}") from None
        self.port = self.server.port  # the one it took for port 0 (the server reads 0 once stopped)
        # a viewer that vanishes without a goodbye is the SDK's error; here, just a viewer gone
        logging.getLogger("foxglove.websocket.connected_client").setLevel(logging.CRITICAL)
        self._declare(run)
        log.info("foxglove.listening", url=self.url, services=len(services))

    def _declare(self, run: RunView) -> None:
        """The channels whose keys are known before the first tick (the recorder's); the
        sampled ones open with their first payload, as the recorder's do."""
        for topic, example in events.declared(run):
            self._open(topic, example)

    def _open(self, topic: str, payload: dict) -> Any:
        _, schema = channels.schema_for(topic, payload)
        channel = self._fox.Channel(topic, schema=schema, context=self._context)
        self._channels[topic] = channel
        return channel

    async def stop(self, run: RunView) -> None:
        if self.server is not None:
            await asyncio.to_thread(self.server.stop)
            log.info("foxglove.stop", url=self.url, calls=self.calls, logged=self.logged)

    def describe(self) -> str | None:
        if self.server is None:
            return None
        return (
            f"Foxglove: {self.url} (open a connection there in Foxglove or Lichtblick; hild "
            "layout > hild-layout.json for a layout), runtime control as services /control/..."
        )

    def summary(self) -> dict:
        if self.server is None:
            return {}
        return {"foxglove": {"url": self.url, "calls": self.calls, "logged": self.logged}}

    # --- logging -------------------------------------------------------------------------------
    def _log(self, topic: str, ns: int, payload: dict) -> None:
        """Log ``payload`` on ``topic`` (opening it with its first payload): never waits."""
        channel = self._channels.get(topic)
        if channel is None:
            channel = self._open(topic, payload)
        channel.log(payload, log_time=ns)
        self.logged += 1

    def _watched(self, topic: str) -> bool:
        """Whether a client subscribes to ``topic`` (a channel not yet open is opened)."""
        channel = self._channels.get(topic)
        return channel is None or bool(channel.has_sinks())

    def _now(self) -> tuple[float, Any, int]:
        run = self._run
        assert run is not None and run.start_utc is not None
        t = run.t
        utc = run.start_utc + timedelta(seconds=t)
        return t, utc, utc_ns(utc)

    def on_tick(self, run: RunView, t: float) -> None:
        if self.server is None:
            return
        self._window.add(run.late_s, run.tick_period_s)
        self._tick += 1
        if self._tick % self._every == 0:
            if any(self._watched(c) for c in SAMPLED):
                self._sample(run, t)
            for boat, topics in self._boats:  # (a fleet's: each boat's own channels)
                if any(self._watched(topic) for topic in topics):
                    self._sample_boat(run, t, boat, topics)
        if t + 1e-9 >= self._stats_due:
            self._stats_due += STATS_PERIOD_S
            self._stats(run, t)

    def _sample(self, run: RunView, t: float) -> None:
        """The recorder's ``sample``: the truth's channels at one instant, and /tf."""
        truth = run.truth(t)
        ns = utc_ns(truth.utc)
        state = payloads.state(truth, run.bench.origin)
        if self._watched(channels.STATE):
            self._log(channels.STATE, ns, channels.nested(state))
        if self._watched(channels.ACTUATORS):
            self._log(
                channels.ACTUATORS,
                ns,
                channels.nested(
                    payloads.actuators(truth, run.bench.vessel.actuators, run.actuator_force)
                ),
            )
        if self._watched(channels.ENVIRONMENT):
            self._log(
                channels.ENVIRONMENT,
                ns,
                channels.nested(payloads.environment(truth, run.environment)),
            )
        if self._watched(channels.LOCATION):
            self._log(
                channels.LOCATION,
                ns,
                channels.location_fix(
                    ns,
                    cast(float, state["latitude"]),
                    cast(float, state["longitude"]),
                    cast(float, state["height"]),
                ),
            )
        if self._watched(channels.POSE) or self._watched(channels.TF):
            pose = channels.pose_in_frame(ns, truth.eta)
            self._log(channels.POSE, ns, pose)
            self._log(channels.TF, ns, channels.frame_transform(pose))

    def _sample_boat(self, run: RunView, t: float, boat: BoatView, topics: tuple[str, ...]) -> None:
        """A fleet's boat's own channels (the recording's builder, events.boat_messages) and
        its /tf, those a client subscribes to."""
        assert run.start_utc is not None
        utc = run.start_utc + timedelta(seconds=t)
        built = events.boat_messages(
            t,
            utc,
            boat.x.copy(),
            boat.act_state.copy(),
            boat.act_cmd.copy(),
            boat.actuator_force.copy(),
            run.bench.origin,
            boat.actuators,
            boat.name,
        )
        ns = utc_ns(utc)
        for topic, payload in built:
            if self._watched(topic):
                nested = channels.is_nested(topic)
                self._log(topic, ns, channels.nested(payload) if nested else payload)
            transform = channels.transform_of(topic)
            if transform is not None and self._watched(transform[0]):
                self._log(transform[0], ns, channels.frame_transform(payload, transform[1]))

    def _stats(self, run: RunView, t: float) -> None:
        _, utc, ns = self._now()
        self._log(
            channels.STATS,
            ns,
            {**payloads.stamp(t, utc), **self._window.summary(), "record_dropped": 0},
        )
        self._window.reset()
        traffic = run.traffic() if self._watched(channels.TRAFFIC) else None
        if traffic is not None:
            reports = target_reports(traffic, run.bench.origin)
            self._log(channels.TRAFFIC, ns, {**payloads.stamp(t, utc), "targets": reports})

    def on_sentences(self, device: str, lines: Sequence[bytes]) -> None:
        topic = channels.SENSORS + device
        fix_topic = channels.FIX + device
        if self.server is None:
            return
        sentences, fixes_watched = self._watched(topic), self._watched(fix_topic)
        if not (sentences or fixes_watched):
            return
        t, utc, ns = self._now()
        for message in events.sentences(payloads.stamp(t, utc), lines):
            if sentences:
                self._log(topic, ns, message)
            fix = self._fixes.fix(device, ns, str(message["sentence"])) if fixes_watched else None
            if fix is not None:
                self._log(fix_topic, ns, fix)

    def on_received(
        self,
        device: str,
        inbound: Inbound,
        command: ActuatorCommand | None,
        rejected: tuple[str, str] | None,
    ) -> None:
        topic = channels.BUS + device
        if self.server is None or not self._watched(topic):
            return
        t, utc, ns = self._now()
        self._log(topic, ns, events.bus_line(payloads.stamp(t, utc), inbound, command, rejected))

    def on_control(self, run: RunView, record: ControlRecord) -> None:
        """As the recorder (hild/record/events.py)."""
        if self.server is None:
            return
        self._every = max(1, round(run.bench.rate_hz / self.rate_hz))  # (a StepRate's)
        t, utc, ns = self._now()
        event = events.control(payloads.stamp(t, utc), record)
        if event is not None:
            self._log(event[0], ns, event[1])

    def on_request(self, run: RunView, request: str, source: str, sent: dict, answer: dict) -> None:
        if self.server is None:
            return
        t, utc, ns = self._now()
        message = events.request(payloads.stamp(t, utc), request, source, sent, answer)
        self._log(channels.CONTROL, ns, message)

    # --- services: runtime control -------------------------------------------------------------
    def _service(self, request: str) -> Any:
        fox = self._fox
        schema = fox.Schema(
            name=f"hild.control.{request}",
            encoding="jsonschema",
            data=json.dumps(service_schema(request)).encode(),
        )
        message = fox.MessageSchema(encoding="json", schema=schema)
        return fox.Service(
            SERVICE_PREFIX + request,
            schema=fox.ServiceSchema(f"hild.control.{request}", request=message, response=message),
            handler=lambda call: self._call(request, call.payload),
        )

    def _call(self, request: str, payload: bytes) -> bytes:
        """On the SDK's thread: the request handled on the daemon's loop; its answer."""
        self.calls += 1
        loop = self._loop
        if loop is None or loop.is_closed():
            return json.dumps(
                {"ok": False, "request": request, "error": "the run has ended"}
            ).encode()
        assert self.runtime is not None
        handling = self.runtime.handle(request, bytes(payload), SOURCE)
        future = asyncio.run_coroutine_threadsafe(handling, loop)
        try:
            answer = future.result(CALL_TIMEOUT_S)
        except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError, RuntimeError):
            future.cancel()
            answer = {"ok": False, "request": request, "error": "no answer from the run"}
        return json.dumps(answer).encode()
