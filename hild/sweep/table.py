"""The sweep's results: one Parquet table, a row per run, sorted by index.

Columns: ``index``, one per parameter (named by its key path), ``seed``, ``passed``,
``ended``, ``duration_s`` (simulated), each metric of hild.scenario.criteria.METRICS,
``failed`` (the failed criteria's names, comma-separated), ``failures`` (their sentences, one
per line), ``margin`` (hild.sweep.worker.margin_of) and ``hild_version``. Nothing in a row
depends on the worker, the order or the wall clock, so the same sweep gives the same file.
A metric a run did not define (no traffic: no CPA) is null, as is the margin of a run without
thresholds.

Finished batches are written as they come, each to a part file in a folder beside the table
(``<out>.parts/``); the table is written from the parts (and the rows of an earlier table
being resumed) at the end, and the folder removed. An interrupted sweep leaves its parts:
``--resume`` reads them and the table, and runs only what neither holds.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hild.config import MISSING, ConfigError
from hild.sweep.plan import SweepPlan
from hild.sweep.worker import RunOutcome

ARROW_TYPES = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "string": pa.string()}
ROW_GROUP_ROWS = 65536
PARTS_SUFFIX = ".parts"


def schema_of(plan: SweepPlan) -> pa.Schema:
    fields = [pa.field("index", pa.int64(), nullable=False)]
    fields += [pa.field(p.path, ARROW_TYPES[p.kind]) for p in plan.parameters]
    fields += [
        pa.field("seed", pa.int64()),
        pa.field("passed", pa.bool_()),
        pa.field("ended", pa.string()),
        pa.field("duration_s", pa.float64()),
    ]
    fields += [pa.field(m, pa.float64()) for m in plan.metrics]
    fields += [
        pa.field("failed", pa.string()),
        pa.field("failures", pa.string()),
        pa.field("margin", pa.float64()),
        pa.field("hild_version", pa.string()),
    ]
    return pa.schema(fields)


def row_of(plan: SweepPlan, outcome: RunOutcome) -> dict[str, Any]:
    run = plan.runs[outcome.index]
    return {
        "index": outcome.index,
        **dict(run.values),
        "seed": outcome.seed,
        "passed": outcome.passed,
        "ended": outcome.ended,
        "duration_s": outcome.duration_s,
        **{m: _null_for_nan(outcome.metrics.get(m, math.nan)) for m in plan.metrics},
        "failed": ",".join(outcome.failed),
        "failures": "\n".join(outcome.failures),
        "margin": _null_for_nan(outcome.margin),
        "hild_version": outcome.hild_version,
    }


def _null_for_nan(value: float) -> float | None:
    """A metric the run did not define (NaN in RunResult) is null in the table."""
    return None if math.isnan(value) else value


def parts_folder(out: Path) -> Path:
    return out.with_name(out.name + PARTS_SUFFIX)


@dataclass
class ResultsTable:
    """The rows of one sweep: those read back on resume and those written since."""

    plan: SweepPlan
    out: Path
    rows: dict[int, dict[str, Any]]

    @property
    def schema(self) -> pa.Schema:
        return schema_of(self.plan)

    def write_part(self, rows: list[dict[str, Any]]) -> None:
        """A finished batch, to its own part file (written whole, then renamed into place)."""
        folder = parts_folder(self.out)
        folder.mkdir(parents=True, exist_ok=True)
        first = min(r["index"] for r in rows)
        path = folder / f"part-{first:09d}-{len(rows)}.parquet"
        _write(pa.Table.from_pylist(rows, schema=self.schema), path)
        for r in rows:
            self.rows[r["index"]] = r

    def consolidate(self) -> pa.Table:
        """Write the table (every row, by index) and remove the parts."""
        table = self.table()
        _write(table, self.out)
        folder = parts_folder(self.out)
        if folder.exists():
            shutil.rmtree(folder)
        return table

    def table(self) -> pa.Table:
        rows = [self.rows[i] for i in sorted(self.rows)]
        return pa.Table.from_pylist(rows, schema=self.schema)


def open_results(plan: SweepPlan, out: Path, resume: bool) -> ResultsTable:
    """A new table, or with ``resume`` the rows of an earlier one and its parts; an earlier
    table or parts without ``resume`` are refused (they would be lost), as is a table of
    another sweep."""
    folder = parts_folder(out)
    found = [p for p in (out, folder) if p.exists()]
    if not resume:
        if found:
            raise ConfigError(
                found[0],
                "",
                MISSING,
                "a new results file: it exists (--resume "
                "continues that sweep; remove it to start again)",
            )
        return ResultsTable(plan, out, {})
    rows: dict[int, dict[str, Any]] = {}
    sources = [out] if out.exists() else []
    sources += sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []
    for path in sources:
        for row in _read(path, plan):
            rows[row["index"]] = row
    return ResultsTable(plan, out, rows)


def _read(path: Path, plan: SweepPlan) -> Iterable[dict[str, Any]]:
    expected = f"a results table of this sweep ({', '.join(schema_of(plan).names)})"
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as e:
        raise ConfigError(path, "", MISSING, f"{expected}; it cannot be read: {e}") from None
    if not table.schema.equals(schema_of(plan)):
        raise ConfigError(path, "", MISSING, f"{expected}; its columns differ")
    for row in table.to_pylist():
        index = row["index"]
        if not 0 <= index < len(plan.runs):
            raise ConfigError(path, "index", index, f"{expected}: an index below {len(plan.runs)}")
        run = plan.runs[index]
        if row["seed"] != run.seed or any(row[k] != v for k, v in run.values):
            raise ConfigError(
                path,
                f"run {index}",
                {k: row[k] for k in ("seed", *plan.paths)},
                f"{expected}: the run's seed and values "
                f"{run.settings()} (the [sweep] table changed?)",
            )
        yield row


def _write(table: pa.Table, path: Path) -> None:
    """Write deterministically (same rows, same bytes), whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(
        table,
        temporary,
        compression="zstd",
        row_group_size=ROW_GROUP_ROWS,
        write_statistics=True,
        store_schema=True,
    )
    os.replace(temporary, path)
