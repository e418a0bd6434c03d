"""``hild ctl``: runtime control of a running ``hild run`` without a broker.

Each subcommand builds the request the MQTT control topic takes (docs/mqtt.md), sends it over
the run directory's socket (ctl.py) and prints the answer. Exit status: 0 applied, 1 refused
(the reason on stderr), 2 no daemon answers (or an option that makes no request).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from hild.arguments import finite, number
from hild.config import json_value
from hild.live.address import STATUS, connect, socket_path
from hild.log import write_or_drop
from hild.rundir import DEFAULT_RUN_DIR

EXIT_REFUSED = 1
EXIT_NO_DAEMON = 2


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """`hild ctl`'s parser, on the subparsers ``sub`` of `hild`."""
    ctl = sub.add_parser(
        "ctl",
        help="change a running hild run: weather, faults, reposition, commands, status",
        description="Runtime control of a running `hild run` over the Unix socket in its run "
        "directory (this user only), with the requests and answers of the MQTT control topic: "
        "hild ctl weather gale-hs1; hild ctl fault gps dropout --duration 30; hild ctl fault "
        "--actuator port stuck; hild ctl reposition --latitude 59.42 --longitude 10.5; hild ctl "
        "commands '$RCPRC,...'; hild ctl status. On a fleet, --boat NAME picks the boat a "
        "fault, a reposition or commands are for (the first boat by default). Exit 0 when "
        "applied, 1 when refused (the reason printed), 2 when no daemon answers (or the "
        "command line asks nothing it can send).",
    )
    ctl.add_argument(
        "--run-dir",
        default=DEFAULT_RUN_DIR,
        metavar="DIR",
        help=f"the run's directory, which holds its socket ({DEFAULT_RUN_DIR})",
    )
    ctl.add_argument(
        "--timeout",
        type=number("seconds", hi=3600.0),
        default=10.0,
        metavar="SECONDS",
        help="how long to wait for the answer (10)",
    )
    requests = ctl.add_subparsers(dest="request", required=True, metavar="REQUEST")
    weather = requests.add_parser(
        "weather", help="a new weather: a preset, or part of a weather file as JSON (--json)"
    )
    weather.add_argument("preset", nargs="?", help="a weather preset (hild show weather)")
    fault = requests.add_parser("fault", help="a sensor's or an actuator's fault")
    fault.add_argument(
        "what",
        nargs="*",
        metavar="DEVICE KIND | KIND",
        help="a sensor device and a fault kind (dropout, freeze, invalid, "
        "bias_jump, clear), or with --actuator the actuator's (stuck, lost, "
        "clear); or both in --json",
    )
    fault.add_argument("--actuator", metavar="NAME", help="an actuator of the vessel")
    fault.add_argument(
        "--duration",
        type=number("seconds"),
        metavar="SECONDS",
        help="a sensor's fault: how long (for good; an actuator's lasts until clear)",
    )
    fault.add_argument(
        "--start",
        type=number("seconds", lo=0.0, low_open=False),
        metavar="SECONDS",
        help="a sensor's fault: when, in simulated time (now)",
    )
    fault.add_argument("--quantity", help="bias_jump: the quantity (e.g. heading)")
    fault.add_argument("--value", type=finite("the jump"), help="bias_jump: the jump, in its unit")
    move = requests.add_parser("reposition", help="move the boat")
    for name, unit in (
        ("latitude", "degrees"),
        ("longitude", "degrees"),
        ("north", "m"),
        ("east", "m"),
        ("heading", "degrees"),
        ("speed", "m/s"),
    ):
        move.add_argument(f"--{name}", type=finite(unit), metavar=unit.upper().replace("/", "_"))
    commands = requests.add_parser(
        "commands",
        help="NMEA command lines, as a controller sends them, through the bench's command devices",
    )
    commands.add_argument("lines", nargs="+", metavar="LINE")
    commands.add_argument("--device", help="one command device (all of them)")
    for parser, what in (
        (fault, "the boat whose actuator fails (a sensor is named by itself)"),
        (move, "the boat to move"),
        (commands, "the boat whose command devices take the lines (with --device: its boat)"),
    ):
        parser.add_argument(
            "--boat",
            metavar="NAME",
            help=f"a fleet's boat: {what}; the first boat by default",
        )
    requests.add_parser("traffic", help="add, remove or re-task a target (--json)")
    requests.add_parser(STATUS, help="the run's status as JSON")
    for parser in (weather, fault, move, commands, requests.choices["traffic"]):
        parser.add_argument(
            "--json",
            metavar="OBJECT",
            help="request fields as a JSON object, merged over the options'",
        )
    ctl.set_defaults(handler=run_ctl)
    return ctl


def shown(text: str, limit: int = 80) -> str:
    """An option's value as an error quotes it: cut to ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def request_of(args: argparse.Namespace) -> tuple[str, Any]:
    """The request's name and payload from the command line (ValueError: no request)."""
    name = args.request
    if name == STATUS:
        return name, {}
    payload: dict[str, Any] = {}
    if name == "weather" and args.preset:
        payload["preset"] = args.preset
    elif name == "fault":
        if args.actuator:
            if len(args.what) != 1:
                raise ValueError("fault --actuator NAME takes one KIND (stuck, lost, clear)")
            timed = [f"--{key}" for key in ("duration", "start") if getattr(args, key) is not None]
            if timed:
                raise ValueError(
                    f"fault --actuator: {' and '.join(timed)} time a sensor's "
                    "fault; an actuator's starts now, lasts until clear"
                )
            payload = {"actuator": args.actuator, "kind": args.what[0]}
        elif args.what or not args.json:
            if len(args.what) != 2:
                raise ValueError(
                    "fault takes DEVICE KIND (or --actuator NAME KIND, or the "
                    "request's fields in --json)"
                )
            payload = {"device": args.what[0], "kind": args.what[1]}
        for key in ("duration", "start", "quantity", "value"):
            if getattr(args, key) is not None:
                payload[key] = getattr(args, key)
    elif name == "reposition":
        keys = {
            "latitude": "latitude",
            "longitude": "longitude",
            "north": "north",
            "east": "east",
            "heading": "heading_deg",
            "speed": "speed",
        }
        payload = {
            field: getattr(args, key)
            for key, field in keys.items()
            if getattr(args, key) is not None
        }
    elif name == "commands":
        payload = {"lines": list(args.lines)}
        if args.device:
            payload["device"] = args.device
    if getattr(args, "boat", None) is not None:
        payload["boat"] = args.boat
    if getattr(args, "json", None):
        try:
            extra = json_value(args.json)
        except ValueError as e:
            raise ValueError(f"--json {shown(args.json)}: expected a JSON object ({e})") from None
        if not isinstance(extra, dict):
            raise ValueError(f"--json {shown(args.json)}: expected a JSON object")
        payload.update(extra)
    if not payload:
        raise ValueError(f"{name}: nothing to ask (see hild ctl {name} --help)")
    return name, payload


def run_ctl(args: argparse.Namespace) -> int:
    try:
        name, payload = request_of(args)
    except ValueError as e:
        write_or_drop(sys.stderr, f"hild ctl: {e}\n")
        return EXIT_NO_DAEMON
    path = socket_path(Path(args.run_dir))
    try:
        with connect(path, args.timeout) as sock:
            # a daemon that serves all the connections it may answers this one "busy" and
            # closes it, maybe before the request is sent: its answer is read all the same
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(json.dumps({"request": name, "payload": payload}).encode() + b"\n")
            answer = json.loads(_read_line(sock))
    except (OSError, ValueError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        write_or_drop(
            sys.stderr,
            f"hild ctl: no hild run answers on {path} ({reason}); is one "
            "running with this run directory (--run-dir)?\n",
        )
        return EXIT_NO_DAEMON
    write_or_drop(sys.stdout, json.dumps(answer, indent=None if name != STATUS else 2) + "\n")
    if not answer.get("ok"):
        write_or_drop(sys.stderr, f"hild ctl: refused: {answer.get('error', answer)}\n")
        return EXIT_REFUSED
    return 0


def _read_line(sock) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            raise ValueError("the daemon closed the connection")
        data += chunk
    return data
