"""The status line: on a terminal, ``hild run`` keeps a small block current under its log.

About twice a second it shows the run's status snapshot (status.py): simulated time and the
time scale held, position, speed, course and heading (a fleet's: a line per boat, its name
first), each actuator (a fleet's first boat's: ``hild ctl status`` has every boat's; its
speed in whole rpm, or normalized to 0.01, angles to 0.1 deg, the deflector to 0.01), the
weather (its preset, the wind, the current and Hs), the faults active, each command device's
watchdog with its commands applied and refused, clients per port (a TCP port's count; the
ports whose readers cannot be counted, pty, UDP, serial and CAN, "not countable"), the
Foxglove viewers and overruns. The log goes on above it, line by line, as before. Off when
stderr is no terminal (journald, a pipe, a file: the structured log alone) and with ``hild run
--quiet``. Drawn by rich's Live display, which redraws from its own thread: the tick only
takes the snapshot.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from hild.live.status import StatusBoard
from hild.log import LOG_STREAM
from hild.observers import TickObserver

if TYPE_CHECKING:
    from hild.observers import RunView

REFRESH_PER_S = 2.0


def place(where: dict[str, Any]) -> str:
    """A boat's place and motion (status.py's ``_where``) on one line: position, SOG, COG,
    heading."""
    lat, lon = where["latitude"], where["longitude"]
    return (
        f"{abs(lat):.5f} {'N' if lat >= 0 else 'S'} {abs(lon):.5f} {'E' if lon >= 0 else 'W'}"
        f"  SOG {where['sog_kn']:5.2f} kn  COG {where['cog_deg']:05.1f}"
        f"  HDG {where['heading_deg']:05.1f}"
    )


def render(status: dict[str, Any]) -> Group:
    """The block for one snapshot (a few short lines; a fleet's: one more per boat)."""
    if not status:
        return Group(Text("hild: waiting for the first tick", style="dim"))
    scale = status.get("time_scale")
    held = f" x{scale:.2f}" if scale is not None else ""
    clock = (f"t {status['t']:9.1f} s{held}", "bold")
    boats = status.get("boats") or {}
    if boats:  # a fleet: the time, then each boat on a line of its own
        width = max(len(name) for name in boats)
        lines = [Text.assemble(clock)]
        lines += [Text(f"{name:<{width}}  {place(b)}") for name, b in boats.items()]
    else:
        lines = [Text.assemble(clock, "  ", place(status))]
    of = f" ({next(iter(boats))})" if boats else ""  # (a fleet's first boat's)
    parts = [actuator(name, a) for name, a in status["actuators"].items()]
    lines.append(Text(f"actuators{of}: " + " | ".join(parts)))
    weather = status.get("weather")
    if weather is not None:
        lines.append(Text(sky(weather)))
    faults = status.get("faults")
    if faults is not None:
        said = ", ".join(fault(f) for f in faults)
        lines.append(Text(f"faults: {said or 'none'}", style="bold red" if faults else ""))
    for name, d in status["command_devices"].items():
        style = {"leased": "green", "latched": "red", "tripped": "yellow"}.get(d["watchdog"], "")
        counts = f", {d['commands']} applied, {d['refused']} refused"
        lines.append(Text.assemble(f"{name}: ", (d["watchdog"], style), counts))
    lines.append(Text(f"{readers(status)}  overruns {status['overruns']}", style="dim"))
    return Group(*lines)


def sky(weather: dict[str, Any]) -> str:
    """The running weather (status.py's ``weather``) on one line."""
    return (
        f"weather {weather['preset']}: wind {weather['wind_speed']:.1f} m/s"
        f" from {weather['wind_from_deg']:05.1f}, current {weather['current_speed']:.2f} m/s"
        f" to {weather['current_to_deg']:05.1f}, Hs {weather['hs']:.2f} m"
    )


def actuator(name: str, a: dict[str, Any]) -> str:
    """One actuator, each figure at its one precision (status.py's PRECISION)."""
    if a.get("speed_unit", "rpm") == "rpm":
        text = f"{name} {a['speed']:.0f} rpm"
    else:  # normalized, -1 to 1
        text = f"{name} {a['speed']:+.2f}"
    if "angle_deg" in a:
        text += f" {a['angle_deg']:+.1f}deg"
    if "deflector" in a:
        text += f" defl {a['deflector']:+.2f}"
    return text


def fault(f: dict[str, Any]) -> str:
    """An active fault: what, on which device or actuator, and until when."""
    where = f"{f['boat']} " if "boat" in f else ""
    if "actuator" in f:
        return f"{where}{f['actuator']} {f['kind']}"
    what = f"{f['kind']} {f['quantity']} {f['value']:+g}" if "quantity" in f else f["kind"]
    until = "for good" if f.get("end") is None else f"until t {f['end']:.1f} s"
    return f"{where}{f['device']} {what} ({until})"


def readers(status: dict[str, Any]) -> str:
    """The clients of each port: a TCP port's count, the others "not countable"; Foxglove's
    viewers."""
    ports = [f"{url} {'not countable' if n is None else n}" for url, n in status["clients"].items()]
    parts = ["clients: " + (", ".join(ports) or "no ports")]
    fox = status.get("foxglove")
    if fox is not None:
        n = fox["viewers"]
        parts.append(f"foxglove {n} viewer{'' if n == 1 else 's'}")
    return "; ".join(parts)


class _LogAbove:
    """hild's log, routed while the block is shown: each line printed above it."""

    def __init__(self, console: Console):
        self.console = console
        self._partial = ""

    def write(self, text: str) -> int:
        text = self._partial + text
        *lines, self._partial = text.split("\n")
        for line in lines:
            self.console.print(Text.from_ansi(line), soft_wrap=True)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


class StatusLine(TickObserver):
    """Shows the board's snapshot under the log on a terminal (see the module)."""

    def __init__(self, board: StatusBoard, stream: TextIO | None = None):
        self.board = board
        self.stream = stream or sys.stderr
        self.live: Live | None = None
        self._route: Any = None

    async def start(self, run: RunView) -> None:
        if not self.stream.isatty():
            return
        console = Console(file=self.stream)
        self.live = Live(
            get_renderable=lambda: render(self.board.latest),
            console=console,
            refresh_per_second=REFRESH_PER_S,
            transient=True,
            redirect_stdout=sys.stdout.isatty(),
            redirect_stderr=False,
        )
        self.live.start()
        if LOG_STREAM.configured:
            self._route = _LogAbove(console)
            LOG_STREAM.routes.append(self._route)

    async def stop(self, run: RunView) -> None:
        if self._route is not None:
            LOG_STREAM.routes.remove(self._route)
            self._route = None
        if self.live is not None:
            self.live.stop()
            self.live = None
