"""Reading TOML configuration with errors that name the file, key, value and expectation."""

from __future__ import annotations

import copy
import datetime
import difflib
import json
import math
import os
import re
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal, overload

import numpy as np

from hild.names import NAME_EXPECTED, is_name
from hild.toml_twice import given_twice


class ConfigError(ValueError):
    """A configuration value that cannot be used, located by file and dotted key."""

    def __init__(self, file: str | Path, key: str, value: Any, expected: str):
        self.file = str(file)
        self.key = key
        self.value = value
        self.expected = expected
        # where the key is in its file (Section.position), for listing problems in file order
        self.order: tuple[int, ...] | None = None
        where = f"{self.file}: {key}" if key else self.file
        shown = "" if value is _MISSING else f" = {_short_repr(value)}"
        super().__init__(f"{where}{shown}: expected {expected}")


SHOWN_VALUE_CHARS = 120  # a whole table as the value of an unknown key is shortened to this


def _short_repr(value: Any) -> str:
    if isinstance(value, datetime.date | datetime.time):  # (TOML's: as the file wrote it)
        return value.isoformat()
    try:
        text = repr(value)
    except RecursionError:  # (load_toml refuses such nesting; this is for any other caller)
        text = f"<a {type(value).__name__} nested too deeply to show>"
    return text if len(text) <= SHOWN_VALUE_CHARS else text[: SHOWN_VALUE_CHARS - 5] + " ...}"


class MultipleConfigError(ConfigError):
    """Every problem found in one reading, each a ConfigError; itself one, for its first."""

    def __init__(self, errors: list[ConfigError]):
        first = errors[0]
        super().__init__(first.file, first.key, first.value, first.expected)
        self.errors = errors
        self.args = ("\n".join(str(e) for e in errors),)

    def __str__(self) -> str:
        return self.args[0]


class Problems:
    """Collects MultipleConfigError so that a reader reports every problem of a file at once.

    ``attempt`` runs one independent part of a reading (a table, an actuator, one key) and
    keeps its errors; ``raise_any`` ends the reading with all of them, each once, in the order
    of their keys in the file (ConfigError.order; those without one last, as found).
    """

    def __init__(self) -> None:
        self.errors: list[ConfigError] = []

    def attempt(self, fn, *args, default=None, at: tuple[int, ...] | None = None):
        """``fn(*args)``, or ``default`` with its errors kept; ``at`` places errors that are
        not located in this file (another file's, a rule's) at that position of this file."""
        try:
            return fn(*args)
        except ConfigError as e:
            self.add(e, at=at)
        return default

    def add(self, error: ConfigError, at: tuple[int, ...] | None = None) -> None:
        """Keep an error (each of a MultipleConfigError's), placed ``at`` if given."""
        found = error.errors if isinstance(error, MultipleConfigError) else [error]
        for e in found:
            if at is not None:
                e.order = at
            self.errors.append(e)

    def failed(self, key: str) -> bool:
        """Whether a problem was found with ``key`` (or a key inside it): a rule that needs
        its value is then skipped rather than reported again from a stand-in."""
        return any(e.key == key or e.key.startswith((key + ".", key + "[")) for e in self.errors)

    def in_order(self) -> list[ConfigError]:
        """The errors each once (by message), in file order."""
        seen: set[str] = set()
        unique = []
        for e in self.errors:
            if str(e) not in seen:
                seen.add(str(e))
                unique.append(e)
        return sorted(unique, key=lambda e: (e.order is None, e.order or ()))

    def raise_any(self) -> None:
        errors = self.in_order()
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise MultipleConfigError(errors)


class Reading:
    """One table read key by key into ``problems``: a bad key is a problem and a stand-in
    value, and the key is noted as unusable so that no rule judges the stand-in."""

    def __init__(self, problems: Problems) -> None:
        self.problems = problems
        self.unusable: set[str] = set()

    def get(self, key: str, fn, *args, default=None, at: tuple[int, ...] | None = None, **kw):
        """``fn(*args, **kw)``, the value of ``key``; on a problem ``default``, ``key`` unusable."""
        found = len(self.problems.errors)
        value = self.problems.attempt(lambda: fn(*args, **kw), default=default, at=at)
        if len(self.problems.errors) > found:
            self.unusable.add(key)
        return value

    def usable(self, *keys: str) -> bool:
        """Whether every one of ``keys`` was read without a problem."""
        return not self.unusable.intersection(keys)


class NotFoundError(ConfigError):
    """A configuration file asked for by a name that no folder holds: its ``file`` is the kind
    (``profile``, ``weather``, ...), so that a bench can re-say it against its own key."""


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()
MISSING = _MISSING  # for a ConfigError about a whole file, which has no value to show


MAX_CONFIG_BYTES = 1 << 20  # a bench, profile or weather file is a few kB; 1 MiB is no config
UTF8_BOM = b"\xef\xbb\xbf"


# What a path is when it is not a regular file, for a message. Reading any of these as a file
# blocks (a FIFO waits for a writer, a terminal for a line) or never ends (/dev/zero).
NOT_REGULAR = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def not_regular(mode: int) -> str | None:
    """None for a regular file's mode (from stat), else what the file is ("a FIFO ...")."""
    if stat.S_ISREG(mode):
        return None
    return NOT_REGULAR.get(stat.S_IFMT(mode), "not a regular file")


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def open_regular(path: str | Path, noun: str) -> BinaryIO:
    """The one way hild opens a file it reads: a regular file, opened without blocking first
    so that a FIFO or a device is refused rather than waited on; every way it can fail is a
    ConfigError naming the path and what was expected (``noun``: "TOML file", "recording")."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ConfigError(path, "", _MISSING, f"an existing {noun} (no such file)") from None
    except OSError as e:  # a socket cannot be opened at all (ENXIO): say what it is
        try:
            kind = not_regular(os.stat(path).st_mode)
        except OSError:
            kind = None
        if kind:
            raise ConfigError(path, "", _MISSING, f"{_a(noun)}, not {kind}") from None
        raise ConfigError(path, "", _MISSING, f"a readable {noun} ({e.strerror})") from None
    try:
        kind = not_regular(os.fstat(fd).st_mode)
        if kind:
            raise ConfigError(path, "", _MISSING, f"{_a(noun)}, not {kind}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text(path: Path, kind: str = "TOML", max_bytes: int = MAX_CONFIG_BYTES) -> str:
    """A text file's contents; every way reading it can fail is a ConfigError naming the file.

    A UTF-8 byte-order mark (which some Windows editors write) is accepted; text that is not
    UTF-8 (a Latin-1 "ø" in a comment, a binary file) is located by line and column.
    """
    with open_regular(path, f"{kind} file") as f:
        try:
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise ConfigError(
                path, "", _MISSING, f"a readable {kind} file ({e.strerror})"
            ) from None
    if len(data) > max_bytes:
        raise ConfigError(path, "", _MISSING, f"a {kind} file of at most {max_bytes} bytes")
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ConfigError(
            path,
            "",
            _MISSING,
            f"UTF-8 text (byte 0x{data[e.start]:02x} at line {line}, column {column} is not "
            "UTF-8: save the file as UTF-8)",
        ) from None


# Tables and arrays inside each other: the deepest a hild file needs is 4 ([mqtt.topics.state]
# holds a key; an inertia matrix is an array of arrays in a table). 32 is far beyond any real
# file and far below what Python's recursion (repr, comparisons, the readers) can take.
MAX_NESTING = 32
NESTING_EXPECTED = (
    f"TOML nested less deeply (at most {MAX_NESTING} tables and arrays inside each other)"
)
JSON_NESTING_EXPECTED = (
    f"JSON nested less deeply (at most {MAX_NESTING} objects and arrays inside each other)"
)


def nesting(value: Any) -> int:
    """How many tables and arrays are inside each other in ``value``, counted without
    recursion (the value may be nested thousands deep)."""
    deepest = 0
    pending = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_NESTING:
            break
        pending.extend((child, depth + 1) for child in children)
    return deepest


def json_value(text: str | bytes) -> Any:
    """JSON text (a runtime request, ``--json``) as Python values; ValueError (never a
    RecursionError) for text that is no JSON or is nested more deeply than a hild file may."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(JSON_NESTING_EXPECTED) from None
    if nesting(value) > MAX_NESTING:
        raise ValueError(JSON_NESTING_EXPECTED)
    return value


def load_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; every way it can fail is a ConfigError that names the file."""
    text = read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(path, "", _MISSING, f"valid TOML ({given_twice(text, e) or e})") from None
    except RecursionError:
        raise ConfigError(path, "", _MISSING, NESTING_EXPECTED) from None
    if nesting(data) > MAX_NESTING:
        raise ConfigError(path, "", _MISSING, NESTING_EXPECTED)
    return data


def natural_sorted(names) -> list[str]:
    """Names sorted with their numbers in numeric order (beaufort-2 before beaufort-10)."""

    def key(name: str) -> tuple:
        return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))

    return sorted(names, key=key)


def builtin_names(folder: Path, suffix: str = ".toml") -> list[str]:
    """The names of the files in a folder that end in ``suffix``, without it."""
    return natural_sorted(p.name.removesuffix(suffix) for p in folder.glob(f"*{suffix}"))


def beside(config_file: str | Path, value: str) -> Path:
    """A path a configuration file names: absolute (or ``~``) as given, else relative to the
    folder of the file that names it (a bench's certificates, parameter files)."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else Path(config_file).parent / path


def looks_like_path(name_or_path: str) -> bool:
    """Whether a configuration file given by name or path is a path: it ends in ``.toml`` or
    has a separator (the one reading of it: ``FileKind.resolve``, `hild check`'s)."""
    return Path(name_or_path).suffix == ".toml" or os.sep in name_or_path


@dataclass(frozen=True)
class FileKind:
    """One kind of configuration file (profiles, weather presets, benches, device types): the
    folder of the built-in ones, the environment variable whose folders are searched first,
    and how messages name a file of the kind (``kind``) and a name of one (``key``; the
    built-in ones are called ``builtin`` if given, else ``kind``)."""

    kind: str
    key: str
    folder: Path
    env_var: str | None = None
    builtin: str | None = None
    searched: tuple[Path, ...] = ()  # where the built-in folder was looked for (hild.builtin)
    suffix: str = ".toml"  # what a name lacks of its file's name

    def folders(self) -> list[Path]:
        """Where names are looked up: ``$env_var``'s folders, then the built-in one."""
        extra = os.environ.get(self.env_var, "") if self.env_var else ""
        return [*(Path(d) for d in extra.split(os.pathsep) if d), self.folder]

    def names(self) -> list[str]:
        """The built-in names, numbers in numeric order (beaufort-2 before beaufort-10)."""
        return builtin_names(self.folder, self.suffix)

    def builtin_path(self, name: str) -> Path:
        """The built-in file of that name (which may not exist)."""
        return self.folder / f"{name}{self.suffix}"

    def listing(self) -> str:
        """The built-in names for a message, or where hild looked when it found none."""
        names = self.names()
        if names:
            return ", ".join(names)
        looked = " and ".join(str(p) for p in self.searched or (self.folder,))
        return (
            f"none found: hild looked in {looked} (an install without its built-in files; "
            "reinstall hild from a wheel or a source tree)"
        )

    def _in_folders(self, name: str) -> Path | None:
        """``name``.toml in the first of ``folders()`` that has it (one that is no regular
        file is refused by read_text)."""
        for d in self.folders():
            path = d / f"{name}.toml"
            if path.exists():
                return path
        return None

    def resolve_name(self, name: str) -> Path:
        """A name looked up in ``folders()`` only, never a path nor a file in the current
        folder: what a client over the network may ask for (it must not have any file read)."""
        found = self._in_folders(name) if is_name(name) and not name.endswith(".toml") else None
        if found is not None:
            return found
        raise NotFoundError(
            self.kind, self.key, name, f"the name of a {self.kind} (not a path): {self.listing()}"
        )

    def resolve(self, name_or_path: str) -> Path:
        """The one resolver of configuration files: a path, or a name looked up in
        ``folders()``.

        Something that looks like a path (it ends in ``.toml`` or has a separator) must be a
        file: else a ConfigError for that path saying what it is. A name found nowhere is a
        NotFoundError whose file is ``kind`` and whose key is ``key``, listing the built-in
        names; an existing file of that name in the current folder is taken as a path.
        """
        candidate = Path(name_or_path)
        builtin = f"built-in {self.builtin or self.kind}"
        if looks_like_path(name_or_path):
            try:
                kind = not_regular(candidate.stat().st_mode)
            except OSError:
                kind = "missing"
            if kind is None:
                return candidate
            if kind != "missing":  # (read_text refuses one that changes meanwhile)
                raise ConfigError(candidate, "", MISSING, f"a {self.kind} file, not {kind}")
            plural = "es" if builtin.endswith(("ch", "sh", "s")) else "s"
            raise ConfigError(
                candidate,
                "",
                MISSING,
                f"an existing {self.kind} file (no such file; {builtin}{plural}: {self.listing()})",
            )
        found = self._in_folders(name_or_path)
        if found is not None:
            return found
        if candidate.is_file():
            return candidate
        raise NotFoundError(
            self.kind,
            self.key,
            name_or_path,
            f"a {self.kind} file or a {builtin}: {self.listing()}",
        )


class Section:
    """One TOML table being read: typed getters, and a check for keys nobody read."""

    def __init__(
        self, data: dict[str, Any], file: str | Path, prefix: str = "", order: tuple[int, ...] = ()
    ):
        if not isinstance(data, dict):
            raise located(ConfigError(file, prefix, data, "a table"), order)
        self.data = data
        self.file = str(file)
        self.prefix = prefix
        self.order = order  # where the table is in its file: see position
        self._used: set[str] = set()
        self._asked: set[str] = set()  # keys looked for with ``has``: known, present or not

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def position(self, name: str) -> tuple[int, ...]:
        """Where a key is in the file, to sort problems by: the table's position and the key's
        place in it (TOML tables keep their keys in file order); an absent key is at the end."""
        keys = list(self.data)
        return (*self.order, keys.index(name) if name in self.data else len(keys))

    def error(self, name: str, value: Any, expected: str) -> ConfigError:
        return located(ConfigError(self.file, self.key(name), value, expected), self.position(name))

    def child(self, name: str) -> Section:
        """An empty stand-in for the table ``name`` of this one (absent, or not a table)."""
        return Section({}, self.file, self.key(name), self.position(name))

    def has(self, name: str) -> bool:
        self._asked.add(name)
        return name in self.data

    def raw(self, name: str, default: Any = _MISSING) -> Any:
        self._used.add(name)
        if name in self.data:
            return self.data[name]
        if default is _MISSING:
            unread = [k for k in self.data if k not in self._used]
            close = difflib.get_close_matches(name, unread, n=1)
            hint = f" (the file has {close[0]!r}: a typo?)" if close else ""
            # the misspelt key is this problem, not also an unknown key (once, at its place)
            self._used.update(close)
            where = self.position(close[0] if close else name)
            raise located(
                ConfigError(self.file, self.key(name), _MISSING, f"this key to be present{hint}"),
                where,
            )
        return default

    def skip(self, *names: str) -> None:
        """Mark keys as read without reading them: tables left unread because a table they
        depend on failed are not unknown keys."""
        self._used.update(names)

    def number(
        self,
        name: str,
        default: Any = _MISSING,
        *,
        lo: float | None = None,
        hi: float | None = None,
        positive: bool = False,
        unit: str = "",
    ) -> float:
        value = self.raw(name, default)
        what = "a number" + (f" in {unit}" if unit else "")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(name, value, what)
        value = float(value)
        if not math.isfinite(value):
            raise self.error(name, value, "a finite number")
        if positive and value <= 0.0:
            raise self.error(name, value, f"{what} greater than 0")
        if lo is not None and value < lo:
            raise self.error(name, value, f"{what} of at least {lo:g}")
        if hi is not None and value > hi:
            raise self.error(name, value, f"{what} of at most {hi:g}")
        return value

    def integer(
        self, name: str, default: Any = _MISSING, *, lo: int | None = None, hi: int | None = None
    ) -> int:
        value = self.raw(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, value, "an integer")
        if lo is not None and hi is not None and not lo <= value <= hi:
            raise self.error(name, value, f"an integer from {lo} to {hi}")
        if lo is not None and value < lo:
            raise self.error(name, value, f"an integer of at least {lo}")
        if hi is not None and value > hi:
            raise self.error(name, value, f"an integer of at most {hi}")
        return value

    def boolean(self, name: str, default: Any = _MISSING) -> bool:
        value = self.raw(name, default)
        if not isinstance(value, bool):
            raise self.error(name, value, "true or false")
        return value

    def string(self, name: str, default: Any = _MISSING, *, choices: tuple[str, ...] = ()) -> str:
        value = self.raw(name, default)
        if not isinstance(value, str):
            raise self.error(name, value, "a string")
        if choices and value not in choices:
            raise self.error(name, value, "one of " + ", ".join(repr(c) for c in choices))
        return value

    def name(self, key: str, default: Any = _MISSING, *, default_from: str = "") -> str:
        """A name (hild.names): an identifier that may become a file name or a topic level;
        ``default_from`` says where the default came from when it is not one."""
        value = self.raw(key, default)
        if not is_name(value):
            hint = ""
            if default_from and key not in self.data:
                hint = f" (taken from the {default_from}, {self.key(key)} being absent: set it)"
            raise self.error(key, value, NAME_EXPECTED + hint)
        return value

    def array(self, name: str, shape: tuple[int, ...], default: Any = _MISSING) -> np.ndarray:
        value = self.raw(name, default)
        dims = "x".join(str(n) for n in shape)
        what = f"a {dims} array of numbers" if len(shape) > 1 else f"a list of {shape[0]} numbers"
        try:
            arr = np.array(value, dtype=float)
        except (TypeError, ValueError):
            raise self.error(name, value, what) from None
        if arr.shape != shape:
            raise self.error(name, value, f"{what} (got shape {arr.shape})")
        if not np.all(np.isfinite(arr)):
            raise self.error(name, value, f"{what}, all finite")
        return arr

    def matrix_or_diagonal(self, matrix_key: str, diagonal_key: str, n: int) -> np.ndarray:
        """An n x n matrix given in full under one key or by its diagonal under another.

        With neither key present the matrix is zero.
        """
        if self.has(matrix_key):
            self._used.add(diagonal_key)
            if self.has(diagonal_key):
                raise self.error(
                    diagonal_key,
                    self.data[diagonal_key],
                    f"either {matrix_key} or {diagonal_key}, not both",
                )
            return self.array(matrix_key, (n, n))
        return np.diag(self.array(diagonal_key, (n,), [0.0] * n))

    @overload
    def table(self, name: str, *, required: Literal[True]) -> Section: ...

    @overload
    def table(self, name: str, *, required: bool = False) -> Section | None: ...

    def table(self, name: str, *, required: bool = False) -> Section | None:
        if name not in self.data and not required:
            self._used.add(name)
            return None
        return Section(self.raw(name), self.file, self.key(name), self.position(name))

    def tables(self, name: str) -> list[Section]:
        value = self.raw(name, [])
        if not isinstance(value, list):
            raise self.error(name, value, "an array of tables ([[" + self.key(name) + "]])")
        at = self.position(name)
        return [
            Section(v, self.file, f"{self.key(name)}[{i}]", (*at, i)) for i, v in enumerate(value)
        ]

    def finish(self) -> None:
        """Refuse keys that nothing read: a typo must not be silently ignored (all at once)."""
        problems = Problems()
        known_keys = sorted(self._used | self._asked)  # (an optional key the file left out too)
        for name in self.data:
            if name not in self._used:
                close = difflib.get_close_matches(name, known_keys, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                known = ", ".join(known_keys) or "none"
                problems.add(self.error(name, self.data[name], f"a known key ({known}){hint}"))
        problems.raise_any()


def located(error: ConfigError, order: tuple[int, ...]) -> ConfigError:
    """The error placed at ``order`` in its file (see Section.position)."""
    error.order = order
    return error


def deep_merge(base: dict, change: dict) -> dict:
    """``base`` with ``change`` laid over it: tables merge key by key, values replace (a
    runtime weather change over the run's, a scenario's tables over its bench's)."""
    out = copy.deepcopy(base)
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
