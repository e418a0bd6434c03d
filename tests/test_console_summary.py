"""`run.summary` on a console: a short block of readable lines, the JSON form unchanged.

Issue 55: on a terminal the summary was one line of several kilobytes of nested dict reprs.
The figures the block shows are checked against a JSON run of the same bench: a fixed start
time, seed and duration make them the same in both runs (ticks, sentences, the boat's place,
the traffic's closest approaches); only the wall-clock figures (jitter, CPU) differ.
"""

from __future__ import annotations

import json
import re
import textwrap

import pytest
import structlog

from hild.log_console import WIDTH, ConsoleRenderer
from tests.forked_cli import run_hild

BENCH = """
[bench]
name = "summary"
rate_hz = 50
seed = 0
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"

[vessel]
profile = "odin"
speed = 5.5

[vessel.commands]
"port.rpm" = 1800
"starboard.rpm" = 1800

[origin]
latitude = 59.41
longitude = 10.48

[[traffic]]
file = "busy-fjord"

[[device]]
name = "gps"
type = "gps"
ports = ["pty://gps"]

[[device]]
name = "ais"
type = "ais"
ports = ["pty://ais"]

[[device]]
name = "jets"
type = "jet-controller"
ports = ["pty://jets"]
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, str]:
    """The same run's stderr in each format (one after the other: one run directory)."""
    tmp = tmp_path_factory.mktemp("console-summary")
    bench = tmp / "bench.toml"
    bench.write_text(textwrap.dedent(BENCH.format(run_dir=tmp / "run")))
    out = {}
    for fmt in ("json", "console"):
        run = run_hild(
            "run",
            str(bench),
            "--duration",
            "2",
            "--time-scale",
            "20",
            "--record",
            str(tmp / f"{fmt}.mcap"),
            "--log-format",
            fmt,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        out[fmt] = run.stderr
    out["record"] = str(tmp / "console.mcap")
    return out


def json_summary(stderr: str) -> dict:
    (line,) = [line for line in stderr.splitlines() if '"run.summary"' in line]
    return json.loads(line)


def console_block(stderr: str) -> list[str]:
    """The summary's header line and the indented lines under it."""
    lines = stderr.splitlines()
    (start,) = [i for i, line in enumerate(lines) if "event='run.summary'" in line]
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        block.append(line)
    return block


def rows_of(block: list[str]) -> dict[str, list[str]]:
    """label -> its text lines (a line without a label continues the row above)."""
    rows: dict[str, list[str]] = {}
    label = ""
    for line in block[1:]:
        body = line[2:]
        if not body.startswith(" "):
            label, _, body = body.partition(" ")
        rows.setdefault(label, []).append(body.strip())
    return rows


def one(value: float) -> str:
    return f"{value + 0.0:.1f}"


def test_the_console_summary_is_a_short_block_of_the_json_runs_figures(runs):
    s = json_summary(runs["json"])
    block = console_block(runs["console"])
    assert block[0].startswith("timestamp='") and "level='info'" in block[0]
    assert block[0].endswith("event='run.summary' reason='duration'"), block[0]
    assert 8 <= len(block) <= 20, "\n".join(block)
    assert all(len(line) <= WIDTH for line in block), "\n".join(block)
    assert not any("{" in line or "}" in line for line in block), "\n".join(block)

    rows = rows_of(block)
    assert rows["time"][0].startswith(f"{one(s['t'])} s simulated in "), rows["time"]
    assert rows["loop"][0].startswith(f"{s['ticks']} ticks, "), rows["loop"]
    applied, refused = s["commands_applied"], s["commands_rejected"]
    assert rows["commands"][0].startswith(f"{applied} applied, {refused} refused"), rows
    jets = s["devices"]["jets"]
    assert rows["jets"] == [
        f"{jets['lines']} lines, {jets['commands']} commands, {jets['rejected_total']} refused, "
        f"{jets['clamped']} clamped; watchdog {jets['watchdog']}, "
        f"{jets['watchdog_trips']} trips; {jets['sentences']} feedback sentences"
    ]
    sensors = {k: d for k, d in s["devices"].items() if k != "jets"}
    assert rows["sentences"] == [", ".join(f"{k} {d['sentences']}" for k, d in sensors.items())]
    north, east, _ = s["position_ned"]
    assert rows["position"] == [
        f"N {one(north)} m, E {one(east)} m, heading {one(s['heading_deg'])} deg"
    ]
    nearest = min(s["traffic"].items(), key=lambda kv: kv[1]["min_range_m"])
    name, target = nearest
    expected = f"closest: {name} {one(target['min_range_m'])} m at {one(target['at_t'])} s, "
    assert rows["traffic"][0].startswith(expected), rows["traffic"]
    assert re.search(r" \(\+\d more\)$", rows["traffic"][0]), rows["traffic"]  # (6 targets)
    port, starboard = rows["actuators"]
    actual = s["actuators"]["port"]["actual"][0]
    assert port.startswith(f"port: speed {one(actual)}, angle "), port
    assert starboard.startswith("starboard: ")
    assert rows["ports"][0].startswith(f"{len(s['ports'])} ports: ")
    record = " ".join(rows["record"])  # (a long path on a line of its own)
    assert record.startswith(runs["record"]) and record.endswith(" dropped, complete"), record
    assert " ".join(rows["ctl"]).endswith(" 0 requests")


def test_the_other_console_events_are_key_value_lines_as_before(runs):
    start = [line for line in runs["console"].splitlines() if "event='run.start'" in line]
    assert len(start) == 1
    assert re.match(r"timestamp='[^']+' level='info' event='run.start' bench='summary' ", start[0])
    event = {"event": "port.closed", "level": "info", "timestamp": "t", "stats": {"a": 1}}
    before = structlog.processors.KeyValueRenderer(key_order=["timestamp", "level", "event"])
    assert ConsoleRenderer()(None, "info", dict(event)) == before(None, "info", dict(event))


def test_the_json_summary_is_still_one_line_of_json_with_its_keys(runs):
    lines = [line for line in runs["json"].splitlines() if "run.summary" in line]
    assert len(lines) == 1
    s = json.loads(lines[0])
    assert s["event"] == "run.summary" and s["level"] == "info" and s["reason"] == "duration"
    for key in ("t", "ticks", "overruns", "loop_wall_s", "cpu_percent", "commands_applied"):
        assert isinstance(s[key], int | float), key
    for key in ("devices", "ports", "actuators", "traffic", "record", "ctl"):
        assert isinstance(s[key], dict) and s[key], key
    assert all(isinstance(d, dict) for d in s["devices"].values())
    assert s["devices"]["jets"]["watchdog_trips"] == 0 and "sentences_failed" in s["devices"]["gps"]
    assert isinstance(s["position_ned"], list) and len(s["position_ned"]) == 3
    assert "\n" not in lines[0] and not any(
        line.startswith("  ") for line in runs["json"].splitlines()
    )


def test_a_fleet_and_keys_it_does_not_know_are_flattened_and_long_lists_cut():
    boats = {
        name: {
            "position_ned": [10.0 * i, -5.0, 0.0],
            "heading_deg": 90.0,
            "traffic": {"ferry": {"mmsi": 1, "min_range_m": 200.0 + i, "at_t": 3.0}},
        }
        for i, name in enumerate(("alpha", "bravo"))
    }
    summary = {
        "timestamp": "2026-06-01T12:00:00Z",
        "level": "info",
        "event": "run.summary",
        "reason": "SIGTERM",
        "t": 12.25,
        "loop_wall_s": 12.3,
        "position_ned": [0.0, -5.0, 0.0],
        "heading_deg": 90.0,
        "boats": boats,
        "actuators": {"port": {"commanded": [1.0, 0.0, 0.0], "actual": [0.5, 0.0, 0.0]}},
        "future": {"nested": {"deep": 1.23456, "many": list(range(50))}, "empty": {}},
        "big": {f"key{i}": i for i in range(60)},
    }
    text = ConsoleRenderer()(None, "info", dict(summary))
    block = text.splitlines()
    assert all(len(line) <= WIDTH for line in block), text
    assert "{" not in text and "}" not in text, text
    assert "  time       12.2 s simulated in 12.3 s wall (1.0x real time)" in block  # (12.25)
    rows = rows_of(block)
    assert rows["alpha"] == [
        "N 0.0 m, E -5.0 m, heading 90.0 deg",
        "closest: ferry 200.0 m at 3.0 s",
    ]
    assert rows["bravo"][0] == "N 10.0 m, E -5.0 m, heading 90.0 deg"
    assert "position" not in rows  # (the first boat's, told on its own line)
    assert rows["actuators"][0].startswith("alpha port: speed 0.5, ")
    assert rows["future"] == ["nested.deep=1.235, nested.many=[0 1 2 (+47 more)], empty=(empty)"]
    assert re.fullmatch(r"key0=0, key1=1, .* \(\+\d+ more\)", rows["big"][0]), rows["big"]
