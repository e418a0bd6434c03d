"""Reading a recording back, whole, cut short by a crash, or damaged since.

The file is read as a stream of records, in order, needing no summary at its end, so a file
whose writer was killed reads back up to its last flush, and so does a file some other writer
left without its footer (ecosystem.md "Recording": the seeking reader finds nothing in it).

A finished file whose data stops reading part-way (bytes changed since it was written: a bad
disk or card, a careless edit) is read around the damage: its summary indexes every chunk
and metadata record by offset (MCAP specification, "Chunk Index", "Metadata Index"), so the
reading goes on at the first of them after the last record that read, and the bytes skipped
are kept (``Contents.skipped``) and said once in the log. A chunk's CRC of its uncompressed
records (the "Chunk" record's ``uncompressed_crc``) is checked before any of its messages is
taken, so a chunk is read whole or skipped whole.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import structlog
from mcap.records import (
    Channel,
    Chunk,
    ChunkIndex,
    Footer,
    Message,
    Metadata,
    MetadataIndex,
    Schema,
    Statistics,
)
from mcap.stream_reader import StreamReader, breakup_chunk

from hild.config import MISSING, ConfigError, open_regular
from hild.record.mcapfile import RECORDING
from hild.record.scan import UNREADABLE, byte_ranges, next_chunk, summary_records, summary_start

log = structlog.get_logger("hild.record")
_DAMAGE_SAID: set[str] = set()  # the files whose damage ``messages`` has logged


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
    # byte ranges [start, end) of the data not read: from the end of the last record that read
    # to where reading went on (the next record the summary indexes, or the data's end)
    skipped: list[tuple[int, int]] = field(default_factory=list)
    # each channel's message count by the summary's statistics, when damage was met in a file
    # that has them (None otherwise): what ``counts`` falls short of is what the damage took
    expected: Counter | None = None
    # messages on a channel the file never declares where it was read (its record was in
    # bytes skipped): counted, not read
    orphaned: int = 0
    being_written: bool = False  # a hild writes it now (its writer holds the file's lock)
    # a finished file whose reading stopped at or after its summary's start: its data whole
    index_only: bool = False

    @property
    def unread(self) -> int:
        """Messages the summary counts that were not read (0 without a summary to say)."""
        return 0 if self.expected is None else sum((self.expected - self.counts).values())

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


@dataclass(frozen=True)
class _Summary:
    """What a finished file's summary says that reading around damage needs."""

    resume_at: list[int]  # offsets of the records it indexes (chunks, metadata), in order
    data_end: int  # where the summary starts
    schemas: dict[int, str]
    channels: dict[int, Channel]
    counts: dict[int, int]  # messages per channel id (its statistics)


def _summary(fd: int, size: int) -> _Summary | None:
    """What the summary named by the footer at the file's end says, or None where there is
    none or some of it does not read."""
    found = summary_records(fd, size)
    if found is None or not found[2]:
        return None
    start, records, _ = found
    resume_at: list[int] = []
    schemas: dict[int, str] = {}
    channel_records: dict[int, Channel] = {}
    counts: dict[int, int] = {}
    for record in records:
        if isinstance(record, ChunkIndex):
            resume_at.append(record.chunk_start_offset)
        elif isinstance(record, MetadataIndex):
            resume_at.append(record.offset)
        elif isinstance(record, Schema):
            schemas[record.id] = record.name
        elif isinstance(record, Channel):
            channel_records[record.id] = record
        elif isinstance(record, Statistics):
            counts = dict(record.channel_message_counts)
    return _Summary(sorted(resume_at), start, schemas, channel_records, counts)


def _from_summary(
    summary: _Summary,
    contents: Contents,
    channel_topics: dict[int, str],
    schema_names: dict[int, str],
) -> None:
    """What reading around damage takes from the summary: the channels (their own records may
    be in what is skipped) and each one's count of messages."""
    schema_names.update(summary.schemas)
    for channel_id, channel in summary.channels.items():
        channel_topics.setdefault(channel_id, channel.topic)
        if channel.topic not in contents.channels:
            contents.channels.append(channel.topic)
            contents.schemas[channel.topic] = schema_names.get(channel.schema_id, "")
    contents.expected = Counter()
    for channel_id, n in summary.counts.items():
        if channel_id in summary.channels:
            contents.expected[summary.channels[channel_id].topic] += n


def _stream(path: Path, stream, contents: Contents, topics: set[str] | None):
    """Every message of ``topics`` (None: all), in file order, filling ``contents``; a file
    that ends early (no footer) stops where its flushed data ends; a finished file whose data
    does not read somewhere goes on at the next record its summary indexes."""
    channel_topics: dict[int, str] = {}
    schema_names: dict[int, str] = {}
    seen_any = False
    size = os.fstat(stream.fileno()).st_size
    summary: _Summary | None = None
    read_to = 0  # the end of the last record that read
    records = StreamReader(stream, skip_magic=False, emit_chunks=True, record_size_limit=size)
    while True:
        try:
            for record in records.records:
                seen_any = True
                # a chunk's records are checked against its CRC before any is taken
                taken = (
                    breakup_chunk(record, validate_crc=True)
                    if isinstance(record, Chunk)
                    else (record,)
                )
                for r in taken:
                    if isinstance(r, Schema):
                        schema_names[r.id] = r.name
                    elif isinstance(r, Channel):
                        channel_topics[r.id] = r.topic
                        if r.topic not in contents.channels:
                            contents.channels.append(r.topic)
                            contents.schemas[r.topic] = schema_names.get(r.schema_id, "")
                    elif isinstance(r, Metadata):
                        contents.metadata[r.name] = dict(r.metadata)
                    elif isinstance(r, Message):
                        topic = channel_topics.get(r.channel_id)
                        if topic is None:
                            contents.orphaned += 1
                            continue
                        t = r.log_time
                        wanted = (
                            topics is None
                            or topic in topics
                            or any(topic.startswith(p) for p in topics if p.endswith("/"))
                        )
                        payload: dict = json.loads(r.data) if wanted else {}
                        contents.counts[topic] += 1
                        first, last = contents.first_ns, contents.last_ns
                        contents.first_ns = t if first is None else min(first, t)
                        contents.last_ns = t if last is None else max(last, t)
                        if wanted:
                            yield RecordedMessage(topic, t, payload)
                    elif isinstance(r, Footer):  # summary_start 0: a commit's end, unfinished
                        contents.complete = r.summary_start != 0 and not contents.skipped
                        return
                read_to = stream.tell()
        except UNREADABLE as e:
            if not seen_any:
                raise ConfigError(path, "", MISSING, f"an MCAP recording ({e})") from None
            if contents.unreadable_at is None:
                contents.unreadable_at = stream.tell()
                summary = _summary(stream.fileno(), size)
                if summary is not None:
                    _from_summary(summary, contents, channel_topics, schema_names)
                    contents.indexed = True
            if summary is not None:  # the next record it indexes
                data_end = summary.data_end
                resume = next((o for o in summary.resume_at if o > read_to), data_end)
            else:  # cut short: the next chunk that reads, if any (not a crash's torn end)
                data_end = size
                found = next_chunk(stream.fileno(), read_to + 1, size)
                resume = size if found is None else found
            if summary is None and resume >= size:  # cut short: read up to its last flush
                break
            contents.skipped.append((read_to, resume))
            if resume >= data_end:
                break
            stream.seek(resume)
            read_to = resume
            records = StreamReader(
                stream, skip_magic=True, emit_chunks=True, record_size_limit=size
            )
    contents.complete = False


def messages(path: Path, topics: Iterable[str] | None = None) -> Iterator[RecordedMessage]:
    """The messages in the order written, of the given topics (``/sensors/`` takes all under
    it) or all; a file cut short yields what was flushed."""
    path = Path(path)
    contents = Contents(str(path))
    with _open(path) as stream:
        yield from _stream(path, stream, contents, set(topics) if topics else None)
    if contents.skipped and str(path) not in _DAMAGE_SAID:  # once a file: what was read is
        _DAMAGE_SAID.add(str(path))  # not all there was (a plot reads a file three times)
        log.warning("record.damaged", file=str(path), status=status(contents))


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
    with _open(path) as stream:
        contents = _inspected(path, stream)
        if not contents.complete:
            contents.being_written = _locked_by_writer(stream.fileno())
    return contents


def inspect_open(path: Path, fd: int) -> Contents:
    """``inspect`` of the recording this process has open at ``fd`` (and locked: hild inspect
    --repair, hild recover), read through that descriptor rather than the path again, and
    without asking whether a writer holds it (this process's own lock would answer yes)."""
    with os.fdopen(os.dup(fd), "rb") as stream:
        stream.seek(0)  # (a duplicate shares the descriptor's offset: read from the start)
        return _inspected(Path(path), stream)


def _inspected(path: Path, stream) -> Contents:
    contents = Contents(str(path))
    for _ in _stream(path, stream, contents, set()):
        pass
    if contents.unreadable_at is not None and not contents.skipped:
        start = summary_start(stream.fileno(), os.fstat(stream.fileno()).st_size)
        contents.indexed = contents.indexed or start is not None
        # (the data end record just before the summary: read up to there, all was read)
        contents.index_only = start is not None and contents.unreadable_at >= start
    return contents


def _locked_by_writer(fd: int) -> bool:
    """Whether a hild writes the file now: its writer holds an exclusive lock on it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # (a file system without locks: no writer can hold one either)
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def status(contents: Contents) -> str:
    """Whether the recording is whole: finished by its writer, failed part-way, or cut short
    (indexed since by hild recover or --repair, or not)."""
    if contents.skipped:
        ranges = byte_ranges(contents.skipped)
        said = [f"bytes {ranges} do not read as MCAP"]
        if contents.expected:
            said.append(
                f"{contents.unread} of its {sum(contents.expected.values())} messages were in them"
            )
        if contents.orphaned:
            said.append(
                f"{contents.orphaned} messages after them are on channels declared in "
                "them, not read"
            )
        if contents.indexed:
            return (
                f"DAMAGED: {'; '.join(said)}; the file was finished and indexed (not a "
                "crash: bytes changed since): hild reads around them by its index"
            )
        return (
            f"cut short and DAMAGED: {'; '.join(said)}, though chunks after them do (not "
            "a crash's torn end): hild reads around them; `hild recover "
            f"{contents.file}` writes a finished copy without them (`hild inspect --repair` "
            "would cut away what follows them: it refuses)"
        )
    if contents.unreadable_at is not None and contents.index_only:
        return (
            "DAMAGED: its index (the summary after its data) does not read, though every "
            "record of its data does (bytes changed since it was finished): hild reads "
            f"it all; `hild inspect --repair {contents.file}` indexes it again in place, "
            f"`hild recover {contents.file}` in a copy"
        )
    if contents.unreadable_at is not None and contents.indexed:
        return (
            f"DAMAGED: its data stops reading as MCAP near byte {contents.unreadable_at}, "
            "though the file ends finished and indexed (not a crash: bytes changed since), "
            "and its index does not read either; hild reads it up to there"
        )
    if not contents.complete and contents.being_written:
        return (
            "being written by a running hild (read up to its last commit, at most half a "
            "second ago; the run finishes and indexes it when it ends)"
        )
    if not contents.complete:
        return (
            f"cut short (its writer never finished it: read up to its last flush, with no "
            f"index); `hild recover {contents.file}` writes a finished copy beside it, "
            "`hild inspect --repair` indexes it in place"
        )
    ending = contents.ending
    if ending.get("status") == "failed":
        return (
            f"FAILED: the recording stopped on an error at {ending.get('failed_at', '?')} "
            f"({ending.get('error', '?')}), {ending.get('lost', '?')} messages lost; "
            "indexed, it holds what was written before"
        )
    if ending.get("status") == "damaged":
        by = ending.get("indexed_by", "hild")
        if "damaged_bytes_left_out" not in ending:  # its summary alone was damaged
            return (
                f"indexed again by {by} after its index was damaged (it was finished); "
                "every message of its data kept"
            )
        return (
            f"recovered by {by} from a recording damaged after it was finished: bytes "
            f"{ending['damaged_bytes_left_out']} of the original left out; it holds the "
            "rest, indexed"
        )
    if ending.get("status") == "cut short":
        by = ending.get("indexed_by", "hild")
        return (
            f"cut short, indexed since by {by}: its writer never finished it (a crash, a "
            "kill); it holds what was committed before"
        )
    return "complete"


def describe(contents: Contents) -> str:
    """``hild inspect``'s text: how it was made, its span, and each channel's count."""
    info = contents.metadata.get("hild", {})
    lines = [f"{contents.file}: {status(contents)}"]
    if info:
        made = f"hild {info.get('hild', '?')} {info.get('kind', '')}".rstrip()
        lines.append(f"  made by {made}: {info.get('command', '')}")
        for key in (
            "bench",
            "bench_file",
            "profile",
            "weather",
            "seed",
            "rate_hz",
            "time_scale",
            "start_utc",
            "devices",
        ):
            if info.get(key):
                lines.append(f"  {key:<10} {info[key]}")
    lines.append(f"  duration   {contents.duration_s:.3f} s")
    lines.append(
        f"  messages   {sum(contents.counts.values())} on {len(contents.channels)} channels:"
    )
    for topic in sorted(contents.channels):
        line = f"    {topic:<28} {contents.counts[topic]:>8}  {contents.schemas[topic]}"
        if contents.expected is not None and contents.expected[topic] > contents.counts[topic]:
            line += f"  ({contents.expected[topic] - contents.counts[topic]} unread: damaged)"
        lines.append(line)
    return "\n".join(lines)
