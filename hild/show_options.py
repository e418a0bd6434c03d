"""`hild show`'s command line (show.py lists and prints the files).

Light to import (`hild --help` builds every command's parser): the device catalog loads only
when the command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

KINDS = ("bench", "profile", "weather", "traffic", "scenario", "device", "systemd", "ardupilot")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """`hild show`'s parser, on the subparsers ``sub`` of `hild`."""
    show = sub.add_parser(
        "show",
        help="list or print the built-in benches, scenarios, profiles, weather, traffic, "
        "devices, units, ArduPilot parameters",
        description="Print a built-in file to copy and edit (hild show bench default > "
        "my-bench.toml; hild show systemd hild.service; hild show ardupilot odin > odin.parm, "
        "ArduPilot Rover's parameters measured on the profile), list the names of a kind (hild "
        "show weather), or every kind and where an install keeps them (hild show).",
    )
    show.add_argument("kind", nargs="?", choices=KINDS)
    show.add_argument("name", nargs="?", help="a built-in name (a unit's file name for systemd)")
    show.set_defaults(handler=run)
    return show


def run(args: argparse.Namespace) -> int:
    """`hild show`."""
    from hild.show import show

    return show(args.kind, args.name)
