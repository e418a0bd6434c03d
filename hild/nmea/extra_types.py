"""Sentence types pynmea2 (1.19) lacks, registered so that it parses everything hild emits."""

from __future__ import annotations

import pynmea2


class THS(pynmea2.TalkerSentence):
    """THS, true heading and status (NMEA 0183 v3.0+)."""

    fields = (
        ("Heading", "heading", float),
        ("Mode indicator", "mode"),  # A autonomous, E estimated, M manual, S simulator, V invalid
    )
