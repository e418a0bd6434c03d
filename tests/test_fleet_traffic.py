"""A fleet's traffic (hild/traffic/kernel.py traffic_fleet_tick, hild/world/world.py): a COLREG
target judges every boat, engages the most dangerous of those that threaten it (the soonest
CPA; of two as soon, the closer) and keeps that boat until the encounter is over; the rows'
reported geometry stays against the first boat, and each boat's closest approach to each
target is kept apart (Traffic's ``*_by_boat`` arrays, ``closest_approaches_by_boat``, the
world's ``vessel_summary()["boats"]``), held here against the distances reckoned from the
boats' and the target's sampled positions."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from hild.bench import BenchError, load_bench
from hild.traffic.layout import (
    MODE_GIVE_WAY,
    MODE_SAIL,
    SIT_CROSSING_GIVE_WAY,
    SIT_CROSSING_STAND_ON,
    SIT_HEAD_ON,
    SIT_OVERTAKING,
    T_EAST,
    T_ENGAGED,
    T_HEADING,
    T_MIN_RANGE,
    T_MIN_RANGE_T,
    T_MODE,
    T_NORTH,
    T_OWN,
    T_RANGE,
    T_SITUATION,
)
from hild.traffic.report import closest_approaches, closest_approaches_by_boat
from hild.traffic.targets import Behaviour, Course, Encounter, Identity, Target
from hild.traffic.traffic import Traffic

DT = 0.1


def state(north: float, east: float, heading_deg: float = 0.0, speed: float = 0.0) -> np.ndarray:
    x = np.zeros(12)
    x[0], x[1], x[5], x[6] = north, east, math.radians(heading_deg), speed
    return x


def colreg(name: str, motion, mmsi: int = 257100001) -> Target:
    return Target(name, Identity(mmsi, name.upper()), motion, Behaviour("colreg"))


# --- the kernel -----------------------------------------------------------------------------
def test_a_fleet_of_one_boat_steps_the_traffic_as_one_boat_does_bit_for_bit():
    """With one boat the fleet kernel is the one-boat kernel: every encounter judged and
    sailed alike to the last bit, and the boat's column of closest approaches the rows'."""
    own = state(200.0, -100.0, math.degrees(0.3), 5.0)
    targets = [
        colreg(s, Encounter(50.0, 100.0, 7.0, situation=s), 257100001 + k)
        for k, s in enumerate(("head-on", "crossing-give-way", "crossing-stand-on", "overtaken"))
    ]
    one, fleet = Traffic(targets, own), Traffic(targets, own)
    before, after = own.copy(), own.copy()
    b2, a2 = before[None, :].copy(), after[None, :].copy()
    modes = set()
    for k in range(3000):  # the own ship on a straight line at 5 m/s
        before[:] = after
        after[0] += 5.0 * math.cos(0.3) * DT
        after[1] += 5.0 * math.sin(0.3) * DT
        b2[0], a2[0] = before, after
        one.tick(before, after, DT, k * DT, (k + 1) * DT)
        fleet.tick_fleet(b2, a2, DT, k * DT, (k + 1) * DT)
        modes.update(fleet.T[:, T_MODE])
    assert one.T.tobytes() == fleet.T.tobytes()
    assert MODE_GIVE_WAY in modes and set(fleet.T[:, T_SITUATION]) == {
        SIT_HEAD_ON,
        SIT_CROSSING_GIVE_WAY,
        SIT_CROSSING_STAND_ON,
        SIT_OVERTAKING,
    }  # (every encounter judged, some gave way)
    assert np.array_equal(fleet.min_range_by_boat[:, 0], fleet.T[:, T_MIN_RANGE])
    assert np.array_equal(fleet.min_range_t_by_boat[:, 0], fleet.T[:, T_MIN_RANGE_T])


def judged(boats: list[np.ndarray]) -> Traffic:
    """A colreg target at the origin sailing north at 5 m/s, one step against ``boats``."""
    traffic = Traffic([colreg("t", Course(0.0, 0.0, 0.0, 5.0))], boats[0])
    x = np.array(boats)
    traffic.tick_fleet(x, x, DT, 0.0, DT)
    return traffic


def test_the_most_dangerous_boat_is_the_soonest_cpa_then_the_closest():
    """Boats at rest facing the target (heading south): the first far off, two ahead of it.
    Of equal TCPAs (200 s, exactly: 1000 m ahead at 5 m/s) the closer CPA is judged: 100 m on
    its starboard bow, a head-on (it gives way), not 300 m on its port bow (a crossing where it
    stands on); a sooner TCPA is judged before a closer CPA; a boat whose CPA is wide (600 m,
    over the safe CPA) is no threat however soon."""
    far = state(-5000.0, 0.0, 180.0)
    # the tie: each boat index on the side that is not the answer too
    for port, starboard in ((1, 2), (2, 1)):
        boats = [far, None, None]
        boats[port] = state(1000.0, -300.0, 180.0)
        boats[starboard] = state(1000.0, 100.0, 180.0)
        row = judged(boats).T[0]
        assert row[T_OWN] == starboard and row[T_ENGAGED] == 1.0
        assert row[T_SITUATION] == SIT_HEAD_ON and row[T_MODE] == MODE_GIVE_WAY
    # sooner wins over closer: 300 m off at 160 s, before 100 m off at 200 s
    row = judged([far, state(800.0, -300.0, 180.0), state(1000.0, 100.0, 180.0)]).T[0]
    assert row[T_OWN] == 1 and row[T_SITUATION] == SIT_CROSSING_STAND_ON
    assert row[T_MODE] == MODE_SAIL
    # a wide pass is no threat, even the soonest: the head-on boat is judged
    row = judged([far, state(400.0, 600.0, 180.0), state(1000.0, 100.0, 180.0)]).T[0]
    assert row[T_OWN] == 2 and row[T_SITUATION] == SIT_HEAD_ON
    # none threatens: nothing judged, the row's geometry the first boat's all the same
    traffic = judged([far, state(400.0, 600.0, 180.0)])
    row = traffic.T[0]
    assert row[T_ENGAGED] == 0.0 and row[T_OWN] == 0 and row[T_MODE] == MODE_SAIL
    assert row[T_RANGE] == pytest.approx(5000.0 + 5.0 * DT)
    assert traffic.range_by_boat[0, 1] == pytest.approx(math.hypot(400.0 - 5.0 * DT, 600.0))


def test_an_engaged_target_keeps_its_boat_until_clear_then_judges_afresh():
    """Engaged with one boat (it stands on for a crossing from its port side), a target does
    not take up another that comes to threaten it sooner (rule 8(d): until finally past and
    clear); once clear of the first, it judges the other."""
    far = state(-5000.0, 0.0, 180.0)
    boats = np.array([far, state(800.0, -300.0, 180.0), state(5000.0, 100.0, 180.0)])
    traffic = Traffic([colreg("t", Course(0.0, 0.0, 0.0, 5.0))], far)
    traffic.tick_fleet(boats, boats, DT, 0.0, DT)
    assert traffic.T[0, T_OWN] == 1 and traffic.T[0, T_SITUATION] == SIT_CROSSING_STAND_ON
    boats[2] = state(float(traffic.T[0, T_NORTH]) + 300.0, 20.0, 180.0)  # sooner, closer
    for k in range(1, 11):
        traffic.tick_fleet(boats, boats, DT, k * DT, (k + 1) * DT)
    row = traffic.T[0]
    assert row[T_OWN] == 1 and row[T_SITUATION] == SIT_CROSSING_STAND_ON and row[T_ENGAGED]
    boats[1] = state(-2000.0, -300.0, 180.0)  # now astern of it, far: past and clear
    traffic.tick_fleet(boats, boats, DT, 1.1, 1.2)  # clear
    traffic.tick_fleet(boats, boats, DT, 1.2, 1.3)  # judged afresh: the head-on boat
    row = traffic.T[0]
    assert row[T_OWN] == 2 and row[T_SITUATION] == SIT_HEAD_ON and row[T_MODE] == MODE_GIVE_WAY


def test_the_fleet_step_allocates_no_python_memory():
    boats = np.array([state(-5000.0, 0.0), state(800.0, -300.0, 180.0), state(900.0, 100.0)])
    targets = [colreg(f"t{k}", Course(-20.0 * k, 0.0, 0.0, 5.0), 257100001 + k) for k in range(6)]
    traffic = Traffic(targets, boats[0])
    traffic.tick_fleet(boats, boats, DT, 0.0, DT)  # compiled, its columns made
    arrays = [id(a) for a in (traffic.T, traffic.min_range_by_boat, traffic.range_by_boat)]
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for k in range(1, 3001):
            traffic.tick_fleet(boats, boats, DT, k * DT, (k + 1) * DT)
        end, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # (as tests/test_traffic_kernel.py's: a numpy temporary would show in the peak)
    assert end - start < 256 and peak - start < 512
    assert [id(a) for a in (traffic.T, traffic.min_range_by_boat, traffic.range_by_boat)] == arrays


# --- the world --------------------------------------------------------------------------------
BENCH = """
[bench]
name = "fleet-traffic"
rate_hz = 20
seed = 0
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"

[origin]
latitude = 59.41
longitude = 10.48

[weather]
preset = "calm"
{boats}
{traffic}
"""

BOAT = """
[[boat]]
name = "{name}"
profile = "otter"
north = {north}
east = {east}
heading_deg = {heading}
mmsi = {mmsi}
"""

CARGO = """
[[traffic]]
name = "cargo"
mmsi = 257100030
behaviour = "colreg"
[traffic.course]
north = {north}
east = {east}
course_deg = 0.0
speed = 5.0
"""


def fleet_world(tmp_path, boats, traffic: str = "", commands: str = ""):
    """A World of a fleet bench of Otters in calm water: ``boats`` (name, north, east,
    heading_deg), the first's held ``commands`` (a [boat.commands] table's lines)."""
    from hild.world.world import World

    text = ""
    for k, (name, north, east, heading) in enumerate(boats):
        text += BOAT.format(name=name, north=north, east=east, heading=heading, mmsi=257000001 + k)
        if k == 0 and commands:
            text += "[boat.commands]\n" + commands
    path = tmp_path / "fleet.toml"
    path.write_text(BENCH.format(run_dir=tmp_path / "run", boats=text, traffic=traffic))
    return World(load_bench(path), duration=600.0)


def run(world, seconds: float):
    """Tick the world for ``seconds``; the target's row and every boat's (north, east) at
    every instant the traffic was judged at (its start and after each tick)."""
    sims = [world.sim, *world.fleet_sims]
    rows, places, times = [], [], []

    def sample():
        rows.append(world.sim.traffic.T[0].copy())
        places.append([(float(s.x[0]), float(s.x[1])) for s in sims])
        times.append(world.sim.t)

    sample()
    for _ in range(round(seconds / world.dt)):
        world.tick()
        sample()
    return np.array(rows), np.array(places), np.array(times)


def engagement(rows: np.ndarray) -> np.ndarray:
    """The target's row at the tick it engaged (first)."""
    engaged = np.flatnonzero(rows[:, T_ENGAGED] == 1.0)
    assert len(engaged), "the target never judged an encounter"
    return rows[engaged[0]]


def check_closest_approaches(world, rows, places, times):
    """Each boat's closest approach to the target as the traffic kept it (and as the report and
    the world's summary say it) against the oracle: the smallest distance between the target's
    and the boat's sampled positions, at the same instants the traffic judged.

    Tolerance: the same instants and the same positions (copied floats), so only hypot's last
    bit may differ (numba's libm hypot against CPython's math.hypot): 1e-9 m, far under the
    0.25 m the target sails in one tick; its time the same sample, or one of equal range."""
    traffic = world.sim.traffic
    names = [b.name for b in world.bench.boats]
    report = closest_approaches_by_boat(traffic, names)
    summary = world.vessel_summary()
    assert summary["traffic"] == closest_approaches(traffic.view())  # the first boat's, as before
    for b, name in enumerate(names):
        distance = np.hypot(rows[:, T_NORTH] - places[:, b, 0], rows[:, T_EAST] - places[:, b, 1])
        k = int(np.argmin(distance))
        kept = float(traffic.min_range_by_boat[0, b])
        assert kept == pytest.approx(float(distance[k]), abs=1e-9), name
        at = float(traffic.min_range_t_by_boat[0, b])
        ties = times[np.abs(distance - distance[k]) <= 1e-9]
        assert any(abs(at - t) < 1e-9 for t in ties), (name, at, times[k])
        said = report[name]["cargo"]
        assert said["min_range_m"] == pytest.approx(float(distance[k]), abs=0.005 + 1e-9)
        assert said["at_t"] == pytest.approx(times[k], abs=1e-3)
        assert said["range_m"] == pytest.approx(float(distance[-1]), abs=0.005 + 1e-9)
        assert summary["boats"][name]["traffic"] == report[name]
        assert summary["boats"][name]["position_ned"][:2] == [round(v, 3) for v in places[-1, b]]
    # the first boat's column is the rows' own record
    assert traffic.min_range_by_boat[0, 0] == traffic.T[0, T_MIN_RANGE]
    assert traffic.min_range_t_by_boat[0, 0] == traffic.T[0, T_MIN_RANGE_T]
    return report


def test_a_target_gives_way_to_the_second_boat(tmp_path):
    """A colreg target on a collision course with the second boat only (bravo, at rest 1000 m
    ahead of it, 50 m on its starboard bow: a crossing, bravo heading east), the first boat
    (alpha) kilometres off under way: the target judges bravo, gives way (turns 60 deg to
    starboard), and comes back once clear. (Judged against the first boat alone, as before,
    it never saw a threat and held on.) Its row's range stays the first boat's."""
    world = fleet_world(
        tmp_path,
        [("alpha", 0.0, 0.0, 45.0), ("bravo", 4000.0, 3000.0, 90.0)],
        CARGO.format(north=3000.0, east=2950.0),
        commands='"port.rpm" = 600\n"starboard.rpm" = 600\n',
    )
    rows, places, times = run(world, 300.0)
    first = engagement(rows)
    assert first[T_OWN] == 1 and first[T_SITUATION] == SIT_CROSSING_GIVE_WAY
    assert first[T_MODE] == MODE_GIVE_WAY
    turned = math.degrees(rows[:, T_HEADING].max())
    assert 55.0 < turned <= 60.0 + 1e-9  # 60 deg to starboard of its course, north
    assert rows[-1, T_MODE] == MODE_SAIL and rows[-1, T_ENGAGED] == 0.0  # clear: back
    alpha = np.hypot(rows[:, T_NORTH] - places[:, 0, 0], rows[:, T_EAST] - places[:, 0, 1])
    np.testing.assert_allclose(rows[:, T_RANGE], alpha, rtol=0, atol=1e-9)
    assert places[-1, 0, 0] > 50.0  # alpha under way (its column follows a moving boat)
    report = check_closest_approaches(world, rows, places, times)
    bravo = report["bravo"]["cargo"]
    assert 500.0 < bravo["min_range_m"] < 1000.0  # it gave way: passed wide of its 50 m
    assert 60.0 < bravo["at_t"] < 250.0


def test_a_target_that_threatens_both_boats_judges_the_most_dangerous(tmp_path):
    """A colreg target sailing north threatens both boats at rest ahead of it: bravo 1000 m
    ahead, 60 m on its starboard bow (TCPA 200 s: it must give way), alpha 1500 m ahead, 100 m
    on its port bow (TCPA 300 s: it would stand on). It judges bravo, the sooner, and gives
    way; judged against alpha alone, as before, it stood on and held its course."""
    world = fleet_world(
        tmp_path,
        [("alpha", 500.0, -100.0, 90.0), ("bravo", 0.0, 60.0, 270.0)],
        CARGO.format(north=-1000.0, east=0.0),
    )
    rows, places, times = run(world, 200.0)
    first = engagement(rows)
    assert rows[1, T_ENGAGED] == 1.0  # judged at the first step: both near from the start
    assert first[T_OWN] == 1 and first[T_SITUATION] == SIT_CROSSING_GIVE_WAY
    assert first[T_MODE] == MODE_GIVE_WAY
    assert math.degrees(rows[:, T_HEADING].max()) > 55.0
    report = check_closest_approaches(world, rows, places, times)
    assert report["bravo"]["cargo"]["min_range_m"] > 200.0  # wide of its 60 m
    assert report["alpha"]["cargo"]["min_range_m"] > 300.0  # and of alpha's 100 m


def test_a_target_added_at_run_time_judges_every_boat(tmp_path):
    """`hild ctl traffic` in a fleet with no traffic (a TrafficAdd, its rows built off the tick
    by hild/runtime.py prepare_target): the new target gets its columns for every boat and
    gives way to the second boat, as a bench's."""
    from hild.control import TrafficAdd
    from hild.runtime import prepare_target

    world = fleet_world(tmp_path, [("alpha", 0.0, 0.0, 0.0), ("bravo", 4000.0, 3000.0, 90.0)])
    for _ in range(20):
        world.tick()
    assert world.sim.traffic is None and "traffic" not in world.vessel_summary()["boats"]["bravo"]
    target = colreg("cargo", Course(3000.0, 2950.0, 0.0, 5.0), 257100030)
    prepared = prepare_target(target, world.sim.x.copy(), world.sim.t)
    world.queue.put(TrafficAdd(prepared))
    # the instant it joins at (the next tick's start), which the traffic judges too
    joined = (prepared.row.copy(), [(s.x[0], s.x[1]) for s in (world.sim, *world.fleet_sims)])
    t_joined = world.sim.t
    world.tick()
    traffic = world.sim.traffic
    assert traffic is not None and traffic.boats == 2 and traffic.min_range_by_boat.shape == (1, 2)
    rows, places, times = run(world, 200.0)
    first = engagement(rows)
    assert first[T_OWN] == 1 and first[T_MODE] == MODE_GIVE_WAY
    rows = np.vstack([joined[0], rows])
    places = np.concatenate([np.array([joined[1]]), places])
    times = np.concatenate([[t_joined], times])
    check_closest_approaches(world, rows, places, times)


def test_one_boat_says_no_boats(tmp_path):
    """A one-boat bench's summary is as before: no ``boats``."""
    from hild.world.world import World

    path = tmp_path / "one.toml"
    text = BENCH.format(
        run_dir=tmp_path / "run", boats="", traffic=CARGO.format(north=2000, east=0)
    )
    path.write_text(text + '\n[vessel]\nprofile = "otter"\n')
    world = World(load_bench(path), duration=10.0)
    for _ in range(10):
        world.tick()
    assert set(world.vessel_summary()) == {"position_ned", "heading_deg", "traffic"}


HEAD_ON = """
[[traffic]]
name = "ferry"
mmsi = 257100040
[traffic.encounter]
situation = "head-on"
boat = "{boat}"
speed = 3.0
cpa_m = 0.0
tcpa_s = 100.0
"""


def test_an_encounter_is_placed_against_the_boat_it_names(tmp_path):
    """`boat` in [traffic.encounter]: head-on with bravo (heading east from (300, -200), at
    rest): the ferry starts dead ahead of bravo, 3 m/s x 100 s away, heading west; without the
    key it is placed against alpha (heading north from the origin)."""
    boats = [("alpha", 0.0, 0.0, 0.0), ("bravo", 300.0, -200.0, 90.0)]
    world = fleet_world(tmp_path, boats, HEAD_ON.format(boat="bravo"))
    row = world.sim.traffic.T[0]
    assert (row[T_NORTH], row[T_EAST]) == pytest.approx((300.0, 100.0), abs=1e-6)
    assert math.degrees(row[T_HEADING]) == pytest.approx(270.0, abs=1e-9)
    (tmp_path / "a").mkdir()
    world = fleet_world(tmp_path / "a", boats, HEAD_ON.format(boat="alpha"))
    row = world.sim.traffic.T[0]
    assert (row[T_NORTH], row[T_EAST]) == pytest.approx((300.0, 0.0), abs=1e-6)


def test_an_encounter_s_boat_must_be_one_of_the_bench_s(tmp_path):
    boats = [("alpha", 0.0, 0.0, 0.0), ("bravo", 300.0, -200.0, 90.0)]
    with pytest.raises(BenchError) as e:
        fleet_world(tmp_path, boats, HEAD_ON.format(boat="charlie"))
    assert "traffic (ferry).encounter.boat = 'charlie'" in str(e.value)
    assert "a boat of the bench: alpha, bravo" in str(e.value)
    one = tmp_path / "one.toml"
    vessel = '\n[vessel]\nprofile = "otter"\n'
    one.write_text(
        BENCH.format(run_dir=tmp_path / "run", boats=vessel, traffic=HEAD_ON.format(boat="alpha"))
    )
    with pytest.raises(BenchError) as e:
        load_bench(one)
    assert "encounter.boat = 'alpha'" in str(e.value) and "a fleet bench's key" in str(e.value)
