"""Reading a recording back, whole or cut short by a crash.

The non-seeking reader goes through the file in order and needs no summary at its end, so a
file whose writer was killed reads back up to its last flush (ecosystem.md "Recording": the
seeking reader returns nothing from such a file).
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mcap.exceptions import McapError
from mcap.reader import NonSeekingReader

from hild.config import MISSING, ConfigError


@dataclass(frozen=True)
class Message:
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
    complete: bool = True  # False: the writer stopped before finishing (a crash)

    @property
    def duration_s(self) -> float:
        if self.first_ns is None or self.last_ns is None:
            return 0.0
        return (self.last_ns - self.first_ns) / 1e9


def _open(path: Path):
    try:
        return open(path, "rb")  # noqa: SIM115 (closed by the callers' with)
    except FileNotFoundError:
        raise ConfigError(path, "", MISSING, "a recording (no such file)") from None
    except IsADirectoryError:
        raise ConfigError(path, "", MISSING, "a recording, not a directory") from None
    except OSError as e:
        raise ConfigError(path, "", MISSING, f"a readable recording ({e.strerror})") from None


def _records(path: Path, stream, contents: Contents | None, topics: set[str] | None):
    reader = NonSeekingReader(stream)
    try:
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            if contents is not None:
                contents.counts[channel.topic] += 1
                if channel.topic not in contents.channels:
                    contents.channels.append(channel.topic)
                    contents.schemas[channel.topic] = schema.name if schema else ""
                t = message.log_time
                contents.first_ns = t if contents.first_ns is None else min(contents.first_ns, t)
                contents.last_ns = t if contents.last_ns is None else max(contents.last_ns, t)
            if (
                topics is None
                or channel.topic in topics
                or any(channel.topic.startswith(p) for p in topics if p.endswith("/"))
            ):
                yield Message(channel.topic, message.log_time, json.loads(message.data))
    except (McapError, EOFError, ValueError, KeyError, struct.error) as e:
        if contents is None and stream.tell() <= 8:
            raise ConfigError(path, "", MISSING, f"an MCAP recording ({e})") from None
        if contents is not None:
            if contents.first_ns is None and not contents.counts and stream.tell() <= 8:
                raise ConfigError(path, "", MISSING, f"an MCAP recording ({e})") from None
            contents.complete = False


def messages(path: Path, topics: Iterable[str] | None = None) -> Iterator[Message]:
    """The messages in the order written, of the given topics (``/sensors/`` takes all under
    it) or all; a file cut short yields what was flushed."""
    with _open(Path(path)) as stream:
        yield from _records(Path(path), stream, None, set(topics) if topics else None)


def inspect(path: Path) -> Contents:
    """Counts per channel, time span, the run's metadata, and whether the file is complete."""
    path = Path(path)
    contents = Contents(str(path))
    with _open(path) as stream:
        for _ in _records(path, stream, contents, set()):
            pass
        stream.seek(0)
        try:
            for record in NonSeekingReader(stream).iter_metadata():
                contents.metadata[record.name] = dict(record.metadata)
        except (McapError, EOFError, ValueError, struct.error):
            pass
    if not contents.complete and not contents.counts and not contents.metadata:
        raise ConfigError(path, "", MISSING, "an MCAP recording")
    return contents


def describe(contents: Contents) -> str:
    """``hild inspect``'s text: how it was made, its span, and each channel's count."""
    info = contents.metadata.get("hild", {})
    lines = [f"{contents.file}: " + ("complete" if contents.complete else
                                     "cut short (read up to its last flush)")]  # fmt: skip
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
