"""`hild show`: the built-in files an install carries (benches, vessel profiles, weather
presets, device types, systemd units, ArduPilot parameter files), listed or printed, to copy and
edit: ``hild show bench default > my-bench.toml``, ``hild show ardupilot odin > odin.parm``."""

from __future__ import annotations

import sys

from hild.builtin import builtin_candidates, builtin_folder
from hild.config import ConfigError, FileKind
from hild.devices.catalog import DEVICE_TYPES
from hild.profiles import ARDUPILOT_PARAMS, BENCHES, SCENARIOS
from hild.profiles.vessel import PROFILES
from hild.profiles.weather import PRESETS
from hild.traffic.read import TRAFFIC

# the units go by their full file names (hild.service, hild@.service)
UNITS = FileKind(
    "systemd unit",
    "name",
    builtin_folder("systemd"),
    searched=builtin_candidates("systemd"),
    suffix="",
)
KINDS = {
    "bench": BENCHES,
    "profile": PROFILES,
    "weather": PRESETS,
    "traffic": TRAFFIC,
    "scenario": SCENARIOS,
    "device": DEVICE_TYPES,
    "systemd": UNITS,
    "ardupilot": ARDUPILOT_PARAMS,
}


def show(kind: str | None, name: str | None) -> int:
    """With a kind and a name, print that built-in file; else list the names."""
    out = sys.stdout
    if kind is None:
        for k, files in KINDS.items():
            out.write(f"{k:9} {files.listing()}\n{'':9} in {files.folder}\n")
        return 0
    files = KINDS[kind]
    if name is None:
        out.write("\n".join(files.names()) + "\n")
        return 0
    if name not in files.names():
        raise ConfigError(f"built-in {kind}", "name", name, f"one of: {files.listing()}")
    out.write(files.builtin_path(name).read_text())
    return 0
