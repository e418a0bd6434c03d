"""What a sweep's worker runs, in this process: a run with its values and seed, and a run
that raises recorded as a failed run rather than ending the batch."""

from __future__ import annotations

import math

from sweep_scenarios import tiny_scenario

from hild.scenario.file import load_scenario
from hild.scenario.lockstep import run_lockstep
from hild.sweep.plan import plan_sweep
from hild.sweep.worker import run_batch, sweep_job


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def test_a_batch_runs_each_run_with_its_values_and_seed(tmp_path):
    scenario = load_scenario(str(tiny_scenario(tmp_path)))
    plan = plan_sweep(scenario)
    runs = (plan.runs[7], plan.runs[2])
    outcomes = run_batch(sweep_job(scenario), runs)
    assert [o.index for o in outcomes] == [7, 2]
    for run, outcome in zip(runs, outcomes, strict=True):
        alone = run_lockstep(scenario.with_values(run.settings()))
        assert outcome.seed == run.seed == alone.seed
        assert outcome.metrics.keys() == alone.metrics.keys()
        assert all(same(outcome.metrics[k], alone.metrics[k]) for k in alone.metrics)
        assert outcome.duration_s == alone.duration_s and outcome.passed == alone.passed
    assert outcomes[1].warm


def test_a_run_that_raises_is_a_failed_run_and_the_batch_goes_on(tmp_path):
    path = tiny_scenario(tmp_path)
    path.write_text(path.read_text().replace("pilot = true", 'python = "no_such_module:make"'))
    scenario = load_scenario(str(path))
    plan = plan_sweep(scenario)
    outcomes = run_batch(sweep_job(scenario), plan.runs[:2])
    assert [o.index for o in outcomes] == [0, 1]
    for outcome in outcomes:
        assert not outcome.passed and outcome.ended == "error" and outcome.failed == ("error",)
        assert (
            "ModuleNotFoundError" in outcome.failures[0] and "no_such_module" in outcome.failures[0]
        )
        assert math.isinf(outcome.margin) and all(math.isnan(v) for v in outcome.metrics.values())


MISBEHAVES = """\
python = "tests.controllers:misbehaves"
step_timeout_s = 0.2

[controller.options]
after_s = 1.0
"""


def test_a_run_whose_controller_fails_it_is_marked_and_the_batch_goes_on(tmp_path):
    """A controller that raises, hangs or floods fails its run (``controller_error``, its own
    message first among the failures), and the runs after it in the batch run as usual."""
    modes = '"controller.options.mode" = ["raises", "sleeps", "floods", "ok"]'
    path = tiny_scenario(tmp_path, sweep="seeds = 1", parameters=modes)
    path.write_text(path.read_text().replace("pilot = true\n", MISBEHAVES))
    scenario = load_scenario(str(path))
    outcomes = run_batch(sweep_job(scenario), plan_sweep(scenario).runs)
    assert [o.index for o in outcomes] == [0, 1, 2, 3]
    *failed, ok = outcomes
    says = [
        "raised ZeroDivisionError",
        "took longer than 0.2 s (controller.step_timeout_s)",
        "returned 100000 lines in one step, the limit is 1000",
    ]
    for outcome, said in zip(failed, says, strict=True):
        assert not outcome.passed and outcome.ended == "controller_error"
        assert outcome.failed[0] == "controller_error" and outcome.duration_s == 1.0
        assert outcome.failures[0].startswith("the controller tests.controllers:misbehaves (")
        assert f"failed: its step at t=1.00 s {said}" in outcome.failures[0]
        assert math.isinf(outcome.margin) and not math.isnan(outcome.metrics["xte_max_m"])
    assert ok.passed and ok.ended == "completed" and ok.failed == () and ok.margin < 0
