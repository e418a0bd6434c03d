"""`hild plot` draws what happened: the data each figure draws, read back from its artists.

A synthetic recording written with hild's own writer (deterministic, fast): heading, course
and wind dithering about north, a current about south, a reposition of a kilometre (its moved
sample before its /control message, as in a run), a refused one, a SITL restart back to the
start, a fault, a weather change and a watchdog trip, port and starboard alike, a jitter max
equal to its p99 every other second, and a traffic target. Each figure's lines are checked: no
stroke across north, a gap at the reposition and at the restart (not at the refused one), one
marker per event on every time plot, coinciding traces drawn apart, the max over the p99.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hild.record import channels
from hild.record.writer import RecordWriter

T0_NS = 1_780_315_200 * 10**9
DT = 0.2
N = 600  # 0 .. 119.8 s
MOVED_T = 60.0  # the reposition's first moved sample (1 km east)
RESTART_T = 100.0  # back at the start
EVENTS = {"fault": 20.0, "weather": 40.0, "reposition": 60.1, "watchdog": 80.0, "restart": 99.9}
REFUSED_T = 30.0


def control(kind: str, t: float, ok: bool = True, result: dict | None = None) -> dict:
    return {
        "t": t,
        "utc": "",
        "kind": kind,
        "source": f"mqtt:control/{kind}",
        "request": {},
        "result": {"ok": ok, **(result or {})},
    }


def position(t: float) -> tuple[float, float]:
    if t >= RESTART_T:
        return 2.0 * (t - RESTART_T), 0.0
    return 2.0 * t, 1000.0 if t >= MOVED_T else 0.0


def synthetic(path: Path) -> None:
    writer = RecordWriter(path, {"hild": {"kind": "test"}}, nmea_log=False)
    writer.start()
    for k in range(N):
        t, ns = round(k * DT, 6), T0_NS + k * int(DT * 1e9)
        north, east = position(t)
        dither = 0.03 * math.sin(1.7 * k)  # +-1.7 deg about north: across 0/360 all the time
        writer.put(
            channels.STATE,
            ns,
            {
                "t": t,
                "utc": "",
                "north": north,
                "east": east,
                "heading": dither % (2 * math.pi),
                "cog": (0.5 * dither) % (2 * math.pi),
                "sog": 2.0,
                "u": 2.0,
                "v": 0.0,
                "r": 0.0,
            },
        )
        writer.put(
            channels.ACTUATORS,
            ns,
            {
                "t": t,
                "utc": "",
                "port.rpm": 600.0 + t,
                "port.rpm_commanded": 620.0,
                "starboard.rpm": 600.0 + t,
                "starboard.rpm_commanded": 620.0,
            },
        )
        writer.put(
            channels.ENVIRONMENT,
            ns,
            {
                "t": t,
                "utc": "",
                "wind_speed": 20.0,
                "current_speed": 0.5,
                "wind_from": (0.1 * math.sin(0.9 * k)) % (2 * math.pi),
                "current_to": math.pi + 0.05 * math.sin(k),
            },
        )
        if k % 5 == 0:
            s = k // 5
            writer.put(
                channels.STATS,
                ns,
                {
                    "t": t,
                    "utc": "",
                    "ticks": 5,
                    "overruns": 0,
                    "jitter_p50_ms": 0.1,
                    "jitter_p99_ms": 0.5,
                    "jitter_max_ms": 0.5 if s % 2 else 2.0,
                },
            )
            target = {
                "name": "ferry",
                "mmsi": 257000001,
                "north": 500.0,
                "east": 200.0,
                "range_m": math.hypot(500.0 - north, 200.0 - east),
            }
            writer.put(channels.TRAFFIC, ns, {"t": t, "utc": "", "targets": [target]})
        # each request recorded as answered, after the tick that applied it
        if t == MOVED_T:
            writer.put(channels.CONTROL, ns + 1, control("reposition", EVENTS["reposition"]))
        if t == REFUSED_T:
            writer.put(channels.CONTROL, ns + 1, control("reposition", t, ok=False))
        if t == EVENTS["fault"]:
            writer.put(
                channels.CONTROL,
                ns + 1,
                control("fault", t, result={"actuator": "port", "kind": "stuck"}),
            )
        if t == EVENTS["weather"]:
            writer.put(
                channels.CONTROL,
                ns + 1,
                control("weather", t, result={"weather": {"preset": "gale"}}),
            )
        if t == EVENTS["watchdog"]:
            writer.put(channels.CONTROL, ns + 1, control("watchdog", t))
        if t == round(RESTART_T - DT, 6):  # the restart between two ticks
            writer.put(channels.CONTROL, ns + 1, control("restart", EVENTS["restart"]))
    writer.close()


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> dict:
    from hild.record.plot import figures

    path = tmp_path_factory.mktemp("plots") / "reads-right.mcap"
    synthetic(path)
    return figures(path)


def data_lines(ax) -> list:
    return [ln for ln in ax.get_lines() if not str(ln.get_gid() or "").startswith("event")]


def xy(line) -> tuple[np.ndarray, np.ndarray]:
    return (np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float))


def by_label(ax, label: str):
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
    return line


def time_axes(drawn: dict) -> list:
    """Every axes with simulation time on x."""
    out = []
    for name in ("heading", "speeds", "actuators", "environment", "jitter"):
        out += list(drawn[name].axes)
    return out + [drawn["traffic"].axes[1]]


def gap_times(line) -> np.ndarray:
    x, y = xy(line)
    return x[~np.isfinite(y)]


def test_no_direction_is_drawn_across_north(drawn):
    from hild.record.plot import _wrapped

    raw = _wrapped(np.degrees(0.03 * np.sin(1.7 * np.arange(N))), 0.0)
    assert np.sum(np.abs(np.diff(raw)) > 180) > 100  # (the data do cross, many times)
    direction_axes = [drawn["heading"].axes[0], *drawn["environment"].axes[1:]]
    for ax in direction_axes:
        lo, hi = ax.get_ylim()
        assert hi - lo == 360.0
        for line in data_lines(ax):
            x, y = xy(line)
            both = np.isfinite(y[:-1]) & np.isfinite(y[1:])
            steps = np.abs(np.diff(y))[both]
            assert len(steps) and steps.max() <= 180.0, line.get_label()
            assert np.all((y[np.isfinite(y)] >= lo) & (y[np.isfinite(y)] <= hi))
    # about north, the axis is -180 .. 180: the heading is one line, not a blank of cut ends
    heading = by_label(drawn["heading"].axes[0], "heading")
    assert drawn["heading"].axes[0].get_ylim() == (-180.0, 180.0)
    x, y = xy(heading)
    assert np.all(np.abs(y[np.isfinite(y)]) < 2.0)
    assert [t.get_text() for t in drawn["heading"].axes[0].get_yticklabels()][4] == "0"
    # the current sets about south: its axis is 0 .. 360, where it is one line too
    current = drawn["environment"].axes[2]
    assert current.get_ylim() == (0.0, 360.0)
    y = xy(data_lines(current)[0])[1]
    assert len(y) == N + 2 and np.isfinite(y).sum() == N  # every sample, and two gaps


def test_a_direction_crossing_the_axis_edge_is_cut_there():
    from hild.record.plot import _compass

    t, y = _compass(np.array([0.0, 1.0, 2.0]), np.array([350.0, 10.0, 20.0]), 0.0)
    assert t.tolist() == [0.0, 0.5, 0.5, 0.5, 1.0, 2.0]
    assert y[:2].tolist() == [350.0, 360.0] and math.isnan(y[2]) and y[3:].tolist() == [0, 10, 20]
    t, y = _compass(np.array([0.0, 3.0]), np.array([20.0, 350.0]), 0.0)  # down through north
    assert t.tolist() == [0.0, 2.0, 2.0, 2.0, 3.0]
    assert y[1] == 0.0 and math.isnan(y[2]) and y[3] == 360.0
    # a value held to the next sample (a heading reference) holds up to it, then crosses
    t, y = _compass(np.array([0.0, 1.0]), np.array([350.0, 10.0]), 0.0, held=True)
    assert t.tolist() == [0.0, 1.0, 1.0, 1.0, 1.0] and y[1] == 360.0 and y[3] == 0.0


def test_the_track_and_every_time_series_break_at_a_reposition_and_a_restart(drawn):
    track = by_label(drawn["trajectory"].axes[0], "track")
    east, north = xy(track)
    both = np.isfinite(east[:-1]) & np.isfinite(east[1:])
    steps = np.hypot(np.diff(east), np.diff(north))[both]
    assert steps.max() < 1.0  # no line across the kilometre moved, nor back to the start
    assert np.sum(~np.isfinite(east)) == 2
    own = by_label(drawn["traffic"].axes[0], "own ship")
    assert np.sum(~np.isfinite(xy(own)[0])) == 2
    for ax in time_axes(drawn):
        if ax is drawn["jitter"].axes[0]:
            continue  # (the loop's timing goes on through a reposition)
        for line in data_lines(ax):
            if line.get_label().startswith("heading reference") or len(line.get_xdata()) < 3:
                continue
            gaps = gap_times(line)
            assert MOVED_T in gaps and RESTART_T in gaps, (ax.get_ylabel(), line.get_label())
            assert not np.any(np.abs(gaps - REFUSED_T) < 1.0)  # a refused one moved nothing


def test_each_control_event_is_marked_once_on_every_time_plot(drawn):
    for ax in time_axes(drawn):
        marks = [ln for ln in ax.get_lines() if str(ln.get_gid() or "").startswith("event:")]
        kinds = sorted(str(ln.get_gid()).split(":")[1] for ln in marks)
        assert kinds == sorted(EVENTS), (ax.get_ylabel(), kinds)
        for line in marks:
            kind = str(line.get_gid()).split(":")[1]
            assert np.allclose(line.get_xdata(), EVENTS[kind])
    for name in ("heading", "speeds", "actuators", "environment", "jitter", "traffic"):
        fig = drawn[name]
        labels = [
            t
            for ax in fig.axes
            for t in ax.texts
            if str(t.get_gid() or "").startswith("event-label:")
        ]
        texts = sorted(t.get_text() for t in labels)
        assert texts == sorted(
            [
                "fault port stuck",
                "weather gale",
                "reposition",
                "watchdog mqtt:control/watchdog",
                "restart",
            ]
        ), (name, texts)


def style(line) -> tuple:
    return (line.get_linestyle(), line.get_linewidth(), line.get_marker())


def test_port_and_starboard_alike_both_show(drawn):
    (ax,) = drawn["actuators"].axes
    for suffix in ("", " commanded"):
        port, starboard = by_label(ax, "port" + suffix), by_label(ax, "starboard" + suffix)
        assert np.array_equal(xy(port)[1], xy(starboard)[1], equal_nan=True)  # they coincide
        assert style(port) != style(starboard)
        assert starboard.get_zorder() > port.get_zorder()  # the narrower one on top
        assert starboard.get_linewidth() < port.get_linewidth()


def test_the_jitter_max_is_drawn_over_its_p99(drawn):
    (ax,) = drawn["jitter"].axes
    p99, worst = by_label(ax, "p99"), by_label(ax, "max")
    assert np.sum(xy(worst)[1] == xy(p99)[1]) > 10  # (equal every other second)
    assert worst.get_zorder() > p99.get_zorder()
    assert worst.get_marker() not in ("None", "", None) and style(worst) != style(p99)
    assert worst.get_linewidth() < p99.get_linewidth()  # the p99 shows round it


def test_the_figures_are_written(drawn, tmp_path):
    from hild.record.plot import plot

    mcap = next(iter(drawn.values())).get_suptitle()  # (any figure: the path is the fixture's)
    assert mcap
    path = tmp_path / "again.mcap"
    synthetic(path)
    written = plot(path, tmp_path / "fig")
    assert sorted(p.name for p in written) == sorted(f"{n}.png" for n in drawn)
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_gale_run_with_a_reposition_and_a_fault_plots_them(tmp_path):
    """A real run (gale-hs1, recorded), moved and faulted with `hild ctl` while it runs: the
    track breaks at the reposition, and each time plot marks both events once."""
    import subprocess
    import sys
    import time

    from hild.record.plot import figures
    from tests.endpoints import Daemon

    recording, run_dir = tmp_path / "gale.mcap", tmp_path / "run"
    bench = tmp_path / "gale.toml"
    bench.write_text(f"""
[bench]
name = "gale"
rate_hz = 100
time_scale = 4
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"
[vessel]
profile = "odin"
speed = 5.0
[origin]
latitude = 59.41
longitude = 10.48
[weather]
preset = "gale-hs1"
[[device]]
name = "gps"
type = "gps"
port = "pty://gps"
""")
    daemon = Daemon(str(bench), "--record", str(recording), tmp=tmp_path)

    def ctl(*args: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "hild.cli", "ctl", "--run-dir", str(run_dir), *args],
            check=True,
            capture_output=True,
            timeout=60,
        )

    time.sleep(2.0)
    ctl("reposition", "--north", "800", "--east", "-300")
    time.sleep(1.0)
    ctl("fault", "gps", "dropout", "--duration", "4")
    time.sleep(1.5)
    daemon.stop()
    drawn = figures(recording)
    track = by_label(drawn["trajectory"].axes[0], "track")
    east, north = xy(track)
    both = np.isfinite(east[:-1]) & np.isfinite(east[1:])
    assert np.hypot(np.diff(east), np.diff(north))[both].max() < 10.0  # never the 850 m jump
    assert np.sum(~np.isfinite(east)) == 1
    for name in ("heading", "speeds", "actuators", "environment", "jitter"):
        for ax in drawn[name].axes:
            kinds = sorted(
                str(ln.get_gid()).split(":")[1]
                for ln in ax.get_lines()
                if str(ln.get_gid() or "").startswith("event:")
            )
            assert kinds == ["fault", "reposition"], (name, ax.get_ylabel(), kinds)
