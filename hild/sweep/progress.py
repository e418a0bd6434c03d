"""The sweep's progress on stderr: a bar (rich) with runs done of the total and the pass rate
so far; without a terminal, or with --no-progress, a plain line every few seconds instead
(none at all with --no-progress)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from hild.log import write_or_drop

PLAIN_EVERY_S = 5.0


class SweepProgress:
    def __init__(
        self,
        total: int,
        done: int,
        passed: int,
        bar: bool,
        quiet: bool,
        stream: TextIO | None = None,
    ):
        self.stream = stream or sys.stderr
        self.total, self.done, self.passed = total, done, passed
        self.quiet = quiet
        self.last_line = time.monotonic()
        self.bar: Progress | None = None
        if bar and not quiet and self.stream.isatty():
            self.bar = Progress(
                TextColumn("[bold]sweep"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("runs  {task.fields[rate]}"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=False,
            )
            self.task = self.bar.add_task("sweep", total=total, completed=done, rate=self.rate())

    def rate(self) -> str:
        if not self.done:
            return "passed: -"
        return f"passed: {self.passed / self.done:.0%}"

    def __enter__(self) -> SweepProgress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
        elif not self.quiet and self.done:
            self.line()

    def advance(self, runs: int, passed: int) -> None:
        self.done += runs
        self.passed += passed
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, rate=self.rate())
        elif not self.quiet and time.monotonic() - self.last_line >= PLAIN_EVERY_S:
            self.line()

    def line(self) -> None:
        self.last_line = time.monotonic()
        write_or_drop(self.stream, f"hild sweep: {self.done}/{self.total} runs, {self.rate()}\n")
