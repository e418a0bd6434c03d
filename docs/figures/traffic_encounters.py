"""Draw docs/figures/traffic-encounters.png from recordings of the built-in traffic benches.

for n in head-on crossing-give-way crossing-stand-on overtaking overtaken busy-fjord; do
    hild run $n --time-scale 20 --duration 600 --record DIR/$n.mcap
done   # (busy-fjord: --duration 900)
python docs/figures/traffic_encounters.py DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from matplotlib.figure import Figure

from hild.record import channels
from hild.record.plot import columns, draw_traffic, traffic_columns

BENCHES = ("head-on", "crossing-give-way", "crossing-stand-on", "overtaking", "overtaken",
           "busy-fjord")  # fmt: skip


def main() -> None:
    folder = Path(sys.argv[1])
    fig = Figure(figsize=(12, 15), dpi=90, layout="constrained")
    axes = fig.subplots(3, 2).ravel()
    for ax, name in zip(axes, BENCHES, strict=True):
        path = folder / f"{name}.mcap"
        ax.grid(True, alpha=0.4)
        draw_traffic(ax, columns(path)[channels.STATE], traffic_columns(path))
        ax.set_title(f"hild run {name}")
        ax.legend(loc="best", fontsize=8)
    out = Path(__file__).with_name("traffic-encounters.png")
    fig.savefig(out)
    print(out)


if __name__ == "__main__":
    main()
