"""Short scenarios for the sweep tests: square-calm's boat and pilot on a two-leg mission that
ends within 20 s, a run taking ~0.05 s."""

from __future__ import annotations

from pathlib import Path

TINY = """\
[scenario]
name = "tiny"
bench = "default"
duration_s = 20
stop_when_complete = true
{resources}

[mission]
speed = 5.0
acceptance_m = 15
waypoints = [{{ north = 40, east = 0 }}, {{ north = 40, east = 40 }}]

[controller]
pilot = true

[criteria]
xte_max_m = {xte_max_m}
max_roll_deg = 15

[sweep]
seed = {seed}
{sweep}

[sweep.parameters]
{parameters}
"""

PARAMETERS = """\
"weather.wind_speed" = [0, 8]
"mission.acceptance_m" = { from = 10, to = 20, step = 5 }
"""


def tiny_scenario(
    folder: Path,
    name: str = "tiny.toml",
    *,
    sweep: str = "seeds = 2",
    parameters: str = PARAMETERS,
    xte_max_m: float = 50.0,
    resources: str = "",
    seed: int = 3,
) -> Path:
    path = folder / name
    path.write_text(
        TINY.format(
            sweep=sweep, parameters=parameters, xte_max_m=xte_max_m, resources=resources, seed=seed
        )
    )
    return path
