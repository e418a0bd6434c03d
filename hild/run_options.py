"""`hild run`'s command line: its parser, and the call of hild.run with the parsed options.

Light to import (`hild --help` builds every command's parser): hild.run, and the daemon and
the compiled core it brings, load only when the command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from hild.arguments import SEED, number
from hild.clock import MAX_TIME_SCALE, MIN_TIME_SCALE
from hild.live.address import FOXGLOVE_HOST, FOXGLOVE_PORT, parse_foxglove_address
from hild.log import FORMATS
from hild.names import TOPIC_PREFIX_EXPECTED, topic_prefix
from hild.profiles import BENCHES
from hild.record.config import EXIT_RECORDING_FAILED
from hild.record.options import recording_name
from hild.rundir import DEFAULT_RUN_DIR, RUN_DIR_EXPECTED, usable_run_dir_name

# hild run --duration: at most a year of simulated time. A run meant to go on for longer is a
# daemon's, started without --duration (it runs until stopped); a longer number is a mistake
# (1e300, a duration typed in milliseconds), and it used to mean "never stop" without a word.
# A year leaves the run's clock exact to far below a tick (the simulated time t = k dt is a
# float: 4e-9 s apart at 3e7 s), and is under 9 wall hours at the fastest --time-scale (1000).
MAX_RUN_DURATION_S = 365 * 86400.0
RUN_DURATION = number(
    "a number of seconds",
    0.0,
    MAX_RUN_DURATION_S,
    note="a year; without --duration a run goes on until stopped",
)
OVERRIDES = ("time_scale", "rate_hz", "seed", "start_time", "run_dir", "stats_interval")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """`hild run`'s parser, on the subparsers ``sub`` of `hild`."""
    parser = sub.add_parser(
        "run",
        help="run the emulator daemon in real time (default: a built-in bench on virtual ports)",
        description="Run a bench in real time: the vessel model, its sensors on serial ports, "
        "ptys, UDP and TCP. With no bench file it runs the built-in default: Odin in calm water "
        "off Horten with a GNSS compass, an anemometer and a speed log on virtual serial ports "
        "under /tmp/hild/, and every sentence on UDP 127.0.0.1:10110. Built-in benches: "
        + BENCHES.listing()
        + ".",
    )
    parser.add_argument("bench", nargs="?", help="bench file, or a built-in bench name (default)")
    _add_bench_overrides(parser)
    _add_run_options(parser)
    _add_mqtt_options(parser)
    _add_foxglove_option(parser)
    parser.set_defaults(handler=run)
    return parser


def _add_bench_overrides(p: argparse.ArgumentParser) -> None:
    """The options that override a bench's values (hild.run's overrides)."""
    p.add_argument(
        "--time-scale",
        type=number("a time scale", MIN_TIME_SCALE, MAX_TIME_SCALE, low_open=False),
        metavar="X",
        help=f"run X times faster than real time (0.5: half speed; {MIN_TIME_SCALE:g} to "
        f"{MAX_TIME_SCALE:g})",
    )
    p.add_argument(
        "--rate",
        dest="rate_hz",
        metavar="HZ",
        help="model steps per s (1 to 2000)",
        type=number("a rate in Hz", 1.0, 2000.0, low_open=False),
    )
    p.add_argument("--seed", type=SEED, help="random seed of the run")
    p.add_argument(
        "--start-time",
        type=_start_time,
        metavar="TIME",
        help="'wall' (the clock) or e.g. 2026-06-01T12:00:00Z; an offset such as +02:00 is "
        "honoured, a time without one is UTC",
    )
    p.add_argument(
        "--run-dir",
        metavar="DIR",
        type=_run_dir,
        help=f"where pty:// symlinks go ({DEFAULT_RUN_DIR})",
    )
    p.add_argument(
        "--stats-interval",
        type=number("seconds", 0.01, 86400.0, low_open=False),
        metavar="SECONDS",
        help="loop statistics period, in simulated seconds (10; at --time-scale 10 "
        "a loop.stats line comes every wall second)",
    )


def _add_run_options(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--duration",
        type=RUN_DURATION,
        metavar="SECONDS",
        help=f"stop after this much simulated time (up to a year: {MAX_RUN_DURATION_S:.0f} s)",
    )
    run.add_argument(
        "--log-format",
        choices=FORMATS,
        default="auto",
        help="console (key=value), json, or auto: json when not on a terminal",
    )
    run.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="the least severe log lines shown (info)",
    )
    run.add_argument(
        "--quiet",
        action="store_true",
        help="no status line under the log on a terminal (it is off anyway when "
        "stderr is no terminal)",
    )
    run.add_argument(
        "--record",
        metavar="FILE.mcap",
        type=recording_name,
        help="record the run to this MCAP file (and its sentences to FILE.nmea.log, Signal K's "
        "log format); {bench} and {utc} in the name become the bench's name and start time. "
        "A recording that fails part-way (a full disk) ends, the run goes on, and hild exits "
        f"{EXIT_RECORDING_FAILED} at its end, run.summary's record saying what was lost",
    )


def _add_mqtt_options(run: argparse.ArgumentParser) -> None:
    mqtt = run.add_argument_group(
        "MQTT mirror (a password comes from $HILD_MQTT_PASSWORD or "
        "the bench's [mqtt] table, never the command line)"
    )
    mqtt.add_argument(
        "--mqtt",
        metavar="URL",
        help="publish the run to this broker: mqtt://HOST[:PORT] or mqtts://...",
    )
    mqtt.add_argument(
        "--mqtt-prefix",
        metavar="TOPIC",
        type=_topic_prefix,
        help="topic prefix (hild/<bench name>)",
    )
    mqtt.add_argument(
        "--mqtt-control", action="store_true", help="accept runtime control on <prefix>/control/..."
    )
    mqtt.add_argument(
        "--signalk", action="store_true", help="also publish Signal K paths under vessels/self/..."
    )


def _add_foxglove_option(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--foxglove",
        metavar="[HOST:]PORT",
        nargs="?",
        type=_foxglove_address,
        const=f"{FOXGLOVE_HOST}:{FOXGLOVE_PORT}",
        help="serve the run live to Foxglove or Lichtblick (the Foxglove WebSocket protocol): "
        "the recording's topics, and runtime control as services /control/<request>; "
        f"bare --foxglove listens on {FOXGLOVE_HOST}:{FOXGLOVE_PORT} "
        "(hild layout writes a layout to open)",
    )


def run(args: argparse.Namespace) -> int:
    """`hild run`: the bench run with the command line's options."""
    from hild.run import run_bench  # the daemon and the compiled core: not for --help

    mqtt = {
        "url": args.mqtt,
        "prefix": args.mqtt_prefix,
        "control": args.mqtt_control,
        "signalk": args.signalk,
    }
    overrides = {key: getattr(args, key) for key in OVERRIDES}
    return run_bench(
        args.bench,
        overrides,
        args.duration,
        args.log_format,
        args.log_level,
        mqtt,
        args.record,
        args.quiet,
        args.foxglove,
    )


def _start_time(text: str) -> str:
    from hild.bench import parse_start_time  # (numba comes with the bench: not for --help)

    try:
        parse_start_time(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected {e}, not {text!r}") from None
    return text


def _foxglove_address(text: str) -> str:
    try:
        host, port = parse_foxglove_address(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected {e}") from None
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _run_dir(text: str) -> str:
    if not usable_run_dir_name(text):
        raise argparse.ArgumentTypeError(f"expected {RUN_DIR_EXPECTED}, not {text!r}")
    return text


def _topic_prefix(text: str) -> str:
    prefix = topic_prefix(text)
    if prefix is None:
        raise argparse.ArgumentTypeError(f"expected {TOPIC_PREFIX_EXPECTED}, not {text!r}")
    return prefix
