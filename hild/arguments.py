"""Command-line value types for argparse: one wording for every option of every command.

A bad value stops at argparse (exit 2) with "expected WHAT ..., not 'TEXT'"; nothing that is
not a finite number passes a number type (nan and inf included).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def number(
    what: str, lo: float = 0.0, hi: float = math.inf, low_open: bool = True, note: str = ""
) -> Callable[[str], float]:
    """A finite number above ``lo`` (or from ``lo`` when not ``low_open``) and up to ``hi``;
    ``note`` says why, in the message."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        above = lo < value if low_open else lo <= value
        if not (math.isfinite(value) and above and value <= hi):
            if math.isinf(hi):
                bound = f"> {lo:g}" if low_open else f">= {lo:g}"
            else:
                bound = f"greater than {lo:g} to {hi:g}" if low_open else f"from {lo:g} to {hi:g}"
            why = f" ({note})" if note else ""
            raise argparse.ArgumentTypeError(f"expected {what} {bound}{why}, not {text!r}")
        return value

    return parse


def whole_number(what: str, lo: int) -> Callable[[str], int]:
    """A whole number of at least ``lo``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = lo - 1
        if value < lo:
            raise argparse.ArgumentTypeError(
                f"expected {what}, a whole number >= {lo}, not {text!r}"
            )
        return value

    return parse
