"""The heading sensor's XDR attitude, read the way OpenCPN's dashboard reads it.

OpenCPN's rules (plugins/dashboard_pi/src/dashboard_pi.cpp, its XDR branch, and the parser in
plugins/dashboard_pi/src/nmea0183/xdr.cpp): the checksum must hold; the data fields are taken
four at a time (type, value, unit, name), 1 to 10 of them; a quadruplet of type "A" whose name
contains "PTCH" or "PITCH" is the pitch (positive up, negative down) and one whose name
contains "ROLL" is the heel (positive to starboard, negative to port). The unit field is not
looked at there; hild sends "D" (degrees) and this test holds it to that too.
"""

from __future__ import annotations

import math
import subprocess
import sys
from datetime import UTC, datetime

import numpy as np
import pynmea2
import pytest

from hild.bench import load_bench
from hild.devices.registry import build_device
from hild.geodesy import Origin
from hild.sensors.device import DeviceConfig
from hild.sensors.faults import FaultSpec
from hild.sensors.heading import attitude_xdr
from hild.sensors.noise import NoiseSpec
from hild.sensors.truth import Truth

ORIGIN = Origin(59.41, 10.48)
UTC0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


def plotter_reads(line: bytes) -> dict[str, tuple[float, str]]:
    """What the dashboard shows from one XDR line: {"pitch" | "heel": (magnitude, side)}.

    Written here from the rules above, independently of hild's encoder."""
    text = line.decode("ascii")
    assert text.startswith("$") and text.endswith("\r\n") and len(text) <= 82
    body, _, check = text[1:-2].partition("*")
    xor = 0
    for ch in body.encode("ascii"):
        xor ^= ch
    assert check == f"{xor:02X}", "checksum"
    address, *fields = body.split(",")
    assert address.endswith("XDR")
    count = len(fields) // 4
    assert 1 <= count <= 10 and len(fields) == 4 * count
    shown: dict[str, tuple[float, str]] = {}
    for i in range(count):
        kind, value, unit, name = fields[4 * i : 4 * i + 4]
        assert unit == "D"  # hild's own contract: degrees
        if kind != "A":
            continue
        data = float(value) if value else math.nan
        if "PTCH" in name or "PITCH" in name:
            shown["pitch"] = (abs(data), "up" if data > 0 else "down" if data < 0 else "")
        elif "ROLL" in name:
            shown["heel"] = (abs(data), "stbd" if data > 0 else "port" if data < 0 else "")
    return shown


def heading_config(sentences, **kw) -> DeviceConfig:
    base = dict(
        name="hdg",
        type="heading",
        model="heading",
        talker="HE",
        rate_hz=10.0,
        baud=38400,
        sentences=tuple(sentences),
        lever_arm=(0.0, 0.0, 0.0),
        ports=(),
        settings={"accuracy_deg": 0.05},
    )
    base.update(kw)
    return DeviceConfig(**base)


def attitude(roll_deg: float, pitch_deg: float, t: float = 0.0) -> Truth:
    eta = np.array([0.0, 0.0, 0.0, math.radians(roll_deg), math.radians(pitch_deg), 0.5])
    return Truth(t, UTC0, eta, np.zeros(6))


def lines_of(device, truth) -> dict[str, list[bytes]]:
    out: dict[str, list[bytes]] = {}
    for line in device.sample(truth):
        msg = pynmea2.parse(line.decode().strip(), check=True)
        kind = getattr(msg, "sentence_type", "PASHR")
        out.setdefault(kind, []).append(line)
    return out


def test_heeled_to_starboard_bow_up_reads_starboard_and_up():
    # Fossen's phi +5 deg (starboard down) and theta +2 deg (bow up)
    device = build_device(heading_config(["XDR"]), 0, ORIGIN)
    (line,) = device.sample(attitude(5.0, 2.0))
    assert line == b"$HEXDR,A,5.0,D,ROLL,A,2.0,D,PTCH*56\r\n"
    assert plotter_reads(line) == {"heel": (5.0, "stbd"), "pitch": (2.0, "up")}
    msg = pynmea2.parse(line.decode().strip(), check=True)
    assert msg.talker == "HE" and msg.num_transducers == 2
    roll, pitch = msg.get_transducer(0), msg.get_transducer(1)
    assert (roll.type, float(roll.value), roll.units, roll.id) == ("A", 5.0, "D", "ROLL")
    assert (pitch.type, float(pitch.value), pitch.units, pitch.id) == ("A", 2.0, "D", "PTCH")


def test_heeled_to_port_bow_down_reads_port_and_down():
    device = build_device(heading_config(["XDR"]), 0, ORIGIN)
    (line,) = device.sample(attitude(-3.04, -1.46))
    assert plotter_reads(line) == {"heel": (3.0, "port"), "pitch": (1.5, "down")}


def test_xdr_has_the_signs_of_pashr():
    device = build_device(heading_config(["PASHR", "XDR"]), 0, ORIGIN)
    for roll, pitch in ((5.0, 2.0), (-7.25, 3.5), (12.0, -4.75)):
        out = lines_of(device, attitude(roll, pitch))
        ashr = pynmea2.parse(out["PASHR"][0].decode().strip())
        xdr = pynmea2.parse(out["XDR"][0].decode().strip())
        assert float(xdr.get_transducer(0).value) == pytest.approx(float(ashr.roll), abs=0.051)
        assert float(xdr.get_transducer(1).value) == pytest.approx(float(ashr.pitch), abs=0.051)


def test_roll_and_pitch_noise_apply_to_xdr_as_to_pashr():
    noise = {"roll": NoiseSpec(bias=1.0), "pitch": NoiseSpec(bias=-0.5)}
    device = build_device(heading_config(["PASHR", "XDR"], noise=noise), 0, ORIGIN)
    out = lines_of(device, attitude(5.0, 2.0))
    ashr = pynmea2.parse(out["PASHR"][0].decode().strip())
    assert (float(ashr.roll), float(ashr.pitch)) == (6.0, 1.5)
    assert plotter_reads(out["XDR"][0]) == {"heel": (6.0, "stbd"), "pitch": (1.5, "up")}


def test_an_invalid_sensor_sends_no_xdr_as_no_hdt():
    faults = (FaultSpec("invalid", 10, 20),)
    device = build_device(heading_config(["HDT", "PASHR", "XDR"], faults=faults), 0, ORIGIN)
    out = lines_of(device, attitude(5.0, 2.0, t=15.0))
    assert "XDR" not in out and "HDT" not in out and "PASHR" in out  # PASHR flags it instead
    assert "XDR" in lines_of(device, attitude(5.0, 2.0, t=25.0))


def test_a_value_that_is_not_finite_leaves_its_group_out():
    (line,) = attitude_xdr("HE", math.nan, 2.0)
    assert plotter_reads(line) == {"pitch": (2.0, "up")}
    (line,) = attitude_xdr("HE", -4.0, math.inf)
    assert plotter_reads(line) == {"heel": (4.0, "port")}
    assert attitude_xdr("HE", math.nan, -math.inf) == []


def test_angles_wrap_into_plus_minus_180_as_pashr_does():
    (line,) = attitude_xdr("HE", 365.0, -362.0)
    assert plotter_reads(line) == {"heel": (5.0, "stbd"), "pitch": (2.0, "down")}


def test_the_worst_case_gives_the_longest_xdr():
    device = build_device(heading_config(["XDR"]), 0, ORIGIN)
    longest = device.epoch_bytes(UTC0)
    assert longest == len(b"$HEXDR,A,-180.0,D,ROLL,A,-180.0,D,PTCH*51\r\n")
    for roll in (-179.96, -99.9, 0.0, 179.94, 1e300, -1e-300):
        for pitch in (-90.0, -179.99, 45.5, 359.0):
            assert sum(map(len, attitude_xdr("HE", roll, pitch))) <= longest


def test_a_bench_chooses_xdr_and_its_line_budget_counts_it(tmp_path):
    path = tmp_path / "bench.toml"
    path.write_text(
        '[bench]\nrate_hz = 50\nstart_time = "2026-06-01T12:00:00Z"\n'
        '[vessel]\nprofile = "odin"\n'
        '[[device]]\nname = "hdg"\ntype = "heading"\nbaud = 4800\n'
        'sentences = ["XDR"]\nport = "pty://hdg"\n'
    )
    bench = load_bench(path)
    assert bench.devices[0].sentences == ("XDR",)
    (budget,) = bench.budgets
    # 10 Hz x 43 bytes: 430 of the 480 bytes/s that 4800 baud carries
    assert budget.bytes_per_s == pytest.approx(430.0) and budget.load <= 1.0
    result = subprocess.run(
        [sys.executable, "-m", "hild.cli", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout and "430" in result.stdout


def test_the_default_heading_sentences_are_unchanged():
    from hild.devices.catalog import load_device_type

    assert load_device_type("heading").sentences == ("HDT", "THS", "ROT", "PASHR")
