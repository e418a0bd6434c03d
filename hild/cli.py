"""The `hild` command line: `hild run`, `hild check`, `hild sim`, `hild pilot`, `hild scenario`
and `hild sweep`, and the commands on recordings.

Each command's parser is made by a module beside the command's implementation (COMMANDS), and
names the function that runs the command (``handler``); all of them are light to import, the
implementations they call loading only when their command runs: `hild --help` needs no numba."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

from hild import __version__, check, run_options, show_options, sim_options, warm
from hild.config import ConfigError, MultipleConfigError
from hild.live import client as live_client
from hild.live import layout_options
from hild.log import write_or_drop
from hild.pilot import options as pilot_options
from hild.record import options as record_options
from hild.scenario import options as scenario_options
from hild.sweep import options as sweep_options

DEBUG_HELP = "show the Python traceback of an error (for bug reports)"

# Each command's add_parser(sub), in `hild --help`'s order, and whether the command takes
# --debug after its name too (hild run --debug); the parser it returns is the one that does.
COMMANDS: tuple[tuple[Callable[[Any], argparse.ArgumentParser], bool], ...] = (
    (run_options.add_parser, True),
    (layout_options.add_parser, False),
    (warm.add_parser, False),
    (check.add_parser, True),
    (sim_options.add_parser, True),
    (pilot_options.add_parser, True),
    (scenario_options.add_parser, True),  # (returns `hild scenario run`'s)
    (sweep_options.add_parser, True),
    (record_options.add_inspect_parser, True),
    (record_options.add_recover_parser, True),
    (record_options.add_plot_parser, True),
    (record_options.add_replay_parser, True),
    (live_client.add_parser, False),
    (record_options.add_export_parser, True),
    (show_options.add_parser, True),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hild", description="Hardware-in-the-loop emulator for unmanned surface vessels."
    )
    parser.add_argument("--version", action="version", version=f"hild {__version__}")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", required=True)
    for add_parser, takes_debug in COMMANDS:
        command = add_parser(sub)
        if takes_debug:
            command.add_argument(
                "--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP
            )
    return parser


# Errors of opening a port that the bench (or the machine's set-up) must fix: an address in
# use or not on this machine, a name that does not resolve, a path that is missing or taken,
# a permission. Anything else (the disk full, a device failing) is a run-time failure.
CONFIGURATION_ERRNOS = frozenset(
    {
        errno.EADDRINUSE,
        errno.EADDRNOTAVAIL,
        errno.EACCES,
        errno.EPERM,
        errno.ENOENT,
        errno.EEXIST,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.ENODEV,
        errno.ENXIO,
        -2,
        -3,
        -5,
    }
)  # (-2, -3, -5: getaddrinfo's EAI_NONAME, EAI_AGAIN, EAI_NODATA)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    usage_problem = getattr(args, "usage_problem", None)  # what the options say together
    if usage_problem is not None and (problem := usage_problem(args)):
        parser.error(problem)
    try:
        return args.handler(args)
    except BrokenPipeError:  # `hild show bench default | head`: the reader has what it wanted
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error
        return 1
    except Exception as e:
        if args.debug:  # the traceback too; the exit status as without it
            traceback.print_exc()
        return _report(e)


def _report(e: Exception) -> int:
    """One message and an exit status for an error: 2 for what the user must change in a file,
    an option or the machine's set-up, 1 for a failure of the run (and for a bug)."""
    from hild.bench import BenchError  # imported here: `hild --help` needs no numba
    from hild.coupled.simulation import CommandError, DivergedError

    if isinstance(e, MultipleConfigError):
        files = list(dict.fromkeys(error.file for error in e.errors))
        where = "the bench" if isinstance(e, BenchError) else e.file
        if len(files) > 1 and not isinstance(e, BenchError):  # a batch's schedules, say
            where = f"{len(files)} files"
        write_or_drop(sys.stderr, f"hild: {len(e.errors)} error(s) in {where}:\n")
        for error in e.errors:
            write_or_drop(sys.stderr, f"  {error}\n")
        return 2
    if isinstance(e, ConfigError | CommandError):
        write_or_drop(sys.stderr, f"hild: error: {e}\n")
        return 2
    if isinstance(e, DivergedError):  # the run itself failed: its state became absurd
        write_or_drop(sys.stderr, f"hild: error: {e}\n")
        return 1
    if isinstance(e, OSError):  # a port that cannot be created: address in use, path taken, ...
        text = e.strerror or str(e)  # without "[Errno -2]", which tells a user nothing
        if e.filename is not None:
            text += f": {e.filename}"
        write_or_drop(sys.stderr, f"hild: error: {text}\n")
        # what the user must change in the bench or the machine is a configuration error
        return 2 if e.errno in CONFIGURATION_ERRNOS else 1
    write_or_drop(
        sys.stderr,
        f"hild: internal error: {type(e).__name__}: {e} (run again with "
        "--debug for the traceback, and please report it)\n",
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
