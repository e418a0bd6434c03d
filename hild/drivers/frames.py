"""The frames driver: ArduPilot's SITL owns time. One frame, one step, answered first (the
world answers its links before anything else of the tick); no frame, no step (a paused SITL
pauses the world, and with it every lease and epoch, which run on simulated time)."""

from __future__ import annotations

from collections.abc import Callable

from hild.world.world import Outbox, World


def run_frames(world: World, link, after_tick: Callable[[Outbox], None]) -> None:
    """Step ``world`` once per frame of ``link`` (a PacesFrames device) until it is stopped or
    its duration has passed; ``after_tick`` takes each tick's lines. The run's first frame may
    set the step (its frame_rate: the link queues a StepRate), so the duration is counted in
    steps of the world's step as it is after each tick."""
    duration = world.duration
    while not world.stopped and (duration is None or world.k < round(duration / world.dt)):
        if link.next_frame(world.queue.put, world.k) is None:
            continue
        after_tick(world.tick())
