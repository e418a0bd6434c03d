"""An ArduPilot parameter file, as owners keep them: read into NAME -> value, each value with
the line it came from.

The layouts ArduPilot's tools write and read (ArduPilot's defaults-file loader, MAVProxy's
``param save``, Mission Planner's ``.param``, QGroundControl's ``.params``):

- ``NAME VALUE`` or ``NAME,VALUE`` with any spaces or tabs between (MAVProxy, Mission Planner,
  BlueOS's parameter repository, ``--defaults`` files);
- QGroundControl's tab-separated ``VEHICLE COMPONENT NAME VALUE TYPE``;
- ``#`` starts a comment, to the end of the line; blank lines are skipped.

A name is ArduPilot's: capital letters, digits and underscores, at most 16 characters
(AP_Param's limit). A name set twice keeps its last value, as ArduPilot's loader does. A line
that is none of these is an error naming the file, the line and what was expected: a file hild
reads wrong would make a boat ArduPilot did not configure.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from hild.config import ConfigError, read_text

MAX_BYTES = 4_000_000  # a full ArduPilot parameter set is 1,000-1,500 lines, about 40 kB
NAME = re.compile(r"[A-Z][A-Z0-9_]{0,15}")
EXPECTED_LINE = (
    "NAME VALUE or NAME,VALUE (an ArduPilot parameter file), or QGroundControl's "
    "VEHICLE<tab>COMPONENT<tab>NAME<tab>VALUE<tab>TYPE; # starts a comment"
)


@dataclass(frozen=True)
class ParamFile:
    """The parameters a file sets, and where: ``values[NAME]``, ``lines[NAME]`` (1-based)."""

    path: str
    values: dict[str, float] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    def get(self, name: str, default: float | None = None) -> float | None:
        return self.values.get(name, default)

    def where(self, name: str) -> str:
        """``NAME = VALUE (line N)`` for a message, or ``NAME (not set)``."""
        if name not in self.values:
            return f"{name} (not set)"
        return f"{name} = {self.values[name]:g} (line {self.lines[name]})"


def parse_params(text: str, path: str = "<text>") -> ParamFile:
    """The parameters of a file's ``text``; ConfigError at its first line that is none."""
    values: dict[str, float] = {}
    lines: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parsed = _line(line)
        if parsed is None:
            raise ConfigError(path, f"line {number}", raw.strip()[:80], EXPECTED_LINE)
        name, value = parsed
        values[name] = value
        lines[name] = number
    return ParamFile(path, values, lines)


def read_params(path: Path) -> ParamFile:
    """The parameter file at ``path``; ConfigError for one that cannot be read or parsed."""
    return parse_params(read_text(path, "ArduPilot parameter", MAX_BYTES), str(path))


def _line(line: str) -> tuple[str, float] | None:
    fields = line.split("\t") if line.count("\t") >= 4 else re.split(r"[\s,]+", line)
    fields = [f.strip() for f in fields if f.strip()]
    if len(fields) == 5:  # QGroundControl: vehicle, component, name, value, type
        fields = fields[2:4]
    if len(fields) != 2 or not NAME.fullmatch(fields[0]):
        return None
    try:
        value = float(fields[1])
    except ValueError:
        return None
    return (fields[0], value) if math.isfinite(value) else None
