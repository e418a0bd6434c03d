"""The pure parts of the mirror and of runtime control: payloads, the store, actuator faults,
a weather change that continues the running processes. Oracles are worked by hand."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from datetime import UTC, datetime

import numpy as np
import pytest
from conftest import vessel
from test_bus import ODIN_IDLE, arrays, index, triple

from hild.bus.arbiter import Arbiter
from hild.bus.mapping import Demand
from hild.config import deep_merge
from hild.control import ActuatorCommand, ActuatorFault, SafeState
from hild.coupled.simulation import Simulation
from hild.environment import layout as EL
from hild.environment.environment import Environment
from hild.geodesy import Origin
from hild.mirror import payloads
from hild.mirror.store import LatestStore, Message
from hild.profiles.weather import load_weather
from hild.sensors.truth import Truth

UTC0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
ORIGIN = Origin(59.41, 10.48)


def truth(heading_deg=90.0, u=2.0, v=0.0, r=0.0, current=(0.0, 0.0), wind=(0.0, 0.0)):
    eta = np.array([10.0, -5.0, 0.0, 0.0, 0.0, math.radians(heading_deg)])
    nu = np.array([u, v, 0.0, 0.0, 0.0, r])
    odin = vessel("odin")
    state = np.zeros(odin.n_act * 3)
    state[0], state[3] = 1200.0, 600.0  # rpm of actuators 0 and 1
    return Truth(12.5, UTC0, eta, nu, current, wind, state, state * 0.5)


def test_state_payload_by_hand():
    s = payloads.state(truth(heading_deg=90.0, u=2.0, v=0.5), ORIGIN)
    assert (s["t"], s["utc"]) == (12.5, "2026-06-01T12:00:00Z")
    # heading east: surge goes east, sway (to starboard) goes south
    assert s["v_north"] == pytest.approx(-0.5) and s["v_east"] == pytest.approx(2.0)
    assert s["sog"] == pytest.approx(math.hypot(2.0, 0.5))
    assert s["cog"] == pytest.approx(math.atan2(2.0, -0.5))
    assert s["heading"] == pytest.approx(math.pi / 2)
    # 10 m north over the WGS-84 meridian radius at 59.41 N, a (1 - e^2) / (1 - e^2 sin^2)^1.5
    # = 6,335,439 m / 0.992576 = 6,382,824 m: 8.9766e-5 degrees (1e-9 deg is 0.1 mm)
    assert s["latitude"] == pytest.approx(59.41 + 10.0 / 6_382_824 * 180 / math.pi, abs=1e-9)
    assert s["longitude"] < 10.48
    s = payloads.state(truth(heading_deg=-90.0), ORIGIN)
    assert s["heading"] == pytest.approx(1.5 * math.pi)  # 0 .. 2 pi, as a compass


def test_environment_and_signalk_payloads_by_hand():
    t = truth(heading_deg=0.0, u=3.0, current=(0.0, 0.5), wind=(-10.0, 0.0))
    e = payloads.environment(t, None)
    assert e["wind_speed"] == 10.0 and e["wind_from"] == pytest.approx(0.0)  # from the north
    assert e["current_speed"] == 0.5 and e["current_to"] == pytest.approx(math.pi / 2)
    k = payloads.signalk(t, ORIGIN, vessel("odin").actuators)
    assert k["navigation/speedThroughWater"] == pytest.approx(3.0)  # a beam current: no change
    assert k["environment/wind/directionTrue"] == pytest.approx(0.0)
    assert k["environment/current"] == {"drift": 0.5, "setTrue": pytest.approx(math.pi / 2)}
    odin = vessel("odin")
    rpm = {a.name: 1200.0 if a.index == 0 else 600.0 for a in odin.actuators}
    for name, value in rpm.items():  # Signal K's revolutions are in Hz
        assert k[f"propulsion/{name}/revolutions"] == pytest.approx(value / 60.0)
    head_current = truth(heading_deg=0.0, u=3.0, current=(-0.5, 0.0))
    stw = payloads.signalk(head_current, ORIGIN, odin.actuators)["navigation/speedThroughWater"]
    assert stw == pytest.approx(3.5)


def test_actuator_payload_keys_say_their_units():
    a = payloads.actuators(truth(), vessel("odin").actuators, np.arange(6.0))
    first = vessel("odin").actuators[0].name
    assert a[f"{first}.rpm"] == 1200.0 and a[f"{first}.rpm_commanded"] == 600.0
    assert (a["force.X"], a["force.Y"], a["force.N"]) == (0.0, 1.0, 5.0)
    otter = payloads.actuators(truth(), vessel("otter").actuators[:1], np.zeros(6))
    assert not any("nozzle" in k or "deflector" in k for k in otter)


def test_store_keeps_the_latest_per_topic():
    async def main():
        store = LatestStore()
        store.put(Message("a", 1))
        store.put(Message("b", 2))
        store.put(Message("a", 3))
        assert store.superseded == 1 and len(store) == 2 and store.ready.is_set()
        assert [(m.topic, m.payload) for m in store.take()] == [("a", 3), ("b", 2)]
        assert len(store) == 0 and not store.ready.is_set()
        # a put from another thread (the daemon's tick thread) wakes the publisher
        worker = threading.Thread(target=store.put, args=(Message("c", 4),))
        worker.start()
        worker.join()
        await asyncio.wait_for(store.ready.wait(), 1.0)
        assert [(m.topic, m.payload) for m in store.take()] == [("c", 4)]

    asyncio.run(main())


def test_deep_merge_lays_a_part_over_the_whole():
    base = {"wind": {"speed": 20, "gust": {"model": "vrx"}}, "current": {"speed": 0.5}}
    merged = deep_merge(base, {"wind": {"from_deg": 270, "gust": {"sigma": 2}}})
    assert merged == {
        "wind": {"speed": 20, "from_deg": 270, "gust": {"model": "vrx", "sigma": 2}},
        "current": {"speed": 0.5},
    }
    assert base["wind"] == {"speed": 20, "gust": {"model": "vrx"}}  # untouched


def test_stuck_and_lost_actuators_ignore_commands_until_cleared():
    specs, cmd, state = arrays("odin", angles_deg=(5.0, 7.0))
    port, stbd = index("odin", "port"), index("odin", "starboard")
    arb = Arbiter(specs, cmd, state)
    state[port * 3] = 1300.0  # the port engine is at 1300 rpm, nozzle 5 deg, deflector 0.2
    state[port * 3 + 2] = 0.2
    arb.apply(ActuatorFault(port, "stuck"))
    assert triple(cmd, port) == pytest.approx((1300.0, 5.0, 0.2))
    both = (Demand(port, 1800.0, 0.0, 1.0), Demand(stbd, 1800.0, 0.0, 1.0))
    arb.apply(ActuatorCommand("jets", 1.0, both))
    assert triple(cmd, port) == pytest.approx((1300.0, 5.0, 0.2))  # stuck
    assert triple(cmd, stbd) == pytest.approx((1800.0, 0.0, 1.0))
    arb.apply(SafeState("jets", 2.0, centre_angles=True))
    assert triple(cmd, port) == pytest.approx((1300.0, 5.0, 0.2))  # even by the watchdog
    arb.apply(ActuatorFault(stbd, "lost"))
    assert triple(cmd, stbd)[0] == ODIN_IDLE and triple(cmd, stbd)[2] == 0.0
    arb.apply(ActuatorFault(port, "clear"))
    arb.apply(ActuatorCommand("jets", 3.0, both))
    assert triple(cmd, port) == pytest.approx((1800.0, 0.0, 1.0))
    assert triple(cmd, stbd)[0] == ODIN_IDLE  # still lost


def test_a_weather_change_continues_the_running_processes():
    odin = vessel("odin")
    gale = load_weather("gale-calm-sea")
    old = Environment(gale, odin, 0.01, seed=3)
    sim = Simulation(odin, dt=0.01, environment=old)
    for _ in range(500):
        sim.tick()
    deviation = old.S[EL.S_WIND]
    assert deviation != 0.0  # the slow wind has wandered off its mean
    stronger = gale.with_means(wind_speed=25.0)
    new = Environment(stronger, odin, 0.01, seed=3)
    new.continue_from(old)
    sim.adopt_environment(new)
    assert new.S[EL.S_WIND] == deviation  # the same excursion, about the new mean
    assert new.W is old.W  # the sea did not change: its components carry on
    assert sim.environment is new
    sim.tick()
    assert abs(new.O[EL.O_WIND_SPEED] - (25.0 + deviation)) < 3.0  # gusts on top
    with pytest.raises(ValueError, match="another step"):
        Environment(gale, odin, 0.02).continue_from(old)


def test_a_fault_without_end_lasts_for_good():
    from hild.bench import read_faults
    from hild.config import Section

    quantities = {"heading": "deg"}
    table = {"kind": "bias_jump", "start": 5.0, "quantity": "heading", "value": 5.0}
    (fault,) = read_faults([Section(table, "b.toml", "device.fault")], quantities)
    assert fault.end == math.inf and fault.active(1e9) and not fault.active(4.9)
    with pytest.raises(Exception, match="device.fault.end = 4"):
        read_faults(
            [Section({"kind": "dropout", "start": 5.0, "end": 4.0}, "b.toml", "device.fault")],
            quantities,
        )


# --- runtime requests, answered by RuntimeControl in this process (no daemon, no socket) ---------
@pytest.fixture(scope="module")
def running():
    """A run as a front end's requests find it (hild.runtime.ControlledRun): the world of a
    scenario's run, never stepped, with a GPS, the jets' command device and traffic."""
    from hild.scenario.file import load_scenario
    from hild.scenario.lockstep import LockstepRun

    return LockstepRun(load_scenario("crossing-give-way")).world


def ask(run, request: str, body: dict | str, source: str = "ctl") -> dict:
    """One request as a front end hands it over (``source``: ctl, mqtt:control, ...)."""
    payload = (body if isinstance(body, str) else json.dumps(body)).encode()
    return asyncio.run(run.runtime_control.handle(request, payload, source))


def refused(run, request: str, body: dict | str) -> str:
    answer = ask(run, request, body)
    assert answer["ok"] is False, answer
    assert "Traceback" not in answer["error"]
    return answer["error"]


def test_a_faults_unknown_key_lists_every_key_the_request_takes(running):
    """It listed the three keys read so far: end, kind, start."""
    error = refused(running, "fault", {"device": "gps", "kind": "dropout", "duratoin": 5})
    assert (
        "duratoin = 5: expected a known key (device, duration, end, kind, quantity, start, "
        "value); did you mean 'duration'?"
    ) in error, error
    # a bias_jump's keys with another kind: said so, not called unknown
    error = refused(running, "fault", {"device": "gps", "kind": "dropout", "quantity": "heading"})
    assert "quantity = 'heading': expected kind = 'bias_jump' with it" in error, error


def test_a_faults_duration_is_a_finite_number_greater_than_0(running):
    """Infinity said "greater than 0"; a start that is no number raised (a traceback)."""
    gps = {"device": "gps", "kind": "dropout"}
    error = refused(running, "fault", '{"device": "gps", "kind": "dropout", "duration": Infinity}')
    assert "duration = inf: expected a finite number" in error, error
    for duration, says in (
        (0, "0.0: expected a number in s greater than 0"),
        (-5, "-5.0: expected a number in s greater than 0"),
        (True, "True: expected a number in s"),
        ("5", "'5': expected a number in s"),
    ):
        error = refused(running, "fault", {**gps, "duration": duration})
        assert f"duration = {says}" in error, error
    for start in ("soon", None):
        error = refused(running, "fault", {**gps, "start": start, "duration": 5})
        assert f"start = {start!r}: expected a number in s" in error, error
    # a duration that ends past the largest number is blamed, not the end it would make: it is
    # longer than the run (the scenario's 650 s)
    error = refused(running, "fault", {**gps, "start": 1e308, "duration": 1e308})
    assert (
        "duration = 1e+308: expected a duration of at most 650 s (the run's duration; "
        "without one, the fault lasts for good)"
    ) in error, error
    answer = ask(running, "fault", {**gps, "start": 10, "duration": 5})
    assert answer["ok"] and (answer["start"], answer["end"]) == (10.0, 15.0), answer


NEUTRAL = "RCPRC,0.0,A,,V,,V,B,0"  # the jets' neutral command: idle, bucket neutral


def test_lines_joined_by_cr_lf_are_lines_as_a_bus_carries_them(running):
    """Two sentences in one argument of hild ctl commands (or one element of lines) were one
    line to the bus, refused as non_ascii."""
    from tests.endpoints import nmea_line

    two = (nmea_line(NEUTRAL) * 2).decode()  # each ended by CR LF
    answer = ask(running, "commands", {"lines": [two.rstrip()]})
    assert answer["ok"] and answer["results"] == ["applied", "applied"], answer
    answer = ask(running, "commands", {"lines": [two, nmea_line(NEUTRAL, b"").decode()]})
    assert answer["results"] == ["applied"] * 3, answer
    answer = ask(running, "commands", two + "\r\n\n$RCPRC,garbage*00\r")  # the bare payload
    assert answer["results"] == ["applied", "applied", "bad_checksum"], answer
    answer = ask(running, "commands", {"lines": ["\r\n"]})  # no line at all: refused as one
    assert answer["ok"] is False and answer["results"] == ["framing"], answer
    # a character beyond ASCII is refused as a port refuses it (it was a '?': a bad checksum)
    answer = ask(running, "commands", {"lines": ["$RCPRC,é*00"]})
    assert answer["results"] == ["non_ascii"], answer


def test_command_lines_say_which_front_end_they_came_through(running):
    """They said mqtt:control/commands, whichever front end sent them."""
    from tests.endpoints import nmea_line

    ports = []
    running.dispatcher.listeners.append(lambda name, inbound, *_: ports.append(inbound.port))
    try:
        for source in ("ctl", "foxglove:control", "mqtt:control"):
            answer = ask(running, "commands", {"lines": [nmea_line(NEUTRAL).decode()]}, source)
            assert answer["ok"], answer
    finally:
        running.dispatcher.listeners.pop()
    assert ports == ["ctl/commands", "foxglove:control/commands", "mqtt:control/commands"]


def test_a_traffic_request_takes_add_remove_or_retask_not_two(running):
    """add with remove got the usage text, as if neither had been given."""
    twin = {
        "name": "twin",
        "mmsi": 257300004,
        "course": {"north": -2000, "east": 500, "course_deg": 0, "speed_kn": 5},
    }
    error = refused(running, "traffic", {"add": twin, "remove": "twin"})
    assert error == (
        "one of add, remove or retask in a request, not add and remove together: "
        "send one request for each"
    ), error
    error = refused(running, "traffic", {"remove": "twin", "retask": "twin", "add": twin})
    assert "not add, remove and retask together" in error, error
    assert 'one of {"add": {TARGET}}' in refused(running, "traffic", {"id": "nothing"})


def test_an_encounter_added_starts_within_the_distance_a_course_may(running):
    """cpa_m 50 km and tcpa_s a day placed the target 1,009 km off, where a course's start
    beyond 200 km is refused."""
    far = {
        "name": "far",
        "mmsi": 257300009,
        "encounter": {
            "situation": "crossing-give-way",
            "speed_kn": 20,
            "cpa_m": 50000,
            "tcpa_s": 86400,
        },
    }
    error = refused(running, "traffic", {"add": far})
    assert "control/traffic: add.encounter = {" in error, error
    assert (
        "expected its start within 200 km of the origin, as a course's: tcpa_s = 86400 at "
        "a closing speed of 11.67 m/s (1008.0 km), cpa_m = 50000 across that put it "
        "1009.2 km from the origin (give a shorter tcpa_s)"
    ) in error, error
    far["encounter"]["tcpa_s"] = 600
    answer = ask(running, "traffic", {"add": far})
    assert answer["ok"] and answer["added"] == "far", answer
    # the own ship's way from the origin counts too (a reposition takes it up to 100 km off)
    north = running.sim.x[0]
    running.sim.x[0] = 100_000.0
    try:
        ahead = {
            "name": "ahead",
            "mmsi": 257300010,
            "encounter": {"situation": "head-on", "speed_kn": 20, "tcpa_s": 7200},
        }
        error = refused(running, "traffic", {"add": ahead})
    finally:
        running.sim.x[0] = north
    assert (
        "tcpa_s = 7200 at a closing speed of 15.79 m/s (113.7 km), from the own ship "
        "100.0 km from the origin put it 213.7 km from the origin"
    ) in error, error


def test_wave_settings_without_a_height_are_refused_and_a_calm_sea_keeps_its_shape(running):
    """With a calm preset or no hs they were taken and changed nothing; a weather file's are
    refused the same way (test_environment)."""
    needs = "expected a wave height with it (waves.hs greater than 0): waves need one"
    jonswap = {"preset": "calm", "waves": {"spectrum": "jonswap"}}
    for body, key in (
        (jonswap, "spectrum = 'jonswap'"),
        ({"waves": {"omega_peak": 1.0}}, "omega_peak = 1.0"),
        ({"waves": {"hs": 0, "from_deg": 90}}, "from_deg = 90"),
    ):
        assert f"control/weather: waves.{key}: {needs}" in refused(running, "weather", body)
    # a sea calmed to no height keeps its preset's shape for a later height, which the
    # requests in between do not send
    for body, waves, hs in (
        ({"preset": "gale-hs1"}, "ittc", 1.0),
        ({"waves": {"hs": 0}}, "none", 0.0),
        ({"wind": {"speed": 5}}, "none", 0.0),
        ({"waves": {"hs": 2}}, "ittc", 2.0),
    ):
        answer = ask(running, "weather", body)
        assert answer["ok"] and (answer["weather"]["waves"], answer["weather"]["hs"]) == (
            waves,
            hs,
        ), answer
    assert ask(running, "weather", {"preset": "calm"})["ok"]  # (as the other tests found it)


def test_a_bench_preset_given_by_its_path_is_what_a_partial_change_builds_on(tmp_path):
    """The run's weather was looked up by the preset's name: a bench naming its preset by a
    path (its own file) had a partial change laid over nothing, so a wind speed sent at run
    time also took away the file's gusts and waves."""
    import dataclasses

    from hild.profiles.weather import PRESETS, load_weather
    from hild.scenario.file import load_scenario
    from hild.scenario.lockstep import LockstepRun

    own = tmp_path / "my-sea.toml"  # a gale with its current at 0.7 m/s
    own.write_text(
        PRESETS.resolve_name("gale-hs1").read_text().replace("speed = 0.5 ", "speed = 0.7 ")
    )
    scenario = load_scenario("crossing-give-way")
    bench = dataclasses.replace(scenario.bench, weather=load_weather(str(own)))
    run = LockstepRun(dataclasses.replace(scenario, bench=bench)).world
    answer = ask(run, "weather", {"wind": {"speed": 5}})
    assert answer["ok"], answer
    said = answer["weather"]
    assert (said["wind_speed"], said["gust"], said["current_speed"], said["waves"], said["hs"]) == (
        5.0,
        "harris",
        0.7,
        "ittc",
        1.0,
    ), said


# --- limits ------------------------------------------------------------------------------------
def fresh_run():
    """A run of its own (the module's ``running`` is shared): the scenario with one target."""
    from hild.scenario.file import load_scenario
    from hild.scenario.lockstep import LockstepRun

    return LockstepRun(load_scenario("crossing-give-way")).world


def add_body(i: int) -> dict:
    return {
        "id": f"a{i}",
        "add": {
            "name": f"t{i}",
            "mmsi": 257000000 + i,
            "course": {"north": 1000 + i, "east": 500, "course_deg": 90, "speed_kn": 5},
        },
    }


def test_2000_targets_added_at_run_time_stop_at_a_benchs_cap_each_answered():
    """All 2,000 were taken (a bench may have 200), growing the kernel's arrays in the tick;
    578 of them were never answered over MQTT (tests/test_traffic_mqtt.py has that way)."""
    from hild.control import TrafficAdd
    from hild.traffic.targets import MAX_TARGETS

    run = fresh_run()
    assert run.sim.traffic is not None and run.sim.traffic.n == 1  # the scenario's tanker
    answers = [ask(run, "traffic", add_body(i), "mqtt:control") for i in range(2000)]
    assert [a["id"] for a in answers] == [f"a{i}" for i in range(2000)]  # each, in order
    taken = MAX_TARGETS - 1
    assert all(a["ok"] and a["added"] == f"t{i}" for i, a in enumerate(answers[:taken]))
    for i, a in enumerate(answers[taken:], taken):
        assert a["ok"] is False, a
        assert a["error"].startswith(f"control/traffic: add = {{'name': 't{i}', "), a
        assert a["error"].endswith(
            f": expected at most {MAX_TARGETS} traffic targets in a run, "
            f"as in a bench (it has {MAX_TARGETS}: remove one first)"
        ), a
    # the records carry their targets' rows, built off the tick: applying them copies them
    # into the arrays the traffic has had room in from the start
    records = run.queue.drain()
    assert len(records) == taken and all(isinstance(r, TrafficAdd) for r in records)
    traffic = run.sim.traffic
    where = traffic.T.__array_interface__["data"][0], traffic.P.__array_interface__["data"][0]
    for record in records:
        record.apply(run)
    assert traffic.n == MAX_TARGETS and [t.name for t in traffic.targets[1:]] == [
        f"t{i}" for i in range(taken)
    ]
    assert (
        traffic.T.__array_interface__["data"][0],
        traffic.P.__array_interface__["data"][0],
    ) == where
    assert traffic.T[-1, 0] == 1000.0 + taken - 1  # t198 where it was asked to start
    # one removed, one more fits
    assert ask(run, "traffic", {"remove": "t0"})["ok"]
    assert ask(run, "traffic", add_body(5000))["ok"]


def test_a_control_queue_that_is_full_refuses_requests_busy_rather_than_drop_one():
    """A full queue dropped its oldest record: a request answered ok never applied (a run
    whose ticks wait, as ArduPilot's paused frames make them)."""
    from hild.control import QUEUE_RECORDS, SensorFault

    run = fresh_run()
    for _ in range(QUEUE_RECORDS):
        run.queue.put(SensorFault("gps", None))
    answer = ask(run, "fault", {"id": "f", "device": "gps", "kind": "clear"})
    assert answer["id"] == "f" and answer["ok"] is False, answer
    assert answer["error"] == (
        f"busy: {QUEUE_RECORDS} control records wait for the next tick "
        "(the run is paused or far behind); try again"
    ), answer
    assert run.queue.dropped == 0
    run.queue.drain()
    assert ask(run, "fault", {"device": "gps", "kind": "clear"})["ok"]


@pytest.mark.parametrize("source", ["ctl", "mqtt:control", "foxglove:control"])
def test_requests_that_lack_what_they_need_or_carry_absurd_values_are_refused_by_name(
    running, source
):
    """reposition {} moved the boat to where the request found it; a fault's duration of
    1e308 s was taken. One home for the checks (hild/runtime.py), whichever way in."""
    position = (
        "expected a position to move to: latitude and longitude [degrees], or north "
        "and east [m from the origin]; heading_deg and speed only with one"
    )
    for body in ({}, {"heading_deg": 90}, {"speed": 2.0}):
        answer = ask(running, "reposition", body, source)
        assert answer["ok"] is False, answer
        assert answer["error"] == f"control/reposition = {body!r}: {position}", answer
    answer = ask(running, "reposition", {"north": 10.0}, source)
    assert "control/reposition: east: expected this key to be present" in answer["error"]
    gps = {"device": "gps", "kind": "dropout"}
    run_limit = "(the run's duration; without one, the fault lasts for good)"  # 650 s here
    for duration in (1e308, 651, 1e9):
        answer = ask(running, "fault", {**gps, "duration": duration}, source)
        assert answer["ok"] is False and answer["error"] == (
            f"control/fault: duration = {float(duration)!r}: expected a duration of at most "
            f"650 s {run_limit}"
        ), answer
    answer = ask(running, "fault", {**gps, "start": 1e308}, source)
    assert answer["error"] == (
        "control/fault: start = 1e+308: expected a start at most 650 s "
        "from now (t = 0 s; the run's duration)"
    ), answer
    answer = ask(running, "fault", {**gps, "end": 1e308}, source)
    assert answer["error"] == (
        "control/fault: end = 1e+308: expected an end at most 650 s "
        "after the start (the run's duration)"
    ), answer
    for key, value, says in (
        ("duration", "NaN", "nan: expected a finite number"),
        ("duration", -1, "-1.0: expected a number in s greater than 0"),
        ("start", -1, "-1.0: expected a number in s of at least 0"),
    ):
        text = json.dumps({**gps, key: value}).replace('"NaN"', "NaN")
        answer = ask(running, "fault", text, source)
        assert f"control/fault: {key} = {says}" in answer["error"], answer
    assert ask(running, "fault", {**gps, "duration": 650}, source)["ok"]  # the whole run: fine


def test_a_run_without_a_duration_times_a_fault_for_a_year_at_most():
    run = fresh_run()
    run.duration = None
    gps = {"device": "gps", "kind": "dropout"}
    error = refused(run, "fault", {**gps, "duration": 1e308})
    assert error == (
        "control/fault: duration = 1e+308: expected a duration of at most 31536000 "
        "s (a year; without one, the fault lasts for good)"
    ), error
    assert ask(run, "fault", {**gps, "duration": 365 * 86400})["ok"]
