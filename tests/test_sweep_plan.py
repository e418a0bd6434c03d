"""hild sweep's plan: the [sweep] table, the runs' order, values and seeds, and its errors."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from sweep_scenarios import tiny_scenario

from hild.config import ConfigError
from hild.scenario.file import load_scenario
from hild.sweep.plan import check_runs, plan_sweep, run_seed
from hild.sweep.summary import rerun_command, worst_rows


def plan_of(tmp_path, **kw):
    return plan_sweep(load_scenario(str(tiny_scenario(tmp_path, **kw))))


def test_grid_runs_the_cartesian_product_last_parameter_fastest_each_with_its_seeds(tmp_path):
    plan = plan_of(tmp_path)
    assert plan.name == "tiny" and plan.seed == 3 and plan.seeds == 2 and plan.mode == "grid"
    assert [r.index for r in plan.runs] == list(range(12))
    combos = [dict(r.values) for r in plan.runs]
    assert combos[::2] == [
        {"weather.wind_speed": w, "mission.acceptance_m": a} for w in (0, 8) for a in (10, 15, 20)
    ]
    assert combos[1::2] == combos[::2]  # each combination twice: seeds = 2, one after the other
    assert [p.kind for p in plan.parameters] == ["int", "int"]


def test_a_range_includes_both_ends_and_float_steps_stay_round(tmp_path):
    plan = plan_of(
        tmp_path, sweep="", parameters='"weather.wind_speed" = { from = 0, to = 0.3, step = 0.1 }'
    )
    assert [dict(r.values)["weather.wind_speed"] for r in plan.runs] == [0.0, 0.1, 0.2, 0.3]
    assert plan.parameters[0].kind == "float"


def test_seeds_come_from_the_sweep_seed_and_the_index_alone(tmp_path):
    plan = plan_of(tmp_path)
    assert [r.seed for r in plan.runs] == [run_seed(3, i) for i in range(12)]
    assert len({r.seed for r in plan.runs}) == 12
    other = plan_of(tmp_path, parameters='"weather.wind_speed" = [1, 2, 3]')
    assert [r.seed for r in other.runs] == [r.seed for r in plan.runs[:6]]
    reseeded = plan_of(tmp_path, seed=4)
    assert all(a.seed != b.seed for a, b in zip(plan.runs, reseeded.runs, strict=True))
    assert all(0 <= r.seed < 2**31 for r in plan.runs)


SAMPLED = """\
"weather.wind_speed" = { uniform = [0, 10] }
"mission.acceptance_m" = [10, 12, 14, 16]
"""


@pytest.mark.parametrize("mode", ["random", "lhs"])
def test_samples_are_reproducible_from_the_sweep_seed(tmp_path, mode):
    def values(seed):
        plan = plan_of(
            tmp_path, sweep=f'mode = "{mode}"\nsamples = 20', seed=seed, parameters=SAMPLED
        )
        assert len(plan.runs) == 20
        return [r.values for r in plan.runs]

    first = values(7)
    assert values(7) == first
    assert values(8) != first
    for run in first:
        wind, acceptance = dict(run)["weather.wind_speed"], dict(run)["mission.acceptance_m"]
        assert 0.0 <= wind < 10.0 and acceptance in (10, 12, 14, 16)


def test_a_latin_hypercube_puts_one_sample_in_each_stratum_of_each_parameter(tmp_path):
    plan = plan_of(tmp_path, sweep='mode = "lhs"\nsamples = 20\nseeds = 2', parameters=SAMPLED)
    assert len(plan.runs) == 40
    samples = [dict(r.values) for r in plan.runs[::2]]
    strata = sorted(math.floor(s["weather.wind_speed"] / 10.0 * 20) for s in samples)
    assert strata == list(range(20))
    assert Counter(s["mission.acceptance_m"] for s in samples) == {10: 5, 12: 5, 14: 5, 16: 5}
    # plain random sampling is not stratified (with this seed it misses strata)
    rand = plan_of(tmp_path, sweep='mode = "random"\nsamples = 20', parameters=SAMPLED)
    wind = [math.floor(dict(r.values)["weather.wind_speed"] / 0.5) for r in rand.runs]
    assert len(set(wind)) < 20


def test_every_problem_of_the_sweep_table_at_once_naming_its_key(tmp_path):
    with pytest.raises(ConfigError) as caught:
        plan_of(
            tmp_path,
            sweep='sed = 1\nmode = "grd"\nseeds = 0',
            parameters=(
                '"bench.seed" = [1]\n"a..c" = [1]\n"x.y" = [1, "a"]\n'
                '"x.z" = { from = 3, to = 1, step = 1 }\n"x.w" = 5'
            ),
        )
    keys = {e.key: e for e in caught.value.errors}
    assert set(keys) == {
        "sweep.sed",
        "sweep.mode",
        "sweep.seeds",
        "sweep.parameters.bench.seed",
        "sweep.parameters.a..c",
        "sweep.parameters.x.y",
        "sweep.parameters.x.z",
        "sweep.parameters.x.w",
    }
    assert all(e.file.endswith("tiny.toml") for e in caught.value.errors)
    assert "did you mean 'seed'" in keys["sweep.sed"].expected
    assert keys["sweep.seeds"].value == 0


def test_uniform_needs_samples_and_samples_need_a_sampling_mode(tmp_path):
    with pytest.raises(ConfigError) as caught:
        plan_of(tmp_path, sweep="samples = 5", parameters='"a.b" = { uniform = [1, 2] }')
    assert {e.key for e in caught.value.errors} == {"sweep.samples", "sweep.parameters.a.b"}
    with pytest.raises(ConfigError) as caught:
        plan_of(tmp_path, sweep='mode = "lhs"', parameters='"a.b" = { uniform = [2, 1] }')
    assert {e.key for e in caught.value.errors} == {"sweep.samples", "sweep.parameters.a.b"}


@pytest.mark.parametrize(
    ("parameters", "key", "expected"),
    [
        ('"weather.wind.speed" = [1, 2]', "weather.wind", "a known key"),
        ('"weather.wind_speed" = [0, 500]', "weather.wind_speed", "at most"),
        ('"mission.acceptance_m" = ["far"]', "mission.acceptance_m", "a number"),
        ('"device.nosuch.rate_hz" = [1]', "device.nosuch", "a name in [[device]]"),
    ],
)
def test_paths_and_values_are_tried_on_the_scenario_before_any_run(
    tmp_path, parameters, key, expected
):
    scenario = load_scenario(str(tiny_scenario(tmp_path, parameters=parameters)))
    plan = plan_sweep(scenario)
    with pytest.raises(ConfigError) as caught:
        check_runs(scenario, plan)
    errors = getattr(caught.value, "errors", [caught.value])
    assert [e.key for e in errors] == [key]
    assert expected in errors[0].expected and "[sweep.parameters]" in errors[0].expected


def test_a_scenario_without_a_sweep_table_is_refused(tmp_path):
    path = tiny_scenario(tmp_path)
    path.write_text(path.read_text().split("[sweep]")[0])
    with pytest.raises(ConfigError) as caught:
        plan_sweep(load_scenario(str(path)))
    assert caught.value.key == "sweep"


def test_worst_runs_failed_first_then_nearest_to_failing_and_their_commands(tmp_path):
    plan = plan_of(
        tmp_path,
        sweep="",
        parameters='"weather.wind_speed" = [0, 8]\n"controller.protocol" = ["iec"]',
    )
    rows = [
        {"index": 0, "passed": True, "margin": -0.5},
        {"index": 1, "passed": False, "margin": 0.2},
        {"index": 2, "passed": True, "margin": -0.1},
        {"index": 3, "passed": False, "margin": math.inf},
        {"index": 4, "passed": True, "margin": math.nan},
    ]
    assert [r["index"] for r in worst_rows(rows)] == [3, 1, 2, 0, 4]
    row = {"seed": 42, "weather.wind_speed": 8, "controller.protocol": "iec"}
    assert rerun_command("my runs/s.toml", plan, row) == (
        "hild scenario run 'my runs/s.toml' --seed 42 --set weather.wind_speed=8 "
        "--set 'controller.protocol=\"iec\"'"
    )
