"""The recording commands' command lines (`hild inspect`, `hild recover`, `hild plot`, `hild
replay`, `hild export`; commands.py runs them), and the type of every command's --record.

Light to import (`hild --help` builds every command's parser): mcap and matplotlib load only
when a command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hild.arguments import number, output_folder
from hild.pilot.options import waypoints
from hild.record.config import RUN_PLACEHOLDERS, SIM_PLACEHOLDERS, file_problem
from hild.rundir import DEFAULT_RUN_DIR

RECORDING_TIME = number("seconds", 0.0, 1e9, low_open=False)


def recording_name(text: str) -> str:
    """A --record name (`hild run`, `hild scenario run`), checked before the run."""
    return _checked_recording_name(text, RUN_PLACEHOLDERS)


def sim_recording_path(text: str) -> Path:
    """`hild sim --record`: as hild run's, with the profile's name for the bench's."""
    return Path(_checked_recording_name(text, SIM_PLACEHOLDERS))


def _checked_recording_name(text: str, placeholders: tuple[str, ...]) -> str:
    problem = file_problem(text, placeholders)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"expected {problem}, not {text!r}")
    return text


def run(args: argparse.Namespace) -> int:
    """Any of the recording commands, as ``args.command`` names it."""
    from hild.record.commands import run_record_command  # mcap: not for --help

    return run_record_command(args)


def add_inspect_parser(sub: Any) -> argparse.ArgumentParser:
    inspect = sub.add_parser(
        "inspect",
        help="what a recording holds and how it was made",
        description="Print how a recording was made (bench, profile, weather, command line), "
        "its duration and the messages per channel; says whether the file is complete, failed "
        "part-way or was cut short by a crash (hild recover then writes a finished copy, "
        "--repair indexes it in place).",
    )
    inspect.add_argument("file", type=Path, metavar="FILE.mcap")
    mend = inspect.add_mutually_exclusive_group()
    mend.add_argument(
        "--repair",
        action="store_true",
        help="index a recording cut short (a crash, a full disk): write the summary its writer "
        "never wrote, in place, so that readers open it by its index; a complete file is left "
        "as it is",
    )
    mend.add_argument(
        "--recover",
        action="store_true",
        help="as `hild recover FILE`: write a finished copy of a recording cut short to "
        "FILE-recovered.mcap, leaving FILE as it is",
    )
    inspect.add_argument(
        "--force", action="store_true", help="with --recover: replace an existing copy"
    )
    inspect.set_defaults(handler=run, usage_problem=_inspect_problem)
    return inspect


def _inspect_problem(args: argparse.Namespace) -> str | None:
    if args.force and not args.recover:
        return "inspect: --force replaces the copy that --recover writes: add --recover"
    return None


def add_recover_parser(sub: Any) -> argparse.ArgumentParser:
    recover = sub.add_parser(
        "recover",
        help="a finished copy of a recording cut short, that any MCAP reader opens",
        description="Write a finished copy of a recording whose writer never finished it (a "
        "crash, a kill, a full disk): its data as they are, with the index a clean stop would "
        "have written, so that every MCAP reader opens it by its summary and reads every "
        "message. FILE is left as it is. An existing OUT is never replaced without --force.",
    )
    recover.add_argument("file", type=Path, metavar="FILE.mcap")
    recover.add_argument(
        "out",
        type=Path,
        nargs="?",
        metavar="OUT.mcap",
        help="the copy (FILE-recovered.mcap beside FILE)",
    )
    recover.add_argument("--force", action="store_true", help="replace OUT if it exists")
    recover.set_defaults(handler=run)
    return recover


def add_plot_parser(sub: Any) -> argparse.ArgumentParser:
    plot = sub.add_parser(
        "plot",
        help="PNG figures of a recording",
        description="Write PNG figures of a recording (hild run or hild sim --record): "
        "trajectory, heading, speeds, actuators, wind and current, tick jitter.",
    )
    plot.add_argument("file", type=Path, metavar="FILE.mcap")
    plot.add_argument(
        "--out",
        type=output_folder("the plots"),
        metavar="DIR",
        help="where the PNG files go (FILE-plots/ beside the recording)",
    )
    plot.add_argument(
        "--waypoints",
        type=_plot_waypoints,
        default=(),
        metavar="N,E;N,E;...|pilot",
        help="draw waypoints (metres from the start), or 'pilot' for hild pilot's default square",
    )
    plot.set_defaults(handler=run)
    return plot


def _plot_waypoints(text: str) -> tuple[tuple[float, float], ...] | str:
    """`hild pilot`'s --waypoints, or 'pilot' (resolved against the recording's start)."""
    return text if text == "pilot" else waypoints(text)


def add_replay_parser(sub: Any) -> argparse.ArgumentParser:
    replay = sub.add_parser(
        "replay",
        help="send a recording's sentences to ports again, with their timing",
        description="Send the sentences of a recording to ports (bench port URLs) at their "
        "recorded times. A pty makes its link under --run-dir; add ?pace=0 for no baud pacing.",
    )
    replay.add_argument("file", type=Path, metavar="FILE.mcap")
    _add_replay_targets(replay)
    _add_replay_timing(replay)
    replay.add_argument(
        "--run-dir",
        type=Path,
        default=Path(DEFAULT_RUN_DIR),
        metavar="DIR",
        help=f"where pty:// links go ({DEFAULT_RUN_DIR})",
    )
    replay.set_defaults(handler=run)
    return replay


def _add_replay_targets(replay: argparse.ArgumentParser) -> None:
    replay.add_argument(
        "--to",
        action="append",
        default=[],
        metavar="[DEVICE=]URL",
        help="a port URL: the lines the recorded run sent to that port (a URL no recorded "
        "device used is refused), or (gps=pty://gps) the named devices' lines; repeatable "
        "(udp://127.0.0.1:10110)",
    )
    replay.add_argument(
        "--all",
        action="store_true",
        help="send every device's lines to each --to URL that names no device"
        ", wherever they went in the run (a bare URL's old default)",
    )
    replay.add_argument(
        "--device",
        action="append",
        default=[],
        metavar="NAME",
        help="replay only this device (repeatable; all by default)",
    )


def _add_replay_timing(replay: argparse.ArgumentParser) -> None:
    replay.add_argument(
        "--speed",
        type=number("a speed factor", 0.01, 1000.0, low_open=False),
        default=1.0,
        metavar="X",
        help="X times the recorded pace (1)",
    )
    replay.add_argument("--loop", action="store_true", help="start again at the end, until Ctrl-C")
    replay.add_argument(
        "--start",
        type=RECORDING_TIME,
        default=0.0,
        metavar="SECONDS",
        help="skip this much of the recording",
    )
    replay.add_argument(
        "--end", type=RECORDING_TIME, metavar="SECONDS", help="stop at this time of the recording"
    )
    replay.add_argument(
        "--wait",
        type=number("seconds", 0.0, 3600.0, low_open=False),
        default=0.0,
        metavar="SECONDS",
        help="wait after opening the ports, before the "
        "first sentence (time to connect a reader to a new pty)",
    )


def add_export_parser(sub: Any) -> argparse.ArgumentParser:
    export = sub.add_parser(
        "export",
        help="a recording's tracks as GPX (OpenCPN) and KML (Google Earth)",
        description="Write the own ship's track and each traffic target's from a recording: "
        "GPX 1.1 (a <trk> per vessel, for OpenCPN and chart plotters) and/or KML 2.2 (a "
        "Placemark per vessel with a time-stamped gx:Track per segment, for Google Earth). A "
        "reposition, an ArduPilot SITL restart, a jump or a gap in time starts a new segment; "
        "points are thinned to one per --every seconds of simulated time.",
    )
    export.add_argument("file", type=Path, metavar="FILE.mcap")
    export.add_argument("--gpx", type=Path, metavar="OUT.gpx", help="write GPX 1.1 here")
    export.add_argument("--kml", type=Path, metavar="OUT.kml", help="write KML 2.2 here")
    export.add_argument(
        "--every",
        type=number("seconds", 0.0, 86400.0, low_open=False),
        default=1.0,
        metavar="SECONDS",
        help="a point per this much simulated time (1; 0 keeps every recorded sample)",
    )
    export.set_defaults(handler=run, usage_problem=_export_problem)
    return export


def _export_problem(args: argparse.Namespace) -> str | None:
    if args.gpx is None and args.kml is None:
        return "export: say what to write: --gpx OUT.gpx, --kml OUT.kml, or both"
    return None
