"""`hild sim` end to end, as a user runs it."""

import csv
import json
import math
import re
import subprocess
import sys

import pytest

from tests.forked_cli import run_hild

ODIN_AHEAD = [
    "--cmd", "port.rpm=1500", "--cmd", "starboard.rpm=1500",
    "--cmd", "port.deflector=1", "--cmd", "starboard.deflector=1",
]  # fmt: skip


def hild(*args):
    return run_hild(*args, timeout=300)


def test_sim_odin_prints_summary_and_json_and_writes_csv(tmp_path):
    out = tmp_path / "odin.csv"
    p = hild("sim", "odin", "--duration", "60", *ODIN_AHEAD, "--out", str(out))
    assert p.returncode == 0, p.stderr
    final = json.loads(p.stdout.strip().splitlines()[-1])
    assert final["t"] == pytest.approx(60.0)
    assert final["state"]["u"] > 3.0
    assert final["real_time_factor"] > 1.0
    with open(out) as f:
        rows = list(csv.DictReader(f))
    required = ["t", "x", "y", "z", "phi", "theta", "psi", "u", "v", "w", "p", "q", "r"]
    assert all(c in rows[0] for c in required)
    assert {"port.rpm", "port.nozzle", "port.deflector", "starboard.rpm"} <= set(rows[0])
    assert len(rows) == 601  # t = 0 and every 0.1 s
    assert float(rows[-1]["t"]) == pytest.approx(60.0)
    assert float(rows[-1]["x"]) == pytest.approx(final["state"]["x"], rel=1e-6)


def test_sim_out_makes_its_folder_as_record_does(tmp_path):
    """`--out runs/today/odin.csv` in a folder not made yet: made, as `--record` makes its
    (it was refused: "cannot write it (No such file or directory)")."""
    out = tmp_path / "runs" / "today" / "odin.csv"
    p = hild("sim", "odin", "--duration", "1", "--out", str(out))
    assert p.returncode == 0, p.stderr
    with open(out) as f:
        assert len(list(csv.DictReader(f))) == 11  # t = 0 and every 0.1 s
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    p = hild("sim", "odin", "--duration", "1", "--out", str(blocked / "odin.csv"))
    assert p.returncode == 2 and "is a file, not a folder" in p.stderr, p.stderr


def test_schedule_changes_commands_on_time(tmp_path):
    sched = tmp_path / "s.csv"
    sched.write_text(
        "t,name,value\n0,port.rpm,1500\n0,starboard.rpm,1500\n"
        "0,port.deflector,1\n0,starboard.deflector,1\n10,port.nozzle_deg,20\n"
        "10,starboard.nozzle_deg,20\n"
    )
    out = tmp_path / "o.csv"
    p = hild(
        "sim",
        "odin",
        "--duration",
        "20",
        "--schedule",
        str(sched),
        "--out",
        str(out),
        "--method",
        "dopri5",
    )
    assert p.returncode == 0, p.stderr
    with open(out) as f:
        rows = list(csv.DictReader(f))
    by_t = {round(float(r["t"]), 3): r for r in rows}
    assert float(by_t[9.9]["port.nozzle"]) == 0.0
    assert float(by_t[10.1]["port.nozzle"]) > 0.0  # lagging towards 20 deg
    assert float(by_t[20.0]["r"]) > 0.0


def test_bad_command_exits_2_with_a_clear_message():
    p = hild("sim", "odin", "--duration", "1", "--cmd", "port.rpn=3")
    assert p.returncode == 2
    assert "no command 'rpn'" in p.stderr and "rpm, nozzle_deg, deflector" in p.stderr
    p = hild("sim", "odin", "--duration", "1", "--cmd", "port.rpm")
    assert p.returncode == 2 and "NAME=VALUE" in p.stderr


def test_bad_schedule_row_names_file_and_line(tmp_path):
    sched = tmp_path / "bad.csv"
    sched.write_text("t,name,value\n0,port.rpm,fast\n")
    p = hild("sim", "odin", "--duration", "1", "--schedule", str(sched))
    assert p.returncode == 2
    assert str(sched) in p.stderr and "line 2" in p.stderr


def test_sim_in_weather_adds_environment_columns_and_is_reproducible(tmp_path):
    outs, stdouts = [], []
    for name, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        out = tmp_path / f"{name}.csv"
        p = hild(
            "sim",
            "odin",
            "--duration",
            "30",
            *ODIN_AHEAD,
            "--weather",
            "gale-hs1",
            "--seed",
            seed,
            "--out",
            str(out),
        )
        assert p.returncode == 0, p.stderr
        outs.append(out.read_bytes())
        stdouts.append(p.stdout)
    assert outs[0] == outs[1]  # the same seed: the same file, byte for byte
    assert outs[0] != outs[2]
    with open(tmp_path / "a.csv") as f:
        rows = list(csv.DictReader(f))
    env = ["wind_speed", "wind_dir", "current_speed", "current_dir", "wave_elevation"]
    forces = [f"{a}_{s}" for s in ("wind", "wave") for a in "XYZKMN"]
    assert set(env + forces) <= set(rows[0])
    speeds = [float(r["wind_speed"]) for r in rows]
    assert min(speeds) > 10.0 and max(speeds) < 30.0 and len(set(speeds)) > 100  # gusty 20 m/s
    # 0.5 m/s held within +-0.1 m/s (the preset's saturation, thesis eq. 2.77)
    assert all(0.4 <= float(r["current_speed"]) <= 0.6 for r in rows)
    assert max(abs(float(r["wave_elevation"])) for r in rows) > 0.1
    assert "weather   gale-hs1 (seed 3)" in stdouts[0]


def test_unknown_weather_lists_the_presets():
    p = hild("sim", "odin", "--duration", "1", "--weather", "hurricane")
    assert p.returncode == 2
    assert "preset = 'hurricane'" in p.stderr and "beaufort-9, beaufort-10" in p.stderr


def strict_json(line: str) -> dict:
    """The JSON line as a strict parser reads it: NaN and Infinity are not JSON."""

    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(line, parse_constant=refuse)


def test_the_json_line_is_strict_json():
    p = hild("sim", "odin", "--duration", "5", *ODIN_AHEAD)
    assert p.returncode == 0, p.stderr
    assert strict_json(p.stdout.strip().splitlines()[-1])["t"] == pytest.approx(5.0)


def test_a_real_time_factor_too_large_to_measure_is_null_in_the_json_line():
    from hild.sim import summary_text

    state = dict.fromkeys(("x", "y", "z", "phi", "theta", "psi", "u", "v", "w", "p", "q", "r"), 0.0)
    summary = {
        "profile": "odin",
        "weather": "calm",
        "seed": 0,
        "state": state,
        "actuators": {},
        "environment": {},
        "notes": [],
        "method": "rk4",
        "dt": 0.01,
        "t": 0.01,
        "steps": 1,
        "speed": 0.0,
        "wall_s": 0.0,
        "real_time_factor": float("inf"),
    }
    text = summary_text(summary)
    assert strict_json(text.splitlines()[-1])["real_time_factor"] is None
    assert "inf" not in text.lower()


# A current of 8 m/s setting across Odin's hull: its cross-flow drag is then stiffer than in
# any manoeuvre of its own, which the up-front bound follows; a step the bound lets through
# diverges, and a shorter one does not.
CROSS_CURRENT = "[current]\nspeed = 8.0\nto_deg = 90.0\n"


def test_a_run_that_diverges_stops_with_status_1_and_says_when_and_what(tmp_path):
    weather = tmp_path / "cross.toml"
    weather.write_text(CROSS_CURRENT)
    out = tmp_path / "o.csv"
    p = hild(
        "sim",
        "odin",
        "--duration",
        "60",
        "--dt",
        "0.12",
        "--weather",
        str(weather),
        "--out",
        str(out),
    )
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and p.stdout == ""
    assert p.stderr.startswith("hild: error: the run stopped at t = "), p.stderr
    assert "reached" in p.stderr and "try a smaller --dt" in p.stderr
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert rows and all(math.isfinite(float(v)) for row in rows for v in row.values())
    assert float(rows[-1]["t"]) < 60.0
    # the bound let 0.12 s through: the run went on until its state was absurd
    assert "expected a step" not in p.stderr
    p = hild("sim", "odin", "--duration", "60", "--dt", "0.05", "--weather", str(weather))
    assert p.returncode == 0, p.stderr
    assert strict_json(p.stdout.strip().splitlines()[-1])["state"]["v"] > 1.0


def test_a_step_the_vessel_cannot_take_is_refused_naming_the_limit():
    p = hild("sim", "odin", "--duration", "10", "--dt", "1")
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr
    said = re.search(
        r"hild: error: --dt 1: expected a step of at most ([0-9.]+) s for odin "
        r"with rk4 \(.*time constant",
        p.stderr,
    )
    assert said and 0.01 < float(said.group(1)) < 1.0, p.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["run", "--help"],
        ["sim", "--help"],
        ["--version"],
        ["check"],
        ["check", "example"],
    ],
)
def test_help_and_check_do_not_import_the_compiled_core(argv):
    # numba's import alone takes a third of a second here (more on a Raspberry Pi): the help a
    # user asks for must not wait for the compiler, nor a check of a bench whose profile's step
    # limit an earlier run remembered (the first run below; it computes the limit if need be)
    subprocess.run([sys.executable, "-m", "hild.cli", *argv], capture_output=True, timeout=300)
    code = "\n".join(
        [
            "import runpy, sys",
            f"sys.argv = ['hild', *{argv!r}]",
            "try:",
            "    runpy.run_module('hild.cli', run_name='__main__')",
            "except SystemExit:",
            "    pass",
            "print('numba' in sys.modules, 'hild.model.dynamics' in sys.modules)",
        ]
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip().splitlines()[-1] == "False False", p


def test_a_schedule_with_several_bad_rows_names_every_one_in_order(tmp_path):
    sched = tmp_path / "bad.csv"
    sched.write_text(
        "t,name,value\n0,port.rpm,1000\nx,port.rpm,5\n1,port.rpmm,500\n"
        "2,port.rpm\n3,port.rpm,99999\n4,port.rpm,1500\n"
    )
    p = hild("sim", "odin", "--duration", "1", "--schedule", str(sched))
    assert p.returncode == 2
    header, *lines = p.stderr.splitlines()
    assert header == f"hild: 4 error(s) in {sched}:"
    expected = [
        ("line 3", "numbers for t and value"),
        ("line 4", "no command 'rpmm'"),
        ("line 5", "three columns"),
        ("line 6", "from 400 to 2000 rpm"),
    ]
    assert len(lines) == len(expected)
    for line, (where, says) in zip(lines, expected, strict=True):
        assert line.startswith(f"  {sched}: {where} = ") and says in line, line


def test_a_reader_that_has_gone_costs_no_error_message():
    # `hild show bench example | head -2`: the reader goes; what is left to print is dropped,
    # without "hild: error: Broken pipe" on the terminal. The pipe's read end is closed before
    # hild starts, so every write of hild's finds it gone.
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "hild.cli", "show", "bench", "example"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 1  # what was asked was not all printed


def test_inspect_force_alone_is_refused_not_ignored():
    done = subprocess.run(
        [sys.executable, "-m", "hild.cli", "inspect", "--force", "x.mcap"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "--force replaces the copy that --recover writes" in done.stderr
