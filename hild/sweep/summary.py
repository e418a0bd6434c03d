"""The summary printed at the end of a sweep: the pass rate overall and for each parameter's
values, and the worst runs (failed first, then the nearest to failing) each with the command
that runs it again alone."""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Sequence
from typing import Any

from hild.scenario.criteria import pass_or_fail
from hild.sweep.plan import Parameter, SweepPlan

WORST_SHOWN = 5
MAX_VALUES_LISTED = 20  # more values than this (or a uniform range) are shown in bins
BINS = 5


def toml_value(value: Any) -> str:
    """A parameter's value as TOML writes it (what --set reads)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def rerun_command(scenario_arg: str, plan: SweepPlan, row: dict[str, Any]) -> str:
    words = ["hild", "scenario", "run", scenario_arg, "--seed", str(row["seed"])]
    for path in plan.paths:
        words += ["--set", f"{path}={toml_value(row[path])}"]
    return shlex.join(words)


def worst_rows(rows: Sequence[dict[str, Any]], count: int = WORST_SHOWN) -> list[dict[str, Any]]:
    """Failed runs first, then by margin (largest first; runs without one last), then index."""

    def key(row: dict[str, Any]) -> tuple:
        margin = row["margin"]
        known = margin is not None and not math.isnan(margin)
        return (row["passed"], not known, -margin if known else 0.0, row["index"])

    return sorted(rows, key=key)[:count]


def threshold_share(row: dict[str, Any]) -> float | None:
    """The run's margin when it is a share of a threshold (hild.sweep.worker.margin_of), None
    when it is not one: unknown, or a failed pass-or-fail criterion's (a watchdog's trip is not
    "200 % past" a threshold of none; its sentence in ``failures`` says what happened)."""
    margin = row["margin"]
    if margin is None or not math.isfinite(margin):
        return None
    failed = str(row.get("failed") or "").split(",")
    if any(pass_or_fail(name.strip()) for name in failed):
        return None
    return float(margin)


def pass_rate(rows: Sequence[dict[str, Any]]) -> str:
    passed = sum(1 for r in rows if r["passed"])
    share = passed / len(rows) if rows else 0.0
    return f"{passed}/{len(rows)} passed ({share:.0%})"


def summary_text(plan: SweepPlan, rows: Sequence[dict[str, Any]], scenario_arg: str) -> str:
    lines = [f"sweep {plan.name}: {len(rows)} of {len(plan.runs)} runs, {pass_rate(rows)}"]
    for parameter in plan.parameters:
        lines.append(f"  {parameter.path}:")
        for label, group in _groups(parameter, rows):
            lines.append(f"    {label:>18}  {pass_rate(group)}")
    worst = worst_rows(rows)
    if worst:
        lines.append("worst runs:")
    for row in worst:
        verdict = f"FAILED {row['failed']}" if not row["passed"] else "passed"
        share = threshold_share(row)
        if share is not None and share > 0:
            verdict += f" ({share:.0%} past a threshold)"
        elif share is not None:  # how near the pass came: 0 % at no distance, 100 % at it
            verdict += f" ({1.0 + share:.0%} of the way to its nearest threshold)"
        lines.append(f"  run {row['index']}: {verdict}")
        lines.append(f"    {rerun_command(scenario_arg, plan, row)}")
    return "\n".join(lines) + "\n"


def _groups(parameter: Parameter, rows: Sequence[dict[str, Any]]) -> list[tuple[str, list]]:
    path = parameter.path
    if parameter.uniform is None and len(parameter.values) <= MAX_VALUES_LISTED:
        return [
            (toml_value(v), [r for r in rows if r[path] == v])
            for v in parameter.values
            if any(r[path] == v for r in rows)
        ]
    if parameter.uniform is not None:
        low, high = parameter.uniform
    else:
        low, high = min(parameter.values), max(parameter.values)
    width = (high - low) / BINS
    groups = []
    for b in range(BINS):
        a, z = low + b * width, low + (b + 1) * width
        last = b == BINS - 1
        group = [r for r in rows if a <= r[path] < z or (last and r[path] == z)]
        if group:
            groups.append((f"[{a:.4g}, {z:.4g}{']' if last else ')'}", group))
    return groups
