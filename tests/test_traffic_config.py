"""Traffic in a bench and in traffic files: what is accepted, and errors that name the file,
the key, the value and what was expected, every one of them at once."""

import math
import subprocess
import sys
import textwrap

import pytest

from hild.bench import BenchError, load_bench
from hild.config import ConfigError, MultipleConfigError
from hild.traffic.read import TRAFFIC, load_traffic_file
from hild.traffic.targets import KNOT, Course, Encounter, Route

BENCH = """
[bench]
rate_hz = 50
start_time = "2026-06-01T12:00:00Z"

[vessel]
profile = "odin"
speed = 5.0

[[device]]
name = "gps"
type = "gps"
port = "pty://gps"
"""

COURSE_TARGET = """
[[traffic]]
name = "cargo"
mmsi = 257000001
ship_name = "Nordic Star"
callsign = "LA1234"
ship_type = 70
dimensions = [80, 20, 8, 8]
nav_status = "under-way-using-engine"
destination = "Oslo"
draught = 6.5
[traffic.course]
north = 1000
east = -500
course_deg = 90
speed_kn = 12
"""


def write(tmp_path, text, name="bench.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def errors_of(excinfo) -> list[str]:
    e = excinfo.value
    return [str(x) for x in (e.errors if isinstance(e, MultipleConfigError) else [e])]


def test_a_course_target_is_read_in_si_units_and_ais_text(tmp_path):
    bench = load_bench(write(tmp_path, BENCH + COURSE_TARGET))
    (target,) = bench.traffic
    assert target.name == "cargo"
    identity = target.identity
    assert identity.mmsi == 257000001
    assert identity.name == "NORDIC STAR"  # AIS text is upper case
    assert identity.destination == "OSLO"
    assert (identity.to_bow, identity.to_stern, identity.to_port, identity.to_starboard) == (
        80,
        20,
        8,
        8,
    )
    assert identity.ais_class == "A" and identity.nav_status == 0
    assert isinstance(target.motion, Course)
    assert target.motion.speed == pytest.approx(12 * 1852 / 3600)
    assert target.motion.course == pytest.approx(math.pi / 2)
    assert (target.motion.north, target.motion.east) == (1000.0, -500.0)
    assert target.behaviour.kind == "hold"


def test_a_route_in_latitude_and_longitude_and_a_behaviour_table(tmp_path):
    text = (
        BENCH
        + """
    [origin]
    latitude = 59.41
    longitude = 10.48

    [[traffic]]
    name = "ferry"
    mmsi = 257000002
    class = "B"
    [traffic.route]
    loop = true
    waypoints = [
        { latitude = 59.42, longitude = 10.48, speed_kn = 10 },
        { north = 0, east = 2000, speed = 4.0 },
    ]
    [traffic.behaviour]
    kind = "colreg"
    turn_deg = 45
    """
    )
    (target,) = load_bench(write(tmp_path, text)).traffic
    route = target.motion
    assert isinstance(route, Route) and route.loop
    # 0.01 deg of latitude is about 1113 m at 59.4 deg (meridian radius 6.36e6 m)
    assert route.waypoints[0].north == pytest.approx(1113.0, abs=3.0)
    assert route.waypoints[0].speed == pytest.approx(10 * KNOT)  # the start's own speed
    assert route.waypoints[1].speed == 4.0
    assert target.identity.ais_class == "B"
    assert target.behaviour.kind == "colreg" and target.behaviour.turn_deg == 45.0


def test_a_traffic_file_is_included_by_name_and_its_targets_join_the_bench(tmp_path, monkeypatch):
    folder = tmp_path / "traffic"
    folder.mkdir()
    write(folder, 'description = "one ship"\n' + COURSE_TARGET, "mine.toml")
    monkeypatch.setenv("HILD_TRAFFIC_PATH", str(folder))
    text = (
        BENCH
        + '\n[[traffic]]\nfile = "mine"\n'
        + COURSE_TARGET.replace("cargo", "second").replace("257000001", "257000009")
    )
    bench = load_bench(write(tmp_path, text))
    assert [t.name for t in bench.traffic] == ["cargo", "second"]


def test_every_built_in_traffic_file_and_bench_is_valid():
    names = TRAFFIC.names()
    assert {
        "head-on",
        "crossing-give-way",
        "crossing-stand-on",
        "overtaking",
        "overtaken",
        "busy-fjord",
    } <= set(names)
    for name in names:
        targets = load_traffic_file(name, load_bench("default").origin)
        assert targets, name
        bench = load_bench(name)  # a bench of the same name runs it
        assert [t.name for t in bench.traffic] == [t.name for t in targets]
        assert any(d.type == "ais" for d in bench.devices)
        ais = next(d for d in bench.devices if d.type == "ais")
        assert "udp://127.0.0.1:10110" in ais.ports and ais.baud == 38400
    situations = {
        t.motion.situation
        for n in names
        for t in load_bench(n).traffic
        if isinstance(t.motion, Encounter)
    }
    assert situations == {
        "head-on",
        "crossing-give-way",
        "crossing-stand-on",
        "overtaking",
        "overtaken",
    }


def test_every_problem_of_the_traffic_is_named_at_once(tmp_path):
    text = (
        BENCH
        + """
    [[traffic]]
    name = "a"
    mmsi = 12345
    ship_name = "lower~case"
    dimensions = [80, 20, 80, 8]
    nav_status = "drifting"
    [traffic.course]
    north = 0
    course_deg = 400
    speed_kn = 12

    [[traffic]]
    name = "b"
    mmsi = 257000001
    [traffic.course]
    north = 0
    east = 0
    course_deg = 0
    speed_kn = 5
    [traffic.encounter]
    situation = "head-on"

    [[traffic]]
    name = "b"
    mmsi = 257000001
    behaviour = "polite"
    [traffic.encounter]
    situation = "crossing"
    tcpa_s = 300
    speed_kn = 10
    """
    )
    with pytest.raises(BenchError) as excinfo:
        load_bench(write(tmp_path, text))
    found = errors_of(excinfo)
    text = "\n".join(found)
    for expected in (
        "traffic (a).mmsi = 12345: expected a 9-digit MMSI",
        "traffic (a).ship_name = 'lower~case'",
        "traffic (a).dimensions = [80, 20, 80, 8]",
        "traffic (a).nav_status = 'drifting'",
        "traffic (a).course.east: expected this key to be present",
        "traffic (a).course.course_deg = 400.0: expected a number in deg of at most 360",
        "traffic (b).encounter = ['course', 'encounter']: expected exactly one motion table",
        "traffic (b).behaviour = 'polite'",
        "traffic (b).encounter.situation = 'crossing'",
        "traffic (b).name = 'b': expected a name no other target has ('b' is taken",
        "traffic (b).mmsi = 257000001: expected an MMSI no other target has (257000001 is taken",
    ):
        assert expected in text, f"{expected!r} not in:\n{text}"
    assert all(str(tmp_path / "bench.toml") in line for line in found)


def test_an_unknown_traffic_file_lists_the_built_in_ones(tmp_path):
    with pytest.raises(ConfigError) as excinfo:
        load_bench(write(tmp_path, BENCH + '\n[[traffic]]\nfile = "no-such-traffic"\n'))
    message = str(excinfo.value)
    assert "traffic[0].file = 'no-such-traffic'" in message
    assert "head-on" in message and "busy-fjord" in message


def test_hild_check_and_show_know_traffic(tmp_path):
    bad = write(tmp_path, BENCH + COURSE_TARGET.replace("speed_kn = 12", "speed_kn = 99"))
    p = subprocess.run(
        [sys.executable, "-m", "hild.cli", "check", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode != 0
    assert (
        "traffic (cargo).course.speed_kn = 99.0: expected a number in knots of at most 60"
        in p.stderr
    ), p.stderr
    assert "Traceback" not in p.stderr
    p = subprocess.run(
        [sys.executable, "-m", "hild.cli", "show", "traffic", "head-on"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0 and 'situation = "head-on"' in p.stdout


def test_an_encounters_own_speed_in_knots_or_metres_a_second_not_both(tmp_path):
    encounter = """
    [[traffic]]
    name = "a"
    mmsi = 257000001
    [traffic.encounter]
    situation = "head-on"
    speed_kn = 10
    tcpa_s = 300
    own_speed_kn = 8
    """
    (target,) = load_bench(write(tmp_path, BENCH + encounter)).traffic
    assert target.motion.own_speed == pytest.approx(8 * 1852 / 3600)
    with pytest.raises(ConfigError) as excinfo:
        load_bench(write(tmp_path, BENCH + encounter + "own_speed = 3\n"))
    assert errors_of(excinfo) == [
        f"{tmp_path / 'bench.toml'}: traffic (a).encounter.own_speed = 3: expected either "
        "own_speed_kn or own_speed, not both"
    ]


def test_an_encounter_starts_within_the_distance_a_course_may(tmp_path):
    """A day to the CPA at 10 kn against the own ship's 5 m/s placed the target 876 km off,
    where a [traffic.course] start beyond 200 km is refused."""
    encounter = """
    [[traffic]]
    name = "far"
    mmsi = 257000001
    [traffic.encounter]
    situation = "head-on"
    speed_kn = 10
    tcpa_s = 86400
    """
    with pytest.raises(ConfigError) as excinfo:
        load_bench(write(tmp_path, BENCH + encounter))
    (error,) = errors_of(excinfo)
    assert "traffic (far).encounter = " in error, error
    assert (
        "its start within 200 km of the origin, as a course's: tcpa_s = 86400 at a closing "
        "speed of 10.14 m/s (876.5 km) put it 876.5 km from the origin (give a shorter "
        "tcpa_s)"
    ) in error, error
    (target,) = load_bench(write(tmp_path, BENCH + encounter.replace("86400", "3600"))).traffic
    assert target.motion.tcpa_s == 3600.0
