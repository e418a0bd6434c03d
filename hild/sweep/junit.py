"""A sweep's verdicts as a JUnit XML report: one testcase per run, named by its index and
values; a failed run's failure lists its failed criteria's sentences."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hild.sweep.plan import SweepPlan
from hild.sweep.summary import toml_value


def testcase_name(plan: SweepPlan, row: dict[str, Any]) -> str:
    values = ", ".join(f"{p}={toml_value(row[p])}" for p in plan.paths)
    seed = f"seed={row['seed']}"
    return f"run {row['index']:0{len(str(len(plan.runs) - 1))}d}: " + ", ".join(
        v for v in (values, seed) if v
    )


def write_junit(path: Path, plan: SweepPlan, rows: Sequence[dict[str, Any]]) -> None:
    failures = sum(1 for r in rows if not r["passed"])
    suite = ET.Element("testsuite", name=f"hild sweep {plan.name}", tests=str(len(rows)),
                       failures=str(failures), errors="0", skipped="0")  # fmt: skip
    for row in rows:
        case = ET.SubElement(suite, "testcase", classname=f"sweep.{plan.name}",
                             name=testcase_name(plan, row), time="0")  # fmt: skip
        if not row["passed"]:
            failure = ET.SubElement(case, "failure", message=f"failed: {row['failed']}",
                                    type=row["ended"])  # fmt: skip
            failure.text = row["failures"]
    suites = ET.Element("testsuites", tests=str(len(rows)), failures=str(failures))
    suites.append(suite)
    ET.indent(suites)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n")
