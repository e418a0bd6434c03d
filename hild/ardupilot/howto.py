"""How to start ArduPilot's SITL against a bench: the command lines the banner and the docs give.

ArduPilot's SITL takes ``--model JSON:ADDRESS`` (the physics' address) and sends its frames to
UDP port 9002 + 10 * I for ``-I I`` (measured: protocols.md); its ``--home LAT,LON,ALT,HEADING``
is where the answers' NED positions start from, so it must be the bench's origin, with the
vessel's initial heading. The parameters for the vessel come from ``hild show ardupilot``, or
from the vehicle's own file when the device reads its outputs from one (``params``). SITL waits
for a MAVLink client on TCP 5760 + 10 I before it sends its first frame (found following
ArduPilot's own docs: it prints ``Waiting for connection`` and nothing comes), so the lines
name one; sim_vehicle.py starts MAVProxy itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hild.ardupilot.link import DEFAULT_PORT, ArduPilotSitl
from hild.profiles import ARDUPILOT_PARAMS
from hild.transport.url import parse_port_url

if TYPE_CHECKING:  # (a bench is read by its attributes: no import of the bench's reader)
    from hild.bench import Bench

INSTANCE_PORT_STEP = 10  # SITL instance I sends to 9002 + 10 I
MAVLINK_PORT = 5760  # SITL's first serial port: TCP 5760 + 10 I; it waits there for a client


def instance(port: int) -> int | None:
    """The SITL instance (``-I``) whose frames come to ``port``; None if none does."""
    offset = port - DEFAULT_PORT
    if offset < 0 or offset % INSTANCE_PORT_STEP:
        return None
    return offset // INSTANCE_PORT_STEP


def home(bench: Bench, boat: str = "") -> str:
    """``--home``'s LAT,LON,ALT,HEADING for the bench: its origin and initial heading (a fleet's
    ``boat``'s heading: every SITL's physics frame is the bench's origin, where the answers'
    positions are measured from, so each boat's start is its position in it)."""
    o = bench.origin
    heading = next((b.heading_deg for b in bench.boats if b.name == boat), bench.heading_deg)
    return f"{o.latitude_deg:.7f},{o.longitude_deg:.7f},0,{heading % 360:g}"


def sitl_commands(bench: Bench, link: ArduPilotSitl) -> list[str]:
    """The lines that tell a user how to start ArduPilot against this bench."""
    spec = parse_port_url(link.config.ports[0], bench.run_dir)
    port = spec.port or DEFAULT_PORT
    host = "127.0.0.1" if spec.host in ("0.0.0.0", "::", "localhost", None) else spec.host
    profile = link.vessel.name  # (a fleet's: the boat this link flies)
    n = instance(port)
    servos = ", ".join(
        f"SERVO{o.channel}_FUNCTION {o.function}" + (" (REVERSED 1)" if o.reversed else "")
        for o in sorted(link.mapping.outputs.values(), key=lambda o: o.channel)
    )
    lines = [f"Start ArduPilot's SITL ({link.mapping.kind}: {servos}), e.g.:"]
    if n is None:
        lines.append(
            f"  (ArduPilot sends its frames to UDP 9002 + 10 I only: port {port} is none "
            f"of those, so give the device a port such as {DEFAULT_PORT})"
        )
        return lines
    where = f" -I{n}" if n else ""
    source = Path(link.mapping.source) if link.mapping.source else None
    if source is not None and source.parent != ARDUPILOT_PARAMS.folder:
        defaults = str(source)  # the vehicle's own file: ArduPilot reads the same
    else:
        name = source.stem if source is not None else profile
        defaults = f"{name}.parm"
        lines.append(f"  hild show ardupilot {name} > {defaults}")
    lines += [
        f"  ardurover --model JSON:{host} --home {home(bench, link.config.boat)} "
        f"--defaults {defaults}{where}",
        f"  mavproxy.py --master tcp:127.0.0.1:{MAVLINK_PORT + INSTANCE_PORT_STEP * n}   "
        "(SITL sends no frame until a MAVLink client connects: this, or a ground station)",
        f"  or: sim_vehicle.py -v Rover --model JSON:{host} "
        f"--custom-location={home(bench, link.config.boat)} "
        f"--add-param-file={defaults}{where} --map --console",
    ]
    return lines
