"""hild installs as any Python tool does: a non-editable install from a source tree and a wheel
built with `python -m build`, each in a fresh venv outside the checkout, give a working `hild`
from `/` with every built-in bench, profile, weather preset and device type."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
import setuptools

from tests.endpoints import free_udp_port

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
BUILTIN = {
    "profiles": "hild/builtin/profiles",
    "devices": "hild/builtin/devices",
    "systemd": "hild/builtin/systemd",
}


def builtin_sources() -> list[Path]:
    """Every built-in file of the source tree (benches, profiles, weather presets, device types,
    systemd units, ArduPilot parameter files), relative to it."""
    found = [
        p
        for top in BUILTIN
        for p in (ROOT / top).rglob("*")
        if p.suffix in (".toml", ".service", ".parm")
    ]
    return sorted(p.relative_to(ROOT) for p in found)


def in_package(source: Path) -> str:
    """Where a built-in file of the source tree lies inside the installed package."""
    top, *rest = source.parts
    return "/".join([BUILTIN[top], *rest])


def test_the_package_list_names_every_package_of_the_tree():
    # pyproject lists the packages by hand (the data packages are mapped from elsewhere):
    # a new package under hild/ must be added there, or a wheel would lack it
    code = set(setuptools.find_packages(str(ROOT), include=["hild*"]))
    data = {name for name in PYPROJECT["packages"] if name.startswith("hild.builtin.")}
    assert set(PYPROJECT["packages"]) == code | data
    subfolders = {
        f"{top}/{d.name}" for top in BUILTIN for d in (ROOT / top).iterdir() if d.is_dir()
    }
    folders = set(BUILTIN) | subfolders
    assert data == {"hild.builtin." + f.replace("/", ".") for f in folders}


def tree_copy(destination: Path) -> Path:
    """The source tree as a user's clone has it: no venv, no build leftovers, no caches."""
    ignore = shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "out"
    )
    return Path(shutil.copytree(ROOT, destination / "hild-source", ignore=ignore))


def fresh_venv(where: Path) -> Path:
    """A new venv outside the checkout whose only extra path is the test venv's packages, so
    hild's dependencies (numpy, numba, ...) need no download; hild itself is not there."""
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # a plain path line: the test venv's own .pth files (its editable hild) are not processed
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def pip_install(venv: Path, *what: str) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            *what,
        ],
        check=True,
        cwd="/",
        capture_output=True,
        text=True,
    )


def hild(venv: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The installed `hild`, run from `/` as a user elsewhere on the machine would."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("HILD_")}
    return subprocess.run(
        [str(venv / "bin" / "hild"), *args],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def exercise(venv: Path, tmp: Path) -> None:
    """The acceptance trio: check the default bench, a short sim, a short run."""
    located = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import hild; print(hild.__file__)"],
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(venv) in located, located  # the installed copy, not the checkout

    check = hild(venv, "check", "default")
    assert check.returncode == 0, check.stderr
    assert "hild/builtin/profiles/bench/default.toml: OK: odin in calm weather" in check.stdout

    sim = hild(venv, "sim", "odin", "--duration", "5")
    assert sim.returncode == 0, sim.stderr
    assert sim.stdout.strip(), "a sim prints its result"

    # the built-in default bench as installed, on ports of this test's own (never 10110-10112)
    installed = Path(check.stdout.split(": OK:")[0])
    bench = installed.read_text()
    bench = bench.replace("udp://127.0.0.1:10110", f"udp://127.0.0.1:{free_udp_port()}")
    bench = bench.replace("udp://127.0.0.1:10112", f"udp://127.0.0.1:{free_udp_port()}")
    urls = re.findall(r'"(\w+://[^"]*)"', bench)
    assert urls and not [u for u in urls if ":1011" in u], urls
    (tmp / "bench.toml").write_text(bench)
    run = hild(
        venv,
        "run",
        str(tmp / "bench.toml"),
        "--duration",
        "3",
        "--run-dir",
        str(tmp / "run"),
        "--log-format",
        "json",
    )
    assert run.returncode == 0, run.stderr
    assert '"event": "run.summary"' in run.stderr

    # what the source tree's users copy from profiles/ and systemd/, `hild show` prints
    for kind, name, source in (
        ("bench", "example", "profiles/bench/example.toml"),
        ("systemd", "hild.service", "systemd/hild.service"),
        ("ardupilot", "odin", "profiles/ardupilot/odin.parm"),
    ):
        shown = hild(venv, "show", kind, name)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout == (ROOT / source).read_text()


def test_an_install_without_its_built_in_files_says_where_hild_looked(tmp_path):
    # only the code, as a broken install or a hand-copied package would have it
    shutil.copytree(ROOT / "hild", tmp_path / "hild", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    checked = subprocess.run(
        [sys.executable, "-m", "hild.cli", "check", "default"],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 2
    assert (
        f"none found: hild looked in {tmp_path}/hild/builtin/profiles/bench and "
        f"{tmp_path}/profiles/bench"
    ) in checked.stderr
    assert "Traceback" not in checked.stderr


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    return tree_copy(tmp_path_factory.mktemp("clone"))


@pytest.fixture(scope="module")
def wheel(source: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    (built,) = out.glob("hild-*.whl")
    return built


def test_the_wheel_carries_every_built_in_file(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [str(s) for s in builtin_sources() if in_package(s) not in names]
    assert builtin_sources() and not missing
    assert any(n.endswith("licenses/LICENSE") for n in names)


def test_a_wheel_and_a_plain_install_work_from_anywhere(source: Path, wheel: Path, tmp_path):
    # One venv, two installs in turn: the same installed path keeps numba's cache of the first
    # install valid for the second (its files have the same contents and times), so the model
    # compiles once.
    venv = fresh_venv(tmp_path)
    pip_install(venv, str(source))  # `pip install .` from a clone: not editable
    exercise(venv, tmp_path)
    pip_install(venv, "--force-reinstall", str(wheel))
    exercise(venv, tmp_path)
