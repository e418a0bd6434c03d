"""``hild sweep FILE``: plan the runs, run what the table lacks on the cluster, write the
table, and report (summary, --junit, --plots). Exit 0 if every run passed, 1 if any failed;
bad input raises a ConfigError (2, reported by hild.cli)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from hild.arguments import check_writable
from hild.config import ConfigError
from hild.log import write_or_drop
from hild.scenario.controller import check_factory
from hild.scenario.file import Scenario, load_scenario
from hild.sweep.cluster import check_controller_on_workers, cluster_spec, connected
from hild.sweep.plan import check_runs, plan_sweep
from hild.sweep.progress import SweepProgress
from hild.sweep.runner import run_all
from hild.sweep.table import open_results, parts_folder, row_of
from hild.sweep.worker import RunOutcome, sweep_job

EXIT_INTERRUPTED = 130


class StopAsked:
    """Whether SIGINT or SIGTERM came: the handler raises KeyboardInterrupt, but a signal that
    lands while Python runs a finalizer (a Dask future's ``__del__``) has its exception
    printed and dropped there; the flag still says it, and the sweep stops at its next
    batch (``check``) or at its end."""

    def __init__(self) -> None:
        self.asked = False

    def check(self) -> None:
        if self.asked:
            raise KeyboardInterrupt


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[StopAsked]:
    """SIGTERM (a CI job cancelled, systemd stopping) ends the sweep as Ctrl-C does: the
    batches done are kept and a local cluster is stopped with it."""
    stop = StopAsked()

    def interrupt(signum: int, frame: object) -> None:
        stop.asked = True
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def check_lockstep_controller(scenario: Scenario) -> None:
    """The runs' controller steps in lockstep on the workers (an external program does not)
    and, a python one, can be imported here: checked before any run."""
    spec = scenario.controller  # (a fleet's first: its controllers are of one kind)
    if spec.kind == "command":
        raise ConfigError(
            scenario.file,
            "controller.command",
            list(spec.target or ()),
            "a controller that runs in lockstep (pilot = true or python = "
            '"package.module:factory"): a sweep runs in lockstep; run an '
            "external controller with hild scenario run",
        )
    for each in scenario.controllers:
        check_factory(each, scenario.file)


def check_outputs(args: argparse.Namespace, out: Path) -> None:
    """The results table (and its parts folder beside it), --junit and --plots can be written:
    said before the first run, not when its batch is done or after the last. Named as the
    user gave them (the parts folder is the table's own business)."""
    outputs = [("--out" if args.out else "", out, False)]
    outputs += [("--junit", args.junit, False)] if args.junit else []
    outputs += [("--plots", args.plots, True)] if args.plots else []
    check_writable(outputs)


def run_sweep_command(args: argparse.Namespace) -> int:
    started = time.perf_counter()  # the JUnit suite's time is this invocation's
    scenario = load_scenario(args.scenario)
    check_lockstep_controller(scenario)
    spec = cluster_spec(args.scheduler, args.workers, scenario.resources)
    plan = plan_sweep(scenario)
    check_runs(scenario, plan)
    runs = plan.runs[: args.runs] if args.runs else plan.runs
    out: Path = args.out or Path(f"{plan.name}.parquet")
    results = open_results(plan, out, args.resume)
    check_outputs(args, out)
    todo = [r for r in runs if r.index not in results.rows]
    wall_s: dict[int, float] = {}  # each run run now: its wall time in its worker (for JUnit)
    if todo:
        done = [results.rows[r.index] for r in runs if r.index in results.rows]
        progress = SweepProgress(
            len(runs),
            len(done),
            sum(r["passed"] for r in done),
            bar=not args.no_progress,
            quiet=args.no_progress,
        )

        stop = StopAsked()  # (the signals' flag once the handlers are in)

        def finished(outcomes: list[RunOutcome]) -> None:
            results.write_part([row_of(plan, o) for o in outcomes])
            wall_s.update((o.index, o.wall_s) for o in outcomes)  # (beside the rows, not in)
            progress.advance(len(outcomes), sum(o.passed for o in outcomes))
            stop.check()  # (a stop whose KeyboardInterrupt a finalizer swallowed)

        try:
            with _terminate_as_interrupt() as stop, connected(spec) as client, progress:
                for each in scenario.controllers:
                    check_controller_on_workers(client, each, scenario.file)
                run_all(client, sweep_job(scenario), todo, scenario.resources, finished)
                stop.check()
        except KeyboardInterrupt:
            write_or_drop(
                sys.stderr,
                f"hild sweep: interrupted; {len(results.rows)} runs kept "
                f"in {parts_folder(out)} (--resume continues)\n",
            )
            return EXIT_INTERRUPTED
    table = results.consolidate()
    rows = [r for r in table.to_pylist() if r["index"] < len(runs)]
    from hild.sweep.summary import summary_text

    kept = len(runs) - len(todo)
    write_or_drop(
        sys.stdout,
        summary_text(plan, rows, args.scenario) + f"table: {out} "
        f"({len(todo)} runs run now, {kept} read back)\n",
    )
    if args.junit:
        from hild.sweep.junit import write_junit

        write_junit(args.junit, plan, rows, wall_s, time.perf_counter() - started)
    if args.plots:
        from hild.sweep.plots import write_plots

        write_plots(args.plots, plan, rows)
    return 0 if all(r["passed"] for r in rows) else 1
