"""Framing of received NMEA 0183 lines: checks, checksum, fields, and why a line was refused.

IEC 61162-1: a sentence is ``$`` (or ``!``), an address, comma-separated fields and an
optional ``*hh`` checksum (XOR of the characters between the start and ``*``), at most 82
characters with its ``\\r\\n``. The transport has split lines and stripped terminators.

How a device reads the checksum (its ``checksum`` setting, CHECKSUMS):

- ``"required"``: ``*hh`` must be there and right;
- ``"optional"``: a line may come without ``*hh`` or with a bare ``*``; digits that are there
  are checked;
- ``"unchecked"``: the ``*`` must be there, the digits after it are not checked (none, or
  anything), as the Clearpath Heron's command publisher reads PYDIR (shared/reference/
  protocols.md: it requires the ``*`` but never checks its digits; iM200 sends a bare ``*``).
"""

from __future__ import annotations

import functools
import operator
import re
from dataclasses import dataclass

MAX_LINE_CHARS = 80  # 82 characters with the CR LF the transport stripped
REQUIRED, OPTIONAL, UNCHECKED = "required", "optional", "unchecked"
CHECKSUMS = (REQUIRED, OPTIONAL, UNCHECKED)  # how a device reads the checksum

# Why a line was not a command, in the order the checks run; counters use these names.
REASONS = (
    "overlong",  # more than 82 characters with CR LF
    "non_ascii",  # a byte outside printable ASCII
    "framing",  # no '$' or '!' start, or no valid address
    "missing_checksum",  # no '*hh' where the device requires one (or no '*', unchecked)
    "bad_checksum",  # '*hh' malformed or not the XOR of the sentence
    "unknown_sentence",  # an address none of the device's protocols decodes
    "unsupported",  # a known sentence this device does not act on (e.g. PYDEV)
    "field_count",  # too few or too many fields
    "bad_number",  # a field that should be a number is not
    "bad_mode",  # a mode or status letter that is not allowed
    "not_command",  # a TRC whose status flag is not C
    "unknown_actuator",  # a thruster or engine number with no actuator
    "out_of_range",  # beyond the actuator's limits (device set to refuse), an HSC beyond 360
    "empty",  # a sentence that carries no valid demand at all
    "latched",  # refused while the watchdog is latched: a neutral command is required
)

# The reasons that make a line malformed: not a sentence at all, whoever it was meant for. The
# others are well-formed sentences this device does not take (another talker's on a shared
# bus, a sentence it does not act on, a value beyond range); only malformed lines count
# against a sender (transport/senders.py). A missing checksum is not among them: IEC 61162-1
# lets some talkers leave it out, and a multiplexer forwards such sentences as they are.
MALFORMED = frozenset(("overlong", "non_ascii", "framing", "bad_checksum"))

_ADDRESS = re.compile(rb"[A-Z0-9]{3,8}")
_PRINTABLE = re.compile(rb"[\x20-\x7e]*")
_HEX = b"0123456789ABCDEFabcdef"
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)")


class Rejected(Exception):  # noqa: N818  (a result, not a failure of the program)
    """A line that is not a usable command: ``reason`` is one of REASONS."""

    def __init__(self, reason: str, detail: str = ""):
        assert reason in REASONS, reason
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


@dataclass(frozen=True, slots=True)
class Sentence:
    """A framed sentence: ``address`` such as "RCTRC" or "PHLDC", and its fields as text."""

    address: str
    fields: tuple[str, ...]

    @property
    def kind(self) -> str:
        """The sentence formatter: the last three letters of an approved address ("TRC")."""
        return self.address[-3:]


PARSED_KEPT = 256  # the latest lines parse_sentence remembers (a controller repeats its own)
_parsed: dict[tuple[bytes, str | bool], Sentence] = {}


def parse_sentence(line: bytes, checksum: str | bool = REQUIRED) -> Sentence:
    """``checked_sentence``, remembered for the lines seen last: a controller re-sending its
    command set between fixes sends the same lines many times over."""
    if type(line) is not bytes:  # (a bytearray or view: not a key)
        return checked_sentence(line, checksum)
    key = (line, checksum)
    sentence = _parsed.get(key)
    if sentence is None:
        sentence = checked_sentence(line, checksum)
        if len(_parsed) >= PARSED_KEPT:
            _parsed.clear()
        _parsed[key] = sentence
    return sentence


def checked_sentence(line: bytes, checksum: str | bool = REQUIRED) -> Sentence:
    """Check one received line and split it into address and fields; Rejected if unusable.

    ``checksum`` is one of CHECKSUMS (True and False stand for "required" and "optional"):
    optional lets a sentence come without ``*hh`` or with a bare ``*`` (as MOOS-IvP's iM200
    sends), still verifying a checksum that is present; unchecked wants the ``*`` and reads
    nothing after it.
    """
    if isinstance(checksum, bool):
        checksum = REQUIRED if checksum else OPTIONAL
    if len(line) > MAX_LINE_CHARS:
        raise Rejected("overlong", f"{len(line)} characters")
    if not _PRINTABLE.fullmatch(line):
        raise Rejected("non_ascii")
    if line[:1] not in (b"$", b"!"):
        raise Rejected("framing", "no '$' at the start")
    star = line.rfind(b"*")
    body = line[1:star] if star >= 0 else line[1:]
    if not _ADDRESS.fullmatch(body.split(b",", 1)[0]):
        raise Rejected("framing", "no address after '$'")
    if star >= 0:
        tail = line[star + 1 :]
        if checksum == UNCHECKED or (tail == b"" and checksum == OPTIONAL):
            pass
        elif tail == b"":
            raise Rejected("missing_checksum", "a bare '*' without its two hex digits")
        elif len(tail) != 2 or tail[0] not in _HEX or tail[1] not in _HEX:
            raise Rejected("bad_checksum", f"'*{tail.decode()}' is not two hex digits")
        elif int(tail, 16) != _xor(body):
            raise Rejected("bad_checksum", f"*{tail.decode()}, expected *{_xor(body):02X}")
    elif checksum == UNCHECKED:
        raise Rejected("missing_checksum", "no '*' after the fields")
    elif checksum == REQUIRED:
        raise Rejected("missing_checksum")
    text = body.decode("ascii")
    address, *fields = text.split(",")
    return Sentence(address, tuple(fields))


def _xor(body: bytes) -> int:
    return functools.reduce(operator.xor, body, 0)


def number(text: str, name: str) -> float | None:
    """A decimal field as a float; None when empty; Rejected("bad_number") otherwise.

    Plain decimals only: no exponents, no "nan" or "inf", which float() would accept.
    """
    if text == "":
        return None
    if not _NUMBER.fullmatch(text):
        raise Rejected("bad_number", f"{name} = {text!r}")
    return float(text)


def integer(text: str, name: str) -> int:
    """A non-negative integer field such as a thruster number; Rejected when absent or bad."""
    if not text.isascii() or not text.isdigit():
        raise Rejected("bad_number", f"{name} = {text!r}")
    return int(text)


def expect_fields(sentence: Sentence, *counts: int) -> None:
    """Rejected("field_count") unless the sentence has one of ``counts`` fields."""
    if len(sentence.fields) not in counts:
        want = " or ".join(str(c) for c in counts)
        raise Rejected("field_count", f"{sentence.address}: {len(sentence.fields)}, not {want}")
