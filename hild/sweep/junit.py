"""A sweep's verdicts as a JUnit XML report: one testcase per run, named by its index and
values; a failed run's failure lists its failed criteria's sentences.

Times come from this invocation, not from the table (whose rows hold no wall time, so that the
same sweep gives the same file anywhere): a case's time is its run's wall time in its worker
(the first run in a worker pays for loading the compiled kernels); the suite's is the
invocation's elapsed wall time (the runs overlap on the workers, so it is not their sum). A run
read back from the table (``--resume``) was not run now: its time is 0 and its output says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hild.junit import JUnitCase
from hild.junit import write_junit as write_junit_file
from hild.sweep.plan import SweepPlan
from hild.sweep.summary import toml_value

READ_BACK = "read back from the results table (--resume): not run by this invocation, time 0"


def testcase_name(plan: SweepPlan, row: dict[str, Any]) -> str:
    values = ", ".join(f"{p}={toml_value(row[p])}" for p in plan.paths)
    seed = f"seed={row['seed']}"
    return f"run {row['index']:0{len(str(len(plan.runs) - 1))}d}: " + ", ".join(
        v for v in (values, seed) if v
    )


def testcase(plan: SweepPlan, row: dict[str, Any], wall_s: float | None) -> JUnitCase:
    """A run's case: its wall time (None: read back, not run now), its failure if it failed."""
    timing: dict[str, Any] = {
        "time_s": wall_s or 0.0,
        "output": READ_BACK if wall_s is None else "",
    }
    if row["passed"]:
        return JUnitCase(testcase_name(plan, row), **timing)
    return JUnitCase(
        testcase_name(plan, row),
        failure=f"failed: {row['failed']}",
        failure_type=row["ended"],
        failure_text=row["failures"],
        **timing,
    )


def write_junit(
    path: Path,
    plan: SweepPlan,
    rows: Sequence[dict[str, Any]],
    wall_s: Mapping[int, float],
    elapsed_s: float,
) -> None:
    """``wall_s``: the wall time of each run run now, by index; ``elapsed_s``: the
    invocation's."""
    cases = [testcase(plan, row, wall_s.get(row["index"])) for row in rows]
    write_junit_file(path, f"hild sweep {plan.name}", f"sweep.{plan.name}", cases, elapsed_s)
