"""One epoch of a device's sentences, built sentence by sentence: one that cannot be encoded
costs only itself.

Every device model (the sensors, the command devices' feedback, the frontseat) builds its
epoch through ``SentenceFailures.build``: a sentence whose builder raises (a value no field
can carry, a bug) is left out, counted under its type for the device's summary and logged at
a rate limit (``device.sentence_failed``); the epoch's other sentences go out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

import structlog

from hild.log import RateLimited

log = structlog.get_logger("hild.nmea")

SentenceBuilder = Callable[[str], list[bytes]]  # a sentence type's lines for this epoch


def build_all(names: Iterable[str], one: SentenceBuilder) -> list[bytes]:
    """Every sentence of ``names``, raising at the first that cannot be encoded (for the
    serial budget's worst case, which must be a whole epoch)."""
    return [line for name in names for line in one(name)]


class SentenceFailures:
    """One device's sentences that could not be encoded, by sentence type."""

    def __init__(self, device: str):
        self.device = device
        self.by_type: Counter[str] = Counter()
        self._log = RateLimited(log, "device.sentence_failed", level="error")

    def build(self, names: Iterable[str], one: SentenceBuilder) -> list[bytes]:
        """The lines of each sentence type in ``names`` that ``one`` can encode, in order."""
        out: list[bytes] = []
        for name in names:
            try:
                out.extend(one(name))
            except Exception as e:  # one sentence's absurd value or bug costs only itself
                self.by_type[name] += 1
                self._log(
                    device=self.device,
                    sentence=name,
                    error=repr(e)[:300],
                    failed=self.by_type[name],
                )
        return out

    def summary(self) -> dict[str, int]:
        """Sentences left out so far, by type (only the types that had any)."""
        return dict(self.by_type)
