"""Where a recorded track breaks: the one rule ``hild plot`` and ``hild export`` draw by.

A reposition or an ArduPilot SITL restart moves the vessel at once, and a track drawn through
it would show a kilometre sailed in a straight line. A piece starts at the largest step within
BREAK_WINDOW_S of each such event (recorded on /control), if it stands out from the other steps
there (twice their median, and a few centimetres more: a change of heading or speed alone moves
nothing), and at every step no vessel sails (faster than JUMP_SPEED_MS). (A request is recorded
as it is answered and applied between two ticks: the moved sample may come just before its
/control message or just after it.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

BREAK_KINDS = ("reposition", "restart")  # /control kinds that move the own ship at once
BREAK_WINDOW_S = 1.0  # a reposition lands within this of its /control message
JUMP_SPEED_MS = 50.0  # ~97 kn between two samples: a vessel moved by hand, not under way
JUMP_SLACK_M = 0.05  # a reposition moving the vessel less than this draws no gap


def track_breaks(t: np.ndarray, steps_m: np.ndarray, events_t: Sequence[float]) -> np.ndarray:
    """Indices of the samples (times ``t`` [s]; ``steps_m[i]`` from sample i to i + 1 [m]) that
    start a new piece of the track, for the break events at ``events_t`` [s]."""
    if len(t) < 2:
        return np.array([], dtype=int)
    dt = np.diff(t)
    jumps = set(
        (np.flatnonzero(steps_m > JUMP_SPEED_MS * np.maximum(dt, 0.0) + JUMP_SLACK_M) + 1).tolist()
    )
    for event_t in events_t:
        near = np.flatnonzero(np.abs(t[1:] - event_t) <= BREAK_WINDOW_S)
        near = near[np.isfinite(steps_m[near])]
        if not len(near):
            continue
        i = int(near[np.argmax(steps_m[near])])
        if steps_m[i] > 2.0 * float(np.median(steps_m[near])) + JUMP_SLACK_M:
            jumps.add(i + 1)
    return np.array(sorted(jumps), dtype=int)
