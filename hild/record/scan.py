"""Finding a recording's records by hand, without its index: whether it ends finished
(``is_complete``), where reading can go on past damaged bytes (``next_chunk``), and what
reading damaged bytes raises (``UNREADABLE``). Shared by the reader, repair and recover."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from io import BytesIO

import zstandard
from mcap.data_stream import ReadDataStream
from mcap.exceptions import McapError
from mcap.opcode import Opcode
from mcap.records import Channel, Chunk, Footer, McapRecord, Schema
from mcap.stream_reader import StreamReader, get_chunk_data_stream

from hild.record.mcapfile import FOOTER_BYTES, MAGIC

RECORD_HEAD = struct.Struct("<BQ")  # opcode, length of what follows
# what records read from damaged (or half-written) bytes raise: OverflowError for a length
# beyond any buffer, MemoryError for one that fits none, OSError for a sector that reads not
UNREADABLE = (
    McapError,
    ValueError,
    KeyError,
    EOFError,
    struct.error,
    OSError,
    MemoryError,
    OverflowError,
    zstandard.ZstdError,
)
CHUNK_OPCODE = bytes((Opcode.CHUNK,))
# a chunk record's fields before its compression's name and data (MCAP specification, "Chunk":
# start and end time, uncompressed size u64, CRC u32, the name's length u32, the data's u64)
CHUNK_FIELDS = 8 + 8 + 8 + 4 + 4 + 8
MAX_CHUNK_BYTES = 1 << 30  # uncompressed: a size read from damaged bytes is not allocated
SCAN_BLOCK = 1 << 20


def byte_ranges(ranges: Iterable[tuple[int, int]]) -> str:
    """Byte ranges as hild says them (and a copy's ``damaged_bytes_left_out``): 100-300, ..."""
    return ", ".join(f"{start}-{end}" for start, end in ranges)


def summary_start(fd: int, size: int) -> int | None:
    """Where the summary starts, by the footer at the file's end (MCAP specification,
    "Footer": ``summary_start``), or None when the file does not end with a footer that names
    one (cut short, or another's ending)."""
    if size < len(MAGIC) * 2 + FOOTER_BYTES:
        return None
    tail = os.pread(fd, FOOTER_BYTES + len(MAGIC), size - FOOTER_BYTES - len(MAGIC))
    if tail[-len(MAGIC) :] != MAGIC or tail[0] != Opcode.FOOTER:
        return None
    start = Footer.read(ReadDataStream(BytesIO(tail[RECORD_HEAD.size :]))).summary_start
    return start if 0 < start < size else None


def is_complete(fd: int, size: int) -> bool:
    """Ends with a footer that names a summary, and the magic."""
    return summary_start(fd, size) is not None


def next_chunk(fd: int, start: int, end: int) -> int | None:
    """The offset of the first chunk record at or after ``start`` (ending by ``end``) that
    reads whole and matches its CRC: where reading can go on past damaged bytes in a file
    with no index to say where its records start. The chunk's CRC of its uncompressed records
    (MCAP specification, "Chunk": ``uncompressed_crc``, 0 for none, which is not taken) makes
    a false find about 1 in 4e9 of the candidates that get that far."""
    position = start
    while position < end:
        block = os.pread(fd, min(SCAN_BLOCK, end - position), position)
        if not block:
            return None
        found = block.find(CHUNK_OPCODE)
        while found != -1:
            if _reads_as_chunk(fd, position + found, end):
                return position + found
            found = block.find(CHUNK_OPCODE, found + 1)
        position += len(block)
    return None


def _reads_as_chunk(fd: int, offset: int, end: int) -> bool:
    head = os.pread(fd, RECORD_HEAD.size, offset)
    if len(head) < RECORD_HEAD.size:
        return False
    length = RECORD_HEAD.unpack(head)[1]
    if not CHUNK_FIELDS <= length <= end - offset - RECORD_HEAD.size:
        return False
    try:
        chunk = Chunk.read(ReadDataStream(BytesIO(os.pread(fd, length, offset + RECORD_HEAD.size))))
        if chunk.uncompressed_crc == 0 or chunk.uncompressed_size > MAX_CHUNK_BYTES:
            return False
        get_chunk_data_stream(chunk, validate_crc=True)
    except UNREADABLE:
        return False
    return True


def summary_records(fd: int, size: int) -> tuple[int, list[McapRecord], bool] | None:
    """A finished file's summary (MCAP specification, "Summary Section"): where it starts, its
    records in order, and whether all of them read (False: those before the first that does
    not); None where the file does not end with a footer that names one."""
    start = summary_start(fd, size)
    if start is None:
        return None
    records: list[McapRecord] = []
    summary = BytesIO(os.pread(fd, size - start, start))
    try:
        records.extend(StreamReader(summary, skip_magic=True, record_size_limit=size).records)
    except UNREADABLE:
        return start, records, False
    return start, records, True


def summary_declarations(fd: int, size: int) -> list[Schema | Channel]:
    """The schemas and channels a finished file's summary declares, whatever became of their
    records in its data (a summary damaged part-way: those before the damage)."""
    found = summary_records(fd, size)
    if found is None:
        return []
    return [r for r in found[1] if isinstance(r, Schema | Channel)]
