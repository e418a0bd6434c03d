"""Bad files and options end with a message naming the file, key and value, exit status 2,
and never a traceback or a hang. Each case runs the real command line in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEFAULT = (REPO / "profiles" / "bench" / "default.toml").read_bytes()
ODIN = (REPO / "profiles" / "odin.toml").read_bytes()
CALM = (REPO / "profiles" / "weather" / "calm.toml").read_bytes()


def hild(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hild.cli", *args], capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


LATIN1 = "# Jølner's hull\n".encode("latin-1")
DEEP = b"a = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"
BINARY = bytes(range(256)) * 8


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (LATIN1 + DEFAULT, "byte 0xf8 at line 1, column 4 is not UTF-8"),
        (DEEP, "nested less deeply"),
        (BINARY, "UTF-8 text"),
        (b"[bench\nname = 1\n", "valid TOML"),
    ],
    ids=["latin-1", "deep", "binary", "syntax"],
)
@pytest.mark.parametrize("kind", ["bench", "profile", "weather"])
def test_unreadable_files_are_named_with_what_is_wrong(tmp_path, content, says, kind):
    path = tmp_path / f"bad-{kind}.toml"
    path.write_bytes(content)
    if kind == "bench":
        runs = [hild("check", str(path)), hild("run", str(path), "--run-dir", str(tmp_path))]
    elif kind == "profile":
        runs = [hild("sim", str(path), "--duration", "1")]
    else:
        runs = [hild("sim", "odin", "--duration", "1", "--weather", str(path))]
    for p in runs:
        assert p.returncode == 2, (p.args, p.stdout, p.stderr)
        assert "Traceback" not in p.stderr and str(path) in p.stderr and says in p.stderr, p.stderr


def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + DEFAULT)
    p = hild("check", str(path))
    assert p.returncode == 0 and "OK" in p.stdout, p.stderr


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("/no/such/bench.toml", "no such file"),
        ("no-such-bench", "a built-in bench: default, example, frontseat"),
        (".", "not a directory"),
    ],
)
def test_a_bench_that_is_not_there_says_so(target, says):
    p = hild("check", target)
    assert p.returncode == 2 and says in p.stderr and "= None" not in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["sim", "odin", "--duration", "1", "--dt", "0"], "--dt"),
        (["sim", "odin", "--duration", "1", "--dt", "-1"], "--dt"),
        (["sim", "odin", "--duration", "1", "--dt", "nan"], "--dt"),
        (["sim", "odin", "--duration", "1", "--dt", "5"], "--dt"),
        (["sim", "odin", "--duration", "nan"], "--duration"),
        (["sim", "odin", "--duration", "-5"], "--duration"),
        (["sim", "odin", "--duration", "1", "--seed", "-1"], "--seed"),
        (["sim", "odin", "--duration", "1", "--output-interval", "0"], "--output-interval"),
        (["sim", "odin", "--duration", "1", "--out", "/proc/no/x.csv"], "--out /proc/no/x.csv"),
        (["run", "--time-scale", "0"], "--time-scale"),
        (["run", "--time-scale", "1e9"], "--time-scale"),
        (["run", "--rate", "0"], "--rate"),
        (["run", "--seed", "x"], "--seed"),
        (["run", "--stats-interval", "1e-9"], "--stats-interval"),
    ],
)
def test_options_out_of_range_are_named_as_options(args, option):
    p = hild(*args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert option in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert "bench." not in p.stderr  # blamed on the option, not on a key of the bench file


def test_check_warns_of_a_port_in_use_and_run_refuses_it_as_a_configuration_error(tmp_path):
    import socket

    held = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    held.bind(("127.0.0.1", 0))
    port = held.getsockname()[1]
    free = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    free.bind(("127.0.0.1", 0))
    out_port = free.getsockname()[1]
    free.close()
    text = DEFAULT.decode().replace("10112", str(port)).replace("10110", str(out_port))
    path = tmp_path / "held.toml"
    path.write_text(text)
    try:
        check = hild("check", str(path))
        run = hild("run", str(path), "--run-dir", str(tmp_path / "run"))
    finally:
        held.close()
    assert check.returncode == 0, check.stderr  # a warning: the port may be free at run time
    assert f"warning: udp://127.0.0.1:{port}?listen=1 (device jets): cannot bind" in check.stdout
    assert run.returncode == 2 and f"127.0.0.1:{port}" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("change", "key", "says"),
    [
        (('run_dir = "/tmp/hild"', 'run_dir = ""'), "bench.run_dir", "a directory"),
        (("seed = 0", "seed = 0\nstats_interval = 1e-9"), "bench.stats_interval",
         "at least 0.01"),
        (('heading_deg = 0.0', 'heading_deg = 0.0\ncommands = { "port.rpm" = 99999 }'),
         "vessel.commands.port.rpm", "from 400 to 2000 rpm"),
        (('heading_deg = 0.0', 'heading_deg = 0.0\ncommands = { "port.nozzle_deg" = 45 }'),
         "vessel.commands.port.nozzle_deg", "from -27 to 27 deg"),
    ],
)  # fmt: skip
def test_bench_values_that_cannot_be_meant(tmp_path, change, key, says):
    text = DEFAULT.decode()
    assert change[0] in text
    path = tmp_path / "bench.toml"
    path.write_text(text.replace(change[0], change[1], 1))
    p = hild("check", str(path))
    assert p.returncode == 2 and key in p.stderr and says in p.stderr, p.stderr
    assert str(path) in p.stderr and "Traceback" not in p.stderr
