"""The results table: rows in parts consolidated by index whatever order they came in, and a
table of another sweep refused on resume."""

from __future__ import annotations

import math

import pyarrow.parquet as pq
import pytest
from sweep_scenarios import tiny_scenario

from hild.config import ConfigError
from hild.scenario.criteria import METRICS
from hild.scenario.file import load_scenario
from hild.sweep.plan import plan_sweep
from hild.sweep.table import open_results, parts_folder, row_of
from hild.sweep.worker import RunOutcome


def outcome(plan, index: int) -> RunOutcome:
    metrics = {m: float(index) for m in METRICS} | {"min_cpa_m": math.nan}
    return RunOutcome(
        index,
        plan.runs[index].seed,
        index % 3 != 0,
        "completed",
        20.0,
        metrics,
        (),
        (),
        -0.5,
        "0.1.0",
        0.05,
        True,
    )


def test_parts_in_any_order_make_the_same_file(tmp_path):
    plan = plan_sweep(load_scenario(str(tiny_scenario(tmp_path))))
    files = []
    for name, batches in (
        ("a", [[0, 1, 2], [3, 4, 5, 6, 7, 8, 9, 10, 11]]),
        ("b", [[11], [5, 3], [0, 1, 2, 4], [10, 9, 8, 7, 6]]),
    ):
        results = open_results(plan, tmp_path / f"{name}.parquet", resume=False)
        for batch in batches:
            results.write_part([row_of(plan, outcome(plan, i)) for i in batch])
        assert len(list(parts_folder(results.out).glob("part-*.parquet"))) == len(batches)
        results.consolidate()
        assert not parts_folder(results.out).exists()
        files.append(results.out)
    assert files[0].read_bytes() == files[1].read_bytes()
    rows = pq.read_table(files[0]).to_pylist()
    assert [r["index"] for r in rows] == list(range(12))
    assert rows[4]["min_cpa_m"] is None and rows[4]["xte_max_m"] == 4.0  # NaN: null


def test_resume_reads_parts_and_refuses_a_table_of_another_sweep(tmp_path):
    plan = plan_sweep(load_scenario(str(tiny_scenario(tmp_path))))
    results = open_results(plan, tmp_path / "t.parquet", resume=False)
    results.write_part([row_of(plan, outcome(plan, i)) for i in (2, 3)])
    assert sorted(open_results(plan, results.out, resume=True).rows) == [2, 3]
    with pytest.raises(ConfigError) as caught:
        open_results(plan, results.out, resume=False)  # not replaced without --resume
    assert caught.value.file == str(parts_folder(results.out))

    other = plan_sweep(load_scenario(str(tiny_scenario(tmp_path, "other.toml", seed=4))))
    with pytest.raises(ConfigError) as caught:
        open_results(other, results.out, resume=True)
    assert caught.value.key == "run 2" and "[sweep] table changed" in caught.value.expected
