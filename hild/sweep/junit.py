"""A sweep's verdicts as a JUnit XML report: one testcase per run, named by its index and
values; a failed run's failure lists its failed criteria's sentences."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hild.junit import JUnitCase
from hild.junit import write_junit as write_junit_file
from hild.sweep.plan import SweepPlan
from hild.sweep.summary import toml_value


def testcase_name(plan: SweepPlan, row: dict[str, Any]) -> str:
    values = ", ".join(f"{p}={toml_value(row[p])}" for p in plan.paths)
    seed = f"seed={row['seed']}"
    return f"run {row['index']:0{len(str(len(plan.runs) - 1))}d}: " + ", ".join(
        v for v in (values, seed) if v
    )


def write_junit(path: Path, plan: SweepPlan, rows: Sequence[dict[str, Any]]) -> None:
    cases = [
        JUnitCase(testcase_name(plan, row))
        if row["passed"]
        else JUnitCase(
            testcase_name(plan, row),
            failure=f"failed: {row['failed']}",
            failure_type=row["ended"],
            failure_text=row["failures"],
        )
        for row in rows
    ]
    write_junit_file(path, f"hild sweep {plan.name}", f"sweep.{plan.name}", cases)
