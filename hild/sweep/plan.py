"""A scenario's ``[sweep]`` table, and the runs it makes.

```toml
[sweep]
name = "square-wind"        # default: the scenario's name; the default output is <name>.parquet
seed = 1                    # the sweep seed (default: the bench's seed)
seeds = 4                   # each parameter combination run with 4 seeds (default 1)
mode = "grid"               # grid (cartesian product of the values) | random | lhs
samples = 100               # random and lhs: how many samples (required there, refused in grid)

[sweep.parameters]          # dotted key paths into the scenario, as Scenario.with_values takes
"weather.wind_speed" = [0, 5, 10, 15]                               # a list of values
"traffic.tanker.encounter.cpa_m" = { from = 0, to = 400, step = 100 }  # a range, both ends in
"mission.acceptance_m" = { uniform = [5, 20] }                      # random and lhs only
```

The runs are numbered 0..N-1 in a fixed order. Grid: the cartesian product of the values,
the last parameter varying fastest; random and lhs: ``samples`` samples drawn from the sweep
seed. Each combination or sample is run ``seeds`` times, one index after the other. A run's
bench seed (``bench.seed``) comes from the sweep seed and the run's index alone, so a run is
the same whichever worker runs it, in whatever order, with however many others.

In random mode a list or range is sampled uniformly among its values and a ``uniform`` range
uniformly between its ends; lhs does the same from a Latin hypercube (each parameter's range
cut into ``samples`` strata, one sample in each).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from hild.config import MISSING, ConfigError, Problems, Section
from hild.scenario.criteria import METRICS
from hild.scenario.file import Scenario, ScenarioError
from hild.scenario.fleet import fleet_metric_names
from hild.sweep.sampling import latin_hypercube_unit, random_unit, sample_rng

MODES = ("grid", "random", "lhs")
SEED_KEY = "bench.seed"
SEED_LIMIT = 2**31  # run seeds are below this: an int32 in any tool that reads the table
MAX_RUNS = 1_000_000
MAX_RANGE_VALUES = 100_000
VALUES_EXPECTED = (
    "a list of values (numbers, strings or booleans), a range { from = A, to = B, step = S } "
    "or, with mode random or lhs, { uniform = [LOW, HIGH] }"
)
CHECKED_VALUES_PER_PARAMETER = 50  # up front, each value of a list is tried up to this many


@dataclass(frozen=True)
class Parameter:
    """One swept key path: its values (a list or a range) or a uniform range."""

    path: str
    kind: str  # the table column's type: int, float, bool or string
    values: tuple[Any, ...] = ()
    uniform: tuple[float, float] | None = None

    def extremes(self) -> tuple[Any, ...]:
        """The values to try before the sweep starts: a list's (up to a limit), a range's ends."""
        if self.uniform is not None:
            return self.uniform
        values = self.values
        if len(values) <= CHECKED_VALUES_PER_PARAMETER:
            return values
        return (values[0], values[-1])


@dataclass(frozen=True)
class Run:
    index: int
    values: tuple[tuple[str, Any], ...]  # (key path, value) in the parameters' order
    seed: int

    def settings(self) -> dict[str, Any]:
        """What the scenario is run with: the values and the run's bench seed."""
        return {**dict(self.values), SEED_KEY: self.seed}


@dataclass(frozen=True)
class SweepPlan:
    file: str
    name: str
    seed: int
    seeds: int
    mode: str
    samples: int | None
    parameters: tuple[Parameter, ...]
    runs: tuple[Run, ...]
    # the table's metric columns: METRICS, and a fleet's separation and each boat's metrics
    metrics: tuple[str, ...] = METRICS

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(p.path for p in self.parameters)


def run_seed(sweep_seed: int, index: int) -> int:
    """A run's bench seed: from the sweep seed and the run's index only."""
    state = np.random.SeedSequence([sweep_seed, index]).generate_state(1)[0]
    return int(state) % SEED_LIMIT


def plan_sweep(scenario: Scenario) -> SweepPlan:
    """Read the scenario's [sweep] table (every problem at once) and make its runs."""
    file = scenario.file
    problems = Problems()
    root = Section(scenario.document, file)
    if not isinstance(scenario.document.get("sweep"), dict):
        raise ScenarioError(
            [
                ConfigError(
                    file,
                    "sweep",
                    scenario.document.get("sweep", MISSING),
                    "a [sweep] table with [sweep.parameters] or seeds (docs/sweeps.md)",
                )
            ]
        )
    section = root.table("sweep", required=True)
    name = problems.attempt(lambda: section.name("name", scenario.name, default_from="scenario"))
    seed = problems.attempt(lambda: section.integer("seed", scenario.seed, lo=0), default=0)
    seeds = problems.attempt(lambda: section.integer("seeds", 1, lo=1), default=1)
    mode = problems.attempt(lambda: section.string("mode", "grid", choices=MODES), default="grid")
    samples = None
    section.skip("samples")
    if mode in ("random", "lhs"):
        samples = problems.attempt(lambda: section.integer("samples", lo=1), default=1)
    elif section.has("samples") and not problems.failed(section.key("mode")):
        problems.add(
            section.error(
                "samples",
                section.raw("samples"),
                "no samples in mode grid (a grid runs every combination; "
                'mode = "random" or "lhs" draws samples)',
            )
        )
    # a mode that failed is no reason to refuse uniform ranges too
    read_as = "random" if problems.failed(section.key("mode")) else mode
    parameters = problems.attempt(lambda: _parameters(section, read_as), default=())
    problems.attempt(section.finish)
    if not problems.errors:
        count = _combinations(parameters, mode, samples) * seeds
        if count > MAX_RUNS:
            problems.add(
                section.error(
                    "parameters",
                    MISSING,
                    f"a sweep of at most {MAX_RUNS} runs (this one makes {count})",
                )
            )
    if problems.errors:
        raise ScenarioError(problems.in_order())
    runs = _runs(parameters, mode, samples, seeds, seed)
    metrics = (*METRICS, *fleet_metric_names(scenario))
    return SweepPlan(file, name, seed, seeds, mode, samples, parameters, runs, metrics)


def check_runs(scenario: Scenario, plan: SweepPlan) -> None:
    """Apply the first and last runs' values, and each parameter's values (its list, up to a
    limit, or its range's ends) to the scenario: a path that leads nowhere or a value the
    scenario refuses is a ScenarioError before any run starts."""
    problems = Problems()
    if not plan.runs:
        return
    first = plan.runs[0].settings()
    trials = [first, plan.runs[-1].settings()]
    for p in plan.parameters:
        trials.extend({**first, p.path: value} for value in p.extremes())
    seen: set[tuple] = set()
    for settings in trials:
        key = tuple((k, repr(v)) for k, v in settings.items() if k != SEED_KEY)
        if key in seen:
            continue
        seen.add(key)
        try:
            scenario.with_values(settings)
        except ConfigError as e:
            for error in getattr(e, "errors", [e]):
                if problems.failed(error.key):
                    continue  # each key once, with the first value it refused
                problems.add(
                    ConfigError(
                        error.file,
                        error.key,
                        error.value,
                        f"{error.expected} (a value of [sweep.parameters])",
                    )
                )
    if problems.errors:
        raise ScenarioError(problems.in_order())


def _parameters(section: Section, mode: str) -> tuple[Parameter, ...]:
    table = section.table("parameters")
    if table is None:
        return ()
    problems = Problems()
    out = []
    for path in list(table.data):
        parameter = problems.attempt(lambda p=path: _parameter(table, p, mode))
        if parameter is not None:
            out.append(parameter)
    problems.raise_any()
    return tuple(out)


def _parameter(table: Section, path: str, mode: str) -> Parameter:
    raw = table.raw(path)
    if not path or any(not part for part in path.split(".")):
        raise table.error(path, raw, "a dotted key path such as weather.wind_speed")
    if path == SEED_KEY:
        raise table.error(
            path,
            raw,
            "a key other than bench.seed: the runs' seeds come from [sweep] seed and seeds",
        )
    if isinstance(raw, list):
        return _listed(table, path, raw)
    if isinstance(raw, dict) and set(raw) == {"uniform"}:
        return _uniform(table, path, raw["uniform"], mode)
    if isinstance(raw, dict) and set(raw) == {"from", "to", "step"}:
        return _range(table, path, raw)
    raise table.error(path, raw, VALUES_EXPECTED)


def _listed(table: Section, path: str, raw: list) -> Parameter:
    expected = "a non-empty list of distinct values, all numbers, all strings or all booleans"
    if not raw:
        raise table.error(path, raw, expected)
    if all(isinstance(v, bool) for v in raw):
        kind = "bool"
    elif all(isinstance(v, str) for v in raw):
        kind = "string"
    elif all(_is_number(v) for v in raw):
        if not all(math.isfinite(v) for v in raw):
            raise table.error(path, raw, "a list of finite numbers")
        kind = "int" if all(isinstance(v, int) for v in raw) else "float"
    else:
        raise table.error(path, raw, expected)
    values = tuple(float(v) for v in raw) if kind == "float" else tuple(raw)
    if len(set(values)) != len(values):
        raise table.error(path, raw, expected)
    return Parameter(path, kind, values=values)


def _range(table: Section, path: str, raw: dict) -> Parameter:
    start, stop, step = raw["from"], raw["to"], raw["step"]
    expected = "a range { from = A, to = B, step = S }: finite numbers, S > 0, B >= A"
    if not all(_is_number(v) and math.isfinite(v) for v in (start, stop, step)):
        raise table.error(path, raw, expected)
    if step <= 0 or stop < start:
        raise table.error(path, raw, expected)
    count = math.floor((stop - start) / step + 1e-9) + 1
    if count > MAX_RANGE_VALUES:
        raise table.error(
            path, raw, f"a range of at most {MAX_RANGE_VALUES} values (this one has {count})"
        )
    if all(isinstance(v, int) for v in (start, stop, step)):
        return Parameter(path, "int", values=tuple(start + k * step for k in range(count)))
    # rounded to 12 significant digits: 0.1 steps give 0.3, not 0.30000000000000004
    values = tuple(float(f"{start + k * step:.12g}") for k in range(count))
    return Parameter(path, "float", values=values)


def _uniform(table: Section, path: str, bounds: Any, mode: str) -> Parameter:
    if mode == "grid":
        raise table.error(
            path,
            {"uniform": bounds},
            'a list or a range in mode grid (uniform ranges are sampled: mode = "random" or "lhs")',
        )
    ok = (
        isinstance(bounds, list)
        and len(bounds) == 2
        and all(_is_number(v) and math.isfinite(v) for v in bounds)
        and bounds[0] < bounds[1]
    )
    if not ok:
        raise table.error(
            path, {"uniform": bounds}, "{ uniform = [LOW, HIGH] }: two finite numbers, LOW < HIGH"
        )
    return Parameter(path, "float", uniform=(float(bounds[0]), float(bounds[1])))


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _combinations(parameters: tuple[Parameter, ...], mode: str, samples: int | None) -> int:
    if mode != "grid":
        return samples or 1
    return math.prod(len(p.values) for p in parameters)


def _runs(
    parameters: tuple[Parameter, ...], mode: str, samples: int | None, seeds: int, sweep_seed: int
) -> tuple[Run, ...]:
    paths = [p.path for p in parameters]
    if mode == "grid":
        combinations = list(itertools.product(*(p.values for p in parameters)))
    else:
        assert samples is not None
        rng = sample_rng(sweep_seed)
        draw = latin_hypercube_unit if mode == "lhs" else random_unit
        unit = draw(samples, len(parameters), rng)
        combinations = [
            tuple(_at(p, float(u)) for p, u in zip(parameters, row, strict=True)) for row in unit
        ]
    runs = []
    for c, combination in enumerate(combinations):
        values = tuple(zip(paths, combination, strict=True))
        for k in range(seeds):
            index = c * seeds + k
            runs.append(Run(index, values, run_seed(sweep_seed, index)))
    return tuple(runs)


def _at(parameter: Parameter, u: float) -> Any:
    """The parameter's value at u in [0, 1): along a uniform range, or among its values."""
    if parameter.uniform is not None:
        low, high = parameter.uniform
        return low + u * (high - low)
    values = parameter.values
    return values[min(int(u * len(values)), len(values) - 1)]
