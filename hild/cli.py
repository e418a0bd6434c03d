"""The `hild` command line: `hild run`, `hild check`, `hild sim`, `hild pilot`, `hild scenario`
and `hild sweep`, and the commands on recordings."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import traceback
from pathlib import Path

from hild import __version__
from hild.arguments import number, output_file, output_folder, whole_number
from hild.clock import MAX_TIME_SCALE, MIN_TIME_SCALE
from hild.config import ConfigError, MultipleConfigError
from hild.live import client as live_client
from hild.live.address import FOXGLOVE_HOST, FOXGLOVE_PORT, parse_foxglove_address
from hild.log import FORMATS, write_or_drop
from hild.model.layout import METHODS
from hild.names import TOPIC_PREFIX_EXPECTED, topic_prefix
from hild.pilot import options as pilot_options
from hild.profiles import BENCHES
from hild.profiles.vessel import PROFILES
from hild.profiles.weather import PRESETS
from hild.record.config import EXIT_RECORDING_FAILED
from hild.rundir import DEFAULT_RUN_DIR, RUN_DIR_EXPECTED, usable_run_dir_name

SECONDS = number("a number of seconds")
# hild run --duration: at most a year of simulated time. A run meant to go on for longer is a
# daemon's, started without --duration (it runs until stopped); a longer number is a mistake
# (1e300, a duration typed in milliseconds), and it used to mean "never stop" without a word.
# A year leaves the run's clock exact to far below a tick (the simulated time t = k dt is a
# float: 4e-9 s apart at 3e7 s), and is under 9 wall hours at the fastest --time-scale (1000).
MAX_RUN_DURATION_S = 365 * 86400.0
RUN_DURATION = number("a number of seconds", 0.0, MAX_RUN_DURATION_S,
                      note="a year; without --duration a run goes on until stopped")  # fmt: skip
STEP = number("a step in seconds", 0.0, 1.0, note="the integrators need steps well below the "
              "vessel's fastest time constant")  # fmt: skip
SEED = whole_number("a seed", 0)
RUNS = whole_number("a number of runs", 1)
RECORDING_TIME = number("seconds", 0.0, 1e9, low_open=False)
# A local cluster's workers: a run is single-threaded, so more than a few per core only wait
# their turn, each a process with its own copy of hild and the compiled kernels.
WORKERS_PER_CORE = 4
CORES = os.cpu_count() or 1
MAX_WORKERS = WORKERS_PER_CORE * CORES
WORKERS = whole_number("a number of worker processes", 1, MAX_WORKERS,
                       note=f"at most {WORKERS_PER_CORE} per core; {CORES} here")  # fmt: skip
# What matplotlib (>= 3.8) writes a report page as without LaTeX: the suffix picks the format.
REPORT_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".eps", ".ps", ".jpg", ".jpeg", ".tif",
                   ".tiff", ".webp")  # fmt: skip
JUNIT_FILE = output_file("the JUnit report")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hild", description="Hardware-in-the-loop emulator for unmanned surface vessels."
    )
    parser.add_argument("--version", action="version", version=f"hild {__version__}")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser(
        "run",
        help="run the emulator daemon in real time (default: a built-in bench on virtual ports)",
        description="Run a bench in real time: the vessel model, its sensors on serial ports, "
        "ptys, UDP and TCP. With no bench file it runs the built-in default: Odin in calm water "
        "off Horten with a GNSS compass, an anemometer and a speed log on virtual serial ports "
        "under /tmp/hild/, and every sentence on UDP 127.0.0.1:10110. Built-in benches: "
        + BENCHES.listing()
        + ".",
    )
    run.add_argument("bench", nargs="?", help="bench file, or a built-in bench name (default)")
    _bench_overrides(run)
    run.add_argument("--duration", type=RUN_DURATION, metavar="SECONDS",
                     help="stop after this much simulated time (up to a year: "
                     f"{MAX_RUN_DURATION_S:.0f} s)")  # fmt: skip
    run.add_argument(
        "--log-format",
        choices=FORMATS,
        default="auto",
        help="console (key=value), json, or auto: json when not on a terminal",
    )
    run.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info",
                     help="the least severe log lines shown (info)")  # fmt: skip
    run.add_argument("--quiet", action="store_true",
                     help="no status line under the log on a terminal (it is off anyway when "
                     "stderr is no terminal)")  # fmt: skip
    run.add_argument(
        "--record", metavar="FILE.mcap", type=_record_file,
        help="record the run to this MCAP file (and its sentences to FILE.nmea.log, Signal K's "
        "log format); {bench} and {utc} in the name become the bench's name and start time. "
        f"A recording that fails part-way (a full disk) ends, the run goes on, and hild exits "
        f"{EXIT_RECORDING_FAILED} at its end, run.summary's record saying what was lost",
    )  # fmt: skip
    mqtt = run.add_argument_group(
        "MQTT mirror (a password comes from $HILD_MQTT_PASSWORD or "
        "the bench's [mqtt] table, never the command line)"
    )
    mqtt.add_argument(
        "--mqtt",
        metavar="URL",
        help="publish the run to this broker: mqtt://HOST[:PORT] or mqtts://...",
    )
    mqtt.add_argument("--mqtt-prefix", metavar="TOPIC", type=_topic_prefix,
                      help="topic prefix (hild/<bench name>)")  # fmt: skip
    mqtt.add_argument(
        "--mqtt-control", action="store_true", help="accept runtime control on <prefix>/control/..."
    )
    mqtt.add_argument(
        "--signalk", action="store_true", help="also publish Signal K paths under vessels/self/..."
    )

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

    warm = sub.add_parser(
        "warm",
        help="compile and cache the vessel model a bench's run needs (the set-up does it)",
        description="Compile the kernels that running each bench needs (the vessel model, its "
        "weather, every device) and cache them, so that the first hild run starts at once "
        "instead of compiling with the boat silent (seconds; up to a minute on a Raspberry Pi). "
        "make run's set-up calls it. The cache follows hild's sources: after an upgrade the "
        "next run, or hild warm, compiles afresh.",
    )
    warm.add_argument(
        "benches",
        nargs="*",
        metavar="BENCH",
        help="bench files or built-in bench names (default: the default bench)",
    )

    check = sub.add_parser(
        "check",
        help="validate a bench file without running it",
        description="Check a bench file: keys, values, profiles, device types, port URLs and the "
        "byte budget of every serial line. Exits with 2 and lists every problem.",
    )
    check.add_argument("bench", nargs="?", help="bench file, or a built-in bench name (default)")

    sim = sub.add_parser(
        "sim",
        help="run a vessel model faster than real time",
        description="Run a vessel profile faster than real time and print a summary; "
        f"built-in profiles: {PROFILES.listing()}.",
    )
    sim.add_argument("profile", help="profile name (e.g. odin) or path to a profile TOML")
    sim.add_argument("--duration", type=SECONDS, required=True, metavar="SECONDS")
    sim.add_argument("--dt", type=STEP, default=0.01, metavar="SECONDS",
                     help="step, up to 1 s and to the vessel's stable limit, which a longer "
                     "step's error names (0.01)")  # fmt: skip
    sim.add_argument("--method", choices=tuple(METHODS), default="rk4")
    sim.add_argument(
        "--cmd", action="append", default=[], metavar="NAME=VALUE",
        help="actuator command for the whole run, e.g. port.rpm=1500 (repeatable)",
    )  # fmt: skip
    sim.add_argument("--schedule", type=Path, action="append", default=[], metavar="FILE.csv",
                     help="t,name,value rows; repeatable: a batch runs each schedule in "
                     "turn")  # fmt: skip
    sim.add_argument("--out", type=output_file("the trajectory"), metavar="FILE.csv",
                     help="write the trajectory here (its folder made if missing)")  # fmt: skip
    sim.add_argument("--record", type=_sim_record_file, metavar="FILE.mcap",
                     help="record the run as `hild run --record` does, a sample every "
                     "--output-interval; {profile} and {utc} in the name become the profile's "
                     "name and the time the sim started")  # fmt: skip
    sim.add_argument(
        "--output-interval", type=SECONDS, default=0.1, metavar="SECONDS",
        help="time between rows of --out (0.1)",
    )  # fmt: skip
    sim.add_argument(
        "--weather", default="calm", metavar="PRESET",
        help="weather preset name or TOML file (calm); presets: "
        + PRESETS.listing(),
    )  # fmt: skip
    sim.add_argument("--seed", type=SEED, default=0, help="random seed of the weather (0)")
    sim.add_argument("--repeat", type=RUNS, default=1, metavar="N",
                     help="a batch in one process: N runs with seeds SEED ... SEED+N-1 (of each "
                     "--schedule), one JSON line per run on stdout, the runs per second on "
                     "stderr; --out and --record files are named per run (1)")  # fmt: skip

    pilot = sub.add_parser(
        "pilot",
        help="a reference autopilot: sail a waypoint mission through the daemon's ports",
        description="Sail a four-waypoint mission (thesis ch. 5) as an external controller "
        "would: read NMEA sensor sentences, send actuator commands (LOS guidance, PID heading, "
        "PI speed). Exits 0 when the mission is complete, 1 on --timeout or a signal, 3 when "
        "an AIS target would pass closer than --stop-cpa.",
    )
    pilot_options.add_arguments(pilot)

    scenario = sub.add_parser(
        "scenario",
        help="run a scenario: a bench, a mission and a controller under test, with a verdict",
        description="Scenarios (hild show scenario): a bench, a mission, the controller under "
        "test (hild's pilot or a Python controller in lockstep, or an external program on the "
        "run's ports) and criteria; the verdict passes only if every criterion holds. Exit 0 "
        "pass, 1 fail, 2 bad input.",
    )
    scenario_sub = scenario.add_subparsers(dest="scenario_command", required=True)
    scenario_run = scenario_sub.add_parser(
        "run", help="run a scenario once and judge it",
        description="Run a scenario once and print its verdict: each criterion, its value "
        "against its threshold, by how much and when it failed. Exit 0 pass, 1 fail, 2 bad "
        "input. Built-in scenarios: see hild show scenario.",
    )  # fmt: skip
    scenario_run.add_argument("scenario", help="scenario file, or a built-in scenario name")
    scenario_run.add_argument("--seed", type=SEED, help="the run's seed (the bench's seed)")
    scenario_run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                              help="set a value by its key path, as a sweep does, e.g. "
                              "weather.wind_speed=12 (a TOML value; repeatable)")  # fmt: skip
    scenario_run.add_argument(
        "--junit",
        metavar="FILE.xml",
        type=JUNIT_FILE,
        help="write the verdict as a JUnit XML report (for CI)",
    )
    scenario_run.add_argument("--report", metavar="FILE.png",
                              type=output_file("the report", REPORT_SUFFIXES),
                              help="write a one-page report: the track with the mission, "
                              "targets and closest approaches, and the criteria; its suffix "
                              f"picks the format: {', '.join(REPORT_SUFFIXES)}")  # fmt: skip
    scenario_run.add_argument(
        "--record",
        metavar="FILE.mcap",
        type=_record_file,
        help="record the run as hild run --record does",
    )
    scenario_run.add_argument("--output-dir", metavar="DIR", type=Path,
                              help="an external controller's output and the run's log go "
                              "here (default: a new temporary folder)")  # fmt: skip
    scenario_run.add_argument(
        "--json", action="store_true", help="print the result as one JSON line instead of a table"
    )

    sweep = sub.add_parser(
        "sweep",
        help="run a scenario many times over a [sweep] of parameters, on Dask",
        description="Run a scenario's [sweep]: grids, lists or random samples of seeds and of "
        "any weather, traffic, mission or device value, on a local Dask cluster sized to the "
        "machine or on an existing one (--scheduler). Results stream into one Parquet table "
        "(a row per run); exit 0 if every run passed, 1 if any failed, 2 on bad input.",
    )
    sweep.add_argument("scenario", help="scenario file with a [sweep] table, or a built-in name")
    sweep.add_argument("--scheduler", metavar="ADDRESS",
                       help="an existing Dask scheduler, tcp://HOST:PORT (or tls://, ws://, "
                       "wss://, ucx://), e.g. tcp://lab-1:8786 (default: "
                       "$DASK_SCHEDULER_ADDRESS, else a local cluster)")  # fmt: skip
    sweep.add_argument(
        "--workers",
        type=WORKERS,
        metavar="N",
        help=f"local cluster: N worker processes, at most {WORKERS_PER_CORE} per core "
        f"({MAX_WORKERS} here) (default: one per core)",
    )
    sweep.add_argument(
        "--out",
        type=output_file("the results table"),
        metavar="FILE.parquet",
        help="the results table (default: the sweep's name.parquet)",
    )
    sweep.add_argument("--resume", action="store_true",
                       help="continue an interrupted sweep: runs already in --out are not run "
                       "again")  # fmt: skip
    sweep.add_argument(
        "--runs",
        type=RUNS,
        metavar="N",
        help="run only the first N runs of the sweep (a quick look)",
    )
    sweep.add_argument(
        "--junit",
        metavar="FILE.xml",
        type=JUNIT_FILE,
        help="write every run's verdict as a JUnit XML report (for CI)",
    )
    sweep.add_argument(
        "--plots",
        metavar="DIR",
        type=output_folder("the plots"),
        help="write plots of the metrics against the parameters here",
    )
    sweep.add_argument("--no-progress", action="store_true", help="no progress bar")

    inspect = sub.add_parser(
        "inspect", help="what a recording holds and how it was made",
        description="Print how a recording was made (bench, profile, weather, command line), "
        "its duration and the messages per channel; says whether the file is complete, failed "
        "part-way or was cut short by a crash (hild recover then writes a finished copy, "
        "--repair indexes it in place).",
    )  # fmt: skip
    inspect.add_argument("file", type=Path, metavar="FILE.mcap")
    mend = inspect.add_mutually_exclusive_group()
    mend.add_argument(
        "--repair", action="store_true",
        help="index a recording cut short (a crash, a full disk): write the summary its writer "
        "never wrote, in place, so that readers open it by its index; a complete file is left "
        "as it is",
    )  # fmt: skip
    mend.add_argument(
        "--recover", action="store_true",
        help="as `hild recover FILE`: write a finished copy of a recording cut short to "
        "FILE-recovered.mcap, leaving FILE as it is",
    )  # fmt: skip
    inspect.add_argument("--force", action="store_true",
                         help="with --recover: replace an existing copy")  # fmt: skip

    recover = sub.add_parser(
        "recover", help="a finished copy of a recording cut short, that any MCAP reader opens",
        description="Write a finished copy of a recording whose writer never finished it (a "
        "crash, a kill, a full disk): its data as they are, with the index a clean stop would "
        "have written, so that every MCAP reader opens it by its summary and reads every "
        "message. FILE is left as it is. An existing OUT is never replaced without --force.",
    )  # fmt: skip
    recover.add_argument("file", type=Path, metavar="FILE.mcap")
    recover.add_argument("out", type=Path, nargs="?", metavar="OUT.mcap",
                         help="the copy (FILE-recovered.mcap beside FILE)")  # fmt: skip
    recover.add_argument("--force", action="store_true", help="replace OUT if it exists")

    plot = sub.add_parser(
        "plot", help="PNG figures of a recording",
        description="Write PNG figures of a recording (hild run or hild sim --record): "
        "trajectory, heading, speeds, actuators, wind and current, tick jitter.",
    )  # fmt: skip
    plot.add_argument("file", type=Path, metavar="FILE.mcap")
    plot.add_argument("--out", type=output_folder("the plots"), metavar="DIR",
                      help="where the PNG files go (FILE-plots/ beside the recording)")  # fmt: skip
    plot.add_argument(
        "--waypoints", type=_plot_waypoints, default=(), metavar="N,E;N,E;...|pilot",
        help="draw waypoints (metres from the start), or 'pilot' for hild pilot's default square",
    )  # fmt: skip

    replay = sub.add_parser(
        "replay", help="send a recording's sentences to ports again, with their timing",
        description="Send the sentences of a recording to ports (bench port URLs) at their "
        "recorded times. A pty makes its link under --run-dir; add ?pace=0 for no baud pacing.",
    )  # fmt: skip
    replay.add_argument("file", type=Path, metavar="FILE.mcap")
    replay.add_argument(
        "--to", action="append", default=[], metavar="[DEVICE=]URL",
        help="a port URL: the lines the recorded run sent to that port (a URL no recorded "
        "device used is refused), or (gps=pty://gps) the named devices' lines; repeatable "
        "(udp://127.0.0.1:10110)",
    )  # fmt: skip
    replay.add_argument("--all", action="store_true",
                        help="send every device's lines to each --to URL that names no device"
                        ", wherever they went in the run (a bare URL's old default)")  # fmt: skip
    replay.add_argument("--device", action="append", default=[], metavar="NAME",
                        help="replay only this device (repeatable; all by default)")  # fmt: skip
    replay.add_argument("--speed", type=number("a speed factor", 0.01, 1000.0, low_open=False),
                        default=1.0, metavar="X", help="X times the recorded pace (1)")  # fmt: skip
    replay.add_argument("--loop", action="store_true", help="start again at the end, until Ctrl-C")
    replay.add_argument("--start", type=RECORDING_TIME, default=0.0,
                        metavar="SECONDS", help="skip this much of the recording")  # fmt: skip
    replay.add_argument("--end", type=RECORDING_TIME, metavar="SECONDS",
                        help="stop at this time of the recording")  # fmt: skip
    replay.add_argument("--wait", type=number("seconds", 0.0, 3600.0, low_open=False), default=0.0,
                        metavar="SECONDS", help="wait after opening the ports, before the "
                        "first sentence (time to connect a reader to a new pty)")  # fmt: skip
    replay.add_argument("--run-dir", type=Path, default=Path(DEFAULT_RUN_DIR), metavar="DIR",
                        help=f"where pty:// links go ({DEFAULT_RUN_DIR})")  # fmt: skip

    live_client.add_parser(sub, DEFAULT_RUN_DIR)

    export = sub.add_parser(
        "export", help="a recording's tracks as GPX (OpenCPN) and KML (Google Earth)",
        description="Write the own ship's track and each traffic target's from a recording: "
        "GPX 1.1 (a <trk> per vessel, for OpenCPN and chart plotters) and/or KML 2.2 (a "
        "Placemark per vessel with a time-stamped gx:Track per segment, for Google Earth). A "
        "reposition, an ArduPilot SITL restart, a jump or a gap in time starts a new segment; "
        "points are thinned to one per --every seconds of simulated time.",
    )  # fmt: skip
    export.add_argument("file", type=Path, metavar="FILE.mcap")
    export.add_argument("--gpx", type=Path, metavar="OUT.gpx", help="write GPX 1.1 here")
    export.add_argument("--kml", type=Path, metavar="OUT.kml", help="write KML 2.2 here")
    export.add_argument("--every", type=number("seconds", 0.0, 86400.0, low_open=False),
                        default=1.0, metavar="SECONDS",
                        help="a point per this much simulated time (1; 0 keeps every recorded "
                        "sample)")  # fmt: skip

    show = sub.add_parser(
        "show", help="list or print the built-in benches, scenarios, profiles, weather, traffic, "
        "devices, units, ArduPilot parameters",
        description="Print a built-in file to copy and edit (hild show bench default > "
        "my-bench.toml; hild show systemd hild.service; hild show ardupilot odin > odin.parm, "
        "ArduPilot Rover's parameters measured on the profile), list the names of a kind (hild "
        "show weather), or every kind and where an install keeps them (hild show).",
    )  # fmt: skip
    show.add_argument("kind", nargs="?", choices=("bench", "profile", "weather", "traffic",
                                                  "scenario", "device", "systemd",
                                                  "ardupilot"))  # fmt: skip
    show.add_argument("name", nargs="?", help="a built-in name (a unit's file name for systemd)")

    for command in (
        run,
        check,
        show,
        sim,
        pilot,
        scenario_run,
        sweep,
        inspect,
        recover,
        plot,
        replay,
        export,
    ):  # also after the command: hild run --debug
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help=DEBUG_HELP)  # fmt: skip
    return parser


DEBUG_HELP = "show the Python traceback of an error (for bug reports)"


def _bench_overrides(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--time-scale",
        type=number("a time scale", MIN_TIME_SCALE, MAX_TIME_SCALE, low_open=False),
        metavar="X",
        help=f"run X times faster than real time (0.5: half speed; {MIN_TIME_SCALE:g} to "
        f"{MAX_TIME_SCALE:g})",
    )
    p.add_argument("--rate", dest="rate_hz", metavar="HZ", help="model steps per s (1 to 2000)",
                   type=number("a rate in Hz", 1.0, 2000.0, low_open=False))  # fmt: skip
    p.add_argument("--seed", type=SEED, help="random seed of the run")
    p.add_argument(
        "--start-time", type=_start_time, metavar="TIME",
        help="'wall' (the clock) or e.g. 2026-06-01T12:00:00Z; an offset such as +02:00 is "
        "honoured, a time without one is UTC",
    )  # fmt: skip
    p.add_argument("--run-dir", metavar="DIR", type=_run_dir,
                   help=f"where pty:// symlinks go ({DEFAULT_RUN_DIR})")  # fmt: skip
    p.add_argument("--stats-interval", type=number("seconds", 0.01, 86400.0, low_open=False),
                   metavar="SECONDS",
                   help="loop statistics period, in simulated seconds (10; at --time-scale 10 "
                        "a loop.stats line comes every wall second)")  # fmt: skip


def _plot_waypoints(text: str) -> tuple[tuple[float, float], ...] | str:
    """`hild pilot`'s --waypoints, or 'pilot' (resolved against the recording's start)."""
    return text if text == "pilot" else pilot_options.waypoints(text)


def _start_time(text: str) -> str:
    from hild.bench import parse_start_time  # (numba comes with the bench: not for --help)

    try:
        parse_start_time(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected {e}, not {text!r}") from None
    return text


def _checked_recording_name(text: str, sim: bool = False) -> str:
    """A --record name, checked before the run; ``sim``: with the profile's name for the
    bench's (hild.record.config.SIM_PLACEHOLDERS)."""
    from hild.record.config import RUN_PLACEHOLDERS, SIM_PLACEHOLDERS, file_problem

    problem = file_problem(text, SIM_PLACEHOLDERS if sim else RUN_PLACEHOLDERS)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"expected {problem}, not {text!r}")
    return text


def _record_file(text: str) -> str:
    return _checked_recording_name(text)


def _sim_record_file(text: str) -> Path:
    """`hild sim --record`: as hild run's, with the profile's name for the bench's."""
    return Path(_checked_recording_name(text, sim=True))


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


def _overrides(args: argparse.Namespace) -> dict:
    keys = ("time_scale", "rate_hz", "seed", "start_time", "run_dir", "stats_interval")
    return {k: getattr(args, k) for k in keys}


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
)  # fmt: skip  (-2, -3, -5: getaddrinfo's EAI_NONAME, EAI_AGAIN, EAI_NODATA)


def _mqtt_options(args: argparse.Namespace) -> dict:
    return {"url": args.mqtt, "prefix": args.mqtt_prefix, "control": args.mqtt_control,
            "signalk": args.signalk}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "inspect" and args.force and not args.recover:
        parser.error("inspect: --force replaces the copy that --recover writes: add --recover")
    if args.command == "export" and args.gpx is None and args.kml is None:
        parser.error("export: say what to write: --gpx OUT.gpx, --kml OUT.kml, or both")
    try:
        if args.command == "run":
            from hild.run import run_bench

            return run_bench(args.bench, _overrides(args), args.duration, args.log_format,
                             args.log_level, _mqtt_options(args), args.record,
                             args.quiet, args.foxglove)  # fmt: skip
        if args.command == "layout":
            from hild.bench import load_bench
            from hild.live.layout import layout_json

            write_or_drop(sys.stdout, layout_json(load_bench(args.bench)) + "\n")
            return 0
        if args.command == "warm":
            from hild.warm import warm

            return warm(args.benches)
        if args.command == "check":
            from hild.check import check_bench

            return check_bench(args.bench)
        if args.command == "sim":
            options = dict(
                dt=args.dt,
                method=args.method,
                commands=args.cmd,
                output_interval=args.output_interval,
                weather=args.weather,
            )
            if args.repeat > 1 or len(args.schedule) > 1:
                from hild.batch import run_batch

                return run_batch(args.profile, args.duration, seed=args.seed,
                                 repeat=args.repeat, schedules=args.schedule, out=args.out,
                                 record=args.record, **options)  # fmt: skip
            from hild.sim import run_sim, summary_text

            summary = run_sim(args.profile, args.duration, seed=args.seed,
                              schedule=args.schedule[0] if args.schedule else None,
                              out=args.out, record=args.record, **options)  # fmt: skip
            sys.stdout.write(summary_text(summary) + "\n")
            if summary.get("record", {}).get("error"):
                return EXIT_RECORDING_FAILED
        if args.command == "show":
            from hild.show import show

            return show(args.kind, args.name)
        if args.command == "ctl":
            return live_client.run_ctl(args)
        if args.command == "pilot":
            return pilot_options.run_from_args(args)
        if args.command == "scenario":
            from hild.scenario.command import run_scenario_command

            return run_scenario_command(args)
        if args.command == "sweep":
            from hild.sweep.command import run_sweep_command

            return run_sweep_command(args)
        if args.command in ("inspect", "recover", "plot", "replay", "export"):
            from hild.record.commands import run_record_command

            return run_record_command(args)
    except BrokenPipeError:  # `hild show bench default | head`: the reader has what it wanted
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error
        return 1
    except Exception as e:
        if args.debug:  # the traceback too; the exit status as without it
            traceback.print_exc()
        return _report(e)
    return 0


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
    write_or_drop(sys.stderr, f"hild: internal error: {type(e).__name__}: {e} (run again with "
                  "--debug for the traceback, and please report it)\n")  # fmt: skip
    return 1


if __name__ == "__main__":
    sys.exit(main())
