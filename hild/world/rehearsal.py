"""Before a clock starts: every code path of a tick run once, in a throwaway world, so that the
first tick of the run loads nothing and compiles nothing (numba's kernels, the screen, the
encoders' imports); the run's own state and random streams are untouched."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import structlog

from hild.bench import Bench
from hild.bus.screen import warm_up as warm_screen
from hild.control import SafeState
from hild.kernel_cache import started_cold
from hild.transport.base import Inbound
from hild.world.world import World

log = structlog.get_logger("hild.daemon")


def prepare(bench: Bench) -> None:
    """The warm-up, said in the log (``run.preparing``, with whether the kernels compile now
    or load from the cache, and ``run.prepared``, with how long it took)."""
    started = time.monotonic()
    note = (
        "the first run compiles the vessel model, which takes a while (up to a minute on a "
        "Raspberry Pi; hild warm does it ahead); later runs load it from the cache"
        if started_cold()
        else "loading the compiled vessel model from the cache"
    )
    log.info("run.preparing", note=note)
    warm_up(bench)
    log.info("run.prepared", seconds=round(time.monotonic() - started, 2))


def warm_up(bench: Bench) -> None:
    """One tick of a throwaway world of ``bench``: every device samples, every command device
    decodes its neutral command and applies it and a safe state, the vessel steps."""
    world = World(bench, weather_may_change=True)
    world.links.clear()  # (a link answers its peer's frames: it has nothing to warm)
    world.start_utc = datetime.now(UTC)
    world.first_epoch()
    if world.command_devices:
        warm_screen()  # the throttled senders' screen (hild/bus/screen.py), compiled
    for device in world.command_devices:
        line = Inbound(device.neutral_line(), "warm-up", None, time.monotonic())
        if world.dispatcher.deliver(device, line) is not None:
            world.queue.put(SafeState(device.config.name, 0.0, centre_angles=False))
    world.tick()
