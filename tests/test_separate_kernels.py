"""A run compiles only what it uses: its integrator's step and, only for a sea with waves, the
wave code (separate kernels, chosen when the run starts, not flags tested at every step). A
daemon's simulation, whose weather can change as it runs, takes the kernels for any sea.

Checked in a fresh process with an empty kernel cache, so that every kernel the run needs is
compiled there: a kernel loaded from the cache carries no typing to look at. The wave code is
looked for by name in each kernel's typed code (``kick`` and ``lam`` step the wave force's
filters in env_advance; ``slope_x`` and ``surf0`` are the surface's slope and heave in
env_outputs, inlined there from ``evaluate``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hild.environment.kernel import SEA_CALM, SEA_WAVES

ROOT = Path(__file__).resolve().parents[1]
WAVE_VARIABLES = {"kick", "lam", "slope_x", "surf0"}

PROBE = """
import json
import numpy as np
from numba import njit
from hild.coupled.loop import run_kernel
from hild.coupled.simulation import Simulation
from hild.coupled.ticks import ticks_kernel
from hild.environment import kernel as K
from hild.environment.kernel import SEA_ANY, SEA_CALM, SEA_WAVES
from hild.environment.environment import Environment
from hild.model import integrators as I
from hild.model.layout import METHOD_DOPRI5, METHOD_RK4
from hild.profiles.vessel import load_profile
from hild.profiles.weather import load_weather

odin = load_profile("odin")
calm = Environment(load_weather("calm"), odin, 0.05, 1, 60.0)
sim = Simulation(odin, 0.05, "rk4", calm)
sim.set_command("port.rpm", 1200.0)
sim.tick()
sim.advance(20, 5)
sim.tick_track(5, np.zeros((5, 5)), 0)
compiled_calm = {
    name: bool(kernel.signatures)
    for name, kernel in {
        "step_rk4": I.step_rk4, "rk4_step": I.rk4_step,
        "step_dopri5": I.step_dopri5, "dopri5_step": I.dopri5_step,
        "env_outputs_calm": K.env_outputs_calm, "env_advance_calm": K.env_advance_calm,
        "env_outputs_waves": K.env_outputs_waves, "env_advance_waves": K.env_advance_waves,
        "env_outputs_any": K.env_outputs_any, "env_advance_any": K.env_advance_any,
        "run rk4 calm": run_kernel(METHOD_RK4, SEA_CALM),
        "run dopri5 calm": run_kernel(METHOD_DOPRI5, SEA_CALM),
        "run rk4 waves": run_kernel(METHOD_RK4, SEA_WAVES),
        "run rk4 any": run_kernel(METHOD_RK4, SEA_ANY),
        "ticks rk4 calm": ticks_kernel(METHOD_RK4, SEA_CALM),
        "ticks rk4 waves": ticks_kernel(METHOD_RK4, SEA_WAVES),
    }.items()
}
waves = Environment(load_weather("gale-hs1"), odin, 0.05, 1, 60.0)
Simulation(odin, 0.05, "rk4", waves).tick()
daemons = Simulation(odin, 0.05, "rk4", Environment(load_weather("calm"), odin, 0.05, 1, 60.0),
                     weather_may_change=True)
daemons.tick()
variables = {}
for name, kernel in {
    "env_outputs_calm": K.env_outputs_calm, "env_advance_calm": K.env_advance_calm,
    "env_outputs_waves": K.env_outputs_waves, "env_advance_waves": K.env_advance_waves,
    "env_outputs_any": K.env_outputs_any, "env_advance_any": K.env_advance_any,
}.items():
    (signature,) = kernel.signatures
    variables[name] = sorted(kernel.overloads[signature].type_annotation.typemap)
# the reference counts left in a kernel's compiled code, its callees' included; and in the
# step's own code compiled with numba's defaults (the witness that the count finds them)
plain_step = njit(I.step_rk4.py_func)
plain_step.compile(I.step_rk4.signatures[0])
refcounts = {
    name: sum(text.count("call void @NRT_incref") for text in kernel.inspect_llvm().values())
    for name, kernel in {
        "step_rk4": I.step_rk4,
        "env_outputs_calm": K.env_outputs_calm,
        "env_advance_calm": K.env_advance_calm,
        "ticks rk4 calm": ticks_kernel(METHOD_RK4, SEA_CALM),
        "run rk4 calm": run_kernel(METHOD_RK4, SEA_CALM),
        "the step as plain njit": plain_step,
    }.items()
}
print(json.dumps({"compiled": compiled_calm, "variables": variables, "refcounts": refcounts,
                  "seas": [K.sea_of(calm.B), K.sea_of(waves.B)]}))
"""


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """What the probe found, once for the module (it compiles every kernel it looks at)."""
    return probe(tmp_path_factory.mktemp("probe"))


def probe(tmp_path: Path) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "kernels-empty")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def wave_variables(names: list[str]) -> set[str]:
    """The wave code's variables among a kernel's typed variables (inlined ones carry their
    function's prefix, e.g. ``evaluate_v2_slope_x``; versions a suffix, ``kick.1``)."""
    found = set()
    for name in names:
        bare = name.split(".")[0]
        for wanted in WAVE_VARIABLES:
            if re.search(rf"(^|_){wanted}$", bare):
                found.add(wanted)
    return found


def test_a_calm_rk4_run_compiles_neither_dopri5_nor_the_wave_code(probed):
    result = probed
    assert result["seas"] == [SEA_CALM, SEA_WAVES]
    compiled = result["compiled"]
    assert {name for name, done in compiled.items() if done} == {
        "step_rk4",
        "rk4_step",
        "env_outputs_calm",
        "env_advance_calm",
        "run rk4 calm",
        "ticks rk4 calm",
    }
    variables = {name: wave_variables(names) for name, names in result["variables"].items()}
    assert variables["env_outputs_calm"] == set()
    assert variables["env_advance_calm"] == set()
    # the same names are found in the wave kernels, and in a daemon's (any sea): the search
    # can find what it looks for
    assert variables["env_outputs_waves"] == variables["env_outputs_any"] == {"slope_x", "surf0"}
    assert variables["env_advance_waves"] == variables["env_advance_any"] == {"kick", "lam"}


def test_the_step_counts_no_references(probed):
    """The kernels on a step's path are compiled without numba's reference counting
    (hild/compiled.py): their compiled code, callees included, has no atomic increment of an
    array's count. The same step's code compiled with numba's defaults has them: the search
    finds what it looks for."""
    refcounts = dict(probed["refcounts"])
    assert refcounts.pop("the step as plain njit") > 0
    assert refcounts == {
        "step_rk4": 0,
        "env_outputs_calm": 0,
        "env_advance_calm": 0,
        "ticks rk4 calm": 0,
        "run rk4 calm": 0,
    }
