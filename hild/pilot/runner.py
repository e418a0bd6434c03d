"""`hild pilot`'s loop: sentences in, commands out, at the sensors' pace and a fixed resend rate.

One thread and ``select``: read whatever the sensor link has, assemble fixes,
update the autopilot on each new fix and send its commands at once, re-send
the latest commands every ``1 / rate_hz`` seconds of the sensors' time (the daemon's
command watchdog idles the actuators after 0.5 s of its simulated time without one; the
pilot reads the run's time scale from the fixes' timestamps against its clock, so at
``--time-scale 10`` it re-sends ten times as often in wall time; and a jet or
thruster controller then takes only a neutral command (its ``release``): the
pilot sends one first after any gap of its own, whatever the device),
and send neutral before the first fix and while the fixes have stopped. At
the end (mission complete, timeout, SIGINT or SIGTERM) it sends the neutral
command a few times and reports.
"""

from __future__ import annotations

import json
import math
import select
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hild.geodesy import Origin
from hild.nmea.decode import SentenceDecoder
from hild.pilot.actuation import Actuation
from hild.pilot.autopilot import Autopilot, NavFix, PilotConfig, PilotStep
from hild.pilot.fixes import FixAssembler, GeoFix
from hild.pilot.guidance import Point, WaypointReached
from hild.pilot.links import Link, parse_endpoint
from hild.pilot.mission import default_waypoints
from hild.pilot.traffic_watch import Approach, TrafficWatch
from hild.pilot.wire import encoder_for, hsc
from hild.profiles.vessel import load_profile

NEUTRAL_REPEATS = 5
NEUTRAL_SPACING_S = 0.05
STALE_MIN_S = 3.0  # wall seconds without a fix before the pilot warns and holds neutral
XTE_REPORT_S = 10.0  # sensor seconds between cross-track reports
HEADING_WAIT_FIXES = 5  # fixes to wait for a heading before laying out the mission without one
REARM_AFTER_S = 0.4  # a gap in our commands this long (of the sensors' time) may trip the
# daemon's 0.5 s watchdog
TIME_SCALE_RANGE = (0.01, 1000.0)  # what a time scale read from two fixes may be

Emit = Callable[[str], None]


@dataclass(frozen=True)
class PilotOptions:
    nmea: str = "udp://127.0.0.1:10110"
    commands: str = "udp://127.0.0.1:10112"
    protocol: str = "iec"
    profile: str = "odin"
    waypoints: tuple[Point, ...] | None = None  # None: the default square around the start
    laps: int = 1
    config: PilotConfig = field(default_factory=PilotConfig)
    rate_hz: float = 10.0
    timeout_s: float | None = None  # of sensor (simulated) time
    time_scale: float | None = None  # the run's, when known ahead (None: read from the fixes)
    heading_reference: bool = True  # send HSC (the heading to steer) with each command set
    stop_cpa_m: float | None = None  # stop when an AIS target's CPA falls under this [m]
    cpa_horizon_s: float = 300.0  # ... within this time [s]


def degrees(angle: float) -> str:
    """An angle [rad] as 0.0 .. 359.9 degrees."""
    return f"{round(math.degrees(angle), 1) % 360.0:.1f}"


class _Signals:
    """SIGINT and SIGTERM set a flag the loop checks; the old handlers come back at the end."""

    def __init__(self) -> None:
        self.received: str | None = None
        self._old: dict[int, object] = {}

    def __enter__(self) -> _Signals:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, _frame: object) -> None:
        self.received = signal.Signals(signum).name

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


class PilotSession:
    """The state of one run; ``run`` drives it until the mission ends or it is stopped."""

    def __init__(self, options: PilotOptions, emit: Emit):
        self.options = options
        self.emit = emit
        self.vessel = load_profile(options.profile)
        self.encode = encoder_for(options.protocol, self.vessel)
        self.actuation = Actuation(self.vessel)
        self.neutral = self.encode(self.actuation.neutral())
        nmea, commands = parse_endpoint(options.nmea), parse_endpoint(options.commands)
        self.nmea = Link(nmea, listen=True)
        shared = commands == nmea and nmea.kind != "udp"
        self.commands = self.nmea if shared else Link(commands, listen=False)
        self.watch: TrafficWatch | None = None
        if options.stop_cpa_m is not None:
            self.watch = TrafficWatch(options.stop_cpa_m, options.cpa_horizon_s)
        self.decoder = SentenceDecoder(self._on_ais if self.watch is not None else None)
        self.too_close: Approach | None = None
        self.assembler = FixAssembler()
        self.pilot: Autopilot | None = None
        self.origin: Origin | None = None
        self.t0 = 0.0
        self.t = 0.0
        self.fixes = 0
        self.waiting_for_heading = 0
        self.latest: list[bytes] = []
        self.reference: bytes | None = None  # HSC: the heading the latest commands steer to
        self.references_sent = 0
        self.last_fix_wall: float | None = None
        self.fix_interval_wall: float | None = None
        self.fix_interval_s: float | None = None  # of the sensors' time, smoothed alike
        # the sensors' seconds per wall second: given, or read once two fixes came
        self.time_scale = options.time_scale or 1.0
        self._last_fix_s: float | None = None
        self.stale = False
        self.next_xte_t = XTE_REPORT_S
        self.reason = "stopped"
        self._sent_fresh = False  # a new fix's commands went out: restart the resend period
        self._last_send: float | None = None
        self._started = time.monotonic()
        self._link_errors: dict[int, str | None] = {}

    # --- the loop ------------------------------------------------------------------------
    def open_listener(self) -> None:
        """Bind the UDP sensor port now: a taken port is an error, not something to retry."""
        if self.nmea.endpoint.kind == "udp" and not self.nmea.ensure_open(time.monotonic()):
            raise OSError(f"cannot listen on {self.nmea.endpoint.url}: {self.nmea.error}")

    def run(self) -> int:
        o = self.options
        self.emit(
            f"pilot: {self.vessel.name} by {o.protocol} to {o.commands}, sensors from {o.nmea}; "
            "waiting for a fix"
        )
        started = self._started = time.monotonic()
        next_send = started + self._period()
        with _Signals() as signals:
            try:
                while True:
                    now = time.monotonic()
                    self._open_links(now)
                    readable = self._wait(now, next_send)
                    self._read(time.monotonic(), readable)
                    if self.pilot is not None and self.pilot.finished:
                        self.reason = "completed"
                        break
                    if self.too_close is not None:
                        a = self.too_close
                        self.reason = (
                            f"stop-cpa: MMSI {a.mmsi} would pass {a.cpa_m:.0f} m "
                            f"off in {a.tcpa_s:.0f} s (range {a.range_m:.0f} m), "
                            f"under --stop-cpa {self.options.stop_cpa_m:g} m"
                        )
                        break
                    if signals.received is not None:
                        self.reason = f"signal {signals.received}"
                        break
                    if self._timed_out(now - started):
                        self.reason = "timeout"
                        break
                    now = time.monotonic()
                    self._check_stale(now)
                    period = self._period()
                    if now >= next_send:
                        # neutral until the first fix and while the fixes are away
                        self._send(self.latest if self.latest and not self.stale else self.neutral)
                        next_send = max(next_send + period, now + 0.5 * period)
                    if self._sent_fresh:
                        next_send = now + period
                        self._sent_fresh = False
            finally:
                self._finish()
        if self.too_close is not None:
            return 3
        return 0 if self.reason == "completed" else 1

    def _period(self) -> float:
        """The wall seconds between two re-sends: ``1 / rate_hz`` of the sensors' time."""
        return 1.0 / (self.options.rate_hz * self.time_scale)

    def _learn_time_scale(self, fix: GeoFix, wall_gap: float | None) -> None:
        """The run's time scale: the fixes' interval in their own time over the wall's."""
        last, self._last_fix_s = self._last_fix_s, fix.time_s
        if self.options.time_scale is not None or last is None or wall_gap is None:
            return
        if not fix.time_s > last or wall_gap <= 0.0:
            return
        gap = fix.time_s - last
        if self.fix_interval_s is None:
            self.fix_interval_s = gap
        else:
            self.fix_interval_s += 0.2 * (gap - self.fix_interval_s)
        assert self.fix_interval_wall is not None
        lo, hi = TIME_SCALE_RANGE
        self.time_scale = min(max(self.fix_interval_s / self.fix_interval_wall, lo), hi)

    def _on_ais(self, line: str) -> None:
        assert self.watch is not None
        self.watch.feed(line, self.t)

    def _wait(self, now: float, next_send: float) -> list[int]:
        """Block in select until input, the next send or the assembler's deadline."""
        deadline = next_send
        pending = self.assembler.deadline()
        if pending is not None:
            deadline = min(deadline, pending)
        timeout = min(max(0.0, deadline - now), 0.25)
        fds = [fd for fd in {self.nmea.fileno(), self.commands.fileno()} if fd is not None]
        if not fds:
            time.sleep(timeout)
            return []
        try:
            readable, _, _ = select.select(fds, [], [], timeout)
        except (OSError, ValueError):
            return []
        return readable

    def _open_links(self, now: float) -> None:
        for link in {id(self.nmea): self.nmea, id(self.commands): self.commands}.values():
            link.ensure_open(now)
            if link.error != self._link_errors.get(id(link)):
                self._link_errors[id(link)] = link.error
                if link.error is not None:
                    self.emit(f"pilot: warning: {link.endpoint.url}: {link.error}; retrying")
                else:
                    self.emit(f"pilot: {link.endpoint.url}: open ({link.describe()})")

    def _read(self, now: float, readable: Sequence[int]) -> None:
        fixes: list[GeoFix] = []
        if self.nmea.fileno() in readable:
            for line in self.nmea.read_lines():
                reading = self.decoder.decode(line)
                if reading is not None:
                    fixes += self.assembler.add(reading, now)
        if self.commands is not self.nmea and self.commands.fileno() in readable:
            self.commands.read_lines()  # the daemon's feedback: read and dropped
        fixes += self.assembler.poll(now)
        for fix in fixes:
            self._on_fix(fix, now)

    # --- fixes -----------------------------------------------------------------------------
    def _on_fix(self, fix: GeoFix, now: float) -> None:
        self.fixes += 1
        gap = None
        if self.last_fix_wall is not None:
            gap = now - self.last_fix_wall
            if self.fix_interval_wall is None:
                self.fix_interval_wall = gap
            else:
                self.fix_interval_wall += 0.2 * (gap - self.fix_interval_wall)
        self._learn_time_scale(fix, gap)
        if self.stale:
            since = self.last_fix_wall if self.last_fix_wall is not None else self._started
            self.emit(
                f"pilot: fixes {'again ' if self.last_fix_wall else ''}after {now - since:.1f} s"
            )
            self.stale = False
        self.last_fix_wall = now
        if self.pilot is None and not self._start(fix):
            return
        assert self.origin is not None and self.pilot is not None
        north, east, _ = self.origin.to_ned(fix.latitude_deg, fix.longitude_deg)
        self.t = fix.time_s - self.t0
        step = self.pilot.update(NavFix(self.t, north, east, fix.heading, fix.sog, fix.cog))
        if self.watch is not None and self.too_close is None:
            self.too_close = self.watch.closest(
                self.origin, north, east, fix.sog or 0.0, fix.cog or 0.0, self.t
            )
        for r in step.reached:
            self._report_reached(r)
        if step.finished:
            self.latest, self.reference = self.neutral, None
            return
        self.latest = self.encode(self.actuation.setpoints(step.demand))
        self.reference = None
        if self.options.heading_reference and step.heading_ref is not None:
            self.reference = hsc(step.heading_ref)
        self._send(self.latest)
        self._sent_fresh = True
        if self.t >= self.next_xte_t:
            self._report_progress(step)
            self.next_xte_t = (math.floor(self.t / XTE_REPORT_S) + 1) * XTE_REPORT_S

    def _start(self, fix: GeoFix) -> bool:
        """Lay out the mission at the first fix (waiting a few fixes for a heading)."""
        heading = fix.heading
        if heading is None:
            self.waiting_for_heading += 1
            if self.waiting_for_heading < HEADING_WAIT_FIXES:
                return False
            heading = fix.cog if fix.cog is not None and (fix.sog or 0.0) > 1.0 else 0.0
            self.emit(
                f"pilot: warning: no heading in {HEADING_WAIT_FIXES} fixes; "
                f"laying out the mission along {degrees(heading)} deg"
            )
        o = self.options
        self.origin = Origin(fix.latitude_deg, fix.longitude_deg)
        self.t0 = fix.time_s
        waypoints = list(o.waypoints) if o.waypoints is not None else default_waypoints(heading)
        self.pilot = Autopilot(o.config, waypoints, o.laps)
        points = " ".join(f"WP{i} ({n:.1f}, {e:.1f})" for i, (n, e) in enumerate(waypoints))
        self.emit(
            f"pilot: start: origin {fix.latitude_deg:.6f} {fix.longitude_deg:.6f}, heading "
            f"{degrees(heading)} deg; waypoints N,E [m]: {points}; "
            f"{o.laps} lap(s); acceptance radius {o.config.guidance.acceptance_radius_m:g} m"
        )
        return True

    def _report_reached(self, r: WaypointReached) -> None:
        how = "reached" if r.by == "radius" else "passed (outside the acceptance circle)"
        self.emit(
            f"pilot: t={r.t:.1f} s waypoint {r.index} lap {r.lap} {how}, "
            f"closest {r.closest_m:.1f} m"
        )

    def _report_progress(self, step: PilotStep) -> None:
        assert self.pilot is not None and self.pilot.tracker is not None
        tr = self.pilot.tracker
        self.emit(
            f"pilot: t={self.t:.1f} s to waypoint {tr.target_index} lap {tr.lap}: cross-track "
            f"{step.cross_track_m:.1f} m, heading {degrees(step.heading)} deg "
            f"(ref {degrees(step.heading_ref or 0.0)}), speed {step.speed:.2f} m/s, "
            f"thrust {step.demand.thrust:.2f}, steer {step.demand.steer:+.2f}"
        )

    # --- commands and the end ----------------------------------------------------------------
    def _send(self, sentences: Sequence[bytes]) -> None:
        """Send one command set, and with any but the neutral one the heading reference (HSC).
        After a lapse that may have tripped the daemon's watchdog (which then takes nothing but
        a neutral command) a neutral set goes first."""
        if not sentences or not self.commands.is_open:
            return
        now = time.monotonic()
        lapsed = (
            self._last_send is None or (now - self._last_send) * self.time_scale > REARM_AFTER_S
        )
        if lapsed and sentences is not self.neutral:
            for line in self.neutral:
                self.commands.send(line)
        for line in sentences:
            self.commands.send(line)
        if sentences is not self.neutral and self.reference is not None:
            before = self.commands.sent
            self.commands.send(self.reference)
            self.references_sent += self.commands.sent - before
        self._last_send = now

    def _check_stale(self, now: float) -> None:
        """Warn once when the fixes stop (or never start); hold neutral until they return."""
        if self.stale:
            return
        since = self.last_fix_wall if self.last_fix_wall is not None else self._started
        limit = max(STALE_MIN_S, 4.0 * (self.fix_interval_wall or 0.0))
        if now - since <= limit:
            return
        self.stale = True
        d = self.decoder
        heard = f"{d.used} usable, {d.ignored} other and {d.malformed} malformed sentences so far"
        if self.last_fix_wall is None:
            self.emit(
                f"pilot: warning: no fix in {now - since:.1f} s from {self.options.nmea} "
                f"({heard}); sending neutral"
            )
        else:
            self.emit(
                f"pilot: warning: no fix for {now - since:.1f} s ({heard}); "
                "holding neutral until fixes return"
            )

    def _timed_out(self, wall_elapsed: float) -> bool:
        limit = self.options.timeout_s
        if limit is None:
            return False
        if self.pilot is None:  # no sensor time yet: the wall clock stands in for it
            return wall_elapsed >= limit
        return self.t >= limit

    def _finish(self) -> None:
        for i in range(NEUTRAL_REPEATS):
            if i:
                time.sleep(NEUTRAL_SPACING_S)
            self._send(self.neutral)
        self.nmea.close()
        self.commands.close()
        if self.reason == "completed":
            self.emit(f"pilot: mission complete at t={self.t:.1f} s")
        else:
            self.emit(f"pilot: stopping ({self.reason}) at t={self.t:.1f} s")
        self.emit(json.dumps(self.summary()))

    def summary(self) -> dict:
        base: dict[str, object] = {"event": "pilot.summary"}
        if self.pilot is not None:
            base.update(self.pilot.summary())
        else:
            base.update(
                {
                    "completed": False,
                    "laps": self.options.laps,
                    "waypoints": [],
                    "xte_rms_m": None,
                    "xte_max_m": None,
                }
            )
        base.update(
            {
                "reason": self.reason,
                "t": round(self.t, 1),
                "fixes": self.fixes,
                "sentences": self.decoder.used,
                "ignored": self.decoder.ignored,
                "malformed": self.decoder.malformed + self.nmea.lines.overlong,
                "commands_sent": self.commands.sent - self.references_sent,
                "references_sent": self.references_sent,
                "time_scale": round(self.time_scale, 2),
            }
        )
        if self.watch is not None:
            base["ais_contacts"] = len(self.watch.contacts)
            base["ais_reports"] = self.watch.reports
            if self.too_close is not None:
                a = self.too_close
                base["stopped_for"] = {
                    "mmsi": a.mmsi,
                    "cpa_m": round(a.cpa_m, 1),
                    "tcpa_s": round(a.tcpa_s, 1),
                    "range_m": round(a.range_m, 1),
                }
        return base


def run_pilot(options: PilotOptions, emit: Emit) -> int:
    """Run the pilot until the mission completes (0), it times out or is stopped (1), or an AIS
    target's CPA falls under --stop-cpa (3)."""
    return PilotSession(options, emit).run()
