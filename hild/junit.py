"""JUnit XML, the report CI systems read: one suite of test cases, failures with their text.
The one writer of it: `hild scenario run --junit` (one case) and `hild sweep --junit` (a case
per run)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class JUnitCase:
    name: str
    time_s: float = 0.0  # the case's wall time; 0: not run by this invocation (see its output)
    failure: str | None = None  # the failure's message; None: passed
    failure_type: str = ""
    failure_text: str = ""
    output: str = ""  # <system-out>


def write_junit(
    path: Path,
    suite: str,
    classname: str,
    cases: Sequence[JUnitCase],
    time_s: float | None = None,
) -> None:
    """The report of ``cases``; the suite's time is ``time_s`` (its elapsed wall time: a
    sweep's runs overlap on its workers), else the sum of the cases' times."""
    failures = sum(1 for c in cases if c.failure is not None)
    elapsed_s = sum(c.time_s for c in cases) if time_s is None else time_s
    suites = ET.Element("testsuites", tests=str(len(cases)), failures=str(failures))
    element = ET.SubElement(
        suites,
        "testsuite",
        name=suite,
        tests=str(len(cases)),
        failures=str(failures),
        errors="0",
        skipped="0",
        time=f"{elapsed_s:.3f}",
    )
    for c in cases:
        case = ET.SubElement(
            element, "testcase", classname=classname, name=c.name, time=f"{c.time_s:.3f}"
        )
        if c.failure is not None:
            failure = ET.SubElement(case, "failure", message=c.failure, type=c.failure_type)
            failure.text = c.failure_text
        if c.output:
            ET.SubElement(case, "system-out").text = c.output
    ET.indent(suites)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n")
