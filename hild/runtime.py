"""Runtime control: change the weather, fail a part or move the boat in the middle of a run.

Each request is a JSON object (commands may also be bare NMEA lines) checked with the same
rules as a bench file; a valid one becomes a control record on the loop's control queue,
applied at the next tick boundary, and every request is answered with its ``id`` and either
``ok: true`` or the error. Transport-agnostic: the MQTT control topic, ``hild ctl``'s socket
and Foxglove's services all hand their requests to the run's one ``RuntimeControl``
(``world.runtime_control``; an observer's ``view.runtime_control``), one at a time, so what
one of them changed is what the next request of any of them builds on: a partial weather is
laid over the weather last asked for, whoever asked, and a target added through one is a
target of the run for the others.

The requests that concern one boat (``commands``, ``fault``, ``reposition``) take a ``boat``
key: a fleet's boat by its name (docs/fleets.md), by default its first boat. A one-boat bench's
only boat goes by its vessel's name (``odin`` on the default bench): a ``boat`` naming anything
else is refused there. The answer names the boat on a fleet; a one-boat bench's answers are as
they were.
"""

from __future__ import annotations

import asyncio
import copy
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from hild.bench import read_faults
from hild.config import ConfigError, Problems, Section, deep_merge, json_value, load_toml
from hild.control import (
    ACTUATOR_FAULTS,
    ActuatorFault,
    Reposition,
    SensorFault,
    TrafficAdd,
    TrafficRemove,
    TrafficRetask,
    WeatherChange,
)
from hild.devices.catalog import load_device_type
from hild.devices.roles import TakesCommands
from hild.environment.environment import Environment
from hild.profiles.weather import PRESETS, read_weather
from hild.traffic import layout as TL
from hild.traffic.read import read_behaviour, read_route, read_target, speed_of
from hild.traffic.targets import MAX_TARGETS, Course, Encounter, Motion, Route, Target
from hild.transport.base import Inbound

if TYPE_CHECKING:
    import numpy as np

    from hild.bench import Bench
    from hild.bus.dispatch import Dispatcher
    from hild.control import ControlQueue
    from hild.coupled.simulation import Simulation
    from hild.observers import RunView, TickObserver
    from hild.traffic.traffic import PreparedTarget

log = structlog.get_logger("hild.control")

MAX_REQUEST_BYTES = 65536
MAX_FAULT_S = 365 * 86400.0  # how long a fault may be timed in a run of no set duration
MAX_REPOSITION_M = 100_000.0  # how far from the bench's origin a reposition may go, however given
MAX_SHOWN_CHARS = 1000  # of a request that is no JSON object, as the recording keeps it
REQUESTS = ("commands", "weather", "fault", "reposition", "traffic")


class RequestError(ValueError):
    """A request that cannot be applied; its text is the answer's ``error``."""


def as_sent(payload: bytes) -> dict:
    """A request as its sender sent it: its JSON object, or ``{"text": ...}`` for anything
    else (bare NMEA lines, a payload that is no JSON object; cut to MAX_SHOWN_CHARS)."""
    text = payload.decode("utf-8", "replace")
    if len(payload) <= MAX_REQUEST_BYTES:
        try:
            body = json_value(text)
        except ValueError:
            body = None
        if isinstance(body, dict):
            return body
    return {"text": text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + "..."}


def bus_lines(text: str) -> list[bytes]:
    """The lines of one element of a commands request, as a port reads them off a bus: ended
    by CR, LF or CR LF, blank ones skipped (two sentences joined by CR LF are two lines); one
    that holds no line at all is one empty line, refused as a port's line would be."""
    lines = [part.strip() for part in text.replace("\r", "\n").split("\n")]
    return [line.encode("utf-8") for line in lines if line] or [b""]  # (non-ASCII: refused so)


def calm_sea_unshaped(doc: dict, sent: dict) -> dict:
    """The weather ``doc`` to read, a request's ``sent`` [waves] keys laid over the waves of
    the running weather (or of a preset): with no wave height, the settings of those waves (a
    preset's spectrum and peak, kept in the running weather for a later height) are left out,
    and only those the request sends are read (and refused: waves need a height)."""
    doc = copy.deepcopy(doc)
    waves = doc.get("waves")
    if isinstance(waves, dict) and waves.get("hs", 0.0) == 0.0:
        doc["waves"] = {k: v for k, v in waves.items() if k == "hs" or k in sent}
    return doc


def no_line_applied(results: list[str]) -> str:
    """The error of a commands request none of whose lines was applied, from their reasons."""
    reasons = ", ".join(dict.fromkeys(results))
    if "latched" not in results:
        return f"no line applied ({reasons})"
    return (
        f"no line applied ({reasons}); a latched watchdog takes only a neutral command "
        "(send one first, then repeat the commands within the watchdog's lease)"
    )


class ControlledRun(Protocol):
    """What the runtime control works on: a world (hild/world/world.py), named by this protocol
    because this module may not import it. Not an observer's view: a front end checks a
    request against the simulation as it is (its time, its state, its traffic), delivers
    command lines through the dispatcher as a port would (decoded, leased, counted), puts the
    records it makes on the control queue (refusing a request when it is full), and tells the
    observers, handing them the world's ``view`` as every hook is."""

    @property
    def bench(self) -> Bench: ...

    @property
    def sim(self) -> Simulation: ...

    @property
    def dt(self) -> float: ...

    @property
    def fleet_sims(self) -> Sequence[Simulation]:
        """A fleet's other boats' simulations (none for one boat)."""
        ...

    @property
    def duration(self) -> float | None: ...

    @property
    def queue(self) -> ControlQueue: ...

    @property
    def dispatcher(self) -> Dispatcher: ...

    @property
    def command_devices(self) -> list[TakesCommands]: ...

    @property
    def boat_of(self) -> dict[str, int]:
        """Each device's boat, by the device's name: the boat's index in the bench's order
        (0, the first boat, for every device of a one-boat bench)."""
        ...

    @property
    def sensors(self) -> dict[str, Any]:
        """The sensor devices, by name (faults apply to them)."""
        ...

    @property
    def observers(self) -> list[TickObserver]: ...

    @property
    def view(self) -> RunView: ...


class RuntimeControl:
    """Turns requests into control records for one world, and answers each one: the run's
    one (``world.runtime_control``), whichever front end a request came through."""

    def __init__(self, run: ControlledRun):
        self.run = run
        # the weather last asked for, as a weather file would say it, and its preset's name:
        # what a partial change is laid over (its record may not have reached the tick yet)
        self.weather_doc = self._initial_weather_doc()
        self.weather_name = run.bench.weather.preset
        self.requests = 0
        self.refused = 0
        # name -> MMSI of the run's targets once the traffic records queued are applied: the
        # queue drains at the next tick, so a second request before it is judged against this
        self._roster: dict[str, int] | None = None
        self._one_at_a_time = asyncio.Lock()  # a request waits for the one before it

    def _initial_weather_doc(self) -> dict:
        """The running weather as a weather file would say it: its preset, with the bench's
        mean overrides written in, so that a partial change keeps them."""
        weather = self.run.bench.weather
        try:
            # the file it was read from (a bench may name its preset by a path: looked up by its
            # name, a partial change was laid over nothing, and lost the file's gusts and waves)
            doc = load_toml(Path(weather.source))
        except ConfigError:
            doc = {}
        doc.setdefault("wind", {}).update(speed=weather.wind.speed, from_deg=weather.wind.from_deg)
        doc.setdefault("current", {}).update(
            speed=weather.current.speed, to_deg=weather.current.to_deg
        )
        if "waves" in doc:
            doc["waves"]["hs"] = weather.waves.hs
        return doc

    async def handle(self, request: str, payload: bytes, source: str) -> dict[str, Any]:
        """One request (``request`` is one of REQUESTS) from ``source`` (``<source>/<request>``
        in the recording, ``mqtt:control`` say): its answer, logged and told to the observers;
        never raises. Requests are taken one at a time, in the order they came."""
        async with self._one_at_a_time:
            answer = await self._answer(request, payload, source)
        log.info(
            "control.request", source=source, **{k: v for k, v in answer.items() if k != "results"}
        )
        sent = as_sent(payload)
        view = self.run.view
        for observer in self.run.observers:
            observer.on_request(view, request, f"{source}/{request}", sent, answer)
        return answer

    async def _answer(self, request: str, payload: bytes, source: str) -> dict[str, Any]:
        self.requests += 1
        answer: dict[str, Any] = {"id": None, "request": request}
        try:
            if len(payload) > MAX_REQUEST_BYTES:
                raise RequestError(f"a request of at most {MAX_REQUEST_BYTES} bytes")
            body = self._body(request, payload)
            answer["id"] = body.pop("id", None)
            if self.run.queue.full:  # a put would drop a record of a request answered ok
                raise RequestError(
                    f"busy: {len(self.run.queue)} control records wait for "
                    "the next tick (the run is paused or far behind); try "
                    "again"
                )
            if request == "commands":
                answer.update(self._commands(body, f"{source}/{request}"))
            elif request == "weather":
                answer.update(await self._weather(body))
            elif request == "fault":
                answer.update(self._fault(body))
            elif request == "reposition":
                answer.update(self._reposition(body))
            elif request == "traffic":
                answer.update(await self._traffic(body))
            else:
                raise RequestError(f"a request among: {', '.join(REQUESTS)}")
            if answer.get("applied") == 0:  # a commands request that applied no line did nothing
                raise RequestError(no_line_applied(answer["results"]))
            answer["ok"] = True
        except (RequestError, ConfigError) as e:
            self.refused += 1
            answer["ok"] = False
            answer["error"] = str(e)
        answer["t"] = round(self.run.sim.t, 6)
        return answer

    @staticmethod
    def _body(request: str, payload: bytes) -> dict:
        text = payload.decode("utf-8", "replace").strip()
        if request == "commands" and text.startswith(("$", "!")):
            return {"lines": [text]}  # (split into its lines as any element of lines is)
        try:
            body = json_value(text)
        except ValueError as e:
            raise RequestError(f"a JSON object ({e})") from None
        if not isinstance(body, dict):
            raise RequestError(f"a JSON object, not {type(body).__name__}")
        return body

    # --- the boat a request concerns -------------------------------------------------------------
    def _boat(self, s: Section) -> tuple[int, dict[str, str]]:
        """The boat ``s`` names by its ``boat`` key, by default the first: its index in the
        world (the bench's order) and what the answer says of it (``{"boat": NAME}`` on a fleet;
        nothing on a one-boat bench, whose answers are as they were). A name the bench has no
        boat of is refused, naming the bench's boats."""
        bench = self.run.bench
        names = [b.name for b in bench.boats]
        if not s.has("boat"):
            return 0, ({"boat": names[0]} if names else {})
        name = s.string("boat")
        if not names:  # one boat: its vessel's name
            if name == bench.vessel.name:
                return 0, {}
            raise s.error(
                "boat",
                name,
                f"the bench's one boat, {bench.vessel.name} (a one-boat bench: leave boat out)",
            )
        if name not in names:
            raise s.error("boat", name, "a boat of the bench: " + ", ".join(names))
        return names.index(name), {"boat": name}

    def _boat_named(self, boat: int) -> str:
        """The name of the world's boat ``boat`` (a one-boat bench's: its vessel's)."""
        bench = self.run.bench
        return bench.boats[boat].name if bench.boats else bench.vessel.name

    # --- commands: NMEA lines, as a controller sends them, through the command devices ----------
    def _commands(self, body: dict, port: str) -> dict:
        """``port``: what the lines' Inbound says they came on, ``<source>/commands`` (the
        bus channel of the recording and the bus's log say so), as a port's name would."""
        s = Section(body, "control/commands")
        lines = s.raw("lines", None)
        if lines is None:
            lines = [s.string("line")]
        if not isinstance(lines, list) or not lines or not all(isinstance(x, str) for x in lines):
            raise s.error("lines", lines, "a list of NMEA sentences")
        every = list(self.run.command_devices)
        name = s.string("device", "")
        given = s.has("boat")
        boat, said = self._boat(s)
        s.finish()
        boat_of = self.run.boat_of
        on_boat = [d for d in every if boat_of.get(d.config.name, 0) == boat]
        if name:  # that device, on its own boat (a boat given too must be its)
            devices = [d for d in every if d.config.name == name]
            if devices and boat_of.get(name, 0) != boat:
                if given:
                    mine = ", ".join(d.config.name for d in on_boat) or "none"
                    where = self._boat_named(boat)
                    raise s.error("device", name, f"a command device on {where} ({mine})")
                said = {"boat": self._boat_named(boat_of.get(name, 0))}
        else:  # the boat's (by default the first boat's: a one-boat bench's, all of them)
            devices = on_boat
        if not devices:
            names = ", ".join(d.config.name for d in every) or "none"
            if not name and every:  # a fleet's boat without one
                raise s.error(
                    "boat",
                    self._boat_named(boat),
                    f"a boat with a command device (the bench's: {names})",
                )
            raise RequestError(
                f"device = {name or None!r}: expected a command device of the bench ({names})"
            )
        results = []
        for text in lines:
            for line in bus_lines(text):
                results.append(self._command_line(devices, line, port))
        return {**said, "results": results, "applied": results.count("applied")}

    def _command_line(self, devices: list[TakesCommands], line: bytes, port: str) -> str:
        """'applied', or the reason the first device refused it."""
        reasons = []
        for device in devices:
            inbound = Inbound(line, port, None, time.monotonic())
            if self.run.dispatcher.deliver(device, inbound) is not None:
                return "applied"
            if device.last_rejection is not None:  # (reason, detail) of the line just refused
                reasons.append(device.last_rejection[0])
        return reasons[0] if reasons else "rejected"

    # --- weather: a preset, or any part of a weather file --------------------------------------
    async def _weather(self, body: dict) -> dict:
        if not body:
            raise RequestError('a weather: {"preset": NAME} or part of a weather file')
        preset = body.pop("preset", None)
        if preset is not None:
            if not isinstance(preset, str):
                raise ConfigError("control/weather", "preset", preset, "a preset name")
            try:  # a name only: a client of the broker or a viewer must not have the daemon
                # read (and quote back in a refusal) whatever file it can read
                doc = await asyncio.to_thread(load_toml, PRESETS.resolve_name(preset))
            except ConfigError as e:
                raise ConfigError("control/weather", "preset", preset, e.expected) from None
            name = preset
        else:
            doc, name = self.weather_doc, self.weather_name
        doc = deep_merge(doc, body)
        waves = body.get("waves")
        sent: dict = waves if isinstance(waves, dict) else {}
        if preset is not None and "hs" not in sent:  # the preset's waves, as its file says them
            read = copy.deepcopy(doc)
        else:  # a height laid over waves (the request's, or the running weather's)
            read = calm_sea_unshaped(doc, sent)
        root = Section(read, "control/weather")
        weather = read_weather(root, name, "control/weather")
        root.finish()
        run = self.run
        # the spectra, tables and wave components take a while: off the loop's thread
        environment = await asyncio.to_thread(
            Environment, weather, run.bench.vessel, run.dt, run.bench.seed, run.duration
        )
        others = []  # a fleet's other boats feel the same weather, each with its own hull
        for sim in run.fleet_sims:
            others.append(
                await asyncio.to_thread(
                    Environment, weather, sim.vessel, run.dt, run.bench.seed, run.duration
                )
            )
        run.queue.put(WeatherChange(environment, tuple(others)))
        self.weather_doc, self.weather_name = doc, name
        return {"weather": environment.summary()}

    # --- faults: a sensor's dropout, freeze, invalid data or bias jump; an actuator's ----------
    def _fault(self, body: dict) -> dict:
        s = Section(body, "control/fault")
        t_now = self.run.sim.t
        given = s.has("boat")
        boat, said = self._boat(s)
        if s.has("actuator"):  # an actuator of the boat's vessel (the first boat's by default)
            name = s.string("actuator")
            kind = s.string("kind", choices=ACTUATOR_FAULTS)
            s.finish()
            bench = self.run.bench
            specs = bench.boats[boat].vessel.actuators if bench.boats else bench.vessel.actuators
            index = next((a.index for a in specs if a.name == name), None)
            if index is None:
                of = f" of {said['boat']}" if said else ""
                raise s.error(
                    "actuator", name, f"an actuator{of}: " + ", ".join(a.name for a in specs)
                )
            self.run.queue.put(ActuatorFault(index, kind, boat))
            return {**said, "actuator": name, "kind": kind}
        name = s.string("device")
        sensors = self.run.sensors
        if name not in sensors:
            raise s.error("device", name, "a sensor device: " + ", ".join(sensors))
        # a sensor is named by itself, on whichever boat; a boat given too must be its own
        on = self.run.boat_of.get(name, 0)
        if given and on != boat:
            mine = [n for n in sensors if self.run.boat_of.get(n, 0) == boat]
            where = self._boat_named(boat)
            raise s.error("device", name, f"a sensor on {where}: " + (", ".join(mine) or "none"))
        said = {"boat": self._boat_named(on)} if said else {}
        if body.get("kind") == "clear":
            s.raw("kind")
            s.finish()
            self.run.queue.put(SensorFault(name, None))
            return {**said, "device": name, "kind": "clear"}
        # the request is a bench's [[device.fault]] with its device, and a duration for its
        # end: one table, so that an unknown key's error lists every key the request takes
        table = Section({"start": t_now, **body}, "control/fault")
        table.skip("device", *(["boat"] if given else []))  # (read above)
        self._fault_times(table, t_now)
        quantities = load_device_type(sensors[name].config.type).quantity_units
        (spec,) = read_faults([table], quantities)
        self.run.queue.put(SensorFault(name, spec))
        return {
            **said,
            "device": name,
            "kind": spec.kind,
            "start": spec.start,
            "end": spec.end if math.isfinite(spec.end) else None,
        }

    def _fault_times(self, table: Section, t_now: float) -> None:
        """A fault's ``start``, and its ``duration`` made the ``end`` a bench's fault gives,
        each within the longest a fault may be timed (``fault_limit``): a duration of 1e308 s
        was taken."""
        limit, why = self.fault_limit()
        duration = None
        if table.has("duration"):
            if table.has("end"):
                raise table.error(
                    "duration", table.data["duration"], "either duration or end, not both"
                )
            duration = table.number("duration", positive=True, unit="s")
            if duration > limit:
                raise table.error(
                    "duration",
                    duration,
                    f"a duration of at most {limit:.10g} s "
                    f"({why}; without one, the fault lasts for good)",
                )
        start = table.number("start", lo=0.0, unit="s")
        if start > t_now + limit:
            raise table.error(
                "start",
                start,
                f"a start at most {limit:.10g} s from now (t = {t_now:.10g} s; {why})",
            )
        if duration is not None:
            table.data["end"] = start + duration
        elif table.has("end"):
            end = table.number("end", unit="s")
            if end - start > limit:
                raise table.error(
                    "end", end, f"an end at most {limit:.10g} s after the start ({why})"
                )

    def fault_limit(self) -> tuple[float, str]:
        """The longest a fault may be timed, in seconds, and why: the run's duration when it
        has one (a fault longer than the run is a mistake), else MAX_FAULT_S."""
        duration = self.run.duration
        if duration is not None and duration <= MAX_FAULT_S:
            return duration, "the run's duration"
        return MAX_FAULT_S, "a year"

    # --- reposition: where a boat is, which way it heads, how fast ---------------------------
    def _reposition(self, body: dict) -> dict:
        s = Section(body, "control/reposition")
        boat, said = self._boat(s)
        origin = self.run.bench.origin
        far = MAX_REPOSITION_M
        by_position = s.has("latitude") or s.has("longitude")
        if not by_position and not (s.has("north") or s.has("east")):
            # (taken as "where it is", it moved the boat to where the request found it)
            raise ConfigError(
                "control/reposition",
                "",
                body,
                "a position to move to: "
                "latitude and longitude [degrees], or north and east [m from the "
                "origin]; heading_deg and speed only with one",
            )
        if by_position:
            lat = s.number("latitude", lo=-89.0, hi=89.0, unit="degrees north")
            lon = s.number("longitude", lo=-180.0, hi=180.0, unit="degrees east")
            north, east, _ = origin.to_ned(lat, lon)
        else:  # (each within range alone may still be too far together)
            north = s.number("north", lo=-far, hi=far, unit="m")
            east = s.number("east", lo=-far, hi=far, unit="m")
        distance = math.hypot(north, east)
        if distance > far:  # blamed on the coordinate that takes it farther
            keys = (
                ("latitude", lat, "longitude", lon)
                if by_position
                else ("north", north, "east", east)
            )
            key, value = keys[:2] if abs(north) >= abs(east) else keys[2:]
            where = f"({origin.latitude_deg:.5f}, {origin.longitude_deg:.5f})"
            raise s.error(
                key,
                value,
                f"a position within {far / 1000:g} km of the origin "
                f"{where} (this one is {distance / 1000:.1f} km from it)",
            )
        heading = s.raw("heading_deg", None)
        if heading is not None:
            heading = math.radians(s.number("heading_deg", lo=-360.0, hi=360.0, unit="deg"))
        speed = s.raw("speed", None)
        if speed is not None:
            speed = s.number("speed", lo=-20.0, hi=30.0, unit="m/s")
        s.finish()
        self.run.queue.put(Reposition(north, east, heading, speed, boat))
        return {**said, "north": round(north, 3), "east": round(east, 3)}

    # --- traffic: add a target, remove one, re-task one -----------------------------------------
    async def _traffic(self, body: dict) -> dict:
        s = Section(body, "control/traffic")
        given = [k for k in ("add", "remove", "retask") if s.has(k)]
        if len(given) > 1:
            both = " and ".join(given) if len(given) == 2 else "add, remove and retask"
            raise RequestError(
                f"one of add, remove or retask in a request, not {both} "
                "together: send one request for each"
            )
        if not given:
            raise RequestError(
                'one of {"add": {TARGET}}, {"remove": NAME} or '
                '{"retask": NAME, ...}, with a target as a bench\'s '
                "[[traffic]] table gives it"
            )
        sim = self.run.sim
        if self._roster is None:
            targets = sim.traffic.targets if sim.traffic is not None else ()
            self._roster = {t.name: t.identity.mmsi for t in targets}
        roster = self._roster
        names = list(roster)
        if given[0] == "add":
            return await self._add_target(s, roster)
        key = given[0]
        name = s.string(key)
        if name not in names:
            raise s.error(key, name, "a target of the run: " + (", ".join(names) or "none"))
        if key == "remove":
            s.finish()
            self.run.queue.put(TrafficRemove(name))
            del roster[name]
            return {"removed": name}
        return {"retasked": name, **self._retask(s, name)}

    async def _add_target(self, s: Section, roster: dict[str, int]) -> dict:
        """A new target: refused beyond MAX_TARGETS (as a bench's [[traffic]]), read as a
        bench's table, its rows built off the tick (an encounter placed against the own ship
        as it is now, the kernel compiled the first time); the record only copies them in."""
        if len(roster) >= MAX_TARGETS:
            raise s.error(
                "add",
                s.data["add"],
                f"at most {MAX_TARGETS} traffic targets in a "
                f"run, as in a bench (it has {len(roster)}: remove one "
                "first)",
            )
        table = s.table("add", required=True)
        s.finish()
        problems = Problems()
        target = read_target(table, self.run.bench.origin, problems)
        if target is None or problems.errors:
            problems.raise_any()
            raise RequestError("a target")  # (not reached: a None target has problems)
        if target.name in roster:
            raise table.error("name", target.name, "a name no target of the run has")
        taken = {mmsi: name for name, mmsi in roster.items()}
        if target.identity.mmsi in taken:
            raise table.error(
                "mmsi",
                target.identity.mmsi,
                f"an MMSI no target has (taken by {taken[target.identity.mmsi]})",
            )
        sim = self.run.sim
        own, t = sim.x.copy(), sim.t  # (a copy: the tick steps on while the rows are built)
        against = own
        if isinstance(target.motion, Encounter) and target.motion.boat:  # a fleet's boat's
            against = self._boat_state(table, target.motion.boat)
        try:
            prepared = await asyncio.to_thread(prepare_target, target, own, t, against)
        except ValueError as e:
            if isinstance(target.motion, Encounter):
                raise table.error("encounter", table.data.get("encounter"), str(e)) from None
            raise RequestError(f"add: {e}") from None
        self.run.queue.put(TrafficAdd(prepared))
        roster[target.name] = target.identity.mmsi
        return {"added": target.name, "mmsi": target.identity.mmsi}

    def _boat_state(self, table: Section, name: str) -> np.ndarray:
        """A copy of the state of the fleet's boat ``name`` (an encounter placed against it)."""
        names = [b.name for b in self.run.bench.boats]
        if name not in names:
            expected = (
                f"a boat of the bench: {', '.join(names)}"
                if names
                else "no boat: a fleet bench's key (a one-boat bench places an encounter "
                "against its vessel)"
            )
            raise table.error("encounter.boat", name, expected)
        i = names.index(name)
        return (self.run.sim if i == 0 else self.run.fleet_sims[i - 1]).x.copy()

    def _retask(self, s: Section, name: str) -> dict:
        """A new course and/or speed (from where the target is), a route, or a behaviour."""
        traffic = self.run.sim.traffic
        if traffic is None or name not in {t.name for t in traffic.targets}:
            raise RequestError(
                f"retask = {name!r}: a target that is sailing (it was added "
                "a moment ago: retask it after its first traffic message)"
            )
        row = traffic.view().state[traffic.index(name)]
        motion: Motion | None = None
        if s.has("route"):
            route = s.table("route", required=True)
            motion = read_route(route, self.run.bench.origin, from_here=True)
            s.skip("course_deg", "speed", "speed_kn")
        elif s.has("course_deg") or s.has("speed") or s.has("speed_kn"):
            course = math.radians(
                s.number(
                    "course_deg",
                    math.degrees(row[TL.T_BASE_COURSE]),
                    lo=-360.0,
                    hi=360.0,
                    unit="deg",
                )
            )
            speed = speed_of(s, required=False, default=float(row[TL.T_SPEED_CMD]))
            north, east = float(row[TL.T_NORTH]), float(row[TL.T_EAST])
            motion = Course(north, east, course % (2 * math.pi), speed)
        behaviour = read_behaviour(s) if s.has("behaviour") else None
        s.finish()
        if motion is None and behaviour is None:
            raise RequestError("a new course_deg, speed_kn (or speed), route or behaviour")
        self.run.queue.put(TrafficRetask(name, motion, behaviour))
        answer: dict[str, Any] = {}
        if isinstance(motion, Course):
            answer.update(
                course_deg=round(math.degrees(motion.course), 2), speed=round(motion.speed, 3)
            )
        elif isinstance(motion, Route):
            answer["waypoints"] = len(motion.waypoints)
        if behaviour is not None:
            answer["behaviour"] = behaviour.kind
        return answer


def prepare_target(
    target: Target, own_x: np.ndarray, t: float, against: np.ndarray | None = None
) -> PreparedTarget:
    """``target``'s rows against the own ship's state ``own_x`` at the run's time ``t``, off
    the tick: the traffic kernel compiled (or loaded from the cache) the first time, an
    encounter placed against ``against`` (a fleet's boat's state; the own ship's by default;
    ValueError when it cannot be set up, or would start farther from the origin than a
    course may)."""
    from hild.traffic.kernel import warm_up  # (the kernel loads only for a run with traffic)
    from hild.traffic.read import placed
    from hild.traffic.traffic import own_course, prepare

    warm_up()
    motion = target.motion
    if isinstance(motion, Encounter):
        motion = placed(motion, *own_course(own_x if against is None else against))
    return prepare(target, own_x, t, motion)
