"""`hild inspect`, `hild recover`, `hild plot`, `hild replay` and `hild export`: the recording
commands."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from hild.config import ConfigError
from hild.log import configure_logging, write_or_drop
from hild.record import channels
from hild.record.reader import describe, inspect, messages


def run_record_command(args: argparse.Namespace) -> int:
    configure_logging("auto", "info")  # (a damaged file's warning: on stderr, not the output)
    if args.command == "recover" or (args.command == "inspect" and args.recover):
        from hild.record.recover import recover

        done = recover(args.file, getattr(args, "out", None), force=args.force)
        write_or_drop(sys.stdout, done.describe() + "\n")
        if args.command == "inspect":
            write_or_drop(sys.stdout, describe(inspect(Path(done.out))) + "\n")
        return 0
    if args.command == "inspect":
        if args.repair:
            from hild.record.repair import repair

            write_or_drop(sys.stdout, repair(args.file).describe() + "\n")
        write_or_drop(sys.stdout, describe(inspect(args.file)) + "\n")
        return 0
    if args.command == "export":
        from hild.record.export import export

        for line in export(args.file, args.gpx, args.kml, args.every):
            write_or_drop(sys.stdout, line + "\n")
        return 0
    if args.command == "plot":
        from hild.record.plot import plot

        waypoints = args.waypoints
        if waypoints == "pilot":
            waypoints = pilot_square(args.file)
        for path in plot(args.file, args.out, waypoints):
            write_or_drop(sys.stdout, f"{path}\n")
        return 0
    from hild.record.replay import DEFAULT_TARGET, ReplayPlan, parse_target, replay

    if args.end is not None and args.end <= args.start:
        raise ConfigError("--end", "", args.end, f"a time after --start ({args.start:g} s)")
    plan = ReplayPlan(
        file=args.file,
        targets=tuple(parse_target(t) for t in args.to or [DEFAULT_TARGET]),
        devices=tuple(args.device),
        speed=args.speed,
        loop=args.loop,
        start_s=args.start,
        end_s=args.end,
        run_dir=args.run_dir,
        wait_s=args.wait,
        send_all=args.all,
    )

    def ready(ports) -> None:
        where = ", ".join(p.describe() for p in ports)
        write_or_drop(sys.stdout, f"Replaying {args.file} to {where}\n")

    asyncio.run(replay(plan, ready))
    return 0


def pilot_square(file) -> tuple[tuple[float, float], ...]:
    """hild pilot's default mission for the recording's start heading."""
    from hild.pilot.mission import default_waypoints

    for m in messages(file, [channels.STATE]):
        return tuple(default_waypoints(float(m.payload["heading"])))
    return ()
