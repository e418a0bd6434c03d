"""`hild recover FILE [OUT]`: a finished copy of a recording its writer never finished.

What a crash leaves reads in order but has no summary (hild.record.repair). ``recover`` leaves
that file as it is and writes a copy that any MCAP reader opens by its index: the data section
byte for byte, then the summary ``hild inspect --repair`` would write in place, so every
message that reads back from the original is in the copy.

OUT is ``FILE-recovered.mcap`` unless named. The copy is written beside OUT under a temporary
name and takes OUT's name only when it is whole, so an OUT is never half-written. An existing
OUT is never replaced (``--force`` replaces it), and OUT is never the recording itself.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hild.config import MISSING, ConfigError
from hild.record.reader import inspect_open
from hild.record.repair import check_start, open_recording, rebuild
from hild.record.scan import byte_ranges, is_complete, summary_declarations

COPY_BLOCK = 1 << 20
EXISTS = (
    "a file that does not exist yet (hild recover replaces none: name another OUT, or add --force)"
)


@dataclass(frozen=True)
class Recovered:
    file: str
    out: str
    already_complete: bool
    messages: int = 0
    chunks: int = 0
    cut_bytes: int = 0
    damaged: tuple[tuple[int, int], ...] = ()  # the original's byte ranges left out
    status: str = "cut short"  # how the original ended: "damaged" (finished, damaged since)

    def describe(self) -> str:
        if self.already_complete:
            return f"{self.file}: complete already (indexed); copied as it is to {self.out}"
        text = (
            f"{self.file}: {self.status}; recovered to {self.out}: {self.messages} messages in "
            f"{self.chunks} chunks, indexed (MCAP readers open it by its summary)"
        )
        if self.damaged:
            ranges = byte_ranges(self.damaged)
            text += (
                f"; bytes {ranges} left out: they do not read as MCAP though chunks after "
                "them do (damage, not a crash's torn end)"
            )
        if self.cut_bytes and self.status == "damaged":
            text += (
                f"; {self.cut_bytes} bytes after its last chunk that read, which do not "
                "read (its indexes, its ending), left out: made again"
            )
        elif self.cut_bytes:
            text += f"; {self.cut_bytes} bytes of a record cut short at its end left out"
        return text


def default_output(path: Path) -> Path:
    """``run.mcap`` -> ``run-recovered.mcap`` (beside it)."""
    stem = path.name[: -len(".mcap")] if path.name.endswith(".mcap") else path.name
    return path.with_name(stem + "-recovered.mcap")


def _check_output(path: Path, out: Path, force: bool) -> None:
    if out.exists() or out.is_symlink():
        with contextlib.suppress(OSError):
            if os.path.samefile(path, out):
                raise ConfigError(
                    out,
                    "",
                    MISSING,
                    "a file other than the recording itself "
                    "(hild recover never changes it; hild inspect --repair "
                    "indexes it in place)",
                )
        if not force:
            raise ConfigError(out, "", MISSING, EXISTS)
        if not out.is_file():
            raise ConfigError(out, "", MISSING, "a regular file to replace, or a new name")
    if not out.parent.is_dir():
        raise ConfigError(out, "", MISSING, f"a file in an existing folder ({out.parent} is none)")


def _copy(src: int, dst: int, size: int) -> None:
    offset = 0
    while offset < size:
        block = os.pread(src, min(COPY_BLOCK, size - offset), offset)
        if not block:  # (the shared lock keeps a writer out: it cannot shrink)
            break
        view = memoryview(block)
        while view:
            n = os.pwrite(dst, view, offset)
            view, offset = view[n:], offset + n


def recover(path: Path, out: Path | None = None, force: bool = False) -> Recovered:
    """Write the finished copy of ``path`` to ``out``; see the module's text."""
    path = Path(path)
    out = Path(out) if out is not None else default_output(path)
    src = open_recording(path, write=False)
    try:
        check_start(path, src)
        _check_output(path, out, force)
        info = os.fstat(src)
        size = info.st_size
        try:  # (the copy is written beside OUT, then takes its name)
            tmp_fd, tmp_name = tempfile.mkstemp(
                dir=out.parent, prefix=f".{out.name}.", suffix=".part"
            )
        except OSError as e:  # a folder this user may not write to
            raise ConfigError(
                out, "", MISSING, f"a file that can be written in {out.parent} ({e.strerror or e})"
            ) from None
        try:
            try:
                os.fchmod(tmp_fd, stat.S_IMODE(info.st_mode))
                _copy(src, tmp_fd, size)
                # finished, and damaged since (its data, or its summary alone)
                finished = is_complete(tmp_fd, size)
                if finished and inspect_open(path, src).unreadable_at is None:
                    result = Recovered(str(path), str(out), already_complete=True)
                else:  # cut short, or finished and damaged since: indexed again without it
                    status = "damaged" if finished else "cut short"
                    done = rebuild(
                        out,
                        tmp_fd,
                        size,
                        "hild recover",
                        around_damage=True,
                        status=status,
                        declared=summary_declarations(tmp_fd, size),
                    )
                    result = Recovered(
                        str(path),
                        str(out),
                        False,
                        done.messages,
                        done.chunks,
                        done.cut_bytes,
                        done.damaged,
                        status,
                    )
                os.fsync(tmp_fd)
            finally:
                os.close(tmp_fd)
            _place(Path(tmp_name), out, force)
        except OSError as e:  # a full disk: no OUT at all rather than half of one
            raise OSError(e.errno, f"{e.strerror or e} (writing {out})") from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
    finally:
        os.close(src)
    return result


def _place(tmp: Path, out: Path, force: bool) -> None:
    """The whole copy takes OUT's name: replacing it (force) or only if there is none."""
    if force:
        os.replace(tmp, out)
        return
    try:
        os.link(tmp, out)  # fails if OUT appeared meanwhile: never replaced unasked
    except FileExistsError:
        raise ConfigError(out, "", MISSING, EXISTS) from None
