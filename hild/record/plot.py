"""`hild plot`: PNG figures of a recording, one per concern, with matplotlib's object API.

``Figure`` objects and ``savefig`` need no display and keep no global state (ecosystem.md
"Plots"); matplotlib is imported here only, so the daemon never pays for it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hild.config import MISSING, ConfigError
from hild.record import channels
from hild.record.reader import messages

FIGURES = ("trajectory", "traffic", "heading", "speeds", "actuators", "environment", "jitter")
DPI = 110
PLOTTED = (channels.STATE, channels.ACTUATORS, channels.ENVIRONMENT, channels.STATS)


def columns(path: Path) -> dict[str, dict[str, np.ndarray]]:
    """Each channel of the truth and of the loop as columns of numbers, keyed by field; the
    heading references one set per command device, under ``/reference/<device>``."""
    wanted = (channels.STATE, channels.ACTUATORS, channels.ENVIRONMENT, channels.STATS,
              channels.REFERENCE)  # fmt: skip
    rows: dict[str, list[dict]] = defaultdict(list)
    for m in messages(path, wanted):
        topic = m.topic
        if topic == channels.REFERENCE:
            topic = f"{topic}/{m.payload.get('device', '')}"
        rows[topic].append(m.payload)
    out: dict[str, dict[str, np.ndarray]] = {}
    for topic, payloads in rows.items():
        keys = [k for k, v in payloads[0].items() if isinstance(v, int | float)]
        out[topic] = {
            k: np.array([p.get(k, math.nan) for p in payloads], dtype=float) for k in keys
        }
    return out


def traffic_columns(path: Path) -> dict[str, dict[str, np.ndarray]]:
    """Each traffic target's ``/traffic`` reports as columns (t, north, east, range_m, ...),
    keyed by its name; the last report's closest approach under ``min_range_m`` and
    ``min_range_t`` (one value each: the smallest range over every step of the run)."""
    rows: dict[str, list[dict]] = defaultdict(list)
    for m in messages(path, (channels.TRAFFIC,)):
        for report in m.payload.get("targets", []):
            rows[str(report.get("name"))].append({**report, "t": m.payload.get("t", math.nan)})
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, reports in rows.items():
        keys = ("t", "north", "east", "range_m", "cpa_m", "tcpa_s")
        cols = {k: np.array([r.get(k, math.nan) for r in reports], dtype=float) for k in keys}
        last = reports[-1]
        closest = last.get("min_range_m")  # (None before the first step: no range yet)
        cols["min_range_m"] = np.array([math.nan if closest is None else closest], dtype=float)
        cols["min_range_t"] = np.array([last.get("min_range_t", math.nan)], dtype=float)
        out[name] = cols
    return out


def _figure(title: str, rows: int = 1):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.2 * rows + 0.6), dpi=DPI, layout="constrained")
    axes = fig.subplots(rows, 1, sharex=rows > 1, squeeze=False)[:, 0]
    fig.suptitle(title)
    for ax in axes:
        ax.grid(True, alpha=0.4)
    return fig, axes


def trajectory(state: dict, waypoints: Sequence[tuple[float, float]], title: str):
    fig, (ax,) = _figure(f"{title}: trajectory")
    ax.plot(state["east"], state["north"], lw=1.4, label="track")
    ax.plot(state["east"][:1], state["north"][:1], "o", color="tab:green", label="start")
    ax.plot(state["east"][-1:], state["north"][-1:], "s", color="tab:red", label="end")
    if waypoints:
        n0, e0 = float(state["north"][0]), float(state["east"][0])
        north = [n0 + n for n, _ in waypoints]
        east = [e0 + e for _, e in waypoints]
        ax.plot(east, north, "x--", color="tab:orange", ms=9, lw=0.8, label="waypoints")
        for i, (e, n) in enumerate(zip(east, north, strict=True)):
            ax.annotate(f"WP{i}", (e, n), textcoords="offset points", xytext=(5, 5))
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("east [m]")
    ax.set_ylabel("north [m]")
    ax.legend(loc="best")
    return fig


def draw_traffic(ax, state: dict, targets: dict[str, dict], ax_range=None) -> None:
    """On ``ax`` the own track (black) with each target's, each closest approach a dotted line
    between the two ships at that instant; on ``ax_range`` the range to each over time."""
    ax.plot(state["east"], state["north"], lw=1.8, color="black", label="own ship")
    ax.plot(state["east"][:1], state["north"][:1], "o", color="black")
    for i, (name, cols) in enumerate(targets.items()):
        color = f"C{i}"
        ax.plot(cols["east"], cols["north"], lw=1.2, color=color, label=name)
        ax.plot(cols["east"][:1], cols["north"][:1], "o", color=color)
        if ax_range is not None:
            ax_range.plot(cols["t"], cols["range_m"], color=color, label=name)
        t_min, r_min = float(cols["min_range_t"][0]), float(cols["min_range_m"][0])
        if not (math.isfinite(t_min) and math.isfinite(r_min)) or len(cols["t"]) < 2:
            continue
        own_n = float(np.interp(t_min, state["t"], state["north"]))
        own_e = float(np.interp(t_min, state["t"], state["east"]))
        tgt_n = float(np.interp(t_min, cols["t"], cols["north"]))
        tgt_e = float(np.interp(t_min, cols["t"], cols["east"]))
        ax.plot([own_e, tgt_e], [own_n, tgt_n], ":", color=color, lw=1.2)
        ax.plot([tgt_e], [tgt_n], "D", color=color, ms=5)
        ax.annotate(f"{r_min:.0f} m at {t_min:.0f} s", (tgt_e, tgt_n), color=color,
                    textcoords="offset points", xytext=(6, -12))  # fmt: skip
        if ax_range is not None:
            ax_range.plot([t_min], [r_min], "D", color=color, ms=5)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("east [m]")
    ax.set_ylabel("north [m]")
    ax.legend(loc="best")


def traffic(state: dict, targets: dict[str, dict], title: str):
    """The tracks and closest approaches (``draw_traffic``); below, the range to each target
    over time."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 10), dpi=DPI, layout="constrained")
    ax, ax_range = fig.subplots(2, 1, height_ratios=(2, 1))  # (no shared axis: m and s)
    fig.suptitle(f"{title}: traffic and closest approaches")
    for a in (ax, ax_range):
        a.grid(True, alpha=0.4)
    draw_traffic(ax, state, targets, ax_range)
    ax_range.set_xlabel("simulation time [s]")
    ax_range.set_ylabel("range from the own ship [m]")
    ax_range.legend(loc="best")
    return fig


def _compass(t: np.ndarray, angle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Times and angles [deg, 0 .. 360) with a gap where the angle crosses north, so that a
    heading about 0 deg is not drawn as lines across the whole axis."""
    deg = np.mod(np.degrees(np.asarray(angle, dtype=float)), 360.0)
    t = np.asarray(t, dtype=float)
    crossings = np.flatnonzero(np.abs(np.diff(deg)) > 180.0) + 1
    return np.insert(t, crossings, t[crossings]), np.insert(deg, crossings, np.nan)


def heading(state: dict, title: str, references: dict[str, dict] | None = None):
    """Heading and course over ground; each controller's heading reference (HSC) as a step
    line, held from one sentence to the next as the controller holds it."""
    references = references or {}
    what = "heading, reference and course" if references else "heading and course"
    fig, (ax,) = _figure(f"{title}: {what}")
    t = state["t"]
    ax.plot(*_compass(t, state["heading"]), label="heading")
    for device, ref in references.items():
        ax.step(*_compass(ref["t"], ref["heading_ref"]), where="post", lw=1.0,
                label=f"heading reference (HSC from {device})")  # fmt: skip
    moving = state["sog"] > 0.2  # a course over ground means little when lying still
    ax.plot(*_compass(t, np.where(moving, state["cog"], np.nan)), lw=0.8,
            label="course over ground (SOG > 0.2 m/s)")  # fmt: skip
    ax.set_ylim(0, 360)
    ax.set_yticks(range(0, 361, 45))
    ax.set_xlabel("simulation time [s]")
    ax.set_ylabel("angle [deg]")
    ax.legend(loc="best")
    return fig


def speeds(state: dict, title: str):
    fig, axes = _figure(f"{title}: speeds", rows=2)
    t = state["t"]
    axes[0].plot(t, state["sog"], label="speed over ground")
    axes[0].plot(t, state["u"], lw=0.9, label="surge u")
    axes[0].plot(t, state["v"], lw=0.9, label="sway v")
    axes[0].set_ylabel("speed [m/s]")
    axes[0].legend(loc="best")
    axes[1].plot(t, np.degrees(state["r"]), color="tab:purple", label="yaw rate r")
    axes[1].set_ylabel("yaw rate [deg/s]")
    axes[1].set_xlabel("simulation time [s]")
    axes[1].legend(loc="best")
    return fig


def actuators(act: dict, title: str):
    """Per actuator quantity (speed, angle, deflector): commanded dashed, actual solid."""
    quantities = [k for k in act if k.count(".") == 1 and f"{k}_commanded" in act]
    kinds = sorted({k.split(".")[1] for k in quantities}, key=["rpm", "cmd", "nozzle",
                   "azimuth", "deflector"].index)  # fmt: skip
    units = {
        "rpm": "speed [rpm]",
        "cmd": "command [-1, 1]",
        "nozzle": "nozzle [deg]",
        "azimuth": "azimuth [deg]",
        "deflector": "deflector [-1 astern, 1 ahead]",
    }
    fig, axes = _figure(f"{title}: actuators, commanded (dashed) and actual",
                        rows=max(1, len(kinds)))  # fmt: skip
    t = act["t"]
    for ax, kind in zip(axes, kinds, strict=False):
        angle = kind in ("nozzle", "azimuth")
        for i, key in enumerate(k for k in quantities if k.endswith("." + kind)):
            scale = (lambda x: np.degrees(x)) if angle else (lambda x: x)
            color = f"C{i}"
            ax.plot(t, scale(act[key]), color=color, label=f"{key.split('.')[0]}")
            ax.plot(t, scale(act[f"{key}_commanded"]), "--", color=color, lw=0.9)
        ax.set_ylabel(units[kind])
        ax.legend(loc="best")
    axes[-1].set_xlabel("simulation time [s]")
    return fig


def environment(env: dict, title: str):
    fig, axes = _figure(f"{title}: wind and current", rows=2)
    t = env["t"]
    axes[0].plot(t, env["wind_speed"], label="true wind at 10 m")
    axes[0].plot(t, env["current_speed"], label="current")
    axes[0].set_ylabel("speed [m/s]")
    axes[0].legend(loc="best")
    axes[1].plot(t, np.degrees(env["wind_from"]), label="wind from")
    axes[1].plot(t, np.degrees(env["current_to"]), label="current to")
    axes[1].set_ylim(0, 360)
    axes[1].set_ylabel("direction [deg]")
    axes[1].set_xlabel("simulation time [s]")
    axes[1].legend(loc="best")
    return fig


def jitter(stats: dict, title: str):
    fig, (ax,) = _figure(f"{title}: tick lateness per simulated second")
    t = stats["t"]
    for key, label in (("jitter_max_ms", "max"), ("jitter_p99_ms", "p99"),
                       ("jitter_p50_ms", "p50")):  # fmt: skip
        ax.plot(t, stats[key], label=label)
    overran = stats["overruns"] > 0
    if np.any(overran):
        ax.plot(t[overran], stats["jitter_max_ms"][overran], "rx", label="seconds with overruns")
    ax.set_yscale("log")
    ax.set_xlabel("simulation time [s]")
    ax.set_ylabel("lateness [ms]")
    ax.legend(loc="best")
    return fig


def plot(path: Path, out_dir: Path | None = None,
         waypoints: Sequence[tuple[float, float]] = ()) -> list[Path]:  # fmt: skip
    """Write the figures the recording has data for; returns their paths."""
    path = Path(path)
    out_dir = Path(out_dir) if out_dir else path.with_name(path.stem + "-plots")
    data = columns(path)
    title = path.stem
    figures = {}
    state = data.get(channels.STATE)
    if state is not None:
        figures["trajectory"] = trajectory(state, waypoints, title)
        targets = traffic_columns(path)
        if targets:
            figures["traffic"] = traffic(state, targets, title)
        prefix = channels.REFERENCE + "/"
        references = {k[len(prefix) :]: v for k, v in data.items() if k.startswith(prefix)}
        figures["heading"] = heading(state, title, references)
        figures["speeds"] = speeds(state, title)
    if channels.ACTUATORS in data:
        figures["actuators"] = actuators(data[channels.ACTUATORS], title)
    if channels.ENVIRONMENT in data:
        figures["environment"] = environment(data[channels.ENVIRONMENT], title)
    if channels.STATS in data:
        figures["jitter"] = jitter(data[channels.STATS], title)
    if not figures:
        raise ConfigError(path, "", MISSING, "a recording with something to plot: messages on "
                          f"{', '.join(PLOTTED)} (it has none; hild inspect {path} shows what "
                          "it holds)")  # fmt: skip
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in figures.items():
        target = out_dir / f"{name}.png"
        fig.savefig(target)
        written.append(target)
    return written
