"""``/fix/<device>``: each fix a position sensor sent, as a ``foxglove.LocationFix``.

What a controller reads, not the truth (``/location`` is the truth, at the recording's rate):
the sensor's noise and its rate, the position its sentence prints (to its decimals), and no
fix while it is faulted out or reports no fix. One fix an epoch: the first GGA, RMC or CPNVG
of the lines a device sent at one instant (a receiver sends GGA and RMC of one fix back to
back). The sentences are read by the same decoder as hild's own pilot's (hild/nmea/decode.py,
pynmea2, checksums required); altitude from GGA (above the ellipsoid: MSL altitude plus geoid
separation), 0 where the sentence has none.

Shared by the recording (its writer thread, off the tick) and the live view.
"""

from __future__ import annotations

from collections.abc import Iterable

from hild.nmea.decode import SentenceDecoder
from hild.record import channels

POSITION_SENTENCES = ("GGA", "RMC", "NVG")  # the formatter's last three letters: $GPGGA, $CPNVG


def reports_fixes(sentences: Iterable[str]) -> bool:
    """Whether a device configured to send ``sentences`` (``GGA``, ``GPGGA``, ...) sends fixes."""
    return any(name[-3:] in POSITION_SENTENCES for name in sentences)


def is_position(sentence: str) -> bool:
    return sentence[3:6] in POSITION_SENTENCES


class FixReader:
    """Sentences as they were sent -> one LocationFix per device and epoch."""

    def __init__(self) -> None:
        self._decoder = SentenceDecoder()
        self._epoch_ns: dict[str, int] = {}  # each device's last epoch with a fix

    def fix(self, device: str, utc_ns: int, sentence: str) -> dict | None:
        """The fix ``sentence`` (sent by ``device`` at ``utc_ns``) reports, or None: not a
        position sentence, no valid fix, or its epoch already has one."""
        if not is_position(sentence) or self._epoch_ns.get(device) == utc_ns:
            return None
        reading = self._decoder.decode(sentence)
        if reading is None or reading.latitude_deg is None or reading.longitude_deg is None:
            return None
        self._epoch_ns[device] = utc_ns
        return channels.location_fix(
            utc_ns,
            reading.latitude_deg,
            reading.longitude_deg,
            reading.height_m or 0.0,
            frame_id=device,
        )
