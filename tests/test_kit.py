"""The controller author's kit (hild/kit.py) and its documented examples.

Each part is checked against something that is not the kit: sentences against pynmea2 (a parser
of its own), the own fix against pynmea2's reading of the same lines, AIS targets against
gpsd's ``gpsdecode`` (a C decoder sharing nothing with pyais), CPA and TCPA against a case
worked by hand. The examples are the very blocks of docs/scenario-external.md, run through the
real CLI: the in-process one must pass the built-in crossing that the reference autopilot
fails, the wire one must steer a daemon over real UDP sockets.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pynmea2
import pytest

from hild import kit
from hild.bench import load_bench
from hild.units import KNOTS_PER_MS
from hild.world.world import World
from tests.forked_cli import run_hild

ROOT = Path(__file__).resolve().parents[1]


def hild_here(folder: Path, *argv: str | Path) -> subprocess.CompletedProcess:
    """`hild ARGV` run in ``folder`` with ``PYTHONPATH=.``, as the docs paste it (a process of
    its own: a python controller is imported from the path the process starts with)."""
    env = {**os.environ, "PYTHONPATH": f".{os.pathsep}{ROOT}"}
    command = [sys.executable, "-m", "hild.cli", *map(str, argv)]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


DOC = ROOT / "docs" / "scenario-external.md"
GPSDECODE = shutil.which("gpsdecode")


def doc_block(heading: str) -> str:
    """The first ```python block after ``heading`` in docs/scenario-external.md."""
    text = DOC.read_text()
    start = text.index(heading)
    match = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert match is not None, heading
    return match.group(1)


# --- sentences --------------------------------------------------------------------------------
def test_a_built_sentence_is_what_pynmea2_reads():
    line = kit.sentence("APTRC", 1, 1234.5, "R", 100, "P", None, "B", "C")
    assert line.endswith(b"\r\n")
    parsed = pynmea2.parse(line.decode().strip(), check=True)  # raises on a wrong checksum
    assert parsed.talker == "AP" and parsed.sentence_type == "TRC"
    assert parsed.data == ["1", "1234.5", "R", "100", "P", "", "B", "C"]


def test_a_sentence_longer_than_nmea_0183_allows_is_refused():
    """NMEA 0183: at most 82 characters from "$" to LF; a huge number makes one longer."""
    assert len(kit.sentence("APTRC", 1, 2000.5, "R", 100, "P", None, "B", "C")) <= 82
    with pytest.raises(kit.SentenceTooLongError, match="82"):
        kit.sentence("APTRC", 1, 1e70, "R", 100, "P", None, "B", "C")


def test_numbers_print_without_noise_or_negative_zero():
    line = kit.sentence("GPXXX", 0.1 + 0.2, -0.0, 2.0, float("nan"), -1.25)
    assert line.startswith(b"$GPXXX,0.3,0,2,,-1.25*")


def test_parse_returns_the_fields_and_refuses_a_wrong_checksum():
    good = kit.sentence("GPHDT", 12.3, "T")
    assert kit.parse(good) == ("GPHDT", ["12.3", "T"])
    assert kit.parse(good.decode()) == ("GPHDT", ["12.3", "T"])
    with pytest.raises(kit.SentenceError, match="checksum"):
        kit.parse(b"$GPHDT,12.4,T*" + good.strip()[-2:])
    with pytest.raises(kit.SentenceError, match="not a sentence"):
        kit.parse(b"GPHDT,12.3,T")


# --- the own ship ----------------------------------------------------------------------------
def world_lines(bench: str, seconds: float) -> list[tuple[float, list[bytes]]]:
    """Every tick's lines of a built-in bench's devices, at its simulated time."""
    world = World(load_bench(bench))
    world.start_utc = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)  # (a bench's "wall" start, fixed)
    out, heard = world.first_epoch(), []
    while world.t < seconds:
        heard.append((world.t, [line.rstrip(b"\r\n") for _, lines in out for line in lines]))
        out = world.tick()
    return heard


def test_the_own_fix_is_what_the_sentences_say():
    own, last = kit.OwnShip(), {}
    for t, lines in world_lines("crossing-give-way", 20.0):
        own.feed(t, lines)
        for line in lines:
            if line.startswith(b"$") and line[3:6] in (b"GGA", b"RMC", b"HDT"):
                last[line[3:6].decode()] = (t, pynmea2.parse(line.decode(), check=True))
    fix = own.fix
    assert fix is not None
    (t_gga, gga), (_, rmc), (_, hdt) = last["GGA"], last["RMC"], last["HDT"]
    assert fix.t == t_gga
    assert (fix.latitude_deg, fix.longitude_deg) == pytest.approx(
        (gga.latitude, gga.longitude), abs=1e-9
    )
    assert fix.sog_ms == pytest.approx(float(rmc.spd_over_grnd) / KNOTS_PER_MS, abs=1e-9)
    assert fix.cog_deg == pytest.approx(float(rmc.true_course), abs=1e-9)
    assert fix.heading_deg == pytest.approx(float(hdt.heading), abs=1e-9)
    assert 5.3 < fix.sog_ms < 5.7  # the bench's 5.5 m/s under way (the GNSS's noise, 0.1 m/s)
    assert own.malformed == 0


def test_an_invalid_fix_or_a_bad_checksum_keeps_the_last_fix():
    own = kit.OwnShip()
    gga = kit.sentence("GPGGA", "120000.00", "5924.6000", "N", "01028.8000", "E", 1, 8, 0.9)
    own.feed(1.0, [gga.strip()])
    fix = own.fix
    assert fix is not None and fix.latitude_deg == pytest.approx(59.41)
    own.feed(2.0, [b"$GPGGA,120001.00,5925.0000,N,01028.8000,E,1,8,0.9*00"])  # bad checksum
    own.feed(3.0, [kit.sentence("GPRMC", "120002.00", "V", "", "", "", "").strip()])  # void
    assert own.fix is not None and own.fix.t == 1.0 and own.malformed == 1


# --- AIS targets -----------------------------------------------------------------------------
@pytest.mark.skipif(GPSDECODE is None, reason="gpsdecode (gpsd-clients) is not installed")
def test_ais_targets_are_what_gpsdecode_reads():
    """busy-fjord's traffic (Class A and B, static data in several parts) over 6.5 minutes:
    each target's last position report and its static data as gpsd decodes the same lines."""
    assert GPSDECODE is not None
    ais, vdm = kit.AisTargets(), []
    for t, lines in world_lines("busy-fjord", 390.0):
        ais.feed(t, lines)
        vdm += [line for line in lines if line.startswith(b"!AIVDM")]
    vdm_text = b"\r\n".join(vdm) + b"\r\n"
    # -s: type 24's parts A and B each reported (joined, gpsd drops a part B heard first)
    gpsd = subprocess.run([GPSDECODE, "-j", "-s"], input=vdm_text, capture_output=True, check=True)
    decoded = gpsd.stdout.decode()
    last: dict[int, dict] = {}
    names: dict[int, str] = {}
    for report in map(json.loads, decoded.splitlines()):
        if report["type"] in (1, 2, 3, 18, 19):
            last[report["mmsi"]] = report
        if "shipname" in report:
            names[report["mmsi"]] = report["shipname"]
    targets = ais.targets
    assert set(targets) == set(last) and len(targets) >= 5
    assert {t.ais_class for t in targets.values()} == {"A", "B"}
    for mmsi, report in last.items():
        target = targets[mmsi]
        assert (target.latitude_deg, target.longitude_deg) == pytest.approx(
            (report["lat"], report["lon"]),
            abs=1e-6,  # gpsd prints 6 decimals (0.1 m)
        )
        assert target.sog_ms == pytest.approx(report["speed"] / KNOTS_PER_MS, abs=1e-9)
        assert target.cog_deg == pytest.approx(report["course"], abs=1e-9)
        assert target.name == names.get(mmsi)
    assert names and ais.undecodable == 0


def test_a_lost_part_loses_only_its_message():
    ais = kit.AisTargets()
    ais.feed(0.0, [b"!AIVDM,2,2,3,B,1@0000000000000,2*55", b"!AIVDM,2"])
    assert ais.targets == {} and ais.undecodable == 2


# --- encounters ------------------------------------------------------------------------------
def test_cpa_of_a_crossing_worked_by_hand():
    """Own ship at the origin going north at 5 m/s, a target 1,000 m east going west at 5 m/s:
    relative position (0, 1000), relative velocity (-5, -5): TCPA = 5000 / 50 = 100 s, and then
    the target is at (-500, 500) from the own ship: CPA = 500 sqrt 2 = 707.1 m."""
    origin = kit.Origin(59.41, 10.48)
    lat, lon, _ = origin.to_geodetic(0.0, 1000.0)
    own = kit.OwnFix(10.0, 59.41, 10.48, sog_ms=5.0, cog_deg=0.0, heading_deg=0.0)
    target = kit.Target(7, 10.0, lat, lon, 5.0, 270.0, 270.0, "A")
    a = kit.approach(own, target)
    assert (a.range_m, a.bearing_deg) == pytest.approx((1000.0, 90.0), abs=0.01)
    assert (a.cpa_m, a.tcpa_s) == pytest.approx((500 * math.sqrt(2), 100.0), abs=0.01)
    # 40 s later both have moved on: the same encounter, 60 s to go
    later = kit.approach(own, target, t=50.0)
    assert (later.cpa_m, later.tcpa_s) == pytest.approx((500 * math.sqrt(2), 60.0), abs=0.01)
    # at 10 m/s the own ship crosses ahead: relative velocity (-10, -5), TCPA = 5000 / 125 = 40
    fast = kit.approach(own, target, own_sog_ms=10.0)
    assert fast.tcpa_s == pytest.approx(40.0, abs=0.01)
    assert fast.cpa_m == pytest.approx(math.hypot(-400.0, 800.0), abs=0.01)
    opening = kit.approach(own, kit.Target(7, 10.0, lat, lon, 5.0, 90.0, 90.0, "A"), t=10.0)
    assert opening.tcpa_s == 0.0 and opening.cpa_m == pytest.approx(1000.0, abs=0.01)


# --- the documented examples ----------------------------------------------------------------
def test_the_example_controller_uses_only_the_kits_public_names():
    tree = ast.parse(doc_block("### Example: give way by speed"))
    imported = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    modules = {n.module for n in imported if isinstance(n, ast.ImportFrom)}
    modules |= {a.name for n in imported if isinstance(n, ast.Import) for a in n.names}
    assert modules == {"hild.kit", "math"}
    names = {a.name for n in imported if isinstance(n, ast.ImportFrom) for a in n.names}
    assert names and names <= set(kit.__all__)
    # and of its context, only public fields (ControllerContext's, and the kit's trackers')
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            assert not node.attr.startswith("_"), node.attr


def test_the_example_controller_passes_the_crossing_the_reference_autopilot_fails(tmp_path):
    (tmp_path / "give_way_by_speed.py").write_text(doc_block("### Example: give way by speed"))
    swap = [
        "--set",
        "controller.pilot=false",
        "--set",
        'controller.python="give_way_by_speed:factory"',
    ]
    ran = hild_here(tmp_path, "scenario", "run", "crossing-give-way", *swap, "--json")
    result = json.loads(ran.stdout)
    assert ran.returncode == 0, (result["criteria"], ran.stderr)
    assert result["controller"]["slowed_for"] == [257100020]  # the tanker's MMSI
    (cpa,) = [c for c in result["criteria"] if c["name"] == "min_cpa_m"]
    assert cpa["value"] >= 100.0
    reference = run_hild("scenario", "run", "crossing-give-way", "--json")
    assert reference.returncode == 1
    assert not json.loads(reference.stdout)["passed"]


def test_pilot_false_alone_is_no_controller(tmp_path):
    ran = run_hild("scenario", "run", "crossing-give-way", "--set", "controller.pilot=false")
    assert ran.returncode == 2
    assert "controller.pilot = False: expected true" in ran.stderr


def test_the_wire_example_steers_a_daemon_over_udp(tmp_path):
    (tmp_path / "hold_course.py").write_text(doc_block("### The same over a wire"))
    (tmp_path / "wire.toml").write_text(
        """
[scenario]
name = "wire"
bench = "crossing-give-way"
duration_s = 12

[mission]
waypoints = [{ north = 2000, east = 0 }]

[controller]
command = ["{python}", "{scenario_dir}/hold_course.py", "{port:gps:udp}", "{port:jets:udp}",
           "0", "{wall_rate_hz}"]
time_scale = 2  # (a lease of 0.25 s of wall time: kept on a busy machine)

[criteria]
no_watchdog_trip = true
"""
    )
    out = tmp_path / "out"
    ran = run_hild(
        "scenario", "run", str(tmp_path / "wire.toml"), "--json", "--output-dir", str(out)
    )
    result = json.loads(ran.stdout)
    daemon = result["controller"]["daemon"]
    assert daemon["commands_applied"] > 100, (result["controller"], ran.stderr)
    assert daemon["commands_rejected"] == 0
    assert ran.returncode == 0, result["criteria"]  # no watchdog trip after the neutral set
    printed = (out / "controller.stdout").read_text().splitlines()
    assert printed and printed[-1].endswith(" 1 targets"), printed[-3:]


def test_a_python_controllers_context_is_fed_the_steps_lines(tmp_path):
    """context.own and context.ais hold what the step's lines said, at the step's time."""
    (tmp_path / "spy.py").write_text(
        """
seen = []

class Spy:
    def __init__(self, context):
        self.context = context
    def step(self, t, lines):
        fix = self.context.own.fix
        seen.append((t, fix.t if fix else None, len(self.context.ais.targets)))
        return []
    def summary(self):
        return {"seen": seen[-1], "steps": len(seen)}

def factory(context):
    return Spy(context)
"""
    )
    swap = ["--set", "controller.pilot=false", "--set", 'controller.python="spy:factory"']
    limit = ["--set", "scenario.duration_s=40"]
    ran = hild_here(tmp_path, "scenario", "run", "crossing-give-way", *swap, *limit, "--json")
    summary = json.loads(ran.stdout)["controller"]
    t, fix_t, targets = summary["seen"]
    assert t == pytest.approx(40.0, abs=0.5) and fix_t is not None and t - fix_t <= 1.0
    assert targets == 1 and summary["steps"] > 40
