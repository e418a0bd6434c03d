"""Several boats in one sea: a bench's ``[[boat]]`` tables, and the rules across them.

A one-boat bench has a ``[vessel]`` table and no boats (``Bench.boats`` is empty): nothing of it
changes. A fleet bench has ``[[boat]]`` tables instead, each a boat with a name (an identifier,
as a device's), a profile, a start (``north``/``east`` from the origin or ``latitude``/
``longitude``, ``heading_deg``, ``speed``), held commands and its identity on the water (MMSI,
ship name, call sign, AIS class, ship type, dimensions: the keys of a ``[[traffic]]`` table);
every ``[[device]]`` says which boat it is on (``boat = "NAME"``). One origin, one weather, one
traffic and one clock for all.

The rules here judge what no single table can (each problem of a bench at once, with the key
that holds it): boat names and MMSIs used once (an MMSI also against the traffic's), each device
on a boat of the bench, no port shared between two boats' devices (a line on it would be one
boat's and the other's), one autopilot link per boat, and starts at least the two boats' half
lengths apart (two hulls in one place).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hild.config import ConfigError
from hild.model.vessel import Vessel
from hild.traffic.targets import Identity


@dataclass(frozen=True)
class Boat:
    """One boat of a fleet bench: what it is, where it starts, how it shows on AIS."""

    name: str
    vessel: Vessel
    profile: str
    method: str
    north: float  # [m] from the bench's origin
    east: float  # [m]
    heading_deg: float
    speed: float  # [m/s] initial surge speed
    identity: Identity
    commands: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class BoatTable:
    """A boat as the rules see it: the boat, how to make an error at one of its table's keys,
    and the key its start was given by (``north`` or ``latitude``)."""

    boat: Boat
    error: Callable[[str, Any, str], ConfigError]
    start_key: str = "north"


@dataclass(frozen=True)
class Placed:
    """A device as the rules see it: its name, its boat ("" for none), its model, its ports'
    identities, and how to make an error at one of its keys."""

    name: str
    boat: str
    model: str
    ports: tuple[tuple[str, Any], ...]  # (url, identity) of each port
    error: Callable[[str, Any, str], ConfigError]


def fleet_errors(
    boats: Sequence[BoatTable],
    devices: Iterable[Placed],
    traffic_mmsis: Iterable[int],
    link_models: Iterable[str],
) -> list[ConfigError]:
    """Every problem across a fleet bench's boats and devices (see the module's
    description)."""
    errors: list[ConfigError] = []
    names: dict[str, str] = {}
    mmsis: dict[int, str] = {int(m): "a traffic target" for m in traffic_mmsis}
    for table in boats:
        boat, error = table.boat, table.error
        if boat.name in names:
            errors.append(error("name", boat.name, "a name used by one boat only"))
        names[boat.name] = boat.name
        mmsi = boat.identity.mmsi
        if mmsi in mmsis:
            errors.append(error("mmsi", mmsi, f"an MMSI of its own ({mmsis[mmsi]} has it)"))
        else:
            mmsis[mmsi] = f"boat {boat.name}"
    errors += _start_errors(boats)
    links = frozenset(link_models)
    by_port: dict[Any, tuple[str, str, str]] = {}  # port identity -> (boat, device, url)
    link_of: dict[str, str] = {}  # boat -> its autopilot link's device
    for d in devices:
        if not d.boat:
            expected = f"the boat it is on: boat = one of {', '.join(names)}"
            errors.append(d.error("boat", "", expected))
            continue
        if d.boat not in names:
            errors.append(d.error("boat", d.boat, f"a boat of this bench: {', '.join(names)}"))
            continue
        if d.model in links:
            if d.boat in link_of:
                expected = (
                    f"one autopilot link per boat ({link_of[d.boat]} is {d.boat}'s): its "
                    "frames pace that boat"
                )
                errors.append(d.error("boat", d.boat, expected))
            link_of.setdefault(d.boat, d.name)
        for url, identity in d.ports:
            other = by_port.setdefault(identity, (d.boat, d.name, url))
            if other[0] != d.boat:
                expected = (
                    f"a port of {d.boat}'s own: device {other[1]} of boat {other[0]} is on "
                    f"{other[2]} (a line there would be one boat's and the other's)"
                )
                errors.append(d.error("ports", url, expected))
    return errors


def _start_errors(boats: Sequence[BoatTable]) -> list[ConfigError]:
    """Two boats' starts at least their half lengths apart (the hulls do not overlap)."""
    errors = []
    for i, first in enumerate(boats):
        a = first.boat
        for table in boats[i + 1 :]:
            b = table.boat
            apart = math.hypot(a.north - b.north, a.east - b.east)
            needed = 0.5 * (a.vessel.length + b.vessel.length)
            if apart < needed:
                expected = (
                    f"a start at least {needed:.2f} m from boat {a.name}'s (half their lengths, "
                    f"{a.vessel.length:g} and {b.vessel.length:g} m): it is {apart:.2f} m away"
                )
                where = [round(b.north, 2), round(b.east, 2)]
                errors.append(table.error(table.start_key, where, expected))
    return errors


def describe(boats: Sequence[Boat]) -> str:
    """``2 boats (alpha: otter, bravo: blueboat)`` for a message."""
    listed = ", ".join(f"{b.name}: {b.profile}" for b in boats)
    return f"{len(boats)} boat{'s' if len(boats) != 1 else ''} ({listed})"


def own_identity_settings(boat: Boat) -> dict[str, Any]:
    """A boat's identity as an ``ais`` device's own_* settings (what its VDO reports)."""
    i = boat.identity
    return {
        "own_mmsi": i.mmsi,
        "own_class": i.ais_class,
        "own_name": i.name,
        "own_callsign": i.callsign,
        "own_ship_type": i.ship_type,
        "own_nav_status": i.nav_status,
        "own_to_bow": i.to_bow,
        "own_to_stern": i.to_stern,
        "own_to_port": i.to_port,
        "own_to_starboard": i.to_starboard,
    }


def default_dimensions(vessel: Vessel) -> tuple[int, int, int, int]:
    """AIS dimensions A, B, C, D [whole m] with the antenna at the body origin: half the
    length to bow and stern, half the beam to each side, at least 1 m each (0 is "not
    available" in ITU-R M.1371)."""
    half_length = max(1, round(vessel.length / 2))
    half_beam = max(1, round(vessel.beam / 2))
    return (half_length, half_length, half_beam, half_beam)
