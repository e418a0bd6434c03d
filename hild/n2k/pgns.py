"""The PGNs hild's devices send: each a pure function from values in SI units (radians, m/s,
degrees for latitude and longitude) to the message's payload, little-endian as NMEA 2000
packs it; None for a value the device does not have ("data not available": the field's all
ones, or its highest positive value for a signed field, as canboat reads it).

Field layouts, resolutions and default priorities from canboat's PGN database (canboat.json,
`Field`s' BitLength, Resolution and Signed; the PGN's Priority), field by field in each
function's comment. A value is rounded to its resolution and held to the field's range (the
largest value a field can carry below its "not available" codes: canboat's RangeMax).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from datetime import UTC, datetime

TWO_PI = 2.0 * math.pi
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Pgn:
    """What the bus needs of a PGN: its number, default priority, whether it goes as a fast
    packet, and its name (canboat's ``Id``, for messages)."""

    number: int
    priority: int
    fast: bool
    name: str


# canboat.json: the PGNs' default priorities and types (Single / Fast)
SYSTEM_TIME = Pgn(126992, 3, False, "systemTime")
PRODUCT_INFORMATION = Pgn(126996, 6, True, "productInformation")
ADDRESS_CLAIM = Pgn(60928, 6, False, "isoAddressClaim")
ISO_REQUEST = Pgn(59904, 6, False, "isoRequest")
RUDDER = Pgn(127245, 2, False, "rudder")
VESSEL_HEADING = Pgn(127250, 2, False, "vesselHeading")
RATE_OF_TURN = Pgn(127251, 2, False, "rateOfTurn")
ATTITUDE = Pgn(127257, 3, False, "attitude")
MAGNETIC_VARIATION = Pgn(127258, 7, False, "magneticVariation")
ENGINE_RAPID = Pgn(127488, 2, False, "engineParametersRapidUpdate")
ENGINE_DYNAMIC = Pgn(127489, 2, True, "engineParametersDynamic")
SPEED = Pgn(128259, 2, False, "speedWaterReferenced")
POSITION_RAPID = Pgn(129025, 2, False, "positionRapidUpdate")
COG_SOG_RAPID = Pgn(129026, 2, False, "cogSogRapidUpdate")
GNSS_POSITION = Pgn(129029, 3, True, "gnssPositionData")
WIND = Pgn(130306, 2, False, "windData")

BY_NUMBER = {
    p.number: p
    for p in (
        SYSTEM_TIME,
        PRODUCT_INFORMATION,
        ADDRESS_CLAIM,
        ISO_REQUEST,
        RUDDER,
        VESSEL_HEADING,
        RATE_OF_TURN,
        ATTITUDE,
        MAGNETIC_VARIATION,
        ENGINE_RAPID,
        ENGINE_DYNAMIC,
        SPEED,
        POSITION_RAPID,
        COG_SOG_RAPID,
        GNSS_POSITION,
        WIND,
    )
}


# --- fields: a value at a resolution, in a field of so many bits --------------------------
def unsigned(value: float | None, resolution: float, bits: int) -> int:
    """An unsigned field: ``value / resolution`` rounded, held to [0, 2^bits - 3] (the two
    highest codes say "out of range" and "not available"); None: not available (all ones)."""
    top = (1 << bits) - 1
    if value is None or not math.isfinite(value):
        return top
    scaled = value / resolution  # (a huge value over a tiny resolution: infinite)
    if math.isinf(scaled):
        return top - 2 if scaled > 0 else 0
    return min(max(round(scaled), 0), top - 2)


def signed(value: float | None, resolution: float, bits: int) -> int:
    """A signed field, two's complement: held to [-2^(bits-1), 2^(bits-1) - 3]; None: not
    available (the highest positive value, 2^(bits-1) - 1)."""
    top = (1 << (bits - 1)) - 1
    if value is None or not math.isfinite(value):
        return top
    scaled = value / resolution
    if math.isinf(scaled):
        return top - 2 if scaled > 0 else -top - 1
    return min(max(round(scaled), -top - 1), top - 2)


def angle(value: float | None) -> int:
    """An unsigned angle of 1e-4 rad in 16 bits, in [0, 2 pi)."""
    return unsigned(None if value is None else value % TWO_PI, 1e-4, 16)


def signed_angle(value: float | None) -> int:
    """A signed angle of 1e-4 rad in 16 bits, in [-pi, pi]."""
    return signed(None if value is None else math.remainder(value, TWO_PI), 1e-4, 16)


def date_time(utc: datetime) -> tuple[int, int]:
    """Days since 1970-01-01 and tenths of milliseconds since midnight (NMEA 2000's date and
    time fields: 1 day, 0.0001 s)."""
    days = min(max((utc.date() - EPOCH.date()).days, 0), 65533)  # (uint16: to 2149)
    midnight = utc.replace(hour=0, minute=0, second=0, microsecond=0)
    return days, round((utc - midnight).total_seconds() * 10_000) % 864_000_000


# --- the PGNs --------------------------------------------------------------------------------
def position_rapid(lat_deg: float | None, lon_deg: float | None) -> bytes:
    """129025: Latitude int32 1e-7 deg, Longitude int32 1e-7 deg."""
    return struct.pack("<ii", signed(lat_deg, 1e-7, 32), signed(lon_deg, 1e-7, 32))


def cog_sog_rapid(sid: int, cog: float | None, sog: float | None) -> bytes:
    """129026: SID, COG Reference 2 bits (0 true) + 6 reserved, COG uint16 1e-4 rad, SOG uint16
    0.01 m/s, 16 reserved."""
    return struct.pack("<BBHHH", sid, 0xFC, angle(cog), unsigned(sog, 0.01, 16), 0xFFFF)


def gnss_position(
    sid: int,
    utc: datetime,
    lat_deg: float | None,
    lon_deg: float | None,
    altitude: float | None,
    method: int,
    satellites: int,
    hdop: float | None,
    pdop: float | None,
    geoidal_separation: float | None,
) -> bytes:
    """129029 (43 bytes, no reference stations): SID; Date uint16 days; Time uint32 1e-4 s;
    Latitude int64 1e-16 deg; Longitude int64 1e-16 deg; Altitude int64 1e-6 m; GNSS type 4
    bits (0 GPS) + Method 4 bits (0 no fix, 1 GNSS fix, 2 DGNSS ...); Integrity 2 bits (0 no
    checking) + 6 reserved; Number of SVs uint8; HDOP int16 0.01; PDOP int16 0.01; Geoidal
    Separation int32 0.01 m; Reference Stations uint8 (0)."""
    days, time = date_time(utc)
    return struct.pack(
        "<BHIqqqBBBhhiB",
        sid,
        days,
        time,
        signed(lat_deg, 1e-16, 64),
        signed(lon_deg, 1e-16, 64),
        signed(altitude, 1e-6, 64),
        (method & 0xF) << 4,  # GNSS type 0: GPS
        0xFC,  # integrity 0 (no checking), reserved ones
        min(max(satellites, 0), 253),
        signed(hdop, 0.01, 16),
        signed(pdop, 0.01, 16),
        signed(geoidal_separation, 0.01, 32),
        0,
    )


def system_time(sid: int, utc: datetime, source: int = 0) -> bytes:
    """126992: SID, Source 4 bits (0 GPS) + 4 reserved, Date uint16 days, Time uint32 1e-4 s."""
    days, time = date_time(utc)
    return struct.pack("<BBHI", sid, 0xF0 | (source & 0xF), days, time)


def vessel_heading(
    sid: int,
    heading: float | None,
    deviation: float | None = None,
    variation: float | None = None,
    reference: int = 0,
) -> bytes:
    """127250: SID, Heading uint16 1e-4 rad, Deviation int16 1e-4 rad, Variation int16 1e-4
    rad, Reference 2 bits (0 true, 1 magnetic) + 6 reserved."""
    return struct.pack(
        "<BHhhB",
        sid,
        angle(heading),
        signed(deviation, 1e-4, 16),
        signed(variation, 1e-4, 16),
        0xFC | (reference & 0x3),
    )


def rate_of_turn(sid: int, rate: float | None) -> bytes:
    """127251: SID, Rate int32 3.125e-8 rad/s (1/32 of 1e-6), 24 reserved."""
    return struct.pack("<Bi", sid, signed(rate, 3.125e-8, 32)) + b"\xff\xff\xff"


def attitude(sid: int, yaw: float | None, pitch: float | None, roll: float | None) -> bytes:
    """127257: SID, Yaw int16 1e-4 rad, Pitch int16 1e-4 rad, Roll int16 1e-4 rad, 8 reserved.
    Signs as canboat and the plotters read them: pitch positive bow up, roll positive
    starboard down (hild's theta and phi)."""
    return struct.pack(
        "<BhhhB",
        sid,
        signed_angle(yaw),
        signed(pitch, 1e-4, 16),
        signed(roll, 1e-4, 16),
        0xFF,
    )


def magnetic_variation(sid: int, variation: float | None, utc: datetime, source: int) -> bytes:
    """127258: SID, Source 4 bits (0 manual, 1 automatic chart, 2 automatic table, 3 automatic
    calculation, 4 WMM 2000 ...) + 4 reserved, Age of service uint16 days (the date of the
    value), Variation int16 1e-4 rad (east positive), 16 reserved."""
    days, _ = date_time(utc)
    return struct.pack(
        "<BBHhH", sid, 0xF0 | (source & 0xF), days, signed(variation, 1e-4, 16), 0xFFFF
    )


def wind(sid: int, speed: float | None, direction: float | None, reference: int) -> bytes:
    """130306: SID, Wind Speed uint16 0.01 m/s, Wind Angle uint16 1e-4 rad, Reference 3 bits (0
    true ground-referenced to north, 2 apparent, 3 true boat-referenced, 4 true water-
    referenced) + 5 reserved, 16 reserved."""
    return struct.pack(
        "<BHHBH", sid, unsigned(speed, 0.01, 16), angle(direction), 0xF8 | reference, 0xFFFF
    )


def speed(sid: int, water: float | None, ground: float | None = None, kind: int = 0) -> bytes:
    """128259: SID, Speed Water Referenced uint16 0.01 m/s, Speed Ground Referenced uint16
    0.01 m/s, Speed Water Referenced Type uint8 (0 paddle wheel, 1 pitot, 2 doppler, 3
    correlation, 4 electromagnetic), Speed Direction 4 bits (0 forward) + 12 reserved."""
    return struct.pack(
        "<BHHBBB",
        sid,
        unsigned(water, 0.01, 16),
        unsigned(ground, 0.01, 16),
        kind & 0xFF,
        0xF0,
        0xFF,
    )


def address_claim(name: int) -> bytes:
    """60928: the node's 64-bit NAME, little-endian (``iso_name``)."""
    return struct.pack("<Q", name)


def iso_name(
    unique_number: int,
    manufacturer: int,
    device_function: int,
    device_class: int,
    device_instance: int = 0,
    system_instance: int = 0,
    industry_group: int = 4,
    arbitrary_address_capable: bool = True,
) -> int:
    """The ISO 11783 NAME, LSB first: Unique Number 21 bits, Manufacturer Code 11, Device
    Instance Lower 3, Device Instance Upper 5, Device Function 8, 1 spare, Device Class 7,
    System Instance 4, Industry Group 3 (4: marine), Arbitrary Address Capable 1."""
    fields = (
        (unique_number, 21),
        (manufacturer, 11),
        (device_instance & 0x7, 3),
        ((device_instance >> 3) & 0x1F, 5),
        (device_function, 8),
        (0, 1),
        (device_class, 7),
        (system_instance, 4),
        (industry_group, 3),
        (1 if arbitrary_address_capable else 0, 1),
    )
    value, shift = 0, 0
    for field, bits in fields:
        if not 0 <= field < (1 << bits):
            raise ValueError(f"a NAME field of {bits} bits cannot hold {field}")
        value |= field << shift
        shift += bits
    return value


def fixed_string(text: str, size: int) -> bytes:
    """A fixed-length string field: ASCII, padded with 0xFF (unused characters)."""
    raw = text.encode("ascii", "replace")[:size]
    return raw + b"\xff" * (size - len(raw))


def product_information(
    product_code: int,
    model_id: str,
    software_version: str,
    model_version: str,
    serial_code: str,
    nmea2000_version: float = 2.1,
    certification_level: int = 1,
    load_equivalency: int = 1,
) -> bytes:
    """126996 (134 bytes): NMEA 2000 Version uint16 0.001, Product Code uint16, Model ID,
    Software Version Code, Model Version and Model Serial Code each a 32-byte string,
    Certification Level uint8, Load Equivalency uint8 (x 50 mA)."""
    return (
        struct.pack("<HH", round(nmea2000_version * 1000), product_code)
        + fixed_string(model_id, 32)
        + fixed_string(software_version, 32)
        + fixed_string(model_version, 32)
        + fixed_string(serial_code, 32)
        + struct.pack("<BB", certification_level, load_equivalency)
    )


def pgn_field(pgn: int) -> bytes:
    """A PGN field (59904's requested PGN, 59392's acknowledged one): 24 bits little-endian."""
    return struct.pack("<I", pgn & 0xFFFFFF)[:3]


def requested_pgn(payload: bytes) -> int | None:
    """The PGN an ISO request asks for (None for a payload too short to be one)."""
    if len(payload) < 3:
        return None
    return payload[0] | (payload[1] << 8) | (payload[2] << 16)
