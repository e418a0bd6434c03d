"""Which key or table a TOML file gives twice: tomllib's message names neither ("Cannot
overwrite a value (at line 3, column 11)", "Cannot declare ('gps',) twice (at line 5, column
5)"), and puts a multi-line value's error at its end; ``given_twice`` says the key, its table
and the line of the statement that gives it again, for ``hild.config.load_toml``'s error."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Sequence
from typing import Any

_TWICE = ("Cannot overwrite a value", "Cannot declare")
_AT = re.compile(r"\(at line (\d+), column (\d+)\)$")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_PROBE = "__hild_probe__"  # a key put after a prefix of the file to learn which table it is in
MAX_STATEMENT_LINES = 10_000  # how far above tomllib's place a statement's first line is sought
# what the search may parse in all: each line tried is parsed up to tomllib's place, so a long
# multi-line string whose lines read as TOML cost the square of its length (9,000 such lines
# hung hild check for minutes); past the budget tomllib's own message is kept
MAX_PARSED_CHARS = 4_000_000


def given_twice(text: str, error: tomllib.TOMLDecodeError) -> str | None:
    """For tomllib's error about a key or table given twice in ``text``, a message that names
    it, its table and the line where it is given again (the first line of its statement: a
    multi-line array's error is placed at its end); None for any other error, or if it cannot
    be told."""
    message = str(error)
    if not message.startswith(_TWICE):
        return None
    starts = [0] + [m.end() for m in re.finditer("\n", text)]  # (tomllib's lines)
    at = _AT.search(message)
    if message.endswith("(at end of document)"):  # (the file's last statement, no newline)
        line, pos = len(starts), len(text)
    elif at is not None and int(at[1]) <= len(starts):
        line = int(at[1])
        pos = starts[line - 1] + int(at[2]) - 1
    else:
        return None
    end = text.find("\n", starts[line - 1])
    text_of_line = text[starts[line - 1] : end if end >= 0 else len(text)]
    header = _header(text_of_line) if text_of_line.lstrip().startswith("[") else None
    if header is not None:  # (not the last line of an array of arrays: a value's end)
        path, name = header
        taken = _value_on(_parsed(text[: starts[line - 1]]), path)
        if taken is None:
            return f"table {name} is given twice, at line {line}"
        return f"table {name} is given, but {_dotted(taken)!r} already has a value, at line {line}"
    parsed_chars = 0
    for first in range(line - 1, max(-1, line - 1 - MAX_STATEMENT_LINES), -1):
        statement = text[starts[first] : pos]
        parsed_chars += len(statement)
        if parsed_chars > MAX_PARSED_CHARS:
            return None
        if statement.lstrip().startswith(("[", "#")) or _parsed(statement) is None:
            continue  # (a line inside a multi-line value or string: no statement alone)
        key = _statement_key(statement)
        table = _table_at(text[: starts[first]])
        if key is None or table is None:
            return None
        names = [p for p in table if isinstance(p, str)]
        where = ""
        if names:
            where = (
                f" in [[{_dotted(names)}]]"
                if isinstance(table[-1], int)
                else (f" in [{_dotted(names)}]")
            )
        taken = _value_on(_parsed(text[: starts[first]]), [*table, *key])
        if taken is None or len(taken) == len(names) + len(key):  # (or a table made by keys)
            return f"key {_dotted(key)!r} is given twice{where}, at line {first + 1}"
        return (
            f"key {_dotted(key)!r}{where} is given, but {_dotted(taken[len(names) :])!r} "
            f"already has a value, at line {first + 1}"
        )
    return None


def _parsed(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return None


def _dotted(path: list) -> str:
    """A key path as TOML writes it: bare keys as they are, others quoted."""
    quoted = (p if _BARE_KEY.fullmatch(p) else json.dumps(p, ensure_ascii=False) for p in path)
    return ".".join(quoted)


def _chain(value: Any) -> list[str] | None:
    """The keys of a table holding one key in each table down to the integer 0."""
    path = []
    while isinstance(value, dict) and len(value) == 1:
        key, value = next(iter(value.items()))
        path.append(key)
    return path if type(value) is int and value == 0 else None


def _statement_key(statement: str) -> list[str] | None:
    """The key path of a ``key = value`` statement (a quoted key may hold '=')."""
    found = statement.find("=")
    while found >= 0:
        parsed = _parsed(statement[:found] + "= 0")
        if parsed is not None:
            return _chain(parsed)
        found = statement.find("=", found + 1)
    return None


def _header(text_of_line: str) -> tuple[list[str], str] | None:
    """A table header's key path and how it is written, [a.b] or [[a.b]]."""
    parsed = _parsed(text_of_line)
    path: list[str] = []
    value: Any = parsed
    while isinstance(value, dict) and len(value) == 1:
        key, value = next(iter(value.items()))
        path.append(key)
        if isinstance(value, list) and len(value) == 1:
            return (path, f"[[{_dotted(path)}]]") if value[0] == {} else None
    return (path, f"[{_dotted(path)}]") if path and value == {} else None


def _table_at(prefix: str) -> list[str | int] | None:
    """The path of the table that statements after ``prefix`` go into (its index in an array
    of tables as an int): where a probe key put there lands."""
    parsed = _parsed(prefix + f"\n{_PROBE} = 0\n")
    pending: list[tuple[Any, list[str | int]]] = [(parsed, [])]
    while pending:
        value, path = pending.pop()
        if isinstance(value, dict):
            if _PROBE in value:
                return path
            pending.extend((v, [*path, k]) for k, v in value.items())
        elif isinstance(value, list):
            pending.extend((v, [*path, i]) for i, v in enumerate(value) if isinstance(v, dict))
    return None


def _value_on(document: dict[str, Any] | None, path: Sequence[str | int]) -> list[str] | None:
    """The keys down ``path`` in ``document`` to the first that holds a value rather than a
    table; None if there is none on the way (or a key is missing). Through an array of
    tables, its last table (as TOML's dotted keys and headers go)."""
    value: Any = document
    keys: list[str] = []
    for part in path:
        if isinstance(part, int):
            if not isinstance(value, list) or part >= len(value):
                return None
            value = value[part]
            continue
        if isinstance(value, list) and value and isinstance(value[-1], dict):
            value = value[-1]
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
        keys.append(part)
        tables = isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)
        if not (isinstance(value, dict) or tables):
            return keys
    return None
