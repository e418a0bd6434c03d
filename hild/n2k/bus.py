"""An NMEA 2000 bus as a bench has it: the N2K devices sharing one port (one gateway, one bus),
their load against the bus's 250 kbit/s, and their source addresses, one each.

The load is reckoned as `hild check` reckons a serial line's bytes: every node's PGNs at their
rates, each frame at its worst-case bit stuffing (hild/n2k/frames.py ``frame_bits``). NMEA 2000
runs at 250 kbit/s (ISO 11783-2's rate); installers keep a bus well below it (a common rule is
under 40-50 % for arbitration to stay prompt), which `hild check` prints but does not enforce:
beyond 100 % the frames cannot all be sent.
"""

from __future__ import annotations

from dataclasses import dataclass

BUS_BITS_PER_S = 250_000  # NMEA 2000's bit rate


@dataclass(frozen=True)
class BusLoad:
    """The bits a second one bus's nodes send, against its bit rate."""

    url: str
    devices: tuple[str, ...]
    bits_per_s: float

    @property
    def load(self) -> float:
        return self.bits_per_s / BUS_BITS_PER_S
