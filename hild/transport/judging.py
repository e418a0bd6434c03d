"""How a sender's lines are judged: the verdict on each line, and when a sender is throttled.

One home for what the datagram port's senders (senders.py) and the streams (streams.py) share.
"""

from __future__ import annotations

import enum
from typing import Protocol


class Verdict(enum.IntEnum):
    """What a received line was to the devices that read it: on_line's answer, which the
    ports' defences go by. Only malformed input counts against a sender: a well-formed
    sentence no device takes is another talker's on a shared bus, as a real control unit
    ignores the talkers it does not listen to."""

    MALFORMED = -1  # not a sentence: bytes outside ASCII, no framing, bad checksum, overlong
    IGNORED = 0  # a well-formed sentence that no device on the port takes
    APPLIED = 1  # a command or reference taken (or a command a latched watchdog holds)


# Malformed lines in a row before a sender is throttled: noise on a line now and then never
# adds up to eight in a row with nothing well-formed between them.
THROTTLE_AFTER = 8
# A sender stays delivering this long after its last applied line: through a controller's
# pause of a few seconds (a mode change, a reconnect of its own upstream), twenty periods of
# the command watchdog's default lease.
DELIVERING_S = 10.0
PROBE_S = 0.1  # a throttled sender is looked at again this often
SCREENED_SLICE_BYTES = (
    1024  # a throttled stream's input goes through the screen this many at a time
)


class Screen(Protocol):
    """A cheap test of which received lines are well-formed sentences (not Verdict.MALFORMED
    as the port's devices read them), set on a port with its on_line (hild/bus/screen.py)."""

    def lines(self, data: bytes) -> tuple[list[bytes], int, int]:
        """The well-formed lines among data's complete lines, how many lines were seen, and
        how many bytes those took (the rest is a line still to be ended)."""
        ...

    def any_line(self, datagram: bytes) -> bool:
        """Whether a datagram holds a well-formed line (its last line needs no end)."""
        ...
