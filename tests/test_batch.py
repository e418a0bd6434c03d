"""`hild sim --repeat` and repeated --schedule: many runs in one process, each as a single run."""

from __future__ import annotations

import json

from hild.cli import main
from hild.sim import run_sim


def batch(capsys, *argv: str) -> tuple[int, list[dict], str]:
    status = main(["sim", *argv])
    captured = capsys.readouterr()
    return status, [json.loads(line) for line in captured.out.splitlines()], captured.err


def test_each_run_of_a_batch_is_the_single_run_of_its_seed(capsys):
    status, lines, err = batch(
        capsys,
        "otter",
        "--duration",
        "3",
        "--weather",
        "gale-hs1",
        "--seed",
        "5",
        "--repeat",
        "3",
        "--cmd",
        "port.rpm=80",
    )
    assert status == 0 and [line["seed"] for line in lines] == [5, 6, 7]
    assert "hild sim: 3 run(s) of 3 s in" in err and "runs/s" in err
    for line in lines:  # bit for bit: nothing of one run leaks into the next
        alone = run_sim(
            "otter", 3.0, weather="gale-hs1", seed=line["seed"], commands=["port.rpm=80"]
        )
        assert line["state"] == alone["state"] and line["environment"] == alone["environment"]
        assert line["t"] == 3.0 and line["schedule"] is None
    # the seeds draw different weather (else the test above proves nothing)
    assert lines[0]["state"]["x"] != lines[1]["state"]["x"] != lines[2]["state"]["x"]


def test_every_schedule_runs_with_every_seed_and_names_its_files(capsys, tmp_path):
    for name, rpm in (("slow", 500), ("fast", 1500)):
        (tmp_path / f"{name}.csv").write_text(f"t,name,value\n0,port.rpm,{rpm}\n")
    status, lines, _ = batch(
        capsys,
        "odin",
        "--duration",
        "1",
        "--repeat",
        "2",
        "--schedule",
        str(tmp_path / "slow.csv"),
        "--schedule",
        str(tmp_path / "fast.csv"),
        "--out",
        str(tmp_path / "track.csv"),
    )
    assert status == 0
    assert [(line["schedule"].rsplit("/", 1)[1], line["seed"]) for line in lines] == [
        ("slow.csv", 0),
        ("slow.csv", 1),
        ("fast.csv", 0),
        ("fast.csv", 1),
    ]
    for stem in ("slow-seed0", "slow-seed1", "fast-seed0", "fast-seed1"):
        rows = (tmp_path / f"track-{stem}.csv").read_text().splitlines()
        assert rows[0].startswith("t,") and len(rows) == 1 + 11  # t = 0, 0.1, ..., 1.0
    slow, fast = lines[0]["actuators"]["port.rpm"], lines[2]["actuators"]["port.rpm"]
    assert 0.0 < slow < fast  # each run had its own schedule


def test_a_diverged_run_is_reported_and_the_batch_goes_on(capsys):
    # Jolner in beaufort-7 with seed 3 leaves the model at t = 0.4 s (a known limit of its
    # profile in storm seas); seeds 2 and 4 do not
    status, lines, err = batch(
        capsys,
        "jolner",
        "--duration",
        "1",
        "--weather",
        "beaufort-7",
        "--seed",
        "2",
        "--repeat",
        "3",
    )
    assert status == 1 and "1 diverged" in err
    assert [("diverged" in line, line["seed"]) for line in lines] == [
        (False, 2),
        (True, 3),
        (False, 4),
    ]
    assert lines[1]["diverged"]["t"] < 1.0 and "deg/s" in lines[1]["diverged"]["problem"]
    assert lines[2]["t"] == 1.0


def test_a_bad_schedule_stops_the_batch_before_it_runs(capsys, tmp_path):
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("0,port.rpm,1000\n")
    bad.write_text("0,port.rpm,1000\n5,port.rpm,lots\n")
    status = main(
        ["sim", "odin", "--duration", "1", "--schedule", str(good), "--schedule", str(bad)]
    )
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    assert f"{bad}" in captured.err and "line 2" in captured.err


def test_a_schedule_command_out_of_range_stops_the_batch_before_it_runs(capsys, tmp_path):
    good, wild = tmp_path / "good.csv", tmp_path / "wild.csv"
    good.write_text("0,port.rpm,1000\n")
    wild.write_text("0,port.rpm,99999\n")  # Odin's jets turn to 2000 rpm
    status = main(
        ["sim", "odin", "--duration", "1", "--schedule", str(good), "--schedule", str(wild)]
    )
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    assert f"{wild}" in captured.err and "line 1" in captured.err


def test_every_bad_schedule_of_a_batch_is_named_before_it_runs(capsys, tmp_path):
    one, two = tmp_path / "one.csv", tmp_path / "two.csv"
    one.write_text("0,port.rpm,lots\n1,port.rpm,99999\n")
    two.write_text("0,port.rpm,1000\n5,prt.rpm,1000\n")
    status = main(
        ["sim", "odin", "--duration", "1", "--schedule", str(one), "--schedule", str(two)]
    )
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    header, *lines = captured.err.splitlines()
    assert header == "hild: 3 error(s) in 2 files:"
    assert [line.split(" = ")[0] for line in lines] == [
        f"  {one}: line 1",
        f"  {one}: line 2",
        f"  {two}: line 2",
    ]
