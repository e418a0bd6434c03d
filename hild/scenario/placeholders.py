"""Placeholders in an external controller's command, filled in per run.

Each argument of ``[controller] command`` may hold placeholders in braces, replaced by what
the run picked (``docs/scenario-external.md`` lists them):

- of a device's ports: ``{url:DEVICE}`` (its first port, as the controller reaches it:
  ``udp://127.0.0.1:PORT``, ``tcp://...``, ``pty:///PATH``), ``{url:DEVICE:SCHEME}`` (its
  first port of that scheme), ``{pty:DEVICE}`` (the path of its pty link), ``{udp:DEVICE}``
  and ``{tcp:DEVICE}`` (``HOST:PORT``), ``{port:DEVICE}`` (the number of its first UDP or TCP
  port), ``{port:DEVICE:SCHEME}``;
- of the run: ``{run_dir}``, ``{output_dir}``, ``{seed}``, ``{duration}``, ``{time_scale}``,
  ``{rate_hz}`` and ``{wall_rate_hz}`` (the controller's rate in simulated and in wall
  seconds), ``{python}`` (this Python), ``{scenario_dir}``;
- of the mission and the bench: ``{waypoints}`` (``N,E;N,E;...`` metres from the origin, as
  ``hild pilot --waypoints`` takes them), ``{laps}``, ``{acceptance_m}``, ``{speed}`` (the
  first leg's, m/s), ``{latitude}``, ``{longitude}`` (the origin, degrees), ``{profile}``,
  ``{protocol}``, ``{device}`` (the command device under test), ``{boat}`` (a fleet's: the
  boat the program drives, its mission and device the boat's own; empty for one boat).

``{{`` and ``}}`` stand for literal braces. Anything else in braces is an error, found before
anything starts.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hild.config import ConfigError
from hild.scenario.file import Scenario
from hild.scenario.process import unstartable
from hild.scenario.wiring import RunPort, RunWiring

KEY = "controller.command"
TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
PORT_KINDS = ("url", "pty", "udp", "tcp", "port")
SCHEMES = ("pty", "udp", "tcp", "serial")
RUN_NAMES = (
    "run_dir",
    "output_dir",
    "seed",
    "duration",
    "time_scale",
    "rate_hz",
    "wall_rate_hz",
    "python",
    "scenario_dir",
    "waypoints",
    "laps",
    "acceptance_m",
    "speed",
    "latitude",
    "longitude",
    "profile",
    "protocol",
    "device",
    "boat",
)
EXPECTED = (
    "placeholders {url:DEVICE}, {url:DEVICE:SCHEME}, {pty:DEVICE}, {udp:DEVICE}, "
    "{tcp:DEVICE}, {port:DEVICE}, {port:DEVICE:SCHEME} or "
    + ", ".join(f"{{{n}}}" for n in RUN_NAMES)
    + " ({{ and }} for literal braces; see docs/scenario-external.md)"
)


@dataclass(frozen=True)
class RunFacts:
    """What a run's placeholders may say besides its ports."""

    output_dir: Path
    time_scale: float
    boat: str = ""  # a fleet's: the boat this program drives ("" for one boat)


def number(value: float) -> str:
    """A number as an argument: no needless ".0", no exponent for ordinary values."""
    return f"{value:.12g}" if value != int(value) else str(int(value))


def run_values(scenario: Scenario, wiring: RunWiring, facts: RunFacts) -> dict[str, str]:
    bench, mission, spec = scenario.bench, scenario.mission, scenario.controller
    waypoints = ";".join(f"{number(w.north)},{number(w.east)}" for w in mission.waypoints)
    return {
        "run_dir": str(wiring.run_dir),
        "output_dir": str(facts.output_dir),
        "seed": str(scenario.seed),
        "duration": number(scenario.duration_s),
        "time_scale": number(facts.time_scale),
        "rate_hz": number(spec.rate_hz),
        "wall_rate_hz": number(spec.rate_hz * facts.time_scale),
        "python": sys.executable,
        "scenario_dir": str(Path(scenario.file).resolve().parent),
        "waypoints": waypoints,
        "laps": str(mission.laps),
        "acceptance_m": number(mission.acceptance_m),
        "speed": number(mission.waypoints[0].speed),
        "latitude": f"{bench.origin.latitude_deg:.8f}",
        "longitude": f"{bench.origin.longitude_deg:.8f}",
        "profile": bench.profile,
        "protocol": spec.protocol,
        "device": spec.device or "",
        "boat": facts.boat,
    }


def expand_command(scenario: Scenario, wiring: RunWiring, facts: RunFacts) -> tuple[str, ...]:
    """The controller's argv with every placeholder filled in; a ConfigError naming
    ``controller.command`` for an unknown placeholder, device or port."""
    argv = scenario.controller.target
    assert isinstance(argv, tuple)
    values = run_values(scenario, wiring, facts)

    def fail(arg: str, problem: str) -> ConfigError:
        return ConfigError(scenario.file, KEY, list(argv), f"{EXPECTED}; in {arg!r}: {problem}")

    def lookup(arg: str) -> Callable[[str], str]:
        def value(name: str) -> str:
            if name in values:
                return values[name]
            kind, _, rest = name.partition(":")
            if kind in PORT_KINDS and rest:
                return port_value(kind, rest, wiring, lambda p: fail(arg, p))
            raise fail(arg, f"unknown placeholder {{{name}}}")

        return value

    def failing(arg: str) -> Callable[[str], Exception]:
        return lambda problem: fail(arg, problem)

    return tuple(substitute(arg, lookup(arg), failing(arg)) for arg in argv)


def check_program(scenario: Scenario, argv: Sequence[str]) -> None:
    """The program of a filled-in ``argv`` can be started; a ConfigError naming
    ``controller.command`` if not (before the run, not a controller that "exited" at once)."""
    problem = unstartable(argv[0])
    if problem is not None:
        raise ConfigError(
            scenario.file,
            KEY,
            list(scenario.controller.target or ()),
            "a program that can be started as its first item (a name on $PATH, "
            f"or a path; {{scenario_dir}}/NAME for one beside the scenario): "
            f"{problem}",
        )


def substitute(text: str, value: Callable[[str], str], fail: Callable[[str], Exception]) -> str:
    """``text`` with ``{name}`` replaced by ``value(name)``, ``{{``/``}}`` by braces."""

    def one(match: re.Match) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        if match.group(1) is None:
            raise fail(f"a lone {token!r} (write {token * 2!r} for a literal brace)")
        return value(match.group(1).strip())

    return TOKEN.sub(one, text)


def port_value(kind: str, rest: str, wiring: RunWiring, fail: Callable[[str], Exception]) -> str:
    """``{kind:DEVICE}`` or ``{kind:DEVICE:SCHEME}`` for the run's ports."""
    device, _, scheme = rest.partition(":")
    ports = wiring.ports.get(device)
    if ports is None:
        names = ", ".join(wiring.ports) or "none"
        raise fail(f"no device {device!r} in the bench (its devices: {names})")
    if kind in ("pty", "udp", "tcp"):
        if scheme:
            raise fail(f"{{{kind}:DEVICE}} takes no scheme (got {scheme!r})")
        scheme = kind
    elif scheme and scheme not in SCHEMES:
        raise fail(f"unknown scheme {scheme!r}: one of {', '.join(SCHEMES)}")
    if kind == "port" and scheme in ("pty", "serial"):
        raise fail("{port:...} is the number of a UDP or TCP port")
    wanted = (scheme,) if scheme else (("udp", "tcp") if kind == "port" else SCHEMES)
    port = _first(ports, wanted)
    if port is None:
        has = ", ".join(p.bench_url for p in ports)
        raise fail(f"device {device!r} has no {' or '.join(wanted)} port (it has {has})")
    if kind == "url":
        return port.controller_url
    if kind == "pty":
        assert port.path is not None
        return port.path
    if kind == "port":
        return str(port.port)
    address = port.address
    assert address is not None
    return address


def _first(ports: Sequence[RunPort], schemes: Sequence[str]) -> RunPort | None:
    return next((p for p in ports if p.scheme in schemes), None)
