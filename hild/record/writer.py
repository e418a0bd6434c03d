"""The recording's files, written by one thread fed through a bounded queue.

The loop only appends ``(topic, log time, payload)`` to a queue (a full queue drops and
counts); the thread wakes every FLUSH_INTERVAL_S (0.8 s), takes what has queued since, encodes
JSON, writes MCAP (whose chunk compression takes milliseconds, ecosystem.md "Recording") and
the Signal K multiplexed log of the sentences, and commits both to the disk, so that a crash or
a power cut loses less than the last second; what a kill leaves
opens with the ``mcap`` package's ``make_reader`` (hild.record.mcapfile).

A run on no clock (lockstep, `hild sim`: ``lossless``) has no tick to keep free of the
writing, so it writes in its own thread instead, a batch at a time, and loses nothing: a
second thread would only contend for the interpreter's lock (a recorded ten-minute scenario
took 19 % more CPU with the thread, 5.61 against 4.71 s: docs/benchmarks.md).

A write that fails (the disk full, a file-size limit) ends the recording, not the run: the
files go back to their last commit, the error is logged once, every message after it is
counted as lost, and ``summary`` says what happened for the run's summary and exit status.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import structlog

from hild import __version__
from hild.mirror.payloads import to_json
from hild.record import channels
from hild.record.fixes import FixReader
from hild.record.mcapfile import RECORDING, McapFile, pwrite_all
from hild.threads import name_os_thread

log = structlog.get_logger("hild.record")

# The thread commits every FLUSH_INTERVAL_S, on a fixed pace (a commit's own time does not push
# the next one back), so that a kill loses at most that interval and the batch's few
# milliseconds, and a power cut that and one fsync: within the second the recording promises
# (docs/recording.md), with a fifth of it left for a slow card's fsync. 0.8 s rather than
# 0.5: each batch pays a fixed cost for its Python run cold (about 1.4 ms), so fewer batches
# cost less (bench/bench_daemon.py --against, the four-device bench, both recording at once:
# 0.06 % of a core less, docs/benchmarks.md).
FLUSH_INTERVAL_S = 0.8
QUEUE_MESSAGES = 20_000  # a few seconds of every channel at 100 Hz: a slow disk's hiccup
# The thread takes the queue in batches, one per commit: a wake-up per message (a queue.Queue's
# get) cost more than the message (bench/bench_daemon.py: recording the four-device bench, 270
# messages a second, took 4.3 % of a core, most of it the thread's wake-ups and GIL hand-overs),
# and Python code run cold costs more the fewer messages share a wake-up (measured here, 14.7 us
# a message in batches of 0.5 s, 25-30 us in batches of 0.1 s, 7 us hot). A batch of the
# four-device bench is a few milliseconds of work, taken in the interpreter's switch intervals
# (the daemon's 0.5 ms), so a tick that wakes meanwhile waits no longer than that; the
# messages wait in memory no longer than they did for their commit.
# A lossless writer (no clock, no thread) writes once this many entries have queued (a sample's
# six messages are one entry, a device's epoch one): enough that its code runs warm, few enough
# to hold in memory (the recorded ten-minute scenario of bench_scenario.py queues 48,000, about
# 4,000 in 50 s of simulated time)
INLINE_BATCH_ENTRIES = 4_000
CHUNK_BYTES = 256 * 1024  # chunks close at a flush anyway; this bounds one chunk's compression
STOP = object()
DEFERRED = ""  # the queue's topic of a ``defer``: its payload is (build, messages)


@dataclass(frozen=True)
class RecordStats:
    written: int  # messages committed to the MCAP file
    dropped: int  # messages dropped while the recording was well: a full queue
    flushes: int
    nmea_lines: int
    lost: int = 0  # messages that never reached the file because the recording failed


@dataclass(frozen=True, slots=True)
class OpenChannel:
    """A channel of the file, and what its messages imply (worked out once, at its first)."""

    id: int
    nested: bool  # written with channels.nested
    device: str  # a /sensors/<device> channel's device ('' for others): a Signal K line, a fix
    transform: tuple[str, str] | None  # a pose's: its /tf's topic and child frame, after each


def implied(topic: str) -> int:
    """The messages one put on ``topic`` makes in the file: a pose (``/pose``, a fleet's boat's
    ``/boats/<boat>/pose``) also makes its /tf (see ``_message``). (A sentence's /fix is not
    counted when the sentence is lost: whether it would have made one takes reading it.)"""
    return 1 if channels.transform_of(topic) is None else 2


def nmea_log_path(path: Path) -> Path:
    """The Signal K multiplexed log written beside ``run.mcap``: ``run.nmea.log``."""
    return (
        path.with_name(path.stem + ".nmea.log")
        if path.suffix == ".mcap"
        else Path(str(path) + ".nmea.log")
    )


def open_output(path: Path) -> int:
    """A regular file, emptied, for writing only by this process (an advisory lock: a second
    hild recording to it, or ``hild inspect --repair`` on it, is refused)."""
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block open()
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OSError(errno.EBUSY, "being written by another hild", str(path)) from None
        os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


class RecordWriter:
    """Writes one recording: an MCAP file and, beside it, the sentences as Signal K replays them.

    ``put`` may be called from the loop's thread at any time after ``start``; it never blocks
    (unless ``lossless``).
    """

    def __init__(
        self,
        path: Path,
        metadata: dict[str, dict[str, str]],
        nmea_log: bool = True,
        lossless: bool = False,
    ):
        """``lossless``: a run on no clock (a batch run, no loop): nothing is dropped, and the
        files are written in the caller's thread, a batch at a time, not by a thread of
        their own."""
        self.path = Path(path)
        self.metadata = metadata
        self.nmea_path = nmea_log_path(self.path) if nmea_log else None
        self.lossless = lossless
        self._queue: deque = deque()  # appended by the loop, taken by the thread (atomic both)
        self._wake = threading.Event()  # the thread's: the stop
        self._thread: threading.Thread | None = None
        self._channels: dict[str, OpenChannel] = {}
        self.dropped = 0
        self.written = 0
        self.flushes = 0
        self.nmea_lines = 0
        self.lost = 0  # counted by the writer's thread
        self._refused = 0  # counted by ``put`` once the recording has failed
        self.error: str | None = None  # what failed, once it has
        self.failed_at = ""  # when (UTC, of the wall clock)
        self.complete = False  # finished with its summary (indexed)
        self._uncommitted = 0  # messages given to the MCAP file since its last commit
        self._lines: list[str] = []  # Signal K log lines since the last commit
        self._nmea_size = 0
        self._next_flush = 0.0  # the thread's: when the next commit is due (monotonic)
        self._fixes = FixReader()  # /fix/<device>, read here from /sensors/<device>
        self._files: tuple[McapFile, int] | None = None  # the MCAP file and the log's fd, open

    # --- the loop's side ----------------------------------------------------------------------
    def start(self) -> None:
        """Open the files (errors raise here, before the run) and start the thread (a lossless
        writer has none)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_output(self.path)
        nmea_fd = -1
        try:
            if self.nmea_path is not None:
                nmea_fd = open_output(self.nmea_path)
            mcap = McapFile(fd, CHUNK_BYTES, f"hild {__version__}")
            mcap.start(self.metadata)  # how the recording was made
            mcap.commit()
        except BaseException:
            for f in (fd, nmea_fd):
                if f >= 0:
                    os.close(f)
            raise
        self._files = (mcap, nmea_fd)
        self._next_flush = time.monotonic() + FLUSH_INTERVAL_S
        if self.lossless:
            return  # written by the caller (``_enqueue``, ``close``)
        self._thread = threading.Thread(target=self._run, name="hild-record", daemon=True)
        self._thread.start()

    def put(self, topic: str, log_time_ns: int, payload: object) -> bool:
        """Queue one message; False (counted) when the queue is full (never for a lossless
        writer: it writes a batch instead) or the recording has failed."""
        return self._enqueue(topic, log_time_ns, payload, implied(topic))

    def defer(
        self, log_time_ns: int, build: Callable[[], Iterable[tuple[str, object]]], messages: int
    ) -> bool:
        """Queue ``build``, which the thread calls for the (topic, payload) pairs it writes,
        all at ``log_time_ns``: a payload built off the tick from what the tick copied.
        ``messages``: how many it makes in the file (what its loss counts)."""
        return self._enqueue(DEFERRED, log_time_ns, (build, messages), messages)

    def _enqueue(self, topic: str, log_time_ns: int, payload: object, messages: int) -> bool:
        if self.error is not None:
            self._refused += messages
            return False
        if self.lossless and self._files is not None:
            self._queue.append((topic, log_time_ns, payload))
            if len(self._queue) >= INLINE_BATCH_ENTRIES:
                self._take(*self._files)
            return True
        if len(self._queue) >= QUEUE_MESSAGES:
            self.dropped += messages
            return False
        self._queue.append((topic, log_time_ns, payload))
        return True

    def declare(self, topic: str, example: dict) -> None:
        """Register a channel before its first message (a recording has every channel, even
        one that stayed silent); ``example`` shows its keys and their types."""
        self._queue.append((topic, None, example))

    def close(self, timeout_s: float = 10.0) -> RecordStats:
        """Write what is queued, finish the files (the MCAP summary) and join the thread."""
        if self.lossless and self._files is not None:
            files, self._files = self._files, None
            self._queue.append(STOP)
            self._write_out(*files)
            return self.stats()
        if self._thread is not None:
            self._queue.append(STOP)
            self._wake.set()
            self._thread.join(timeout_s)
            if self._thread.is_alive() and self.error is None:  # a disk that hangs
                self.error = (
                    f"{self.path}: not finished within {timeout_s:g} s of the stop; "
                    "it reads up to its last commit"
                )
                self.failed_at = datetime.now(UTC).isoformat(timespec="milliseconds")
                self.lost += len(self._queue) + self._uncommitted
                log.error(
                    "record.failed",
                    file=str(self.path),
                    error=self.error,
                    failed_at=self.failed_at,
                    kept_messages=self.written,
                    lost=self.lost,
                )
            self._thread = None
        return self.stats()

    def stats(self) -> RecordStats:
        return RecordStats(
            self.written, self.dropped, self.flushes, self.nmea_lines, self.lost + self._refused
        )

    def summary(self) -> dict:
        """The recording's part of the run's summary."""
        return {
            "file": str(self.path),
            "nmea_log": str(self.nmea_path or ""),
            "messages": self.written,
            "nmea_lines": self.nmea_lines,
            "dropped": self.dropped,
            "complete": self.complete,
            "error": self.error or "",
            "failed_at": self.failed_at,
            "lost": self.lost + self._refused,
        }

    # --- the thread ---------------------------------------------------------------------------
    def _run(self) -> None:
        name_os_thread("hild-record")
        assert self._files is not None
        self._write_out(*self._files)

    def _write_out(self, mcap: McapFile, nmea_fd: int) -> None:
        """Write batches until the stop, finish the files and close them."""
        try:
            while self._take(mcap, nmea_fd):
                self._wake.wait(max(0.0, self._next_flush - time.monotonic()))
                self._wake.clear()
            self._finish(mcap, nmea_fd)
        finally:
            mcap.index.close()
            for fd in (mcap.fd, nmea_fd):
                if fd >= 0:
                    os.close(fd)

    def _take(self, mcap: McapFile, nmea_fd: int) -> bool:
        """Write what has queued (in order), committing when a commit is due (a batch run's
        batch may be many seconds of messages); False once the stop is reached."""
        pending = self._queue
        for _ in range(len(pending)):  # what is there now; later messages wait their batch
            item = pending.popleft()
            if item is STOP:
                return False
            self._write(mcap, *item)
            if time.monotonic() >= self._next_flush:
                self._commit_due(mcap, nmea_fd)
        if time.monotonic() >= self._next_flush:
            self._commit_due(mcap, nmea_fd)
        return True

    def _commit_due(self, mcap: McapFile, nmea_fd: int) -> None:
        """The commit that is due, and when the next one is: FLUSH_INTERVAL_S after this one
        was due (a fixed pace), or after now if the disk took longer than that."""
        self._commit(mcap, nmea_fd)
        now = time.monotonic()
        self._next_flush = max(self._next_flush + FLUSH_INTERVAL_S, now + 0.1 * FLUSH_INTERVAL_S)
        # (a disk that took longer than the interval: the next batch soon after, not at once)

    def _write(self, mcap: McapFile, topic: str, log_time_ns: int | None, payload: object) -> None:
        if topic == DEFERRED and log_time_ns is not None:
            build, messages = cast(tuple, payload)
            if self.error is not None:
                self.lost += messages
                return
            for built_topic, built in build():
                self._message(mcap, built_topic, log_time_ns, built)
            return
        self._message(mcap, topic, log_time_ns, payload)

    def _message(
        self, mcap: McapFile, topic: str, log_time_ns: int | None, payload: object
    ) -> None:
        """One message to the MCAP file (``log_time_ns`` None: its channel declared only), and
        what it implies, built here off the tick: a sentence's line in the Signal K log and
        its fix (/fix/<device>), a pose's /tf."""
        if self.error is not None:  # failed: what was queued before the failure is lost too
            if log_time_ns is not None:
                self.lost += implied(topic)
            return
        try:
            channel = self._channels.get(topic)
            if channel is None:
                channel = self._channels[topic] = self._open_channel(mcap, topic, payload)
            if log_time_ns is None:
                return  # declared only
            if channel.nested and isinstance(payload, dict):  # here, off the tick
                payload = channels.nested(payload)
            mcap.message(channel.id, log_time_ns, to_json(payload), time.time_ns())
            self._uncommitted += 1
            if not isinstance(payload, dict):
                return
            if channel.device:  # a sensor's sentence
                sentence = payload.get("sentence", "")
                if self.nmea_path is not None:
                    # Signal K's multiplexed log: <ms since the epoch>;N;<sentence> (ecosystem.md)
                    self._lines.append(f"{log_time_ns // 1_000_000};N;{sentence}\n")
                fix = self._fixes.fix(channel.device, log_time_ns, str(sentence))
                if fix is not None:
                    self._message(mcap, channels.FIX + channel.device, log_time_ns, fix)
            elif channel.transform is not None:
                tf, child = channel.transform
                self._message(mcap, tf, log_time_ns, channels.frame_transform(payload, child))
        except Exception as e:  # noqa: BLE001 (a chunk that cannot be written: the recording
            self._fail(mcap, -1, e)  # fails, the run goes on)

    def _open_channel(self, mcap: McapFile, topic: str, payload: object) -> OpenChannel:
        """A topic's channel, its schema from its first payload (or its declared example)."""
        nested = channels.is_nested(topic)
        if nested and isinstance(payload, dict):
            payload = channels.nested(payload)
        schema_name, schema = channels.schema_for(topic, payload)
        schema_id = mcap.schema(schema_name, "jsonschema", json.dumps(schema).encode())
        device = topic[len(channels.SENSORS) :] if topic.startswith(channels.SENSORS) else ""
        return OpenChannel(
            mcap.channel(topic, "json", schema_id), nested, device, channels.transform_of(topic)
        )

    def _commit(self, mcap: McapFile, nmea_fd: int) -> None:
        """Everything since the last commit to the disk, fsynced: the MCAP file, then the
        Signal K log; a failure of either ends the recording."""
        if self.error is not None:
            return
        try:
            mcap.commit()
        except Exception as e:  # noqa: BLE001
            self._fail(mcap, -1, e)
            return
        self.written += self._uncommitted
        self._uncommitted = 0
        if nmea_fd >= 0 and self._lines:
            data = "".join(self._lines).encode("ascii", "replace")
            try:
                pwrite_all(nmea_fd, data, self._nmea_size)
                os.fsync(nmea_fd)
            except OSError as e:
                self._fail(mcap, nmea_fd, e)
                return
            self._nmea_size += len(data)
            self.nmea_lines += len(self._lines)
            self._lines.clear()
        self.flushes += 1

    def _finish(self, mcap: McapFile, nmea_fd: int) -> None:
        """The last commit, how the recording ended (the ``recording`` metadata record: a
        failed recording never reads as a finished one) and the MCAP summary (also after a
        failure: the file is indexed up to it when the disk has room for that; it stays
        readable, and reads as cut short, if not)."""
        failed = self.error is not None
        self._commit(mcap, nmea_fd)
        try:
            mcap.metadata(RECORDING, self.ending(failed))
            mcap.finish()
            self.complete = True
        except Exception as e:  # noqa: BLE001
            if not failed:
                self._fail(mcap, -1, e)
            else:
                self._restore(mcap)
        if self.complete:
            self.flushes += 1

    def ending(self, failed: bool) -> dict[str, str]:
        """The ``recording`` metadata record a stopping writer leaves: ``status`` finished or
        failed, with the counts and, for a failure, what failed and when."""
        info = {
            "status": "failed" if failed else "finished",
            "messages": str(self.written),
            "dropped": str(self.dropped),
        }
        if failed:
            info.update(
                error=self.error or "",
                failed_at=self.failed_at,
                lost=str(self.lost + self._refused),
            )
        return info

    def _fail(self, mcap: McapFile, nmea_fd: int, e: Exception) -> None:
        """The recording stops here: the files back to their last commit, the error kept and
        logged (once: nothing is written after it)."""
        what = self.nmea_path if nmea_fd >= 0 else self.path
        reason = (e.strerror or str(e)) if isinstance(e, OSError) else f"{type(e).__name__}: {e}"
        self.error = f"{what}: {reason}"
        self.failed_at = datetime.now(UTC).isoformat(timespec="milliseconds")
        self.lost += self._uncommitted if nmea_fd < 0 else 0
        self._uncommitted = 0
        self._lines.clear()
        self._restore(mcap)
        if nmea_fd >= 0:
            with contextlib.suppress(OSError):
                os.ftruncate(nmea_fd, self._nmea_size)  # no torn line at its end
        log.error(
            "record.failed",
            file=str(what),
            error=reason,
            failed_at=self.failed_at,
            kept_messages=self.written,
            lost=self.lost,
            hint="the run goes on without its recording; the file keeps what was "
            "written before (hild inspect)",
        )

    def _restore(self, mcap: McapFile) -> None:
        with contextlib.suppress(OSError):  # if not, `hild inspect --repair` mends the file
            mcap.restore()
