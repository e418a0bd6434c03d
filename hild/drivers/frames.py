"""The frames driver: ArduPilot's SITL owns time. One frame, one step, answered first (the
world answers its links before anything else of the tick); no frame, no step (a paused SITL
pauses the world, and with it every lease and epoch, which run on simulated time).

A fleet flown by several SITLs (one link per boat) steps when every link's frame for the step
has come: a SITL in lockstep sends its next frame only once it has its answer, so none runs
ahead; one that stops or pauses holds the world, and the others wait for their answers (each
link says when its SITL has been silent a while: ``ardupilot.paused``, with the device's name).
"""

from __future__ import annotations

import select
from collections.abc import Callable, Sequence

from hild.ardupilot.link import POLL_S
from hild.world.world import Outbox, World


def run_frames(world: World, links: Sequence, after_tick: Callable[[Outbox], None]) -> None:
    """Step ``world`` once per frame of its ``links`` (PacesFrames devices; several: once every
    one's has come) until it is stopped or its duration has passed; ``after_tick`` takes each
    tick's lines. The run's first frame may set the step (its frame_rate: the link queues a
    StepRate), so the duration is counted in steps of the world's step after each tick."""
    duration = world.duration
    put = world.queue.put
    if len(links) == 1:
        (link,) = links
        while not world.stopped and (duration is None or world.k < round(duration / world.dt)):
            if link.next_frame(put, world.k) is None:
                continue
            after_tick(world.tick())
        return
    waiting = list(links)
    while not world.stopped and (duration is None or world.k < round(duration / world.dt)):
        select.select([link.socket for link in waiting], [], [], POLL_S)  # (until one comes)
        for link in list(waiting):  # (each looks: a silent one notes its silence)
            if link.next_frame(put, world.k, 0.0) is not None:
                waiting.remove(link)
        if waiting:
            continue
        after_tick(world.tick())
        waiting = list(links)
