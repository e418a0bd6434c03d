"""Bench files and `hild check`: what is accepted, and errors a newcomer understands."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hild.bench import BenchError, load_bench, parse_start_time
from tests.forked_cli import run_hild

REPO = Path(__file__).resolve().parents[1]

GOOD = """
[bench]
rate_hz = 50
start_time = "2026-06-01T12:00:00Z"

[vessel]
profile = "odin"

[[device]]
name = "gps"
type = "gps"
port = "pty://gps"
"""


def write(tmp_path, text, name="bench.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def hild(*args):
    return run_hild(*args, timeout=120)


def test_built_in_benches_are_valid():
    for name in ("default", "example", "frontseat"):
        bench = load_bench(name)
        assert bench.devices and all(b.load <= 1.0 for b in bench.budgets)
    default = load_bench()
    assert default.vessel.name.lower().startswith("odin")
    assert {d.name for d in default.devices} == {"gps", "wind", "speed", "jets"}
    sensors = [d for d in default.devices if d.name != "jets"]
    assert all("udp://127.0.0.1:10110" in d.ports for d in sensors)
    jets = next(d for d in default.devices if d.name == "jets")
    assert jets.type == "jet-controller"
    assert jets.ports == ("pty://jets", "udp://127.0.0.1:10112?listen=1")
    frontseat = load_bench("frontseat")
    assert frontseat.vessel.name == "otter"
    assert any(d.ports == ("tcp://127.0.0.1:29500",) for d in frontseat.devices)
    assert default.origin.latitude_deg == 59.41 and default.origin.longitude_deg == 10.48


def test_device_overrides_merge_with_the_type(tmp_path):
    bench = load_bench(
        write(
            tmp_path,
            GOOD + 'rate_hz = 2\nbaud = 9600\ntalker = "GN"\n'
            "[device.noise.position]\nwhite = 1.5\n",
        )
    )
    gps = bench.devices[0]
    assert gps.rate_hz == 2 and gps.talker == "GN" and gps.baud == 9600
    assert gps.sentences == ("GGA", "RMC", "VTG", "ZDA", "HDT")
    assert gps.noise["position"].white == 1.5
    assert bench.start_time.isoformat() == "2026-06-01T12:00:00+00:00"


def test_check_accepts_the_example_and_reports_budgets():
    result = hild("check", "example")
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout and "bytes/s" in result.stdout


def test_check_refuses_an_over_budget_4800_baud_line(tmp_path):
    # 10 Hz GGA+RMC+VTG+HDT is about 2,700 bytes/s; 4800 baud carries 480.
    path = write(tmp_path, GOOD + 'rate_hz = 10\nsentences = ["GGA", "RMC", "VTG", "HDT"]\n')
    result = hild("check", str(path))
    assert result.returncode == 2
    err = result.stderr
    assert str(path) in err and "pty://gps" in err
    assert "4800 baud" in err and "480 bytes/s" in err and "over budget by" in err
    sent = int(err.split("= '")[1].split(" bytes/s")[0])
    assert 2000 < sent < 3500
    assert f"over budget by {sent - 480} bytes/s" in err
    assert "raise the baud rate to 38400" in err


def test_check_refuses_a_typo_in_a_key(tmp_path):
    path = write(tmp_path, GOOD + "rate_hx = 5\n")
    result = hild("check", str(path))
    assert result.returncode == 2
    assert "device (gps).rate_hx" in result.stderr and "did you mean 'rate_hz'" in result.stderr
    assert str(path) in result.stderr


def test_all_errors_at_once(tmp_path):
    text = GOOD.replace('"odin"', '"odn"').replace("rate_hz = 50", "rate_hz = -3")
    text += 'port = "ptty://gps"\n'
    path = write(tmp_path, text.replace('port = "pty://gps"\n', "", 1))
    with pytest.raises(BenchError) as info:
        load_bench(path)
    messages = [str(e) for e in info.value.errors]
    assert any("vessel.profile = 'odn'" in m and "jolner" in m for m in messages)
    assert any("bench.rate_hz = -3" in m for m in messages)
    assert any("ptty://gps" in m for m in messages)


def test_unknown_command_lists_the_actuator_commands(tmp_path):
    path = write(
        tmp_path,
        GOOD.replace('profile = "odin"', 'profile = "odin"\n[vessel.commands]\n"port.rudder" = 3'),
    )
    with pytest.raises(BenchError) as info:
        load_bench(path)
    assert "vessel.commands.port.rudder = 3.0: expected one of port.rpm, port.nozzle_deg" in str(
        info.value
    )


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (
            'type = "gpss"',
            "device (two).type = 'gpss': expected a device type: ais, anemometer, "
            "ardupilot-sitl, front",
        ),
        ('type = "gps"\nsentences = ["GGA", "MWV"]', "'MWV' is not one of them"),
        ('type = "gps"\ntalker = "gps"', "two-letter NMEA talker ID"),
        ('type = "heading"\nrate_hz = 100', "(two).rate_hz = 100.0: expected at most the loop"),
        ('type = "gps"\n[device.noise.wind]\nwhite = 1', "a quantity of this device: position"),
        ('type = "gps"\n[[device.fault]]\nkind = "melt"\nstart = 1', "'dropout', 'freeze'"),
        # every key of a fault is known, a bias_jump's too (it listed end, kind, start)
        (
            'type = "gps"\n[[device.fault]]\nkind = "dropout"\nstart = 1\nduration = 5',
            "fault[0].duration = 5: expected a known key (end, kind, quantity, start, value)",
        ),
        (
            'type = "gps"\n[[device.fault]]\nkind = "freeze"\nstart = 1\nvalue = 1',
            "fault[0].value = 1: expected kind = 'bias_jump' with it (a freeze has no value)",
        ),
        (
            'type = "thruster-controller"',
            "(two).type = 'thruster-controller': expected a vessel "
            "with thrusters (port, starboard are waterjets); use a jet-controller",
        ),
        (
            'type = "jet-controller"\n[device.settings]\nprotocols = ["NMEA"]',
            "(two).settings.protocols = ['NMEA']: expected a list of protocols from: TRC, PRC",
        ),
        (
            'type = "jet-controller"\n[device.settings]\nnumbering = { 1 = "bow" }',
            "(two).settings.numbering.1 = 'bow': expected a number from 1",
        ),
        (
            'type = "jet-controller"\n[device.settings]\nwatchdog_s = "soon"',
            "settings.watchdog_s = 'soon': expected a number",
        ),
        (
            'type = "jet-controller"\n[device.settings]\nrelease = "on-reconnect"',
            "(two).settings.release = 'on-reconnect': expected one of neutral, next-command",
        ),
        (
            'type = "jet-controller"\n[device.settings]\nchecksum = "ignored"',
            "(two).settings.checksum = 'ignored': expected one of required, optional, unchecked",
        ),
    ],
)
def test_device_errors_name_the_key(tmp_path, extra, needle):
    path = write(
        tmp_path, GOOD + '\n[[device]]\nname = "two"\nport = "udp://127.0.0.1:9"\n' + extra + "\n"
    )
    with pytest.raises(BenchError) as info:
        load_bench(path)
    assert needle in str(info.value)


def test_weather_preset_with_moved_means(tmp_path):
    path = write(tmp_path, GOOD + '\n[weather]\npreset = "gale-hs1"\nwind_from_deg = 270.0\n')
    bench = load_bench(path)
    w = bench.weather
    assert w.preset == "gale-hs1" and w.wind.from_deg == 270.0 and w.wind.speed == 20.0
    assert w.waves.hs == 1.0 and w.wind.gust.model == "harris"


@pytest.mark.parametrize(
    "weather, needles",
    [
        ('preset = "gael"', ["weather.preset = 'gael'", "gale-hs1", "beaufort-12"]),
        ('preset = "calm"\nhs = 2.0', ["weather.hs = 2.0", "no wave spectrum"]),
        ('preset = "calm"\nwind_speed = -1', ["weather.wind_speed = -1", "at least 0"]),
        ('preset = "calm"\nwnd_speed = 3', ["weather.wnd_speed", "did you mean 'wind_speed'"]),
    ],
)
def test_weather_errors_name_key_value_and_choices(tmp_path, weather, needles):
    path = write(tmp_path, GOOD + "\n[weather]\n" + weather + "\n")
    with pytest.raises(BenchError) as info:
        load_bench(path)
    text = " ".join(str(e) for e in info.value.errors)
    assert str(path) in text
    for needle in needles:
        assert needle in text


def test_device_settings_override_the_types_defaults_each_by_its_type(tmp_path):
    path = write(
        tmp_path,
        GOOD
        + textwrap.dedent("""
        [device.settings]
        satellites = 7
        hdop = 2.5
        position_decimals = 4

        [[device]]
        name = "jets"
        type = "jet-controller"
        port = "udp://127.0.0.1:9?listen=1"
        [device.settings]
        protocols = ["TRC", "ROR"]
        numbering = { 1 = "port", 2 = "starboard" }
        neutral_first = true
        checksum = "optional"
        """),
    )
    gps, jets = load_bench(path).devices
    # overridden keys take the bench's values, the others keep the type's (devices/gps.toml)
    assert gps.settings["satellites"] == 7 and gps.settings["hdop"] == 2.5
    assert gps.settings["position_decimals"] == 4 and gps.settings["fix_quality"] == 1
    assert jets.settings["protocols"] == ["TRC", "ROR"]
    assert jets.settings["numbering"] == {"1": "port", "2": "starboard"}
    assert jets.settings["neutral_first"] is True and jets.settings["checksum"] == "optional"
    assert jets.settings["watchdog_s"] == 0.5  # from devices/jet-controller.toml
    # a value of another type than the default's is refused, naming the key
    bad = write(tmp_path, GOOD + "[device.settings]\nsatellites = 7.5\n", "bad.toml")
    with pytest.raises(BenchError) as info:
        load_bench(bad)
    assert "device (gps).settings.satellites = 7.5: expected an integer" in str(info.value)


def test_devices_sharing_a_serial_line_must_agree_on_its_baud(tmp_path):
    path = write(
        tmp_path,
        GOOD.replace('port = "pty://gps"', 'port = "pty://nav"\nbaud = 4800')
        + '\n[[device]]\nname = "hdg"\ntype = "heading"\nport = "pty://nav"\n'
        "baud = 38400\n",
    )
    with pytest.raises(BenchError) as info:
        load_bench(path)
    assert (
        "device.baud = [4800, 38400]: expected one baud rate for the devices sharing "
        "pty://nav" in str(info.value)
    )
    # the same line at one rate is accepted, and its budget counts both devices
    text = path.read_text().replace("baud = 4800", "baud = 38400")
    same = write(tmp_path, text, "ok.toml")
    (budget,) = [b for b in load_bench(same).budgets if b.url == "pty://nav"]
    assert budget.devices == ("gps", "hdg") and budget.baud == 38400


@pytest.mark.parametrize(
    ("given", "utc"),
    [
        ("2026-06-01T12:00:00+02:00", "2026-06-01T10:00:00+00:00"),  # CEST is two hours ahead
        ("2026-06-01T12:00:00-03:30", "2026-06-01T15:30:00+00:00"),
        ("2026-06-01T12:00:00Z", "2026-06-01T12:00:00+00:00"),
        ("2026-06-01T12:00:00", "2026-06-01T12:00:00+00:00"),  # no offset: taken as UTC
    ],
)
def test_a_start_time_with_an_offset_is_converted_to_utc(given, utc):
    assert parse_start_time(given).isoformat() == utc


SHARED_DEVICES = """
[[device]]
name = "jets"
type = "jet-controller"
ports = ["pty://jets", "pty://helm"]
[[device]]
name = "helm"
type = "jet-controller"
port = "pty://helm"
"""
SHARED = GOOD + SHARED_DEVICES


def test_two_command_devices_on_one_port_are_refused_unless_their_protocols_are_disjoint(
    tmp_path,
):
    # Both would decode every line of pty://helm: each TRC would move the jets twice over.
    path = write(tmp_path, SHARED)
    for command in ("check", "run"):
        where = ("--run-dir", str(tmp_path / "run")) if command == "run" else ()
        result = hild(command, str(path), *where)  # (not a user's /tmp/hild)
        assert result.returncode == 2, (command, result.stderr)
        assert (
            f"{path}: device (jets, helm) on pty://helm = ['TRC', 'PRC', 'ROR', 'PHLDC']: "
            "expected one command device per port, or protocols that do not overlap"
            in result.stderr
        ), result.stderr
        assert (
            "give each device its own port, or split the sentences between them with "
            "settings.protocols" in result.stderr
        )
    # only the overlap is named
    overlap = write(
        tmp_path, SHARED + '[device.settings]\nprotocols = ["PHLDC", "TRC"]\n', "o.toml"
    )
    with pytest.raises(BenchError) as info:
        load_bench(overlap)
    assert "device (jets, helm) on pty://helm = ['TRC', 'PHLDC']" in str(info.value)
    # the bench says which sentences each takes: accepted
    text = SHARED.replace(
        'ports = ["pty://jets", "pty://helm"]',
        'ports = ["pty://jets", "pty://helm"]\n[device.settings]\nprotocols = ["TRC", "PRC"]',
    )
    disjoint = write(tmp_path, text + '[device.settings]\nprotocols = ["PHLDC", "ROR"]\n', "d.toml")
    result = hild("check", str(disjoint))
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout
    # one device on several ports, and command devices each on their own port, share nothing
    apart = write(tmp_path, SHARED.replace('port = "pty://helm"', 'port = "pty://helm2"'), "a.toml")
    assert [d.name for d in load_bench(apart).devices] == ["gps", "jets", "helm"]


# The bench of issue 30: mistakes of every stage (names, values, a rule across keys), one run.
EIGHT = """
[bench]
name = "eight"
rate_hz = 100
[vessel]
profile = "odn"
heading_deg = 400
[origin]
latitude = 59.41
longitud = 10.48
[weather]
preset = "gale"
[[device]]
name = "gps"
type = "gps"
rate_hz = 20
baud = 4800
sentences = ["GGA", "RMC", "VTG", "ZDA", "GSV", "XYZ"]
port = "serial:///dev/ttyUSB0"
[[device]]
name = "hdg"
type = "heading"
port = "udp://127.0.0.1:99999"
talkr = "HE"
"""


def test_eight_mistakes_of_every_stage_are_eight_problems_in_one_run(tmp_path):
    path = write(tmp_path, EIGHT, "eight.toml")
    result = hild("check", str(path))
    assert result.returncode == 2
    header, *lines = result.stderr.splitlines()
    assert header == "hild: 8 error(s) in the bench:"
    expected = [  # in the order of their keys in the file
        "vessel.profile = 'odn': expected a profile file",
        "vessel.heading_deg = 400.0: expected a number in deg of at most 360",
        "origin.longitud = 10.48: expected a known key",
        "weather.preset = 'gale': expected a weather file",
        "device (gps).sentences = ['GGA', 'RMC', 'VTG', 'ZDA', 'GSV', 'XYZ']:",
        "device (gps) on serial:///dev/ttyUSB0 = ",
        "device (hdg).port = 'udp://127.0.0.1:99999'",
        "device (hdg).talkr = 'HE': expected a known key",
    ]
    assert len(lines) == len(expected)
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(f"  {path}: {start}"), (line, start)
    # the budget is reckoned from the sentences that are known, XYZ left out
    assert "[gps: 20 Hz x GGA, RMC, VTG, ZDA, GSV]" in lines[5] and "4800 baud" in lines[5]
    # the misspelt key is one problem, not also a missing longitude
    assert "origin.longitude" not in result.stderr


def test_problems_are_listed_in_the_order_of_their_keys_in_the_file(tmp_path):
    path = write(
        tmp_path,
        """
        [weather]
        wind_speed = -1
        preset = "gael"
        [vessel]
        heading_deg = 400
        profile = "odin"
        speed = 99
        [bench]
        rate_hz = -1
        """,
    )
    with pytest.raises(BenchError) as info:
        load_bench(path)
    assert [e.key for e in info.value.errors] == [
        "weather.wind_speed",
        "weather.preset",
        "vessel.heading_deg",
        "vessel.speed",
        "bench.rate_hz",
    ]


def test_a_misspelt_required_key_is_one_problem(tmp_path):
    path = write(tmp_path, GOOD.replace("profile =", "profil =") + "rate_hz = 500\n")
    with pytest.raises(BenchError) as info:
        load_bench(path)
    messages = [str(e) for e in info.value.errors]
    assert len(messages) == 2, messages
    assert "vessel.profile: expected this key to be present (the file has 'profil'" in messages[0]
    assert "device (gps).rate_hz = 500.0: expected a number in Hz of at most 100" in messages[1]


def test_a_rule_is_skipped_only_when_a_key_it_needs_is_wrong(tmp_path):
    # a wrong loop rate: the device's rate is not also judged against a stand-in; a wrong
    # device rate: the line's budget is not reckoned from the type's rate
    text = GOOD.replace("rate_hz = 50", "rate_hz = 0") + 'rate_hz = "fast"\nbaud = 4800\n'
    with pytest.raises(BenchError) as info:
        load_bench(write(tmp_path, text))
    assert [e.key for e in info.value.errors] == ["bench.rate_hz", "device (gps).rate_hz"]
    # with the rates right, the same device is over its line's budget and its other
    # problems (a talker, a fault) are listed with it
    text = GOOD + 'rate_hz = 10\nbaud = 4800\ntalker = "gps"\n[[device.fault]]\nkind = "melt"\n'
    with pytest.raises(BenchError) as info:
        load_bench(write(tmp_path, text))
    keys = [e.key for e in info.value.errors]
    assert keys == [
        "device (gps).talker",
        "device (gps).fault[0].kind",
        "device (gps).fault[0].start",
        "device (gps) on pty://gps",
    ]


def test_every_problem_of_a_device_type_file_a_bench_names(tmp_path, monkeypatch):
    types = tmp_path / "types"
    types.mkdir()
    gps = (REPO / "devices" / "gps.toml").read_text()
    bad = gps.replace("rate_hz = ", "rate_hz = -", 1).replace('talker = "GP"', 'talker = "gps"')
    assert "rate_hz = -" in bad and 'talker = "gps"' in bad
    (types / "bad.toml").write_text(bad)
    path = write(
        tmp_path,
        '[vessel]\nprofile = "odin"\n[[device]]\nname = "probe"\n'
        'type = "bad"\nport = "pty://probe"\nrate_hz = 500\n',
    )
    monkeypatch.setenv("HILD_DEVICE_PATH", str(types))
    result = hild("check", str(path))
    assert result.returncode == 2
    assert f"{types / 'bad.toml'}: device.rate_hz = -" in result.stderr
    assert f"{types / 'bad.toml'}: device.talker = 'gps'" in result.stderr
    # the bench's own key is still read, though the type it names is wrong
    assert "device (probe).rate_hz = 500.0" in result.stderr


def test_every_problem_of_a_profile_and_a_weather_file_a_bench_names(tmp_path):
    otter = (REPO / "profiles" / "otter.toml").read_text()
    boat = write(
        tmp_path,
        otter.replace("\nlength = ", "\nlength = -", 1).replace(
            "\nbeam = ", '\nbeam = "wide" #', 1
        ),
        "boat.toml",
    )
    storm = write(
        tmp_path, "[wind]\nspeed = -3\nfrom_deg = 999\n[current]\nspeed = 50\n", "storm.toml"
    )
    path = write(
        tmp_path,
        f'[vessel]\nprofile = "{boat}"\nheading_deg = 999\n[weather]\npreset = "{storm}"\n',
    )
    result = hild("check", str(path))
    assert result.returncode == 2
    keys = [line.split(": ")[1].split(" = ")[0] for line in result.stderr.splitlines()[1:]]
    assert keys == [
        "vessel.length",
        "vessel.beam",
        "vessel.heading_deg",
        "wind.speed",
        "wind.from_deg",
        "current.speed",
    ]


def test_every_problem_of_the_mqtt_and_record_tables_in_one_run(tmp_path):
    path = write(
        tmp_path,
        """
        [bench]
        name = "mq"
        [vessel]
        profile = "otter"
        [mqtt]
        keepalive_s = 1
        timeout_s = 100
        contrl = true
        signalk_prefix = "a/#"
        [mqtt.topics.state]
        qos = 5
        [mqtt.topics.nope]
        rate_hz = 1
        [record]
        file = "run.mcap"
        rate_hz = 0
        nmea_lg = false
        """,
    )
    done = hild("check", str(path))
    header, *lines = done.stderr.splitlines()
    assert done.returncode == 2 and header == "hild: 8 error(s) in the bench:", done.stderr
    # each once, in the file's order (a topic that is none is not also an unknown key)
    assert [line.split(" = ")[0].split(": ", 1)[1] for line in lines] == [
        "mqtt.keepalive_s",
        "mqtt.timeout_s",
        "mqtt.contrl",
        "mqtt.signalk_prefix",
        "mqtt.topics.state.qos",
        "mqtt.topics.nope",
        "record.rate_hz",
        "record.nmea_lg",
    ]


SLOW_ODIN = '[bench]\nname = "slow"\nrate_hz = 2\nseed = "x"\n[vessel]\nprofile = "odin"\n'
# a 2 Hz loop for Odin (a 0.5 s step, over RK4's 0.134 s limit) with a wrong seed beside it,
# loaded without compiling in a fresh process with an empty kernel cache
COLD_PROBE = """
import sys
from pathlib import Path
from hild.bench import BenchError, load_bench
try:
    load_bench(sys.argv[1], check_step=False)
    print("loaded")
except BenchError as e:
    print(repr(str(e)))
print(any(Path(sys.argv[2]).rglob("*.nbi")))
"""


def test_a_bench_checked_without_compiling_says_the_step_only_once_it_is_known(tmp_path):
    """``check_step=False`` (what `hild run` checks before its ports) compiles nothing: on a
    cold cache it names every other problem and leaves the loop's step against the vessel's
    step limit to ``load_bench``; once a run has worked the limit out, it names that too."""
    from hild.kernel_cache import PREFIX

    path = tmp_path / "slow.toml"
    path.write_text(SLOW_ODIN)
    cache = tmp_path / (PREFIX + "cold")
    probe = subprocess.run(
        [sys.executable, "-c", COLD_PROBE, str(path), str(cache)],
        env={**os.environ, "NUMBA_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr
    cold, compiled = probe.stdout.splitlines()
    assert "bench.seed = 'x'" in cold and "a rate of at least" not in cold, cold
    assert compiled == "False"
    for check_step in (True, False):  # (this process's cache: worked out, then known)
        with pytest.raises(BenchError) as refused:
            load_bench(str(path), check_step=check_step)
        assert "bench.seed = 'x'" in str(refused.value)
        assert "a rate of at least 7.44 Hz" in str(refused.value)
