"""The controller command bus: framing, protocols, mapping, watchdog, arbiter and feedback.

Every expected value is worked out by hand from the written specification (the protocol
modules' docstrings, devices/jet-controller.toml and devices/thruster-controller.toml,
shared/reference/protocols.md) and the profiles' actuator ranges, never computed with the
code under test. Actuator ranges used below:

- odin: two waterjets, 400 .. 2000 rpm (idle 400), nozzle -27 .. 27 deg, deflector -1 .. 1
- jolner: two fixed propellers, -3000 .. 3000 rpm
- otter: two fixed propellers, -971.514 .. 992.467 rpm
- wamv: two azimuth thrusters, normalized thrust -1 .. 1, azimuth -90 .. 90 deg

Wire number 1 is the starboard actuator and 2 the port one unless a numbering says otherwise.
"""

import math
import re
import threading
from collections import Counter
from datetime import UTC, datetime

import numpy as np
import pynmea2
import pytest
from conftest import vessel

import hild.nmea  # noqa: F401  (registers TRD, TRC, PRC, ROR with pynmea2)
from hild.bus.arbiter import Arbiter
from hild.bus.device import NEUTRAL_SENTENCES, SettingError
from hild.bus.dispatch import Dispatcher
from hild.bus.mapping import ActuatorMap, Demand
from hild.bus.protocols import PROTOCOLS
from hild.bus.sentence import REASONS, Rejected, parse_sentence
from hild.bus.watchdog import ACTIVE, TRIPPED, WAITING, Watchdog
from hild.control import ActuatorCommand, ControlQueue, HeadingReference, SafeState
from hild.devices.catalog import DEVICE_DIR, load_device_type
from hild.geodesy import Origin
from hild.mirror import payloads
from hild.model import layout as L
from hild.sensors.device import DeviceConfig
from hild.sensors.truth import Truth
from hild.transport import Inbound
from hild.transport.base import LineSplitter, PortStats

DEG = math.pi / 180.0
PORT_URL = "udp://127.0.0.1:10112"
PEER = ("127.0.0.1", 40000)
ODIN_IDLE, ODIN_MAX = 400.0, 2000.0
OTTER_REV, OTTER_FWD = 971.514, 992.467


# --- helpers ------------------------------------------------------------------------------
def nmea(body: str) -> bytes:
    """``$body*hh`` with hh the XOR of the body's bytes (IEC 61162-1), as a controller sends."""
    checksum = 0
    for byte in body.encode("ascii"):
        checksum ^= byte
    return b"$" + body.encode("ascii") + b"*%02X" % checksum


def amap(profile: str, numbering=None, clamp: bool = True) -> ActuatorMap:
    v = vessel(profile)
    return ActuatorMap(v.actuators, numbering or {1: "starboard", 2: "port"}, clamp)


def decode(profile: str, body: str, m: ActuatorMap | None = None) -> dict[str, Demand]:
    """The demands of one sentence, by actuator name."""
    m = m or amap(profile)
    sentence = parse_sentence(nmea(body))
    (protocol,) = [p for p in PROTOCOLS.values() if p.claims(sentence)]
    demands = protocol.decode(sentence, m)
    names = [a.name for a in vessel(profile).actuators]
    by_name = {names[d.actuator]: d for d in demands}
    assert len(by_name) == len(demands), "one demand per actuator"
    return by_name


def reason(profile: str, body: str, m: ActuatorMap | None = None) -> str:
    with pytest.raises(Rejected) as info:
        decode(profile, body, m)
    assert info.value.reason in REASONS
    return info.value.reason


def demand(d: Demand, speed=None, angle_deg=None, deflector=None) -> None:
    """Compare a demand with hand-computed values (None: that part must be left unchanged)."""
    for got, want, what in (
        (d.speed, speed, "speed"),
        (None if d.angle is None else math.degrees(d.angle), angle_deg, "angle [deg]"),
        (d.deflector, deflector, "deflector"),
    ):
        if want is None:
            assert got is None, f"{what} should be unchanged, got {got}"
        else:
            assert got == pytest.approx(want, abs=1e-9), what


def device(profile: str = "odin", type_name: str | None = None, name: str = "ctl", **settings):
    """A command device as a bench would build it: the type's defaults plus ``settings``."""
    type_name = type_name or ("jet-controller" if profile == "odin" else "thruster-controller")
    dtype = load_device_type(type_name)
    config = device_config(type_name, name, **settings)
    return dtype.model(config, vessel(profile), Origin(59.41, 10.48))


def device_config(type_name: str, name: str = "ctl", **settings) -> DeviceConfig:
    dtype = load_device_type(type_name)
    return DeviceConfig(
        name=name,
        type=type_name,
        model=dtype.model.model,
        talker=dtype.talker,
        rate_hz=dtype.rate_hz,
        baud=dtype.baud,
        sentences=dtype.sentences,
        lever_arm=(0.0, 0.0, 0.0),
        ports=(PORT_URL,),
        settings={**dtype.settings, **settings},
    )


def inbound(line: bytes, t_rx: float = 0.0, overlong: bool = False) -> Inbound:
    return Inbound(line, PORT_URL, PEER, t_rx, overlong)


def index(profile: str, name: str) -> int:
    return vessel(profile).actuator(name).index


def test_checksum_helper_against_a_published_sentence():
    # the classic GGA example of the NMEA 0183 documentation, checksum *47
    body = "GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"
    assert nmea(body) == b"$" + body.encode() + b"*47"


# --- framing ------------------------------------------------------------------------------
def test_a_framed_sentence_splits_into_address_and_fields():
    s = parse_sentence(nmea("RCTRC,2,402.6,R,,V,88.3,B,C"))
    assert s.address == "RCTRC" and s.kind == "TRC"
    assert s.fields == ("2", "402.6", "R", "", "V", "88.3", "B", "C")
    s = parse_sentence(nmea("PHLDC,0,25.0,-50.0,100.0"))
    assert (s.address, s.fields) == ("PHLDC", ("0", "25.0", "-50.0", "100.0"))
    # a lower-case checksum is the same number
    line = nmea("RCROR,-22.0,A,34.0,A,B")
    assert line.endswith(b"*1A")
    assert parse_sentence(line[:-2] + b"1a").fields == ("-22.0", "A", "34.0", "A", "B")


def test_length_limit_is_82_characters_with_cr_lf():
    body76 = "PXXXX," + "1" * 70  # "$" + 76 + "*hh" = 80 characters, 82 with CR LF
    assert len(nmea(body76)) == 80
    assert parse_sentence(nmea(body76)).address == "PXXXX"
    with pytest.raises(Rejected) as info:
        parse_sentence(nmea(body76 + "1"))
    assert info.value.reason == "overlong"


@pytest.mark.parametrize(
    "line, checksum, expected",
    [
        (b"$" + b"0" * 90, "required", "overlong"),  # before anything else is looked at
        (b"$RCTRC,1,50.0,P,,V,,B,C\xb0*00", "required", "non_ascii"),
        (b"$RCTRC,1,50.0,P,,V,\x00,B,C", "optional", "non_ascii"),
        (b"$RCTRC,1,50.0,P,,V,,B,C\r", "optional", "non_ascii"),  # the transport strips CR
        (nmea("RCTRC,1,50.0,P,,V,,B,C")[1:], "required", "framing"),  # no '$'
        (b"#" + nmea("RCTRC,1,50.0,P,,V,,B,C")[1:], "required", "framing"),
        (nmea("rctrc,1,50.0,P,,V,,B,C"), "required", "framing"),  # no valid address
        (nmea(",1,50.0,P,,V,,B,C"), "required", "framing"),
        (b"$hello", "required", "framing"),  # framing is judged before the checksum
        (b"", "required", "framing"),
        (b"$RCTRC,1,50.0,P,,V,,B,C", "required", "missing_checksum"),
        (b"$RCTRC,1,50.0,P,,V,,B,C*", "required", "missing_checksum"),  # a bare '*' where required
        (nmea("RCTRC,1,50.0,P,,V,,B,C")[:-1], "required", "bad_checksum"),  # one hex digit
        (nmea("RCTRC,1,50.0,P,,V,,B,C") + b"0", "required", "bad_checksum"),  # three
        (b"$RCTRC,1,50.0,P,,V,,B,C*G1", "optional", "bad_checksum"),  # not hex
        (nmea("RCTRC,1,50.0,P,,V,,B,C").replace(b"50.0", b"60.0"), "required", "bad_checksum"),
        (nmea("RCTRC,1,50.0,P,,V,,B,C").replace(b"50.0", b"60.0"), "optional", "bad_checksum"),
        (b"$PYDIR,40,40", "unchecked", "missing_checksum"),  # the Heron wants the '*'
        (b"$PYDIR", "unchecked", "missing_checksum"),
        (b"$hello*", "unchecked", "framing"),  # no digits to check, but still framing
        (b"$PYDIR,40,40\x00*", "unchecked", "non_ascii"),
    ],
)
def test_framing_rejections(line, checksum, expected):
    with pytest.raises(Rejected) as info:
        parse_sentence(line, checksum)
    assert info.value.reason == expected


def test_checksum_optional_accepts_none_and_a_bare_star():
    for line in (b"$PYDIR,40,40*", b"$PYDIR,40,40", nmea("PYDIR,40,40")):
        s = parse_sentence(line, "optional")
        assert (s.address, s.fields) == ("PYDIR", ("40", "40"))
    # a checksum that is there is still checked
    with pytest.raises(Rejected) as info:
        parse_sentence(b"$PYDIR,40,40*00", "optional")
    assert info.value.reason == "bad_checksum"


def test_checksum_unchecked_wants_the_star_and_reads_nothing_after_it():
    # as the Heron's command publisher reads PYDIR: a bare '*' (iM200), the right digits,
    # wrong digits and anything else after the '*' all carry the same sentence
    right = nmea("PYDIR,40,-20")
    wrong = right[:-2] + b"%02X" % (int(right[-2:], 16) ^ 0x11)
    for line in (b"$PYDIR,40,-20*", right, wrong, b"$PYDIR,40,-20*x", b"$PYDIR,40,-20*123"):
        s = parse_sentence(line, "unchecked")
        assert (s.address, s.fields) == ("PYDIR", ("40", "-20")), line
    # the same lines where the digits are read
    for line, mode in ((wrong, "optional"), (wrong, "required"), (b"$PYDIR,40,-20*x", "optional")):
        with pytest.raises(Rejected) as info:
            parse_sentence(line, mode)
        assert info.value.reason == "bad_checksum", (line, mode)


def test_lines_ended_by_cr_lf_cr_or_lf_parse_once_the_splitter_strips_the_ends():
    lines: list[Inbound] = []
    splitter = LineSplitter(PORT_URL, lines.append, PortStats())
    a, b, c = nmea("RCTRC,1,50.0,P,,V,,B,C"), nmea("RCROR,5.0,A,,V,B"), nmea("PHLDC,0,,,0.0")
    splitter.feed(a + b"\r\n" + b + b"\r" + c[:10], t_rx=1.0)
    splitter.feed(c[10:] + b"\n", t_rx=2.0)
    assert [i.line for i in lines] == [a, b, c]
    dev = device("odin")
    assert all(dev.receive(i) is not None for i in lines)
    assert dev.stats.commands == 3 and not dev.stats.rejected


# --- every reason, each from one representative line through a device --------------------
REASON_CASES = [
    # reason, profile, settings, line, overlong flag
    ("overlong", "odin", {}, nmea("RCTRC,1,50.0,P,,V,,B,C" + ",0" * 30), False),
    ("overlong", "odin", {}, b"$RCTRC,1,50.0,P", True),  # the port cut it off
    ("non_ascii", "odin", {}, b"$RCTRC,1,50.0,P,\xff\xfe,V,,B,C*00", False),
    ("framing", "odin", {}, b"RCTRC,1,50.0,P,,V,,B,C", False),
    ("missing_checksum", "odin", {}, b"$RCTRC,1,50.0,P,,V,,B,C", False),
    ("bad_checksum", "odin", {}, b"$RCTRC,1,50.0,P,,V,,B,C*00", False),
    (
        "unknown_sentence",
        "odin",
        {},
        nmea("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,,M,,M,,"),
        False,
    ),
    ("unknown_sentence", "odin", {}, nmea("PHLDT,0,50.0,0.0"), False),  # not a jet protocol
    ("unsupported", "jolner", {}, nmea("RCROR,10.0,A,,V,B"), False),  # nothing steers
    ("field_count", "odin", {}, nmea("RCTRC,1,50.0,P"), False),
    ("bad_number", "odin", {}, nmea("RCTRC,1,fifty,P,,V,,B,C"), False),
    ("bad_mode", "odin", {}, nmea("RCTRC,1,50.0,X,,V,,B,C"), False),
    ("not_command", "odin", {}, nmea("RCTRC,1,50.0,P,,V,,B,R"), False),
    ("unknown_actuator", "odin", {}, nmea("RCTRC,3,50.0,P,,V,,B,C"), False),
    ("out_of_range", "odin", {"out_of_range": "refuse"}, nmea("RCTRC,1,2500.0,R,,V,,B,C"), False),
    ("empty", "odin", {}, nmea("RCTRC,1,,V,,V,,B,C"), False),
    ("latched", "odin", {"neutral_first": True}, nmea("RCTRC,1,50.0,P,,V,,B,C"), False),
]


@pytest.mark.parametrize("expected, profile, settings, line, overlong", REASON_CASES)
def test_each_reason_is_counted_under_its_name(expected, profile, settings, line, overlong):
    dev = device(profile, **settings)
    assert dev.receive(inbound(line, 1.0, overlong)) is None
    assert dev.stats.rejected == Counter({expected: 1})
    assert dev.stats.lines == 1 and dev.stats.commands == 0
    assert dev.summary()["rejected"] == {expected: 1}


def test_the_cases_cover_every_reason():
    assert {case[0] for case in REASON_CASES} == set(REASONS)


@pytest.mark.parametrize(
    "field", ["nan", "inf", "1e3", "-", "+", "1.2.3", " 5", "0x10", "1_000", "5-"]
)
def test_numbers_are_plain_decimals(field):
    assert reason("odin", f"RCTRC,1,{field},R,,V,,B,C") == "bad_number"


@pytest.mark.parametrize("number", ["", "-1", "1.0", "+1", "one"])
def test_thruster_numbers_are_non_negative_integers(number):
    assert reason("odin", f"RCTRC,{number},50.0,P,,V,,B,C") == "bad_number"


# --- TRC ----------------------------------------------------------------------------------
def test_trc_on_waterjets():
    # R: rev/min; pitch per cent drives the deflector (jet-controller.toml's own example)
    d = decode("odin", "RCTRC,1,1500.0,R,100.0,P,,B,C")
    assert set(d) == {"starboard"}
    demand(d["starboard"], speed=1500.0, deflector=1.0)
    # P: per cent of the engine's range, 0 % idle: 25 % = 400 + 0.25 * 1600
    d = decode("odin", "RCTRC,2,25.0,P,-100.0,P,,B,C")
    assert set(d) == {"port"}
    demand(d["port"], speed=800.0, deflector=-1.0)
    # azimuth is the direction of thrust: 350 deg (towards port) is the nozzle 10 deg to
    # starboard, turning the bow to starboard; 10 deg the nozzle 10 deg to port
    d = decode("odin", "RCTRC,0,,V,,V,350.0,B,C")
    demand(d["port"], angle_deg=10.0)
    demand(d["starboard"], angle_deg=10.0)
    demand(decode("odin", "RCTRC,1,,V,,V,10.0,B,C")["starboard"], angle_deg=-10.0)
    demand(decode("odin", "RCTRC,1,,V,,V,0.0,B,C")["starboard"], angle_deg=0.0)
    # NAVIS waterjet practice: per cent thrust, pitch empty with mode V, azimuth
    demand(decode("odin", "RCTRC,2,50.0,P,,V,355.0,B,C")["port"], speed=1200.0, angle_deg=5.0)


def test_trc_mode_v_ignores_the_value_and_a_deflector_needs_per_cent():
    assert reason("odin", "RCTRC,1,50.0,V,50.0,V,,B,C") == "empty"
    demand(decode("odin", "RCTRC,1,50.0,V,50.0,P,,B,C")["starboard"], deflector=0.5)
    assert reason("odin", "RCTRC,1,50.0,P,10.0,D,,B,C") == "bad_mode"
    assert reason("odin", "RCTRC,1,50.0,,,V,,B,C") == "bad_mode"  # a mode is never null
    assert reason("odin", "RCTRC,1,50.0,PP,,V,,B,C") == "bad_mode"


@pytest.mark.parametrize("status", ["R", "", "c", "V"])
def test_trc_without_status_c_is_no_command(status):
    assert reason("odin", f"RCTRC,1,50.0,P,,V,,B,{status}") == "not_command"


def test_trc_on_thrusters():
    # thruster-controller.toml's example: port thruster 60 % ahead of 3000 rpm
    d = decode("jolner", "RCTRC,2,60.0,P,,V,,B,C")
    assert set(d) == {"port"}
    demand(d["port"], speed=1800.0)
    demand(decode("jolner", "RCTRC,1,-2500.0,R,,V,,B,C")["starboard"], speed=-2500.0)
    d = decode("jolner", "RCTRC,0,-50.0,P,,V,,B,C")
    demand(d["port"], speed=-1500.0)
    demand(d["starboard"], speed=-1500.0)
    # the Otter's range is not symmetric: each sign scales to its own end
    demand(decode("otter", "RCTRC,1,100.0,P,,V,,B,C")["starboard"], speed=OTTER_FWD)
    demand(decode("otter", "RCTRC,1,-100.0,P,,V,,B,C")["starboard"], speed=-OTTER_REV)
    demand(decode("otter", "RCTRC,1,-50.0,P,,V,,B,C")["starboard"], speed=-OTTER_REV / 2)
    # a fixed propeller ignores an azimuth, and a pitch it has no deflector for
    demand(decode("otter", "RCTRC,1,10.0,P,50.0,P,90.0,B,C")["starboard"], speed=OTTER_FWD / 10)
    assert reason("otter", "RCTRC,1,,V,,V,90.0,B,C") == "empty"


def test_trc_on_azimuth_thrusters():
    # the WAM-V's normalized thrust takes per cent only; azimuth = direction of thrust
    d = decode("wamv", "RCTRC,0,50.0,P,,V,10.0,B,C")
    demand(d["port"], speed=0.5, angle_deg=10.0)
    demand(d["starboard"], speed=0.5, angle_deg=10.0)
    demand(
        decode("wamv", "RCTRC,1,-25.0,P,,V,350.0,B,C")["starboard"], speed=-0.25, angle_deg=-10.0
    )
    assert reason("wamv", "RCTRC,1,50.0,R,,V,,B,C") == "bad_mode"


def test_numbering_zero_is_all_and_a_numbering_can_be_remapped():
    d = decode("odin", "RCTRC,0,1000.0,R,,V,,B,C")
    assert set(d) == {"port", "starboard"}
    swapped = amap("odin", {1: "port", 2: "starboard"})
    d = decode("odin", "RCTRC,1,1000.0,R,,V,,B,C", swapped)
    assert set(d) == {"port"}
    d = decode("odin", "RCTRC,2,1000.0,R,,V,,B,C", swapped)
    assert set(d) == {"starboard"}
    assert set(decode("odin", "RCTRC,0,1000.0,R,,V,,B,C", swapped)) == {"port", "starboard"}
    only_port = amap("odin", {7: "port"})
    assert set(decode("odin", "RCTRC,7,1000.0,R,,V,,B,C", only_port)) == {"port"}
    assert reason("odin", "RCTRC,1,1000.0,R,,V,,B,C", only_port) == "unknown_actuator"


# --- PRC ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "lever, rpm, deflector",
    [
        # the first 20 % of travel moves the bucket from neutral to full at idle ...
        (0.0, ODIN_IDLE, 0.0),
        (10.0, ODIN_IDLE, 0.5),
        (20.0, ODIN_IDLE, 1.0),
        (-10.0, ODIN_IDLE, -0.5),
        (-20.0, ODIN_IDLE, -1.0),
        # ... the other 80 % raise the engine from idle to full: 60 -> 50 % -> 1200 rpm
        (60.0, 1200.0, 1.0),
        (40.0, 800.0, 1.0),
        (100.0, ODIN_MAX, 1.0),
        (-60.0, 1200.0, -1.0),
        (-100.0, ODIN_MAX, -1.0),
    ],
)
def test_prc_single_lever_on_jets(lever, rpm, deflector):
    d = decode("odin", f"RCPRC,{lever:.1f},A,,V,,V,B,0")
    assert set(d) == {"port", "starboard"}
    for side in d.values():
        demand(side, speed=rpm, deflector=deflector)


def test_prc_demands_override_the_lever_and_engine_numbers_select():
    d = decode("odin", "RCPRC,60.0,A,1500.0,R,,V,B,0")
    demand(d["port"], speed=1500.0, deflector=1.0)
    d = decode("odin", "RCPRC,60.0,A,25.0,P,-100.0,P,B,0")
    demand(d["starboard"], speed=800.0, deflector=-1.0)
    # an invalid lever leaves only the demands
    demand(decode("odin", "RCPRC,60.0,V,1000.0,R,,V,B,1")["starboard"], speed=1000.0)
    assert set(decode("odin", "RCPRC,60.0,A,,V,,V,B,2")) == {"port"}
    assert set(decode("odin", "RCPRC,60.0,A,,V,,V,B,1")) == {"starboard"}
    assert reason("odin", "RCPRC,60.0,V,,V,,V,B,0") == "empty"
    assert reason("odin", "RCPRC,60.0,A,,V,,V,B,4") == "unknown_actuator"
    assert reason("odin", "RCPRC,60.0,X,,V,,V,B,0") == "bad_mode"
    # as in TRC, a jet's deflector takes per cent: a pitch in degrees is refused, not dropped
    assert reason("odin", "RCPRC,60.0,A,,V,10.0,D,B,0") == "bad_mode"
    demand(decode("odin", "RCPRC,60.0,A,,V,10.0,V,B,0")["port"], speed=1200.0, deflector=1.0)
    # a propeller has no deflector: a pitch demand is not for it
    demand(decode("jolner", "RCPRC,50.0,A,,V,10.0,D,B,1")["starboard"], speed=1500.0)
    assert reason("odin", "RCPRC,60.0,A,,V,,V,B") == "field_count"


def test_prc_lever_of_a_thruster_is_its_thrust_in_per_cent():
    demand(decode("jolner", "RCPRC,50.0,A,,V,,V,B,1")["starboard"], speed=1500.0)
    demand(decode("otter", "RCPRC,-50.0,A,,V,,V,B,2")["port"], speed=-OTTER_REV / 2)
    demand(decode("wamv", "RCPRC,-100.0,A,,V,,V,B,2")["port"], speed=-1.0)


# --- ROR ----------------------------------------------------------------------------------
def test_ror_single_order_steers_every_nozzle_by_the_order():
    for body in ("RCROR,10.0,A,,V,B", "RCROR,10.0,A,,", "RCROR,10.0,A,,V"):
        d = decode("odin", body)
        demand(d["port"], angle_deg=10.0)
        demand(d["starboard"], angle_deg=10.0)


def test_ror_turns_azimuth_thrusters_the_other_way():
    # an azimuth thruster aft turns the bow to starboard by thrusting to port
    d = decode("wamv", "RCROR,10.0,A,,V,B")
    demand(d["port"], angle_deg=-10.0)
    demand(d["starboard"], angle_deg=-10.0)
    # the same steering as a TRC thrust direction of 350 deg, on both kinds of vessel
    for profile in ("odin", "wamv"):
        ror = decode(profile, "RCROR,10.0,A,,V,B")["starboard"].angle
        trc = decode(profile, "RCTRC,1,,V,,V,350.0,B,C")["starboard"].angle
        assert ror == pytest.approx(trc)


def test_ror_two_orders_go_to_starboard_and_port():
    d = decode("odin", "RCROR,10.0,A,-5.0,A,B")  # the example: starboard first
    demand(d["starboard"], angle_deg=10.0)
    demand(d["port"], angle_deg=-5.0)
    d = decode("wamv", "RCROR,10.0,A,-5.0,A,B")
    demand(d["starboard"], angle_deg=-10.0)
    demand(d["port"], angle_deg=5.0)
    # an invalid half is left out
    assert set(decode("odin", "RCROR,10.0,V,-5.0,A,B")) == {"port"}
    assert set(decode("odin", "RCROR,10.0,A,-5.0,V,B")) == {"starboard"}
    assert reason("odin", "RCROR,10.0,V,,V,B") == "empty"
    assert reason("odin", "RCROR,10.0,X,,V,B") == "bad_mode"
    assert reason("odin", "RCROR,10.0,A,-5.0,X,B") == "bad_mode"
    assert reason("odin", "RCROR,10.0,A,-5.0,A,B,X") == "field_count"


# --- Odin's normalized interface, PHLDT, the frontseat ------------------------------------
def test_phldc_normalized_jet_command():
    # jet-controller.toml: both jets 1400 rpm, nozzle -13.5 deg, full ahead
    d = decode("odin", "PHLDC,0,25.0,-50.0,100.0")
    for side in d.values():
        demand(side, speed=1400.0, angle_deg=-13.5, deflector=1.0)
    d = decode("odin", "PHLDC,port,-100.0,100.0,-100.0")
    assert set(d) == {"port"}
    demand(d["port"], speed=ODIN_IDLE, angle_deg=27.0, deflector=-1.0)
    demand(decode("odin", "PHLDC,1,0.0,,")["starboard"], speed=1200.0)  # the middle
    assert reason("odin", "PHLDC,0,,,") == "empty"
    assert reason("odin", "PHLDC,bow,0.0,0.0,0.0") == "bad_number"
    assert reason("odin", "PHLDC,0,0.0,0.0") == "field_count"
    assert reason("otter", "PHLDC,0,0.0,0.0,0.0") == "unsupported"


def test_phldt_normalized_thruster_command():
    d = decode("wamv", "PHLDT,0,50.0,-50.0")
    for side in d.values():
        demand(side, speed=0.5, angle_deg=-45.0)
    demand(decode("jolner", "PHLDT,starboard,-100.0")["starboard"], speed=-3000.0)
    demand(decode("jolner", "PHLDT,2,20.0,50.0")["port"], speed=600.0)  # no azimuth to turn
    assert reason("odin", "PHLDT,0,50.0") == "unsupported"


def test_pydir_left_and_right_are_port_and_starboard():
    d = decode("otter", "PYDIR,40,-20")
    demand(d["port"], speed=0.4 * OTTER_FWD)
    demand(d["starboard"], speed=-0.2 * OTTER_REV)
    demand(decode("wamv", "PYDIR,,100")["starboard"], speed=1.0)
    assert reason("otter", "PYDIR,,") == "empty"
    assert reason("otter", "PYDEV,90.0,1.5") == "unsupported"
    assert reason("otter", "PYDEP,0.1,50") == "unsupported"


# --- limits -------------------------------------------------------------------------------
def test_clamping_counts_every_value_it_moves():
    m = amap("odin")
    d = decode("odin", "RCTRC,0,3000.0,R,,V,,B,C", m)
    demand(d["port"], speed=ODIN_MAX)
    demand(d["starboard"], speed=ODIN_MAX)
    assert m.clamped == 2
    demand(
        decode("odin", "RCTRC,1,150.0,P,-150.0,P,,B,C", m)["starboard"],
        speed=ODIN_MAX,
        deflector=-1.0,
    )
    assert m.clamped == 4
    demand(decode("odin", "RCTRC,1,-10.0,P,,V,,B,C", m)["starboard"], speed=ODIN_IDLE)
    demand(decode("odin", "RCTRC,1,100.0,R,,V,,B,C", m)["starboard"], speed=ODIN_IDLE)
    demand(decode("odin", "RCROR,35.0,A,-40.0,A,B", m)["port"], angle_deg=-27.0)
    demand(decode("odin", "RCTRC,1,,V,,V,300.0,B,C", m)["starboard"], angle_deg=27.0)
    demand(decode("wamv", "RCROR,-120.0,A,,V,B", m2 := amap("wamv"))["port"], angle_deg=90.0)
    assert m.clamped == 9 and m2.clamped == 2
    # within range nothing is counted
    decode("odin", "RCTRC,0,2000.0,R,-100.0,P,333.0,B,C", m)
    decode("odin", "RCROR,27.0,A,-27.0,A,B", m)
    assert m.clamped == 9


@pytest.mark.parametrize(
    "profile, body",
    [
        ("odin", "RCTRC,1,2000.1,R,,V,,B,C"),
        ("odin", "RCTRC,1,399.9,R,,V,,B,C"),
        ("odin", "RCTRC,1,100.1,P,,V,,B,C"),
        ("odin", "RCTRC,1,-0.1,P,,V,,B,C"),
        ("odin", "RCTRC,1,,V,100.5,P,,B,C"),
        ("odin", "RCTRC,1,,V,,V,332.0,B,C"),
        ("odin", "RCTRC,1,,V,,V,360.5,B,C"),
        ("odin", "RCROR,27.5,A,,V,B"),
        ("odin", "RCPRC,101.0,A,,V,,V,B,0"),
        ("odin", "PHLDC,0,,-100.1,"),
        ("jolner", "RCTRC,1,-3001.0,R,,V,,B,C"),
        ("otter", "RCTRC,1,-100.5,P,,V,,B,C"),
        ("wamv", "RCROR,-90.5,A,,V,B"),
        ("wamv", "PYDIR,0,101"),
    ],
)
def test_refusing_devices_reject_values_beyond_the_limits(profile, body):
    m = amap(profile, clamp=False)
    assert reason(profile, body, m) == "out_of_range"
    assert m.clamped == 0
    # the same line is taken, clamped, by a clamping map
    m = amap(profile, clamp=True)
    decode(profile, body, m)
    assert m.clamped >= 1


def test_device_counts_clamps_and_refusals():
    clamp = device("odin")
    command = clamp.receive(inbound(nmea("RCTRC,0,3000.0,R,,V,,B,C"), 1.0))
    assert isinstance(command, ActuatorCommand)
    assert [d.speed for d in command.demands] == [ODIN_MAX, ODIN_MAX]
    assert clamp.stats.clamped == 2 and clamp.stats.commands == 1
    refuse = device("odin", out_of_range="refuse")
    assert refuse.receive(inbound(nmea("RCTRC,0,3000.0,R,,V,,B,C"), 1.0)) is None
    assert refuse.stats.rejected == Counter(out_of_range=1) and refuse.stats.clamped == 0


# --- neutral ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "profile, body, neutral",
    [
        ("odin", "RCTRC,0,0.0,P,0.0,P,,B,C", True),  # idle, deflector neutral
        ("odin", "RCTRC,1,400.0,R,,V,,B,C", True),  # idle only
        ("odin", "RCTRC,1,,V,0.0,P,,B,C", True),  # deflector neutral only
        ("odin", "RCPRC,0.0,A,,V,,V,B,0", True),
        ("odin", "PHLDC,0,-100.0,,0.0", True),
        ("odin", "PHLDC,0,-100.0,50.0,0.0", True),  # steering does not matter
        ("odin", "RCTRC,0,2000.0,R,0.0,P,,B,C", False),  # idle is required
        ("odin", "RCTRC,0,0.0,P,20.0,P,,B,C", False),
        ("odin", "RCPRC,60.0,A,,V,,V,B,0", False),
        ("odin", "RCPRC,10.0,A,,V,,V,B,0", False),  # bucket half ahead at idle
        ("odin", "RCROR,0.0,A,,V,B", False),  # no thrust part: steering only
        ("odin", "RCTRC,0,,V,,V,0.0,B,C", False),
        ("otter", "RCTRC,0,0.0,P,,V,,B,C", True),
        ("otter", "RCTRC,0,0.0,R,,V,,B,C", True),
        ("otter", "RCTRC,0,0.5,P,,V,,B,C", True),  # within 1 % of the range
        ("otter", "RCTRC,0,5.0,P,,V,,B,C", False),
        ("otter", "RCTRC,0,-5.0,P,,V,,B,C", False),
        ("otter", "PYDIR,0,0", True),
        ("otter", "PYDIR,0,30", False),
        ("wamv", "PHLDT,0,0.0", True),
        ("wamv", "PHLDT,0,,50.0", False),
        ("wamv", "RCPRC,0.0,A,,V,,V,B,0", True),
    ],
)
def test_neutral_commands(profile, body, neutral):
    m = amap(profile)
    demands = tuple(decode(profile, body, m).values())
    assert m.is_neutral(demands) is neutral


def test_each_device_neutral_sentence_is_neutral_and_accepted_while_latched():
    for profile in ("odin", "jolner", "otter", "wamv"):
        for name in NEUTRAL_SENTENCES:
            try:
                m = amap(profile)
                demands = tuple(decode(profile, NEUTRAL_SENTENCES[name], m).values())
            except Rejected:
                continue  # a protocol for the other kind of vessel
            assert m.is_neutral(demands), (profile, name)
        dev = device(profile, neutral_first=True)
        assert dev.receive(inbound(dev.neutral_line(), 1.0)) is not None
        assert dev.watchdog.state == ACTIVE


# --- watchdog -----------------------------------------------------------------------------
def test_watchdog_trips_exactly_once_and_latches_until_neutral():
    w = Watchdog(timeout_s=0.5)
    assert w.state == WAITING and not w.latched
    assert not w.expired(1.0e6)  # no lease to lose before the first command
    assert w.admit(10.0, neutral=False) and w.state == ACTIVE
    assert not w.expired(10.25)
    assert not w.expired(10.5)  # the lease runs to t_rx + timeout inclusive
    assert w.expired(10.5001)
    assert w.state == TRIPPED and w.trips == 1 and w.latched
    assert not w.expired(10.6) and not w.expired(99.0)
    assert w.trips == 1
    # latched: thrust is refused, repeatedly, and the refusals renew nothing
    assert not w.admit(11.0, neutral=False)
    assert not w.admit(11.1, neutral=False)
    assert w.state == TRIPPED and not w.expired(12.0)
    # a neutral command releases it and starts a new lease
    assert w.admit(12.0, neutral=True)
    assert w.state == ACTIVE and not w.latched and w.last_command_t == 12.0
    assert w.admit(12.1, neutral=False)
    assert not w.expired(12.6)
    assert w.expired(12.61) and w.trips == 2


def test_watchdog_neutral_first():
    w = Watchdog(timeout_s=1.0, neutral_first=True)
    assert w.latched
    assert not w.admit(0.0, neutral=False)
    assert w.state == WAITING and not w.expired(100.0)
    assert w.admit(100.0, neutral=True)
    assert w.admit(100.1, neutral=False)
    assert w.expired(101.2) and w.trips == 1


def test_watchdog_judges_the_lease_by_receive_time():
    w = Watchdog(timeout_s=0.5)
    w.admit(5.0, neutral=False)
    w.admit(4.0, neutral=False)  # an older line processed late does not shorten the lease
    assert not w.expired(5.5)
    assert w.expired(5.51)
    w = Watchdog(timeout_s=0.5)
    w.admit(1.0, neutral=False)  # received at 1.0 but only handed over at 1.6
    assert w.expired(1.6)


def test_watchdog_release_next_command_takes_any_command_after_a_trip():
    w = Watchdog(timeout_s=0.5, release="next-command")
    assert w.admit(10.0, neutral=False)
    assert not w.expired(10.5) and w.expired(10.5001)
    assert w.state == TRIPPED and w.trips == 1 and not w.latched
    assert not w.expired(11.0)  # tripped once, not again while silent
    # the backseat is back: full thrust is taken at once, and renews the lease
    assert w.admit(11.5, neutral=False)
    assert w.state == ACTIVE and w.last_command_t == 11.5
    assert not w.expired(12.0)
    assert w.expired(12.01) and w.trips == 2 and w.state == TRIPPED
    assert w.admit(13.0, neutral=True)  # a neutral one is a command like the others
    assert w.state == ACTIVE and w.trips == 2


def test_watchdog_neutral_first_holds_whatever_the_release():
    w = Watchdog(timeout_s=0.5, neutral_first=True, release="next-command")
    assert w.latched and not w.admit(0.0, neutral=False) and w.state == WAITING
    assert w.admit(0.1, neutral=True)
    assert w.expired(0.7)
    assert w.admit(2.0, neutral=False)  # after a trip the release decides: the next command


@pytest.mark.parametrize("release", ["next-command", "neutral"])
def test_the_ticks_quick_look_agrees_with_the_lease(release):
    # Device.poll asks may_have_expired (no lock) before expired decides. Against a lease kept
    # here from what admit accepted (a lease runs to the latest admitted receive time plus the
    # timeout; a trip ends it until a command is admitted): the look says yes exactly when that
    # lease has run out, and expired trips exactly then.
    rng = np.random.default_rng(7)
    w = Watchdog(timeout_s=0.5, release=release, neutral_first=release == "neutral")
    t = 0.0
    running, lease_until = False, -math.inf
    trips = 0
    for _ in range(2000):
        t += float(rng.uniform(0.0, 0.4))
        if rng.random() < 0.3:
            t_rx = t - float(rng.uniform(0.0, 0.2))
            if w.admit(t_rx, neutral=bool(rng.random() < 0.5)):
                running, lease_until = True, max(lease_until, t_rx + 0.5)
        run_out = running and t > lease_until
        assert w.may_have_expired(t) == run_out, (t, w)
        assert w.expired(t) == run_out, (t, w)
        running = running and not run_out
        trips += run_out
    assert trips > 10 and trips == w.trips  # the walk went through many trips and releases


def test_watchdog_release_must_be_a_known_policy():
    with pytest.raises(ValueError, match="release = 'sometimes': expected one of neutral, next"):
        Watchdog(release="sometimes")


@pytest.mark.parametrize("release", ["next-command", "neutral"])
def test_a_trip_hands_on_its_safe_state_before_a_later_command_is_admitted(release):
    # The tick thread trips the watchdog while the network thread admits a command: what the
    # trip hands on (the safe state, to the control queue) goes out before that command can
    # be admitted, so the command is queued after it and is what the actuators follow.
    w = Watchdog(timeout_s=0.5, release=release)
    w.admit(1.0, neutral=False)
    queue: list[str] = []
    admitted: list[bool] = []

    def command():
        if w.admit(1.6, neutral=True):
            admitted.append(True)
            queue.append("command")

    network = threading.Thread(target=command)

    def on_trip():
        network.start()
        network.join(timeout=0.2)  # it cannot admit its command while the trip goes on
        assert not admitted
        queue.append("safe state")

    assert w.expired(1.6, on_trip)
    network.join()
    assert queue == ["safe state", "command"] and w.state == ACTIVE


def test_device_release_next_command_drives_again_with_the_next_command():
    for profile, type_name, go, neutral in (
        ("otter", "frontseat", b"$PYDIR,40,40*", b"$PYDIR,0,0*"),
        ("otter", "thruster-controller", nmea("RCTRC,0,40.0,P,,V,,B,C"), None),
        ("odin", "jet-controller", nmea("RCTRC,0,1500.0,R,100.0,P,,B,C"), None),
    ):
        dev = device(profile, type_name, name="ctl", release="next-command")
        assert isinstance(dev.receive(inbound(go, 10.0)), ActuatorCommand)
        assert dev.poll(10.51) == SafeState("ctl", 10.51, False)
        assert dev.summary()["watchdog"] == TRIPPED and dev.summary()["watchdog_trips"] == 1
        command = dev.receive(inbound(go, 11.5))  # a second later, full thrust again
        assert isinstance(command, ActuatorCommand), type_name
        assert dev.amap.is_neutral(command.demands) is False
        assert dev.summary()["watchdog"] == ACTIVE and dev.summary()["rejected"] == {}
        assert dev.poll(12.0) is None and dev.poll(12.01) is not None
        assert dev.stats.watchdog_trips == 2
        if neutral is not None:
            assert dev.receive(inbound(neutral, 13.0)) is not None


def test_the_frontseat_resumes_on_the_next_pydir_and_the_controllers_wait_for_neutral():
    # the device files' defaults: the Heron's controller latches nothing; jet and outboard
    # controls want the lever in neutral first
    frontseat = device("otter", "frontseat")
    assert frontseat.receive(inbound(b"$PYDIR,60,40*", 0.0)) is not None
    assert frontseat.poll(1.0) is not None
    assert frontseat.receive(inbound(b"$PYDIR,60,40*", 2.0)) is not None
    for profile, type_name, go in (
        ("otter", "thruster-controller", nmea("RCTRC,0,40.0,P,,V,,B,C")),
        ("odin", "jet-controller", nmea("RCTRC,0,1500.0,R,100.0,P,,B,C")),
    ):
        dev = device(profile, type_name)
        assert dev.receive(inbound(go, 0.0)) is not None
        assert dev.poll(1.0) is not None
        assert dev.receive(inbound(go, 2.0)) is None and dev.stats.rejected == {"latched": 1}
        assert dev.receive(inbound(dev.neutral_line(), 2.1)) is not None
        assert dev.receive(inbound(go, 2.2)) is not None
    # and the frontseat can be set to wait for 0,0 like them
    latched = device("otter", "frontseat", release="neutral")
    latched.receive(inbound(b"$PYDIR,60,40*", 0.0))
    latched.poll(1.0)
    assert latched.receive(inbound(b"$PYDIR,60,40*", 2.0)) is None
    assert latched.receive(inbound(b"$PYDIR,0,0*", 2.1)) is not None


def test_device_watchdog_safe_state_latch_and_release():
    dev = device("odin", name="jets")
    go = nmea("RCTRC,0,1500.0,R,100.0,P,,B,C")
    assert dev.receive(inbound(go, 10.0)) is not None
    assert dev.poll(10.2) is None and dev.poll(10.5) is None
    # a refused line renews nothing
    assert dev.receive(inbound(go[:-2] + b"%02X" % (int(go[-2:], 16) ^ 0x55), 10.4)) is None
    assert dev.stats.rejected == Counter(bad_checksum=1)
    safe = dev.poll(10.51)
    assert safe == SafeState("jets", 10.51, False)
    assert dev.poll(10.52) is None and dev.poll(20.0) is None
    assert dev.stats.watchdog_trips == 1 and dev.summary()["watchdog"] == TRIPPED
    assert dev.receive(inbound(go, 20.1)) is None
    assert dev.stats.rejected["latched"] == 1
    # neutral releases it; then thrust is taken again
    for line in (
        nmea("RCTRC,0,0.0,P,0.0,P,,B,C"),
        nmea("RCPRC,0.0,A,,V,,V,B,0"),
        nmea("PHLDC,0,-100.0,,0.0"),
    ):
        latched = device("odin")
        latched.receive(inbound(go, 0.0))
        assert latched.poll(1.0) is not None
        assert latched.receive(inbound(go, 1.05)) is None
        assert latched.receive(inbound(line, 1.1)) is not None
        assert latched.receive(inbound(go, 1.2)) is not None
    # steering alone is no neutral command
    assert dev.receive(inbound(nmea("RCROR,5.0,A,,V,B"), 20.2)) is None
    assert dev.receive(inbound(dev.neutral_line(), 20.3)) is not None
    assert dev.receive(inbound(go, 20.4)) is not None
    assert dev.poll(20.85) is None
    assert dev.poll(20.91) is not None and dev.stats.watchdog_trips == 2


def test_device_safe_state_centres_when_set_and_follows_watchdog_s():
    dev = device("wamv", on_timeout_angle="centre", watchdog_s=2.0)
    assert dev.receive(inbound(nmea("PHLDT,0,50.0,20.0"), 0.0)) is not None
    assert dev.poll(1.9) is None
    assert dev.poll(2.01) == SafeState("ctl", 2.01, True)


def test_device_lease_uses_the_receive_time_not_the_time_of_handling():
    dev = device("otter")
    # a line read at t = 3.0 and decoded late: its lease still ends at 3.5
    assert dev.receive(inbound(nmea("RCTRC,0,50.0,P,,V,,B,C"), 3.0)) is not None
    assert dev.poll(3.51) is not None


def test_device_command_record():
    dev = device("odin", name="jets")
    command = dev.receive(inbound(nmea("PHLDC,0,25.0,-50.0,100.0"), 7.5))
    assert command.source == "jets" and command.t_rx == 7.5
    by_index = {d.actuator: d for d in command.demands}
    for i in (index("odin", "port"), index("odin", "starboard")):
        demand(by_index[i], speed=1400.0, angle_deg=-13.5, deflector=1.0)
    assert dev.stats.commands == 1 and dev.stats.lines == 1
    # the line the banner shows is a valid command
    for profile in ("odin", "jolner", "otter", "wamv"):
        dev = device(profile)
        assert dev.receive(inbound(dev.example_line(), 1.0)) is not None, profile


def test_checksum_optional_device_accepts_lines_without_one():
    dev = device("odin", checksum="optional")
    for line in (b"$RCTRC,1,50.0,P,,V,,B,C", b"$RCTRC,1,50.0,P,,V,,B,C*"):
        assert dev.receive(inbound(line, 1.0)) is not None
    assert dev.receive(inbound(b"$RCTRC,1,50.0,P,,V,,B,C*00", 1.0)) is None
    assert dev.stats.rejected == Counter(bad_checksum=1)
    strict = device("odin")
    assert strict.receive(inbound(b"$RCTRC,1,50.0,P,,V,,B,C*", 1.0)) is None
    assert strict.stats.rejected == Counter(missing_checksum=1)


# --- the worked examples in the docs --------------------------------------------------------
# A sentence written out in full: "$", an address, fields, "*" and two hex digits or none.
EXAMPLE = re.compile(r"\$([A-Z][A-Z0-9]{2,7}(?:,[^*\s`]*)?)\*([0-9A-F]{2})?(?![0-9A-Za-z])")
FEEDBACK = {"TRD", "RPM", "RSA", "XDR"}  # what the controllers send back (talker first)
COMMAND_DEVICES = {  # each command device type on the profiles it fits
    "jet-controller": ("odin",),
    "thruster-controller": ("jolner", "otter", "wamv"),
    "frontseat": ("jolner", "otter", "wamv"),
}


def examples(text: str) -> list[tuple[str, str | None]]:
    """Every sentence written out in ``text``: (body between $ and *, checksum digits)."""
    return [(m[1], m[2]) for m in EXAMPLE.finditer(text)]


def decoded_by(body: str, digits: str | None, type_name: str) -> list[str]:
    """The profiles on which a ``type_name`` device (taking every protocol its model has)
    turns the example into a record, each on a fresh device."""
    line = b"$" + body.encode("ascii") + b"*" + (digits or "").encode("ascii")
    model = load_device_type(type_name).model
    taken = []
    for profile in COMMAND_DEVICES[type_name]:
        dev = device(profile, type_name, protocols=list(model.protocols_available))
        if dev.receive(inbound(line, 1.0)) is not None:
            taken.append(profile)
    return taken


def check_example(body: str, digits: str | None, type_names) -> None:
    # the checksum is the XOR of the characters between $ and * (IEC 61162-1), in capitals
    if digits is not None:
        assert nmea(body).decode() == f"${body}*{digits}", f"wrong checksum: ${body}*{digits}"
    address = body.split(",")[0]
    if address[2:] in FEEDBACK:
        assert digits is not None, f"feedback always has a checksum: ${body}*"
        pynmea2.parse(f"${body}*{digits}", check=True)  # with hild.nmea's types registered
    else:
        assert any(decoded_by(body, digits, t) for t in type_names), f"nobody takes ${body}*"


@pytest.mark.parametrize("type_name", sorted(COMMAND_DEVICES))
def test_the_device_files_worked_examples_check_and_decode(type_name):
    text = (DEVICE_DIR / f"{type_name}.toml").read_text()
    comments = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    found = examples(comments)
    for body, digits in found:
        check_example(body, digits, [type_name])
    # an example for every protocol the device acts on (PYDEV and PYDEP it only counts)
    dtype = load_device_type(type_name)
    acted_on = [p for p in dtype.settings["protocols"] if p not in ("PYDEV", "PYDEP")]
    shown = {b.split(",")[0][-5 if b.startswith("P") else -3 :] for b, _ in found}
    assert set(acted_on) <= shown, (type_name, acted_on, shown)
    if type_name == "frontseat":  # iM200's form, a bare '*', and one with its checksum
        assert {d is None for b, d in found if b.startswith("PYDIR")} == {True, False}


def test_the_controller_bus_guides_examples_check_and_decode():
    section = (DEVICE_DIR.parent / "docs" / "controller-bus.md").read_text()
    found = examples(section)
    for body, digits in found:
        check_example(body, digits, sorted(COMMAND_DEVICES))
    # every row of the table has one, and so has the feedback
    kinds = {b.split(",")[0] for b, _ in found}
    assert {"RCTRC", "RCPRC", "RCROR", "PHLDC", "PHLDT", "PYDIR"} <= kinds
    assert {"RCTRD", "RCRPM", "RCRSA", "RCXDR"} <= kinds


# --- arbiter ------------------------------------------------------------------------------
def arrays(profile: str, angles_deg: tuple[float, float] = (0.0, 0.0)):
    v = vessel(profile)
    cmd = np.zeros(v.n_act * L.S_SIZE)
    state = np.zeros(v.n_act * L.S_SIZE)
    for a in v.actuators:
        cmd[a.index * L.S_SIZE : (a.index + 1) * L.S_SIZE] = a.initial
        state[a.index * L.S_SIZE : (a.index + 1) * L.S_SIZE] = a.initial
    for i, angle in enumerate(angles_deg):
        state[i * L.S_SIZE + L.S_ANGLE] = math.radians(angle)
    return v.actuators, cmd, state


def triple(cmd: np.ndarray, i: int) -> tuple[float, float, float]:
    base = i * L.S_SIZE
    speed = float(cmd[base + L.S_SPEED])
    angle_deg = math.degrees(cmd[base + L.S_ANGLE])
    return (speed, angle_deg, float(cmd[base + L.S_DEFLECTOR]))


def test_arbiter_most_recent_source_owns_and_a_safe_state_touches_only_its_own():
    specs, cmd, state = arrays("odin", angles_deg=(5.0, 7.0))
    port, stbd = index("odin", "port"), index("odin", "starboard")
    arb = Arbiter(specs, cmd, state)
    both = (Demand(port, 1500.0, 10.0 * DEG, 1.0), Demand(stbd, 1500.0, 10.0 * DEG, 1.0))
    arb.apply(ActuatorCommand("primary", 1.0, both))
    arb.apply(ActuatorCommand("backup", 1.1, (Demand(stbd, 1000.0, -5.0 * DEG, 0.5),)))
    assert triple(cmd, port) == pytest.approx((1500.0, 10.0, 1.0))
    assert triple(cmd, stbd) == pytest.approx((1000.0, -5.0, 0.5))
    # primary goes silent: its port jet to idle and neutral, the nozzle held where it is
    arb.apply(SafeState("primary", 2.0, centre_angles=False))
    assert triple(cmd, port) == pytest.approx((ODIN_IDLE, 5.0, 0.0))
    assert triple(cmd, stbd) == pytest.approx((1000.0, -5.0, 0.5))
    # a part left out stays as it was
    arb.apply(ActuatorCommand("backup", 2.1, (Demand(stbd, speed=1800.0),)))
    assert triple(cmd, stbd) == pytest.approx((1800.0, -5.0, 0.5))
    arb.apply(SafeState("backup", 3.0, centre_angles=True))
    assert triple(cmd, stbd) == pytest.approx((ODIN_IDLE, 0.0, 0.0))
    assert triple(cmd, port) == pytest.approx((ODIN_IDLE, 5.0, 0.0))
    assert (arb.commands, arb.safe_states) == (3, 2)
    # a source that commands nothing changes nothing
    before = cmd.copy()
    arb.apply(SafeState("nobody", 4.0, centre_angles=True))
    assert np.array_equal(cmd, before)


def test_arbiter_safe_state_of_thrusters():
    specs, cmd, state = arrays("wamv", angles_deg=(-30.0, 20.0))
    port, stbd = index("wamv", "port"), index("wamv", "starboard")
    arb = Arbiter(specs, cmd, state)
    arb.apply(ActuatorCommand("a", 0.0, (Demand(port, 0.8, 45.0 * DEG), Demand(stbd, -0.3))))
    arb.apply(SafeState("a", 1.0, centre_angles=False))
    # zero thrust; azimuths held at their actual angles; no deflector to touch (stays 1)
    assert triple(cmd, port) == pytest.approx((0.0, -30.0, 1.0))
    # a never commanded the starboard azimuth: its command stays where it was (0)
    assert triple(cmd, stbd) == pytest.approx((0.0, 0.0, 1.0))
    specs, cmd, state = arrays("otter", angles_deg=(0.0, 0.0))
    arb = Arbiter(specs, cmd, state)
    arb.apply(ActuatorCommand("a", 0.0, (Demand(0, -500.0), Demand(1, 900.0))))
    arb.apply(SafeState("a", 1.0, centre_angles=True))
    assert triple(cmd, 0) == pytest.approx((0.0, 0.0, 1.0))
    assert triple(cmd, 1) == pytest.approx((0.0, 0.0, 1.0))


# --- feedback -----------------------------------------------------------------------------
def state_array(profile: str, values: dict[str, tuple[float, float, float]]) -> np.ndarray:
    """Actuator states (speed, angle [deg], deflector) by actuator name."""
    state = np.zeros(vessel(profile).n_act * L.S_SIZE)
    for name, (speed, angle_deg, deflector) in values.items():
        base = index(profile, name) * L.S_SIZE
        state[base + L.S_SPEED] = speed
        state[base + L.S_ANGLE] = math.radians(angle_deg)
        state[base + L.S_DEFLECTOR] = deflector
    return state


def parsed(lines: list[bytes]) -> dict[str, list]:
    out: dict[str, list] = {}
    for line in lines:
        assert line.endswith(b"\r\n") and len(line) <= 82, line
        msg = pynmea2.parse(line.decode("ascii").strip(), check=True)
        assert msg.talker == "RC"
        out.setdefault(msg.sentence_type, []).append(msg)
    return out


def test_jet_feedback_reports_the_state():
    dev = device("odin")
    state = state_array("odin", {"port": (1234.5, -12.3, -0.5), "starboard": (1800.0, 20.0, 1.0)})
    out = parsed(dev.feedback(state, True))
    assert sorted(out) == ["RPM", "RSA", "TRD", "XDR"]
    trd = {m.number: (m.rpm, m.rpm_mode, m.pitch, m.pitch_mode) for m in out["TRD"]}
    assert trd == {1: (1800.0, "R", 100.0, "P"), 2: (1234.5, "R", -50.0, "P")}
    # thruster 1 starboard: a nozzle 20 deg to starboard thrusts towards 340 deg
    azimuth = {m.number: m.azimuth for m in out["TRD"]}
    assert azimuth == {1: pytest.approx(340.0), 2: pytest.approx(12.3)}
    rpm = {m.engine_no: (m.source, m.speed, float(m.pitch), m.status) for m in out["RPM"]}
    assert rpm == {1: ("E", 1800.0, 100.0, "A"), 2: ("E", 1234.5, -50.0, "A")}
    (rsa,) = out["RSA"]
    assert (float(rsa.rsa_starboard), rsa.rsa_starboard_status) == (20.0, "A")
    assert (float(rsa.rsa_port), rsa.rsa_port_status) == (-12.3, "A")
    (xdr,) = out["XDR"]
    groups = [xdr.data[i : i + 4] for i in range(0, len(xdr.data), 4)]
    assert sorted(groups) == [
        ["G", "-50.0", "P", "DEFLECTOR_2"],
        ["G", "100.0", "P", "DEFLECTOR_1"],
    ]


def test_feedback_marks_invalid_data_with_v():
    dev = device("odin")
    state = state_array("odin", {"port": (1000.0, 0.0, 0.0), "starboard": (1000.0, 0.0, 0.0)})
    out = parsed(dev.feedback(state, False))
    assert {(m.rpm_mode, m.pitch_mode) for m in out["TRD"]} == {("V", "V")}
    assert {m.status for m in out["RPM"]} == {"V"}
    out = parsed(device("wamv").feedback(state_array("wamv", {}), False))
    assert {(m.rpm_mode, m.pitch_mode) for m in out["TRD"]} == {("V", "V")}


def test_feedback_is_invalid_while_the_watchdog_is_tripped():
    dev = device("otter")
    actuators = state_array("otter", {"port": (100.0, 0.0, 1.0), "starboard": (100.0, 0.0, 1.0)})
    truth = Truth(
        0.0, datetime(2026, 6, 1, tzinfo=UTC), np.zeros(6), np.zeros(6), actuators=actuators
    )
    dev.receive(inbound(nmea("RCTRC,0,10.0,P,,V,,B,C"), 0.0))
    assert {m.status for m in parsed(dev.sample(truth))["RPM"]} == {"A"}
    dev.poll(1.0)
    assert {m.status for m in parsed(dev.sample(truth))["RPM"]} == {"V"}
    assert dev.stats.epochs == 2 and dev.stats.sentences == 8


def test_thruster_feedback_reports_the_state():
    dev = device("wamv")
    state = state_array("wamv", {"port": (-0.25, -12.3, 1.0), "starboard": (0.5, 20.0, 1.0)})
    out = parsed(dev.feedback(state, True))
    assert sorted(out) == ["RSA", "TRD"]  # no rev/min to report, no deflector
    trd = {m.number: m for m in out["TRD"]}
    assert (trd[1].rpm, trd[1].rpm_mode, trd[1].pitch, trd[1].pitch_mode) == (50.0, "P", None, "V")
    assert trd[1].azimuth == pytest.approx(20.0)  # the direction of thrust itself
    assert (trd[2].rpm, trd[2].rpm_mode) == (-25.0, "P")
    assert trd[2].azimuth == pytest.approx(347.7)
    (rsa,) = out["RSA"]  # as rudder angles: thrust to starboard turns the bow to port
    assert float(rsa.rsa_starboard) == -20.0 and float(rsa.rsa_port) == 12.3

    dev = device("otter")
    state = state_array("otter", {"port": (-500.0, 0.0, 1.0), "starboard": (900.0, 0.0, 1.0)})
    out = parsed(dev.feedback(state, True))
    assert sorted(out) == ["RPM", "TRD"]  # nothing steers
    assert {m.number: (m.rpm, m.rpm_mode, m.azimuth) for m in out["TRD"]} == {
        1: (900.0, "R", None),
        2: (-500.0, "R", None),
    }
    assert {m.engine_no: (m.source, m.speed, m.status) for m in out["RPM"]} == {
        1: ("S", 900.0, "A"),
        2: ("S", -500.0, "A"),
    }


def test_feedback_follows_the_numbering():
    dev = device("odin", numbering={"1": "port", "2": "starboard"})
    state = state_array("odin", {"port": (700.0, 0.0, 0.0), "starboard": (1900.0, 0.0, 0.0)})
    out = parsed(dev.feedback(state, True))
    assert {m.number: m.rpm for m in out["TRD"]} == {1: 700.0, 2: 1900.0}
    assert {m.engine_no: m.speed for m in out["RPM"]} == {1: 700.0, 2: 1900.0}


@pytest.mark.parametrize("profile", ["odin", "jolner", "otter", "wamv"])
def test_feedback_fits_82_characters_at_the_extremes(profile):
    dev = device(profile)
    v = vessel(profile)
    for sign in (-1.0, 1.0):
        state = np.zeros(v.n_act * L.S_SIZE)
        for a in v.actuators:
            base = a.index * L.S_SIZE
            state[base + L.S_SPEED] = sign * (max(abs(x) for x in a.speed_range) + 0.05)
            state[base + L.S_ANGLE] = sign * math.radians(179.96)
            state[base + L.S_DEFLECTOR] = sign * 1.0
        for valid in (True, False):
            lines = dev.feedback(state, valid)
            assert lines
            parsed(lines)


# --- settings -----------------------------------------------------------------------------
def problems(type_name: str, profile: str, **settings) -> dict[str, SettingError]:
    dtype = load_device_type(type_name)
    found = dtype.model.check(device_config(type_name, **settings), vessel(profile))
    assert all(isinstance(p, SettingError) for p in found)
    return {p.key: p for p in found}


def test_default_settings_fit_their_vessels():
    assert problems("jet-controller", "odin") == {}
    for profile in ("jolner", "otter", "wamv"):
        assert problems("thruster-controller", profile) == {}


def test_settings_problems_name_the_key():
    assert set(problems("jet-controller", "odin", protocols=["TRC", "NMEA2000"])) == {"protocols"}
    assert set(problems("jet-controller", "odin", protocols=[])) == {"protocols"}
    assert set(problems("jet-controller", "odin", protocols="TRC")) == {"protocols"}
    assert set(problems("jet-controller", "odin", protocols=["PHLDT"])) == {"protocols"}
    assert set(problems("thruster-controller", "wamv", protocols=["PHLDC"])) == {"protocols"}
    # a steering line alone sends no neutral command: it cannot end a trip that waits for one
    assert set(problems("thruster-controller", "wamv", protocols=["ROR"])) == {"protocols"}
    assert problems("thruster-controller", "wamv", protocols=["ROR"], release="next-command") == {}
    assert set(
        problems(
            "thruster-controller",
            "wamv",
            protocols=["ROR"],
            release="next-command",
            neutral_first=True,
        )
    ) == {"protocols"}
    found = problems("jet-controller", "odin", numbering={"1": "starboard", "2": "bow"})
    assert set(found) == {"numbering.2"}
    assert "port" in found["numbering.2"].expected and found["numbering.2"].value == "bow"
    assert "numbering.0" in problems("jet-controller", "odin", numbering={"0": "port"})
    assert "numbering" in problems("jet-controller", "odin", numbering={"1": "port", "2": "port"})
    assert "numbering" in problems("jet-controller", "odin", numbering={})
    assert set(problems("jet-controller", "odin", out_of_range="wrap")) == {"out_of_range"}
    assert set(problems("jet-controller", "odin", checksum="maybe")) == {"checksum"}
    assert set(problems("jet-controller", "odin", on_timeout_angle="swing")) == {"on_timeout_angle"}
    found = problems("frontseat", "otter", release="on-reconnect")
    assert set(found) == {"release"} and found["release"].value == "on-reconnect"
    assert found["release"].expected == "one of neutral, next-command"
    assert set(problems("frontseat", "otter", checksum="unchecked")) == set()
    for timeout in (0, -1.0, 1.0e5, True, "0.5"):
        assert set(problems("jet-controller", "odin", watchdog_s=timeout)) == {"watchdog_s"}


def test_a_controller_for_the_wrong_kind_of_vessel():
    found = problems("jet-controller", "otter")
    assert set(found) == {"type"}
    assert "thruster-controller" in found["type"].expected
    found = problems("thruster-controller", "odin")
    assert set(found) == {"type"}
    assert "jet-controller" in found["type"].expected
    with pytest.raises(SettingError):
        device("otter", type_name="jet-controller")
    with pytest.raises(SettingError):
        device("odin", numbering={"1": "starboard", "3": "centre"})


def test_arbiter_owns_each_part_so_a_steering_line_that_dies_leaves_the_throttles():
    specs, cmd, state = arrays("odin", angles_deg=(7.0, 7.0))
    port, stbd = index("odin", "port"), index("odin", "starboard")
    arb = Arbiter(specs, cmd, state)
    throttle = tuple(Demand(i, speed=1500.0, deflector=1.0) for i in (port, stbd))
    steering = tuple(Demand(i, angle=10.0 * DEG) for i in (port, stbd))
    arb.apply(ActuatorCommand("throttles", 0.0, throttle))
    arb.apply(ActuatorCommand("helm", 0.1, steering))
    arb.apply(SafeState("helm", 1.0, centre_angles=False))
    # the helm's nozzles hold their actual 7 deg; the engines keep the throttle line's orders
    assert triple(cmd, port) == pytest.approx((1500.0, 7.0, 1.0))
    assert triple(cmd, stbd) == pytest.approx((1500.0, 7.0, 1.0))
    arb.apply(SafeState("throttles", 2.0, centre_angles=True))
    assert triple(cmd, port) == pytest.approx((ODIN_IDLE, 7.0, 0.0))


# --- HSC: the controller's heading reference ------------------------------------------------
def test_hsc_is_a_heading_reference_and_no_command():
    # docs/controller-bus.md's worked example: the XOR of "APHSC,45.0,T,,M" is 0x4F
    assert nmea("APHSC,45.0,T,,M") == b"$APHSC,45.0,T,,M*4F"
    dev = device("odin", name="jets")
    record = dev.receive(inbound(b"$APHSC,45.0,T,,M*4F", 3.0))
    assert record == HeadingReference("jets", 3.0, math.radians(45.0))
    assert dev.stats.references == 1 and dev.stats.commands == 0 and not dev.stats.rejected
    assert dev.last_rejection is None and dev.summary()["references"] == 1
    # a magnetic heading beside it is checked and ignored; 360 is north; a status A is taken
    for body, deg in (
        ("IIHSC,90.0,T,93.2,M", 90.0),
        ("APHSC,360.0,T,,M", 0.0),
        ("APHSC,271.5,T,,M,A", 271.5),
        ("APHSC,10,T,,M,", 10.0),
    ):
        assert dev.receive(inbound(nmea(body), 4.0)).heading == pytest.approx(math.radians(deg))
    # every device takes it: the thrusters' controller and the frontseat (framed as it reads
    # PYDIR: the '*' there, its digits unchecked)
    assert isinstance(device("otter").receive(inbound(nmea("APHSC,1.0,T,,M"))), HeadingReference)
    frontseat = device("otter", "frontseat")
    assert frontseat.receive(inbound(b"$APHSC,1.0,T,,M*")).heading == pytest.approx(DEG)


@pytest.mark.parametrize(
    "line, expected",
    [
        (b"$APHSC,45.0,T,,M*4E", "bad_checksum"),
        (b"$APHSC,45.0,T,,M", "missing_checksum"),
        (nmea("APHSC,45.0,T"), "field_count"),  # the magnetic fields missing
        (nmea("APHSC,45.0,T,,M,A,1"), "field_count"),
        (nmea("APHSC,,T,,M"), "empty"),  # no heading to steer
        (nmea("APHSC,,,93.2,M"), "empty"),  # magnetic only: hild models no variation
        (nmea("APHSC,45.0,T,,M,V"), "empty"),  # marked invalid
        (nmea("APHSC,45.0,M,,M"), "bad_mode"),
        (nmea("APHSC,45.0,,,M"), "bad_mode"),
        (nmea("APHSC,45.0,T,,M,X"), "bad_mode"),
        (nmea("APHSC,north,T,,M"), "bad_number"),
        (nmea("APHSC,45.0,T,x,M"), "bad_number"),
        (nmea("APHSC,360.1,T,,M"), "out_of_range"),
        (nmea("APHSC,-1.0,T,,M"), "out_of_range"),
        (nmea("PXHSC,45.0,T,,M"), "unknown_sentence"),  # proprietary: not IEC's HSC
    ],
)
def test_hsc_refusals_are_counted_as_any_line(line, expected):
    dev = device("odin")
    assert dev.receive(inbound(line, 1.0)) is None
    assert dev.stats.rejected == Counter({expected: 1}) and dev.stats.references == 0


def test_hsc_renews_no_lease_and_does_not_release_a_latch():
    dev = device("odin", name="jets")
    hsc = nmea("APHSC,45.0,T,,M")
    assert dev.receive(inbound(hsc, 1.0)) is not None  # before any command: no lease begins
    assert dev.watchdog.state == WAITING and dev.poll(100.0) is None
    go = nmea("RCTRC,0,1500.0,R,100.0,P,,B,C")
    assert isinstance(dev.receive(inbound(go, 10.0)), ActuatorCommand)
    for t in (10.2, 10.4, 10.5):  # references keep coming, the commands have stopped
        assert isinstance(dev.receive(inbound(hsc, t)), HeadingReference)
    assert dev.poll(10.51) == SafeState("jets", 10.51, False)  # the lease of 10.0 ran out
    # latched: the reference is still taken, and releases nothing; thrust stays refused
    assert isinstance(dev.receive(inbound(hsc, 10.6)), HeadingReference)
    assert dev.watchdog.state == TRIPPED and dev.receive(inbound(go, 10.7)) is None
    assert dev.stats.references == 5 and dev.stats.commands == 1
    assert dev.stats.rejected == Counter(latched=1) and dev.stats.watchdog_trips == 1


def test_a_reference_is_queued_and_the_listeners_hear_an_accepted_line():
    dev = device("odin", name="jets")
    queue = ControlQueue()
    dispatcher = Dispatcher(queue, lambda: 2.0)  # (the simulated time the line came at)
    dispatcher.attach(PORT_URL, dev)
    heard = []
    dispatcher.listeners.append(lambda *args: heard.append(args))
    line = inbound(nmea("APHSC,271.5,T,,M"), 2.0)
    dispatcher.receive(line)
    (record,) = queue.drain()
    assert record == HeadingReference("jets", 2.0, math.radians(271.5))
    assert heard == [("jets", line, None, None)]  # neither a command nor a rejection
    assert "heading_ref" not in dev.summary()  # until the loop applies it
    dev.heading_reference = record  # as the daemon does when it applies the record
    assert dev.summary()["heading_ref"] == pytest.approx(math.radians(271.5))
    # the mirror's bus/<device> payload carries it in radians, with the count
    mirrored = payloads.bus(1.0, datetime(2026, 6, 1, tzinfo=UTC), dev.summary())
    assert mirrored["heading_ref"] == record.heading and mirrored["references"] == 1
