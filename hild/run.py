"""`hild run`: load the bench, tell the user where to connect, run the daemon."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace

from hild.ardupilot.howto import sitl_commands
from hild.bench import Bench, load_bench
from hild.config import MISSING, ConfigError
from hild.drivers.realtime import Daemon
from hild.examples import command_example, read_example
from hild.firstcontact import checked_before_compiling
from hild.fleet import describe
from hild.kernel_cache import announce_compiling
from hild.live.address import parse_foxglove_address
from hild.live.ctl import ControlSocket
from hild.live.foxglove import FoxgloveLive  # (it loads the SDK only when it starts)
from hild.live.status import StatusBoard
from hild.live.statusline import StatusLine
from hild.log import configure_logging, write_or_drop
from hild.mirror.config import from_url
from hild.mirror.observer import Mirror
from hild.record.config import DEFAULT_RATE_HZ, EXIT_RECORDING_FAILED, RecordConfig
from hild.record.observer import Recorder
from hild.rundir import RunDir
from hild.systemd import notifier_from_environment


def banner(daemon: Daemon) -> str:
    """Where to connect: one line per device and port."""
    bench: Bench = daemon.bench
    o = bench.origin
    weather = f"{bench.weather.preset} weather"
    if bench.weather.moved:  # the actual means are on the weather line
        weather += f" ({', '.join(bench.weather.moved)} set by the bench)"
    what = describe(bench.boats) if len(bench.boats) > 1 else bench.vessel.name
    lines = [
        f"hild: bench '{bench.name}': {what} in {weather} at "
        f"{abs(o.latitude_deg):.5f} {'N' if o.latitude_deg >= 0 else 'S'} "
        f"{abs(o.longitude_deg):.5f} {'E' if o.longitude_deg >= 0 else 'W'}, "
        f"{bench.rate_hz:g} Hz, time scale {bench.time_scale:g}.",
        f"  {weather_line(bench)}",
        f"  {start_line(bench)}",
        "Connect to:",
    ]
    readers: dict[str, str] = {}  # one way to read a sensor per kind of port
    world = daemon.world
    for rt in world.devices:
        c = rt.device.config
        what = rt.device.describe()
        for port in rt.ports:
            where = port.describe()
            if port.spec.scheme == "pty":  # a serial port names its baud rate itself
                where += f", {port.spec.baud or c.baud} baud"
            lines.append(f"  {what:<50} {where}")
            if not rt.takes_commands and port.spec.scheme not in readers:
                readers[port.spec.scheme] = read_example(port, port.spec.baud or c.baud)
    links = world.links  # (a fleet's: one per boat it flies, every one's frames pace the loop)
    for link in links:
        where = link.socket.where if link.socket is not None else link.config.ports[0]
        lines.append(f"  {link.describe():<50} {where}; its frames pace the loop")
    lines.extend(how_to_connect([r for r in readers.values() if r], daemon))
    for link in links:
        if len(links) > 1:
            lines.append(f"{link.config.name} flies boat {link.config.boat}:")
        lines.extend(sitl_commands(bench, link))
    lines.extend(d for d in (o.describe() for o in daemon.observers) if d)
    lines.append("Ctrl-C stops. Logs go to stderr.")
    return "\n".join(lines)


def weather_line(bench: Bench) -> str:
    """The weather as the run has it: the preset's means, moved by the bench's own."""
    w = bench.weather
    parts = [
        f"wind {w.wind.speed:g} m/s from {w.wind.from_deg % 360:g} deg"
        + (
            f" with {w.wind.gust.model} gusts"
            if w.wind.gust.model != "none" and w.wind.speed > 0
            else ""
        )
    ]
    parts.append(f"current {w.current.speed:g} m/s to {w.current.to_deg % 360:g} deg")
    waves = w.waves
    parts.append(f"waves Hs {waves.hs:g} m ({waves.spectrum})" if waves.active else "no waves")
    return "Weather: " + ", ".join(parts) + "."


def start_line(bench: Bench) -> str:
    """How the vessel starts: heading, speed, and the commands held until a controller's (a
    fleet's boats each: where, heading, speed)."""
    if len(bench.boats) > 1:
        starts = "; ".join(
            f"{b.name} {b.north:g} m N {b.east:g} m E, heading {b.heading_deg % 360:g} deg, "
            f"{b.speed:g} m/s, MMSI {b.identity.mmsi}"
            for b in bench.boats
        )
        return f"Start: {starts}."
    held = ", ".join(f"{k}={v:g}" for k, v in bench.commands.items()) or "none (idle)"
    return (
        f"Start: heading {bench.heading_deg % 360:g} deg, {bench.speed:g} m/s; held "
        f"commands: {held}."
    )


def how_to_connect(readers: list[str], daemon: Daemon) -> list[str]:
    """The banner's pasteable commands: how to read the sensors, how to drive each command
    device (a neutral command arms it, then one repeated faster than its watchdog)."""
    lines = []
    if readers:
        lines.append("Read the sensors, e.g.:")
        lines.extend(f"  {r}" for r in readers)
    devices, scale = daemon.world.devices, daemon.bench.time_scale
    if any(p.spec.scheme == "serial" for rt in devices for p in rt.ports):
        lines.append("The serial lines above are the controller's: connect it to their other end.")
    for rt in devices:
        device = rt.device
        if not rt.takes_commands:
            continue
        mine = [d for d in (command_example(device, p, scale) for p in rt.ports) if d]
        if not mine:
            continue
        lease = device.watchdog.timeout_s
        wall = "" if scale == 1.0 else f" of the run's time, {lease / scale:.3g} s of wall time"
        lines.append(
            f"Drive {device.config.name}: a neutral command arms it, then a command "
            f"repeated within its {lease:g} s watchdog{wall} (feedback comes back on the same "
            "port; Ctrl-C stops), e.g.:"
        )
        lines.extend(f"  {d}" for d in mine)
    return lines


def mirror(bench: Bench, options: dict) -> Mirror | None:
    """The MQTT mirror the bench's [mqtt] table and the command line ask for, if any."""
    config = bench.mqtt
    if options.get("url"):
        config = from_url(options["url"], config)
    if config is None:
        if any(options.get(k) for k in ("prefix", "control", "signalk")):
            raise ConfigError(
                "--mqtt",
                "",
                MISSING,
                "a broker (--mqtt mqtt://HOST:PORT or an "
                "[mqtt] table in the bench) for --mqtt-prefix, --mqtt-control "
                "and --signalk",
            )
        return None
    if options.get("prefix"):
        config = replace(config, prefix=options["prefix"].strip("/"))
    if options.get("control"):
        config = replace(config, control=True)
    if options.get("signalk"):
        config = replace(config, signalk=True)
    return Mirror(config)


def recorder(bench: Bench, record_file: str | None) -> Recorder | None:
    """The recorder the bench's [record] table and --record ask for, if any."""
    config = RecordConfig.chosen(bench.record, record_file, bench.rate_hz)
    return Recorder(config) if config is not None else None


def run_bench(
    name_or_path: str | None,
    overrides: dict,
    duration: float | None,
    log_format: str = "auto",
    log_level: str = "info",
    mqtt_options: dict | None = None,
    record_file: str | None = None,
    quiet: bool = False,
    foxglove: str | None = None,
) -> int:
    """Check the bench, then run it until Ctrl-C, SIGTERM or ``duration``; ``quiet``: no
    status line on a terminal; ``foxglove``: serve it live there (``HOST:PORT``)."""
    configure_logging(log_format, log_level)
    # What the user wrote first, every problem of it at once: the bench (its step limit too
    # once a run has worked it out; if not, the bench below works it out, which compiles),
    # then the --mqtt options that add to it (--foxglove's address is argparse's). Then the
    # run directory and the ports: a run that cannot start says so before the compiler's
    # seconds (hild.firstcontact). The run directory is held for the whole run when pty links
    # go in it: checked, locked against a second daemon, cleaned of the links a dead one left
    # (hild.rundir).
    written = load_bench(name_or_path, check_step=False, **overrides)
    mirror(written, mqtt_options or {})
    with checked_before_compiling(written) as held:
        announce_compiling()
        bench = load_bench(name_or_path, **overrides)
        return run_checked(bench, duration, mqtt_options or {}, record_file, quiet, foxglove, held)


def run_checked(
    bench: Bench,
    duration: float | None,
    mqtt_options: dict,
    record_file: str | None,
    quiet: bool = False,
    foxglove: str | None = None,
    run_dir: RunDir | None = None,
) -> int:
    """Run a checked bench whose run directory is held (``run_dir``, when pty links go in it);
    the exit status."""
    recording = recorder(bench, record_file)
    if foxglove is not None:
        host, port = parse_foxglove_address(foxglove)
        rate = recording.config.rate_hz if recording is not None else None
        live_view: FoxgloveLive | None = FoxgloveLive(
            host, port, rate or min(DEFAULT_RATE_HZ, bench.rate_hz)
        )
    else:
        live_view = None
    board = StatusBoard()  # the status snapshot hild ctl and the status line show
    live = [board, ControlSocket(board, run_dir)] + ([] if quiet else [StatusLine(board)])
    observers = [
        o
        for o in (
            notifier_from_environment(),
            mirror(bench, mqtt_options),
            recording,
            live_view,
            *live,
        )
        if o is not None
    ]
    daemon = Daemon(bench, duration, observers)

    def ready(d: Daemon) -> None:
        write_or_drop(sys.stdout, banner(d) + "\n")  # a closed stdout must not end the run

    asyncio.run(daemon.run(ready))
    if daemon.stop_reason == "diverged":
        return 1
    return EXIT_RECORDING_FAILED if recording is not None and recording.failed else 0
