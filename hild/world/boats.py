"""A fleet's boats in one world: each boat's own simulation and actuators, and what each one's
sensors see of the others.

The world's first boat is the world's own ``sim`` and ``arbiter`` (a one-boat bench's only
boat, exactly as before); every other boat is an ``Afloat`` here, stepped in the same tick, in
the same weather (its own environment of the bench's weather and seed: one wind, one sea, felt
by each hull) and on the same clock. A command reaches the arbiter of the boat its device is on
(``FleetArbiter``); each boat's sensors sample that boat's truth, whose traffic is the run's
targets and every other boat (``fleet_view``): a radar sees them. The AIS stations (the run's
targets and every boat) are on one VHF data link (``share_air``): each transmission is made
once, by its station's one clock, and heard by every boat's receiver in range at that instant;
a boat's own transponder output (VDO) is its own station's transmissions.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hild.bench import Bench
from hild.bus.arbiter import Arbiter
from hild.control import ControlRecord
from hild.coupled.simulation import Simulation
from hild.fleet import Boat
from hild.model import layout as L
from hild.traffic import ais
from hild.traffic import layout as TL
from hild.traffic.targets import Course, Target
from hild.traffic.view import TrafficView


@dataclass
class Afloat:
    """One boat of the world beside its first: its bench record, simulation and arbiter."""

    boat: Boat
    sim: Simulation
    arbiter: Arbiter


class FleetArbiter:
    """The boats' arbiters as one: a record goes to the arbiter of the boat it names (an
    actuator fault's ``boat``), else of the boat its source device is on (the first boat's for
    a record of neither)."""

    def __init__(self, arbiters: Sequence[Arbiter], boat_of: Mapping[str, int]):
        self.arbiters = list(arbiters)
        self.boat_of = dict(boat_of)  # device name -> index of its boat

    def apply(self, record: ControlRecord) -> None:
        index = getattr(record, "boat", None)
        if index is None:
            index = self.boat_of.get(getattr(record, "source", ""), 0)
        self.arbiters[index].apply(record)

    @property
    def commands(self) -> int:
        return sum(a.commands for a in self.arbiters)

    @property
    def safe_states(self) -> int:
        return sum(a.safe_states for a in self.arbiters)


def as_target(boat: Boat) -> Target:
    """A boat as another boat's sensors see it: its name and AIS identity (its motion is its
    simulation's, not the course given here)."""
    return Target(boat.name, boat.identity, Course(boat.north, boat.east, 0.0, 0.0))


def target_row(sim: Simulation) -> np.ndarray:
    """A boat's state in a traffic row (hild/traffic/layout.py): place, course over ground as
    its heading, speed over ground, yaw rate (the rest zero: no traffic behaviour)."""
    row = np.zeros(TL.T_SIZE)
    x = sim.x
    psi = float(x[L.X_ETA + 5])
    u, v = float(x[L.X_NU]), float(x[L.X_NU + 1])
    vn = u * math.cos(psi) - v * math.sin(psi)  # (level: the roll and pitch of a hull are small)
    ve = u * math.sin(psi) + v * math.cos(psi)
    row[TL.T_NORTH] = x[L.X_ETA]
    row[TL.T_EAST] = x[L.X_ETA + 1]
    row[TL.T_SPEED] = math.hypot(vn, ve)
    course = math.atan2(ve, vn) if row[TL.T_SPEED] > 0.05 else psi  # (at rest: the heading)
    row[TL.T_HEADING] = course % (2.0 * math.pi)
    row[TL.T_YAW_RATE] = x[L.X_NU + 5]
    return row


class FleetViews:
    """What each boat's sensors see of the others at one instant: every boat's traffic row
    made once per instant (``at``), each boat's view the run's traffic and all rows but its
    own (a boat's instant costs a copy of the rows, not a row per other boat)."""

    def __init__(self, targets: Sequence[Target], sims: Sequence[Simulation]):
        self.targets = tuple(targets)  # each boat as a target (``as_target``)
        self.sims = list(sims)
        self.rows = np.zeros((len(self.sims), TL.T_SIZE))
        self.k: int | None = None  # the tick the rows are of
        self.traffic: TrafficView | None = None

    def at(self, k: int, traffic: Callable[[], TrafficView | None]) -> None:
        """The rows (and the run's traffic, ``traffic()``) of tick ``k``, made once."""
        if self.k == k:
            return
        self.k = k
        for i, sim in enumerate(self.sims):
            self.rows[i] = target_row(sim)
        self.traffic = traffic()

    def view(self, boat: int) -> TrafficView:
        """The run's traffic and every boat but ``boat`` (all of them for -1)."""
        if boat < 0:
            targets, rows = self.targets, self.rows.copy()
        else:
            targets = self.targets[:boat] + self.targets[boat + 1 :]
            rows = np.delete(self.rows, boat, axis=0)
        traffic = self.traffic
        if traffic is None:
            return TrafficView(targets, rows)
        return TrafficView(tuple(traffic.targets) + targets, np.vstack([traffic.state, rows]))


def share_air(bench: Bench, devices: Sequence[Any], stations: Callable[[], TrafficView]) -> ais.Air:
    """A fleet's one VHF data link (hild/traffic/ais.py ``Air``), its clocks seeded from the
    run's seed, its stations ``stations()`` (the run's targets and every boat, by name): each
    device runtime (hild/world/devices.py) whose device hears it (an AIS receiver's
    ``share_air``) listens from its boat, whose station it is."""
    state = np.random.SeedSequence([bench.seed, zlib.crc32(b"ais-air")]).generate_state(1)[0]
    air = ais.Air(int(state), stations)
    for rt in devices:
        share = getattr(rt.device, "share_air", None)
        if share is not None:
            share(air, bench.boats[rt.boat].name)
    return air
