"""`traffic.png`'s closest-approach labels sit clear of the tracks (issue 55: "the CPA label on
traffic.png overlaps the own ship's track").

A synthetic recording written with hild's own writer, as `hild plot` reads it: the own ship
holds her course north at 5 m/s and a tanker crossing from starboard, heading west at 5 m/s,
passes just ahead of her (the crossing-give-way geometry with nobody at the controls). At the
closest approach the tanker is a few metres north-west of the own ship, and the own ship's track
runs on north just right of the label's point: the old place of the label (6 pt right, 12 pt
down) lay across it. The boxes are read from the drawn figure (its renderer's window extents,
in display pixels) and held against every point of the tracks, as drawn.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from hild.record import channels
from hild.record.writer import RecordWriter

T0_NS = 1_780_315_200 * 10**9
SPEED = 5.0  # m/s, both ships
AHEAD_M = 20.0  # the tanker crosses the own ship's course this far ahead of her
LABEL = re.compile(r"^\d+ m at \d+ s$")


def crossing(path: Path, targets: dict[str, tuple[float, float]]) -> None:
    """The own ship north from the origin; each target (name: (north where it crosses the own
    course, east offset of its track)) heading west, on the own course at t = 30 s."""
    writer = RecordWriter(path, {"hild": {"kind": "test"}}, nmea_log=False)
    writer.start()
    closest = {name: (math.inf, math.nan) for name in targets}
    for k in range(301):  # 0 .. 60 s at 5 Hz
        t, ns = k * 0.2, T0_NS + k * 200_000_000
        north = SPEED * t
        state = {"t": t, "utc": "", "north": north, "east": 0.0, "heading": 0.0, "sog": SPEED}
        writer.put(channels.STATE, ns, {**state, "cog": 0.0, "u": SPEED, "v": 0.0, "r": 0.0})
        if k % 5:
            continue
        reports = []
        for i, (name, (cross_n, east0)) in enumerate(targets.items()):
            tn, te = cross_n, east0 + SPEED * (30.0 - t)
            r = math.hypot(tn - north, te)
            if r < closest[name][0]:
                closest[name] = (r, t)
            reports.append(
                {
                    "name": name,
                    "mmsi": 257100020 + i,
                    "north": tn,
                    "east": te,
                    "range_m": r,
                    "min_range_m": closest[name][0],
                    "min_range_t": closest[name][1],
                }
            )
        writer.put(channels.TRAFFIC, ns, {"t": t, "utc": "", "targets": reports})
    writer.close()


def traffic_figure(tmp_path: Path, targets: dict[str, tuple[float, float]]):
    """The traffic figure `hild plot` draws, drawn on an Agg canvas as ``savefig`` draws it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from hild.record.plot import figures

    path = tmp_path / "crossing.mcap"
    crossing(path, targets)
    fig = figures(path)["traffic"]
    FigureCanvasAgg(fig).draw()
    return fig


ONE = {"tanker": (150.0 + AHEAD_M, 0.0)}


def labels(fig) -> list:
    return [t for t in fig.axes[0].texts if LABEL.match(t.get_text())]


def drawn_points(ax, label: str) -> np.ndarray:
    """A line's points in display pixels, with every segment filled in to 0.5 px."""
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
    xy = ax.transData.transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
    xy = xy[np.isfinite(xy).all(axis=1)]
    out = [xy[:1]]
    for a, b in zip(xy[:-1], xy[1:], strict=True):
        n = max(1, math.ceil(np.hypot(*(b - a)) / 0.5))
        out.append(a + np.outer(np.arange(1, n + 1) / n, b - a))
    return np.concatenate(out)


def inside(box, xy: np.ndarray) -> int:
    x, y = xy[:, 0], xy[:, 1]
    return int(np.sum((x >= box.x0) & (x <= box.x1) & (y >= box.y0) & (y <= box.y1)))


def test_the_old_place_lay_across_the_own_track(tmp_path, monkeypatch):
    """The geometry is one the issue is about: with the label left where it was first put (6 pt
    right, 12 pt down from its point), the own ship's track runs through it."""
    from hild.record import plot

    monkeypatch.setattr(plot, "place_labels_clear", lambda fig, ax: None, raising=False)
    fig = traffic_figure(tmp_path, ONE)
    (label,) = labels(fig)
    box = label.get_window_extent(fig.canvas.get_renderer())
    assert inside(box, drawn_points(fig.axes[0], "own ship")) > 0


def test_the_closest_approach_label_covers_no_track(tmp_path):
    fig = traffic_figure(tmp_path, ONE)
    ax, renderer = fig.axes[0], fig.canvas.get_renderer()
    (label,) = labels(fig)
    assert label.get_text() == f"{math.hypot(10, 10):.0f} m at 32 s"  # (NW of her by 10, 10)
    box = label.get_window_extent(renderer)
    assert inside(box, drawn_points(ax, "own ship")) == 0
    assert inside(box, drawn_points(ax, "tanker")) == 0
    assert ax.get_window_extent(renderer).contains(box.x0, box.y0)
    assert ax.get_window_extent(renderer).contains(box.x1, box.y1)
    assert not box.overlaps(ax.get_legend().get_window_extent(renderer))
    # near its point: within the farthest place tried
    point = ax.transData.transform(label.xy)
    px = fig.dpi / 72.0 * 64.0
    assert box.x0 - px <= point[0] <= box.x1 + px and box.y0 - px <= point[1] <= box.y1 + px


def test_labels_keep_clear_of_each_other_and_stay_put_when_saved(tmp_path):
    # two tankers crossing close together: their closest approaches a few metres apart
    two = {"tanker": (150.0 + AHEAD_M, 0.0), "ferry": (150.0 + AHEAD_M + 8.0, 6.0)}
    fig = traffic_figure(tmp_path, two)
    ax, renderer = fig.axes[0], fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in labels(fig)]
    assert len(boxes) == 2 and not boxes[0].overlaps(boxes[1])
    for box in boxes:
        for line in ("own ship", "tanker", "ferry"):
            assert inside(box, drawn_points(ax, line)) == 0, line
    fig.savefig(tmp_path / "traffic.png")  # another draw: everything where it was placed
    again = [t.get_window_extent(fig.canvas.get_renderer()) for t in labels(fig)]
    assert np.allclose([b.bounds for b in again], [b.bounds for b in boxes])


def test_the_placement_is_the_same_every_time(tmp_path):
    places = []
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        (label,) = labels(traffic_figure(tmp_path / run, ONE))
        places.append((label.xyann, label.get_ha(), label.get_va()))
    assert places[0] == places[1]


def test_the_scenario_reports_closest_approach_label_is_clear_of_the_own_track(tmp_path):
    """`hild scenario run crossing-give-way --report`: the reference autopilot meets the tanker
    4 m off, and the label of that closest approach sits clear of both tracks on the page."""
    from matplotlib.figure import Figure

    from hild.scenario.command import TargetTracks
    from hild.scenario.file import load_scenario
    from hild.scenario.report import report_page
    from hild.scenario.runs import run_scenario

    scenario = load_scenario("crossing-give-way")
    tracks = TargetTracks()
    result = run_scenario(scenario, keep_track=True, observers=[tracks])
    drawn: list[Figure] = []
    savefig = Figure.savefig

    def keep(fig, *args, **kwargs):
        drawn.append(fig)
        return savefig(fig, *args, **kwargs)

    Figure.savefig = keep  # (the page's figure, kept to be measured after it is written)
    try:
        report_page(scenario, result, tracks.arrays(), tmp_path / "page.png")
    finally:
        Figure.savefig = savefig
    (fig,) = drawn
    ax = fig.axes[0]
    (label,) = [t for t in ax.texts if t.get_text().endswith(" m") and "WP" not in t.get_text()]
    fig.draw_without_rendering()
    box = label.get_window_extent().padded(1.0)
    assert result.track is not None
    own = ax.transData.transform(np.column_stack([result.track[:, 2], result.track[:, 1]]))
    _, north, east = tracks.arrays()["tanker"]
    dense = np.linspace(0.0, len(east) - 1.0, 20 * len(east))  # (its samples 1 s apart: joined)
    steps = np.arange(len(east))
    tanker = ax.transData.transform(
        np.column_stack([np.interp(dense, steps, east), np.interp(dense, steps, north)])
    )
    for points in (own, tanker):
        inside = (
            (points[:, 0] >= box.x0)
            & (points[:, 0] <= box.x1)
            & (points[:, 1] >= box.y0)
            & (points[:, 1] <= box.y1)
        )
        assert not inside.any(), (label.get_text(), box)
