"""`hild sim` end to end, as a user runs it."""

import csv
import json
import subprocess
import sys

import pytest

ODIN_AHEAD = [
    "--cmd", "port.rpm=1500", "--cmd", "starboard.rpm=1500",
    "--cmd", "port.deflector=1", "--cmd", "starboard.deflector=1",
]  # fmt: skip


def hild(*args):
    return subprocess.run(
        [sys.executable, "-m", "hild.cli", *args], capture_output=True, text=True, timeout=300
    )


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


def test_schedule_changes_commands_on_time(tmp_path):
    sched = tmp_path / "s.csv"
    sched.write_text(
        "t,name,value\n0,port.rpm,1500\n0,starboard.rpm,1500\n"
        "0,port.deflector,1\n0,starboard.deflector,1\n10,port.nozzle_deg,20\n"
        "10,starboard.nozzle_deg,20\n"
    )
    out = tmp_path / "o.csv"
    p = hild("sim", "odin", "--duration", "20", "--schedule", str(sched), "--out", str(out),
             "--method", "dopri5")  # fmt: skip
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
        p = hild("sim", "odin", "--duration", "30", *ODIN_AHEAD, "--weather", "gale-hs1",
                 "--seed", seed, "--out", str(out))  # fmt: skip
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
