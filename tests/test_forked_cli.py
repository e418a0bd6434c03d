"""The forked command runner of the error tests (tests/forked_cli.py) answers as a real
`python -m hild.cli` process does: the same exit status, stdout and stderr, the environment and
folder given, and a hang killed at its timeout."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.forked_cli import run_hild

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def real(*argv: str, env: dict | None = None, cwd: str | None = None):
    return subprocess.run(
        [sys.executable, "-m", "hild.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd or REPO,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ("check", "/no/such/bench.toml"),  # a ConfigError: exit 2, stderr
        ("check", "/no/such/bench.toml", "--debug"),  # and its traceback
        ("sim", "--no-such-option"),  # argparse's: exit 2, usage on stderr
        ("--version",),  # argparse's exit 0, stdout
        ("show", "weather"),  # stdout
    ],
)
def test_a_forked_command_answers_as_a_process_of_its_own(argv):
    forked, expected = run_hild(*argv, cwd=REPO), real(*argv)
    assert (forked.returncode, forked.stdout) == (expected.returncode, expected.stdout)
    # (a traceback names the frames that ran it: runpy's for `python -m`, none for the fork)
    if "--debug" not in argv:
        assert forked.stderr == expected.stderr
    else:
        assert forked.stderr.splitlines()[-1] == expected.stderr.splitlines()[-1]


def test_a_compiled_run_writes_the_same_bytes(tmp_path):
    argv = ("sim", "odin", "--duration", "5", "--weather", "gale-hs1", "--out")
    forked = run_hild(*argv, str(tmp_path / "forked.csv"))
    expected = real(*argv, str(tmp_path / "real.csv"))
    assert forked.returncode == expected.returncode == 0, forked.stderr
    assert (tmp_path / "forked.csv").read_bytes() == (tmp_path / "real.csv").read_bytes()


def test_its_environment_and_folder_are_the_ones_given(tmp_path):
    with open(os.path.join(REPO, "profiles", "bench", "default.toml")) as f:
        (tmp_path / "b.toml").write_text(f.read())
    (tmp_path / "types").mkdir()
    (tmp_path / "types" / "gps.toml").write_text("not = [toml\n")
    # a relative path is read from the folder given; device types from HILD_DEVICE_PATH
    env = {**os.environ, "HILD_DEVICE_PATH": str(tmp_path / "types")}
    forked = run_hild("check", "b.toml", cwd=tmp_path, env=env)
    expected = real("check", "b.toml", cwd=str(tmp_path), env=env)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        expected.returncode,
        expected.stdout,
        expected.stderr,
    )
    assert forked.returncode == 2 and f"{tmp_path}/types/gps.toml" in forked.stderr, forked.stderr
    assert run_hild("check", "b.toml", cwd=tmp_path).returncode == 0  # (not kept for the next)


def test_a_command_that_hangs_is_killed_at_its_timeout_and_the_next_one_runs():
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_hild("sim", "odin", "--duration", "1000000", timeout=1.0)
    assert time.monotonic() - started < 30.0  # (killed: a million seconds take minutes)
    assert run_hild("check", "/no/such/bench.toml").returncode == 2
