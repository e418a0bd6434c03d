"""Bad files and options end with a message naming the file (or option), the key, the value and
what was expected, exit status 2, and never a traceback or a hang.

One table of malformed inputs, each run through the real command line (`hild check`, `hild run`,
`hild sim`, `hild scenario run` or `hild sweep`) in a process of its own (tests/forked_cli.py):
files that are not text or not TOML, files that are not there, options out of range, values
with no physical meaning in bench, profile, weather, device-type and schedule files, and
scenarios whose controller cannot be loaded or started.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from tests.endpoints import on_free_ports
from tests.forked_cli import run_hild

REPO = Path(__file__).resolve().parents[1]
DEFAULT = (REPO / "profiles" / "bench" / "default.toml").read_text()
OTTER = (REPO / "profiles" / "otter.toml").read_text()
GPS_TYPE = (REPO / "devices" / "gps.toml").read_text()
LATIN1 = "# Jølner's hull\n".encode("latin-1")
DEEP = b"a = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"
DOTTED = b"[" + b".".join([b"a"] * 1000) + b"]\n"  # a table header 1,000 tables deep
BINARY = bytes(range(256)) * 8
SYNTAX = b"[bench\nname = 1\n"
CONTENTS = {"latin-1": LATIN1, "deep": DEEP, "dotted": DOTTED, "binary": BINARY, "syntax": SYNTAX}
SAYS = {
    "latin-1": "byte 0xf8 at line 1, column 4 is not UTF-8",
    "deep": "nested less deeply",
    "dotted": "at most 32 tables and arrays inside each other",
    "binary": "UTF-8 text",
    "syntax": "valid TOML",
}


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old  # the template still has what the case changes
    return text.replace(old, new, 1)


def edited(text: str, changes: list[tuple[str, str]]) -> str:
    for old, new in changes:
        text = edit(text, old, new)
    return text


def bench_with(old: str, new: str) -> bytes:
    return edit(DEFAULT, old, new).encode()


# A bench whose one device is of the type in the file types/bad.toml.
TYPED_BENCH = b"""[bench]
name = "typed"
[vessel]
profile = "odin"
[[device]]
name = "probe"
type = "bad"
ports = ["pty://probe"]
"""
SCHEDULE = "t,name,value\n0,port.rpm,1000\n"


@dataclass(frozen=True)
class Case:
    """One malformed input: the command line ({tmp} is the case's folder), the files it
    reads, and what the message must contain (the file or option, the key, the expectation)."""

    id: str
    argv: tuple[str, ...]
    says: tuple[str, ...]
    files: dict[str, bytes] = field(default_factory=dict)
    absent: tuple[str, ...] = ()  # what the message must not say
    fifos: tuple[str, ...] = ()  # named pipes made in {tmp} (nobody writes to them)


def unreadable_cases() -> list[Case]:
    cases = []
    for name, content in CONTENTS.items():
        says = ("{tmp}/bad.toml", SAYS[name])
        cases += [
            Case(f"bench-{name}-check", ("check", "{tmp}/bad.toml"), says, {"bad.toml": content}),
            Case(
                f"bench-{name}-run",
                ("run", "{tmp}/bad.toml", "--run-dir", "{tmp}/run"),
                says,
                {"bad.toml": content},
            ),
            Case(
                f"profile-{name}",
                ("sim", "{tmp}/bad.toml", "--duration", "1"),
                says,
                {"bad.toml": content},
            ),
            Case(
                f"weather-{name}",
                ("sim", "odin", "--duration", "1", "--weather", "{tmp}/bad.toml"),
                says,
                {"bad.toml": content},
            ),
            Case(
                f"device-type-{name}",
                ("check", "{tmp}/bench.toml"),
                ("{tmp}/types/bad.toml", SAYS[name]),
                {"bench.toml": TYPED_BENCH, "types/bad.toml": content},
            ),
        ]
    for name in ("latin-1", "binary"):
        cases.append(
            Case(
                f"schedule-{name}",
                ("sim", "odin", "--duration", "1", "--schedule", "{tmp}/s.csv"),
                ("{tmp}/s.csv", SAYS[name]),
                {"s.csv": CONTENTS[name]},
            )
        )
    return cases


MISSING = [
    Case(
        "bench-no-such-file",
        ("check", "/no/such/bench.toml"),
        ("/no/such/bench.toml", "no such file"),
    ),
    # hild check takes a scenario too: a missing file is named as either (it said "bench file",
    # then "1 error(s) in the bench")
    Case(
        "check-no-such-scenario-file",
        ("check", "{tmp}/my-scenario.toml"),
        (
            "hild: error: {tmp}/my-scenario.toml: expected an existing bench or scenario file (no "
            "such file",
            "built-in scenarios: crossing-give-way",
        ),
    ),
    Case(
        "bench-no-such-name",
        ("check", "no-such-bench"),
        (
            "no-such-bench",
            "a built-in bench: ardupilot, ardupilot-blueboat, ardupilot-otter, busy-fjord",
        ),
    ),
    Case("bench-directory", ("check", "{tmp}"), ("{tmp}", "not a directory")),
    Case(
        "profile-no-such-file",
        ("sim", "/no/such/boat.toml", "--duration", "1"),
        ("/no/such/boat.toml", "an existing profile file"),
    ),
    Case(
        "profile-no-such-name",
        ("sim", "odn", "--duration", "1"),
        ("name = 'odn'", "jolner, odin, otter, wamv"),
    ),
    Case(
        "weather-no-such-file",
        ("sim", "odin", "--duration", "1", "--weather", "/no/such/w.toml"),
        ("/no/such/w.toml", "an existing weather file"),
    ),
    Case(
        "weather-no-such-name",
        ("sim", "odin", "--duration", "1", "--weather", "gael"),
        ("preset = 'gael'", "gale-hs1"),
    ),
    Case(
        "schedule-no-such-file",
        ("sim", "odin", "--duration", "1", "--schedule", "{tmp}/none.csv"),
        ("{tmp}/none.csv", "no such file"),
    ),
    Case(
        "device-type-no-such-name",
        ("check", "{tmp}/bench.toml"),
        ("device (probe).type = 'bad'", "a device type: ais, anemometer"),
        {"bench.toml": TYPED_BENCH},
    ),
]

SIM = ("sim", "odin", "--duration", "1")
MINIMAL_BENCH = b'[bench]\nname = "b"\n[vessel]\nprofile = "odin"\n'
PTY_BENCH = MINIMAL_BENCH + b'[[device]]\ntype = "heading"\nport = "pty://heading"\n'
OPTIONS = [
    Case("dt-zero", (*SIM, "--dt", "0"), ("--dt",)),
    Case("dt-negative", (*SIM, "--dt", "-1"), ("--dt",)),
    Case("dt-nan", (*SIM, "--dt", "nan"), ("--dt",)),
    Case("dt-too-long", (*SIM, "--dt", "5"), ("--dt", "greater than 0 to 1", "time constant")),
    Case(
        "dt-unstable",
        (*SIM, "--dt", "1"),
        ("--dt 1: expected a step of at most 0.", " s for odin with rk4", "time constant"),
    ),
    Case(
        "dt-unstable-dopri5",
        ("sim", "wamv", "--duration", "1", "--dt", "0.1", "--method", "dopri5"),
        (
            "--dt 0.1: expected a step of at most",
            "for wamv with dopri5",
            "its fastest mode for dopri5",
        ),
    ),
    Case(
        "duration-overflows",
        ("sim", "odin", "--duration", "1e308"),
        ("--duration 1e+308", "at most 1e+12 steps"),
    ),
    Case(
        "duration-below-a-step",
        ("sim", "odin", "--duration", "0.001"),
        ("--duration 0.001", "at least one step of --dt 0.01"),
    ),
    Case("duration-nan", ("sim", "odin", "--duration", "nan"), ("--duration",)),
    Case("duration-negative", ("sim", "odin", "--duration", "-5"), ("--duration",)),
    Case("sim-seed-negative", (*SIM, "--seed", "-1"), ("--seed",)),
    Case("output-interval-zero", (*SIM, "--output-interval", "0"), ("--output-interval",)),
    Case("out-unwritable", (*SIM, "--out", "/proc/no/x.csv"), ("--out /proc/no/x.csv",)),
    Case(
        "out-disk-full",
        (*SIM, "--out", "/dev/full"),  # opens, then every write fails
        ("--out /dev/full: cannot write it (No space left on device)",),
    ),
    Case(
        "cmd-out-of-range",
        (*SIM, "--cmd", "port.rpm=99999"),
        ("--cmd 'port.rpm=99999'", "from 400 to 2000 rpm"),
    ),
    Case("cmd-no-value", (*SIM, "--cmd", "port.rpm"), ("--cmd 'port.rpm'", "NAME=VALUE")),
    Case(
        "cmd-unknown",
        (*SIM, "--cmd", "port.rudder=3"),
        ("--cmd 'port.rudder=3'", "rpm, nozzle_deg, deflector"),
    ),
    # a run's duration is held to a year: 1e300 ran until stopped, as if none were given
    Case(
        "run-duration-huge",
        ("run", "--duration", "1e300"),
        (
            "--duration",
            "to 3.1536e+07 (a year; without --duration a run goes on until stopped), not '1e300'",
        ),
    ),
    Case("time-scale-zero", ("run", "--time-scale", "0"), ("--time-scale",)),
    Case("time-scale-huge", ("run", "--time-scale", "1e9"), ("--time-scale", "1000")),
    Case("rate-zero", ("run", "--rate", "0"), ("--rate",)),
    # Odin's RK4 step limit is 0.134 s (hild/model/stability.py): 2 Hz is a 0.5 s step
    Case(
        "rate-unstable",
        ("run", "{tmp}/b.toml", "--rate", "2", "--duration", "1"),
        ("command line: --rate = 2.0", "a rate of at least 7.44 Hz", "for odin with rk4"),
        {"b.toml": b'[bench]\nname = "b"\n[vessel]\nprofile = "odin"\n'},
    ),
    Case("run-seed-text", ("run", "--seed", "x"), ("--seed",)),
    Case("stats-interval-tiny", ("run", "--stats-interval", "1e-9"), ("--stats-interval",)),
    Case("start-time-text", ("run", "--start-time", "noon"), ("--start-time", "2026-06-01")),
    Case(
        "start-time-far",
        ("run", "--start-time", "9999-01-01T00:00:00Z"),
        ("--start-time", "2199-12-31"),
    ),
    Case("run-dir-empty-option", ("run", "--run-dir", ""), ("--run-dir", "a directory")),
    Case(
        "run-dir-a-file",
        ("run", "{tmp}/b.toml", "--run-dir", "{tmp}/b.toml"),
        ("run directory {tmp}/b.toml is not a directory", "--run-dir DIR"),
        {"b.toml": PTY_BENCH},
    ),
    Case(
        "run-dir-under-proc",
        ("run", "{tmp}/b.toml", "--run-dir", "/proc/hild"),
        ("run directory /proc/hild cannot be created", "--run-dir DIR"),
        {"b.toml": PTY_BENCH},
    ),
    Case(
        "record-unknown-placeholder",
        ("run", "--record", "runs/{date}.mcap"),
        ("--record", "{date} is no placeholder here ({bench}, {utc} are)"),
    ),
    Case(
        "record-a-folder-option", ("run", "--record", "{tmp}"), ("--record", "not a folder")
    ),  # said before the ports open, not after
    # hild sim --record fills {profile} and {utc} (a sim has no bench), checked as run's is
    Case(
        "sim-record-unknown-placeholder",
        (*SIM, "--record", "{tmp}/runs/{bench}-{utc}.mcap"),
        ("--record", "{bench} is no placeholder here ({profile}, {utc} are)"),
    ),
    Case("sim-record-a-folder", (*SIM, "--record", "{tmp}"), ("--record", "not a folder")),
    Case(
        "sim-record-template-leaves-its-folder",
        (*SIM, "--record", "{tmp}/{profile}/../../x.mcap"),
        ("--record", "'{tmp}/profile/../../x.mcap', which is not in {tmp}/"),
    ),
    Case(
        "sim-record-profile-no-name",
        ("sim", "{tmp}/boat.toml", "--duration", "1", "--record", "{tmp}/{profile}.mcap"),
        (
            "--record {tmp}/{profile}.mcap: expected a file that can be "
            "written ({profile} = 'my boat' is not a name of 1 to 64",
        ),
        {"boat.toml": edit(OTTER, 'name = "otter"', 'name = "my boat"').encode()},
    ),
    Case(
        "record-unwritable",
        ("run", "{tmp}/b.toml", "--record", "/proc/no/r.mcap"),
        ("--record /proc/no/r.mcap: expected a file that can be written",),
        {"b.toml": MINIMAL_BENCH},
    ),
    Case("replay-speed-zero", ("replay", "x.mcap", "--speed", "0"), ("--speed",)),
    Case(
        "plot-out-a-file",
        ("plot", "x.mcap", "--out", "{tmp}/f.txt"),
        ("--out: expected a folder for the plots", "a file is there"),
        {"f.txt": b""},
    ),
    Case(
        "replay-end-before-start",
        ("replay", "x.mcap", "--start", "2", "--end", "1"),
        ("--end = 1.0: expected a time after --start (2 s)",),
    ),
    Case("plot-waypoints", ("plot", "x.mcap", "--waypoints", "north"), ("--waypoints",)),
    Case(
        "inspect-no-such-file",
        ("inspect", "/no/such/run.mcap"),
        ("/no/such/run.mcap", "no such file"),
    ),
]

# an option's value is blamed on the option, not on a key of the bench file
OPTIONS = [replace(c, absent=("bench.",)) for c in OPTIONS]

GPS_PORTS = 'ports = ["pty://gps", "udp://127.0.0.1:10110"]'


def gps_table(extra: str) -> tuple[str, str]:
    """A change that adds tables to the gps device (after its last key)."""
    return (GPS_PORTS, GPS_PORTS + "\n" + extra)


def line_of(text: str, line: str, after: int = 0) -> int:
    """The number of ``text``'s line that is ``line`` (its first after line ``after``)."""
    return text.splitlines().index(line, after) + 1


# A key or table given twice: tomllib says "Cannot overwrite a value (at line 11, column 9)",
# naming neither; the message names the key, its table and the line that gives it again.
SEED_LINE = line_of(DEFAULT, "seed = 0")
WEATHER_LINE = line_of(DEFAULT, "[weather]")
PORTS_LINE = line_of(DEFAULT, GPS_PORTS)
MASS_LINE = line_of(OTTER, "mass = 80.0")
GIVEN_TWICE = [
    Case(
        "bench-key-twice",
        ("check", "{tmp}/b.toml"),
        (
            "{tmp}/b.toml: expected valid TOML (key 'seed' is given twice in [bench], at line "
            f"{SEED_LINE + 1})",
        ),
        {"b.toml": bench_with("seed = 0", "seed = 0\nseed = 1")},
    ),
    Case(
        "bench-table-twice",
        ("run", "{tmp}/b.toml"),
        (
            f"{{tmp}}/b.toml: expected valid TOML (table [weather] is given twice, at line "
            f"{WEATHER_LINE + 1})",
        ),
        {"b.toml": bench_with("[weather]", "[weather]\n[weather]")},
    ),
    # a multi-line value: tomllib places it at its end, the message at its key
    Case(
        "bench-multi-line-key-twice",
        ("check", "{tmp}/b.toml"),
        (f"key 'ports' is given twice in [[device]], at line {PORTS_LINE + 1}",),
        {"b.toml": bench_with(GPS_PORTS, GPS_PORTS + '\nports = [\n  "pty://gps2",\n]')},
    ),
    Case(
        "profile-key-twice",
        ("sim", "{tmp}/boat.toml", "--duration", "1"),
        ("{tmp}/boat.toml", f"key 'mass' is given twice in [rigid_body], at line {MASS_LINE + 1}"),
        {"boat.toml": edit(OTTER, "mass = 80.0", "mass = 80.0\nmass = 81.0").encode()},
    ),
    Case(
        "weather-key-over-a-value",
        (*("sim", "odin", "--duration", "1"), "--weather", "{tmp}/w.toml"),
        (
            "{tmp}/w.toml",
            "key 'speed.x' in [wind] is given, but 'speed' already has a value, at line 3",
        ),
        {"w.toml": b"[wind]\nspeed = 3\nspeed.x = 1\n"},
    ),
]

BENCH_VALUES = [
    (
        "rate-unstable",
        ("rate_hz = 100", "rate_hz = 2"),
        "bench.rate_hz = 2",
        "a rate of at least 7.44 Hz",
    ),
    ("run-dir-empty", ('run_dir = "/tmp/hild"', 'run_dir = ""'), "bench.run_dir", "a directory"),
    (
        "stats-interval",
        ("seed = 0", "seed = 0\nstats_interval = 1e-9"),
        "bench.stats_interval",
        "at least 0.01",
    ),
    (
        "start-time",
        ('start_time = "wall"', 'start_time = "9999-12-31T23:59:59Z"'),
        "bench.start_time",
        "2199-12-31",
    ),
    (
        "start-time-toml",
        ('start_time = "wall"', "start_time = 1970-01-01T00:00:00Z"),
        "bench.start_time = 1970-01-01T00:00:00+00:00: expected",
        "1980-01-06",
    ),  # not its repr
    (
        "held-rpm",
        ("heading_deg = 0.0", 'heading_deg = 0.0\ncommands = { "port.rpm" = 99999 }'),
        "vessel.commands.port.rpm",
        "from 400 to 2000 rpm",
    ),
    (
        "held-nozzle",
        ("heading_deg = 0.0", 'heading_deg = 0.0\ncommands = { "port.nozzle_deg" = 45 }'),
        "vessel.commands.port.nozzle_deg",
        "from -27 to 27 deg",
    ),
    (
        "baud",
        ('type = "gps"', 'type = "gps"\nbaud = 1000000000000'),
        "device (gps).baud",
        "300 to 4000000",
    ),
    (
        "rate-tiny",
        ('type = "gps"', 'type = "gps"\nrate_hz = 1e-300'),
        "device (gps).rate_hz",
        "at least 0.01",
    ),
    # a device faster than the loop (two edits, so the whole template is the text replaced; a
    # baud whose byte budget carries 30 epochs a second, so that this is the only error)
    (
        "rate-above-loop",
        (
            DEFAULT,
            edited(
                DEFAULT,
                [
                    ("rate_hz = 100", "rate_hz = 20"),
                    ('type = "gps"', 'type = "gps"\nrate_hz = 30\nbaud = 115200'),
                ],
            ),
        ),
        "device (gps).rate_hz = 30",
        "at most the loop rate, bench.rate_hz = 20 Hz",
    ),
    (
        "lever-arm",
        ('type = "gps"', 'type = "gps"\nposition = [1e7, 0, 0]'),
        "device (gps).position",
        "within 10.5 m",
    ),
    (
        "fault-value",
        gps_table(
            '[[device.fault]]\nkind = "bias_jump"\nstart = 5.0\nquantity = "heading"\nvalue = 1e15'
        ),
        "device (gps).fault[0].value",
        "at most 10000",
    ),
    (
        "noise",
        gps_table("[device.noise.position]\nwhite = 1e300"),
        "device (gps).noise.position.white",
        "at most 10000",
    ),
    (
        "decimals",
        gps_table("[device.settings]\nposition_decimals = 100000"),
        "device (gps).settings.position_decimals",
        "from 0 to 6",
    ),
    (
        "decimals-huge",
        gps_table("[device.settings]\nposition_decimals = 1000000000000"),
        "device (gps).settings.position_decimals",
        "from 0 to 6",
    ),
    (
        "fix-quality",
        gps_table("[device.settings]\nfix_quality = 42"),
        "device (gps).settings.fix_quality",
        "0 to 8",
    ),
    (
        "udp-no-port",
        (
            '"udp://127.0.0.1:10110"]\n\n[[device]]\nname = "wind"',
            '"udp://127.0.0.1"]\n\n[[device]]\nname = "wind"',
        ),
        "device (gps).ports[1] = 'udp://127.0.0.1'",
        "the port number is missing",
    ),
    (
        "typo",
        ("heading_deg = 0.0", "heading_dge = 0.0"),
        "vessel.heading_dge",
        "did you mean 'heading_deg'",
    ),
    (
        "weather-typo",
        ('preset = "calm"', 'preset = "calm"\nwnd_speed = 3'),
        "weather.wnd_speed",
        "did you mean 'wind_speed'",
    ),
    (
        "record-no-file",
        ("[weather]", '[record]\nfile = ""\n[weather]'),
        "record.file",
        "a file name for the recording",
    ),
    (
        "record-rate",
        ("[weather]", '[record]\nfile = "r.mcap"\nrate_hz = 500\n[weather]'),
        "record.rate_hz",
        "at most 100",
    ),
    (
        "record-a-folder",
        ("[weather]", '[record]\nfile = "/tmp"\n[weather]'),
        "record.file = '/tmp'",
        "not a folder",
    ),  # (`hild run` could not open it)
]
BENCH_CASES = [
    Case(
        f"bench-{name}",
        ("check", "{tmp}/bench.toml"),
        ("{tmp}/bench.toml", key, says),
        {"bench.toml": bench_with(*change)},
    )
    for name, change, key, says in BENCH_VALUES
]

PROFILE_VALUES = [
    ("mass", [("mass = 80.0", "mass = -80.0")], ("rigid_body.mass = -80.0", "greater than 0")),
    # a hull's mass and inertia, against what any hull and this one's size can have
    (
        "mass-tiny",
        [("mass = 80.0", "mass = 1e-300")],
        ("rigid_body.mass = 1e-300", "a mass from 1 kg to 1e+09 kg"),
    ),
    (
        "mass-huge",
        [("mass = 80.0", "mass = 1e12")],
        ("rigid_body.mass = 1000000000000.0", "a mass from 1 kg to 1e+09 kg"),
    ),
    (
        "mass-over-displacement",
        [("mass = 80.0", "mass = 5000.0")],
        ("rigid_body.mass = 5000.0", "at most 1.5 x 432 kg", "2 x 1.08 x 0.19512 m hull"),
    ),
    (
        "inertia-huge",
        [("[0.0, 28.26826, 0.0]", "[0.0, 28268.26, 0.0]")],
        ("rigid_body.inertia", "2.827e+04", "principal moments from 0.032 to 320 kg m^2"),
    ),
    (
        "inertia-tiny",
        [("[0.0, 28.26826, 0.0]", "[0.0, 0.001, 0.0]")],
        ("rigid_body.inertia", "0.001", "radii of gyration from 0.01 to 1 hull lengths (2 m)"),
    ),
    ("length-typo", [("length = 2.0", "lenght = 2.0")], ("vessel.length", "the file has 'lenght'")),
    ("unknown-key", [("[water]", "[watter]")], ("watter", "did you mean 'water'")),
    (
        "every-problem",
        [("mass = 80.0", "mass = -80.0"), ("[water]", "[water]\ncolour = 1")],
        ("2 error(s)", "rigid_body.mass = -80.0", "water.colour"),
    ),
]
PROFILE_CASES = [
    Case(
        f"profile-{name}",
        ("sim", "{tmp}/boat.toml", "--duration", "1"),
        ("{tmp}/boat.toml", *says),
        {"boat.toml": edited(OTTER, changes).encode()},
    )
    for name, changes, says in PROFILE_VALUES
]

WEATHER_VALUES = [
    ("wind-negative", "[wind]\nspeed = -3\n", ("wind.speed = -3.0", "at least 0")),
    ("waves-no-period", "[waves]\nhs = 2\n", ("waves.omega_peak", "present")),
    ("unknown-table", "[curent]\nspeed = 1\n", ("curent", "did you mean 'current'")),
    (
        "every-problem",
        "[wind]\nspeed = -3\n[curent]\nspeed = 1\n[air]\ndensity = 9\n",
        ("3 error(s)", "wind.speed", "curent", "air.density = 9"),
    ),
]
WEATHER_CASES = [
    Case(
        f"weather-{name}",
        (*SIM, "--weather", "{tmp}/w.toml"),
        ("{tmp}/w.toml", *says),
        {"w.toml": text.encode()},
    )
    for name, text, says in WEATHER_VALUES
]

DEVICE_TYPE_CASES = [
    Case(
        "device-type-rate",
        ("check", "{tmp}/bench.toml"),
        ("{tmp}/types/bad.toml", "rate_hz = -1.0", "at least 0.01"),
        {
            "bench.toml": TYPED_BENCH,
            "types/bad.toml": edit(GPS_TYPE, "rate_hz = ", "rate_hz = -").encode(),
        },
    ),
    # a type file's own settings are held to what a bench's overrides are (choices, limits):
    # found by `hild check`, not by the device that would read them when the run starts
    Case(
        "device-type-setting-choice",
        ("check", "{tmp}/bench.toml"),
        ("{tmp}/types/bad.toml", "settings.cog_at_rest = 'bogus'", "one of 'empty', 'hold'"),
        {
            "bench.toml": TYPED_BENCH,
            "types/bad.toml": edit(
                GPS_TYPE, '\ncog_at_rest = "empty"', '\ncog_at_rest = "bogus"'
            ).encode(),
        },
    ),
    Case(
        "device-type-setting-limit",
        ("check", "{tmp}/bench.toml"),
        ("{tmp}/types/bad.toml", "settings.hdop = 120.0", "a value from 0 to 99.9"),
        {
            "bench.toml": TYPED_BENCH,
            "types/bad.toml": edit(GPS_TYPE, "hdop = 0.9", "hdop = 120.0").encode(),
        },
    ),
]

SCHEDULE_ROWS = [
    ("text-time", "x,port.rpm,5", ("line 3", "numbers for t and value")),
    ("negative-time", "-1,port.rpm,5", ("line 3", "t >= 0")),
    ("unknown-command", "1,port.rpmm,500", ("line 3", "no command 'rpmm'")),
    ("unknown-actuator", "1,prt.rpm,500", ("line 3", "no actuator 'prt'")),
    ("out-of-range", "1,port.rpm,99999", ("line 3", "from 400 to 2000 rpm")),
    ("two-columns", "1,port.rpm", ("line 3", "three columns")),
]
SCHEDULE_CASES = [
    Case(
        f"schedule-{name}",
        (*SIM, "--schedule", "{tmp}/s.csv"),
        ("{tmp}/s.csv", *says),
        {"s.csv": (SCHEDULE + row + "\n").encode()},
    )
    for name, row, says in SCHEDULE_ROWS
]

# found only when the run opens them: still the user's to change, so status 2 and named
RUN_CASES = [
    Case(
        "run-record-file-unwritable",
        ("run", "{tmp}/b.toml"),
        ("{tmp}/b.toml: record.file = '/proc/no/r.mcap'", "a file that can be written"),
        {"b.toml": MINIMAL_BENCH + b'[record]\nfile = "/proc/no/r.mcap"\n'},
    ),
    Case(
        "run-host-unresolvable",
        ("run", "{tmp}/b.toml"),
        ("device heading, port udp://no-such-host.invalid:10110",),
        {
            "b.toml": MINIMAL_BENCH + b'[[device]]\ntype = "heading"\n'
            b'port = "udp://no-such-host.invalid:10110"\n'
        },
        absent=("[Errno",),
    ),
]

# Files that are no regular file: a FIFO made with os.mkfifo that nobody writes to (reading it
# used to wait for a writer for ever: the case's timeout fails it), a character device.
FIFO = "not a FIFO (named pipe)"


def mqtt_bench(keys: str) -> bytes:
    return MINIMAL_BENCH + b'[mqtt]\nurl = "mqtts://127.0.0.1:8883"\n' + keys.encode() + b"\n"


NOT_REGULAR_CASES = [
    Case(
        "bench-fifo-check",
        ("check", "{tmp}/b.toml"),
        ("{tmp}/b.toml", f"a bench file, {FIFO}"),
        fifos=("b.toml",),
    ),
    Case(
        "bench-fifo-run",
        ("run", "{tmp}/b.toml"),
        ("{tmp}/b.toml", f"a bench file, {FIFO}"),
        fifos=("b.toml",),
    ),
    Case(
        "profile-fifo",
        ("sim", "{tmp}/p.toml", "--duration", "1"),
        ("{tmp}/p.toml", f"a profile file, {FIFO}"),
        fifos=("p.toml",),
    ),
    Case(
        "weather-fifo",
        (*SIM, "--weather", "{tmp}/w.toml"),
        ("{tmp}/w.toml", f"a weather file, {FIFO}"),
        fifos=("w.toml",),
    ),
    Case(
        "device-type-fifo",
        ("check", "{tmp}/bench.toml"),
        ("{tmp}/types/bad.toml", FIFO),
        {"bench.toml": TYPED_BENCH},
        fifos=("types/bad.toml",),
    ),
    Case(
        "schedule-fifo",
        (*SIM, "--schedule", "{tmp}/s.csv"),
        ("{tmp}/s.csv", f"a schedule file, {FIFO}"),
        fifos=("s.csv",),
    ),
    Case(
        "schedule-character-device",
        (*SIM, "--schedule", "/dev/zero"),
        ("/dev/zero", "a schedule file, not a character device"),
    ),
    Case(
        "inspect-fifo",
        ("inspect", "{tmp}/r.mcap"),
        ("{tmp}/r.mcap", f"a recording, {FIFO}"),
        fifos=("r.mcap",),
    ),
    Case(
        "plot-fifo",
        ("plot", "{tmp}/r.mcap", "--out", "{tmp}/plots"),
        ("{tmp}/r.mcap", f"a recording, {FIFO}"),
        fifos=("r.mcap",),
    ),
    Case(
        "replay-fifo",
        ("replay", "{tmp}/r.mcap", "--to", "udp://127.0.0.1:9"),
        ("{tmp}/r.mcap", f"a recording, {FIFO}"),
        fifos=("r.mcap",),
    ),
    Case(
        "ca-file-fifo",
        ("check", "{tmp}/b.toml"),
        ("mqtt.ca_file = 'ca.pem'", FIFO),
        {"b.toml": mqtt_bench('ca_file = "ca.pem"')},
        fifos=("ca.pem",),
    ),
    Case(
        "password-file-fifo",
        ("check", "{tmp}/b.toml"),
        ("mqtt.password_file = 'pw'", FIFO),
        {"b.toml": mqtt_bench('password_file = "pw"')},
        fifos=("pw",),
    ),
    # a CA file that holds no certificate ended the run with status 1 when the mirror started
    Case(
        "ca-file-no-certificate",
        ("check", "{tmp}/b.toml"),
        ("mqtt.ca_file = 'ca.pem'", "a file of PEM CA certificates"),
        {"b.toml": mqtt_bench('ca_file = "ca.pem"'), "ca.pem": b"not a certificate\n"},
    ),
    Case(
        "ca-file-no-certificate-run",
        ("run", "{tmp}/b.toml"),
        ("mqtt.ca_file = 'ca.pem'", "a file of PEM CA certificates"),
        {"b.toml": mqtt_bench('ca_file = "ca.pem"'), "ca.pem": b"not a certificate\n"},
    ),
    Case(
        "cert-file-no-certificate",
        ("check", "{tmp}/b.toml"),
        ("mqtt.cert_file", "a PEM certificate whose key is key_file"),
        {
            "b.toml": mqtt_bench('cert_file = "c.pem"\nkey_file = "k.pem"'),
            "c.pem": b"x\n",
            "k.pem": b"y\n",
        },
    ),
]

# Names go into paths (record.file's {bench}, pty links), topics and channels: identifiers only.
NAME = "a name of 1 to 64 letters, digits, '-', '_' and '.'"
PREFIX = "without the wildcards '+' and '#'"
NAME_VALUES = [
    ("name-path", ('name = "default"', 'name = "../../x"'), "bench.name = '../../x'", NAME),
    ("name-wildcard", ('name = "default"', 'name = "a/+"'), "bench.name = 'a/+'", NAME),
    ("name-empty", ('name = "default"', 'name = ""'), "bench.name = ''", NAME),
    ("name-dot-dot", ('name = "default"', 'name = ".."'), "bench.name = '..'", NAME),
    ("name-control", ('name = "default"', 'name = "a\\u0007b"'), "bench.name = 'a\\x07b'", NAME),
    ("name-too-long", ('name = "default"', f'name = "{"x" * 65}"'), "bench.name", NAME),
    ("device-name-empty", ('name = "gps"', 'name = ""'), "device[0].name = ''", NAME),
    ("device-name-path", ('name = "gps"', 'name = "a/b"'), "device[0].name = 'a/b'", NAME),
    (
        "mqtt-prefix-wildcard",
        ("[weather]", '[mqtt]\nprefix = "x/#"\n[weather]'),
        "mqtt.prefix = 'x/#'",
        PREFIX,
    ),
    (
        "mqtt-prefix-plus",
        ("[weather]", '[mqtt]\nprefix = "hild/+/odin"\n[weather]'),
        "mqtt.prefix",
        PREFIX,
    ),
    (
        "mqtt-prefix-empty-level",
        ("[weather]", '[mqtt]\nprefix = "hild//odin"\n[weather]'),
        "mqtt.prefix = 'hild//odin'",
        "empty levels",
    ),
    (
        "mqtt-prefix-nul",
        ("[weather]", '[mqtt]\nprefix = "a\\u0000b"\n[weather]'),
        "mqtt.prefix",
        "control characters",
    ),
    (
        "mqtt-prefix-dollar",
        ("[weather]", '[mqtt]\nprefix = "$SYS/hild"\n[weather]'),
        "mqtt.prefix",
        "not beginning with '$'",
    ),
    (
        "signalk-prefix-wildcard",
        ("[weather]", '[mqtt]\nsignalk_prefix = "vessels/+"\n[weather]'),
        "mqtt.signalk_prefix",
        PREFIX,
    ),
    (
        "time-scale-tiny",
        ("seed = 0", "seed = 0\ntime_scale = 1e-9"),
        "bench.time_scale = 1e-09",
        "a time scale from 0.01 to 1000",
    ),
]
NAME_CASES = [
    Case(
        f"bench-{name}-{command}",
        (command, "{tmp}/bench.toml"),
        ("{tmp}/bench.toml", key, says),
        {"bench.toml": bench_with(*change)},
    )
    for name, change, key, says in NAME_VALUES
    for command in ("check", "run")
]
NAME_CASES += [
    Case(
        "bench-name-from-file-name",
        ("check", "{tmp}/my bench.toml"),
        ("bench.name = 'my bench'", NAME, "taken from the file's name"),
        {"my bench.toml": MINIMAL_BENCH.replace(b'name = "b"\n', b"")},
    ),
    Case(
        "mqtt-prefix-option",
        ("run", "--mqtt", "mqtt://127.0.0.1:1", "--mqtt-prefix", "x/#"),
        ("--mqtt-prefix", PREFIX, "'x/#'"),
    ),
    Case(
        "mqtt-prefix-option-empty-level",
        ("run", "--mqtt", "mqtt://127.0.0.1:1", "--mqtt-prefix", "a//b"),
        ("--mqtt-prefix", "empty levels"),
    ),
    Case(
        "time-scale-tiny-option",
        ("run", "--time-scale", "1e-9"),
        ("--time-scale", "a time scale from 0.01 to 1000", "'1e-9'"),
    ),
    # a template whose own '..' follows {bench} would take the recording out of its folder
    Case(
        "record-template-leaves-its-folder",
        ("run", "{tmp}/b.toml"),
        ("record.file = '{bench}/../../x.mcap'", "which is not in"),
        {"b.toml": MINIMAL_BENCH + b'[record]\nfile = "{bench}/../../x.mcap"\n'},
    ),
    Case(
        "record-template-leaves-its-folder-check",
        ("check", "{tmp}/b.toml"),
        ("record.file = '{bench}/../../x.mcap'", "which is not in"),
        {"b.toml": MINIMAL_BENCH + b'[record]\nfile = "{bench}/../../x.mcap"\n'},
    ),
]

# A scenario (and sweep) on the default bench: a controller that cannot be loaded or started,
# and options of `hild scenario run` and `hild sweep`, refused before any run (a run would
# outlast the case's timeout only if it were started: these stop at once).
SCENARIO = """\
[scenario]
name = "sc"
bench = "default"
duration_s = 60
[mission]
speed = 5.0
acceptance_m = 15
waypoints = [{ north = 100, east = 0 }, { north = 100, east = 100 }]
[controller]
pilot = true
[criteria]
all_waypoints = true
xte_max_m = 25
[sweep]
seeds = 2
"""


def scenario_with(controller: str) -> dict[str, bytes]:
    return {"sc.toml": SCENARIO.replace("pilot = true", controller).encode()}


SC = "{tmp}/sc.toml"
PILOT = scenario_with("pilot = true")
RUN_SC = ("scenario", "run", SC)
SWEEP_SC = ("sweep", SC, "--out", "{tmp}/t.parquet", "--no-progress")
FACTORY = (
    '"package.module:factory": a module on Python\'s path (PYTHONPATH) and a callable in '
    "it that makes the controller"
)
LOAD_FAILURES = [
    ("no-module", "nosuchmod:factory", "No module named 'nosuchmod'"),
    ("no-name", "json:nosuch", "'json' has no 'nosuch'"),
    ("not-callable", "json:__version__", "json:__version__ is a str, not a callable"),
]
STARTS = "a program that can be started as its first item"
MAX_WORKERS = 4 * (os.cpu_count() or 1)
ONE_WORKER_TOO_MANY = str(MAX_WORKERS + 1)  # (were it taken, the sweep would run: no hang)
SCENARIO_CASES = (
    [
        Case(
            f"scenario-python-{name}-{command}",
            argv,
            (f"{SC}: controller.python = '{target}'", FACTORY, problem),
            scenario_with(f'python = "{target}"'),
        )
        for name, target, problem in LOAD_FAILURES
        for command, argv in (("run", RUN_SC), ("check", ("check", SC)), ("sweep", SWEEP_SC))
    ]
    + [
        Case(
            f"scenario-command-{name}-{command}",
            argv,
            (f"{SC}: controller.command = ['{program}']", STARTS, problem),
            scenario_with(f'command = ["{program}"]'),
        )
        for name, program, problem in (
            ("no-file", "/nonexistent/prog", "no file '/nonexistent/prog'"),
            ("not-on-path", "hild-no-such-program", "no program 'hild-no-such-program' on $PATH"),
            ("a-folder", "/tmp", "'/tmp' is a folder"),
            ("not-executable", "/etc/passwd", "'/etc/passwd' is not executable"),
        )
        for command, argv in (("run", RUN_SC), ("check", ("check", SC)))
    ]
    + [
        Case(
            "sweep-command-controller",
            SWEEP_SC,
            (f"{SC}: controller.command = ['true']", "a controller that runs in lockstep"),
            scenario_with('command = ["true"]'),
        ),
        Case(
            "scenario-report-suffix",
            (*RUN_SC, "--report", "{tmp}/rep.txt"),
            ("--report", "'{tmp}/rep.txt'", "(.png, .pdf, .svg, .svgz"),
            PILOT,
        ),
        Case(
            "scenario-report-no-suffix",
            (*RUN_SC, "--report", "{tmp}/noext"),
            ("--report", "'{tmp}/noext'", "(.png, .pdf, .svg, .svgz"),
            PILOT,
        ),
        Case(
            "scenario-report-folder",
            (*RUN_SC, "--report", "{tmp}"),
            ("--report", "not the folder '{tmp}'"),
            PILOT,
        ),
        Case(
            "scenario-report-under-a-file",
            (*RUN_SC, "--report", "{tmp}/sc.toml/r.png"),
            ("--report", "'{tmp}/sc.toml' is a file"),
            PILOT,
        ),
        Case(
            "scenario-junit-folder",
            (*RUN_SC, "--junit", "{tmp}"),
            ("--junit", "not the folder '{tmp}'"),
            PILOT,
        ),
        # a report that cannot be written: said before the run, not after it (the run lost)
        Case(
            "scenario-junit-unwritable",
            (*RUN_SC, "--junit", "/proc/j.xml"),
            ("--junit /proc/j.xml: expected a file that can be written",),
            PILOT,
        ),
        Case(
            "scenario-report-unwritable",
            (*RUN_SC, "--report", "/proc/no/r.png"),
            ("--report /proc/no/r.png: expected a file that can be written",),
            PILOT,
        ),
        Case(
            "sweep-junit-folder",
            (*SWEEP_SC, "--junit", "{tmp}"),
            ("--junit", "not the folder '{tmp}'"),
            PILOT,
        ),
        # the table's folder cannot be written: said of --out before the first run, not of the
        # internal parts folder once its batch is done
        Case(
            "sweep-out-unwritable",
            ("sweep", SC, "--out", "/proc/t.parquet", "--no-progress"),
            (
                "--out /proc/t.parquet: expected a file that can be written (its folder '/proc' "
                "cannot be written",
            ),
            PILOT,
            absent=(".parts",),
        ),
        Case(
            "sweep-out-folder-not-made",
            ("sweep", SC, "--out", "/proc/no/t.parquet", "--no-progress"),
            (
                "--out /proc/no/t.parquet: expected a file that can be written "
                "(its folder '/proc/no' cannot be made in '/proc'",
            ),
            PILOT,
            absent=(".parts",),
        ),
        Case(
            "sweep-out-a-folder",
            ("sweep", SC, "--out", "{tmp}", "--no-progress"),
            ("--out", "not the folder '{tmp}'"),
            PILOT,
        ),
        Case(
            "sweep-junit-unwritable",
            (*SWEEP_SC, "--junit", "/proc/j.xml"),
            ("--junit /proc/j.xml: expected a file that can be written",),
            PILOT,
        ),
        Case(
            "sweep-plots-unwritable",
            (*SWEEP_SC, "--plots", "/proc/plots"),
            (
                "--plots /proc/plots: expected a folder that can be written (it cannot be made in "
                "'/proc'",
            ),
            PILOT,
        ),
        Case(
            "sweep-scheduler-no-port",
            (*SWEEP_SC, "--scheduler", "notaurl"),
            ("--scheduler = 'notaurl'", "tcp://HOST:PORT"),
            PILOT,
        ),
        Case(
            "sweep-scheduler-scheme",
            (*SWEEP_SC, "--scheduler", "http://lab-1:8786"),
            ("--scheduler = 'http://lab-1:8786'", "tcp://HOST:PORT"),
            PILOT,
        ),
        Case(
            "sweep-workers-too-many",
            (*SWEEP_SC, "--workers", ONE_WORKER_TOO_MANY, "--runs", "1"),
            (
                "--workers",
                f"from 1 to {MAX_WORKERS} (at most 4 per core",
                f"'{ONE_WORKER_TOO_MANY}'",
            ),
            PILOT,
        ),
    ]
)
SCENARIO_CASES = [replace(c, absent=("internal error",)) for c in SCENARIO_CASES]

CASES = [
    *unreadable_cases(),
    *GIVEN_TWICE,
    *MISSING,
    *OPTIONS,
    *RUN_CASES,
    *BENCH_CASES,
    *PROFILE_CASES,
    *WEATHER_CASES,
    *DEVICE_TYPE_CASES,
    *SCHEDULE_CASES,
    *NOT_REGULAR_CASES,
    *NAME_CASES,
    *SCENARIO_CASES,
]


def test_the_table_covers_at_least_sixty_malformed_inputs():
    assert len(CASES) >= 60 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_malformed_input_is_named_and_refused_with_status_2(tmp_path, case):
    for name, content in case.files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        if b"127.0.0.1:1011" in content:  # (a case's run must not meet a user's hild first)
            content = on_free_ports(content.decode()).encode()
        (tmp_path / name).write_bytes(content)
    for name in case.fifos:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(tmp_path / name)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in case.argv]
    env = {**os.environ, "HILD_DEVICE_PATH": str(tmp_path / "types")}
    if case.argv[0] == "run" and "--run-dir" not in case.argv:
        argv += ["--run-dir", str(tmp_path / "run")]
    p = run_hild(*argv, env=env, timeout=60)  # (a hang fails the case)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr + p.stdout, p.stderr
    for text in case.says:
        assert text.replace("{tmp}", str(tmp_path)) in p.stderr, p.stderr
    for text in case.absent:
        assert text not in p.stderr, p.stderr


def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + DEFAULT.encode())
    p = run_hild("check", str(path))
    assert p.returncode == 0 and "OK" in p.stdout, p.stderr


def test_debug_shows_the_traceback_that_is_otherwise_hidden():
    quiet = run_hild("check", "/no/such/bench.toml")
    loud = run_hild("check", "/no/such/bench.toml", "--debug")
    assert quiet.returncode == 2 and "Traceback" not in quiet.stderr
    assert loud.returncode == 2 and "Traceback" in loud.stderr and "ConfigError" in loud.stderr


def test_check_warns_of_a_port_in_use_and_run_refuses_it_as_a_configuration_error(tmp_path):
    import socket

    held = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    held.bind(("127.0.0.1", 0))
    port = held.getsockname()[1]
    free = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    free.bind(("127.0.0.1", 0))
    out_port = free.getsockname()[1]
    free.close()
    text = DEFAULT.replace("10112", str(port)).replace("10110", str(out_port))
    path = tmp_path / "held.toml"
    path.write_text(text)

    def hild(*args):
        return run_hild(*args)

    try:
        check = hild("check", str(path))
        run = hild("run", str(path), "--run-dir", str(tmp_path / "run"))
    finally:
        held.close()
    assert check.returncode == 0, check.stderr  # a warning: the port may be free at run time
    assert f"warning: udp://127.0.0.1:{port}?listen=1 (device jets): cannot bind" in check.stdout
    assert run.returncode == 2 and f"127.0.0.1:{port}" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_names_and_prefixes_at_the_rule_s_limits_are_accepted(tmp_path):
    """The name rule refuses only what it must: 64 characters, dots, dashes and underscores
    pass, and so does a topic prefix with its slashes around it (dropped)."""
    longest = "n" * 64
    mqtt = '[mqtt]\nprefix = "/lab/hild.odin-2/"\n[weather]'
    changes = [
        ('name = "default"', f'name = "{longest}"'),
        ('name = "gps"', 'name = "gps.v2_1-a"'),
        ("[weather]", mqtt),
    ]
    text = edited(DEFAULT, changes)
    path = tmp_path / "limits.toml"
    path.write_text(text)
    p = run_hild("check", str(path))
    assert p.returncode == 0 and "OK" in p.stdout, p.stderr
    path.write_text(text.replace(longest, longest + "n"))
    p = run_hild("check", str(path))
    assert p.returncode == 2 and f"bench.name = '{longest}n'" in p.stderr, p.stderr


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[g]\nr = 1\nr = 2", "key 'r' is given twice in [g], at line 3"),  # no newline at its end
        ('d = """\nx = 1\n"""\nd = """\nx = 2\n"""\n', "key 'd' is given twice, at line 4"),
        (
            "m = [\n  [1, 0],\n  [0, 1]]\nm = [\n  [1, 0],\n  [0, 1]]\n",
            "key 'm' is given twice, at line 4",
        ),  # its last line begins with '[': no table header
        ('["a=b"]\n"k=v" = 1\n"k=v" = 2\n', 'key \'"k=v"\' is given twice in ["a=b"], at line 3'),
        (
            "[[d]]\nn = 1\n[d.noise]\nw = 1\nw = 2\n",
            "key 'w' is given twice in [d.noise], at line 5",
        ),
        ("[a]\nb.c = 1\nb.c = 2\n", "key 'b.c' is given twice in [a], at line 3"),
        ("x = [1]\n[x]\n", "table [x] is given, but 'x' already has a value, at line 2"),
        ("x = 1\n[[x]]\n", "table [[x]] is given, but 'x' already has a value, at line 2"),
        ("x = 1\n[x.y]\n", "table [x.y] is given, but 'x' already has a value, at line 2"),
    ],
)
def test_a_key_or_table_given_twice_is_named_wherever_tomllib_places_the_error(text, says):
    import tomllib

    from hild.toml_twice import given_twice

    with pytest.raises(tomllib.TOMLDecodeError) as caught:
        tomllib.loads(text)
    assert given_twice(text, caught.value) == says


def test_a_long_string_of_toml_lines_keeps_tomllibs_message():
    """Each line the search for the statement tries is parsed up to tomllib's place: a
    multi-line string of 9,000 lines that read as TOML hung `hild check` for minutes. Past its
    budget the search gives up, and tomllib's own message (line and column) is kept."""
    import tomllib

    from hild.toml_twice import given_twice

    text = "a = 1\na = '''\n" + "".join(f"x{i} = {i}\n" for i in range(9000)) + "'''\n"
    with pytest.raises(tomllib.TOMLDecodeError) as caught:
        tomllib.loads(text)
    assert given_twice(text, caught.value) is None
    short = "a = 1\na = '''\n" + "".join(f"x{i} = {i}\n" for i in range(50)) + "'''\n"
    with pytest.raises(tomllib.TOMLDecodeError) as caught:
        tomllib.loads(short)
    assert given_twice(short, caught.value) == "key 'a' is given twice, at line 2"
