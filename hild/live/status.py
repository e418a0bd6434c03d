"""The run's status as one snapshot: what a status line shows and ``hild ctl status`` answers.

Taken in the tick thread (``StatusBoard.on_tick``, about twice a wall second, never waiting) so
that it is one consistent instant of the simulation; read from anywhere as a plain dict.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hild.bus.watchdog import ACTIVE, NEUTRAL, TRIPPED
from hild.model import layout as L
from hild.observers import TickObserver
from hild.units import compass_deg

if TYPE_CHECKING:
    import numpy as np

    from hild.model.vessel import ActuatorSpec
    from hild.observers import RunView
    from hild.sensors.truth import Truth

STATUS_PERIOD_S = 0.5  # wall seconds between snapshots


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
    """A boat's actuators' states: speed, and angle [deg] and deflector when it has them."""
    actuators = {}
    for a in specs:
        base = a.index * L.S_SIZE
        state = {"speed": round(float(act_state[base + L.S_SPEED]), 2)}
        if a.angle_kind != "none":
            state["angle_deg"] = round(math.degrees(act_state[base + L.S_ANGLE]), 2)
        if a.has_deflector:
            state["deflector"] = round(float(act_state[base + L.S_DEFLECTOR]), 3)
        actuators[a.name] = state
    return actuators


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


def snapshot(run: RunView, t: float, time_scale: float | None) -> dict[str, Any]:
    """The status at simulated time ``t`` (``time_scale``: held over the last period), of the
    first boat; a fleet's boats each under ``boats`` (``boat_summaries``)."""
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
        "clients": run.clients(),
        "ticks": run.ticks,
        "overruns": run.overruns,
    }


class StatusBoard(TickObserver):
    """Keeps the latest status snapshot, taken in the tick thread every STATUS_PERIOD_S."""

    def __init__(self) -> None:
        self.latest: dict[str, Any] = {}
        self._next = 0.0
        self._last: tuple[float, float] | None = None  # (t, wall) of the last snapshot

    def on_tick(self, run: RunView, t: float) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + STATUS_PERIOD_S
        scale = None
        if self._last is not None and now > self._last[1]:
            scale = (t - self._last[0]) / (now - self._last[1])
        self._last = (t, now)
        self.latest = snapshot(run, t, scale)  # (one assignment: readers see a whole one)
