"""The recording's files, written by one thread fed through a bounded queue.

The loop only puts ``(topic, log time, payload)`` on the queue (a full queue drops and counts);
the thread encodes JSON, writes MCAP (whose chunk compression takes milliseconds, ecosystem.md
"Recording") and the Signal K multiplexed log of the sentences, and flushes both to the disk at
least every FLUSH_INTERVAL_S, so that a crash or a power cut loses at most that much.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import structlog
from mcap.writer import CompressionType, Writer

from hild.record import channels

log = structlog.get_logger("hild.record")

FLUSH_INTERVAL_S = 0.5  # well within the second the issue allows to be lost
QUEUE_MESSAGES = 20_000  # a few seconds of every channel at 100 Hz: a slow disk's hiccup
CHUNK_BYTES = 256 * 1024  # chunks close at a flush anyway; this bounds one chunk's compression
STOP = object()


@dataclass(frozen=True)
class RecordStats:
    written: int
    dropped: int
    flushes: int
    nmea_lines: int


def nmea_log_path(path: Path) -> Path:
    """The Signal K multiplexed log written beside ``run.mcap``: ``run.nmea.log``."""
    return (
        path.with_name(path.stem + ".nmea.log")
        if path.suffix == ".mcap"
        else Path(str(path) + ".nmea.log")
    )


class RecordWriter:
    """Writes one recording: an MCAP file and, beside it, the sentences as Signal K replays them.

    ``put`` may be called from the loop's thread at any time after ``start``; it never blocks
    (unless ``lossless``).
    """

    def __init__(
        self, path: Path, metadata: dict[str, dict[str, str]], nmea_log: bool = True,
        lossless: bool = False,
    ):  # fmt: skip
        """``lossless``: ``put`` waits for room instead of dropping (a batch run, no loop)."""
        self.path = Path(path)
        self.metadata = metadata
        self.nmea_path = nmea_log_path(self.path) if nmea_log else None
        self.lossless = lossless
        self._queue: queue.Queue = queue.Queue(maxsize=QUEUE_MESSAGES)
        self._thread: threading.Thread | None = None
        self._channels: dict[str, int] = {}
        self.dropped = 0
        self.written = 0
        self.flushes = 0
        self.nmea_lines = 0
        self.error: str | None = None

    # --- the loop's side ----------------------------------------------------------------------
    def start(self) -> None:
        """Open the files (errors raise here, before the run) and start the thread."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        stream = open(self.path, "wb")  # noqa: SIM115 (the thread owns and closes it)
        nmea = open(self.nmea_path, "w", encoding="ascii") if self.nmea_path else None  # noqa: SIM115
        writer = Writer(stream, chunk_size=CHUNK_BYTES, compression=CompressionType.ZSTD)
        writer.start(profile="", library="hild")
        for name, data in self.metadata.items():  # how the recording was made
            writer.add_metadata(name, data)
        writer.flush()
        self._thread = threading.Thread(
            target=self._run, args=(writer, stream, nmea), name="hild-record", daemon=True
        )
        self._thread.start()

    def put(self, topic: str, log_time_ns: int, payload: object) -> bool:
        """Queue one message; False (counted) when the queue is full (lossless: wait)."""
        try:
            self._queue.put((topic, log_time_ns, payload), block=self.lossless)
        except queue.Full:
            self.dropped += 1
            return False
        return True

    def declare(self, topic: str, example: dict) -> None:
        """Register a channel before its first message (a recording has every channel, even
        one that stayed silent); ``example`` shows its keys and their types."""
        self._queue.put((topic, None, example))

    def close(self, timeout_s: float = 10.0) -> RecordStats:
        """Write what is queued, finish the files (the MCAP summary) and join the thread."""
        if self._thread is not None:
            self._queue.put(STOP)
            self._thread.join(timeout_s)
            self._thread = None
        return self.stats()

    def stats(self) -> RecordStats:
        return RecordStats(self.written, self.dropped, self.flushes, self.nmea_lines)

    # --- the thread ---------------------------------------------------------------------------
    def _run(self, writer: Writer, stream, nmea) -> None:
        next_flush = time.monotonic() + FLUSH_INTERVAL_S
        try:
            while True:
                timeout = max(next_flush - time.monotonic(), 0.0)
                try:
                    item = self._queue.get(timeout=timeout)
                except queue.Empty:
                    item = None
                if item is STOP:
                    break
                if item is not None:
                    self._write(writer, nmea, *item)
                    time.sleep(0)  # let the loop's thread take the GIL between two messages
                if time.monotonic() >= next_flush:
                    self._flush(writer, stream, nmea)
                    next_flush = time.monotonic() + FLUSH_INTERVAL_S
            writer.finish()
            self._flush(writer, stream, nmea, finished=True)
        except Exception as e:  # a full disk: the run goes on, the recording stops (logged)
            self.error = f"{type(e).__name__}: {e}"
            log.error("record.failed", file=str(self.path), error=self.error)
            self._drain_forever()
        finally:
            stream.close()
            if nmea is not None:
                nmea.close()

    def _write(
        self, writer: Writer, nmea, topic: str, log_time_ns: int | None, payload: object
    ) -> None:
        channel = self._channels.get(topic)
        if channel is None:
            schema_name, schema = channels.schema_for(topic, payload)
            schema_id = writer.register_schema(
                schema_name, "jsonschema", json.dumps(schema).encode()
            )
            channel = writer.register_channel(topic, "json", schema_id)
            self._channels[topic] = channel
        if log_time_ns is None:
            return  # declared only
        try:
            data = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode()
        except ValueError:  # a NaN has no JSON: the message is counted, not written
            self.dropped += 1
            return
        writer.add_message(channel, log_time_ns, data, time.time_ns())
        self.written += 1
        if nmea is not None and topic.startswith(channels.SENSORS):
            # Signal K's multiplexed log: <ms since the epoch>;N;<sentence> (ecosystem.md)
            sentence = payload["sentence"] if isinstance(payload, dict) else ""
            nmea.write(f"{log_time_ns // 1_000_000};N;{sentence}\n")
            self.nmea_lines += 1

    def _flush(self, writer: Writer, stream, nmea, finished: bool = False) -> None:
        if not finished:
            writer.flush()  # closes the chunk in progress: readable after a crash
        stream.flush()
        os.fsync(stream.fileno())
        if nmea is not None:
            nmea.flush()
            os.fsync(nmea.fileno())
        self.flushes += 1

    def _drain_forever(self) -> None:
        while self._queue.get() is not STOP:
            self.dropped += 1
