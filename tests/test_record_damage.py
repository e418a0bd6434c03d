"""A recording damaged after it was written (a bad card, a copy gone wrong) loses only the
damaged bytes: hild reads around them, `hild inspect` says which bytes and how many messages
were in them, `hild inspect --repair` refuses to cut away the data after them, and `hild
recover` writes a copy without them that the `mcap` package's indexed reader opens.

The oracle is the `mcap` package's own reading of the undamaged file, chunk by chunk, by its
index: the messages of every chunk but the damaged one."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest
from mcap.exceptions import McapError
from mcap.reader import make_reader
from mcap.records import Chunk
from mcap.stream_reader import StreamReader, breakup_chunk

from hild.record.reader import inspect, messages
from tests.forked_cli import run_hild

# a gale makes messages whose bytes differ from one to the next; 30 s of a sim is three chunks
# (its writer batches 4,000 entries: hild.record.writer.INLINE_BATCH_ENTRIES)
SIM = ("sim", "odin", "--duration", "30", "--weather", "gale-hs1")


def hild(*args: str) -> subprocess.CompletedProcess:
    return run_hild(*args, timeout=120)


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    record = tmp_path_factory.mktemp("damage") / "whole.mcap"
    done = hild(*SIM, "--record", str(record))
    assert done.returncode == 0, done.stderr
    return record


def chunks_of(record: Path) -> list[tuple[int, int, list[tuple[str, int]]]]:
    """Each chunk's offset, length and messages (topic, log time), by the mcap package."""
    with open(record, "rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        topics = {c.id: c.topic for c in summary.channels.values()}
        found = []
        for index in sorted(summary.chunk_indexes, key=lambda i: i.chunk_start_offset):
            f.seek(index.chunk_start_offset)
            chunk = next(StreamReader(f, skip_magic=True, emit_chunks=True).records)
            assert isinstance(chunk, Chunk)
            taken = [
                (topics[m.channel_id], m.log_time)
                for m in breakup_chunk(chunk)
                if hasattr(m, "log_time")
            ]
            found.append((index.chunk_start_offset, index.chunk_length, taken))
    assert len(found) >= 3, "the test needs a chunk before and after the damaged one"
    return found


def damaged(record: Path, at: int, length: int, out: Path, keep: int | None = None) -> Path:
    """A copy of ``record`` with ``length`` bytes from ``at`` overwritten (by bytes that are
    no MCAP record), cut to ``keep`` bytes if given."""
    data = bytearray(record.read_bytes())
    data[at : at + length] = bytes((i * 37 + 11) % 251 for i in range(length))
    out.write_bytes(bytes(data[:keep] if keep else data))
    return out


def by_index(record: Path) -> list[tuple[str, int]]:
    """The messages (topic, log time) the mcap package's seeking reader finds by the file's
    summary, which must count as many."""
    with open(record, "rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        got = [(c.topic, m.log_time) for _, c, m in reader.iter_messages(log_time_order=False)]
    assert summary is not None and summary.statistics.message_count == len(got)
    return got


def read_back(record: Path) -> list[tuple[str, int]]:
    return [(m.topic, m.log_time_ns) for m in messages(record)]


@pytest.mark.parametrize("where", ["data", "head"])
def test_a_finished_recording_reads_around_a_damaged_chunk(recording, tmp_path, where):
    """A chunk's compressed data overwritten stopped the reading with an internal error
    (zstandard's); its length field overwritten stopped it there, losing every chunk after."""
    chunks = chunks_of(recording)
    offset, length, lost = chunks[1]
    at = offset + length // 2 if where == "data" else offset + 1  # (+1: its record length)
    bad = damaged(recording, at, 200, tmp_path / "bad.mcap")
    expected = [m for i, (_, _, taken) in enumerate(chunks) if i != 1 for m in taken]
    assert read_back(bad) == expected
    contents = inspect(bad)
    assert contents.skipped == [(offset, chunks[2][0])] and contents.unread == len(lost)
    said = hild("inspect", str(bad))
    assert (
        said.returncode == 0
        and f"DAMAGED: bytes {offset}-{chunks[2][0]} do not read" in said.stdout
        and f"{len(lost)} of its {len(expected) + len(lost)} messages" in said.stdout
    ), said.stdout + said.stderr
    # a command that reads it says so once, and goes on with the rest
    done = hild("plot", str(bad), "--out", str(tmp_path / "plots"))
    assert done.returncode == 0 and done.stderr.count("record.damaged") == 1, done.stderr
    # indexed already: nothing to repair in place; a copy without the damaged bytes, indexed,
    # that says how it came about (it was "complete already" and copied damage and all)
    before = bad.read_bytes()
    done = hild("inspect", "--repair", str(bad))
    assert done.returncode == 0 and "nothing was changed" in done.stdout, done.stdout
    assert bad.read_bytes() == before
    copy = tmp_path / "copy.mcap"
    done = hild("recover", str(bad), str(copy))
    assert done.returncode == 0 and "damaged; recovered" in done.stdout, done.stdout
    assert by_index(copy) == expected
    said = hild("inspect", str(copy)).stdout
    assert f"from a recording damaged after it was finished: bytes {offset}-" in said, said


def test_a_cut_short_recording_damaged_inside_is_not_cut_at_the_damage(recording, tmp_path):
    """`hild inspect --repair` took a damaged chunk in the middle for a crash's torn end: it
    wrote the summary over everything after it (36 kB of good chunks here) and said "bytes of
    a record cut short at its end removed"."""
    chunks = chunks_of(recording)
    offset, length, lost = chunks[1]
    end_of_last_chunk = chunks[2][0] + chunks[2][1]
    # cut short (no summary: a kill) after the third chunk, the second damaged
    bad = damaged(
        recording, offset + length // 2, 200, tmp_path / "cut.mcap", keep=end_of_last_chunk
    )
    expected = chunks[0][2] + chunks[2][2]
    assert read_back(bad) == expected
    said = hild("inspect", str(bad)).stdout
    assert "cut short and DAMAGED" in said and "hild recover" in said, said
    before = bad.read_bytes()
    refused = hild("inspect", "--repair", str(bad))
    assert (
        refused.returncode == 2
        and f"bytes {offset}-" in refused.stderr
        and "nothing was changed" in refused.stderr
    ), refused.stderr
    assert bad.read_bytes() == before
    # a copy without the damaged bytes, that the mcap package opens by its index
    copy = tmp_path / "copy.mcap"
    done = hild("recover", str(bad), str(copy))
    assert done.returncode == 0 and f"bytes {offset}-{chunks[2][0]} left out" in done.stdout, (
        done.stdout + done.stderr
    )
    assert by_index(copy) == expected
    assert read_back(copy) == expected and inspect(copy).skipped == []
    assert bad.read_bytes() == before


def test_a_crash_torn_end_is_still_cut_away(recording, tmp_path):
    """The scan for a chunk after a record that does not read finds none at a torn end: the
    file is indexed up to its last whole record, as before."""
    chunks = chunks_of(recording)
    offset, length, _ = chunks[2]
    torn = tmp_path / "torn.mcap"
    torn.write_bytes(recording.read_bytes()[: offset + length // 2])  # the last chunk in part
    expected = chunks[0][2] + chunks[1][2]
    assert read_back(torn) == expected and inspect(torn).skipped == []
    done = hild("inspect", "--repair", str(torn))
    assert done.returncode == 0 and "cut short at its end removed" in done.stdout, done.stderr
    assert read_back(torn) == expected


def test_channels_declared_in_the_damaged_bytes_are_declared_again_in_the_copy(recording, tmp_path):
    """Damage just before the first chunk (the last schema's and channels' records): hild
    recover's copy left the bytes out with the channel records in them, so its chunks held
    messages on channels it never declared, which the mcap package's reader refused (KeyError)
    and hild read none of. A finished file's summary declares them all: they come back as
    they were. A file cut short has none: its channels come back as /damaged/channel-<id>."""
    chunks = chunks_of(recording)
    first = chunks[0][0]
    everything = [m for _, _, taken in chunks for m in taken]
    finished = damaged(recording, first - 100, 100, tmp_path / "finished.mcap")
    copy = tmp_path / "finished-copy.mcap"
    done = hild("recover", str(finished), str(copy))
    assert done.returncode == 0 and f"-{first} left out" in done.stdout, done.stdout
    assert by_index(copy) == everything and read_back(copy) == everything
    # cut short after its last chunk, no summary to say what the channels were
    end = chunks[-1][0] + chunks[-1][1]
    cut = damaged(recording, first - 100, 100, tmp_path / "cut.mcap", keep=end)
    contents = inspect(cut)
    lost = {topic for topic, _ in everything} - set(contents.channels)
    assert lost and contents.orphaned == sum(1 for t, _ in everything if t in lost), contents
    copy = tmp_path / "cut-copy.mcap"
    assert hild("recover", str(cut), str(copy)).returncode == 0
    got = by_index(copy)
    assert read_back(copy) == got and len(got) == len(everything)
    renamed = [(t, n) for (t, n), (was, _) in zip(got, everything, strict=True) if t != was]
    assert renamed and all(t.startswith("/damaged/channel-") for t, _ in renamed), renamed[:3]
    assert {was for was, _ in everything if was not in {t for t, _ in got}} == lost


def test_a_finished_recording_whose_index_alone_is_damaged_is_indexed_again(recording, tmp_path):
    """Its data read in full, but the mcap package's reader failed on its summary; hild recover
    copied it "as it is", damage and all, and --repair found nothing to do."""
    everything = [m for _, _, taken in chunks_of(recording) for m in taken]
    size = recording.stat().st_size
    bad = damaged(recording, size - 400, 200, tmp_path / "bad.mcap")  # in the summary
    assert read_back(bad) == everything
    with pytest.raises((McapError, ValueError, KeyError, EOFError, struct.error)):  # (its summary)
        by_index(bad)
    said = hild("inspect", str(bad)).stdout  # (it said the data stopped reading, "up to there")
    assert (
        "DAMAGED: its index (the summary after its data) does not read, though every "
        "record of its data does"
        in said
        and inspect(bad).index_only
    ), said
    copy = tmp_path / "copy.mcap"
    assert hild("recover", str(bad), str(copy)).returncode == 0
    assert by_index(copy) == everything
    done = hild("inspect", "--repair", str(bad))  # in place: only its index is written again
    assert done.returncode == 0 and "indexed again by hild inspect --repair" in done.stdout, (
        done.stdout + done.stderr
    )
    assert by_index(bad) == everything and read_back(bad) == everything
