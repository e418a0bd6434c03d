"""A run's verdict for people and for CI: a text table, a JSON object, JUnit XML, a PNG page.

matplotlib is imported only for the page (the Agg canvas of a Figure: no display, no global
state), so a sweep's workers and `hild scenario run` without --report never pay for it.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hild import __version__
from hild.junit import JUnitCase, write_junit
from hild.scenario.file import Scenario
from hild.scenario.track import RunResult

DPI = 110


def verdict_text(scenario: Scenario, result: RunResult) -> str:
    """The verdict and every criterion, one line each, the failed ones marked."""
    head = "PASS" if result.passed else "FAIL"
    failed = len(result.failed)
    lines = [
        f"{head}  scenario '{scenario.name}' seed {result.seed}: {result.ended} at "
        f"t={result.duration_s:.1f} s, {len(result.criteria) - failed} of "
        f"{len(result.criteria)} criteria hold" + (f", {failed} failed" if failed else ""),
    ]
    if result.fault is not None:
        lines.append(f"  FAIL  {result.fault}")
    lines.extend(f"  {c.sentence()}" for c in result.criteria)
    if result.boats:
        if result.closest_pair is not None:
            a, b = result.closest_pair
            lines.append(
                f"  closest boats: {a} and {b}, {result.metrics['min_separation_m']:.1f} m apart"
            )
        for name, boat in result.boats.items():
            plan = next(p for p in scenario.plans if p.boat == name)
            lines.extend(_reached_lines(boat, plan.mission.laps, f"{name}: "))
    else:
        lines.extend(_reached_lines(result, scenario.mission.laps))
    lines.append(
        f"  ran in {result.wall_s:.2f} s "
        f"({result.duration_s / max(result.wall_s, 1e-9):.0f} times real time)"
    )
    return "\n".join(lines)


def _reached_lines(result: RunResult, laps: int, boat: str = "") -> list[str]:
    """The waypoints a boat reached and its closest approach to each target."""
    reached = ", ".join(
        f"WP{i}" + (f" lap {lap}" if laps > 1 else "") + f" at {t:.1f} s"
        for i, lap, t in result.reached
    )
    lines = [f"  {boat}waypoints reached: {reached or 'none'}"]
    for name, a in result.traffic.items():
        lines.append(
            f"  {boat}traffic {name} (MMSI {a['mmsi']}): closest {a['min_range_m']:.1f} m "
            f"at t={a['at_s']:.1f} s"
        )
    return lines


def _number(value: float) -> float | None:
    return None if math.isnan(value) or math.isinf(value) else value


def result_dict(scenario: Scenario, result: RunResult) -> dict:
    """The result as plain JSON values (NaN and infinities as null)."""
    return {
        "scenario": scenario.name,
        "file": scenario.file,
        "seed": result.seed,
        "passed": result.passed,
        "ended": result.ended,
        "fault": result.fault,
        "duration_s": result.duration_s,
        "metrics": {k: _number(v) for k, v in result.metrics.items()},
        "criteria": [
            {
                "name": c.name,
                "threshold": c.threshold,
                "value": _number(c.value),
                "passed": c.passed,
                "by": None if c.passed else _number(c.by),
                "at_s": c.at_s,
                "unit": c.unit,
            }
            for c in result.criteria
        ],
        "reached": [{"index": i, "lap": lap, "t": t} for i, lap, t in result.reached],
        "traffic": result.traffic,
        "controller": result.controller,
        "wall_s": round(result.wall_s, 3),
        "hild_version": __version__,
    }


def result_json(scenario: Scenario, result: RunResult) -> str:
    return json.dumps(result_dict(scenario, result))


def junit_xml(suite: str, cases: Sequence[tuple[str, RunResult]], path: Path) -> None:
    """One testcase per run (``name``, result), its failed criteria (and its controller's
    fault) in its failure."""
    write_junit(
        path,
        suite,
        suite,
        [
            JUnitCase(
                name,
                result.wall_s,
                failure=None if result.passed else ", ".join(failed_names(result)),
                failure_type="criteria" if result.fault is None else result.ended,
                failure_text="\n".join(failure_sentences(result)),
                output="\n".join(c.sentence() for c in result.criteria),
            )
            for name, result in cases
        ],
    )


def failed_names(result: RunResult) -> tuple[str, ...]:
    """What failed a run: its controller (``ended``, when it failed the run), its criteria."""
    names = tuple(c.name for c in result.failed)
    return names if result.fault is None else (result.ended, *names)


def failure_sentences(result: RunResult) -> tuple[str, ...]:
    """What failed a run, said: the controller's fault first, then each failed criterion."""
    sentences = tuple(c.sentence() for c in result.failed)
    return sentences if result.fault is None else (result.fault, *sentences)


def report_page(scenario: Scenario, result: RunResult, targets: dict, path: Path) -> None:
    """One page: the track with the mission, the geofence, the targets and their closest
    approaches; the criteria table beside it. ``targets``: name -> (t, north, east) arrays."""
    from matplotlib.figure import Figure

    from hild.record.plot import place_labels_clear

    assert result.track is not None
    track = result.track
    fig = Figure(figsize=(13, 7), dpi=DPI, layout="constrained")
    ax, table_ax = fig.subplots(1, 2, width_ratios=[1.25, 1])
    labels: list = []  # the closest approaches' labels: placed clear of the tracks at the end
    criteria = scenario.criteria
    if result.boats:  # a fleet: each boat's track and mission, and where two came closest
        for k, (plan, boat) in enumerate(zip(scenario.plans, result.boats.values(), strict=True)):
            assert boat.track is not None
            colour = BOAT_COLOURS[k % len(BOAT_COLOURS)]
            _own_track(ax, boat.track, plan.mission, boat.reached, colour, plan.boat)
        labels.append(_closest_boats(ax, result))
    else:
        _own_track(ax, track, scenario.mission, result.reached, "C0", scenario.bench.vessel.name)
    if criteria.geofence is not None:
        fence = [*criteria.geofence, criteria.geofence[0]]
        ax.plot([p[1] for p in fence], [p[0] for p in fence], color="C1", lw=1.0, label="geofence")
    for k, (name, (t, north, east)) in enumerate(targets.items()):
        colour = f"C{4 + k % 6}"
        ax.plot(east, north, color=colour, lw=1.0, label=name)
        if len(t):
            ax.plot(east[0], north[0], "o", color=colour, ms=4)  # where it started
        closest = result.traffic.get(name)
        if closest is not None and len(t):
            j = min(range(len(t)), key=lambda i: abs(t[i] - closest["at_s"]))
            own = min(range(len(track)), key=lambda i: abs(track[i, 0] - closest["at_s"]))
            ax.plot([east[j], track[own, 2]], [north[j], track[own, 1]], ":", color=colour)
            ax.plot(east[j], north[j], "x", color=colour)
            ax.plot(track[own, 2], track[own, 1], "x", color="C0")
            labels.append(
                ax.annotate(
                    f"{closest['min_range_m']:.0f} m", (east[j], north[j]), fontsize=8, color=colour
                )
            )
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("east [m]")
    ax.set_ylabel("north [m]")
    ax.grid(True, lw=0.3)
    ax.legend(loc="best", fontsize=8)
    verdict = "PASS" if result.passed else "FAIL"
    ax.set_title(
        f"{scenario.name}: {verdict} (seed {result.seed}, {result.ended} at "
        f"t={result.duration_s:.0f} s)"
    )
    table_ax.axis("off")
    rows = []
    for c in result.criteria:
        value = "none" if math.isnan(c.value) else f"{c.value:.3g}"
        by = "" if c.passed else f"{c.by:.3g}"
        when = "" if c.at_s is None else f"{c.at_s:.0f}"
        rows.append(
            [
                c.name,
                value,
                f"{c.threshold:g} {c.unit}".strip(),
                by,
                when,
                "pass" if c.passed else "FAIL",
            ]
        )
    if rows:
        table = table_ax.table(
            cellText=rows,
            colLabels=["criterion", "value", "threshold", "failed by", "t [s]", ""],
            loc="upper center",
            colWidths=[0.34, 0.13, 0.19, 0.13, 0.1, 0.1],
        )
        table.auto_set_font_size(False)
        table.set_fontsize(8)
        table.scale(1.0, 1.4)
        for i, c in enumerate(result.criteria, start=1):
            if not c.passed:
                for j in range(6):
                    table[i, j].set_facecolor("#f8d0d0")
    about = textwrap.fill(scenario.description or scenario.file, 70)
    table_ax.text(
        0.5, 0.02, about, ha="center", va="bottom", fontsize=9, transform=table_ax.transAxes
    )
    place_labels_clear(fig, ax, [label for label in labels if label is not None])
    path.parent.mkdir(parents=True, exist_ok=True)  # as the JUnit report's writer does
    fig.savefig(path)  # in the format its suffix names


BOAT_COLOURS = ("C0", "C9", "C8", "C7", "C5")  # a fleet's boats (targets: C4 on, fences C1)


def _own_track(ax, track, mission, reached_at, colour: str, label: str) -> None:
    """A boat's true track from its start, its mission's legs and waypoints (green: reached
    within the acceptance circle, red: not)."""
    ax.plot(track[:, 2], track[:, 1], color=colour, lw=1.6, label=label)
    ax.plot(track[0, 2], track[0, 1], "o", color=colour)
    wn = [w.north for w in mission.waypoints]
    we = [w.east for w in mission.waypoints]
    ax.plot([track[0, 2], *we], [track[0, 1], *wn], "--", color="0.5", lw=0.8)
    reached = {i for i, _, _ in reached_at}
    for i, w in enumerate(mission.waypoints):
        state = "C2" if i in reached else "C3"
        ax.add_patch(_circle((w.east, w.north), mission.acceptance_m, state))
        ax.annotate(
            f"WP{i}",
            (w.east, w.north),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=8,
            color=state,
        )


def _closest_boats(ax, result: RunResult):
    """The two boats that came closest, joined where they were at that instant; its label."""
    if result.closest_pair is None:
        return None
    a, b = (result.boats[name].track for name in result.closest_pair)
    assert a is not None and b is not None
    n = min(len(a), len(b))
    i = int(np.argmin(np.hypot(a[:n, 1] - b[:n, 1], a[:n, 2] - b[:n, 2])))
    ax.plot([a[i, 2], b[i, 2]], [a[i, 1], b[i, 1]], ":x", color="C3")
    return ax.annotate(
        f"{result.metrics['min_separation_m']:.1f} m at t={a[i, 0]:.0f} s",
        (a[i, 2], a[i, 1]),
        xytext=(6, -12),
        textcoords="offset points",
        fontsize=8,
        color="C3",
    )


def _circle(centre: tuple[float, float], radius: float, colour: str):
    from matplotlib.patches import Circle

    return Circle(centre, radius, fill=False, color=colour, lw=0.8)
