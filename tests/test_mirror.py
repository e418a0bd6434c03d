"""The MQTT mirror and runtime control against a real mosquitto (and a broker that hangs).

Every test runs `hild run` as a subprocess on the default bench moved onto free ports, with
an [mqtt] table pointing at a mosquitto the test starts on a free port.
"""

from __future__ import annotations

import json
import math
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pynmea2
import pytest
from mcap.reader import make_reader

from hild.config import ConfigError, Section
from hild.mirror.config import MirrorConfig, parse_broker_url, read_mirror
from tests.endpoints import (
    Daemon,
    Repeater,
    TcpClient,
    free_tcp_port,
    free_udp_port,
    nmea_line,
    typical_window_keeps_deadlines,
)
from tests.forked_cli import run_hild
from tests.mqtt_endpoints import Broker, StalledBroker, Subscriber, make_tls_files, wait_until
from tests.test_bus_fuzz import rss_kib
from tests.test_daemon import default_bench_on_free_ports

PREFIX = "hild/test"
ROOT = Path(__file__).resolve().parent.parent


def bench_with_mqtt(tmp_path, port: int, **extra) -> str:
    path = default_bench_on_free_ports(tmp_path, free_udp_port(), free_udp_port())
    lines = [
        "",
        "[mqtt]",
        f'url = "mqtt://127.0.0.1:{port}"',
        f'prefix = "{PREFIX}"',
        "reconnect_max_s = 1.0",
    ]
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    with open(path, "a") as f:
        f.write("\n".join(lines) + "\n")
    return path


def start(tmp_path, bench: str, *args: str) -> Daemon:
    return Daemon(
        bench, "--run-dir", str(tmp_path / "run"), "--stats-interval", "1", *args, tmp=tmp_path
    )


def stop(daemon: Daemon) -> dict:
    try:
        return daemon.stop()
    finally:
        if daemon.proc.poll() is None:
            daemon.proc.kill()


# --- configuration -----------------------------------------------------------------------------
def test_broker_urls_and_the_mqtt_table(tmp_path, monkeypatch):
    assert parse_broker_url("mqtt://broker.local") == ("broker.local", 1883, False, None)
    assert parse_broker_url("mqtts://u@10.0.0.2:8884") == ("10.0.0.2", 8884, True, "u")
    for bad in ("http://x", "mqtt://", "mqtt://h:port", "mqtt://h/path"):
        with pytest.raises(ConfigError, match="mqtt://HOST"):
            parse_broker_url(bad)
    with pytest.raises(ConfigError, match="no password in the URL"):
        parse_broker_url("mqtt://u:secret@h")
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    section = Section(
        {
            "url": "mqtt://h:1",
            "username": "hild",
            "password_file": "secret",
            "topics": {"state": {"rate_hz": 20, "qos": 1}},
        },
        tmp_path / "b.toml",
        "mqtt",
    )
    config = read_mirror(section)
    assert (config.host, config.port, config.username, config.password) == (
        "h",
        1,
        "hild",
        "s3cret",
    )
    assert config.topics["state"].rate_hz == 20 and config.topics["state"].qos == 1
    assert "s3cret" not in repr(config)
    with pytest.raises(ConfigError, match="mqtt.password"):
        read_mirror(Section({"password": "x"}, "b.toml", "mqtt"))
    with pytest.raises(ConfigError, match="mqtt.topics.stat"):
        read_mirror(Section({"topics": {"stat": {}}}, "b.toml", "mqtt"))
    with pytest.raises(ConfigError, match="mqtt.password_env"):
        monkeypatch.delenv("NO_SUCH_VARIABLE", raising=False)
        read_mirror(Section({"password_env": "NO_SUCH_VARIABLE"}, "b.toml", "mqtt"))
    assert MirrorConfig().topic_prefix("odin-bench") == "hild/odin-bench"


# --- the mirror ------------------------------------------------------------------------------
def test_every_topic_with_its_payload_and_a_clean_offline(tmp_path, broker, subscriber):
    bench = bench_with_mqtt(tmp_path, broker.port, signalk=True)
    daemon = start(tmp_path, bench, "--start-time", "2026-06-01T12:00:00Z")
    try:
        wait_until(lambda: len(subscriber.on(f"{PREFIX}/stats")) >= 3, 10.0)
        t_window = time.monotonic()
        time.sleep(2.0)
    finally:
        summary = stop(daemon)
    on = subscriber.on
    topics = subscriber.topics()
    for name in (
        "state",
        "actuators",
        "environment",
        "sensors/gps",
        "sensors/wind",
        "sensors/speed",
        "bus/jets",
        "stats",
        "status",
    ):
        assert f"{PREFIX}/{name}" in topics, topics
    for path in (
        "navigation/position",
        "navigation/headingTrue",
        "navigation/speedOverGround",
        "navigation/speedThroughWater",
        "environment/wind/speedTrue",
        "propulsion/port/revolutions",
        "steering/rudderAngle",
    ):
        assert f"vessels/self/{path}" in topics, topics
    # state at its default 10 Hz (wall clock) over the 2 s window: 20 messages, +-3 for where
    # the window's edges fall and a tick now and then held off the core
    states = on(f"{PREFIX}/state", since=t_window)
    assert 17 <= len(states) <= 23, len(states)
    s = states[-1]
    assert s["latitude"] == pytest.approx(59.41, abs=1e-6)  # lying still at the origin
    assert s["longitude"] == pytest.approx(10.48, abs=1e-6)
    assert s["heading"] == 0.0 and s["sog"] == 0.0 and s["north"] == 0.0
    assert s["utc"].startswith("2026-06-01T12:00:0") and s["utc"].endswith("Z")
    assert [x["t"] for x in states] == sorted(x["t"] for x in states)
    a = on(f"{PREFIX}/actuators")[-1]
    assert a["port.rpm"] == 400.0 and a["port.rpm_commanded"] == 400.0  # Odin idles at 400
    assert {"starboard.nozzle", "starboard.deflector_commanded", "force.X"} <= set(a)
    env = on(f"{PREFIX}/environment")[-1]
    assert env["weather"] == "calm" and env["wind_speed"] == 0.0 and env["hs"] == 0.0
    # the sensor topic carries the very sentences the GPS sent, and they say where the boat is
    gps = [line for m in on(f"{PREFIX}/sensors/gps") for line in m["sentences"]]
    gga = [pynmea2.parse(x) for x in gps if x.startswith("$GPGGA")]
    assert len(gga) >= 3 and gga[-1].latitude == pytest.approx(59.41, abs=1e-5)
    bus = on(f"{PREFIX}/bus/jets")[-1]
    assert bus["watchdog"] == "waiting" and bus["commands"] == 0
    stats = on(f"{PREFIX}/stats")[-1]
    assert stats["mqtt_published"] > 0 and stats["mqtt_dropped"] == 0
    assert stats["ticks"] > 100 and "jitter_p99_ms" in stats and "cpu_percent" in stats
    position = json.loads(subscriber.raw("vessels/self/navigation/position")[-1])
    assert position["latitude"] == pytest.approx(59.41, abs=1e-6)
    # status: online (retained) with the run's description, then offline on the clean stop
    status = on(f"{PREFIX}/status")
    assert status[0]["state"] == "online" and status[0]["vessel"] == "odin"
    assert status[-1] == {"state": "offline", "reason": "SIGTERM"}
    assert summary["reason"] == "SIGTERM"


def test_a_diverged_run_publishes_its_nan_state_as_null_and_reads_offline(
    tmp_path, broker, subscriber
):
    """Reproduces: the mirror encoded with the json module's strict mode, so the first state
    after the model diverged (a NaN position) raised in the session, which ended without a
    word, and the retained status read online long after the run had stopped. The NaN state
    is published with nulls now (as the recording writes it), and the status ends offline."""
    from tests.test_robustness import DIVERGING_BENCH  # (8 m/s of current across Odin)

    bench = tmp_path / "diverging.toml"
    text = DIVERGING_BENCH.format(rate_hz=1 / 0.12, run_dir=tmp_path / "run")
    assert "time_scale = 20" in text
    bench.write_text(
        text.replace("time_scale = 20", "time_scale = 1")  # the mirror's pace
        + f'[mqtt]\nurl = "mqtt://127.0.0.1:{broker.port}"\nprefix = "{PREFIX}"\n'
    )
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "hild.cli",
            "run",
            str(bench),
            "--duration",
            "60",
            "--log-format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert p.returncode == 1 and '"sim.diverged"' in p.stderr, p.stderr[-2000:]
    assert "mirror.unencodable" not in p.stderr
    assert wait_until(lambda: subscriber.on(f"{PREFIX}/status")[-1]["state"] == "offline", 5.0)
    assert subscriber.on(f"{PREFIX}/status")[-1] == {"state": "offline", "reason": "diverged"}
    norths = [m["north"] for m in subscriber.on(f"{PREFIX}/state")]
    assert norths[0] is not None and None in norths, norths  # (the last is published at stop)


def test_a_message_json_cannot_carry_is_dropped_and_the_session_goes_on(broker, subscriber):
    """A payload JSON has no form for (a key that is not text) is counted as dropped and
    logged; the messages after it are published and the session ends cleanly, offline."""
    import asyncio

    from hild.mirror.config import from_url
    from hild.mirror.session import Session
    from hild.mirror.store import LatestStore, Message

    async def publish() -> Session:
        store = LatestStore()
        session = Session(
            from_url(f"mqtt://127.0.0.1:{broker.port}"),
            store,
            f"{PREFIX}/status",
            {"state": "online"},
        )
        running = asyncio.create_task(session.run())
        for _ in range(200):
            if session.stats.connected:
                break
            await asyncio.sleep(0.025)
        store.put(Message(f"{PREFIX}/bad", {1: "a key JSON has no form for"}))
        store.put(Message(f"{PREFIX}/good", {"after": "the bad one"}))
        for _ in range(200):
            if subscriber.on(f"{PREFIX}/good"):
                break
            await asyncio.sleep(0.025)
        await session.close({"state": "offline", "reason": "test"})
        await asyncio.wait_for(running, 5.0)
        return session

    session = asyncio.run(publish())
    assert subscriber.on(f"{PREFIX}/good") == [{"after": "the bad one"}]
    assert f"{PREFIX}/bad" not in subscriber.topics()
    assert session.stats.dropped == 1 and session.stats.published == 3  # online, good, offline
    assert wait_until(lambda: subscriber.on(f"{PREFIX}/status")[-1]["state"] == "offline", 5.0)


def test_status_reads_offline_after_sigkill(tmp_path, broker, subscriber):
    """The mirror turned on from the command line, on a bench with no [mqtt] table: the
    topics go under hild/<bench name>."""
    bench = default_bench_on_free_ports(tmp_path, free_udp_port(), free_udp_port())
    daemon = start(tmp_path, bench, "--mqtt", f"mqtt://127.0.0.1:{broker.port}")
    try:
        assert wait_until(lambda: subscriber.on("hild/default/state"), 10.0)
        online = subscriber.on("hild/default/status")[-1]
        assert online["state"] == "online" and online["bench"] == "default", online
        daemon.proc.send_signal(signal.SIGKILL)
        daemon.proc.wait(5)
    finally:
        if daemon.proc.poll() is None:
            daemon.proc.kill()
    # the broker sends the will when the connection drops (0.7 s measured); a late reader
    # gets it as the retained status
    late = Subscriber(broker.port, "hild/default/status")
    try:
        assert wait_until(
            lambda: late.on("hild/default/status") == [{"state": "offline", "reason": "lost"}], 5.0
        ), late.on("hild/default/status")
    finally:
        late.close()


def test_a_broker_that_goes_away_for_10_s_costs_nothing_and_the_mirror_resumes(
    tmp_path, broker, subscriber
):
    daemon = start(tmp_path, bench_with_mqtt(tmp_path, broker.port))
    try:
        assert wait_until(lambda: subscriber.on(f"{PREFIX}/state"), 10.0)
        time.sleep(1.0)
        rss_before = rss_kib(daemon.proc.pid)
        subscriber.close()
        broker.stop()
        time.sleep(10.0)
        rss_during = rss_kib(daemon.proc.pid)
        broker.start()
        back = Subscriber(broker.port)
        t_back = time.monotonic()
        try:
            # back-off is capped at reconnect_max_s = 1 s here: messages within a few seconds
            assert wait_until(lambda: back.on(f"{PREFIX}/state", since=t_back), 5.0)
            status = wait_until(lambda: back.on(f"{PREFIX}/status"), 2.0)
            assert status and status[-1]["state"] == "online"
        finally:
            back.close()
    finally:
        summary = stop(daemon)
    # no deadline lost to the outage (a loop that waited on the reconnection would overrun in
    # every window of it)
    windows = daemon.overruns_per_window()
    assert len(windows) >= 10 and typical_window_keeps_deadlines(windows), (windows, summary)
    # memory flat: 10 s of messages kept would be ~30 topics x 10 s x ~400 B, over 100 KiB
    # per second of outage; the store holds one payload per topic
    assert rss_during - rss_before < 512, (rss_before, rss_during)


def test_a_broker_that_never_reads_costs_no_deadline_and_no_memory(tmp_path):
    stalled = StalledBroker()
    daemon = start(tmp_path, bench_with_mqtt(tmp_path, stalled.port))
    try:
        time.sleep(2.0)
        rss_before = rss_kib(daemon.proc.pid)
        time.sleep(8.0)
        rss_after = rss_kib(daemon.proc.pid)
    finally:
        summary = stop(daemon)
        stalled.close()
    assert len(stalled.accepted) >= 2  # it kept trying, with back-off
    # A loop that waited on the broker would overrun at every publish and every connection
    # attempt, in every window (--stats-interval 1)
    windows = daemon.overruns_per_window()
    assert len(windows) >= 8 and typical_window_keeps_deadlines(windows), windows
    assert rss_after - rss_before < 512, (rss_before, rss_after)
    assert summary["reason"] == "SIGTERM"


# --- runtime control -----------------------------------------------------------------------------
def request(subscriber: Subscriber, topic: str, body: dict | str, timeout: float = 10.0) -> dict:
    """Publish a control request and wait for its answer (the first one after publishing)."""
    payload = body if isinstance(body, str) else json.dumps(body)
    since = time.monotonic()
    subscriber.publish(f"{PREFIX}/control/{topic}", payload)

    def answered():
        answers = [
            a
            for a in subscriber.on(f"{PREFIX}/control/result", since=since)
            if a["request"] == topic
        ]
        return answers[0] if answers else None

    answer = wait_until(answered, timeout)
    assert answer is not None, f"no answer to {body!r}"
    return answer


@pytest.fixture
def controlled(tmp_path, broker, subscriber):
    bench = bench_with_mqtt(tmp_path, broker.port, control=True)
    daemon = start(tmp_path, bench, "--record", str(tmp_path / "run.mcap"))
    assert wait_until(lambda: subscriber.on(f"{PREFIX}/environment"), 10.0)
    yield daemon
    stop(daemon)


def test_weather_changes_at_run_time_and_bad_requests_change_nothing(controlled, subscriber):
    bad = request(subscriber, "weather", {"id": "bad", "wind": {"speed": -5}})
    assert bad["id"] == "bad" and bad["ok"] is False and "wind.speed = -5" in bad["error"]
    assert "at least 0" in bad["error"]
    for body, says in (
        ("not json", "a JSON object"),
        ('{"id": "x", "hail": 1}', "hail"),
        ('{"id": "y", "preset": "no-such-sea"}', "no-such-sea"),
    ):
        answer = request(subscriber, "weather", body)
        assert answer["ok"] is False and says in answer["error"], answer
    time.sleep(0.5)
    env = subscriber.on(f"{PREFIX}/environment")[-1]
    assert env["weather"] == "calm" and env["wind_speed"] == 0.0
    good = request(subscriber, "weather", {"id": "gale", "preset": "gale-calm-sea"})
    assert good["ok"] is True and good["id"] == "gale", good
    since = time.monotonic()
    time.sleep(1.5)
    after = subscriber.on(f"{PREFIX}/environment", since=since)
    assert after and all(e["weather"] == "gale-calm-sea" for e in after)
    # thesis scenario 2: 20 m/s mean wind from the north, 0.5 m/s current; the preset's gusts
    # and slow variation move the wind a few m/s about its mean
    assert all(12.0 < e["wind_speed"] < 28.0 for e in after), after
    assert all(e["current_speed"] == pytest.approx(0.5, abs=0.2) for e in after)
    partial = request(subscriber, "weather", {"id": "west", "wind": {"from_deg": 270}})
    assert partial["ok"] is True and partial["weather"]["wind_from_deg"] == 270
    assert partial["weather"]["preset"] == "gale-calm-sea"  # the rest of it stays
    since = time.monotonic()
    time.sleep(1.5)
    after = subscriber.on(f"{PREFIX}/environment", since=since)
    west = math.radians(270.0)
    assert after and all(
        abs(math.remainder(e["wind_from"] - west, 2 * math.pi)) < 0.5 for e in after
    ), after


def ctl(tmp_path, request: str, body: dict) -> dict:
    """`hild ctl REQUEST --json BODY` to the run in ``tmp_path / "run"``: its answer."""
    done = run_hild("ctl", "--run-dir", str(tmp_path / "run"), request, "--json", json.dumps(body))
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout)


def test_requests_build_on_the_last_one_whichever_way_it_came(controlled, subscriber, tmp_path):
    """The run has one runtime control: a part of a weather is laid over the weather last asked
    for (even one whose record has not reached the tick yet), whether that came over MQTT or
    hild ctl, and a target added through one is the run's for the other."""
    since = time.monotonic()
    subscriber.publish(
        f"{PREFIX}/control/weather", json.dumps({"id": "w1", "preset": "gale-calm-sea"})
    )
    subscriber.publish(
        f"{PREFIX}/control/weather", json.dumps({"id": "w2", "wind": {"from_deg": 270}})
    )
    answers = wait_until(
        lambda: (
            (
                a := [
                    x
                    for x in subscriber.on(f"{PREFIX}/control/result", since=since)
                    if x["request"] == "weather"
                ]
            )
            and len(a) == 2
            and a
        ),
        15.0,
    )
    assert answers and [a["id"] for a in answers] == ["w1", "w2"], answers
    gale, west = (a["weather"] for a in answers)
    assert gale["preset"] == "gale-calm-sea" and gale["current_speed"] == 0.5, gale
    # the second is the gale with its wind turned west: its gusts and current kept
    assert west == {**gale, "wind_from_deg": 270.0}, (gale, west)
    answer = ctl(tmp_path, "weather", {"wind": {"speed": 10}})
    assert answer["ok"] is True, answer
    assert answer["weather"] == {**west, "wind_speed": 10.0}, (west, answer)
    # traffic: MQTT's view of the targets is taken (none), hild ctl adds one, MQTT removes it
    nobody = request(subscriber, "traffic", {"remove": "nobody"})
    assert nobody["ok"] is False and "none" in nobody["error"], nobody
    twin = {
        "name": "twin",
        "mmsi": 257300004,
        "course": {"north": -2000, "east": 500, "course_deg": 0, "speed_kn": 5},
    }
    added = ctl(tmp_path, "traffic", {"add": twin})
    assert added["ok"] is True and added["added"] == "twin", added
    again = request(subscriber, "traffic", {"add": {**twin, "mmsi": 257300005}})
    assert again["ok"] is False and "add.name = 'twin'" in again["error"], again
    removed = request(subscriber, "traffic", {"remove": "twin"})
    assert removed["ok"] is True and removed["removed"] == "twin", removed


def test_reposition_moves_the_gps_output(controlled, subscriber):
    answer = request(
        subscriber,
        "reposition",
        {"id": "r", "latitude": 59.42, "longitude": 10.5, "heading_deg": 90},
    )
    assert answer["ok"] is True, answer
    since = time.monotonic()

    def gga_after():
        lines = [
            x
            for m in subscriber.on(f"{PREFIX}/sensors/gps", since=since)
            for x in m["sentences"]
            if x.startswith("$GPGGA")
        ]
        return [pynmea2.parse(x) for x in lines]

    fixes = wait_until(lambda: len(gga_after()) >= 2 and gga_after(), 5.0)
    assert fixes, "no GGA after the reposition"
    assert fixes[-1].latitude == pytest.approx(59.42, abs=2e-5)  # ~2 m: the GPS's noise
    assert fixes[-1].longitude == pytest.approx(10.5, abs=4e-5)
    state = subscriber.on(f"{PREFIX}/state", since=since)[-1]
    assert state["heading"] == pytest.approx(math.pi / 2, abs=1e-3)
    bad = request(subscriber, "reposition", {"id": "far", "latitude": 10.0, "longitude": 10.0})
    assert bad["ok"] is False and "within 100 km" in bad["error"]


def test_faults_and_commands_over_mqtt(controlled, subscriber):
    answer = request(
        subscriber, "fault", {"id": "f", "device": "gps", "kind": "dropout", "duration": 2.0}
    )
    assert answer["ok"] is True and answer["end"] == pytest.approx(answer["start"] + 2.0)
    time.sleep(0.7)  # the fault started at the next tick; the sensors topic runs at 2 Hz
    since = time.monotonic()
    time.sleep(1.0)
    silent = subscriber.on(f"{PREFIX}/sensors/gps", since=since)
    assert silent and all(m["sentences"] == [] for m in silent), silent
    wait_until(
        lambda: any(m["sentences"] for m in subscriber.on(f"{PREFIX}/sensors/gps", since=since)),
        3.0,
    )
    assert any(m["sentences"] for m in subscriber.on(f"{PREFIX}/sensors/gps", since=since))
    bad = request(subscriber, "fault", {"id": "g", "device": "sonar", "kind": "dropout"})
    assert bad["ok"] is False and "sonar" in bad["error"] and "gps" in bad["error"]
    # commands as a controller sends them: the jets' device decodes them, the watchdog applies
    framed = nmea_line("RCTRC,1,1200.0,R,100.0,P,,B,C").decode().strip()
    result = request(subscriber, "commands", {"id": "c", "lines": [framed, "$RCTRC,garbage*00"]})
    assert result["ok"] is True and result["results"] == ["applied", "bad_checksum"], result
    since = time.monotonic()
    time.sleep(0.3)
    act = subscriber.on(f"{PREFIX}/actuators", since=since)
    assert act and act[-1]["starboard.rpm_commanded"] == 1200.0
    # ... and the same watchdog: silence for 0.5 s trips it and idles the jet
    assert wait_until(lambda: subscriber.on(f"{PREFIX}/bus/jets")[-1]["watchdog"] == "tripped", 3.0)
    since = time.monotonic()
    time.sleep(0.3)
    assert subscriber.on(f"{PREFIX}/actuators", since=since)[-1]["starboard.rpm_commanded"] == 400
    # the recording has both lines on the device's bus channel, as if a port had received them
    stop(controlled)
    with open(controlled.stderr_path.parent / "run.mcap", "rb") as f:
        received = [json.loads(m.data) for _, _, m in make_reader(f).iter_messages(["/bus/jets"])]
    assert [(r["port"], r["line"], r["ok"], r["reason"]) for r in received] == [
        ("mqtt:control/commands", framed, True, ""),
        ("mqtt:control/commands", "$RCTRC,garbage*00", False, "bad_checksum"),
    ]
    # /control: each request as it was sent, where from and its answer; the watchdog's trip in
    # the bench's names; no class or field name of hild's insides
    with open(controlled.stderr_path.parent / "run.mcap", "rb") as f:
        raw = [m.data for _, _, m in make_reader(f).iter_messages(["/control"])]
    control = [json.loads(x) for x in raw]
    assert [
        (c["kind"], c["source"], c["request"], c["result"]["ok"])
        for c in control
        if c["kind"] != "watchdog"
    ] == [
        (
            "fault",
            "mqtt:control/fault",
            {"id": "f", "device": "gps", "kind": "dropout", "duration": 2.0},
            True,
        ),
        ("fault", "mqtt:control/fault", {"id": "g", "device": "sonar", "kind": "dropout"}, False),
        (
            "commands",
            "mqtt:control/commands",
            {"id": "c", "lines": [framed, "$RCTRC,garbage*00"]},
            True,
        ),
    ], control
    assert control[0]["result"]["end"] == answer["end"] and "sonar" in control[1]["result"]["error"]
    assert control[2]["result"]["results"] == ["applied", "bad_checksum"]
    trips = [c for c in control if c["kind"] == "watchdog"]
    assert trips and all(
        c["source"] == "jets" and c["result"]["watchdog"] == "tripped" for c in trips
    ), trips
    for internal in (b"SafeState", b"centre_angles", b"SensorFault", b"ActuatorCommand"):
        assert not any(internal in x for x in raw), internal


def mqtt_examples(broker: Broker) -> list[str]:
    """docs/mqtt.md's mosquitto_pub commands for the `commands` request, as a user pastes
    them, pointed at the test's broker (its port) and prefix."""
    text = (ROOT / "docs" / "mqtt.md").read_text()
    lines = [x for x in text.splitlines() if x.startswith("mosquitto_pub -t $P/commands ")]
    assert lines, "no commands example in docs/mqtt.md"
    prefix = f"P={PREFIX}/control; "
    return [
        prefix + x.replace("mosquitto_pub ", f"mosquitto_pub -p {broker.port} ", 1) for x in lines
    ]


@pytest.mark.skipif(shutil.which("mosquitto_pub") is None, reason="needs mosquitto_pub")
def test_a_commands_request_that_applies_no_line_is_not_ok(controlled, subscriber, broker):
    command = nmea_line("RCTRC,0,1200.0,R,100.0,P,,B,C").decode().strip()
    first = request(subscriber, "commands", command)  # no lease yet: the first one acts
    assert first["ok"] is True and first["applied"] == 1 and first["results"] == ["applied"]
    assert wait_until(lambda: subscriber.on(f"{PREFIX}/bus/jets")[-1]["watchdog"] == "tripped", 5.0)
    # tripped, the jets take only a neutral command: nothing applied is not ok
    refused = request(subscriber, "commands", {"id": "r", "lines": [command, "$GARBAGE*00"]})
    assert refused["ok"] is False and refused["applied"] == 0, refused
    assert refused["results"] == ["latched", "bad_checksum"] and "neutral" in refused["error"]
    # the guide's example, pasted: the neutral command arms the jets, the next one drives them
    (example,) = mqtt_examples(broker)
    since = time.monotonic()
    subprocess.run(["bash", "-c", example], check=True, timeout=10)
    answer = wait_until(
        lambda: [
            a
            for a in subscriber.on(f"{PREFIX}/control/result", since=since)
            if a["request"] == "commands"
        ],
        10.0,
    )
    assert answer and answer[0]["ok"] is True, answer
    assert answer[0]["applied"] == 2 and answer[0]["results"] == ["applied", "applied"]
    acted = wait_until(
        lambda: [
            a
            for a in subscriber.on(f"{PREFIX}/actuators", since=since)
            if a["starboard.rpm_commanded"] == 1200.0
        ],
        5.0,
    )
    assert acted, subscriber.on(f"{PREFIX}/actuators", since=since)


def test_the_frontseats_watchdog_reads_tripped_on_mqtt_until_the_next_pydir(
    tmp_path, broker, subscriber
):
    # release = "next-command": the trip shows on bus/<device> as on a latched device, and
    # ends with the backseat's next PYDIR, whatever it asks
    port = free_tcp_port()
    bench = tmp_path / "frontseat.toml"
    bench.write_text(
        textwrap.dedent(f"""
        [bench]
        start_time = "2026-06-01T12:00:00Z"
        [vessel]
        profile = "otter"
        [[device]]
        name = "frontseat"
        type = "frontseat"
        port = "tcp://127.0.0.1:{port}"
        [mqtt]
        url = "mqtt://127.0.0.1:{broker.port}"
        prefix = "{PREFIX}"
        [mqtt.topics.bus]
        rate_hz = 10
    """)
    )
    daemon = start(tmp_path, str(bench))
    topic = f"{PREFIX}/bus/frontseat"
    try:
        backseat = TcpClient(port).start()
        sender = Repeater(backseat.sock.sendall, hz=10).start(b"$PYDIR,60,40*\r\n")
        assert wait_until(
            lambda: (m := subscriber.on(topic)) and m[-1]["watchdog"] == "active", 5.0
        )
        sender.stop()  # the backseat freezes
        assert wait_until(lambda: subscriber.on(topic)[-1]["watchdog"] == "tripped", 3.0)
        since = time.monotonic()
        time.sleep(0.5)
        held = subscriber.on(topic, since=since)
        assert held and {m["watchdog"] for m in held} == {"tripped"}  # until a PYDIR comes
        assert held[-1]["watchdog_trips"] == 1
        sender = Repeater(backseat.sock.sendall, hz=10).start(b"$PYDIR,60,40*\r\n")
        assert wait_until(lambda: subscriber.on(topic)[-1]["watchdog"] == "active", 3.0)
        bus = subscriber.on(topic)[-1]
        assert bus["watchdog_trips"] == 1 and bus["rejected_total"] == 0  # no PYDIR refused
        sender.stop()
        backseat.close()
    finally:
        stop(daemon)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--mqtt-control"], "a broker (--mqtt mqtt://HOST:PORT"),
        (["--mqtt", "mqtt://hild:secret@127.0.0.1"], "no password in the URL"),
        (["--mqtt", "http://127.0.0.1"], "mqtt://HOST[:PORT]"),
    ],
)
def test_run_refuses_bad_mqtt_options(tmp_path, args, says):
    bench = default_bench_on_free_ports(tmp_path, free_udp_port(), free_udp_port())
    argv = [sys.executable, "-m", "hild.cli", "run", bench, "--run-dir", str(tmp_path), *args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert "secret" not in p.stderr


def test_a_password_in_the_bench_file_is_never_printed(tmp_path):
    """Refused, as '***': it was also printed in clear as an unknown key of [mqtt]."""
    bench = bench_with_mqtt(tmp_path, free_tcp_port(), password="hunter2-in-clear")
    done = subprocess.run(
        [sys.executable, "-m", "hild.cli", "check", bench],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "mqtt.password = '***'" in done.stderr, done.stderr
    assert "hunter2" not in done.stdout + done.stderr


def test_tls_and_a_password_from_the_environment(tmp_path, monkeypatch):
    """mqtts:// to a broker that wants TLS and a user: the CA from the bench, the password
    from $HILD_MQTT_PASSWORD (never the command line)."""
    tls = make_tls_files(tmp_path)
    passwords = tmp_path / "passwd"
    subprocess.run(
        ["mosquitto_passwd", "-b", "-c", str(passwords), "hild", "s3cret"],
        check=True,
        capture_output=True,
    )
    conf = (
        f"cafile {tls['ca']}\ncertfile {tls['cert']}\nkeyfile {tls['key']}\n"
        f"password_file {passwords}\n"
    )
    broker = Broker(tmp_path, extra=conf, anonymous=False)
    path = default_bench_on_free_ports(tmp_path, free_udp_port(), free_udp_port())
    with open(path, "a") as f:
        f.write(
            f'\n[mqtt]\nurl = "mqtts://hild@127.0.0.1:{broker.port}"\n'
            f'prefix = "{PREFIX}"\nca_file = "{tls["ca"]}"\n'
        )
    monkeypatch.setenv("HILD_MQTT_PASSWORD", "s3cret")  # the daemon inherits it
    daemon = start(tmp_path, path)
    try:
        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        client.tls_set(ca_certs=str(tls["ca"]))
        client.username_pw_set("hild", "s3cret")
        received: list[str] = []
        client.on_message = lambda _c, _u, m: received.append(m.topic)
        client.connect("127.0.0.1", broker.port)
        client.subscribe(f"{PREFIX}/#")
        client.loop_start()
        assert wait_until(lambda: f"{PREFIX}/state" in received, 10.0), received
        client.loop_stop()
        client.disconnect()
    finally:
        summary = stop(daemon)
        broker.close()
    assert summary["reason"] == "SIGTERM"
    assert "s3cret" not in daemon.stderr()
