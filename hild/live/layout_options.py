"""`hild layout`'s command line: its parser, and the layout (layout.py) printed.

Light to import (`hild --help` builds every command's parser): the bench loads only when the
command runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hild.log import write_or_drop


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """`hild layout`'s parser, on the subparsers ``sub`` of `hild`."""
    layout = sub.add_parser(
        "layout",
        help="print a Foxglove layout for hild's topics",
        description="Print a Foxglove layout (JSON) for a run's topics, live (hild run "
        "--foxglove) or recorded (--record): the map, the 3D view, plots of speed, heading and "
        "actuators, and the raw bus lines. hild layout > hild-layout.json, then import it in "
        "Foxglove (Layouts, Import from file).",
    )
    layout.add_argument(
        "bench",
        nargs="?",
        help="bench file, or a built-in bench name (default): its "
        "actuators are plotted, its first controller's bus lines shown",
    )
    layout.set_defaults(handler=run)
    return layout


def run(args: argparse.Namespace) -> int:
    """`hild layout`: the bench's layout on stdout."""
    from hild.bench import load_bench  # (numba comes with the bench: not for --help)
    from hild.live.layout import layout_json

    write_or_drop(sys.stdout, layout_json(load_bench(args.bench)) + "\n")
    return 0
