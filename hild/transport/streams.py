"""How one byte stream's lines fare: a TCP client's, a pty's or a serial line's.

The same defence as a datagram port's senders (senders.py), for a stream: THROTTLE_AFTER
malformed lines in a row (Verdict.MALFORMED: no sentence at all) make the stream throttled,
and a throttled stream's lines must pass the port's screen (hild/bus/screen.py: a compiled
scan of SCREENED_SLICE_BYTES at a time, ~1 ns a byte) before they are decoded (~30 us a line
to decode and refuse): the rest are discarded and counted in ``throttled``. A stream is one
sequence of bytes, so nothing of use in it (a sentence the port's devices take) is lost: a
pty or serial line shared by a controller and a flood of garbage (a megabyte written at
once) is worked through many times faster, the controller's commands in it decoded as
before. A line applied ends the
throttling.

A TCP client is a stream of its own: one that is throttled and has delivered nothing
(no line applied within DELIVERING_S) is also read slowly, one read every PROBE_S (the
kernel and the client hold the rest), so a client that sends only garbage costs next to
nothing; a client whose lines are applied is never slowed.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from hild.log import RateLimited
from hild.transport.budget import SLICE_BYTES
from hild.transport.judging import (
    DELIVERING_S,
    SCREENED_SLICE_BYTES,
    THROTTLE_AFTER,
    Screen,
    Verdict,
)

log = structlog.get_logger("hild.transport")


class StreamGuard:
    """One stream's account: its lines' verdicts, and the screen a throttled stream's lines
    pass (a LineSplitter's ``guard``)."""

    def __init__(self, url: str, screen_of: Callable[[], Screen | None], peer: str | None = None):
        self._url = url  # the port's
        self._screen_of = screen_of  # the port's screen (Port.screen), once it is set
        self._peer = peer
        self.malformed = 0  # malformed lines in a row
        self.delivered_t = -float("inf")  # time.monotonic() its last line was applied
        self._log_throttled = RateLimited(log, "port.stream_throttled")

    @property
    def throttled(self) -> bool:
        return self.malformed >= THROTTLE_AFTER

    def slowed(self, now: float) -> bool:
        """Throttled, and nothing of it applied within DELIVERING_S: read it slowly."""
        return self.throttled and now - self.delivered_t >= DELIVERING_S

    @property
    def screen(self) -> Screen | None:
        """The port's screen while the stream is throttled, else None (every line decoded)."""
        return self._screen_of() if self.malformed >= THROTTLE_AFTER else None

    @property
    def slice_bytes(self) -> int:
        """How much of the stream's input to work through at a time (budget.py): more while
        it is screened, as a screened line costs a tenth of a decoded one."""
        return SCREENED_SLICE_BYTES if self.screen is not None else SLICE_BYTES

    def note(self, verdict: object, t_rx: float) -> None:
        """Note a line's verdict (what on_line answered for it)."""
        if verdict == Verdict.APPLIED:
            self.malformed = 0
            self.delivered_t = t_rx
        elif verdict == Verdict.MALFORMED:
            self.malformed += 1
            if self.malformed == THROTTLE_AFTER:
                self._log_throttled(
                    url=self._url,
                    peer=self._peer,
                    reason=f"{THROTTLE_AFTER} malformed lines in a row; what is malformed "
                    "is screened out unread (the port's `throttled`)",
                )
