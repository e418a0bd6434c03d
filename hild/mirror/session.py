"""One MQTT session at a time: connect, announce, drain the store, reconnect with back-off.

aiomqtt's ``publish`` waits for the bytes to reach the socket, and QoS 0 packets that cannot
be written pile up in paho's queue without bound, so nothing here ever waits long: each
publish has a short timeout and a failure drops and counts the message. A broker that stops
reading is dropped by the keepalive (paho closes the socket after 1.5 to 2 keepalives without
an answer), and a reconnect clears paho's queue, so a stalled broker costs a bounded amount
of memory (facts: shared/reference/ecosystem.md, "MQTT client").
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiomqtt
import paho.mqtt.client as mqtt
import structlog

from hild.log import RateLimited
from hild.mirror.config import MirrorConfig, tls_context
from hild.mirror.payloads import to_json
from hild.mirror.store import LatestStore, Message

log = structlog.get_logger("hild.mirror")

# control answers waiting for the broker: while this many wait, no further control message is
# taken (the broker's and the client's queues hold them): every request is answered, none is
# dropped (a deque of 64 that dropped its oldest left 127 of 200 quick requests unanswered)
RESULTS_KEPT = 64
ControlHandler = Callable[[str, bytes], Awaitable[None]]


@dataclass
class SessionStats:
    published: int = 0
    dropped: int = 0  # messages a failed or timed-out publish lost
    connects: int = 0
    connect_failures: int = 0
    connected: bool = False


def encode(payload: object) -> bytes:
    """What is published: bytes as they are, text as UTF-8, anything else as its JSON (a NaN
    as null: the json module's strict mode raised on a diverged state's NaN position, which
    ended the session with the status left reading online)."""
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, str):
        return payload.encode()
    return to_json(payload)


class Session:
    """Owns the aiomqtt client; ``run`` until ``close``."""

    def __init__(
        self,
        config: MirrorConfig,
        store: LatestStore,
        status_topic: str,
        online: dict,
        control_topic: str | None = None,
        on_control: ControlHandler | None = None,
    ):
        self.config = config
        self.store = store
        self.status_topic = status_topic
        self.online = online
        self.control_topic = control_topic
        self.on_control = on_control
        self.stats = SessionStats()
        self.results: collections.deque[Message] = collections.deque()
        self._results_room = asyncio.Event()  # set while fewer than RESULTS_KEPT wait
        self._results_room.set()
        self._closing = asyncio.Event()
        self._offline: dict | None = None
        self._log_error = RateLimited(log, "mirror.broker_error")
        self._log_unencodable = RateLimited(log, "mirror.unencodable", level="error")
        will = aiomqtt.Will(status_topic, encode({"state": "offline", "reason": "lost"}), 1, True)
        self.client = aiomqtt.Client(
            config.host,
            config.port,
            username=config.username,
            password=config.password,
            identifier=config.client_id or None,
            keepalive=config.keepalive_s,
            will=will,
            tls_context=self._tls(),
            timeout=config.timeout_s,
        )

    def _tls(self) -> ssl.SSLContext | None:
        return tls_context(self.config)

    def answer(self, message: Message) -> None:
        """Queue a control answer (published before the telemetry, at its own QoS). Never
        dropped: the control reader waits for room before it takes the next request."""
        self.results.append(message)
        if len(self.results) >= RESULTS_KEPT:
            self._results_room.clear()
        self.store.ready.set()

    async def _publish_results(self) -> None:
        """The answers waiting, oldest first; one whose publish finds the client disconnected
        (raised: the session reconnects) stays first, for the next connection."""
        while self.results:
            try:
                await self._publish(self.results[0])
            except aiomqtt.MqttCodeError as e:
                if e.rc != mqtt.MQTT_ERR_NO_CONN:  # (this answer's own fault: never kept)
                    self.results.popleft()
                raise
            self.results.popleft()
            if len(self.results) < RESULTS_KEPT:
                self._results_room.set()

    async def run(self) -> None:
        delay = self.config.reconnect_min_s
        while not self._closing.is_set():
            try:
                async with self.client:
                    self.stats.connects += 1
                    self.stats.connected = True
                    delay = self.config.reconnect_min_s
                    log.info("mirror.connected", broker=self.config.url)
                    await self._publish(Message(self.status_topic, self.online, 1, True))
                    await self._serve()
            except aiomqtt.MqttError as e:
                self.stats.connect_failures += not self.stats.connected
                self._log_error(None, broker=self.config.url, error=str(e), retry_s=delay)
                self._close_socket()
            except OSError as e:  # TLS or socket trouble outside aiomqtt's own wrapping
                self._log_error(None, broker=self.config.url, error=str(e), retry_s=delay)
            finally:
                if self.stats.connected:
                    log.info("mirror.disconnected", broker=self.config.url)
                self.stats.connected = False
            if self._closing.is_set():
                break
            self._drop_waiting()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), delay)
            delay = min(2.0 * delay, self.config.reconnect_max_s)

    async def _serve(self) -> None:
        """Drain the store until closing; read control messages alongside."""
        reader = None
        if self.control_topic is not None:
            await self.client.subscribe(self.control_topic, qos=1)
            reader = asyncio.create_task(self._read_control())
        try:
            while not self._closing.is_set():
                if reader is not None and reader.done():
                    reader.result()  # the connection's error, if it ended with one
                    raise aiomqtt.MqttError("control subscription ended")
                try:
                    await asyncio.wait_for(self.store.ready.wait(), 1.0)
                except TimeoutError:
                    continue
                await self._publish_results()
                for message in self.store.take():
                    await self._publish(message)
            if self._offline is not None:
                await self._publish_results()
                await self._publish(Message(self.status_topic, self._offline, 1, True))
        finally:
            if reader is not None:
                reader.cancel()

    async def _read_control(self) -> None:
        assert self.on_control is not None
        async for message in self.client.messages:
            payload = message.payload
            if not isinstance(payload, bytes | bytearray):
                payload = str(payload).encode()
            await self.on_control(str(message.topic), bytes(payload))
            await self._results_room.wait()  # (the answers before it published, or most)

    async def _publish(self, message: Message) -> None:
        """One publish with the short timeout; a timeout drops the message (counted), as does
        a payload JSON cannot carry (logged).

        Raises MqttCodeError when the client is not connected, so that ``run`` reconnects.
        """
        try:
            data = encode(message.payload)
        except TypeError as e:  # (orjson's JSONEncodeError): this message is lost, not the
            self.stats.dropped += 1  # session, which would leave the status reading online
            self._log_unencodable(None, topic=message.topic, error=str(e))
            return
        try:
            await self.client.publish(
                message.topic, data, message.qos, message.retain, timeout=self.config.timeout_s
            )
            self.stats.published += 1
        except aiomqtt.MqttCodeError:
            self.stats.dropped += 1
            raise
        except aiomqtt.MqttError as e:
            self.stats.dropped += 1
            self._log_error(None, broker=self.config.url, error=str(e), topic=message.topic)

    def _close_socket(self) -> None:
        """Close what a failed attempt left open, here on the loop's thread.

        A connect that timed out (a broker that never answers) leaves paho's socket open, its
        reader registered and aiomqtt's housekeeping task running; the next attempt would
        close it from aiomqtt's connect thread, unregistering the reader from outside the
        loop's thread. Closing it now, on the loop's thread, leaves nothing to race.
        """
        close = getattr(self.client._client, "_sock_close", None)  # paho 2.x
        if close is not None:
            with contextlib.suppress(Exception):
                close()

    def _drop_waiting(self) -> None:
        """While disconnected, telemetry is not kept: only the newest matters when back."""
        self.stats.dropped += len(self.store.take())

    async def close(self, offline: dict, timeout_s: float = 2.0) -> None:
        """Publish ``offline`` (retained) if connected, disconnect, and end ``run``."""
        self._offline = offline
        self._closing.set()
        self.store.ready.set()
