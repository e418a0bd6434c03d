#!/usr/bin/env python3
"""A small external controller for hild's scenario tests, standalone (standard library only).

It reads GGA (position, time) and HDT (heading) from a sensor port, steers crudely toward
each waypoint in turn and sends Odin's $PHLDC jet commands to the command port at a fixed
wall-clock rate, as a controller on a bench would. It can be told to misbehave:
``--go-silent-after S`` stops sending S sensor seconds after the first fix (the daemon's
watchdog trips); ``--steer-away`` steers to the reciprocal bearing; ``--exit-after S`` exits
with status 3 after S sensor seconds (a crash); ``--ignore-sigterm`` makes
hild kill it.

Ports: ``udp://HOST:PORT`` (sensors: bind there; commands: send there), or a pty/serial
path (``/path`` or ``pty:///path``). SIGTERM ends it with status 0.
"""

from __future__ import annotations

import argparse
import math
import os
import select
import signal
import socket
import sys
import termios
import time
import tty

EARTH_RADIUS_M = 6371000.0
RPM_PERCENT = 30.0  # of the engine's range, -100 idle .. 100 full
NOZZLE_PER_DEG = 3.0  # per cent of nozzle per degree of heading error


def checksum(body: str) -> str:
    value = 0
    for ch in body.encode():
        value ^= ch
    return f"{value:02X}"


def sentence(body: str) -> bytes:
    return f"${body}*{checksum(body)}\r\n".encode()


def phldc(rpm: float, nozzle: float, deflector: float) -> bytes:
    return sentence(f"PHLDC,0,{rpm:.1f},{nozzle:.1f},{deflector:.1f}")


NEUTRAL = phldc(-100.0, 0.0, 0.0)


class Port:
    """A UDP socket (bound for sensors, connected for commands) or a pty/serial device."""

    def __init__(self, url: str, listen: bool):
        self.sock: socket.socket | None = None
        self.fd: int | None = None
        if url.startswith("udp://"):
            host, _, port = url[len("udp://") :].rpartition(":")
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            if listen:
                self.sock.bind((host, int(port)))
            else:
                self.sock.connect((host, int(port)))
            self.sock.setblocking(False)
        else:
            path = url[len("pty://") :] if url.startswith("pty://") else url
            self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
            tty.setraw(self.fd, termios.TCSANOW)

    def fileno(self) -> int:
        return self.sock.fileno() if self.sock is not None else self.fd  # type: ignore[return-value]

    def read(self) -> bytes:
        try:
            if self.sock is not None:
                return self.sock.recv(65536)
            return os.read(self.fd, 65536)  # type: ignore[arg-type]
        except (BlockingIOError, ConnectionRefusedError):
            return b""

    def send(self, data: bytes) -> None:
        try:
            if self.sock is not None:
                self.sock.send(data)
            else:
                os.write(self.fd, data)  # type: ignore[arg-type]
        except (BlockingIOError, ConnectionRefusedError):
            pass


def degrees_minutes(text: str, hemisphere: str) -> float:
    value = float(text)
    whole = math.floor(value / 100.0)
    deg = whole + (value - 100.0 * whole) / 60.0
    return -deg if hemisphere in ("S", "W") else deg


def seconds_of_day(text: str) -> float:
    return int(text[0:2]) * 3600.0 + int(text[2:4]) * 60.0 + float(text[4:])


class Steering:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        lat0, lon0 = (float(v) for v in args.origin.split(","))
        self.lat0, self.lon0 = math.radians(lat0), math.radians(lon0)
        self.waypoints = [tuple(float(v) for v in p.split(",")) for p in args.waypoints.split(";")]
        self.target = 0
        self.north = self.east = None
        self.heading: float | None = None
        self.t: float | None = None
        self.t0: float | None = None
        self.command = NEUTRAL

    def feed(self, line: str) -> None:
        fields = line.split("*")[0].split(",")
        kind = fields[0][3:]
        if kind == "GGA" and fields[2] and fields[4]:
            lat = math.radians(degrees_minutes(fields[2], fields[3]))
            lon = math.radians(degrees_minutes(fields[4], fields[5]))
            self.north = (lat - self.lat0) * EARTH_RADIUS_M
            self.east = (lon - self.lon0) * EARTH_RADIUS_M * math.cos(self.lat0)
            self.t = seconds_of_day(fields[1])
            if self.t0 is None:
                self.t0 = self.t
            self._steer()
        elif kind == "HDT" and fields[1]:
            self.heading = math.radians(float(fields[1]))

    @property
    def elapsed(self) -> float:
        return 0.0 if self.t is None or self.t0 is None else self.t - self.t0

    def _steer(self) -> None:
        if self.heading is None or self.north is None or self.target >= len(self.waypoints):
            self.command = NEUTRAL
            return
        north, east = self.waypoints[self.target]
        dn, de = north - self.north, east - self.east
        if math.hypot(dn, de) < self.args.acceptance:
            print(f"t={self.elapsed:.1f} s waypoint {self.target} reached", flush=True)
            self.target += 1
            self._steer()
            return
        bearing = math.atan2(de, dn)
        if self.args.steer_away:
            bearing += math.pi
        error = math.degrees((bearing - self.heading + math.pi) % (2 * math.pi) - math.pi)
        nozzle = max(-100.0, min(100.0, NOZZLE_PER_DEG * error))
        self.command = phldc(RPM_PERCENT, nozzle, 100.0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nmea", required=True, help="sensor port (udp://HOST:PORT or a pty path)")
    p.add_argument("--commands", required=True, help="command port (udp://HOST:PORT or a path)")
    p.add_argument("--origin", required=True, metavar="LAT,LON")
    p.add_argument("--waypoints", required=True, metavar="N,E;N,E")
    p.add_argument("--acceptance", type=float, default=10.0, metavar="M")
    p.add_argument("--rate", type=float, default=10.0, metavar="HZ", help="wall-clock send rate")
    p.add_argument("--go-silent-after", type=float, metavar="S", help="sensor seconds")
    p.add_argument("--exit-after", type=float, metavar="S", help="sensor seconds; exit 3")
    p.add_argument("--steer-away", action="store_true")
    p.add_argument("--ignore-sigterm", action="store_true", help="only SIGKILL ends it")
    args = p.parse_args()

    stopped: list[str] = []
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: stopped.append("SIGTERM"))
    sensors, commands = Port(args.nmea, listen=True), Port(args.commands, listen=False)
    print(f"controller: sensors {args.nmea}, commands {args.commands}", flush=True)
    steering = Steering(args)
    buffer, sent = b"", 0
    period = 1.0 / args.rate
    next_send = time.monotonic()
    commands.send(NEUTRAL)  # first: it arms jets whose watchdog tripped before we came
    while not stopped:
        timeout = max(0.0, next_send - time.monotonic())
        try:
            ready, _, _ = select.select([sensors.fileno()], [], [], timeout)
        except InterruptedError:
            continue
        if ready:
            buffer += sensors.read()
            *lines, buffer = buffer.replace(b"\r", b"").split(b"\n")
            for line in lines:
                steering.feed(line.decode("ascii", "replace"))
        if args.exit_after is not None and steering.elapsed >= args.exit_after:
            print(f"t={steering.elapsed:.1f} s exiting as told", flush=True)
            return 3
        silent = args.go_silent_after is not None and steering.elapsed >= args.go_silent_after
        if time.monotonic() >= next_send:
            next_send += period
            if not silent:
                commands.send(steering.command)
                sent += 1
    print(f"controller: stopped by {stopped[0]} after {sent} command sets", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
