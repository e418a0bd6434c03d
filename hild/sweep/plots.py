"""PNG plots of a sweep: each metric against each numeric parameter, a point per run, the
failed runs marked (red crosses). Metrics without a value in any run are left out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hild.scenario.criteria import METRICS
from hild.sweep.plan import SweepPlan


def write_plots(folder: Path, plan: SweepPlan, rows: Sequence[dict[str, Any]]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    numeric = [p.path for p in plan.parameters if p.kind in ("int", "float")]
    written = []
    for metric in METRICS:
        if not any(_finite(r[metric]) for r in rows):
            continue
        for path in numeric:
            fig, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
            for passed, marker, color, label in (
                (True, "o", "tab:blue", "passed"),
                (False, "x", "tab:red", "failed"),
            ):
                chosen = [r for r in rows if r["passed"] == passed and _finite(r[metric])]
                if chosen:
                    ax.scatter(
                        [r[path] for r in chosen],
                        [r[metric] for r in chosen],
                        s=18,
                        marker=marker,
                        color=color,
                        label=label,
                    )
            ax.set_xlabel(path)
            ax.set_ylabel(metric)
            ax.set_title(f"{plan.name}: {metric} against {path}")
            ax.legend()
            out = folder / f"{metric}-vs-{path}.png"
            fig.savefig(out, dpi=100)
            plt.close(fig)
            written.append(out)
    return written


def _finite(value: Any) -> bool:
    return value is not None and math.isfinite(value)
