"""`hild pilot`'s command-line options: parsing, checking, and the entry point.

Bad values stop at argparse (exit 2, a message naming the option and what it
expects); so do unknown profiles, protocols a vessel cannot speak and unusable
URLs, before anything is opened.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from hild.arguments import number, whole_number
from hild.config import ConfigError
from hild.pilot.actuation import ActuationError
from hild.pilot.control import PidGains
from hild.pilot.guidance import GuidanceConfig
from hild.pilot.links import LinkError
from hild.pilot.mission import parse_waypoints
from hild.pilot.runner import PilotOptions, PilotSession
from hild.pilot.wire import PROTOCOLS, ProtocolError
from hild.traffic.read import MAX_SPEED_KN
from hild.traffic.targets import KNOT

DEFAULTS = PilotOptions()
MAX_RATE_HZ = 1000.0
GAIN = number("a gain", low_open=False)


rate_hz = number("a rate in Hz", 0.0, MAX_RATE_HZ)
laps = whole_number("a number of laps", 1)


def gains(count: int, names: str):
    def parse(text: str) -> PidGains:
        parts = text.split(",")
        if len(parts) != count:
            raise argparse.ArgumentTypeError(f"expected {names} ({count} numbers), not {text!r}")
        values = [GAIN(p.strip()) for p in parts]
        return PidGains(*values)

    return parse


def waypoints(text: str) -> tuple[tuple[float, float], ...]:
    try:
        return tuple(parse_waypoints(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """`hild pilot`'s parser, on the subparsers ``sub`` of `hild`."""
    parser = sub.add_parser(
        "pilot",
        help="a reference autopilot: sail a waypoint mission through the daemon's ports",
        description="Sail a four-waypoint mission (thesis ch. 5) as an external controller "
        "would: read NMEA sensor sentences, send actuator commands (LOS guidance, PID heading, "
        "PI speed). Exits 0 when the mission is complete, 1 on --timeout or a signal, 3 when "
        "an AIS target would pass closer than --stop-cpa.",
    )
    add_arguments(parser)
    parser.set_defaults(handler=run_from_args)
    return parser


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `hild pilot`."""
    g = DEFAULTS.config.guidance
    h, s = DEFAULTS.config.heading, DEFAULTS.config.speed
    p.add_argument(
        "--nmea",
        default=DEFAULTS.nmea,
        metavar="URL",
        help="sensor sentences: udp://HOST:PORT (bind and listen), tcp://HOST:PORT (connect), "
        f"or a serial device path or URL ({DEFAULTS.nmea})",
    )
    p.add_argument(
        "--commands",
        default=DEFAULTS.commands,
        metavar="URL",
        help="where commands go: udp://HOST:PORT, tcp://HOST:PORT (the same URL as --nmea "
        f"shares the connection) or a serial device ({DEFAULTS.commands})",
    )
    p.add_argument(
        "--protocol",
        choices=tuple(PROTOCOLS),
        default=DEFAULTS.protocol,
        help="iec: TRC and ROR; phldc: Odin's PHLDC/PHLDT; pydir: Heron's PYDIR (twin thrusters)",
    )
    p.add_argument(
        "--hsc",
        action=argparse.BooleanOptionalAction,
        default=DEFAULTS.heading_reference,
        help="send the heading to steer as $APHSC with each command set (on)",
    )
    p.add_argument(
        "--profile", default=DEFAULTS.profile, metavar="NAME", help="vessel profile or TOML (odin)"
    )
    p.add_argument(
        "--waypoints",
        type=waypoints,
        metavar="N,E;N,E;N,E;N,E",
        help="waypoints in metres north and east of the first fix (default: a 200 m square "
        "ahead and to starboard of the start heading)",
    )
    p.add_argument("--laps", type=laps, default=DEFAULTS.laps, metavar="N", help="times round (1)")
    p.add_argument(
        "--speed",
        type=number("a speed in m/s", hi=MAX_SPEED_KN * KNOT, note="a scenario's limit, 60 kn"),
        default=DEFAULTS.config.speed_ref,
        metavar="M/S",
        help=f"speed over ground to hold ({DEFAULTS.config.speed_ref:g})",
    )
    p.add_argument(
        "--acceptance-radius",
        type=number("a radius in m"),
        default=g.acceptance_radius_m,
        metavar="M",
        help=f"a waypoint is reached inside this circle ({g.acceptance_radius_m:g})",
    )
    p.add_argument(
        "--lookahead",
        type=number("a distance in m"),
        default=g.lookahead_m,
        metavar="M",
        help=f"line-of-sight lookahead distance ({g.lookahead_m:g})",
    )
    p.add_argument(
        "--heading-gains",
        type=gains(3, "KP,KI,KD"),
        metavar="KP,KI,KD",
        help=f"heading PID, steering demand per rad ({h.kp:g},{h.ki:g},{h.kd:g})",
    )
    p.add_argument(
        "--speed-gains",
        type=gains(2, "KP,KI"),
        metavar="KP,KI",
        help=f"speed PI, thrust demand per m/s ({s.kp:g},{s.ki:g})",
    )
    p.add_argument(
        "--rate",
        type=rate_hz,
        default=DEFAULTS.rate_hz,
        metavar="HZ",
        help=f"re-send the commands this often, in the sensors' time ({DEFAULTS.rate_hz:g})",
    )
    p.add_argument(
        "--time-scale",
        type=number("a time scale", 0.0, 1000.0),
        metavar="X",
        help="the run's time scale, as hild run's --time-scale (default: read from the fixes' "
        "timestamps; given, the commands keep the watchdog's lease from the first one)",
    )
    p.add_argument(
        "--timeout",
        type=number("a time in s"),
        metavar="SECONDS",
        help="give up (exit 1) after this much sensor time without completing the mission",
    )
    p.add_argument(
        "--stop-cpa",
        type=number("a distance in m"),
        metavar="METRES",
        help="stop (exit 3) when an AIS target on the sensor line would pass closer than this "
        "(its CPA, both holding course and speed) within --cpa-horizon",
    )
    p.add_argument(
        "--cpa-horizon",
        type=number("a time in s"),
        default=DEFAULTS.cpa_horizon_s,
        metavar="SECONDS",
        help=f"how far ahead --stop-cpa looks ({DEFAULTS.cpa_horizon_s:g})",
    )


def options_from(args: argparse.Namespace) -> PilotOptions:
    config = DEFAULTS.config
    config = replace(
        config,
        speed_ref=args.speed,
        guidance=GuidanceConfig(args.lookahead, args.acceptance_radius),
        heading=args.heading_gains or config.heading,
        speed=args.speed_gains or config.speed,
    )
    return PilotOptions(
        nmea=args.nmea,
        commands=args.commands,
        protocol=args.protocol,
        profile=args.profile,
        waypoints=args.waypoints,
        laps=args.laps,
        config=config,
        rate_hz=args.rate,
        timeout_s=args.timeout,
        heading_reference=args.hsc,
        stop_cpa_m=args.stop_cpa,
        cpa_horizon_s=args.cpa_horizon,
        time_scale=args.time_scale,
    )


def run_from_args(args: argparse.Namespace) -> int:
    """`hild pilot`: 0 mission completed, 1 timed out or stopped, 2 bad arguments, 3 stopped by
    --stop-cpa."""

    def emit(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    try:
        session = PilotSession(options_from(args), emit)
    except (ConfigError, ProtocolError, LinkError, ActuationError) as e:
        sys.stderr.write(f"hild pilot: error: {e}\n")
        return 2
    session.open_listener()  # OSError: the caller reports it and exits 1
    return session.run()
