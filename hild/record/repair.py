"""`hild inspect --repair`: index a recording its writer never finished.

A recording cut short (the daemon killed, the disk full, a power cut) keeps its data but has
no summary: the ``mcap`` package's readers go through it in order, not by its index. Repair
reads the data section record by record, stops at its end (hild's ending of a commit, or the
first record a crash left incomplete), and writes the summary there, as a clean stop would have
(hild.record.mcapfile.Index): the file then opens indexed. Nothing that reads back is lost; a
record cut in two by a power cut could never be read and is cut away (the report says so).
Before the summary goes a ``recording`` metadata record, ``status = "cut short"``, so that the
file, indexed now, never reads as one its writer finished. ``hild recover`` (hild.record.recover)
does the same to a copy.

Only a crash's torn end is cut away: a record that does not read while a chunk after it does
is damage (bytes changed since they were written), and cutting there would lose what follows.
Repair in place refuses it; recover moves what follows down over the damaged bytes in its
copy and indexes that, naming the bytes left out.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

from mcap.data_stream import ReadDataStream
from mcap.opcode import Opcode
from mcap.records import (
    Channel,
    Chunk,
    ChunkIndex,
    Message,
    MessageIndex,
    Metadata,
    MetadataIndex,
    Schema,
)
from mcap.stream_reader import get_chunk_data_stream

from hild.config import MISSING, ConfigError
from hild.record.mcapfile import MAGIC, RECORDING, Index, pwrite_all, record_bytes
from hild.record.reader import inspect_open
from hild.record.scan import (
    RECORD_HEAD,
    SCAN_BLOCK,
    UNREADABLE,
    byte_ranges,
    is_complete,
    next_chunk,
)


@dataclass(frozen=True)
class Repaired:
    file: str
    already_complete: bool
    messages: int = 0
    chunks: int = 0
    cut_bytes: int = 0  # of a record left incomplete (a power cut during a write)
    damaged: tuple[tuple[int, int], ...] = ()  # damaged: left out (recover) or read around

    def describe(self) -> str:
        if self.already_complete and self.damaged:
            ranges = byte_ranges(self.damaged)
            return (
                f"{self.file}: indexed already, though bytes {ranges} are damaged: hild "
                "reads around them by its index, so nothing was changed; `hild recover "
                f"{self.file}` writes a copy without them"
            )
        if self.already_complete:
            return f"{self.file}: complete already (indexed); nothing to repair"
        text = (
            f"{self.file}: repaired: {self.messages} messages in {self.chunks} chunks "
            "indexed; the mcap package's readers now open it by its summary"
        )
        if self.cut_bytes:
            text += f"; {self.cut_bytes} bytes of a record cut short at its end removed"
        return text


@dataclass
class _Chunk:
    """A chunk read, waiting for its message indexes (the records after it)."""

    offset: int
    length: int
    chunk: Chunk
    entries: dict[int, list[tuple[int, int]]]
    index_offsets: dict[int, int]
    index_end: int


def open_recording(path: Path, *, write: bool) -> int:
    """A recording's descriptor, locked against a hild writing it (whose writer holds an
    exclusive lock): for reading and writing with a lock of its own (``--repair``), or for
    reading with a shared one, so that no writer empties it while it is copied (recover)."""
    mode, lock = (os.O_RDWR, fcntl.LOCK_EX) if write else (os.O_RDONLY, fcntl.LOCK_SH)
    able = "rewritten" if write else "read"
    try:
        fd = os.open(path, mode | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ConfigError(path, "", MISSING, "a recording (no such file)") from None
    except OSError as e:
        raise ConfigError(
            path, "", MISSING, f"a recording that can be {able} ({e.strerror})"
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(path, "", MISSING, "a recording (a regular file)")
        try:
            fcntl.flock(fd, lock | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(
                path,
                "",
                MISSING,
                "a recording no hild is writing now (stop "
                "the run first; it finishes the file itself)",
            ) from None
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _messages(chunk: Chunk) -> tuple[dict[int, list[tuple[int, int]]], list, int]:
    """Each channel's (log time, offset) in the chunk, the schemas and channels in it, and
    its message count; raises when the chunk does not decompress or fails its CRC."""
    stream, length = get_chunk_data_stream(chunk, validate_crc=True)
    entries: dict[int, list[tuple[int, int]]] = {}
    found: list = []
    n = 0
    while stream.count < length:
        offset = stream.count
        opcode, size = stream.read1(), stream.read8()
        if opcode == Opcode.MESSAGE:
            message = Message.read(stream, size)
            entries.setdefault(message.channel_id, []).append((message.log_time, offset))
            n += 1
        elif opcode == Opcode.SCHEMA:
            found.append(Schema.read(stream))
        elif opcode == Opcode.CHANNEL:
            found.append(Channel.read(stream))
        else:
            stream.read(size)
    return entries, found, n


def repair(path: Path) -> Repaired:
    """Write the summary of a recording that has none; see the module's text."""
    path = Path(path)
    fd = open_recording(path, write=True)
    try:
        size = os.fstat(fd).st_size
        check_start(path, fd)
        if is_complete(fd, size):
            contents = inspect_open(path, fd)
            if contents.unreadable_at is not None and not contents.skipped:  # its index alone
                return rebuild(path, fd, size, "hild inspect --repair", status="damaged")
            return Repaired(str(path), already_complete=True, damaged=tuple(contents.skipped))
        return rebuild(path, fd, size, "hild inspect --repair")
    finally:
        os.close(fd)


def check_start(path: Path, fd: int) -> None:
    if os.pread(fd, len(MAGIC), 0) != MAGIC:
        raise ConfigError(path, "", MISSING, "an MCAP recording (it does not start as one)")


def rebuild(
    path: Path,
    fd: int,
    size: int,
    by: str,
    *,
    around_damage: bool = False,
    status: str = "cut short",
    declared: Sequence[Schema | Channel] = (),
) -> Repaired:
    """Index the data of the recording open at ``fd`` (``size`` bytes; a summary after its
    data end is left out) in place: a ``recording`` metadata record saying how it ended
    (``status``: "cut short", or "damaged" for a finished file's copy) and who indexed it
    (``by``), then the summary; the file ends there.

    A record that does not read is a crash's torn end only if no chunk reads after it
    (``next_chunk``); otherwise the bytes are damaged, and cutting the file there would lose
    the data after them: that is refused (DamagedDataError) unless ``around_damage`` (a copy,
    hild recover), where the data after them is moved down over them and the copy indexed
    without them. A chunk after them whose messages are on a channel declared in them gets
    that channel's record put before it: the one ``declared`` holds (a finished file's summary
    has them all), else one that says so (topic ``/damaged/channel-<id>``, no schema), so that
    every reader of the copy knows the channels of its messages."""
    index = Index()
    offset = len(MAGIC)
    pending: _Chunk | None = None
    torn = False
    removed: list[tuple[int, int]] = []  # the original's byte ranges left out: damaged
    shift = 0  # bytes left out before ``offset`` so far (offset + shift: the original's)
    while offset < size:
        head = os.pread(fd, RECORD_HEAD.size, offset)
        bad = len(head) < RECORD_HEAD.size
        end = size
        if not bad:
            opcode, length = RECORD_HEAD.unpack(head)
            end = offset + RECORD_HEAD.size + length
            bad = end > size
        if not bad and opcode in (Opcode.DATA_END, Opcode.FOOTER):  # the end of the data: a
            if next_chunk(fd, end, size) is None:  # commit's, unless a chunk reads after it
                break
            bad = True
        if not bad:
            try:
                body = ReadDataStream(BytesIO(os.pread(fd, length, offset + RECORD_HEAD.size)))
                if opcode == Opcode.MESSAGE_INDEX and pending is not None:
                    pending.index_offsets[MessageIndex.read(body).channel_id] = offset
                    pending.index_end = end
                    offset = end
                    continue
                if pending is not None:
                    _index_chunk(index, pending)
                    pending = None
                if opcode == Opcode.CHUNK:
                    chunk = Chunk.read(body)
                    entries, found, _ = _messages(chunk)
                    for record in found:
                        _add(index, record)
                    undeclared = [c for c in entries if c not in index.channels]
                    if undeclared and removed:  # their records were in the damaged bytes
                        records = _declarations(undeclared, index, declared)
                        size = _splice(fd, offset, size, records)
                        shift -= len(records)
                        continue  # (read from here again: the records, then the chunk)
                    pending = _Chunk(offset, end - offset, chunk, entries, {}, end)
                elif opcode == Opcode.SCHEMA:
                    _add(index, Schema.read(body))
                elif opcode == Opcode.CHANNEL:
                    _add(index, Channel.read(body))
                elif opcode == Opcode.METADATA:
                    name = Metadata.read(body).name
                    index.metadata.append(MetadataIndex(offset, end - offset, name))
                elif opcode == Opcode.MESSAGE:  # outside a chunk (not hild's way): counted
                    message = Message.read(body, length)
                    index.add_messages({message.channel_id: 1}, message.log_time, message.log_time)
            except UNREADABLE:
                bad = True
        if bad:
            resume = next_chunk(fd, offset + 1, size)
            if resume is None:  # written in part: where the data ends
                torn = True
                break
            if not around_damage:
                raise DamagedDataError(path, offset, resume, size)
            removed.append((offset + shift, resume + shift))
            _move_down(fd, resume, size, offset)
            shift += resume - offset
            size -= resume - offset
            os.ftruncate(fd, size)
            continue
        offset = end
    data_end = offset
    cut = size - offset if torn else 0
    if pending is not None:
        if set(pending.index_offsets) != set(pending.entries):  # its message indexes cut
            data_end = pending.offset + pending.length
            pending.index_offsets = {}
            for channel_id, times in pending.entries.items():
                record = record_bytes(MessageIndex(channel_id, times))
                pwrite_all(fd, record, data_end)
                pending.index_offsets[channel_id] = data_end
                data_end += len(record)
            pending.index_end = data_end
        else:
            data_end = pending.index_end
        _index_chunk(index, pending)
    # how the recording ended, as a finished one says it (hild.record.writer.RecordWriter.ending)
    ending = {
        "status": status,
        "indexed_by": by,
        "messages": str(index.message_count),
        "cut_bytes": str(cut),
    }
    if removed:
        ending["damaged_bytes_left_out"] = byte_ranges(removed)
    record = record_bytes(Metadata(name=RECORDING, metadata=ending))
    pwrite_all(fd, record, data_end)
    index.metadata.append(MetadataIndex(data_end, len(record), RECORDING))
    data_end += len(record)
    index.write_summary(fd, data_end)
    os.fsync(fd)
    index.close()
    return Repaired(str(path), False, index.message_count, index.chunk_count, cut, tuple(removed))


class DamagedDataError(ConfigError):
    """A recording cut short whose data stops reading before its end while a chunk after the
    damage reads: indexing it in place would cut that data away."""

    def __init__(self, path: Path, start: int, resume: int, size: int):
        self.start, self.resume = start, resume
        super().__init__(
            path,
            "",
            MISSING,
            (
                f"a recording whose data reads up to where it was cut short: bytes "
                f"{start}-{resume} do not read as MCAP, though a chunk after them does (damage, "
                "not a crash's torn end), and indexing it in place would cut away the "
                f"{size - start} bytes from there; nothing was changed: `hild recover {path}` "
                "writes a copy without the damaged bytes"
            ),
        )


DAMAGED_TOPIC = "/damaged/channel-{}"  # a channel whose record was in damaged bytes


def _declarations(
    channel_ids: Sequence[int], index: Index, declared: Sequence[Schema | Channel]
) -> bytes:
    """The records that declare ``channel_ids`` (and their schemas, when not declared yet):
    those of ``declared``, else a channel that says its record was lost."""
    schemas = {r.id: r for r in declared if isinstance(r, Schema)}
    channels = {r.id: r for r in declared if isinstance(r, Channel)}
    records: list[Schema | Channel] = []
    for channel_id in channel_ids:
        channel = channels.get(channel_id) or Channel(
            id=channel_id,
            topic=DAMAGED_TOPIC.format(channel_id),
            message_encoding="json",
            schema_id=0,
            metadata={"hild": "its own record was in damaged bytes"},
        )
        schema = schemas.get(channel.schema_id)
        if schema is not None and schema.id not in index.schemas and schema not in records:
            records.append(schema)
        records.append(channel)
    return record_bytes(*records)


def _splice(fd: int, at: int, size: int, insert: bytes) -> int:
    """``insert`` put in the file at ``at``, what was there on moved up; the new size."""
    source = size
    while source > at:  # from the end, so that nothing is overwritten before it is moved
        n = min(SCAN_BLOCK, source - at)
        source -= n
        pwrite_all(fd, os.pread(fd, n, source), source + len(insert))
    pwrite_all(fd, insert, at)
    return size + len(insert)


def _move_down(fd: int, source: int, size: int, to: int) -> None:
    """Bytes ``source`` to ``size`` of the file moved down to ``to`` (< source)."""
    while source < size:
        block = os.pread(fd, min(SCAN_BLOCK, size - source), source)
        if not block:
            break
        pwrite_all(fd, block, to)
        source += len(block)
        to += len(block)


def _add(index: Index, record: Schema | Channel) -> None:
    if isinstance(record, Schema):
        index.schemas.setdefault(record.id, record)
    else:
        index.channels.setdefault(record.id, record)


def _index_chunk(index: Index, c: _Chunk) -> None:
    first_index = min(c.index_offsets.values(), default=c.offset + c.length)
    index.add_chunk(
        ChunkIndex(
            message_start_time=c.chunk.message_start_time,
            message_end_time=c.chunk.message_end_time,
            chunk_start_offset=c.offset,
            chunk_length=c.length,
            message_index_offsets=c.index_offsets,
            message_index_length=c.index_end - first_index if c.index_offsets else 0,
            compression=c.chunk.compression,
            compressed_size=len(c.chunk.data),
            uncompressed_size=c.chunk.uncompressed_size,
        ),
        {channel: len(e) for channel, e in c.entries.items()},
    )
