"""The sentence decoder's GGA and RMC shortcuts read what pynmea2 reads, to the bit.

The oracle is the same decoder with its shortcuts off (``SentenceDecoder(shortcuts=False)``):
every line through pynmea2's parser and its field conversions, code the shortcuts do not
share. Both read the same lines; their readings (floats compared exactly) and their counts of
used, ignored and malformed lines must agree. The lines are hild's own GGA and RMC over the
globe and the day, and those lines with one field at a time replaced by an odd value (empty,
out of range, another shape, what pynmea2 accepts and the shortcut leaves to it).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from hild.nmea import sentences
from hild.nmea.decode import SHORTCUTS, SentenceDecoder
from hild.nmea.encode import checksum

START = datetime(2026, 6, 1, tzinfo=UTC)


def hild_fixes(rng: random.Random, n: int) -> list[str]:
    """GGA and RMC as hild's GPS prints them: anywhere, any time of day, any decimals."""
    lines = []
    for _ in range(n):
        utc = START + timedelta(seconds=rng.uniform(0.0, 86_400.0))
        lat = rng.choice([rng.uniform(-90.0, 90.0), 0.0, 89.999999, -90.0, 59.9])
        lon = rng.choice([rng.uniform(-180.0, 180.0), 0.0, 179.9999999, -180.0, 10.7])
        decimals = rng.randint(4, 8)
        quality = rng.choice([0, 1, 1, 1, 2, 4, 5])
        lines.append(
            sentences.gga(
                "GP",
                utc,
                lat,
                lon,
                quality,
                rng.randint(0, 20),
                rng.uniform(0.5, 5.0),
                rng.uniform(-50.0, 500.0),
                rng.uniform(-100.0, 100.0),
                decimals,
            )
        )
        sog = rng.choice([None, rng.uniform(0.0, 40.0)])
        cog = rng.choice([None, rng.uniform(0.0, 360.0)])
        valid = rng.random() < 0.8
        lines.append(sentences.rmc("GN", utc, valid, lat, lon, sog, cog, decimals=decimals))
    return [line.decode("ascii").strip() for line in lines]


# values a field may take instead of its own: shapes pynmea2 reads (and the shortcut leaves to
# it), shapes it refuses, and values out of range
ODD = [
    "", "0", "1", "9", "10", "x", "-", "A", "V", "N", "S", "E", "W", "n", "NS", " ",
    "235959.999", "240000.00", "235960.00", "236000", "123519.", "1235190", "1235",
    "000000.99999999999999999", "123519.5e1", "12:35:19",
    "9000.0000", "9000.0001", "18000.000", "18000.0001", "5957.1", "57.12", "5957",
    "-5957.1", "5957.1e1", " 5957.1", "05957.123", "1", "nan", "inf", "-inf", "1e3", "1_0",
    "1.5", "-12.25", "+3", ".5", "360.0", "999999.9",
]  # fmt: skip


def reframed(line: str, fields: list[str], rng: random.Random) -> str:
    body = ",".join(fields)
    if rng.random() < 0.05:
        return f"${body}*{(checksum(body) + 1) % 256:02X}"  # a wrong checksum
    if rng.random() < 0.03:
        return f"${body}*{checksum(body):02x}"  # lower-case hex
    return f"${body}*{checksum(body):02X}"


def mutants(lines: list[str], rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        fields = rng.choice(lines)[1:].split("*")[0].split(",")
        for _ in range(rng.choice([1, 1, 1, 2])):
            fields[rng.randrange(1, len(fields))] = rng.choice(ODD)
        if rng.random() < 0.05:
            fields = fields[: rng.randrange(1, len(fields))]  # fields missing
        elif rng.random() < 0.03:
            fields.append(rng.choice(ODD))  # one more
        out.append(reframed(fields[0], fields, rng))
    return out


def shortcut_takes(line: str) -> bool:
    fields = line[1:].split("*")[0].split(",")
    return SHORTCUTS[fields[0][2:]](fields[1:]) is not None


def assert_same_as_pynmea2(lines: list[str]) -> None:
    fast, slow = SentenceDecoder(), SentenceDecoder(shortcuts=False)
    for line in lines:
        assert fast.decode(line) == slow.decode(line), line
    assert (fast.used, fast.ignored, fast.malformed) == (slow.used, slow.ignored, slow.malformed)


def test_hilds_own_fixes_take_the_shortcut_and_read_as_pynmea2_reads_them():
    lines = hild_fixes(random.Random(1), 2500)
    assert all(shortcut_takes(line) for line in lines)
    assert_same_as_pynmea2(lines)
    decoder = SentenceDecoder()
    readings = [decoder.decode(line) for line in lines]
    assert decoder.used == len(lines) and decoder.malformed == 0
    assert sum(r is not None and r.has_position for r in readings) > len(lines) // 2


def test_odd_fields_read_as_pynmea2_reads_them_by_either_path():
    rng = random.Random(2)
    lines = mutants(hild_fixes(rng, 500), rng, 20_000)
    assert_same_as_pynmea2(lines)
    taken = sum(
        line.endswith(f"{checksum(line[1:-3]):02X}") and shortcut_takes(line) for line in lines
    )
    # both paths are exercised: lines the shortcut reads, lines it leaves to pynmea2, and
    # among those, lines pynmea2 reads and lines it counts as malformed
    assert 0.2 * len(lines) < taken < 0.8 * len(lines)
    slow = SentenceDecoder(shortcuts=False)
    left = [line for line in lines if not shortcut_takes(line)]
    for line in left:
        slow.decode(line)
    assert slow.used > 100 and slow.malformed > 1000


def test_a_time_just_short_of_a_second_that_rounds_up_to_one_is_no_time():
    body = "GPGGA,000000.99999999999999999,5957.1,N,01043.1,E,1,08,0.9,1.0,M,2.0,M,,"
    line = f"${body}*{checksum(body):02X}"
    assert not shortcut_takes(line)
    assert_same_as_pynmea2([line])
    assert SentenceDecoder().decode(line) is None
