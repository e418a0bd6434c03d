"""Command-line value types for argparse: one wording for every option of every command.

A bad value stops at argparse (exit 2) with "expected WHAT ..., not 'TEXT'"; nothing that is
not a finite number passes a number type (nan and inf included).
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path


def number(
    what: str, lo: float = 0.0, hi: float = math.inf, low_open: bool = True, note: str = ""
) -> Callable[[str], float]:
    """A finite number above ``lo`` (or from ``lo`` when not ``low_open``) and up to ``hi``;
    ``note`` says why, in the message."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        above = lo < value if low_open else lo <= value
        if not (math.isfinite(value) and above and value <= hi):
            if math.isinf(hi):
                bound = f"> {lo:g}" if low_open else f">= {lo:g}"
            else:
                bound = f"greater than {lo:g} to {hi:g}" if low_open else f"from {lo:g} to {hi:g}"
            why = f" ({note})" if note else ""
            raise argparse.ArgumentTypeError(f"expected {what} {bound}{why}, not {text!r}")
        return value

    return parse


def finite(what: str) -> Callable[[str], float]:
    """Any finite number, of either sign (its range is the receiver's to judge)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected {what}, a finite number, not {text!r}")
        return value

    return parse


def whole_number(what: str, lo: int, hi: int | None = None, note: str = "") -> Callable[[str], int]:
    """A whole number of at least ``lo`` (and at most ``hi``); ``note`` says why, in the
    message."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = lo - 1
        if value < lo or (hi is not None and value > hi):
            bound = f">= {lo}" if hi is None else f"from {lo} to {hi}"
            why = f" ({note})" if note else ""
            raise argparse.ArgumentTypeError(
                f"expected {what}, a whole number {bound}{why}, not {text!r}"
            )
        return value

    return parse


def output_file(what: str, suffixes: Sequence[str] = ()) -> Callable[[str], Path]:
    """A file to write ``what`` to: not a folder nor under a file, and named with one of
    ``suffixes`` (any case) when given. Folders missing on its way are the writer's to make."""
    return _output_path(what, False, suffixes)


def output_folder(what: str) -> Callable[[str], Path]:
    """A folder to write ``what`` into: one that exists, or that can be made (nothing on its
    way is a file)."""
    return _output_path(what, True, ())


def _output_path(what: str, folder: bool, suffixes: Sequence[str]) -> Callable[[str], Path]:
    def parse(text: str) -> Path:
        problem = _output_problem(text, folder, suffixes)
        if problem is not None:
            noun = "folder" if folder else "file"
            raise argparse.ArgumentTypeError(f"expected a {noun} for {what}{problem}")
        return Path(text)

    return parse


def _output_problem(text: str, folder: bool, suffixes: Sequence[str]) -> str | None:
    """What is wrong with ``text`` as a file (or ``folder``) to write, as the end of an
    "expected" message."""
    path = Path(text)
    if not text.strip():
        return f", not {text!r}"
    if folder and path.exists() and not path.is_dir():
        return f", not {text!r}: a file is there"
    if not folder and (text.endswith(os.sep) or path.is_dir()):
        return f", not the folder {text!r}"
    blocked = _file_on_the_way(path)
    if blocked is not None:
        return f", not {text!r}: {str(blocked)!r} is a file, not a folder"
    if suffixes and path.suffix.lower() not in suffixes:
        return f" whose suffix names its format ({', '.join(suffixes)}), not {text!r}"
    return None


def unwritable(path: Path, folder: bool = False) -> str | None:
    """Why the file (or ``folder``) ``path`` cannot be written now, or None: said before the
    work whose result it holds (a sweep's runs), not after. A file is made and removed in the
    folder that would hold it, or, where that is missing, in the nearest folder above it, where
    its writer would make the rest: that tells what permission bits do not (a read-only file
    system, /proc, /sys; root passes every permission)."""
    holder = path if folder else path.parent
    existing = _nearest_existing(holder)
    if not existing.is_dir():
        return f"{str(existing)!r} is a file, not a folder"
    try:
        fd, probe = tempfile.mkstemp(prefix=".hild-probe-", dir=existing)
    except OSError as e:
        reason = e.strerror or str(e)
        it = "it" if folder else f"its folder {str(holder)!r}"
        if existing == holder:
            return f"{it} cannot be written: {reason}"
        return f"{it} cannot be made in {str(existing)!r}: {reason}"
    os.close(fd)
    os.unlink(probe)
    return None


def check_writable(outputs: Sequence[tuple[str, Path, bool]]) -> None:
    """Each output (the option that names it, or '' for a default; its path; whether it is a
    folder) can be written, said before the work whose results it holds, named as the user
    gave it: a ConfigError for the first that cannot."""
    from hild.config import MISSING, ConfigError

    for option, path, folder in outputs:
        problem = unwritable(path, folder)
        if problem is not None:
            what = "a folder" if folder else "a file"
            where = f"{option} {path}" if option else path
            raise ConfigError(where, "", MISSING, f"{what} that can be written ({problem})")


def _file_on_the_way(path: Path) -> Path | None:
    """The nearest existing path above ``path`` if it is a file rather than a folder."""
    above = _nearest_existing(path.parent)
    return None if above.is_dir() else above


def _nearest_existing(path: Path) -> Path:
    """``path`` if it exists, else the nearest of its parents that does (the current folder
    for a relative path none of whose parents exists)."""
    return next((p for p in (path, *path.parents) if p.exists()), Path("."))


# The value types several commands share (one home each): a run's seed, a number of runs, a
# JUnit report's path.
SEED = whole_number("a seed", 0)
RUNS = whole_number("a number of runs", 1)
JUNIT_FILE = output_file("the JUnit report")
