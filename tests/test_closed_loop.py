"""Closed loop over the wire: `hild run` and `hild pilot` as two processes, as a user runs them.

The daemon runs the built-in default bench (Odin off Horten, its GNSS compass,
anemometer and speed log, the jets' control unit) moved onto free ports, ten
times faster than real time; the pilot reads the daemon's UDP sentences and
sends TRC and ROR (or Odin's own PHLDC) to the jets' UDP port. The mission is thesis ch. 5's: four
waypoints (the default 200 m square), in the thesis' scenario 1 (`calm`) and
scenario 2 (`gale-calm-sea`: 20 m/s wind and 0.5 m/s current from the north).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hild.pilot.mission import default_waypoints
from hild.record import channels, plot
from hild.record.reader import messages
from tests.endpoints import Daemon, free_udp_port
from tests.test_daemon import default_bench_on_free_ports

TIME_SCALE = 10.0
# The pilot's acceptance radius, its default: a waypoint counts as passed only inside it (the
# pilot reports "by": "radius"); passing one by its perpendicular instead ("by": "passed")
# fails the test. The in-process flights of test_pilot.py come within 9.7-14.9 m of the truth.
RADIUS_M = 15.0
MISSION_LIMIT_S = 400.0  # sensor time; the square takes about 170 s at 5 m/s


@pytest.mark.parametrize(
    ("weather", "protocol"), [("calm", "iec"), ("gale-calm-sea", "iec"), ("calm", "phldc")]
)
def test_hild_pilot_sails_the_mission_against_hild_run(tmp_path, weather, protocol):
    sensors, commands = free_udp_port(), free_udp_port()
    bench = Path(default_bench_on_free_ports(tmp_path, sensors, commands))
    text = bench.read_text()
    assert 'preset = "calm"' in text
    # The jets' lease runs on simulated time: at --time-scale 10 the default 0.5 s is 50 ms of
    # wall time, which a Python controller on a loaded two-core machine does not always hold
    # (a stall of the pilot's process trips it). 3 s of the run's time is 0.3 s of wall time,
    # the margin of a 0.5 s lease's pilot at 1x less its 10 Hz re-send; the watchdog itself is
    # tested in test_bus*.py and test_one_world.py.
    assert text.rstrip().endswith(
        'ports = ["pty://jets", "udp://127.0.0.1:' + f'{commands}?listen=1"]'
    )
    text += "[device.settings]\nwatchdog_s = 3.0\n"
    bench.write_text(text.replace('preset = "calm"', f'preset = "{weather}"'))
    pilot = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hild.cli",
            "pilot",
            "--nmea",
            f"udp://127.0.0.1:{sensors}",
            "--commands",
            f"udp://127.0.0.1:{commands}",
            "--protocol",
            protocol,
            "--timeout",
            str(MISSION_LIMIT_S),
            "--time-scale",
            str(TIME_SCALE),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    record = tmp_path / "mission.mcap"
    daemon = None
    try:
        daemon = Daemon(
            str(bench),
            "--time-scale",
            str(TIME_SCALE),
            "--seed",
            "1",
            "--start-time",
            "2026-06-01T12:00:00Z",
            "--duration",
            str(MISSION_LIMIT_S + 60.0),
            "--run-dir",
            str(tmp_path / "run"),
            "--record",
            str(record),
            tmp=tmp_path,
        )
        out, err = pilot.communicate(timeout=MISSION_LIMIT_S / TIME_SCALE + 60.0)
    finally:
        if pilot.poll() is None:
            pilot.kill()
            pilot.communicate()
        run = daemon.stop() if daemon is not None else None
    assert pilot.returncode == 0, (out[-3000:], err[-3000:])
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["event"] == "pilot.summary" and summary["completed"] is True
    reached = summary["waypoints"]
    assert [(w["index"], w["lap"], w["by"]) for w in reached] == [
        (i, 0, "radius") for i in range(4)
    ], reached
    assert all(w["closest_m"] <= RADIUS_M for w in reached), reached
    # 4 x 200 m at 5 m/s is 160 s; the start from rest and the corners add some, the current
    # (0.5 m/s on two legs) a little: well over 200 s would mean the boat crawled or wandered.
    assert 120.0 < reached[-1]["t"] < 230.0, reached
    assert summary["malformed"] == 0
    # The daemon applied what the pilot sent and refused nothing.
    assert run is not None and run["reason"] == "SIGTERM"
    assert run["commands_applied"] > 300 and run["commands_rejected"] == 0, run
    jets = run["devices"]["jets"]
    assert jets["watchdog_trips"] == 0 and jets["rejected_total"] == 0, jets
    # the pilot's last (neutral) command reached the jets: idle RPM, deflector and nozzle at zero
    for side in ("port", "starboard"):
        assert run["actuators"][side]["commanded"] == [400.0, 0.0, 0.0], run["actuators"]
    assert jets["references"] > 100, jets  # the pilot's HSC with each command set
    check_the_recording(tmp_path, record, out)


def check_the_recording(tmp_path: Path, record: Path, pilot_out: str) -> None:
    """The recording shows the mission: the true track within the radius of every waypoint,
    every command line decoded, the pilot's heading references, and `hild plot` draws it."""
    state = [m.payload for m in messages(record, [channels.STATE])]
    start = state[0]
    corners = default_waypoints(start["heading"])
    for north, east in corners:
        closest = min(
            math.hypot(s["north"] - start["north"] - north, s["east"] - start["east"] - east)
            for s in state
        )
        assert closest <= RADIUS_M, (north, east, closest)
    bus = [m.payload for m in messages(record, [channels.BUS + "jets"])]
    assert len(bus) > 300 and all(b["ok"] for b in bus)
    # every reference the pilot printed (to 0.1 deg, as its HSC carries it) was recorded
    printed = [float(x) for x in re.findall(r"\(ref (\d+\.\d)\)", pilot_out)]
    references = [m.payload for m in messages(record, [channels.REFERENCE])]
    recorded = {round(math.degrees(r["heading_ref"]), 1) % 360.0 for r in references}
    assert len(printed) >= 10, pilot_out  # a report every 10 s of a mission of over 120 s
    assert set(printed) <= recorded, (set(printed) - recorded, len(recorded))
    assert {r["device"] for r in references} == {"jets"}
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "hild.cli",
            "plot",
            str(record),
            "--waypoints",
            "pilot",
            "--out",
            str(tmp_path / "figures"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    names = {Path(x).stem for x in p.stdout.split()}
    assert names == {"trajectory", "heading", "speeds", "actuators", "environment", "jitter"}
    # the heading figure draws the reference: a step line with a point per recorded reference
    data = plot.columns(record)
    jets = data[f"{channels.REFERENCE}/jets"]
    figure = plot.heading(data[channels.STATE], "mission", {"jets": jets})
    (line,) = [x for x in figure.axes[0].lines if x.get_label().startswith("heading reference")]
    y = np.asarray(line.get_ydata(), dtype=float)
    # (each crossing of the axis's edge adds a point on each edge and a NaN between them)
    crossings = np.count_nonzero(np.isnan(y))
    assert line.get_drawstyle() == "steps-post"
    assert np.count_nonzero(~np.isnan(y)) == len(references) + 2 * crossings
    # the mission starts heading north: a reference that crosses the axis's edge (in the gale
    # it may) breaks the line instead of drawing a stroke across the axis
    assert np.nanmax(np.abs(np.diff(y))) < 180.0
