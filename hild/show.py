"""`hild show`: the built-in files an install carries (benches, vessel profiles, weather
presets, device types, systemd units), listed or printed, to copy and edit:
``hild show bench default > my-bench.toml``."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from hild.builtin import builtin_candidates, builtin_folder
from hild.config import ConfigError, natural_sorted


@dataclass(frozen=True)
class Shown:
    """One kind of built-in file: its folder and the file names' ending."""

    folder: str  # relative to the built-in root (hild.builtin)
    suffix: str = ".toml"

    def names(self) -> list[str]:
        files = builtin_folder(self.folder).glob(f"*{self.suffix}")
        return natural_sorted(p.name.removesuffix(self.suffix) for p in files)

    def path(self, name: str) -> Path:
        return builtin_folder(self.folder) / f"{name}{self.suffix}"


KINDS = {
    "bench": Shown("profiles/bench"),
    "profile": Shown("profiles"),
    "weather": Shown("profiles/weather"),
    "device": Shown("devices"),
    "systemd": Shown("systemd", ""),  # the unit files, by their full names
}


def show(kind: str | None, name: str | None) -> int:
    """With a kind and a name, print that built-in file; else list the names."""
    out = sys.stdout
    if kind is None:
        for k, shown in KINDS.items():
            out.write(f"{k:8} {', '.join(shown.names()) or '(none)'}\n"
                      f"{'':8} in {builtin_folder(shown.folder)}\n")  # fmt: skip
        return 0
    shown = KINDS[kind]
    if name is None:
        out.write("\n".join(shown.names()) + "\n")
        return 0
    path = shown.path(name)
    if name not in shown.names():
        looked = " and ".join(str(p) for p in builtin_candidates(shown.folder))
        listing = ", ".join(shown.names()) or f"none found (hild looked in {looked})"
        raise ConfigError(f"built-in {kind}", "name", name, f"one of: {listing}")
    out.write(path.read_text())
    return 0
