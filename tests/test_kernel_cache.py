"""The compiled kernels' cache is keyed on the core's sources: a layout change recompiles.

numba checks only a kernel's own file for staleness. This test edits a layout constant in a
copy of the package (swapping the slots of two cross-flow coefficients, which the profile
packer and the kernel both read from the layout) and runs the same turn before and after:
compiled afresh, the swap changes nothing; a stale kernel would read sway's coefficient as
yaw's and turn differently.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from hild import kernel_cache
from hild.kernel_cache import PREFIX, announce_compiling, recall, remember, sources_key

REPO = Path(__file__).resolve().parents[1]
TURN = """
import json
from hild.profiles.vessel import load_profile
from hild.coupled.simulation import Simulation
sim = Simulation(load_profile("odin"), dt=0.01)
for side in ("port", "starboard"):
    sim.set_command(side + ".rpm", 1500.0)
    sim.set_command(side + ".deflector", 1.0)
    sim.set_command(side + ".nozzle_deg", 20.0)
sim.advance(1500)
print(json.dumps([float(v) for v in sim.x]))
"""


def run_turn(root: Path, cache: Path) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(root), "NUMBA_CACHE_DIR": str(cache)}
    p = subprocess.run(
        [sys.executable, "-c", TURN], env=env, cwd=root, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def test_a_layout_change_is_compiled_afresh(tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(REPO / "hild", root / "hild", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "profiles", root / "profiles")
    cache = tmp_path / "cache"
    before = run_turn(root, cache)
    layout = root / "hild" / "model" / "layout.py"
    text = layout.read_text()
    assert "P_CF_Y = 162" in text and "P_CF_N = 163" in text
    swapped = text.replace("P_CF_Y = 162", "P_CF_Y = SWAP").replace("P_CF_N = 163", "P_CF_N = 162")
    layout.write_text(swapped.replace("P_CF_Y = SWAP", "P_CF_Y = 163"))
    swapped = layout.read_text()
    assert "P_CF_Y = 163" in swapped and "P_CF_N = 162" in swapped
    after = run_turn(root, cache)
    # the same physics, bit for bit: the kernel saw the new layout. (With one cache directory
    # for both runs, numba loads the old kernel and the turn ends about 3.7 rad apart.)
    assert after == before
    keyed = sorted(p.name for p in cache.iterdir())
    assert len(keyed) == 2 and all(name.startswith(PREFIX) for name in keyed), keyed
    # numba kept the copy's tick kernels where kernels_cached looks for this install's
    ticks = kernel_cache.kernel_subfolder(str(root / "hild" / "coupled"))
    for key in keyed:
        assert any((cache / key / ticks).glob("*.nbi")), sorted((cache / key).iterdir())
    assert abs(before[11]) > 0.05  # it was turning (yaw rate, rad/s), so cross-flow drag acted


SEAS = """
import json, sys
import numpy as np
from hild.coupled.simulation import Simulation
from hild.environment.environment import Environment
from hild.environment.weather import WaveSpec, Weather
from hild.profiles.vessel import load_profile

def elevation_std(waves):
    v = load_profile("jolner")
    w = Weather("t", waves=WaveSpec("ittc", hs=2.5, omega_peak=0.5127)) if waves else Weather("t")
    sim = Simulation(v, dt=0.1, environment=Environment(w, v, 0.1, seed=1, duration=120.0))
    rows = sim.advance(1200, 1)
    return float(np.std(rows[:, sim.columns().index("wave_elevation")]))

print(json.dumps([elevation_std(sea == "waves") for sea in sys.argv[1:]]))
"""


def test_variants_compiled_in_two_processes_are_each_its_own_when_loaded_in_a_third(tmp_path):
    """A calm run compiles the calm sea's kernels in one process, a run in waves the waves'
    in another; a third process loading both from the cache must run each: before the variants
    were named apart (hild/compiled.py ``variant``), numba gave both the same symbol and the
    third ran the calm kernel in waves (a wave elevation of exactly 0)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def run(*seas: str) -> list[float]:
        p = subprocess.run(
            [sys.executable, "-c", SEAS, *seas],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout)

    (calm,) = run("calm")
    (waves,) = run("waves")
    assert calm == 0.0 and waves > 0.3  # an Hs of 2.5 m: a std of about 0.6 m
    assert run("calm", "waves") == [calm, waves]  # bit for bit: the same kernels


def test_the_key_follows_the_sources():
    assert len(sources_key()) == 16 and sources_key() == sources_key()
    assert os.environ["NUMBA_CACHE_DIR"].endswith(PREFIX + sources_key())  # set at import


def test_a_run_that_compiles_says_so_and_a_cached_one_does_not(tmp_path, monkeypatch, capsys):
    # A cold start compiles for seconds (a minute on a Raspberry Pi) before anything else is
    # printed; a silent wait that long looks like a hang. hild run, check and sim call this
    # before anything compiles (a cold `hild check` takes 14 s here: not worth it in the suite).
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel_cache, "_announced", False)  # (said once a process)
    announce_compiling()
    assert capsys.readouterr().err.startswith("hild: compiling the vessel model")
    # another checkout's or install's kernels of the same sources (a source tree's, beside a
    # wheel's): numba would compile this one's all the same, so the run says it compiles
    other = tmp_path / kernel_cache.kernel_subfolder("/elsewhere/hild/coupled")
    other.mkdir()
    (other / "loop.tick_kernel-60.py311.nbi").write_bytes(b"")
    monkeypatch.setattr(kernel_cache, "_announced", False)
    announce_compiling()
    assert capsys.readouterr().err.startswith("hild: compiling the vessel model")
    mine = tmp_path / kernel_cache.kernel_subfolder(kernel_cache.TICK_KERNELS)
    mine.mkdir()
    (mine / "loop.tick_kernel-60.py311.nbi").write_bytes(b"")
    monkeypatch.setattr(kernel_cache, "_announced", False)
    announce_compiling()
    assert capsys.readouterr().err == ""


def test_results_are_remembered_in_the_keyed_directory_only(tmp_path, monkeypatch):
    keyed = tmp_path / (PREFIX + "0123456789abcdef")
    keyed.mkdir()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(keyed))
    assert recall("a") is None
    remember("a", [1.5, float("inf"), "the sway decay"])
    remember("b", 2)
    assert recall("a") == [1.5, float("inf"), "the sway decay"] and recall("b") == 2
    (keyed / kernel_cache.MEMO_FILE).write_text('{"a": [1.5, ')  # torn: computed again
    assert recall("a") is None
    remember("a", 3)
    assert recall("a") == 3
    # a directory the user named without the sources' key would outlive a change of the core
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    remember("c", 1)
    assert recall("c") is None and not (tmp_path / kernel_cache.MEMO_FILE).exists()


def test_an_unwritable_cache_falls_back_to_the_temporary_folder(tmp_path, monkeypatch):
    """A home that cannot be written (a system user, a read-only image): the kernels go to a
    per-user folder in the temporary directory, keyed as usual, instead of failing."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/proc/no-cache-here")
    monkeypatch.setattr(kernel_cache.tempfile, "gettempdir", lambda: str(tmp_path))
    folder = kernel_cache.configure_kernel_cache()
    expected = tmp_path / f"hild-cache-{os.getuid()}" / (PREFIX + sources_key())
    assert folder == str(expected) and expected.is_dir()
    assert os.environ["NUMBA_CACHE_DIR"] == str(expected)
