"""The run's status as one snapshot: what a status line shows and ``hild ctl status`` answers.

Taken in the tick thread (``StatusBoard.on_tick``, about twice a wall second, never waiting) so
that it is one consistent instant of the simulation; read from anywhere as a plain dict.

Its keys are a published interface (scripts read ``hild ctl status``): keys are added, never
renamed. Beside the place, the actuators and the command devices:

- ``weather``: the running weather, its preset's name (``preset``; a ``hild ctl weather`` of a
  few figures keeps the name it builds on) and what the boat feels now: the true wind at
  10 m (``wind_speed`` [m/s], ``wind_from_deg``), the current (``current_speed`` [m/s],
  ``current_to_deg``) and the sea state's significant wave height (``hs`` [m], 0 in a calm
  sea); null for a run without an environment.
- ``faults``: the faults active now, a list: a sensor's (``device``, ``kind``, ``start`` and
  ``end`` [s of simulated time; end null: for good], and a bias jump's ``quantity`` and
  ``value``), the bench's and ``hild ctl fault``'s; an actuator's (``actuator``, ``kind``:
  stuck or lost, until cleared). A fleet's each name their ``boat``.
- ``clients``: each port's clients, by its URL. Only a TCP port knows who reads it (each
  client is a connection); a pty's reader opens a file, a UDP port's datagrams go to an
  address whoever listens there, a serial line is a wire whose far end says nothing, a CAN
  bus is a bus: their readers cannot be counted, and their value is null (not 0, which said
  "no one" where no one can tell). ``clients_not_countable`` lists those ports' URLs.
- ``foxglove`` (only with ``hild run --foxglove``): its ``url`` and its ``viewers``, the
  clients watching at least one topic (hild/live/foxglove.py).

Numbers have one precision per quantity (``PRECISION``): an actuator's speed in rpm to 1
rpm (an int), a normalized one (-1 to 1, electric thrusters) to 0.01, angles to 0.1 deg,
a deflector to 0.01; the status line prints them so.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hild.bus.watchdog import ACTIVE, NEUTRAL, TRIPPED
from hild.model import layout as L
from hild.observers import RunView, TickObserver
from hild.units import compass_deg

if TYPE_CHECKING:
    import numpy as np

    from hild.live.foxglove import FoxgloveLive
    from hild.model.vessel import ActuatorSpec
    from hild.observers import EnvironmentView
    from hild.sensors.faults import FaultSpec
    from hild.sensors.truth import Truth

STATUS_PERIOD_S = 0.5  # wall seconds between snapshots
COUNTED_SCHEMES = ("tcp",)  # the ports whose clients are counted: a connection each
# decimals per quantity: one precision each, in the JSON and on the status line
PRECISION = {
    "rpm": 0,  # an actuator's speed in rpm (an int)
    "normalized": 2,  # an actuator's speed from -1 to 1 (hild/model/vessel.py speed_unit)
    "angle_deg": 1,  # an azimuth's or a nozzle's angle, a heading, a course, a direction
    "deflector": 2,  # -1 (astern) to 1 (ahead)
    "wind_speed": 1,  # [m/s]
    "current_speed": 2,  # [m/s]
    "hs": 2,  # [m]
    "fault_s": 3,  # a fault's start and end [s], as t
}


def rounded(value: float, quantity: str) -> float | int:
    """``value`` to its quantity's one precision (``PRECISION``); an int for 0 decimals, and
    never -0.0 (which reads "-0.00")."""
    decimals = PRECISION[quantity]
    if decimals == 0:
        return int(round(value))
    return round(value, decimals) + 0.0


def watchdog_word(state: str, release: str) -> str:
    """A command device's watchdog as a user reads it: waiting (no command yet), leased
    (commands within the timeout), latched (tripped, waiting for a neutral command) or tripped
    (tripped, the next command releases it) (hild/bus/watchdog.py)."""
    if state == ACTIVE:
        return "leased"
    if state == TRIPPED:
        return "latched" if release == NEUTRAL else "tripped"
    return state


def _where(run: RunView, truth: Truth) -> dict[str, Any]:
    """A boat's place and motion: latitude, longitude, SOG, COG, heading."""
    eta = truth.eta
    lat, lon, _ = run.bench.origin.to_geodetic(float(eta[0]), float(eta[1]), float(eta[2]))
    v = truth.rotation @ truth.nu[:3]  # NED velocity over ground (thesis eq. 2.13)
    return {
        "latitude": round(lat, 7),
        "longitude": round(lon, 7),
        "sog_kn": round(math.hypot(v[0], v[1]) * 3600.0 / 1852.0, 2),
        "cog_deg": compass_deg(math.atan2(v[1], v[0]), 1),
        "heading_deg": compass_deg(float(eta[5]), 1),
    }


def _actuators(specs: Sequence[ActuatorSpec], act_state: np.ndarray) -> dict[str, Any]:
    """A boat's actuators' states: speed (and its unit: rpm or normalized), and angle [deg]
    and deflector when it has them, each to its one precision."""
    actuators = {}
    for a in specs:
        base = a.index * L.S_SIZE
        state: dict[str, Any] = {
            "speed": rounded(float(act_state[base + L.S_SPEED]), a.speed_unit),
            "speed_unit": a.speed_unit,
        }
        if a.angle_kind != "none":
            state["angle_deg"] = rounded(math.degrees(act_state[base + L.S_ANGLE]), "angle_deg")
        if a.has_deflector:
            state["deflector"] = rounded(float(act_state[base + L.S_DEFLECTOR]), "deflector")
        actuators[a.name] = state
    return actuators


def _weather(environment: EnvironmentView | None, truth: Truth) -> dict[str, Any] | None:
    """The running weather: its preset's name, the wind and current the boat feels now, Hs."""
    if environment is None:
        return None
    weather = environment.weather
    wn, we = truth.wind_ned  # the air's velocity at 10 m, north and east [m/s]
    cn, ce = truth.current_ned
    deg = PRECISION["angle_deg"]
    return {
        "preset": weather.preset,
        "wind_speed": rounded(math.hypot(wn, we), "wind_speed"),
        "wind_from_deg": compass_deg(math.atan2(-we, -wn), deg),  # where it blows from
        "current_speed": rounded(math.hypot(cn, ce), "current_speed"),
        "current_to_deg": compass_deg(math.atan2(ce, cn), deg),  # where it sets to
        "hs": rounded(weather.waves.hs if weather.waves.active else 0.0, "hs"),
    }


def _sensor_fault(device: str, fault: FaultSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"device": device, "kind": fault.kind}
    if fault.kind == "bias_jump":
        out.update(quantity=fault.quantity, value=fault.value)
    end = rounded(fault.end, "fault_s") if math.isfinite(fault.end) else None
    out.update(start=rounded(fault.start, "fault_s"), end=end)
    return out


def active_faults(run: RunView, t: float) -> list[dict[str, Any]]:
    """The faults active at ``t``: the sensors' (in the bench's order), then the actuators'
    (by boat); each naming its ``boat`` in a fleet."""
    bench = run.bench
    boat_of = {d.name: d.config.boat for d in run.devices}
    first = bench.boats[0].name if bench.boats else ""
    out = []
    for device, faults in run.sensor_faults().items():
        for fault in faults:
            if fault.active(t):
                where = {"boat": boat_of.get(device) or first} if bench.boats else {}
                out.append({**where, **_sensor_fault(device, fault)})
    for boat, faulty in run.actuator_faults().items():
        vessel = bench.boats[boat].vessel if bench.boats else bench.vessel
        names = {a.index: a.name for a in vessel.actuators}
        where = {"boat": bench.boats[boat].name} if bench.boats else {}
        for index, kind in faulty.items():
            out.append({**where, "actuator": names[index], "kind": kind})
    return out


def countable(url: str) -> bool:
    """Whether a port's clients can be counted, from its URL's scheme (``ydraw+tcp://``: a
    framing's too)."""
    scheme = url.partition("://")[0].rpartition("+")[2]
    return scheme in COUNTED_SCHEMES


def _clients(run: RunView) -> dict[str, Any]:
    """``clients`` (null where not countable) and ``clients_not_countable``."""
    clients = {url: n if countable(url) else None for url, n in run.clients().items()}
    return {
        "clients": clients,
        "clients_not_countable": [url for url, n in clients.items() if n is None],
    }


def _foxglove(foxglove: FoxgloveLive | None) -> dict[str, Any]:
    """``foxglove``, when the run serves it: where, and its viewers (an int, read unlocked)."""
    if foxglove is None or foxglove.server is None:
        return {}
    return {"foxglove": {"url": foxglove.url, "viewers": foxglove.viewers}}


def boat_summaries(run: RunView, t: float) -> dict[str, dict[str, Any]]:
    """A fleet's boats at ``t``, by name, in the bench's order: each one's place and motion
    (``_where``) and its actuators' states (empty for a one-boat bench). The one home of the
    per-boat summary: ``hild ctl status``'s ``boats``, and the status line's line per boat."""
    out = {}
    for i, boat in enumerate(run.bench.boats):
        truth = run.truth(t, i)
        out[boat.name] = {
            **_where(run, truth),
            "actuators": _actuators(boat.vessel.actuators, truth.actuators),
        }
    return out


def snapshot(
    run: RunView, t: float, time_scale: float | None, foxglove: FoxgloveLive | None = None
) -> dict[str, Any]:
    """The status at simulated time ``t`` (``time_scale``: held over the last period), of the
    first boat; a fleet's boats each under ``boats`` (``boat_summaries``); ``foxglove``: the
    run's Foxglove server, if it serves one."""
    truth = run.truth(t)
    where = _where(run, truth)
    actuators = _actuators(run.bench.vessel.actuators, run.act_state)
    devices = {
        d.name: {
            "watchdog": watchdog_word(d.watchdog_state, d.watchdog_release),
            "commands": d.commands,
            "refused": d.refused,
        }
        for d in run.command_devices
    }
    return {
        "bench": run.bench.name,
        "t": round(t, 3),
        "utc": truth.utc.isoformat(),
        "time_scale": None if time_scale is None else round(time_scale, 3),
        **where,
        **({"boats": boat_summaries(run, t)} if run.bench.boats else {}),
        "actuators": actuators,
        "command_devices": devices,
        **_clients(run),
        "ticks": run.ticks,
        "overruns": run.overruns,
        "weather": _weather(run.environment, truth),
        "faults": active_faults(run, t),
        **_foxglove(foxglove),
    }


class StatusBoard(TickObserver):
    """Keeps the latest status snapshot, taken in the tick thread every STATUS_PERIOD_S."""

    def __init__(self) -> None:
        self.latest: dict[str, Any] = {}
        self.foxglove: FoxgloveLive | None = None  # the run's Foxglove server, if any
        self._next = 0.0
        self._last: tuple[float, float] | None = None  # (t, wall) of the last snapshot

    async def start(self, run: RunView) -> None:
        from hild.live.foxglove import FoxgloveLive  # (its module: loaded by a run already)

        self.foxglove = next(iter(run.observers_of(FoxgloveLive)), None)

    def now(self, run: RunView) -> dict[str, Any]:
        """The latest snapshot; before the first, one taken now (at the run's ``t``)."""
        return self.latest or snapshot(run, run.t, None, self.foxglove)

    def on_tick(self, run: RunView, t: float) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + STATUS_PERIOD_S
        scale = None
        if self._last is not None and now > self._last[1]:
            scale = (t - self._last[0]) / (now - self._last[1])
        self._last = (t, now)
        # (one assignment: readers see a whole one)
        self.latest = snapshot(run, t, scale, self.foxglove)
