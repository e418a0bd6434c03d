"""The screen (hild/bus/screen.py) against checked_sentence, the decoder's own checks: a line
is well-formed to the screen exactly when decoding would refuse it for no reason of
sentence.MALFORMED (or take it), under every checksum policy."""

from __future__ import annotations

import pytest
from endpoints import nmea_line
from hypothesis import given, settings
from hypothesis import strategies as st

from hild.bus.screen import Screen
from hild.bus.sentence import CHECKSUMS, MALFORMED, Rejected, checked_sentence


def decoder_says_well_formed(line: bytes, checksum: str) -> bool:
    try:
        checked_sentence(line, checksum)
    except Rejected as r:
        return r.reason not in MALFORMED
    return True


# Lines near the rules' edges: sentence-like text from a small alphabet (so that '$', '*',
# ',', hex digits and addresses come up often), real sentences with a digit changed, bytes
# outside ASCII, lines about 80 characters long.
ALPHABET = b"$!*,.0123456789ABCDEFGHPZabcf \x7f\x00\xc3-"
sentence_like = st.binary(max_size=90).map(
    lambda raw: bytes(ALPHABET[b % len(ALPHABET)] for b in raw)
)
real = st.sampled_from(
    [
        nmea_line("RCTRC,0,1500.0,R,100.0,P,,B,C", b""),
        nmea_line("GPHDT,12.3,T", b""),
        nmea_line("PYDIR,10.0,20.0", b""),
        nmea_line("GPGGA,120000.00,5924.6000,N,01028.8000,E,1,12,0.8,1.5,M,40.0,M,,", b""),
    ]
)
edited = st.tuples(real, st.integers(0, 90), st.binary(min_size=1, max_size=1)).map(
    lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + 1 :]
)
prefixed = st.tuples(st.sampled_from([b"$", b"!", b"$GP", b"$RCTRC"]), sentence_like).map(
    lambda t: t[0] + t[1]
)
lines = st.one_of(sentence_like, real, edited, prefixed).map(
    lambda line: line.replace(b"\r", b"").replace(b"\n", b"")
)


@pytest.mark.parametrize("checksum", CHECKSUMS)
@settings(max_examples=1500, deadline=None)
@given(line=lines)
def test_the_screen_agrees_with_the_decoder_line_by_line(checksum, line):
    if not line:
        return  # an empty line is no line (the splitter skips it)
    screen = Screen(checksum)
    assert screen(line) == decoder_says_well_formed(line, checksum), line


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(st.tuples(lines, st.sampled_from([b"\r\n", b"\n", b"\r"])), max_size=12),
    tail=lines,
)
def test_the_screen_finds_the_lines_the_splitter_would(parts, tail):
    # A chunk of lines with every kind of end, and a line not yet ended: the screen finds the
    # well-formed ones among the ended lines, in order, and leaves the unended one.
    data = b"".join(line + end for line, end in parts) + tail.lstrip(b"\r\n")
    good, seen, consumed = Screen("required").lines(data)
    ended = [line for line, _ in parts if line]
    assert seen == len(ended)
    assert good == [line for line in ended if decoder_says_well_formed(line, "required")]
    assert data[consumed:] == tail.lstrip(b"\r\n")


def test_a_datagram_screen_needs_no_line_end():
    screen = Screen("required")
    assert screen.any_line(b"garbage\r\n" + nmea_line("GPHDT,12.3,T", b""))
    assert not screen.any_line(b"garbage\r\n" + nmea_line("GPHDT,12.3,T", b"")[:-1] + b"0")


# A jet controller's screen: TRC and PRC (any talker), PHLDC, and HSC (every command device).
CLAIMED = {"formatters": ("TRC", "PRC", "HSC"), "addresses": ("PHLDC",)}
claimable = st.one_of(
    lines,
    st.sampled_from(
        [
            nmea_line("IITRC,0,1500.0,R,100.0,P,,B,C", b""),
            nmea_line("APHSC,271.5,T,,M", b""),
            nmea_line("PHLDC,0,25.0,-50.0,100.0", b""),
            nmea_line("PHLDT,0,50.0,0.0", b""),  # a thruster command: not this device's
            nmea_line("PTRC,1,2", b""),  # proprietary, ending in TRC: not an approved TRC
            nmea_line("GPHSCX,1", b""),  # six letters: no approved address
            b"$RCTRC*00",
        ]
    ),
)


def claimed_by_a_jet_controller(line: bytes, checksum: str) -> bool:
    """As the bus decides (hild/bus/protocols, reference.py): well-formed (not refused as
    malformed: a missing checksum is not), and an approved TRC, PRC or HSC, or the
    proprietary PHLDC."""
    if not decoder_says_well_formed(line, checksum):
        return False
    address = line[1:].split(b",")[0].split(b"*")[0].decode("ascii")
    approved = len(address) == 5 and not address.startswith("P")
    return (approved and address[2:] in ("TRC", "PRC", "HSC")) or address == "PHLDC"


@pytest.mark.parametrize("checksum", CHECKSUMS)
@settings(max_examples=1500, deadline=None)
@given(line=claimable)
def test_a_ports_screen_passes_only_what_its_devices_claim(checksum, line):
    # A well-formed sentence no device on the port takes (another talker's: a GGA, a thruster
    # command on a jets' port) is of no use to a throttled sender's probe either.
    if not line:
        return
    screen = Screen(checksum, **CLAIMED)
    assert screen(line) == claimed_by_a_jet_controller(line, checksum), line


def test_the_dispatchers_screen_claims_its_devices_protocols_and_hsc():
    from hild.bus.dispatch import Dispatcher
    from hild.control import ControlQueue
    from hild.devices.registry import build_device
    from hild.geodesy import Origin
    from hild.profiles.vessel import load_profile
    from hild.sensors.device import DeviceConfig

    config = DeviceConfig(name="jets", type="jet-controller", model="jet-controller",
                          talker="RC", rate_hz=1.0, baud=4800, sentences=("TRD",),
                          lever_arm=(0.0, 0.0, 0.0), ports=("udp://127.0.0.1:9",),
                          settings={"protocols": ["TRC", "PHLDC"]})  # fmt: skip
    jets = build_device(config, 0, Origin(59.41, 10.48), load_profile("odin"))
    dispatcher = Dispatcher(ControlQueue(), lambda: 0.0)
    dispatcher.attach("udp://jets", jets)
    screen = dispatcher.screen("udp://jets")
    assert screen(nmea_line("IITRC,0,1500.0,R,100.0,P,,B,C", b""))
    assert screen(nmea_line("PHLDC,0,25.0,-50.0,100.0", b""))
    assert screen(nmea_line("APHSC,271.5,T,,M", b""))
    assert not screen(nmea_line("RCPRC,50.0,A,1500.0,R,,0", b""))  # not among its protocols
    assert not screen(nmea_line("GPGGA,120000.00,5924.6,N,01028.8,E,1,12,0.8,1.5,M,40.0,M,,", b""))
