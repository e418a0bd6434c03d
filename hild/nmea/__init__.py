"""NMEA 0183 sentences: encoding (encode.py), and reading the sensors' sentences as a
controller does (decode.py, with pynmea2: hild's pilot, a scenario's controller and the
recording's /fix share it)."""

from hild.nmea import extra_types  # noqa: F401  (registers THS with pynmea2)
from hild.nmea.encode import MAX_SENTENCE_CHARS, SentenceTooLongError, checksum, frame

__all__ = ["MAX_SENTENCE_CHARS", "SentenceTooLongError", "checksum", "frame"]
