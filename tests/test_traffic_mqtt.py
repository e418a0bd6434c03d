"""Traffic on the MQTT mirror and under runtime control, against a real mosquitto and the real
daemon (`hild run` as a subprocess on the default bench moved onto free ports).

The benches run at rate_hz 50 and time_scale 5: the mirror's rates are wall-clock rates, so
each traffic/<name> message is ~5 s of simulation after the one before, and a target's
dynamics settle in a few seconds of wall time. The own ship starts at 2 m/s north and slows
with its jets at idle, so the range, CPA and TCPA of a target are judged against a moving ship.
"""

from __future__ import annotations

import json
import math
import time

import pytest
from mcap.reader import make_reader

from hild.traffic.encounter import place
from hild.traffic.targets import KNOT, Encounter
from tests.endpoints import Daemon, free_udp_port
from tests.mqtt_endpoints import Subscriber, wait_until
from tests.test_daemon import default_bench_on_free_ports

PREFIX = "hild/traffic-test"
RATE_HZ = 50.0
DT = 1.0 / RATE_HZ
TIME_SCALE = 5.0
OWN_SPEED = 2.0  # m/s, north: the bench's [vessel] speed

TRAWLER = """
[[traffic]]
name = "trawler"
mmsi = 257100140
ship_name = "HAVFISK"
dimensions = [15, 5, 3, 3]
[traffic.course]
north = 1500
east = 800
course_deg = 200
speed_kn = 6
"""
FERRY = """
[[traffic]]
name = "ferry"
mmsi = 257100110
dimensions = [100, 40, 10, 10]
[traffic.encounter]
situation = "head-on"
speed_kn = 10
cpa_m = 200
tcpa_s = 300
"""
# the ferry as hild/traffic/read.py reads that table
FERRY_ENCOUNTER = Encounter(cpa_m=200.0, tcpa_s=300.0, speed=10 * KNOT, situation="head-on")


def traffic_bench(tmp_path, port: int, traffic: str = "", **mqtt) -> str:
    path = default_bench_on_free_ports(tmp_path, free_udp_port(), free_udp_port())
    with open(path) as f:
        text = f.read()
    assert "rate_hz = 100 " in text and "heading_deg = 0.0\n" in text
    text = text.replace("rate_hz = 100 ", f"time_scale = {TIME_SCALE}\nrate_hz = {RATE_HZ:g} ")
    text = text.replace("heading_deg = 0.0\n", f"heading_deg = 0.0\nspeed = {OWN_SPEED}\n")
    lines = [
        "",
        "[mqtt]",
        f'url = "mqtt://127.0.0.1:{port}"',
        f'prefix = "{PREFIX}"',
        "reconnect_max_s = 1.0",
    ]
    lines += [f"{k} = {json.dumps(v)}" for k, v in mqtt.items()]
    with open(path, "w") as f:
        f.write(text + "\n".join(lines) + "\n" + traffic)
    return path


def start(tmp_path, bench: str, *args: str) -> Daemon:
    return Daemon(bench, "--run-dir", str(tmp_path / "run"), *args, tmp=tmp_path)


def stop(daemon: Daemon) -> dict:
    try:
        return daemon.stop()
    finally:
        if daemon.proc.poll() is None:
            daemon.proc.kill()


def own_at(states: list[dict], t: float) -> dict:
    """The own ship's state at ``t``: the state topic (10 Hz of wall, 0.5 s of simulation
    apart here) is seldom built in the very tick a traffic message is, so between the two
    states either side of ``t``: position by cubic Hermite from their positions and
    velocities (exact for a constant acceleration; the ship slowing at idle changes its
    deceleration by far less than 0.1 m/s^2 in 0.5 s: under 1 mm), and the velocity
    between theirs (``velocities``: it slows monotonically)."""
    before = [s for s in states if s["t"] <= t]
    after = [s for s in states if s["t"] >= t]
    assert before and after, (t, states[0]["t"], states[-1]["t"])
    a, b = before[-1], after[0]
    h = b["t"] - a["t"]
    assert h <= 0.3 * TIME_SCALE, (a["t"], b["t"])  # no state missed
    velocities = [(a["v_north"], a["v_east"]), (b["v_north"], b["v_east"])]
    if h == 0.0:
        return {**a, "velocities": velocities}
    x = (t - a["t"]) / h
    h00, h10, h01, h11 = (
        2 * x**3 - 3 * x**2 + 1,
        x**3 - 2 * x**2 + x,
        -2 * x**3 + 3 * x**2,
        x**3 - x**2,
    )
    own: dict = {"t": t, "velocities": velocities}
    for pos, vel in (("north", "v_north"), ("east", "v_east")):
        own[pos] = h00 * a[pos] + h10 * h * a[vel] + h01 * b[pos] + h11 * h * b[vel]
    return own


def signalk_value(payload: bytes) -> object:
    try:
        return json.loads(payload)
    except ValueError:
        return payload.decode()


def check_geometry(report: dict, own: dict) -> None:
    """range_m, bearing_deg, cpa_m and tcpa_s of a traffic/<name> message against the own
    ship's state at its t.

    Tolerance: the published geometry and position are of one instant (the simulation works
    the geometry out again once both ships have stepped), but the own ship's state here is
    interpolated between the two state messages either side of t, which the own ship's
    acceleration bends by much less than the target's speed x DT (0.1 m at 10 kn), the slack
    allowed; the payload rounds north/east to 1 mm and range/CPA/TCPA to 0.01. The
    CPA and TCPA, some 400 s ahead, move by 400 s x a velocity error: they are checked
    against the range of CPAs and TCPAs the own ship's velocities either side of t give.
    """
    v = report["speed"]
    slack = v * DT + 0.02
    dn, de = report["north"] - own["north"], report["east"] - own["east"]
    assert report["range_m"] == pytest.approx(math.hypot(dn, de), abs=slack), (report, own)
    bearing = math.degrees(math.atan2(de, dn)) % 360.0
    assert abs(math.remainder(report["bearing_deg"] - bearing, 360.0)) < 0.05, (report, own)
    cpas, tcpas = [], []
    for vn, ve in own["velocities"]:
        wn = v * math.cos(report["heading"]) - vn
        we = v * math.sin(report["heading"]) - ve
        w2 = wn * wn + we * we
        tcpa = -(dn * wn + de * we) / w2
        cpas.append(math.hypot(dn + wn * tcpa, de + we * tcpa))
        tcpas.append(tcpa)
        tcpa_slack = slack / math.sqrt(w2) + 0.02
    assert min(cpas) - slack <= report["cpa_m"] <= max(cpas) + slack, (report, own, cpas)
    assert min(tcpas) - tcpa_slack <= report["tcpa_s"] <= max(tcpas) + tcpa_slack, (
        report,
        own,
        tcpas,
    )


# --- the mirror ---------------------------------------------------------------------------------
def test_targets_on_their_topics_and_as_signalk_vessels(tmp_path, broker, subscriber):
    bench = traffic_bench(tmp_path, broker.port, TRAWLER + FERRY, signalk=True)
    daemon = start(tmp_path, bench, "--start-time", "2026-06-01T12:00:00Z")
    try:
        assert wait_until(lambda: subscriber.on(f"{PREFIX}/traffic/ferry"), 15.0)
        t_window = time.monotonic()
        time.sleep(3.3)
    finally:
        summary = stop(daemon)
    topics = subscriber.topics()
    assert {t for t in topics if t.startswith(f"{PREFIX}/traffic/")} == {
        f"{PREFIX}/traffic/trawler",
        f"{PREFIX}/traffic/ferry",
    }
    states = subscriber.on(f"{PREFIX}/state")
    ferry_start = place(FERRY_ENCOUNTER, 0.0, 0.0, 0.0, OWN_SPEED)  # the bench places it at t 0
    expected = {
        # name: (mmsi, AIS name, start north, east, course [rad], speed [m/s])
        "trawler": (257100140, "HAVFISK", 1500.0, 800.0, math.radians(200.0), 6 * KNOT),
        "ferry": (
            257100110,
            "FERRY",
            ferry_start.north,
            ferry_start.east,
            ferry_start.course,
            10 * KNOT,
        ),
    }
    for name, (mmsi, _, north0, east0, course, speed) in expected.items():
        with subscriber._lock:
            arrivals = [
                a
                for a, top, _, _ in subscriber.messages
                if top == f"{PREFIX}/traffic/{name}" and a >= t_window
            ]
        # 1 Hz of wall time: 3 in the 3.3 s window (+-1 for where its edges fall)
        assert 2 <= len(arrivals) <= 4, (name, arrivals)
        gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
        assert all(0.7 < g < 1.3 for g in gaps), (name, gaps)
        reports = subscriber.on(f"{PREFIX}/traffic/{name}")
        assert len(reports) >= 3
        ts = [r["t"] for r in reports]
        assert ts == sorted(ts) and ts[-1] - ts[0] > TIME_SCALE  # simulation time moves on
        for r in reports:
            assert r["name"] == name and r["mmsi"] == mmsi, r
            assert r["utc"].startswith("2026-06-01T12:0") and r["utc"].endswith("Z")
            # A course held (behaviour "hold", nothing to steer): the kernel's chord of a zero
            # turn is exact, so the position is the start + speed x t to the payload's 1 mm
            # (and float rounding over a few thousand steps, ~1e-9 m)
            assert r["heading"] == pytest.approx(course, abs=1e-6), r
            assert r["speed"] == pytest.approx(speed, abs=1e-4), r
            assert r["north"] == pytest.approx(
                north0 + speed * math.cos(course) * r["t"], abs=0.002
            ), r
            assert r["east"] == pytest.approx(
                east0 + speed * math.sin(course) * r["t"], abs=0.002
            ), r
            assert r["mode"] == "sail"
            check_geometry(r, own_at(states, r["t"]))
    # the head-on ferry was placed to pass at 200 m in 300 s had the own ship held 2 m/s; the
    # own ship slows, so its CPA grows from 200 m and its TCPA counts down no faster than t
    first = subscriber.on(f"{PREFIX}/traffic/ferry")[0]
    assert first["cpa_m"] >= 199.0 and first["tcpa_s"] >= 300.0 - first["t"] - 1.0, first
    # Signal K: each target a vessel beside vessels/self, SI units and radians
    # (as signalk-mqtt-gw: numbers and objects as JSON, text as it is)
    raw = lambda path: [signalk_value(p) for p in subscriber.raw(f"vessels/{path}")]  # noqa: E731
    for name, (mmsi, ais_name, _, _, course, speed) in expected.items():
        base = f"urn:mrn:imo:mmsi:{mmsi}"
        assert raw(f"{base}/name")[-1] == ais_name and raw(f"{base}/mmsi")[-1] == mmsi
        assert raw(f"{base}/navigation/courseOverGroundTrue")[-1] == pytest.approx(course, abs=1e-6)
        assert raw(f"{base}/navigation/headingTrue")[-1] == pytest.approx(course, abs=1e-6)
        assert raw(f"{base}/navigation/speedOverGround")[-1] == pytest.approx(speed, abs=1e-4)
        assert raw(f"{base}/design/length")[-1] == {"overall": 20.0 if name == "trawler" else 140.0}
        positions = raw(f"{base}/navigation/position")
        approaches = raw(f"{base}/navigation/closestApproach")
        assert len(positions) >= 4 and len(approaches) >= 4  # 2 Hz
        last = subscriber.on(f"{PREFIX}/traffic/{name}")[-1]
        # the same place as traffic/<name> within the ~1 s of wall (5 s of sailing) between
        # the two topics' last messages
        reach = speed * TIME_SCALE * 1.2 / 111_000.0
        assert positions[-1]["latitude"] == pytest.approx(last["latitude"], abs=reach)
        assert set(approaches[-1]) == {"distance", "timeTo", "range"}
        assert 0.0 < approaches[-1]["distance"] <= approaches[-1]["range"]
        assert approaches[-1]["range"] == pytest.approx(last["range_m"], rel=0.05)
    # vessels/self is the own ship, as before: its position where the state says, none of a
    # target's paths under it
    own = [t for t in topics if t.startswith("vessels/self/")]
    assert "vessels/self/navigation/position" in own
    assert not any(p in t for t in own for p in ("closestApproach", "/mmsi", "/name")), own
    position = json.loads(subscriber.raw("vessels/self/navigation/position")[-1])
    assert position["latitude"] == pytest.approx(states[-1]["latitude"], abs=1e-4)
    assert {t.split("/")[1] for t in topics if t.startswith("vessels/")} == {
        "self",
        "urn:mrn:imo:mmsi:257100140",
        "urn:mrn:imo:mmsi:257100110",
    }
    # the run's summary: both targets' closest approaches
    assert set(summary["traffic"]) == {"trawler", "ferry"}
    assert summary["traffic"]["ferry"]["mmsi"] == 257100110


# --- runtime control ----------------------------------------------------------------------------
class Requests:
    """Sends control/traffic requests, each with its own id, and waits for its answer."""

    def __init__(self, subscriber: Subscriber):
        self.subscriber = subscriber
        self.sent: list[dict] = []

    def __call__(self, body: dict, timeout: float = 20.0) -> dict:
        body = {"id": f"r{len(self.sent)}", **body}
        self.sent.append(body)
        self.subscriber.publish(f"{PREFIX}/control/traffic", json.dumps(body))

        def answered():
            answers = [
                a for a in self.subscriber.on(f"{PREFIX}/control/result") if a["id"] == body["id"]
            ]
            return answers[0] if answers else None

        answer = wait_until(answered, timeout)
        assert answer is not None, f"no answer to {body!r}"
        assert answer["request"] == "traffic"
        return answer

    def burst(self, bodies: list[dict], timeout: float = 20.0) -> list[dict]:
        """Published back to back, each without waiting for the one before: the daemon
        handles them before the tick applies the first (4 ms apart here)."""
        bodies = [{"id": f"r{len(self.sent) + i}", **b} for i, b in enumerate(bodies)]
        self.sent += bodies
        for body in bodies:
            self.subscriber.client.publish(f"{PREFIX}/control/traffic", json.dumps(body), qos=1)
        ids = [b["id"] for b in bodies]

        def answered():
            answers = {
                a["id"]: a for a in self.subscriber.on(f"{PREFIX}/control/result") if a["id"] in ids
            }
            return [answers[i] for i in ids] if len(answers) == len(ids) else None

        answers = wait_until(answered, timeout)
        assert answers is not None, f"no answers to {bodies!r}"
        return answers


PILOT = {
    "name": "pilot",
    "mmsi": 257300001,
    "ship_name": "LOS 1",
    "course": {"north": 1200, "east": 0, "course_deg": 90, "speed_kn": 6},
    # a nimble boat, so that a retask settles in seconds of wall time
    "dynamics": {"speed_time_constant_s": 2, "yaw_time_constant_s": 1, "turning_radius_m": 20},
}
TWIN = {
    "name": "twin",
    "mmsi": 257300004,
    "course": {"north": -2000, "east": 500, "course_deg": 0, "speed_kn": 5},
}
TUG = {
    "name": "tug",
    "mmsi": 257300002,
    "encounter": {"situation": "crossing-give-way", "speed_kn": 8, "cpa_m": 300, "tcpa_s": 600},
}


def test_traffic_added_retasked_and_removed_at_run_time(tmp_path, broker, subscriber):
    bench = traffic_bench(tmp_path, broker.port, control=True, signalk=True)
    record = tmp_path / "run.mcap"
    daemon = start(tmp_path, bench, "--record", str(record))
    request = Requests(subscriber)
    stopped = False
    try:
        assert wait_until(lambda: len(subscriber.on("vessels/self/navigation/position")) >= 3, 15.0)
        time.sleep(1.2)  # past a traffic period
        # a run without traffic says nothing of it
        topics = subscriber.topics()
        assert not any(t.startswith((f"{PREFIX}/traffic", "vessels/urn:")) for t in topics)
        own_paths = {t for t in topics if t.startswith("vessels/self/")}

        # --- add: the first target compiles the traffic kernel off the tick ----------------
        added = request({"add": PILOT})
        assert added["ok"] is True and added["added"] == "pilot", added
        assert added["mmsi"] == 257300001
        tug = request({"add": TUG})
        assert tug["ok"] is True, tug
        assert wait_until(lambda: len(subscriber.on(f"{PREFIX}/traffic/pilot")) >= 2, 5.0)
        first, second = subscriber.on(f"{PREFIX}/traffic/pilot")[:2]
        assert first["mmsi"] == 257300001 and first["name"] == "pilot"
        # sailing east from (1200, 0) at 6 kn: on its line, 6 kn x the time between them on
        assert first["north"] == pytest.approx(1200.0, abs=0.01)
        assert second["east"] - first["east"] == pytest.approx(
            6 * KNOT * (second["t"] - first["t"]), abs=0.01
        )
        assert first["t"] >= added["t"]
        assert wait_until(
            lambda: subscriber.raw("vessels/urn:mrn:imo:mmsi:257300001/navigation/closestApproach"),
            3.0,
        )
        assert wait_until(lambda: subscriber.on(f"{PREFIX}/traffic/tug"), 3.0)

        # --- refused adds: nothing changes, the error names the key -------------------------
        same_name = request({"add": {**PILOT, "mmsi": 257300009}})
        assert same_name["ok"] is False and "add.name = 'pilot'" in same_name["error"]
        same_mmsi = request({"add": {**PILOT, "name": "other"}})
        assert same_mmsi["ok"] is False and "add.mmsi = 257300001" in same_mmsi["error"]
        assert "taken by pilot" in same_mmsi["error"]
        bad_key = request({"add": {**PILOT, "name": "third", "mmsi": 257300003, "colour": "red"}})
        assert bad_key["ok"] is False
        assert bad_key["error"].startswith(
            "control/traffic: add.colour = 'red': expected a known key"
        ), bad_key
        bad_value = request(
            {
                "add": {
                    **PILOT,
                    "name": "third",
                    "mmsi": 257300003,
                    "course": {**PILOT["course"], "speed_kn": -3},
                }
            }
        )
        assert bad_value["ok"] is False
        assert "control/traffic: add.course.speed_kn = -3" in bad_value["error"]
        assert "at least 0" in bad_value["error"]

        # --- retask: course and speed, which the target's dynamics take up ------------------
        retask = request({"retask": "pilot", "course_deg": 180, "speed_kn": 12})
        assert retask["ok"] is True and retask["retasked"] == "pilot", retask
        assert retask["course_deg"] == 180 and retask["speed"] == pytest.approx(12 * KNOT, abs=1e-3)
        since = time.monotonic()

        def settled():
            last = subscriber.on(f"{PREFIX}/traffic/pilot", since=since)
            return (
                last
                and abs(last[-1]["heading_deg"] - 180.0) < 0.5
                and abs(last[-1]["speed_kn"] - 12.0) < 0.05
            )

        assert wait_until(settled, 8.0), subscriber.on(f"{PREFIX}/traffic/pilot", since=since)
        after = subscriber.on(f"{PREFIX}/traffic/pilot", since=since)
        # first-order speed, critically damped heading: no overshoot on the way
        assert all(r["speed_kn"] <= 12.0 + 0.01 for r in after)
        assert all(r["heading_deg"] <= 180.0 + 0.05 for r in after)
        assert after[-1]["mode"] == "sail" and after[-1]["situation"] == ""

        # --- retask the behaviour: it now gives way to the own ship it meets head-on --------
        colreg = request({"retask": "pilot", "behaviour": "colreg"})
        assert colreg["ok"] is True and colreg["behaviour"] == "colreg", colreg
        since = time.monotonic()
        giving_way = lambda: [  # noqa: E731
            r
            for r in subscriber.on(f"{PREFIX}/traffic/pilot", since=since)
            if r["mode"] == "give-way"
        ]
        assert wait_until(giving_way, 5.0), subscriber.on(f"{PREFIX}/traffic/pilot", since=since)
        assert giving_way()[-1]["situation"] == "head-on"

        # --- names that are not in the run; bodies that are no traffic request ----------------
        unknown = request({"retask": "nobody", "speed_kn": 3})
        assert unknown["ok"] is False and "retask = 'nobody'" in unknown["error"]
        assert "pilot, tug" in unknown["error"], unknown
        gone = request({"remove": "nobody"})
        assert gone["ok"] is False and "pilot, tug" in gone["error"]
        for body in ({"launch": "pilot"}, {"add": TUG, "remove": "tug"}, {}):
            answer = request(body)
            assert answer["ok"] is False and "retask" in answer["error"], (body, answer)
        nothing = request({"retask": "pilot"})
        assert nothing["ok"] is False and "course_deg" in nothing["error"], nothing

        # --- routes: a leg sailed at speed 0 never ends; refused at the request ------------------
        route = {
            "waypoints": [
                {"north": -2000, "east": 500, "speed_kn": 5},
                {"north": -1000, "east": 500, "speed_kn": 0},
            ]
        }
        stuck = request({"add": {"name": "twin", "mmsi": 257300004, "route": route}})
        assert stuck["ok"] is False, stuck
        assert "add.route.waypoints[1].speed_kn = 0" in stuck["error"]
        # retasked to a route, a target sails to its first waypoint too: at that one's speed
        stuck = request(
            {
                "retask": "pilot",
                "route": {
                    "waypoints": [
                        {"north": 0, "east": -500, "speed_kn": 0},
                        {"north": 500, "east": -500, "speed_kn": 8},
                    ]
                },
            }
        )
        assert stuck["ok"] is False, stuck
        assert "route.waypoints[0].speed_kn = 0" in stuck["error"]
        rerouted = request(
            {
                "retask": "pilot",
                "route": {
                    "waypoints": [
                        {"north": 0, "east": -500, "speed_kn": 8},
                        {"north": 500, "east": -500, "speed_kn": 8},
                    ]
                },
            }
        )
        assert rerouted["ok"] is True and rerouted["waypoints"] == 2, rerouted

        # --- a burst: the second add of a name or MMSI is refused before the first sails ------
        first, same_name, same_mmsi = request.burst(
            [{"add": TWIN}, {"add": {**TWIN, "mmsi": 257300005}}, {"add": {**TWIN, "name": "x"}}]
        )
        assert first["ok"] is True, first
        assert same_name["ok"] is False and "add.name = 'twin'" in same_name["error"], same_name
        assert same_mmsi["ok"] is False and "taken by twin" in same_mmsi["error"], same_mmsi
        assert wait_until(lambda: subscriber.on(f"{PREFIX}/traffic/twin"), 3.0)
        assert daemon.proc.poll() is None  # still running

        # --- remove: its topics stop ----------------------------------------------------------
        assert request({"remove": "twin"})["ok"] is True
        removed = request({"remove": "tug"})
        assert removed["ok"] is True and removed["removed"] == "tug", removed
        time.sleep(0.3)
        since = time.monotonic()
        time.sleep(2.2)
        assert not subscriber.on(f"{PREFIX}/traffic/tug", since=since)
        assert not subscriber.on(
            "vessels/urn:mrn:imo:mmsi:257300002/navigation/position", since=since
        )
        assert len(subscriber.on(f"{PREFIX}/traffic/pilot", since=since)) >= 2
        tug_reports = subscriber.on(f"{PREFIX}/traffic/tug")
        assert tug_reports and max(r["t"] for r in tug_reports) <= removed["t"] + 0.1
        # vessels/self has the same paths as before there was traffic
        assert {t for t in subscriber.topics() if t.startswith("vessels/self/")} == own_paths
        summary = stop(daemon)
        stopped = True
    finally:
        if not stopped:
            stop(daemon)
    # the summary has the target that stayed, not the one removed
    assert set(summary["traffic"]) == {"pilot"}, summary.get("traffic")
    assert summary["traffic"]["pilot"]["mmsi"] == 257300001
    # every request answered once, with its id, in the order sent
    answers = [a for a in subscriber.on(f"{PREFIX}/control/result") if a["request"] == "traffic"]
    assert [a["id"] for a in answers] == [b["id"] for b in request.sent]
    # the recording: each request on /control as it was sent, with its answer
    with open(record, "rb") as f:
        control = [json.loads(m.data) for _, _, m in make_reader(f).iter_messages(["/control"])]
    traffic = [c for c in control if c["kind"] == "traffic"]
    assert [c["request"] for c in traffic] == request.sent
    assert {c["source"] for c in traffic} == {"mqtt:control/traffic"}
    assert [c["result"]["ok"] for c in traffic] == [a["ok"] for a in answers]
    assert [c["result"].get("error") for c in traffic] == [a.get("error") for a in answers]
    # ... and the targets added at run time on its /traffic channel
    with open(record, "rb") as f:
        recorded = [json.loads(m.data) for _, _, m in make_reader(f).iter_messages(["/traffic"])]
    names = {target["name"] for m in recorded for target in m["targets"]}
    assert names == {"pilot", "tug", "twin"}, names


def test_2000_targets_added_over_mqtt_stop_at_the_cap_and_each_request_is_answered(
    tmp_path, broker, subscriber
):
    """2,000 adds published back to back: all were taken (a bench may have 200), the ticks
    fell behind (two resyncs) and 578 requests were never answered (the answers waiting for
    the broker were a deque of 64 that dropped its oldest)."""
    from hild.traffic.targets import MAX_TARGETS

    bench = traffic_bench(tmp_path, broker.port, control=True)
    daemon = start(tmp_path, bench)
    stopped = False
    try:
        assert wait_until(lambda: subscriber.on(f"{PREFIX}/state"), 15.0)
        bodies = [
            {
                "id": f"a{i}",
                "add": {
                    "name": f"t{i}",
                    "mmsi": 257000000 + i,
                    "course": {"north": 1000 + i, "east": 500, "course_deg": 90, "speed_kn": 5},
                },
            }
            for i in range(2000)
        ]
        for body in bodies:
            subscriber.client.publish(f"{PREFIX}/control/traffic", json.dumps(body), qos=1)

        def answers() -> list[dict]:
            return [
                a for a in subscriber.on(f"{PREFIX}/control/result") if a["request"] == "traffic"
            ]

        assert wait_until(lambda: len(answers()) >= 2000, 120.0, 0.5), len(answers())
        said = answers()
        assert [a["id"] for a in said] == [b["id"] for b in bodies]  # each once, in order
        assert all(a["ok"] and a["added"] == f"t{i}" for i, a in enumerate(said[:MAX_TARGETS]))
        rest = said[MAX_TARGETS:]
        assert not any(a["ok"] for a in rest)
        assert all(
            a["error"].endswith(
                f"expected at most {MAX_TARGETS} traffic targets in a run, "
                f"as in a bench (it has {MAX_TARGETS}: remove one first)"
            )
            for a in rest
        ), rest[0]
        last = f"{PREFIX}/traffic/t{MAX_TARGETS - 1}"
        assert wait_until(lambda: subscriber.on(last), 10.0)  # the last taken sails
        time.sleep(1.5)  # (a traffic period more)
        assert not subscriber.on(f"{PREFIX}/traffic/t{MAX_TARGETS}")
        summary = stop(daemon)
        stopped = True
    finally:
        if not stopped:
            stop(daemon)
    assert len(summary["traffic"]) == MAX_TARGETS and summary["control_dropped"] == 0
    assert not daemon.events("control.traffic.refused")  # every one taken was applied
    assert not daemon.events("loop.resync"), daemon.events("loop.resync")
