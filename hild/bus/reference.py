"""The controller's heading reference: NMEA 0183 HSC, Heading Steering Command.

An autopilot announces the heading it steers to with HSC; hild records and mirrors it beside
the true heading (it moves no actuator and renews no watchdog lease). Layout, gpsd's "NMEA
Revealed" (www/NMEA.adoc), "HSC - Heading Steering Command":

    $--HSC,x.x,T,x.x,M*hh   1 heading to steer, degrees true; 2 'T'; 3 degrees magnetic; 4 'M'

Its diagram shows a comma before the checksum, and later editions are said to add a status
letter: a fifth field is taken when empty, 'A' (valid) or 'V' (invalid: no reference). hild
models no magnetic variation, so only the true heading is used; the magnetic one is checked
for form and otherwise ignored.
"""

from __future__ import annotations

import math

from hild.bus.sentence import Rejected, Sentence, expect_fields, number

FORMATTER = "HSC"


def is_hsc(sentence: Sentence) -> bool:
    """An approved (talker + HSC) address: proprietary addresses start with P."""
    address = sentence.address
    return len(address) == 5 and address.endswith(FORMATTER) and not address.startswith("P")


def decode_hsc(sentence: Sentence) -> float:
    """The heading to steer [rad, true, 0 .. 2 pi); Rejected when the line carries none."""
    expect_fields(sentence, 4, 5)
    true_text, true_letter, magnetic_text, magnetic_letter = sentence.fields[:4]
    true_deg = number(true_text, "heading true")
    number(magnetic_text, "heading magnetic")
    _letter(true_letter, "T", "true reference")
    _letter(magnetic_letter, "M", "magnetic reference")
    status = sentence.fields[4] if len(sentence.fields) == 5 else ""
    if status not in ("", "A", "V"):
        raise Rejected("bad_mode", f"HSC status {status!r}, expected A or V")
    if status == "V":
        raise Rejected("empty", "HSC marked invalid (status V)")
    if true_deg is None:
        raise Rejected("empty", "no heading to steer in degrees true (hild models no variation)")
    if true_letter != "T":
        raise Rejected("bad_mode", "a true heading needs its 'T'")
    if not 0.0 <= true_deg <= 360.0:
        raise Rejected("out_of_range", f"heading true {true_deg:g}, expected 0 .. 360")
    return math.radians(true_deg) % (2.0 * math.pi)


def _letter(text: str, letter: str, name: str) -> None:
    if text not in ("", letter):
        raise Rejected("bad_mode", f"{name} {text!r}, expected {letter!r}")
