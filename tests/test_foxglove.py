"""`hild run --foxglove`: a Foxglove client's view of a run (the Foxglove WebSocket protocol,
tests/foxglove_client.py): the server's info, the recording's channels and schema names, the
GPS's fixes on /fix/gps at the sensor's rate near the bench's origin (and the truth on
/location at the recording's), and a weather change by service call seen
on /environment; the option's checks and `hild layout`."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.endpoints import Daemon, free_tcp_port, write_bench
from tests.forked_cli import run_hild
from tests.foxglove_client import FoxgloveClient

TABLES = """
[record]
file = "{tmp}/fox.mcap"
rate_hz = 10
[[device]]
name = "gps"
type = "gps"
port = "pty://gps"
rate_hz = 5
baud = 19200
[[device]]
name = "jets"
type = "jet-controller"
port = "pty://jets"
"""

pytest.importorskip("foxglove")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fox")
    bench = tmp / "bench.toml"
    write_bench(bench, "fox", tmp / "run", TABLES.format(tmp=tmp))
    port = free_tcp_port()
    d = Daemon(str(bench), "--foxglove", f"127.0.0.1:{port}", tmp=tmp)
    yield d, port, tmp / "run"
    d.stop()


def advertised(messages: list) -> tuple[dict, dict, list]:
    channels = {
        c["topic"]: c
        for m in messages
        if isinstance(m, dict) and m.get("op") == "advertise"
        for c in m["channels"]
    }
    services = {
        s["name"]: s
        for m in messages
        if isinstance(m, dict) and m.get("op") == "advertiseServices"
        for s in m["services"]
    }
    info = [m for m in messages if isinstance(m, dict) and m.get("op") == "serverInfo"]
    return channels, services, info


def decoded(messages: list, subscription: int) -> list[tuple[int, dict]]:
    return [
        (m[2], json.loads(m[3]))
        for m in messages
        if isinstance(m, tuple) and m[0] == "message" and m[1] == subscription
    ]


def test_a_foxglove_client_sees_the_run_and_changes_its_weather(run):
    daemon, port, run_dir = run
    assert f"Foxglove: ws://127.0.0.1:{port}" in daemon.banner
    client = FoxgloveClient("127.0.0.1", port)  # offers foxglove.sdk.v1, foxglove.websocket.v1
    try:
        assert client.protocol == "foxglove.sdk.v1"
        channels, services, info = advertised(
            client.collect(
                3.0, until=lambda m: isinstance(m, dict) and m.get("op") == "advertiseServices"
            )
        )
        channels.update(advertised(client.collect(1.0))[0])  # (the sampled ones come on tick)
        assert info and "services" in info[0]["capabilities"]
        schemas = {topic: c["schemaName"] for topic, c in channels.items()}
        assert schemas["/location"] == "foxglove.LocationFix"
        assert schemas["/pose"] == "foxglove.PoseInFrame"
        assert schemas["/tf"] == "foxglove.FrameTransform"
        assert schemas["/fix/gps"] == "foxglove.LocationFix"
        for topic in (
            "/state",
            "/actuators",
            "/environment",
            "/sensors/gps",
            "/bus/jets",
            "/control",
            "/stats",
        ):
            assert schemas[topic] == "hild." + topic.strip("/").split("/")[0], topic
        assert set(services) >= {
            f"/control/{r}" for r in ("weather", "fault", "reposition", "commands", "traffic")
        }

        client.subscribe(1, channels["/location"]["id"])
        client.subscribe(2, channels["/environment"]["id"])
        client.subscribe(3, channels["/fix/gps"]["id"])
        messages = client.collect(3.0)
        # the GPS's fixes at the sensor's rate (its rate_hz, 5) over 3 s of a real-time run,
        # each a fix of the GPS (its frame) near the bench's origin
        fixes = decoded(messages, 3)
        assert 10 <= len(fixes) <= 20, len(fixes)
        times = [t for t, _ in fixes]
        assert all(b > a for a, b in zip(times, times[1:], strict=False))
        span_s = (times[-1] - times[0]) / 1e9
        assert abs(span_s / (len(times) - 1) - 0.2) < 1e-6  # a fix per 0.2 s of simulated time
        for _, fix in fixes:
            assert fix["frame_id"] == "gps"
            assert abs(fix["latitude"] - 59.41) < 0.01 and abs(fix["longitude"] - 10.48) < 0.01
        # the truth at the recording's rate (the bench's [record] rate_hz, 10)
        truth = decoded(messages, 1)
        assert 20 <= len(truth) <= 40, len(truth)
        times = [t for t, _ in truth]
        span_s = (times[-1] - times[0]) / 1e9
        assert abs(span_s / (len(times) - 1) - 0.1) < 1e-6
        assert decoded(messages, 2)[-1][1]["wind_speed"] == pytest.approx(0.0)

        weather = services["/control/weather"]
        client.call_service(
            weather["id"],
            7,
            json.dumps({"id": "w1", "wind": {"speed": 9, "from_deg": 90}}).encode(),
        )
        messages = client.collect(
            5.0,
            until=lambda m: (
                isinstance(m, tuple)
                and m[0] == "message"
                and m[1] == 2
                and json.loads(m[3])["wind_speed"] > 8
            ),
        )
        responses = [m for m in messages if isinstance(m, tuple) and m[0] == "response"]
        assert responses and responses[0][2] == 7
        answer = json.loads(responses[0][3])
        assert answer["ok"] is True and answer["id"] == "w1" and answer["request"] == "weather"
        assert decoded(messages, 2)[-1][1]["wind_speed"] == pytest.approx(9.0)
        # a part of a weather sent through hild ctl is laid over the weather Foxglove asked
        # for (the run's one runtime control), not over the bench's calm
        ctl = hild(
            "ctl",
            "--run-dir",
            str(run_dir),
            "weather",
            "--json",
            '{"current": {"speed": 0.3, "to_deg": 45}}',
        )
        assert ctl.returncode == 0, ctl.stderr
        weather = json.loads(ctl.stdout)["weather"]
        assert (weather["wind_speed"], weather["wind_from_deg"]) == (9.0, 90.0), weather
        assert (weather["current_speed"], weather["current_to_deg"]) == (0.3, 45.0), weather
        messages = client.collect(
            5.0,
            until=lambda m: (
                isinstance(m, tuple)
                and m[0] == "message"
                and m[1] == 2
                and json.loads(m[3])["current_speed"] > 0.2
            ),
        )
        environment = decoded(messages, 2)[-1][1]
        assert environment["wind_speed"] == pytest.approx(9.0)
        assert environment["current_speed"] == pytest.approx(0.3)
    finally:
        client.close()
    summary = daemon.stop()
    assert summary.get("foxglove", {}).get("calls") == 1, summary
    # where it served, also once stopped (the SDK's server reads port 0 after its stop)
    assert summary["foxglove"]["url"] == f"ws://127.0.0.1:{port}", summary


def hild(*args: str) -> subprocess.CompletedProcess:
    return run_hild(*args, timeout=120)


def test_a_bad_address_is_refused_naming_the_option():
    result = hild("run", "--foxglove", "localhost:http", "--duration", "1")
    assert result.returncode == 2
    assert "--foxglove" in result.stderr and "[HOST:]PORT" in result.stderr


def test_layout_names_the_recording_topics():
    result = hild("layout")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    layout = json.loads(text)
    assert "content" in layout
    for needle in (
        '"Map"',
        '"ThreeDee"',
        '"Plot"',
        '"RawMessages"',
        "/location",
        "/fix/gps",
        "/state.sog",
        "/state.heading",
        "/actuators.port.rpm",
        "/bus/jets",
    ):
        assert needle in text, needle
