"""Reading a recording back, whole or cut short by a crash.

The file is read as a stream of records, in order, needing no summary at its end, so a file
whose writer was killed reads back up to its last flush, and so does a file some other writer
left without its footer (ecosystem.md "Recording": the seeking reader finds nothing in it).
"""

from __future__ import annotations

import json
import os
import struct
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mcap.exceptions import McapError
from mcap.records import Channel, Footer, Message, Metadata, Schema
from mcap.stream_reader import StreamReader

from hild.config import MISSING, ConfigError, open_regular
from hild.record.mcapfile import RECORDING


@dataclass(frozen=True)
class RecordedMessage:
    topic: str
    log_time_ns: int
    payload: dict


@dataclass
class Contents:
    """What a recording holds: message counts per channel, its time span, how it was made."""

    file: str
    counts: Counter = field(default_factory=Counter)
    channels: list[str] = field(default_factory=list)
    schemas: dict[str, str] = field(default_factory=dict)
    first_ns: int | None = None
    last_ns: int | None = None
    metadata: dict[str, dict[str, str]] = field(default_factory=dict)
    complete: bool = True  # False: the writer stopped before finishing (a crash): no index
    # where the data stopped reading as MCAP (about: the stream's position), when it did
    # before its end; in a file that ends finished and indexed, bytes damaged since
    unreadable_at: int | None = None
    indexed: bool = False  # it ends with a footer that names a summary

    @property
    def ending(self) -> dict[str, str]:
        """How the recording ended (the ``recording`` metadata record: status finished, failed
        or cut short); empty for a file cut short, or one made before hild wrote it."""
        return self.metadata.get(RECORDING, {})

    @property
    def duration_s(self) -> float:
        if self.first_ns is None or self.last_ns is None:
            return 0.0
        return (self.last_ns - self.first_ns) / 1e9


def _open(path: Path):
    return open_regular(path, "recording")  # (closed by the callers' with)


READ_ERRORS = (McapError, EOFError, ValueError, KeyError, struct.error)


def _stream(path: Path, stream, contents: Contents, topics: set[str] | None):
    """Every message of ``topics`` (None: all), in file order, filling ``contents``; a file
    that ends early (no footer) stops where its flushed data ends."""
    channel_topics: dict[int, str] = {}
    schema_names: dict[int, str] = {}
    seen_any = False
    try:
        for record in StreamReader(stream, skip_magic=False).records:
            seen_any = True
            if isinstance(record, Schema):
                schema_names[record.id] = record.name
            elif isinstance(record, Channel):
                channel_topics[record.id] = record.topic
                if record.topic not in contents.channels:
                    contents.channels.append(record.topic)
                    contents.schemas[record.topic] = schema_names.get(record.schema_id, "")
            elif isinstance(record, Metadata):
                contents.metadata[record.name] = dict(record.metadata)
            elif isinstance(record, Message):
                topic = channel_topics[record.channel_id]
                contents.counts[topic] += 1
                t = record.log_time
                contents.first_ns = t if contents.first_ns is None else min(contents.first_ns, t)
                contents.last_ns = t if contents.last_ns is None else max(contents.last_ns, t)
                if (
                    topics is None
                    or topic in topics
                    or any(topic.startswith(p) for p in topics if p.endswith("/"))
                ):
                    yield RecordedMessage(topic, t, json.loads(record.data))
            elif isinstance(record, Footer):  # summary_start 0: a commit's ending, unfinished
                contents.complete = record.summary_start != 0
                return
    except READ_ERRORS as e:
        if not seen_any:
            raise ConfigError(path, "", MISSING, f"an MCAP recording ({e})") from None
        contents.unreadable_at = stream.tell()
    contents.complete = False


def messages(path: Path, topics: Iterable[str] | None = None) -> Iterator[RecordedMessage]:
    """The messages in the order written, of the given topics (``/sensors/`` takes all under
    it) or all; a file cut short yields what was flushed."""
    path = Path(path)
    with _open(path) as stream:
        yield from _stream(path, stream, Contents(str(path)), set(topics) if topics else None)


def head(path: Path) -> Contents:
    """What the file says before its first message: how it was made (its metadata), and the
    channels declared by then (a daemon's recording declares them all before its first tick)."""
    path = Path(path)
    contents = Contents(str(path))
    with _open(path) as stream:
        for _ in _stream(path, stream, contents, None):
            break
    return contents


def inspect(path: Path) -> Contents:
    """Counts per channel, time span, the run's metadata, and whether the file is complete."""
    path = Path(path)
    contents = Contents(str(path))
    with _open(path) as stream:
        for _ in _stream(path, stream, contents, set()):
            pass
        if contents.unreadable_at is not None:
            from hild.record.repair import is_complete

            contents.indexed = is_complete(stream.fileno(), os.fstat(stream.fileno()).st_size)
    return contents


def status(contents: Contents) -> str:
    """Whether the recording is whole: finished by its writer, failed part-way, or cut short
    (indexed since by hild recover or --repair, or not)."""
    if contents.unreadable_at is not None and contents.indexed:
        return (f"DAMAGED: its data stops reading as MCAP near byte {contents.unreadable_at}, "
                "though the file was finished and indexed (not a crash: bytes changed since); "
                "hild reads it up to there (the mcap package's indexed reader, make_reader, "
                "may reach the chunks after)")  # fmt: skip
    if not contents.complete:
        return (f"cut short (its writer never finished it: read up to its last flush, with no "
                f"index); `hild recover {contents.file}` writes a finished copy beside it, "
                "`hild inspect --repair` indexes it in place")  # fmt: skip
    ending = contents.ending
    if ending.get("status") == "failed":
        return (f"FAILED: the recording stopped on an error at {ending.get('failed_at', '?')} "
                f"({ending.get('error', '?')}), {ending.get('lost', '?')} messages lost; "
                "indexed, it holds what was written before")  # fmt: skip
    if ending.get("status") == "cut short":
        by = ending.get("indexed_by", "hild")
        return (f"cut short, indexed since by {by}: its writer never finished it (a crash, a "
                "kill); it holds what was committed before")  # fmt: skip
    return "complete"


def describe(contents: Contents) -> str:
    """``hild inspect``'s text: how it was made, its span, and each channel's count."""
    info = contents.metadata.get("hild", {})
    lines = [f"{contents.file}: {status(contents)}"]
    if info:
        made = f"hild {info.get('hild', '?')} {info.get('kind', '')}".rstrip()
        lines.append(f"  made by {made}: {info.get('command', '')}")
        for key in ("bench", "bench_file", "profile", "weather", "seed", "rate_hz",
                    "time_scale", "start_utc", "devices"):  # fmt: skip
            if info.get(key):
                lines.append(f"  {key:<10} {info[key]}")
    lines.append(f"  duration   {contents.duration_s:.3f} s")
    lines.append(f"  messages   {sum(contents.counts.values())} on {len(contents.channels)} "
                 "channels:")  # fmt: skip
    for topic in sorted(contents.channels):
        lines.append(f"    {topic:<28} {contents.counts[topic]:>8}  {contents.schemas[topic]}")
    return "\n".join(lines)
