"""The lockstep run's fast paths give what the plain paths give, bit for bit: the compiled
stretches of quiet ticks against tick by tick, the compiled mission walk against ``feed``, the
pilot decoder's shortcut for ignored sentences against pynmea2, and the command device's
remembered sentences against decoding each again."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from hild.bus.sentence import Rejected, parse_sentence
from hild.nmea.decode import SentenceDecoder
from hild.scenario.criteria import MissionWalk
from hild.scenario.file import Mission, Waypoint, load_scenario
from hild.scenario.lockstep import LockstepRun
from tests.test_bus import device, nmea

BENCH_SCENARIO = Path(__file__).resolve().parents[1] / "bench/scenarios/fjord-waves-10min.toml"


def both_ways(scenario):
    ticks = LockstepRun(scenario, keep_track=True, stretches=False).run()
    stretches = LockstepRun(scenario, keep_track=True).run()
    return ticks, stretches


def assert_same_run(a, b) -> None:
    assert np.array_equal(a.track, b.track)
    for f in dataclasses.fields(a):
        if f.name not in ("wall_s", "track"):
            assert getattr(a, f.name) == getattr(b, f.name), f.name


def test_stretches_equal_ticks_with_traffic_and_waves():
    scenario = load_scenario(str(BENCH_SCENARIO)).with_values({"scenario.duration_s": 40.0})
    a, b = both_ways(scenario)
    assert a.duration_s == 40.0 and a.traffic
    assert_same_run(a, b)


def test_stretches_equal_ticks_up_to_a_completed_mission():
    a, b = both_ways(load_scenario("square-calm"))
    assert a.ended == "completed"
    assert_same_run(a, b)


def test_stretches_equal_ticks_through_a_watchdog_trip():
    scenario = load_scenario("square-calm").with_values(
        {
            "scenario.duration_s": 20.0,
            "controller.rate_hz": 1.0,
            "device.jets.settings.watchdog_s": 0.15,
        }
    )
    a, b = both_ways(scenario)
    assert a.metrics["watchdog_trips"] > 0
    assert_same_run(a, b)


def walk_state(w: MissionWalk) -> tuple:
    return (w.k, w.a, w.sq, w.n, w.worst, w.worst_t, list(w.reached), w.xte())


@pytest.mark.parametrize("zero_leg", [False, True])
def test_walk_rows_equal_feed_one_at_a_time(zero_leg):
    points = [(100.0, 0.0), (100.0, 100.0), (0.0, 100.0), (0.0, 0.0)]
    if zero_leg:
        points.insert(1, points[0])  # a leg of no length: row by row
    mission = Mission(tuple(Waypoint(n, e, 5.0) for n, e in points), 10.0, laps=2)
    rng = np.random.default_rng(3)
    s = np.linspace(0.0, 8.0, 4001)
    corners = np.array([(0.0, 0.0), *points] * 2 + [(0.0, 0.0)])[: len(points) * 2 + 1]
    i = np.minimum(s.astype(int), len(corners) - 2)
    f = (s - i)[:, None]
    track = corners[i] * (1 - f) + corners[i + 1] * f + rng.normal(0.0, 3.0, (len(s), 2))
    rows = np.column_stack([s * 10.0, track, np.zeros((len(s), 2))])
    one, many = MissionWalk(mission), MissionWalk(mission)
    for t, north, east in rows[:, :3].tolist():
        if not one.done:
            one.feed(t, north, east)
    for chunk in np.array_split(rows, 37):
        many.feed_rows(chunk)
    assert walk_state(one) == walk_state(many)
    assert one.reached


LINES = [
    "$GPGGA,120000.00,5924.6000,N,01028.8000,E,1,12,0.8,2.0,M,39.0,M,,*6F",  # checksum
    nmea("GPZDA,120000.00,01,06,2026,00,00").decode(),
    nmea("RCTRD,1,1800.0,R,100.0,P,0.0,D").decode(),
    nmea("RCXDR,A,1.0,D,NOZZLE").decode(),
    nmea("RCRPM,E,1,1800.0,100.0,A").decode(),
    nmea("IIMWV,10.0,R,5.0,M,A").decode(),
    nmea("GPHDT,12.5,T").decode(),
    nmea("GPVTG,12.5,T,,M,9.7,N,18.0,K,A").decode(),
    nmea("CCGPQ,GGA").decode(),  # a query
    nmea("PHLDC,0,0.0,0.0,100.0").decode(),  # proprietary
    nmea("RCTRD,1,1800.0,R").decode()[:-2] + "00",  # bad checksum
    nmea("RCTRD,1,1800.0,R").decode()[:-3],  # no checksum
    nmea("rctrd,1,1800.0,R").decode(),  # lower case
    "$RCTRD,1*7",
]


def test_decoder_shortcut_counts_as_pynmea2():
    fast = SentenceDecoder()
    got = [fast.decode(line) for line in LINES]
    slow = SentenceDecoder(shortcuts=False)
    want = [slow.decode(line) for line in LINES]
    assert got == want
    assert (fast.used, fast.ignored, fast.malformed) == (slow.used, slow.ignored, slow.malformed)
    assert fast.ignored >= 5


def test_remembered_sentences_decode_as_new_ones():
    line = nmea("RCTRC,0,3000.0,R,,V,,B,C")  # clamped: both jets
    assert parse_sentence(line) is parse_sentence(line)
    for _ in range(2):
        with pytest.raises(Rejected):
            parse_sentence(line[:-2] + b"00")
    d = device()
    sentence = parse_sentence(line)
    first = d._decode(sentence)
    assert d.amap.clamped == 2
    assert d._decode(sentence) == first and d.amap.clamped == 4
