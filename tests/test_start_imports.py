"""What a run imports before its clock starts: a bench without AIS does not wait for pyais
(about 0.1 s of every start), and a bench with an AIS device imports it while its devices are
made, before any tick could need it (an import in a tick would stop the ticks for as long)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# What `hild run` imports, then the bench loaded, then its devices made as the daemon makes
# them: prints whether pyais was imported after each step.
PROBE = """
import sys
import hild.cli, hild.run
from hild.bench import load_bench
from hild.devices.registry import build_device
imported = ["pyais" in sys.modules]
bench = load_bench(sys.argv[1])
imported.append("pyais" in sys.modules)
for config in bench.devices:
    build_device(config, bench.seed, bench.origin, bench.vessel)
imported.append("pyais" in sys.modules)
print(*imported)
"""


def pyais_imported(bench: str) -> list[str]:
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, bench], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert probe.returncode == 0, probe.stderr
    return probe.stdout.split()


def test_a_bench_without_ais_never_imports_pyais():
    assert pyais_imported("default") == ["False", "False", "False"]


@pytest.mark.parametrize("bench", ["busy-fjord", "head-on"])
def test_a_bench_with_ais_imports_pyais_when_its_devices_are_made(bench):
    imported = pyais_imported(bench)
    assert imported[0] == "False"  # not by hild's own imports
    assert imported[-1] == "True"  # by the time the devices exist, before a clock starts


# An AIS device made from its configuration alone (unpickled: no bench loaded, so nothing
# else has imported pyais): prints whether pyais was imported before and after.
DEVICE_PROBE = """
import pickle, sys
config, seed, origin = pickle.loads(sys.stdin.buffer.read())
from hild.devices.registry import build_device
before = "pyais" in sys.modules
build_device(config, seed, origin)
print(before, "pyais" in sys.modules)
"""


def test_an_ais_device_imports_pyais_when_it_is_made(tmp_path):
    """The device itself asks for pyais (its first report would otherwise import it in a
    tick); a loaded bench's port budget happens to import it earlier, so this makes the
    device from its configuration alone."""
    import pickle

    from hild.bench import load_bench

    bench = load_bench("busy-fjord")
    (config,) = [d for d in bench.devices if d.model == "ais"]
    probe = subprocess.run(
        [sys.executable, "-c", DEVICE_PROBE],
        cwd=ROOT,
        capture_output=True,
        input=pickle.dumps((config, bench.seed, bench.origin)),
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr.decode()
    assert probe.stdout.split() == [b"False", b"True"]


# What `hild run` and `hild sim` import with no --record and no --mqtt; then a Recorder's and
# a Mirror's imports, as their start makes them (before the clock: the daemon starts its
# observers first).
OPTIONAL_PROBE = """
import sys
import hild.cli, hild.run, hild.sim
optional = ("mcap", "zstandard", "aiomqtt", "paho")
print(*[name in sys.modules for name in optional])
from hild.record.writer import RecordWriter
from hild.mirror.session import Session
print(*[name in sys.modules for name in optional])
"""


def test_a_run_that_neither_records_nor_mirrors_imports_neither():
    """mcap and zstandard (about 12 ms) load only for a recording, aiomqtt and paho (about 18
    ms) only for a mirror: not in every run's or sim's start."""
    probe = subprocess.run(
        [sys.executable, "-c", OPTIONAL_PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.splitlines() == ["False False False False", "True True True True"]
