"""The shell's ports around a world: every device's ports opened (one port for each spec, shared
by the devices that name it), the command devices attached to theirs, ArduPilot's link bound;
and all of it closed. An address that cannot be taken is named with its device."""

from __future__ import annotations

import structlog

from hild.devices.registry import speaks_n2k
from hild.model.stability import step_limit
from hild.transport import open_port, parse_port_url
from hild.world.world import World

log = structlog.get_logger("hild.daemon")

N2K_QUEUE_LINES = 1024  # a port's outgoing lines for NMEA 2000 frames (0183 ports: 64)


async def open_ports(world: World) -> None:
    """Open every port (ptys, sockets, serial lines) of the world's devices and attach each to
    its devices (``DeviceRuntime.ports``; ``world.ports`` by identity)."""
    run_dir, opened = world.bench.run_dir, {}
    for rt in world.devices:
        config = rt.device.config
        for url in config.ports:
            spec = parse_port_url(url, run_dir)
            if spec.identity not in opened:
                # an NMEA 2000 node's lines are CAN frames, a fast packet 20 of them: room
                # for the nodes' address claims and product information at once
                n2k = spec.framing or speaks_n2k(config.model)
                port = open_port(
                    spec, queue_lines=N2K_QUEUE_LINES if n2k else 64, default_baud=config.baud
                )
                port.on_line = world.dispatcher.receive
                opened[spec.identity] = (port, url)
            port = opened[spec.identity][0]
            if rt.takes_commands:
                port.accepts_commands = True
                world.dispatcher.attach(port.spec.url, rt.device)
                port.screen = world.dispatcher.screen(port.spec.url)
            if rt.takes_requests:  # (an NMEA 2000 node: ISO requests, answered at its epoch)
                world.dispatcher.listen(port.spec.url, rt.device)
            rt.ports.append(port)
    for key, (port, url) in opened.items():
        try:
            await port.start()
        except OSError as e:
            # Name the port: "address already in use" alone is a puzzle.
            owners = [c.name for c in world.bench.devices if url in c.ports]
            where = f"device {', '.join(owners)}, port {url}"
            raise OSError(e.errno, f"{where}: {e.strerror or e}") from e
        finally:
            world.ports[key] = port  # started or not, close_ports() releases it
    for link in world.links:
        open_link(world, link)


def open_link(world: World, link) -> None:
    """A link whose frames pace the world (ArduPilot's): its own socket, read by the tick
    thread, and the state a restart of its peer goes back to."""
    url = link.config.ports[0]
    try:
        link.open(parse_port_url(url, world.bench.run_dir))
    except OSError as e:
        where = f"device {link.config.name}, port {url}"
        raise OSError(e.errno, f"{where}: {e.strerror or e}") from e
    sim = world.sim_of(link.config.name)  # (a fleet's: the boat it flies)
    # the longest step the vessel takes stably: a first frame asking for a longer one is
    # refused (remembered beside the compiled kernels, so a warmed install looks it up)
    limit = step_limit(sim.vessel, sim.method_name)
    link.start(sim.x, sim.act_state, sim.act_cmd, world.dt, limit)
    if world.bench.time_scale != 1.0:
        note = "ArduPilot's frames pace the run: its --speedup sets the scale"
        log.warning("ardupilot.time_scale_unused", time_scale=world.bench.time_scale, note=note)


async def close_ports(world: World) -> None:
    for port in world.ports.values():
        await port.close()
    for link in world.links:
        link.close()
