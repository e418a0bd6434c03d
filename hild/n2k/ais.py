"""An AIS receiver on NMEA 2000: each AIS message it receives as the PGN a transponder puts on
the bus for it (the ``n2k-ais`` device kind).

What it receives is the 0183 receiver's (hild/sensors/ais.py ``Ais``: the ITU-R M.1371
schedule, reception range by class, drop rate, faults, position noise, a fleet's shared data
link); only the output differs. Message 1, 2 or 3 goes on as 129038, 5 as 129794, 18 as 129039,
24 part A as 129809 and part B as 129810. Each PGN carries what the VHF message carried (its
fields at ITU-R M.1371's resolutions: the position to 1/10000 min, SOG to 0.1 kn, COG to 0.1
deg, heading to 1 deg, the rate of turn as its 4.733 sqrt code; texts in the 6-bit alphabet),
in NMEA 2000's units: the same report the 0183 receiver's VDM gives, value for value. The own
ship's reports (VDO) have no counterpart here.

Field layouts, lengths and default priorities from canboat's PGN database (canboat.json 6.2.0,
as @canboat/ts-pgns ships it for canboatjs: each field's Name, BitLength, Resolution and
Signed; the PGN's Priority, Type and Length), field by field in each function's comment. All
five are fast packets. Fields are packed LSB first, one after another (``pack``); "not
available" is all ones (``pgns.unsigned``), the highest positive value for a signed field
(``pgns.signed``); reserved bits are ones and spare bits zeros (canboat's RESERVED and SPARE
field types). Fixed-length strings (canboat's STRING_FIX) are ASCII padded with '@', the AIS
6-bit alphabet's padding, as the VHF message carried them (canboatjs drops trailing '@', ' ',
0x00 and 0xFF alike).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import ClassVar

from hild.geodesy import Origin
from hild.n2k import pgns
from hild.n2k.device import N2kNode, N2kSensor
from hild.sensors.ais import Ais
from hild.sensors.device import DeviceConfig, Measurement
from hild.sensors.truth import Truth
from hild.traffic import ais
from hild.traffic.targets import KNOT, Identity, Target

# canboat.json: Priority 4 for the position reports, 6 for the static data; Type Fast
CLASS_A_POSITION = pgns.Pgn(129038, 4, True, "aisClassAPositionReport")  # 28 bytes
CLASS_B_POSITION = pgns.Pgn(129039, 4, True, "aisClassBPositionReport")  # 27 bytes
CLASS_A_STATIC = pgns.Pgn(129794, 6, True, "aisClassAStaticAndVoyageRelatedData")  # 75
CLASS_B_STATIC_A = pgns.Pgn(129809, 6, True, "aisClassBStaticDataMsg24PartA")  # 27
CLASS_B_STATIC_B = pgns.Pgn(129810, 6, True, "aisClassBStaticDataMsg24PartB")  # 35

# Each AIS message kind (hild/traffic/ais.py ``Due.kinds``) and the PGN that carries it
PGN_OF_KIND: dict[str, pgns.Pgn] = {
    "1": CLASS_A_POSITION,
    "2": CLASS_A_POSITION,
    "3": CLASS_A_POSITION,
    "5": CLASS_A_STATIC,
    "18": CLASS_B_POSITION,
    "24A": CLASS_B_STATIC_A,
    "24B": CLASS_B_STATIC_B,
}
# Each PGN and the AIS message kind a stand-in station's PGN is made of (``payloads``)
KIND_OF_PGN = {"129038": "1", "129039": "18", "129794": "5", "129809": "24A", "129810": "24B"}
POSITION_KINDS = ("1", "2", "3", "18")

# canboat's AIS_TRANSCEIVER lookup: 0 "Channel A VDL reception", 1 "Channel B VDL reception"
TRANSCEIVER = {"A": 0, "B": 1}
PAD = b"@"  # the AIS 6-bit alphabet's 0: the padding of its texts
NOT_AVAILABLE_8 = 0xFF  # Sequence ID: not available (canboat's RangeMax is 252)
GNSS_GPS = ais.EPFD_GPS  # canboat's POSITION_FIX_DEVICE 1 "GPS" (AIS EPFD 1, as message 5 says)
# canboat's AIS_VERSION 2 "ITU-R M.1371-5" (message 5's version indicator 2)
AIS_VERSION = ais.AIS_VERSION


# --- bits ----------------------------------------------------------------------------------
def pack(fields: Iterable[tuple[int, int]]) -> bytes:
    """``(value, bits)`` fields one after another from bit 0 of byte 0, as NMEA 2000 (and
    canboat) lay them out; a negative value is a signed field's two's complement. The fields
    fill a whole number of bytes."""
    value = shift = 0
    for field, bits in fields:
        if field < 0:
            field += 1 << bits
        if not 0 <= field < (1 << bits):
            raise ValueError(f"a field of {bits} bits cannot hold {field}")
        value |= field << shift
        shift += bits
    if shift % 8:
        raise ValueError(f"{shift} bits: not a whole number of bytes")
    return value.to_bytes(shift // 8, "little")


def text(value: str, size: int) -> tuple[int, int]:
    """A STRING_FIX field of ``size`` bytes: the AIS text (upper case, its 6-bit alphabet:
    ``ais.text_field``) in ASCII, padded with '@'."""
    raw = ais.text_field(value, size).encode("ascii").ljust(size, PAD)
    return int.from_bytes(raw, "little"), 8 * size


def _ones(bits: int) -> tuple[int, int]:
    """A reserved field: all ones."""
    return (1 << bits) - 1, bits


# --- what the VHF message carried, in NMEA 2000's units ---------------------------------------
def received_lat(d: ais.Dynamic) -> float | None:
    """The latitude as the message carried it (1/10000 min) [deg]; None: not available."""
    raw = ais.lat_field(d.lat_deg)
    return None if raw == ais.LAT_NOT_AVAILABLE else raw / 600000.0


def received_lon(d: ais.Dynamic) -> float | None:
    raw = ais.lon_field(d.lon_deg)
    return None if raw == ais.LON_NOT_AVAILABLE else raw / 600000.0


def received_sog(d: ais.Dynamic) -> float | None:
    """Speed over ground as the message carried it (0.1 kn) [m/s]."""
    raw = ais.sog_field(d.sog_kn)
    return None if raw == ais.SOG_NOT_AVAILABLE else raw * 0.1 * KNOT


def received_cog(d: ais.Dynamic) -> float | None:
    """Course over ground as the message carried it (0.1 deg) [rad]."""
    raw = ais.cog_field(d.cog_deg)
    return None if raw == ais.COG_NOT_AVAILABLE else math.radians(raw / 10.0)


def received_heading(d: ais.Dynamic) -> float | None:
    """True heading as the message carried it (1 deg) [rad]."""
    raw = ais.heading_field(d.heading_deg)
    return None if raw == ais.HEADING_NOT_AVAILABLE else math.radians(raw)


def received_rot(d: ais.Dynamic) -> float | None:
    """The rate of turn its code says, (code / 4.733)^2 deg/min signed [rad/s]."""
    code = ais.rot_field(d.rot_deg_per_min)
    if code == ais.ROT_NOT_AVAILABLE:
        return None
    return ais.rot_of_code(code) * math.pi / 180.0 / 60.0


def _position_head(message_id: int, mmsi: int, d: ais.Dynamic, channel: str) -> list:
    """What 129038 and 129039 share, up to their Heading (bit 184)."""
    return [
        (message_id, 6),
        (0, 2),  # Repeat Indicator: initial
        (mmsi, 32),
        (pgns.signed(received_lon(d), 1e-7, 32), 32),
        (pgns.signed(received_lat(d), 1e-7, 32), 32),
        (int(d.accurate), 1),
        (0, 1),  # RAIM: not in use
        (ais.second_field(d.second), 6),  # Time Stamp (canboat's TIME_STAMP: 60 n/a)
        (pgns.angle(received_cog(d)), 16),
        (pgns.unsigned(received_sog(d), 0.01, 16), 16),
        (0, 19),  # Communication State (the 0183 receiver's messages carry 0)
        (TRANSCEIVER[channel], 5),
        (pgns.angle(received_heading(d)), 16),
    ]


# --- the PGNs ------------------------------------------------------------------------------
def class_a_position(
    message_id: int, mmsi: int, nav_status: int, d: ais.Dynamic, channel: str
) -> bytes:
    """129038 (28 bytes), messages 1, 2, 3: Message ID 6 bits, Repeat Indicator 2, User ID
    (MMSI) 32, Longitude int32 1e-7 deg, Latitude int32 1e-7 deg, Position Accuracy 1, RAIM
    1, Time Stamp 6 (s; 60 not available), COG uint16 1e-4 rad, SOG uint16 0.01 m/s,
    Communication State 19 (binary), AIS Transceiver information 5 (0 channel A VDL
    reception, 1 channel B), Heading uint16 1e-4 rad, Rate of Turn int16 3.125e-5 rad/s, Nav
    Status 4, Special Maneuver Indicator 2 (0 not available), Reserved 2, Spare 3, Reserved 5,
    Sequence ID 8 (not available)."""
    return pack(
        [
            *_position_head(message_id, mmsi, d, channel),
            (pgns.signed(received_rot(d), 3.125e-5, 16), 16),
            (nav_status & 0xF, 4),
            (ais.MANEUVER_NOT_AVAILABLE, 2),
            _ones(2),
            (0, 3),  # spare
            _ones(5),
            (NOT_AVAILABLE_8, 8),
        ]
    )


def class_b_position(mmsi: int, d: ais.Dynamic, channel: str) -> bytes:
    """129039 (27 bytes), message 18: as 129038 up to Heading uint16 1e-4 rad; then Regional
    Application 8 and Regional Application B 2 (spare), Unit type 1 (1 CS), Integrated Display
    1, DSC 1, Band 1, Can handle Msg 22 1, AIS mode 1 (0 autonomous), AIS communication state
    1 (0 SOTDMA), Reserved 15: the flags as the 0183 receiver's message 18 has them (CS, the
    others 0)."""
    return pack(
        [
            *_position_head(18, mmsi, d, channel),
            (0, 8),
            (0, 2),
            (1, 1),  # Class B "CS"
            (0, 1),
            (0, 1),
            (0, 1),
            (0, 1),
            (0, 1),
            (0, 1),
            _ones(15),
        ]
    )


def _dimensions(ident: Identity) -> list[tuple[int, int]]:
    """Length, Beam, Position reference from Starboard, from Bow: uint16 0.1 m each, from the
    message's A, B, C, D (``ais.dimension``: 9 and 6 bits); not available where A + B (C + D)
    is 0 (ITU-R M.1371: 0 is "not available")."""
    bow, stern = ais.dimension(ident.to_bow, 9), ais.dimension(ident.to_stern, 9)
    port, starboard = ais.dimension(ident.to_port, 6), ais.dimension(ident.to_starboard, 6)
    length = bow + stern or None
    beam = port + starboard or None
    return [
        (pgns.unsigned(length, 0.1, 16), 16),
        (pgns.unsigned(beam, 0.1, 16), 16),
        (pgns.unsigned(starboard if beam else None, 0.1, 16), 16),
        (pgns.unsigned(bow if length else None, 0.1, 16), 16),
    ]


def class_a_static(ident: Identity, channel: str) -> bytes:
    """129794 (75 bytes), message 5: Message ID 6 bits, Repeat Indicator 2, User ID 32, IMO
    number uint32 (not available for 0), Callsign 7 bytes, Name 20 bytes, Type of ship 8,
    Length, Beam, Position reference from Starboard, from Bow (uint16 0.1 m each), ETA Date
    uint16 days, ETA Time uint32 1e-4 s (both not available, as the message's ETA), Draft
    uint16 0.01 m (the message's 0.1 m; not available for 0), Destination 20 bytes, AIS
    version indicator 2 (2: ITU-R M.1371-5), GNSS type 4 (1 GPS), DTE 1 (0 available),
    Reserved 1, AIS Transceiver information 5, Reserved 3."""
    draught = ais.draught_field(ident.draught)
    return pack(
        [
            (5, 6),
            (0, 2),
            (ident.mmsi, 32),
            (pgns.unsigned(ident.imo if ident.imo > 0 else None, 1, 32), 32),
            text(ident.callsign, 7),
            text(ident.name, 20),
            (ident.ship_type & 0xFF, 8),
            *_dimensions(ident),
            (pgns.unsigned(None, 1, 16), 16),
            (pgns.unsigned(None, 1e-4, 32), 32),
            (pgns.unsigned(draught * 0.1 if draught else None, 0.01, 16), 16),
            text(ident.destination, 20),
            (AIS_VERSION, 2),
            (GNSS_GPS, 4),
            (0, 1),
            _ones(1),
            (TRANSCEIVER[channel], 5),
            _ones(3),
        ]
    )


def class_b_static_a(ident: Identity, channel: str) -> bytes:
    """129809 (27 bytes), message 24 part A: Message ID 6 bits, Repeat Indicator 2, User ID
    32, Name 20 bytes, AIS Transceiver information 5, Reserved 3, Sequence ID 8 (not
    available)."""
    return pack(
        [
            (24, 6),
            (0, 2),
            (ident.mmsi, 32),
            text(ident.name, 20),
            (TRANSCEIVER[channel], 5),
            _ones(3),
            (NOT_AVAILABLE_8, 8),
        ]
    )


def class_b_static_b(ident: Identity, channel: str) -> bytes:
    """129810 (35 bytes), message 24 part B: Message ID 6 bits, Repeat Indicator 2, User ID
    32, Type of ship 8, Vendor ID 7 bytes (none, as the 0183 receiver's), Callsign 7 bytes,
    Length, Beam, Position reference from Starboard, from Bow (uint16 0.1 m each), Mothership
    User ID 32 (not available: not an auxiliary craft), Reserved 2, Spare 2, GNSS type 4 (0
    undefined: the message's EPFD bits are 0), AIS Transceiver information 5, Reserved 3,
    Sequence ID 8 (not available)."""
    return pack(
        [
            (24, 6),
            (0, 2),
            (ident.mmsi, 32),
            (ident.ship_type & 0xFF, 8),
            text("", 7),
            text(ident.callsign, 7),
            *_dimensions(ident),
            _ones(32),
            _ones(2),
            (0, 2),
            (0, 4),
            (TRANSCEIVER[channel], 5),
            _ones(3),
            (NOT_AVAILABLE_8, 8),
        ]
    )


def payload(kind: str, ident: Identity, channel: str, d: ais.Dynamic | None) -> bytes:
    """The PGN payload of one AIS message ``kind`` ("1", "3", "5", "18", "24A", "24B"): its
    station's ``ident``, the ``channel`` it came on, a position report's values ``d``."""
    if kind in ("1", "2", "3"):
        assert d is not None
        return class_a_position(int(kind), ident.mmsi, ident.nav_status, d, channel)
    if kind == "18":
        assert d is not None
        return class_b_position(ident.mmsi, d, channel)
    if kind == "5":
        return class_a_static(ident, channel)
    if kind == "24A":
        return class_b_static_a(ident, channel)
    if kind == "24B":
        return class_b_static_b(ident, channel)
    raise ValueError(f"no PGN for AIS message {kind!r}")


# --- the device ----------------------------------------------------------------------------
STAND_IN = Identity(mmsi=999999999, name="")


class N2kAis(N2kSensor, Ais):
    """An AIS receiver (a transponder's receiver) on NMEA 2000: every message it receives, as
    the 0183 ``ais`` device does (hild/sensors/ais.py), sent as its PGN (``PGN_OF_KIND``) by a
    node on the bus (hild/n2k/device.py: its source address and NAME, its address claim at the
    first epoch, YDRAW or Actisense lines). ``sentences`` chooses the PGNs passed on; the
    others' messages are received (range, drop rate, noise) but not sent. The own ship's
    reports (VDO) are not sent: a transponder does not put its own on the bus as AIS PGNs.

    The epoch rate is only how finely the schedule is followed, as for the 0183 receiver;
    each line carries the time of the epoch it is sent at (a gateway's clock)."""

    model = "n2k-ais"
    sentences_available: ClassVar[tuple[str, ...]] = tuple(KIND_OF_PGN)

    def __init__(self, config: DeviceConfig, seed: int, origin: Origin):
        super().__init__(config, seed, origin)
        self._n2k_setup()
        self._utc: datetime | None = None  # the epoch's, for the lines' clock

    def sample(self, truth: Truth) -> list[bytes]:
        self._utc = truth.utc
        return super().sample(truth)

    # --- Ais's output ------------------------------------------------------------------------
    def hears_targets(self) -> bool:
        return any(name in self.config.sentences for name in self.sentences_available)

    def reports_own(self) -> bool:
        return False

    def _message(
        self,
        kind: str,
        ident: Identity,
        channel: str,
        sentence: str,
        dynamic: Callable[[], ais.Dynamic],
    ) -> list[bytes]:
        """One received message as its PGN's lines; a message whose PGN is not among the
        sentences is received (its position drawn: the noise streams and a frozen position
        as with every PGN sent) but not sent; one that cannot be encoded is left out and
        counted under its PGN."""
        pgn, utc = PGN_OF_KIND[kind], self._utc
        name = str(pgn.number)
        assert utc is not None  # (set by ``sample``, which hears every message)

        def build(_name: str) -> list[bytes]:
            d = dynamic() if kind in POSITION_KINDS else None
            if name not in self.config.sentences:
                return []
            return self.node.message(pgn, payload(kind, ident, channel, d), utc)

        return self.failures.build([name], build)

    # --- the bus's budget --------------------------------------------------------------------
    def cadence(self) -> str:
        return f"at ITU-R M.1371 intervals, source {self.node.source}, {self.node.framing}"

    def _load(self, traffic: Sequence[Target]) -> list[tuple[pgns.Pgn, bytes, float]]:
        """Each configured PGN at its worst-case rate [1/s]: every target in range, none
        dropped, at the shortest interval of its class (Class A 2 s, Class B 30 s), its static
        data every 6 min; the targets ``traffic`` made up to ``budget_targets`` with Class A
        stand-ins (as the 0183 receiver's ``bytes_per_s``)."""
        targets = [*traffic, *self.budget_targets[len(traffic) :]]
        n_b = sum(1 for tg in targets if tg.identity.ais_class == "B")
        n_a = len(targets) - n_b
        d = ais.Dynamic(None, None, 0.0, 0.0, None, None, 60, False)
        rates = {
            "1": n_a / ais.shortest_interval("A"),
            "5": n_a / ais.STATIC_INTERVAL_S,
            "18": n_b / ais.shortest_interval("B"),
            "24A": n_b / ais.STATIC_INTERVAL_S,
            "24B": n_b / ais.STATIC_INTERVAL_S,
        }
        return [
            (PGN_OF_KIND[kind], payload(kind, STAND_IN, "A", d), rate)
            for kind, rate in rates.items()
            if rate and str(PGN_OF_KIND[kind].number) in self.config.sentences
        ]

    def bytes_per_s(self, utc: datetime, traffic: Sequence[Target] = ()) -> float:
        """The worst-case load of its lines [bytes/s] (``_load``); each PGN has a fixed
        length, so its lines too."""
        probe = N2kNode(self)  # (its own fast-packet counters: the node's are left alone)
        return sum(
            rate * sum(map(len, probe.message(pgn, data, utc)))
            for pgn, data, rate in self._load(traffic)
        )

    def bus_bits_per_s(self, utc: datetime) -> float:
        """The CAN bits a second its worst-case load (``_load`` of ``budget_targets``) takes."""
        return self.node.bits_per_s(self._load(()))

    # --- the base's measurement API (a stand-in's messages, e.g. for tests) ------------------
    def payloads(
        self, name: str, m: Measurement, utc: datetime, valid: bool
    ) -> list[tuple[pgns.Pgn, bytes]]:
        """PGN ``name`` of a stand-in station with ``m``'s values (the own ship's, ``measure``)."""
        d = ais.Dynamic(
            lat_deg=m["lat"] if valid else None,
            lon_deg=m["lon"] if valid else None,
            sog_kn=m["sog_kn"],
            cog_deg=m["cog"],
            heading_deg=m["heading"],
            rot_deg_per_min=m["rot_deg_per_min"],
            second=utc.second,
            accurate=valid,
        )
        kind = KIND_OF_PGN.get(name)
        if kind is None:
            return []
        return [(PGN_OF_KIND[kind], payload(kind, STAND_IN, "A", d))]
