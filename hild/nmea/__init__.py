"""NMEA 0183 sentence encoding (and, with pynmea2, decoding in tests and the bus)."""

from hild.nmea import extra_types  # noqa: F401  (registers THS with pynmea2)
from hild.nmea.encode import MAX_SENTENCE_CHARS, SentenceTooLongError, checksum, frame

__all__ = ["MAX_SENTENCE_CHARS", "SentenceTooLongError", "checksum", "frame"]
