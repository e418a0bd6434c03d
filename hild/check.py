"""`hild check`: load a bench as `hild run` would, say what it would run and what would stop
it now. Imports neither the daemon nor, for a profile whose step limit is remembered, numba."""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hild.config import MISSING, ConfigError, looks_like_path
from hild.devices.registry import speaks_n2k
from hild.fleet import describe
from hild.n2k.bus import BUS_BITS_PER_S
from hild.profiles import BENCHES, SCENARIOS
from hild.transport.can import can_warnings
from hild.transport.probe import bind_problem, listen_address
from hild.transport.url import CAN_SCHEMES, PortSpec, parse_port_url

if TYPE_CHECKING:
    from hild.bench import Bench


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """`hild check`'s parser, on the subparsers ``sub`` of `hild`."""
    parser = sub.add_parser(
        "check",
        help="validate a bench file without running it",
        description="Check a bench file: keys, values, profiles, device types, port URLs and the "
        "byte budget of every serial line. Exits with 2 and lists every problem.",
    )
    parser.add_argument("bench", nargs="?", help="bench file, or a built-in bench name (default)")
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """`hild check`."""
    return check_bench(args.bench)


def check_bench(name_or_path: str | None) -> int:
    """Validate a bench (or a scenario) and print what it would run; errors raise
    BenchError (ScenarioError), or a ConfigError for a path to no file at all."""
    from hild.bench import load_bench  # (imported here: `hild --help` needs no bench)
    from hild.scenario.check import is_scenario

    if is_scenario(name_or_path):
        assert name_or_path is not None
        return check_scenario(name_or_path)
    if name_or_path is not None and _missing_path(name_or_path):  # either kind it could be
        raise ConfigError(
            name_or_path,
            "",
            MISSING,
            "an existing bench or scenario file (no "
            f"such file; built-in benches: {BENCHES.listing()}; built-in "
            f"scenarios: {SCENARIOS.listing()})",
        )
    bench = load_bench(name_or_path)
    out = sys.stdout
    what = describe(bench.boats) if bench.boats else bench.profile
    out.write(
        f"{bench.file}: OK: {what} in {bench.weather.preset} weather, "
        f"{len(bench.devices)} device(s), {bench.rate_hz:g} Hz\n"
    )

    for bus in bench.buses:
        out.write(
            f"  {bus.url} (NMEA 2000 bus: {', '.join(bus.devices)}): "
            f"{bus.bits_per_s / 1000:.1f} of {BUS_BITS_PER_S // 1000} kbit/s "
            f"({100 * bus.load:.1f} %)\n"
        )
    for budget in bench.budgets:
        out.write(
            f"  {budget.url} ({', '.join(budget.devices)}): {budget.bytes_per_s:.0f} of "
            f"{budget.capacity_bytes_per_s:.0f} bytes/s at {budget.baud} baud "
            f"({100 * budget.load:.0f} %)\n"
        )
    for warning in port_warnings(bench):
        out.write(f"  warning: {warning}\n")
    if name_or_path and SCENARIOS.builtin_path(name_or_path).is_file():
        out.write(
            f"  (also a built-in scenario: hild check {SCENARIOS.builtin_path(name_or_path)} "
            "checks that)\n"
        )
    return 0


def check_scenario(name_or_path: str) -> int:
    """Validate a scenario (its tables, its bench's, its sweep's) and say what it would run;
    errors raise."""
    from hild.scenario.check import check_controller
    from hild.scenario.file import load_scenario

    scenario = load_scenario(name_or_path)
    check_controller(scenario)
    bench = scenario.bench
    out = sys.stdout
    if scenario.is_fleet:
        between = [k for k, v in vars(scenario.fleet_criteria).items() if v is not None]
        out.write(
            f"{scenario.file}: OK: scenario '{scenario.name}': {describe(bench.boats)} in "
            f"{bench.weather.preset} weather, {len(bench.traffic)} target(s), "
            f"{scenario.duration_s:g} s; criteria between the boats: "
            f"{', '.join(between) or 'none'}\n"
        )
        for boat in scenario.plans:
            line = _plan_line(boat.mission, boat.controller, boat.criteria)
            out.write(f"  {boat.boat}: {line}\n")
    else:
        mission, spec = scenario.mission, scenario.controller
        out.write(
            f"{scenario.file}: OK: scenario '{scenario.name}': {bench.profile} in "
            f"{bench.weather.preset} weather, {len(bench.traffic)} target(s), "
            f"{len(mission.waypoints)} waypoint(s) x {mission.laps} lap(s), "
            f"{scenario.duration_s:g} s; {_controller_said(spec, scenario.criteria)}\n"
        )
    if "sweep" in scenario.document:
        from hild.sweep.plan import check_runs, plan_sweep

        plan = plan_sweep(scenario)
        check_runs(scenario, plan)
        swept = ", ".join(plan.paths) or "seeds only"
        out.write(
            f"  sweep '{plan.name}': {len(plan.runs)} run(s), {plan.mode} over {swept}, "
            f"{plan.seeds} seed(s) each, sweep seed {plan.seed}\n"
        )
    return 0


def _plan_line(mission, spec, criteria) -> str:
    """A fleet boat's mission, controller and criteria, for `hild check`'s answer."""
    waypoints = f"{len(mission.waypoints)} waypoint(s) x {mission.laps} lap(s)"
    return f"{waypoints}; {_controller_said(spec, criteria)}"


def _controller_said(spec, criteria) -> str:
    judged = [name for name, value in vars(criteria).items() if value not in (None, False)]
    controller = {
        "pilot": "hild's pilot in lockstep",
        "python": f"{spec.target} in lockstep",
        "command": f"the program {' '.join(spec.target or ())!r}",
    }[spec.kind]
    return (
        f"controller: {controller} by {spec.protocol} to {spec.device}; criteria: "
        f"{', '.join(judged) or 'none'}"
    )


def _missing_path(name_or_path: str) -> bool:
    """A path (it ends in .toml or has a separator, as hild.config.FileKind.resolve reads it)
    to nothing."""
    candidate = Path(name_or_path)
    return looks_like_path(name_or_path) and not candidate.exists() and not candidate.is_symlink()


def port_warnings(bench: Bench) -> list[str]:
    """What would stop `hild run` now though the bench is right: an address another program
    holds or that is not on this machine, a host name that does not resolve, a CAN interface
    missing or down (or python-can not installed); and a device whose lines a CAN bus cannot
    carry."""
    warnings: list[str] = []
    seen: set[str] = set()
    for config in bench.devices:
        for url in config.ports:
            spec = parse_port_url(url, bench.run_dir)
            if spec.scheme in CAN_SCHEMES:
                warnings.extend(_can_warnings(config, url, spec, first=spec.url not in seen))
                seen.add(spec.url)
                continue
            if spec.url in seen or spec.scheme not in ("udp", "tcp"):
                continue
            seen.add(spec.url)
            where = f"{url} (device {config.name})"
            address = listen_address(spec)  # None: a destination
            host, number = address or (spec.host, spec.port)
            try:  # an address to bind or to send to: it must resolve
                socket.getaddrinfo(host, number, type=socket.SOCK_DGRAM)
            except OSError as e:
                warnings.append(f"{where}: {host} does not resolve now ({e})")
                continue
            if address is None:
                continue
            problem = bind_problem(spec, address)
            if problem is not None:
                warnings.append(
                    f"{where}: cannot bind {address[0]}:{address[1]} now "
                    f"({problem.strerror or problem})"
                )
    return warnings


def _can_warnings(config, url: str, spec: PortSpec, first: bool) -> list[str]:
    """A CAN port's problems now (once a port), and a device that cannot send on it: an NMEA
    0183 one (a CAN bus carries NMEA 2000's frames)."""
    where = f"{url} (device {config.name})"
    warnings = [f"{where}: {problem}" for problem in can_warnings(spec)] if first else []
    if not speaks_n2k(config.model):
        warnings.append(
            f"{where}: a CAN bus carries NMEA 2000 frames, and {config.model} is no N2K device: "
            "its lines would be dropped"
        )
    return warnings
