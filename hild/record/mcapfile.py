"""An MCAP file that is readable at every commit and indexed when finished.

The records come from the ``mcap`` package, but for the message records, which are packed here
to the specification's layout (one ``struct`` call: the package's builder took half the
writer's time per message); the writing is hild's own, for three reasons:

- Every commit (every 0.8 s) ends the file with a data end, a footer without a summary and
  the closing magic, written with the chunk in one ``pwrite`` at the end of the data. So a
  writer killed at any moment leaves a well-formed file that ``mcap.reader.make_reader(f)``
  opens and ``iter_messages()`` reads (it falls back to reading the data in order when the
  footer names no summary); the next commit overwrites that ending.
- Identical schemas (every ``/sensors/<device>`` channel has the same one) are written once and
  shared by their channels.
- ``finish`` writes the whole summary (schemas, channels, statistics, a chunk index per chunk,
  the metadata index, summary offsets), so a cleanly stopped recording opens indexed.
- The chunk indexes wait for the summary in a temporary file, not in memory: a recording's
  memory stays flat however long it runs (the ``mcap`` package's writer keeps every chunk
  index in a list, about 1 kB per chunk: 130 kB a minute at two chunks a second).

A failed write (a full disk, a file-size limit) raises; ``restore`` then puts the ending of the
last good commit back, so the file keeps everything committed before the failure.
"""

from __future__ import annotations

import itertools
import os
import struct
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

import zstandard
from mcap.data_stream import RecordBuilder
from mcap.opcode import Opcode
from mcap.records import (
    Channel,
    Chunk,
    ChunkIndex,
    DataEnd,
    Footer,
    Header,
    McapRecord,
    Metadata,
    MetadataIndex,
    Schema,
    Statistics,
    SummaryOffset,
)

MAGIC = bytes((137, 77, 67, 65, 80, 48, 13, 10))
MESSAGE_HEAD = struct.Struct("<BQHIQQ")  # opcode, record length, then the message's fields
MESSAGE_FIELDS = 2 + 4 + 8 + 8  # a message record's length before its data
COPY_BLOCK = 1 << 16
# The header's profile names the conventions the file follows (MCAP specification, "Header"):
# empty means none, "ros1" and "ros2" are the well-known ones, and a custom profile should take
# the "x-" prefix. hild's are its own: JSON messages with JSON schemas, log times in simulated
# UTC, a "hild" metadata record saying how the run was made (the vessel profile is its
# ``profile`` key, beside the bench's text) and a "recording" record saying how it ended.
PROFILE = "x-hild"
RECORDING = "recording"  # the metadata record of how a recording ended (finished, failed, cut)


def message_index_bytes(channel_id: int, entries: list[tuple[int, int]]) -> bytes:
    """A chunk's message index of one channel, packed in two ``struct`` calls. MCAP
    specification, "Message Index" (op 0x07): the record's length (uint64), channel id uint16,
    then the records' byte length (uint32) and each (log time, offset) as two uint64."""
    count = len(entries)
    body = struct.pack(
        f"<HI{2 * count}Q", channel_id, 16 * count, *itertools.chain.from_iterable(entries)
    )
    return struct.pack("<BQ", Opcode.MESSAGE_INDEX, len(body)) + body


def utf8(text: str) -> str:
    """``text`` as MCAP's strings must be, valid UTF-8: a command line's or a path's bytes that
    are not (which Python keeps as lone surrogates) written as escapes, b'\\xff' as '\\\\xff'."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def record_bytes(*records: McapRecord) -> bytes:
    builder = RecordBuilder()
    for record in records:
        record.write(builder)
    return builder.end()


# What ends the file between two commits: no summary (summary_start 0), no CRC (0).
OPEN_ENDING = record_bytes(DataEnd(0), Footer(0, 0, 0)) + MAGIC
# a footer record's bytes (MCAP specification, "Footer": opcode, length, summary start, summary
# offset start, CRC): a file's last bytes before its closing magic
FOOTER_BYTES = len(record_bytes(Footer(0, 0, 0)))


def pwrite_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    """All of ``data`` at ``offset``; a short write is continued (the next one raises)."""
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


def _blocks(group: bytes | IO[bytes] | None) -> Iterator[bytes]:
    if isinstance(group, bytes):
        yield group
    elif group is not None:
        group.seek(0)
        while block := group.read(COPY_BLOCK):
            yield block


@dataclass
class Index:
    """What the summary will say: schemas, channels, counts, times, and the chunk indexes
    (serialized to a temporary file as they come, so memory does not grow with the run)."""

    schemas: dict[int, Schema] = field(default_factory=dict)
    channels: dict[int, Channel] = field(default_factory=dict)
    counts: dict[int, int] = field(default_factory=dict)
    message_count: int = 0
    start_ns: int = 0
    end_ns: int = 0
    chunk_count: int = 0
    metadata: list[MetadataIndex] = field(default_factory=list)
    _spool: tempfile.SpooledTemporaryFile | None = None

    def add_chunk(self, index: ChunkIndex, counts: dict[int, int]) -> None:
        if self._spool is None:  # in memory up to 64 kB, then on disk
            self._spool = tempfile.SpooledTemporaryFile(max_size=COPY_BLOCK)  # noqa: SIM115
        self._spool.write(record_bytes(index))
        self.chunk_count += 1
        self.add_messages(counts, index.message_start_time, index.message_end_time)

    def add_messages(self, counts: dict[int, int], start_ns: int, end_ns: int) -> None:
        """Messages per channel, logged from ``start_ns`` to ``end_ns``."""
        for channel, n in counts.items():
            self.counts[channel] = self.counts.get(channel, 0) + n
        n = sum(counts.values())
        if n:
            first = self.message_count == 0
            self.start_ns = start_ns if first else min(self.start_ns, start_ns)
            self.end_ns = end_ns if first else max(self.end_ns, end_ns)
            self.message_count += n

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None

    def _groups(self):
        """The summary's groups in order: (opcode, bytes or the spool of chunk indexes)."""
        yield Opcode.SCHEMA, record_bytes(*self.schemas.values())
        yield Opcode.CHANNEL, record_bytes(*self.channels.values())
        statistics = Statistics(
            attachment_count=0,
            channel_count=len(self.channels),
            channel_message_counts=dict(self.counts),
            chunk_count=self.chunk_count,
            message_count=self.message_count,
            message_end_time=self.end_ns,
            message_start_time=self.start_ns,
            metadata_count=len(self.metadata),
            schema_count=len(self.schemas),
        )
        yield Opcode.STATISTICS, record_bytes(statistics)
        yield Opcode.CHUNK_INDEX, self._spool
        yield Opcode.METADATA_INDEX, record_bytes(*self.metadata)

    def write_summary(self, fd: int, offset: int) -> int:
        """Data end, the summary, the footer and the magic at ``offset``; the file's length."""
        data_end = record_bytes(DataEnd(0))
        pwrite_all(fd, data_end, offset)
        summary_start = position = offset + len(data_end)
        crc = 0
        offsets = []
        for opcode, group in self._groups():
            start = position
            for block in _blocks(group):
                pwrite_all(fd, block, position)
                crc = zlib.crc32(block, crc)
                position += len(block)
            if position > start:
                offsets.append(SummaryOffset(opcode, start, position - start))
        summary_offset_start = position
        tail = record_bytes(*offsets)
        crc = zlib.crc32(tail, crc)
        # the footer's CRC covers the summary and the footer's own fields before the CRC
        crc = zlib.crc32(
            struct.pack("<BQQQ", Opcode.FOOTER, 20, summary_start, summary_offset_start), crc
        )
        tail += record_bytes(Footer(summary_start, summary_offset_start, crc)) + MAGIC
        pwrite_all(fd, tail, position)
        end = position + len(tail)
        os.ftruncate(fd, end)
        return end


class McapFile:
    """Appends records to an open file descriptor; chunks close at ``commit`` (or at
    ``chunk_bytes``); each commit is one write that leaves a well-formed file."""

    def __init__(self, fd: int, chunk_bytes: int, library: str = "hild"):
        """``library``: the header's name (and version) of the writer."""
        self.fd = fd
        self.chunk_bytes = chunk_bytes
        self.index = Index()
        self._library = library
        self._pending = bytearray()  # closed records not yet written, in order
        self._chunk = bytearray()  # the open chunk's records (its messages)
        self._chunk_index: dict[int, list[tuple[int, int]]] = {}
        self._closed: list[tuple[ChunkIndex, dict[int, int]]] = []  # indexed once written
        self._chunk_messages = 0
        self._chunk_start = self._chunk_end = 0
        self._compressor = zstandard.ZstdCompressor()
        self._schema_ids: dict[tuple[str, str, bytes], int] = {}  # one record per schema
        self.ending_offset = 0  # where the last commit's ending starts: the end of the data
        self.finished = False

    def start(self, metadata: dict[str, dict[str, str]]) -> None:
        self._pending += MAGIC + record_bytes(Header(profile=PROFILE, library=self._library))
        for name, data in metadata.items():
            self.metadata(name, data)

    def metadata(self, name: str, data: dict[str, str]) -> None:
        """A metadata record in the data (written at the next commit), indexed by the summary."""
        offset = self.ending_offset + len(self._pending)
        data = {utf8(key): utf8(value) for key, value in data.items()}
        record = record_bytes(Metadata(name=name, metadata=data))
        self.index.metadata.append(MetadataIndex(offset, len(record), name))
        self._pending += record

    def schema(self, name: str, encoding: str, data: bytes) -> int:
        """The id of this schema: a new record the first time, the same id after."""
        known = self._schema_ids.get((name, encoding, data))
        if known is not None:
            return known
        schema = Schema(id=len(self.index.schemas) + 1, data=data, encoding=encoding, name=name)
        self.index.schemas[schema.id] = schema
        self._schema_ids[(name, encoding, data)] = schema.id
        self._pending += record_bytes(schema)  # in the data, before any chunk that uses it
        return schema.id

    def channel(self, topic: str, encoding: str, schema_id: int) -> int:
        channel = Channel(
            id=len(self.index.channels) + 1,
            topic=topic,
            message_encoding=encoding,
            schema_id=schema_id,
            metadata={},
        )
        self.index.channels[channel.id] = channel
        self._pending += record_bytes(channel)
        return channel.id

    def message(self, channel_id: int, log_time: int, data: bytes, publish_time: int) -> None:
        chunk = self._chunk
        offset = len(chunk)
        # MCAP specification, "Message" (op 0x05): the record's length (uint64), then channel
        # id uint16, sequence uint32, log time and publish time uint64, the data; little-endian
        chunk += MESSAGE_HEAD.pack(
            Opcode.MESSAGE, MESSAGE_FIELDS + len(data), channel_id, 0, log_time, publish_time
        )
        chunk += data
        self._chunk_index.setdefault(channel_id, []).append((log_time, offset))
        if self._chunk_messages == 0:
            self._chunk_start = self._chunk_end = log_time
        elif log_time > self._chunk_end:
            self._chunk_end = log_time
        elif log_time < self._chunk_start:
            self._chunk_start = log_time
        self._chunk_messages += 1
        if len(chunk) >= self.chunk_bytes:
            self._close_chunk()

    def _close_chunk(self) -> None:
        if self._chunk_messages == 0:
            return
        raw = bytes(self._chunk)
        self._chunk.clear()
        data = self._compressor.compress(raw)
        chunk = Chunk(
            compression="zstd",
            data=data,
            message_start_time=self._chunk_start,
            message_end_time=self._chunk_end,
            uncompressed_crc=zlib.crc32(raw),
            uncompressed_size=len(raw),
        )
        chunk_offset = self.ending_offset + len(self._pending)
        chunk_record = record_bytes(chunk)
        self._pending += chunk_record
        index_offsets = {}
        index_start = len(self._pending)
        for channel_id, entries in self._chunk_index.items():
            index_offsets[channel_id] = self.ending_offset + len(self._pending)
            self._pending += message_index_bytes(channel_id, entries)
        self._closed.append(
            (
                ChunkIndex(
                    message_start_time=self._chunk_start,
                    message_end_time=self._chunk_end,
                    chunk_start_offset=chunk_offset,
                    chunk_length=len(chunk_record),
                    message_index_offsets=index_offsets,
                    message_index_length=len(self._pending) - index_start,
                    compression="zstd",
                    compressed_size=len(data),
                    uncompressed_size=len(raw),
                ),
                {c: len(e) for c, e in self._chunk_index.items()},
            )
        )
        self._chunk_index = {}
        self._chunk_messages = 0

    def commit(self) -> None:
        """Close the open chunk and write everything since the last commit, with the ending,
        in one write; then fsync. A failure raises (see ``restore``)."""
        self._close_chunk()
        if not self._pending and self.ending_offset:
            os.fsync(self.fd)
            return
        data = bytes(self._pending) + OPEN_ENDING
        pwrite_all(self.fd, data, self.ending_offset)
        os.fsync(self.fd)
        self.ending_offset += len(self._pending)
        self._pending.clear()
        for index, counts in self._closed:
            self.index.add_chunk(index, counts)
        self._closed.clear()

    def restore(self) -> None:
        """After a failed commit: the last good commit's ending back at the end of the data
        (what the failed write left after it cut away), so the file reads as it did."""
        self._pending.clear()
        self._closed.clear()
        self._chunk.clear()
        self._chunk_index = {}
        self._chunk_messages = 0
        os.ftruncate(self.fd, self.ending_offset)
        if self.ending_offset:
            pwrite_all(self.fd, OPEN_ENDING, self.ending_offset)
        os.fsync(self.fd)

    def finish(self) -> None:
        """Commit, then replace the ending with the summary: the file is complete."""
        self.commit()
        self.index.write_summary(self.fd, self.ending_offset)
        os.fsync(self.fd)
        self.index.close()
        self.finished = True
