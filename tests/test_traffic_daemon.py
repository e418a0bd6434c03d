"""Acceptance tests of traffic (issue 25) on the real daemon: one 10-minute run of a bench with
eight targets of every kind (at anchor, slow, fast, 16-20 kn, turning, Class B, a COLREG
give-way target and a hold target in crossings) and an AIS receiver on a UDP port of the
test's own, recorded to MCAP; then what came out of the socket and the recording is checked
against the bench's configuration and against computations made here.

Independent references: gpsd's ``gpsdecode`` (a C decoder that shares nothing with pyais)
for the AIS messages; the recorded tracks (``/state`` of the own ship, ``/traffic`` of the
targets) for the truth; the closest approaches and CPA/TCPA recomputed here.

The run is simulated 20 times faster than real time; everything checked is in simulated
time (the sentences' ``t`` in the recording), so a busy machine changes only the wall time.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from endpoints import Daemon, UdpClient

from hild.record.reader import messages

GPSDECODE = shutil.which("gpsdecode")
needs_gpsdecode = pytest.mark.skipif(
    GPSDECODE is None,
    reason="gpsdecode (gpsd-clients) is not installed: no independent "
    "AIS decoder to check hild's messages against",
)

KNOT = 1852.0 / 3600.0
START = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
SEED = 7
DURATION_S = 600.0
RATE_HZ = 50.0
DT = 1.0 / RATE_HZ
LATITUDE, LONGITUDE = 59.41, 10.48
OWN = {"mmsi": 257000123, "name": "HILD E2E", "callsign": "LH1E", "ship_type": 90}

# The targets: identity (what their transponders must say) and motion (TOML, as a bench
# writes it). The expected reporting interval of each is in INTERVALS below.
TARGETS: dict[str, dict] = {
    "anchored": {
        "mmsi": 257200001,
        "ship_name": "FJORD BULK",
        "callsign": "LAFB2",
        "ship_type": 70,
        "dimensions": [150, 30, 12, 12],
        "nav_status": "at-anchor",
        "motion": """
[traffic.course]
north = 1500
east = 600
course_deg = 45
speed_kn = 0""",
    },
    "slow": {
        "mmsi": 257200002,
        "ship_name": "SLOW COASTER",
        "callsign": "LASC1",
        "ship_type": 70,
        "dimensions": [60, 15, 6, 6],
        "motion": """
[traffic.course]
north = 2500
east = -2500
course_deg = 90
speed_kn = 8""",
    },
    "fast": {
        "mmsi": 257200003,
        "ship_name": "FAST FERRY",
        "callsign": "LAFF3",
        "ship_type": 40,
        "dimensions": [30, 10, 5, 5],
        "motion": """
[traffic.course]
north = 5000
east = 1500
course_deg = 180
speed_kn = 25""",
    },
    "medium": {  # 18 kn, west then a turn to the north: 6 s straight, 2 s turning
        "mmsi": 257200004,
        "ship_name": "COASTAL EXPRESS",
        "callsign": "LAHX4",
        "ship_type": 60,
        "dimensions": [100, 25, 10, 10],
        "destination": "OSLO",
        "motion": """
[traffic.route]
waypoints = [
    { north = 3000, east = 3500, speed_kn = 18 },
    { north = 3000, east = 1500, speed_kn = 18 },
    { north = 12000, east = 1500, speed_kn = 18 },
]""",
    },
    "turner": {  # 10 kn, east then a turn to the south: 10 s straight, 3 1/3 s turning
        "mmsi": 257200005,
        "ship_name": "PILOT BOAT",
        "callsign": "LAPB5",
        "ship_type": 50,
        "dimensions": [12, 4, 2, 2],
        "motion": """
[traffic.route]
waypoints = [
    { north = 1500, east = -2500, speed_kn = 10 },
    { north = 1500, east = -600, speed_kn = 10 },
    { north = -1500, east = -600, speed_kn = 10 },
]""",
    },
    "yacht": {
        "mmsi": 257200006,
        "ship_name": "SJOSPRINT",
        "callsign": "LJ6Y",
        "ship_type": 37,
        "dimensions": [8, 4, 2, 2],
        "class": "B",
        "motion": """
[traffic.course]
north = -500
east = -2500
course_deg = 60
speed_kn = 15""",
    },
    # crossing-stand-on (the own ship's side): it comes from port and gives way; placed
    # 8 min out so that it sails straight for 2 min before the own ship is 6 min away
    "giveway": {
        "mmsi": 257200007,
        "ship_name": "OSLOFJORD CARRIER",
        "callsign": "LACR5",
        "ship_type": 70,
        "dimensions": [80, 20, 7, 7],
        "destination": "MOSS",
        "draught": 5.8,
        "imo": 9123456,
        "behaviour": "colreg",
        "motion": """
[traffic.encounter]
situation = "crossing-stand-on"
speed_kn = 12
cpa_m = 0
tcpa_s = 480""",
    },
    "holder": {  # crossing-give-way: it comes from starboard, and holds whatever happens
        "mmsi": 257200008,
        "ship_name": "STUBBORN",
        "callsign": "LAST8",
        "ship_type": 80,
        "dimensions": [120, 30, 12, 12],
        "behaviour": "hold",
        "motion": """
[traffic.encounter]
situation = "crossing-give-way"
speed_kn = 10
cpa_m = 400
tcpa_s = 420""",
    },
}
TURN_DEG = 60.0  # the give-way turn of a colreg target (Behaviour's default, targets.py)
NAV_STATUS = {"at-anchor": 1}

# Position report intervals [s] (ITU-R M.1371-5 Table 1 and 2): steady, and while turning
STEADY = {
    "anchored": 180.0,
    "slow": 10.0,
    "fast": 2.0,
    "medium": 6.0,
    "turner": 10.0,
    "yacht": 30.0,
    "giveway": 10.0,
    "holder": 10.0,
    "own": 10.0,
}
TURNING = {"medium": 2.0, "turner": 10.0 / 3.0, "giveway": 10.0 / 3.0}
STATIC_S = 360.0
# The receiver checks the schedule at its epochs, 10 Hz: a report goes out at the first epoch
# at or after its time, never more than 0.1 s late, so any interval is within 0.1 s.
EPOCH_S = 0.1


def _toml(value) -> str:
    return (
        json.dumps(value)
        if not isinstance(value, list)
        else "[" + ", ".join(map(_toml, value)) + "]"
    )


def bench_text(udp_port: int, time_scale: float, record_hz: float) -> str:
    out = [
        f"""[bench]
name = "traffic-e2e"
rate_hz = {RATE_HZ:g}
seed = {SEED}
start_time = "{START.strftime("%Y-%m-%dT%H:%M:%SZ")}"
time_scale = {time_scale:g}

[vessel]
profile = "odin"
heading_deg = 0.0
speed = 5.5

[vessel.commands]
"port.rpm" = 1800
"starboard.rpm" = 1800
"port.deflector" = 1
"starboard.deflector" = 1

[origin]
latitude = {LATITUDE}
longitude = {LONGITUDE}

[weather]
preset = "calm"

# the recorder keeps up at this rate and time scale (its queue drops nothing: checked)
[record]
file = "unused.mcap"
rate_hz = {record_hz:g}
nmea_log = false

[[device]]
name = "ais"
type = "ais"
ports = ["udp://127.0.0.1:{udp_port}"]
sentences = ["VDM", "VDO"]
[device.settings]
own_mmsi = {OWN["mmsi"]}
own_name = "{OWN["name"]}"
own_callsign = "{OWN["callsign"]}"
own_ship_type = {OWN["ship_type"]}
"""
    ]
    for name, spec in TARGETS.items():
        out.append(f'\n[[traffic]]\nname = "{name}"')
        for key, value in spec.items():
            if key != "motion":
                out.append(f"{key} = {_toml(value)}")
        out.append(spec["motion"].strip() + "\n")
    return "\n".join(out)


# --- one run -------------------------------------------------------------------------------
@dataclass
class Run:
    summary: dict
    udp_lines: list[bytes]  # every line received on the test's socket, in order
    sentences: list[tuple[float, str]]  # /sensors/ais: (sim time, sentence)
    traffic: list[dict]  # /traffic payloads
    state: list[dict]  # /state payloads

    def track(self, name: str, key: str) -> np.ndarray:
        return np.array(
            [next(x[key] for x in p["targets"] if x["name"] == name) for p in self.traffic],
            dtype=float,
        )

    @property
    def traffic_t(self) -> np.ndarray:
        return np.array([p["t"] for p in self.traffic])

    def own(self, key: str) -> np.ndarray:
        return np.array([s[key] for s in self.state], dtype=float)


def run_daemon(tmp: Path, duration: float, time_scale: float, record_hz: float) -> Run:
    tmp.mkdir(parents=True, exist_ok=True)
    udp = UdpClient().start()
    bench = tmp / "traffic-e2e.toml"
    bench.write_text(bench_text(udp.port, time_scale, record_hz))
    record = tmp / "run.mcap"
    try:
        daemon = Daemon(
            str(bench),
            "--run-dir",
            str(tmp / "run"),
            "--duration",
            f"{duration:g}",
            "--record",
            str(record),
            tmp=tmp,
        )
        summary = daemon.wait(timeout=duration / time_scale + 300.0)
        assert daemon.proc.returncode == 0, daemon.stderr()[-3000:]
        time.sleep(0.3)  # the last datagrams through the loopback
    finally:
        udp.close()
    # A recording that dropped messages (a writer that could not keep up) cannot be judged
    assert summary["record"]["dropped"] == 0 and summary["record"]["complete"], summary["record"]
    port = next(iter(summary["ports"].values()))
    assert port["dropped_lines"] == 0 and port["errors"] == 0, port
    recorded = list(messages(record, ["/sensors/ais", "/traffic", "/state"]))
    return Run(
        summary=summary,
        udp_lines=[line for _, line in udp.lines],
        sentences=[
            (m.payload["t"], m.payload["sentence"]) for m in recorded if m.topic == "/sensors/ais"
        ],
        traffic=[m.payload for m in recorded if m.topic == "/traffic"],
        state=[m.payload for m in recorded if m.topic == "/state"],
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Run:
    # 10 simulated minutes at 20x: 30 s of wall time on an idle machine
    return run_daemon(tmp_path_factory.mktemp("traffic-e2e"), DURATION_S, 20.0, 10.0)


# --- AIS messages: grouped from sentences, decoded here (header fields) and by gpsd -----------
@dataclass
class Message:
    t: float  # sim time it was sent
    lines: list[str]
    sentence: str  # "VDM" or "VDO"

    @property
    def bits(self) -> str:
        payload = "".join(line.split(",")[5] for line in self.lines)
        out = []
        for c in payload:
            v = ord(c) - 48
            out.append(format(v - 8 if v > 40 else v, "06b"))
        return "".join(out)

    def field(self, start: int, length: int, signed: bool = False) -> int:
        value = int(self.bits[start : start + length], 2)
        if signed and value >= 1 << (length - 1):
            value -= 1 << length
        return value

    @property
    def type(self) -> int:
        return self.field(0, 6)

    @property
    def mmsi(self) -> int:
        return self.field(8, 30)


def group(sentences: list[tuple[float, str]]) -> list[Message]:
    """Sentences into messages (a fragment count above 1: the fragments that follow)."""
    out: list[Message] = []
    pending: list[str] = []
    for t, line in sentences:
        fields = line.split(",")
        pending.append(line)
        if fields[2] == fields[1]:  # the last fragment
            out.append(Message(t, pending, line[3:6]))
            pending = []
    assert not pending
    return out


def gpsdecode(msgs: list[Message]) -> list[dict]:
    """Every message as gpsd decodes it, unscaled (-u: lat/lon in 1/600000 deg, speed and
    course in tenths), type 24 parts apart (-s); one JSON object per message, in order."""
    assert GPSDECODE is not None
    text = "".join(line + "\r\n" for m in msgs for line in m.lines).encode()
    done = subprocess.run(
        [GPSDECODE, "-j", "-u", "-s"], input=text, capture_output=True, check=True, timeout=120
    )
    decoded = [json.loads(s) for s in done.stdout.decode().splitlines() if s.strip()]
    assert len(decoded) == len(msgs), done.stderr
    return decoded


def name_of(mmsi: int) -> str:
    if mmsi == OWN["mmsi"]:
        return "own"
    return next(name for name, spec in TARGETS.items() if spec["mmsi"] == mmsi)


# --- geodesy for tolerances (WGS-84 radii of curvature; only to size a unit in metres) ------
A_WGS84, E2_WGS84 = 6378137.0, 6.69437999014e-3
_S2 = math.sin(math.radians(LATITUDE)) ** 2
M_RADIUS = A_WGS84 * (1 - E2_WGS84) / (1 - E2_WGS84 * _S2) ** 1.5
N_RADIUS = A_WGS84 / math.sqrt(1 - E2_WGS84 * _S2)
UNIT = math.radians(1 / 600000.0)  # one AIS position unit (1/10000 min) [rad]
LAT_UNIT_M = M_RADIUS * UNIT  # 0.185 m
LON_UNIT_M = N_RADIUS * math.cos(math.radians(LATITUDE)) * UNIT  # 0.094 m


def wrap180(deg: float) -> float:
    return (deg + 180.0) % 360.0 - 180.0


def bracket(x: float, a: float, b: float, slack: float) -> bool:
    return min(a, b) - slack <= x <= max(a, b) + slack


# --- 1. gpsd decodes everything --------------------------------------------------------------
@needs_gpsdecode
def test_gpsdecode_decodes_every_message_and_it_matches_the_truth(run):
    # what came out of the socket is what the recording says was sent, line for line
    assert run.udp_lines == [(s + "\r\n").encode() for _, s in run.sentences]
    assert all(line.startswith((b"!AIVDM,", b"!AIVDO,")) for line in run.udp_lines)
    msgs = group(run.sentences)
    decoded = gpsdecode(msgs)
    t_traffic = run.traffic_t
    state_at = {round(s["t"], 3): s for s in run.state}
    seen: set[tuple[str, int]] = set()
    checked = 0
    for m, d in zip(msgs, decoded, strict=True):
        name = name_of(d["mmsi"])
        assert (d["type"], d["mmsi"]) == (m.type, m.mmsi)
        assert m.sentence == ("VDO" if name == "own" else "VDM")
        seen.add((name, d["type"]))
        spec = OWN if name == "own" else TARGETS[name]
        if d["type"] in (5, 24):
            check_static(d, name, spec)
            continue
        assert d["type"] in ((18,) if spec.get("class") == "B" else (1, 3))
        # the UTC second of the report: the fixed start plus the sim time
        assert d["second"] == (START + timedelta(seconds=m.t)).second
        assert d["accuracy"] is True
        if d["type"] in (1, 3):
            assert d["status"] == NAV_STATUS.get(spec.get("nav_status"), 0)
            assert d["maneuver"] == 0  # special manoeuvre indicator: 0 not available (ITU)
        if name == "own":
            check_own(d, state_at[round(m.t, 3)])
            checked += 1
        elif t_traffic[0] <= m.t <= t_traffic[-1]:  # (/traffic starts at 1 s)
            check_target(d, name, m.t, run, t_traffic)
            checked += 1
    for name, spec in TARGETS.items():
        kinds = {18, 24} if spec.get("class") == "B" else {1, 5}
        assert {(name, k) for k in kinds} <= seen, name
    assert {("own", 1), ("own", 5)} <= seen
    assert ("giveway", 3) in seen  # the first report at a shortened interval (its turn)
    # all but the few position reports in the first second were checked against the truth
    reports = sum(d["type"] in (1, 3, 18) for d in decoded)
    assert reports - len(TARGETS) - 1 <= checked <= reports


def check_static(d: dict, name: str, spec: dict) -> None:
    ship_name = spec.get("ship_name", spec.get("name"))
    dims = spec.get("dimensions", [0, 0, 0, 0])
    if d["type"] == 5 or d.get("part") == "A":
        assert d["shipname"] == ship_name, name
    if d["type"] == 5 or d.get("part") == "B":
        assert d["callsign"] == spec["callsign"] and d["shiptype"] == spec["ship_type"], name
        assert [d["to_bow"], d["to_stern"], d["to_port"], d["to_starboard"]] == dims, name
    if d["type"] == 5:
        assert d["imo"] == spec.get("imo", 0) and d["destination"] == spec.get("destination", "")
        assert d["draught"] == round(spec.get("draught", 0.0) * 10)  # 0.1 m


def check_target(d: dict, name: str, t: float, run: Run, t_traffic: np.ndarray) -> None:
    """Position, SOG and COG of a target's report against the truth in /traffic at its time.

    /traffic samples the truth once a second; the report falls between two samples k and
    k + 1. Speed (a first-order lag) and heading (a turn one way in a second) are monotonic
    over a second, so the truth at the report lies between the two samples: the decoded
    value within half a step of rounding (0.05 kn, 0.05 deg) of that range. A position is
    interpolated on the straight line between the two samples: a ship that sails a length L
    in the second, its course turning through dpsi and its speed changing by dU, is off
    that chord by at most L dpsi / 4 (twice a circular arc's sagitta, L dpsi / 8) plus
    dU * 1 s / 2 along it; with the report's rounding (half a unit: 0.09 m of latitude,
    0.05 m of longitude)."""
    k = int(np.searchsorted(t_traffic, t, side="right")) - 1
    assert 0 <= k < len(t_traffic) - 1, (name, t)
    a, b = (next(x for x in run.traffic[i]["targets"] if x["name"] == name) for i in (k, k + 1))
    f = (t - t_traffic[k]) / (t_traffic[k + 1] - t_traffic[k])
    dpsi = abs(wrap180(b["heading_deg"] - a["heading_deg"])) * math.pi / 180.0
    length = max(a["speed"], b["speed"]) * 1.0
    off_m = length * dpsi / 4.0 + abs(b["speed"] - a["speed"]) / 2.0 + 1e-3
    lat = (a["latitude"] + f * (b["latitude"] - a["latitude"])) * 600000.0
    lon = (a["longitude"] + f * (b["longitude"] - a["longitude"])) * 600000.0
    assert abs(d["lat"] - lat) <= 0.5 + off_m / LAT_UNIT_M, (name, t, d["lat"] - lat)
    assert abs(d["lon"] - lon) <= 0.5 + off_m / LON_UNIT_M, (name, t, d["lon"] - lon)
    # (the /traffic figures in kn and deg are rounded to 0.01: the slack covers it)
    assert bracket(d["speed"] / 10.0, a["speed"] / KNOT, b["speed"] / KNOT, 0.05 + 1e-6), name
    cog = d["course"] / 10.0
    h0 = a["heading_deg"]
    h1 = h0 + wrap180(b["heading_deg"] - h0)
    assert bracket(h0 + wrap180(cog - h0), h0, h1, 0.05 + 0.005 + 1e-6), (name, t, cog, h0, h1)
    # the heading in whole degrees: half a degree of rounding
    assert bracket(h0 + wrap180(d["heading"] - h0), h0, h1, 0.5 + 0.005 + 1e-6), (name, t)


def check_own(d: dict, s: dict) -> None:
    """The own ship's report (AIVDO) against /state at the same tick (the recorder samples
    at 10 Hz on the same ticks as the receiver's 10 Hz epochs): the antenna 3 m above the
    body origin (devices/ais.toml), moved by the attitude (Fossen eq. 2.18, R = Rz Ry Rx) and
    the rotation (v + w x r); each field within half of its last digit."""
    phi, theta, psi = s["roll"], s["pitch"], s["heading"]
    r_b = np.array([0.0, 0.0, -3.0])
    cph, sph, cth, sth, cps, sps = (
        math.cos(phi),
        math.sin(phi),
        math.cos(theta),
        math.sin(theta),
        math.cos(psi),
        math.sin(psi),
    )
    R = np.array(
        [
            [cps * cth, -sps * cph + cps * sth * sph, sps * sph + cps * cph * sth],
            [sps * cth, cps * cph + sph * sth * sps, -cps * sph + sth * sps * cph],
            [-sth, cth * sph, cth * cph],
        ]
    )
    offset = R @ r_b
    v = R @ (np.array([s["u"], s["v"], s["w"]]) + np.cross([s["p"], s["q"], s["r"]], r_b))
    lat = s["latitude"] + offset[0] / M_RADIUS * 180.0 / math.pi
    lon = s["longitude"] + offset[1] / (N_RADIUS * math.cos(math.radians(LATITUDE))) * 180 / math.pi
    # the lever arm's conversion with radii at the origin: a few cm off at most over 3.3 km
    assert abs(d["lat"] - lat * 600000.0) <= 0.5 + 1e-3, d["lat"] - lat * 600000.0
    assert abs(d["lon"] - lon * 600000.0) <= 0.5 + 1e-3, d["lon"] - lon * 600000.0
    sog_kn = math.hypot(v[0], v[1]) / KNOT
    assert abs(d["speed"] - sog_kn * 10.0) <= 0.5 + 1e-6
    cog = math.degrees(math.atan2(v[1], v[0]))
    assert abs(wrap180(d["course"] / 10.0 - cog)) <= 0.05 + 1e-6
    assert abs(wrap180(d["heading"] - math.degrees(psi))) <= 0.5 + 1e-6


# --- 2. reporting intervals ------------------------------------------------------------------
def test_reporting_intervals(run):
    """Each station's gaps between position reports are its ITU interval within one 10 Hz
    epoch, judged by what the report at the gap's start says (its SOG and rate of turn, as the
    receiver judged at that epoch). A gap that ends in a message 3 was cut short (ITDMA): the
    interval shortened while it ran, so it lies between the new and the old interval."""
    msgs = group(run.sentences)
    by_station: dict[str, list[Message]] = {}
    for m in msgs:
        by_station.setdefault(name_of(m.mmsi), []).append(m)
    assert set(by_station) == {*TARGETS, "own"}
    turning_gaps: dict[str, int] = {}
    for name, station in by_station.items():
        reports = [m for m in station if m.type in (1, 3, 18)]
        statics = sorted({m.t for m in station if m.type in (5, 24)})
        assert statics, name
        for a, b in zip(statics, statics[1:], strict=False):  # (24 A and B: the same epoch)
            assert abs(b - a - STATIC_S) <= EPOCH_S + 1e-6, (name, a, b)
        # a quarter of the run at least: the first report within one interval of the start
        assert len(reports) >= DURATION_S / STEADY[name] * 0.75, (name, len(reports))
        for a, b in zip(reports, reports[1:], strict=False):
            gap = b.t - a.t
            expected = expected_interval(name, a)
            if expected is None:
                continue  # a rate of turn whose code does not say which side of 20 deg/min
            if b.type == 3:
                after = expected_interval(name, b) or 0.0
                assert after - EPOCH_S - 1e-6 <= gap <= expected + EPOCH_S + 1e-6, (name, a.t)
                continue
            assert abs(gap - expected) <= EPOCH_S + 1e-6, (name, a.t, gap, expected)
            if name in TURNING and expected == TURNING[name]:
                turning_gaps[name] = turning_gaps.get(name, 0) + 1
    # every turning ship was seen turning, for a good many reports
    assert all(turning_gaps.get(name, 0) >= 8 for name in TURNING), turning_gaps
    # the static data of several stations came twice in the 10 minutes (the phases: seed 7)
    assert sum(len({m.t for m in s if m.type in (5, 24)}) >= 2 for s in by_station.values()) >= 3


def expected_interval(name: str, m: Message) -> float | None:
    """The interval the report ``m`` should be followed by: from the configuration (the class
    and the navigational status) and the report's own SOG and rate of turn."""
    if m.type == 18:
        assert m.field(46, 10) > 20  # all Class B targets here above 2 kn: 30 s
        return STEADY[name]
    if name not in TURNING:
        return STEADY[name]
    # ROT code = 4.733 sqrt(|deg/min|), rounded: a code of 22 or more is above 20.6 deg/min,
    # 20 or less below 18.8 deg/min; 21 is either side of the 20 deg/min threshold.
    code = abs(m.field(42, 8, signed=True))
    if code == 21:
        return None
    return TURNING[name] if code >= 22 else STEADY[name]


# --- 3. COLREG -------------------------------------------------------------------------------
def test_colreg_give_way_target_turns_to_starboard_and_passes_astern(run):
    t = run.traffic_t
    heading = np.degrees(run.track("giveway", "heading"))
    modes = [next(x for x in p["targets"] if x["name"] == "giveway")["mode"] for p in run.traffic]
    situations = {
        next(x for x in p["targets"] if x["name"] == "giveway")["situation"] for p in run.traffic
    }
    assert modes[0] == "sail" and "give-way" in modes
    # named from the own ship's side, as in the bench: the own ship stands on
    assert situations <= {"", "crossing-stand-on"} and "crossing-stand-on" in situations
    # before the own ship is within 6 min (act_tcpa_s) it holds its course
    base = heading[0]
    first = modes.index("give-way")
    assert np.all(heading[:first] == base) and t[first] > 60.0
    turned = np.array([wrap180(h - base) for h in heading])
    # to starboard only (its heading increases), by about its turn: the critically damped
    # yaw loop settles within 2 % of the turn (1.2 deg) after 12 yaw time constants (120 s)
    # and never overshoots
    assert turned.min() > -1e-3
    assert TURN_DEG - 1.5 <= turned.max() <= TURN_DEG + 1e-6, turned.max()
    # it passes astern: at its closest approach it is abaft the own ship's beam
    grid, own_n, own_e, tn, te = common_grid(run, "giveway")
    r = np.hypot(tn - own_n, te - own_e)
    k = int(r.argmin())
    own_heading = np.interp(grid[k], run.own("t"), np.unwrap(run.own("heading")))
    rel = wrap180(math.degrees(math.atan2(te[k] - own_e[k], tn[k] - own_n[k]) - own_heading))
    assert abs(rel) > 90.0, rel
    # and far wider than the collision course it was placed on (CPA 0 m)
    assert r[k] > 300.0, r[k]


def test_hold_target_never_changes_heading(run):
    heading = run.track("holder", "heading")
    assert np.all(np.abs(heading - heading[0]) <= 1e-9)
    targets = [next(x for x in p["targets"] if x["name"] == "holder") for p in run.traffic]
    assert {x["mode"] for x in targets} == {"sail"} and {x["situation"] for x in targets} == {""}


# --- 4. CPA ----------------------------------------------------------------------------------
def common_grid(run: Run, name: str, step: float = 0.005):
    """The own ship (10 Hz) and the target (1 Hz) on one fine grid, each interpolated on
    straight lines between its samples."""
    t = run.traffic_t
    grid = np.arange(t[0], t[-1], step)
    ts = run.own("t")
    return (
        grid,
        np.interp(grid, ts, run.own("north")),
        np.interp(grid, ts, run.own("east")),
        np.interp(grid, t, run.track(name, "north")),
        np.interp(grid, t, run.track(name, "east")),
    )


def test_closest_approach_matches_an_independent_computation(run):
    """run.summary's min range of each target against the minimum of the distance between
    the two recorded tracks.

    Tolerance: the tracks are interpolated on straight lines; the own ship sails a straight
    course at a steady speed (calm water, held commands) so its 10 Hz samples give it
    exactly; a target on a straight course is exact too, and one in a turn is off its chord
    by at most L dpsi / 4 in the second of its closest approach (L the distance sailed,
    dpsi the turn in that second; see check_target). The positions are recorded to the mm.
    The kernel measures the range every step (0.02 s) of both ships at the same instant: its
    minimum is above the continuous one by at most (v_rel dt)^2 / (8 d): micrometres."""
    traffic = run.summary["traffic"]
    assert set(traffic) == set(TARGETS)
    checked = 0
    for name in TARGETS:
        grid, own_n, own_e, tn, te = common_grid(run, name)
        r = np.hypot(tn - own_n, te - own_e)
        k = int(r.argmin())
        if not 2.0 < grid[k] < DURATION_S - 2.0:
            continue  # nearest at an end of the run: not a closest approach
        checked += 1
        i = int(np.searchsorted(run.traffic_t, grid[k])) - 1
        pair = [run.track(name, "heading")[i : i + 2], run.track(name, "speed")[i : i + 2]]
        dpsi = abs((pair[0][1] - pair[0][0] + math.pi) % (2 * math.pi) - math.pi)
        tol = max(pair[1]) * dpsi / 4.0 + 0.005 + 0.005  # + the summary's rounding, mm
        assert traffic[name]["min_range_m"] == pytest.approx(r[k], abs=tol), name
        # when: the range is flat at its minimum, so the time is judged by the range there
        at = traffic[name]["at_t"]
        r_at = float(np.interp(at, grid, r))
        assert r_at - r[k] <= tol, (name, at, grid[k])
    assert checked >= 5


def test_predicted_cpa_of_a_hold_target_is_the_textbook_one(run):
    """The /traffic CPA and TCPA of the hold target (straight course) against the relative-
    motion solution from the recorded positions and velocities: r the target's position from
    the own ship, v its velocity relative to the own ship; TCPA = -r.v / |v|^2, CPA = |r + v
    TCPA|.

    The geometry reported is of the same instant as the positions (the simulation works it out
    again once both ships have stepped: kernel.py traffic_geometry). Tolerances: the figures'
    rounding (0.005 m, 0.005 s), the target's position to the mm, its speed to 1e-4 m/s and
    heading to 1e-6 rad, and (a margin kept from when the geometry lagged a step) the own
    ship's change of velocity in one step (its acceleration times dt, from its 10 Hz
    samples), which would move the predicted point by up to TCPA times that velocity error.
    From 20 s on: before, the own ship's jets spin up from rest (its
    speed dips by 0.7 m/s and comes back), and its acceleration changes within 0.1 s."""
    state = {round(s["t"], 3): s for s in run.state}
    before = {round(s["t"] + 0.1, 3): s for s in run.state}
    north, east = run.track("holder", "north"), run.track("holder", "east")
    heading, speed = run.track("holder", "heading"), run.track("holder", "speed")
    checked = 0
    for i, p in enumerate(run.traffic):
        if p["t"] < 20.0:
            continue
        x = next(x for x in p["targets"] if x["name"] == "holder")
        s, s0 = state[round(p["t"], 3)], before[round(p["t"], 3)]
        accel = math.hypot(s["v_north"] - s0["v_north"], s["v_east"] - s0["v_east"]) / 0.1
        rn, re = north[i] - s["north"], east[i] - s["east"]
        vn = speed[i] * math.cos(heading[i]) - s["v_north"]
        ve = speed[i] * math.sin(heading[i]) - s["v_east"]
        v2 = vn * vn + ve * ve
        tcpa = -(rn * vn + re * ve) / v2
        cpa = math.hypot(rn + vn * tcpa, re + ve * tcpa)
        dv = 5e-5 + speed[i] * 5e-7 + accel * DT  # m/s: rounding, and the own ship's step
        tol_m = 0.005 + 0.002 + abs(tcpa) * dv
        assert x["cpa_m"] == pytest.approx(cpa, abs=tol_m), (p["t"], x["cpa_m"], cpa)
        assert x["tcpa_s"] == pytest.approx(tcpa, abs=0.005 + tol_m / math.sqrt(v2))
        assert x["range_m"] == pytest.approx(math.hypot(rn, re), abs=0.01)
        checked += 1
    assert checked >= DURATION_S - 21


# --- 5. determinism --------------------------------------------------------------------------
def test_same_bench_and_seed_same_traffic_and_sentences(run, tmp_path):
    """Two more runs of 2 min (at 40x, the recorder at 1 Hz): their /traffic payloads and AIS
    sentences are the same to the byte, as are the main run's first 2 minutes (another time
    scale and record rate: neither is part of the simulation)."""
    a = run_daemon(tmp_path / "a", 120.0, 40.0, 1.0)
    b = run_daemon(tmp_path / "b", 120.0, 40.0, 1.0)
    assert len(a.traffic) == 120 and a.traffic == b.traffic
    assert a.sentences and a.sentences == b.sentences and a.udp_lines == b.udp_lines
    assert a.traffic == [p for p in run.traffic if p["t"] <= 120.0]
    assert a.sentences == [(t, s) for t, s in run.sentences if t <= 120.0]
