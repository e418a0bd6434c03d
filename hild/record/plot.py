"""`hild plot`: PNG figures of a recording, one per concern, with matplotlib's object API.

``Figure`` objects and ``savefig`` need no display and keep no global state (ecosystem.md
"Plots"); matplotlib is imported here only, so the daemon never pays for it.

The figures are drawn so that they read right: an angle is never drawn as a stroke across
north (each trace is cut at the axis's edge, and the axis is 0 .. 360 or -180 .. 180, whichever
crosses its edge less); the track and every time series have a gap where the vessel was moved
(a reposition or an ArduPilot SITL restart on ``/control``, or a jump no vessel sails); each
control event applied (weather, fault, reposition, watchdog trip, restart, traffic) is a
labelled vertical line on every time plot; traces that coincide differ in width, style and
marker; the jitter's max is drawn over its p99.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hild.config import MISSING, ConfigError
from hild.record import breaks, channels
from hild.record.reader import messages

FIGURES = ("trajectory", "traffic", "heading", "speeds", "actuators", "environment", "jitter")
DPI = 110
PLOTTED = (channels.STATE, channels.ACTUATORS, channels.ENVIRONMENT, channels.STATS)
# /control kinds marked on the time plots (each one applied; a refused request changed nothing)
EVENT_COLORS = {
    "weather": "tab:blue",
    "fault": "tab:red",
    "reposition": "tab:purple",
    "watchdog": "tab:orange",
    "restart": "tab:brown",
    "traffic": "tab:gray",
}
EVENT_GID = "event"  # the gid of each event's line (``event:<kind>``), so that tests find them
CPA_LABEL_GID = "cpa-label"  # the gid of each closest approach's label (``cpa-label:<target>``)


def columns(path: Path) -> dict[str, dict[str, np.ndarray]]:
    """Each channel of the truth and of the loop as columns of numbers, keyed by field; the
    heading references one set per command device, under ``/reference/<device>``."""
    wanted = (
        channels.STATE,
        channels.ACTUATORS,
        channels.ENVIRONMENT,
        channels.STATS,
        channels.REFERENCE,
    )
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


@dataclass(frozen=True, slots=True)
class Event:
    """A control event applied, as the time plots mark it."""

    t: float  # simulation time [s]
    kind: str  # a key of EVENT_COLORS
    label: str  # short: "fault port stuck", "weather gale", "watchdog pilot"


def _event_label(kind: str, payload: dict) -> str:
    result = payload.get("result") or {}
    if kind == "fault":
        what = result.get("actuator") or result.get("device")
        return " ".join(str(x) for x in ("fault", what, result.get("kind")) if x)
    if kind == "weather":
        weather = result.get("weather")
        preset = weather.get("preset") if isinstance(weather, dict) else None
        return f"weather {preset}" if preset else "weather"
    if kind == "watchdog" and payload.get("source"):
        return f"watchdog {payload['source']}"
    return kind


def control_events(path: Path) -> list[Event]:
    """Each control event applied (``/control`` with ``result.ok``; a refused request changed
    nothing), in time order: weather, faults, repositions, traffic, watchdog trips, restarts."""
    out = []
    for m in messages(path, (channels.CONTROL,)):
        p = m.payload
        kind, result, t = p.get("kind"), p.get("result"), p.get("t")
        if kind not in EVENT_COLORS or not isinstance(result, dict) or not result.get("ok"):
            continue
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
            continue
        out.append(Event(float(t), str(kind), _event_label(str(kind), p)))
    return sorted(out, key=lambda e: e.t)


def track_breaks(state: dict, events: Sequence[Event] = ()) -> np.ndarray:
    """Indices of the /state samples that start a new piece of the track
    (hild/record/breaks.py)."""
    t, north, east = state["t"], state["north"], state["east"]
    steps = np.hypot(np.diff(north), np.diff(east))  # steps[i]: from sample i to i + 1
    return breaks.track_breaks(t, steps, [e.t for e in events if e.kind in breaks.BREAK_KINDS])


def with_gaps(
    cols: dict[str, np.ndarray], times: Sequence[float] | np.ndarray, at: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """The columns with a row of NaN (its ``t`` the break's time) before the first sample at
    or after each of ``times`` (or before the sample indices ``at``), so that a line drawn
    through them has a gap there. A break before the first sample or after the last is none."""
    t = cols.get("t")
    times = np.asarray(times, dtype=float)
    if t is None or not len(times):
        return cols
    if at is None:
        at = np.searchsorted(t, times, side="left")
    keep = (at > 0) & (at < len(t))
    at, times = at[keep], times[keep]
    return {
        k: v if len(v) != len(t) else np.insert(v, at, times if k == "t" else np.nan)
        for k, v in cols.items()
    }


def _wrapped(deg: np.ndarray, low: float) -> np.ndarray:
    return np.mod(deg - low, 360.0) + low


def compass_low(*traces: np.ndarray) -> float:
    """The lower edge of a direction axis, 0 (0 .. 360) or -180 (-180 .. 180): whichever edge
    the traces (degrees) cross less often, so that a heading about north reads as one line."""

    def crossings(low: float) -> int:
        return sum(int(np.sum(np.abs(np.diff(_wrapped(d, low))) > 180.0)) for d in traces)

    return -180.0 if crossings(-180.0) < crossings(0.0) else 0.0


def _compass(
    t: np.ndarray, deg: np.ndarray, low: float = 0.0, held: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Times and angles [deg, ``low`` .. ``low`` + 360) with each step across the axis's edge
    cut there: the line runs (the short way round) to the edge it leaves by, breaks (NaN), and
    comes in from the other edge, so that no stroke is drawn across the axis. ``held``: a value
    held to the next sample (``drawstyle="steps-post"``), the crossing at that sample's time."""
    t = np.asarray(t, dtype=float)
    y = _wrapped(np.asarray(deg, dtype=float), low)
    cross = np.flatnonzero(np.abs(np.diff(y)) > 180.0)
    if not len(cross):
        return t, y
    a, b = y[cross], y[cross + 1]
    up = b < a  # out over the top edge, in from the bottom
    short = np.where(up, b + 360.0 - a, b - 360.0 - a)  # the step the short way round
    leave = np.where(up, low + 360.0, low)
    enter = np.where(up, low, low + 360.0)
    tx = t[cross + 1] if held else t[cross] + (leave - a) / short * (t[cross + 1] - t[cross])
    at = np.repeat(cross + 1, 3)
    ts = np.column_stack([tx, tx, tx]).ravel()
    ys = np.column_stack([leave, np.full_like(tx, np.nan), enter]).ravel()
    return np.insert(t, at, ts), np.insert(y, at, ys)


def _compass_axis(ax, low: float, label: str) -> None:
    ticks = np.arange(low, low + 361.0, 45.0)
    ax.set_ylim(low, low + 360.0)
    ax.set_yticks(ticks, [f"{v if 0.0 <= v <= 360.0 else v % 360.0:.0f}" for v in ticks])
    ax.set_ylabel(label)


def mark_events(axes, events: Sequence[Event]) -> None:
    """On each of ``axes`` (time on x), a vertical line at each event (gid ``event:<kind>``);
    on the first, its label, staggered down where events crowd together."""
    if not events:
        return
    for ax in axes:
        for e in events:
            ax.axvline(
                e.t,
                color=EVENT_COLORS[e.kind],
                ls=(0, (4, 2)),
                lw=1.0,
                alpha=0.85,
                zorder=1.5,
                gid=f"{EVENT_GID}:{e.kind}",
            )
    ax = axes[0]
    lo, hi = ax.dataLim.intervalx
    crowd = 0.04 * (hi - lo) if np.isfinite(hi - lo) and hi > lo else 0.0
    last, level = -math.inf, 0
    for e in events:
        level = (level + 1) % 4 if e.t - last < crowd else 0
        last = e.t
        ax.text(
            e.t,
            0.98 - 0.22 * level,
            e.label,
            transform=ax.get_xaxis_transform(),
            rotation=90,
            ha="right",
            va="top",
            fontsize=7,
            color=EVENT_COLORS[e.kind],
            gid=f"{EVENT_GID}-label:{e.kind}",
        )


def _figure(title: str, rows: int = 1):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.2 * rows + 0.6), dpi=DPI, layout="constrained")
    axes = fig.subplots(rows, 1, sharex=rows > 1, squeeze=False)[:, 0]
    fig.suptitle(title)
    for ax in axes:
        ax.grid(True, alpha=0.4)
    return fig, axes


def trajectory(state: dict, waypoints: Sequence[tuple[float, float]], title: str):
    """The track (``state`` with its gaps, ``with_gaps``): a reposition is no line."""
    fig, (ax,) = _figure(f"{title}: trajectory")
    ax.plot(state["east"], state["north"], lw=1.4, label="track")
    finite = np.flatnonzero(np.isfinite(state["north"]) & np.isfinite(state["east"]))
    first, end = finite[:1], finite[-1:]
    ax.plot(state["east"][first], state["north"][first], "o", color="tab:green", label="start")
    ax.plot(state["east"][end], state["north"][end], "s", color="tab:red", label="end")
    moved = np.flatnonzero(~np.isfinite(state["north"][:-1])) + 1  # (after each gap)
    if len(moved):
        ax.plot(
            state["east"][moved],
            state["north"][moved],
            "D",
            mfc="none",
            color="tab:purple",
            label="moved here (reposition, restart)",
        )
    if waypoints and len(first):
        n0, e0 = float(state["north"][first[0]]), float(state["east"][first[0]])
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
    own = np.isfinite(state["north"]) & np.isfinite(state["east"])  # (not a track's gaps)
    ax.plot(state["east"][own][:1], state["north"][own][:1], "o", color="black")
    for i, (name, cols) in enumerate(targets.items()):
        color = f"C{i}"
        ax.plot(cols["east"], cols["north"], lw=1.2, color=color, label=name)
        ax.plot(cols["east"][:1], cols["north"][:1], "o", color=color)
        if ax_range is not None:
            ax_range.plot(cols["t"], cols["range_m"], color=color, label=name)
        t_min, r_min = float(cols["min_range_t"][0]), float(cols["min_range_m"][0])
        if not (math.isfinite(t_min) and math.isfinite(r_min)) or len(cols["t"]) < 2:
            continue
        fin = np.isfinite(cols["north"]) & np.isfinite(cols["east"])
        own_n = float(np.interp(t_min, state["t"][own], state["north"][own]))
        own_e = float(np.interp(t_min, state["t"][own], state["east"][own]))
        tgt_n = float(np.interp(t_min, cols["t"][fin], cols["north"][fin]))
        tgt_e = float(np.interp(t_min, cols["t"][fin], cols["east"][fin]))
        ax.plot([own_e, tgt_e], [own_n, tgt_n], ":", color=color, lw=1.2)
        ax.plot([tgt_e], [tgt_n], "D", color=color, ms=5)
        ax.annotate(
            f"{r_min:.0f} m at {t_min:.0f} s",
            (tgt_e, tgt_n),
            color=color,
            textcoords="offset points",
            xytext=(6, -12),  # (placed clear of the tracks once the figure is laid out)
            gid=f"{CPA_LABEL_GID}:{name}",
            in_layout=False,
        )
        if ax_range is not None:
            ax_range.plot([t_min], [r_min], "D", color=color, ms=5)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("east [m]")
    ax.set_ylabel("north [m]")
    ax.legend(loc="best")


def traffic(state: dict, targets: dict[str, dict], title: str, events: Sequence[Event] = ()):
    """The tracks and closest approaches (``draw_traffic``); below, the range to each target
    over time."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 10), dpi=DPI, layout="constrained")
    ax, ax_range = fig.subplots(2, 1, height_ratios=(2, 1))  # (no shared axis: m and s)
    fig.suptitle(f"{title}: traffic and closest approaches")
    for a in (ax, ax_range):
        a.grid(True, alpha=0.4)
    draw_traffic(ax, state, targets, ax_range)
    mark_events([ax_range], events)
    ax_range.set_xlabel("simulation time [s]")
    ax_range.set_ylabel("range from the own ship [m]")
    ax_range.legend(loc="best")
    place_labels_clear(fig, ax)
    return fig


# --- labels clear of the tracks -------------------------------------------------------------
# Where a label may go from its point: eight directions, the old place (below right) first, at
# growing distances [pt]; the first place that covers nothing wins.
LABEL_DIRECTIONS = ((1, -1), (1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1))
LABEL_DISTANCES_PT = (6.0, 12.0, 24.0, 40.0, 64.0)
LABEL_PAD_PX = 2.0  # the room kept around a label's text
OUTSIDE_AXES = 1000  # the cost of a place outside the axes: worse than any overlap


def place_labels_clear(fig, ax, labels: Sequence | None = None) -> None:
    """Move each of ``labels`` (annotations of ``ax``; by default its closest approaches',
    ``CPA_LABEL_GID``) to a place near its point where its text covers no line or marker, nor
    another label nor the legend, inside the axes: the first clear one of ``LABEL_DIRECTIONS`` x
    ``LABEL_DISTANCES_PT``, else the one covering least.

    Placed on the laid-out figure (constrained layout and the equal aspect settle at a draw); the
    labels are out of the layout and the legend stays where it was drawn, so the next draw
    (``savefig``) puts everything where it was placed. Deterministic: no randomness, a fixed
    order of places and ties to the first."""
    if labels is None:
        labels = [t for t in ax.texts if str(t.get_gid() or "").startswith(CPA_LABEL_GID + ":")]
    if not labels:
        return
    fig.draw_without_rendering()  # (extents below: with the renderer a draw uses)
    px_per_pt = fig.dpi / 72.0
    lines = [_drawn_line(line, px_per_pt) for line in ax.get_lines() if line.get_visible()]
    taken = []
    legend = ax.get_legend()
    if legend is not None:
        box = legend.get_window_extent()
        corner = ax.transAxes.inverted().transform(box.p0)
        legend.set_loc((float(corner[0]), float(corner[1])))  # (held: drawn there again)
        taken.append(box)
    frame = ax.get_window_extent()
    for label in labels:
        taken.append(_place(label, lines, taken, frame))


def _drawn_line(line, px_per_pt: float) -> tuple[np.ndarray, bool, float, float]:
    """A line as drawn, in display pixels: its points, whether they are joined, the half width
    of its stroke and the radius of its markers."""
    xy = line.get_transform().transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
    joined = line.get_linestyle() not in ("None", "none", "", " ")
    marker = 0.0 if line.get_marker() in (None, "None", "none", "", " ") else line.get_markersize()
    return xy, joined, 0.5 * line.get_linewidth() * px_per_pt, 0.5 * marker * px_per_pt


def _place(label, lines, taken, frame):
    """Put ``label`` at its first clear place (else its least covering one); its box."""
    best = None
    for distance in LABEL_DISTANCES_PT:
        for dx, dy in LABEL_DIRECTIONS:
            _set_place(label, distance, dx, dy)
            box = label.get_window_extent()
            cost = _cost(box, lines, taken, frame)
            if best is None or cost < best[0]:
                best = (cost, distance, dx, dy)
            if cost == 0:
                return box
    _, distance, dx, dy = best
    _set_place(label, distance, dx, dy)
    return label.get_window_extent()


def _set_place(label, distance_pt: float, dx: int, dy: int) -> None:
    """The label ``distance_pt`` from its point towards (dx, dy), its text on that side."""
    norm = math.hypot(dx, dy)
    label.anncoords = "offset points"
    label.xyann = (distance_pt * dx / norm, distance_pt * dy / norm)
    label.set_horizontalalignment({1: "left", 0: "center", -1: "right"}[dx])
    label.set_verticalalignment({1: "bottom", 0: "center", -1: "top"}[dy])


def _cost(box, lines, taken, frame) -> int:
    """How much a label's box covers: line segments and markers through it, other labels (and
    the legend) it overlaps; ``OUTSIDE_AXES`` when it leaves the axes."""
    inside = frame.containsx(box.x0) and frame.containsx(box.x1)
    inside = inside and frame.containsy(box.y0) and frame.containsy(box.y1)
    cost = 0 if inside else OUTSIDE_AXES
    cost += sum(box.padded(LABEL_PAD_PX).overlaps(other) for other in taken)
    for xy, joined, half_width, radius in lines:
        if joined:
            cost += _segments_through(box.padded(LABEL_PAD_PX + half_width), xy)
        if radius > 0.0:
            cost += _points_in(box.padded(LABEL_PAD_PX + radius), xy)
    return cost


def _points_in(box, xy: np.ndarray) -> int:
    x, y = xy[:, 0], xy[:, 1]
    return int(np.count_nonzero((x >= box.x0) & (x <= box.x1) & (y >= box.y0) & (y <= box.y1)))


def _segments_through(box, xy: np.ndarray) -> int:
    """How many segments of the polyline ``xy`` (NaN breaks it) pass through ``box``: the
    parameter interval of each inside both of the box's slabs is not empty (Liang-Barsky)."""
    p, q = xy[:-1], xy[1:]
    keep = np.isfinite(p).all(axis=1) & np.isfinite(q).all(axis=1)
    p, d = p[keep], q[keep] - p[keep]
    enter, leave = np.zeros(len(p)), np.ones(len(p))
    for axis, lo, hi in ((0, box.x0, box.x1), (1, box.y0, box.y1)):
        start, step = p[:, axis], d[:, axis]
        still = step == 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            a, b = (lo - start) / step, (hi - start) / step
        inside = (start >= lo) & (start <= hi)
        enter = np.maximum(
            enter, np.where(still, np.where(inside, -np.inf, np.inf), np.minimum(a, b))
        )
        leave = np.minimum(
            leave, np.where(still, np.where(inside, np.inf, -np.inf), np.maximum(a, b))
        )
    return int(np.count_nonzero(enter <= leave))


def heading(
    state: dict, title: str, references: dict[str, dict] | None = None, events: Sequence[Event] = ()
):
    """Heading and course over ground; each controller's heading reference (HSC) as a step
    line, held from one sentence to the next as the controller holds it."""
    references = references or {}
    what = "heading, reference and course" if references else "heading and course"
    fig, (ax,) = _figure(f"{title}: {what}")
    t = state["t"]
    moving = state["sog"] > 0.2  # a course over ground means little when lying still
    traces: list[tuple[np.ndarray, np.ndarray, dict]] = [
        (t, np.degrees(state["heading"]), {"lw": 1.5, "label": "heading"})
    ]
    for device, ref in references.items():
        traces.append(
            (
                ref["t"],
                np.degrees(ref["heading_ref"]),
                {
                    "lw": 1.0,
                    "label": f"heading reference (HSC from {device})",
                    "drawstyle": "steps-post",
                },
            )
        )
    traces.append(
        (
            t,
            np.degrees(np.where(moving, state["cog"], np.nan)),
            {"lw": 0.8, "label": "course over ground (SOG > 0.2 m/s)"},
        )
    )
    low = compass_low(*(deg for _, deg, _ in traces))
    for tt, deg, style in traces:
        ax.plot(*_compass(tt, deg, low, held="drawstyle" in style), **style)
    _compass_axis(ax, low, "angle [deg, true]")
    mark_events([ax], events)
    ax.set_xlabel("simulation time [s]")
    ax.legend(loc="best")
    return fig


def speeds(state: dict, title: str, events: Sequence[Event] = ()):
    fig, axes = _figure(f"{title}: speeds", rows=2)
    t = state["t"]
    # (the speed over ground and the surge often coincide: the first wide and pale, underneath)
    axes[0].plot(t, state["sog"], lw=2.6, alpha=0.55, label="speed over ground")
    axes[0].plot(t, state["u"], lw=1.0, label="surge u")
    axes[0].plot(t, state["v"], lw=0.9, ls="-.", label="sway v")
    axes[0].set_ylabel("speed [m/s]")
    axes[1].plot(t, np.degrees(state["r"]), color="tab:purple", label="yaw rate r")
    axes[1].set_ylabel("yaw rate [deg/s]")
    axes[1].set_xlabel("simulation time [s]")
    mark_events(axes, events)
    for ax in axes:
        ax.legend(loc="best")
    return fig


# One style per actuator, so that traces that coincide (port and starboard alike) both show:
# the first widest and palest, underneath; each next narrower, on top, with its own markers.
ACTUAL_STYLES = (
    {"lw": 3.0, "alpha": 0.5},
    {"lw": 1.3, "marker": "^"},
    {"lw": 0.9, "marker": "s"},
    {"lw": 0.7, "marker": "o"},
)
COMMANDED_STYLES = (
    {"ls": "--", "lw": 2.0, "alpha": 0.6},
    {"ls": ":", "lw": 1.3},
    {"ls": "-.", "lw": 1.0},
    {"ls": (0, (1, 3)), "lw": 0.9},
)


def actuators(act: dict, title: str, events: Sequence[Event] = ()):
    """Per actuator quantity (speed, angle, deflector): actual solid, commanded broken; each
    actuator in a colour, width and marker of its own (ACTUAL_STYLES)."""
    quantities = [k for k in act if k.count(".") == 1 and f"{k}_commanded" in act]
    kinds = sorted(
        {k.split(".")[1] for k in quantities},
        key=["rpm", "cmd", "nozzle", "azimuth", "deflector"].index,
    )
    units = {
        "rpm": "speed [rpm]",
        "cmd": "command [-1, 1]",
        "nozzle": "nozzle [deg]",
        "azimuth": "azimuth [deg]",
        "deflector": "deflector [-1 astern, 1 ahead]",
    }
    fig, axes = _figure(
        f"{title}: actuators, actual (solid) and commanded (broken)", rows=max(1, len(kinds))
    )
    t = act["t"]
    every = max(1, len(t) // 24)  # about two dozen markers a trace
    for ax, kind in zip(axes, kinds, strict=False):
        angle = kind in ("nozzle", "azimuth")
        for i, key in enumerate(k for k in quantities if k.endswith("." + kind)):
            scale = (lambda x: np.degrees(x)) if angle else (lambda x: x)
            n = len(ACTUAL_STYLES)
            name, color, z = key.split(".")[0], f"C{i}", 2.0 + 0.1 * i
            marks = {"markevery": ((i * every) // n, every), "ms": 4, "mfc": "none"}
            ax.plot(
                t,
                scale(act[key]),
                color=color,
                label=name,
                zorder=z,
                **ACTUAL_STYLES[i % n],
                **marks,
            )
            ax.plot(
                t,
                scale(act[f"{key}_commanded"]),
                color=color,
                zorder=z + 0.05,
                label=f"{name} commanded",
                **COMMANDED_STYLES[i % n],
            )
        ax.set_ylabel(units[kind])
    mark_events(axes, events)
    for ax in axes[: len(kinds)]:
        ax.legend(loc="best", fontsize=8, ncols=2)
    axes[-1].set_xlabel("simulation time [s]")
    return fig


def environment(env: dict, title: str, events: Sequence[Event] = ()):
    """Wind and current speeds; the wind's direction (from) and the current's (to), each on an
    axis of its own that it crosses the edge of least (``compass_low``)."""
    fig, axes = _figure(f"{title}: wind and current", rows=3)
    t = env["t"]
    axes[0].plot(t, env["wind_speed"], label="true wind at 10 m")
    axes[0].plot(t, env["current_speed"], label="current")
    axes[0].set_ylabel("speed [m/s]")
    for ax, key, label, color in (
        (axes[1], "wind_from", "wind from", "C0"),
        (axes[2], "current_to", "current to", "C1"),
    ):
        deg = np.degrees(env[key])
        low = compass_low(deg)
        ax.plot(*_compass(t, deg, low), color=color, label=label)
        _compass_axis(ax, low, f"{label} [deg, true]")
    axes[2].set_xlabel("simulation time [s]")
    mark_events(axes, events)
    for ax in axes:
        ax.legend(loc="best")
    return fig


def jitter(stats: dict, title: str, events: Sequence[Event] = ()):
    """Tick lateness: p50, p99 (wide) and, over them, the max (narrow, with markers), so that a
    max equal to the p99 still shows."""
    fig, (ax,) = _figure(f"{title}: tick lateness per simulated second")
    t = stats["t"]
    ax.plot(t, stats["jitter_p50_ms"], color="C2", lw=1.2, label="p50", zorder=2.0)
    ax.plot(t, stats["jitter_p99_ms"], color="C1", lw=2.6, alpha=0.8, label="p99", zorder=2.1)
    ax.plot(
        t, stats["jitter_max_ms"], color="C0", lw=0.9, marker="^", ms=3, label="max", zorder=2.2
    )
    overran = stats["overruns"] > 0
    if np.any(overran):
        ax.plot(
            t[overran],
            stats["jitter_max_ms"][overran],
            "rx",
            label="seconds with overruns",
            zorder=2.3,
        )
    ax.set_yscale("log")
    mark_events([ax], events)
    ax.set_xlabel("simulation time [s]")
    ax.set_ylabel("lateness [ms]")
    ax.legend(loc="best")
    return fig


def figures(path: Path, waypoints: Sequence[tuple[float, float]] = ()) -> dict:
    """The figures (matplotlib ``Figure``) the recording has data for, by name."""
    path = Path(path)
    data = columns(path)
    events = control_events(path)
    title = path.stem
    out = {}
    breaks: np.ndarray = np.array([])
    state = data.get(channels.STATE)
    if state is not None:
        at = track_breaks(state, events)
        breaks = state["t"][at]
        state = with_gaps(state, breaks, at)
        out["trajectory"] = trajectory(state, waypoints, title)
        targets = traffic_columns(path)
        if targets:
            targets = {k: with_gaps(v, breaks) for k, v in targets.items()}
            out["traffic"] = traffic(state, targets, title, events)
        prefix = channels.REFERENCE + "/"
        references = {k[len(prefix) :]: v for k, v in data.items() if k.startswith(prefix)}
        out["heading"] = heading(state, title, references, events)
        out["speeds"] = speeds(state, title, events)
    if channels.ACTUATORS in data:
        out["actuators"] = actuators(with_gaps(data[channels.ACTUATORS], breaks), title, events)
    if channels.ENVIRONMENT in data:
        env = with_gaps(data[channels.ENVIRONMENT], breaks)
        out["environment"] = environment(env, title, events)
    if channels.STATS in data:  # (the loop's timing goes on through a reposition: no gap)
        out["jitter"] = jitter(data[channels.STATS], title, events)
    if not out:
        raise ConfigError(
            path,
            "",
            MISSING,
            "a recording with something to plot: messages on "
            f"{', '.join(PLOTTED)} (it has none; hild inspect {path} shows what "
            "it holds)",
        )
    return out


def plot(
    path: Path, out_dir: Path | None = None, waypoints: Sequence[tuple[float, float]] = ()
) -> list[Path]:
    """Write the figures the recording has data for; returns their paths."""
    path = Path(path)
    out_dir = Path(out_dir) if out_dir else path.with_name(path.stem + "-plots")
    drawn = figures(path, waypoints)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in drawn.items():
        target = out_dir / f"{name}.png"
        fig.savefig(target)
        written.append(target)
    return written
