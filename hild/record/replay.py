"""`hild replay`: a recording's sentences sent to ports again, with their recorded timing.

Each sentence leaves at its recorded time (relative to the first one replayed) divided by
``speed``, against absolute deadlines on the monotonic clock, so that delays never add up:
not gpsd's gpsfake, which sends its lines with a fixed delay (ecosystem.md "Replay"). Ports
are given by the same URLs as in a bench; a serial line or a paced pty still spreads an
epoch's sentences over the time its baud rate needs (add ``?pace=0`` to a pty for none).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from hild.clock import DeadlineTimer
from hild.config import MISSING, ConfigError
from hild.record import channels
from hild.record.reader import messages
from hild.rundir import DEFAULT_RUN_DIR, STOP_SIGNALS, RunDir, pty_paths_under
from hild.transport import Port, PortSpec, open_port
from hild.transport.url import PortUrlError, parse_port_url

log = structlog.get_logger("hild.replay")

DEFAULT_TARGET = "udp://127.0.0.1:10110"  # where chart plotters and hild's default bench send


@dataclass(frozen=True)
class Sentence:
    offset_s: float  # recorded time since the first sentence replayed [s]
    device: str
    line: bytes  # with its CRLF


@dataclass(frozen=True)
class ReplayPlan:
    """What to send where: each target URL with the devices it gets (empty: all)."""

    file: Path
    targets: tuple[tuple[str, tuple[str, ...]], ...]
    devices: tuple[str, ...] = ()  # only these devices (empty: every device recorded)
    speed: float = 1.0
    loop: bool = False
    start_s: float = 0.0  # from the recording's first sentence
    end_s: float | None = None
    run_dir: Path = field(default=Path(DEFAULT_RUN_DIR))
    wait_s: float = 0.0  # after the ports open, before the first sentence (to connect a reader)


def parse_target(text: str) -> tuple[str, tuple[str, ...]]:
    """``[DEVICE[,DEVICE]=]URL`` -> (URL, devices)."""
    head, sep, tail = text.partition("=")
    if sep and "://" not in head:
        return tail, tuple(d for d in head.split(",") if d)
    return text, ()


def load_sentences(plan: ReplayPlan) -> tuple[list[Sentence], list[str]]:
    """The sentences to replay, in recorded order, and every device the recording has."""
    found: list[tuple[int, str, str]] = []
    for m in messages(plan.file, [channels.SENSORS]):
        found.append((m.log_time_ns, m.topic[len(channels.SENSORS) :], m.payload["sentence"]))
    recorded = sorted({d for _, d, _ in found})
    unknown = [d for d in plan.devices if d not in recorded]
    unknown += [d for _, ds in plan.targets for d in ds if d not in recorded]
    if unknown:
        raise ConfigError(plan.file, "device", unknown[0],
                          "a device of the recording: " + (", ".join(recorded) or "none")
                          )  # fmt: skip
    if not found:
        return [], recorded
    t0 = found[0][0]
    chosen = []
    for t_ns, device, text in found:
        offset = (t_ns - t0) / 1e9
        if plan.devices and device not in plan.devices:
            continue
        if offset < plan.start_s or (plan.end_s is not None and offset > plan.end_s):
            continue
        chosen.append(Sentence(offset, device, text.encode("ascii", "replace") + b"\r\n"))
    if chosen:
        first = chosen[0].offset_s
        chosen = [Sentence(s.offset_s - first, s.device, s.line) for s in chosen]
    return chosen, recorded


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


async def replay(plan: ReplayPlan, on_ready=None) -> dict:
    """Send the plan's sentences; returns counts. Stops at the end (or on a signal)."""
    sentences, _ = load_sentences(plan)
    if not sentences:
        raise ConfigError(plan.file, "", MISSING, "a recording with sentences in the chosen "
                          "devices and times")  # fmt: skip
    targets: list[tuple[PortSpec, set[str]]] = []
    for url, devices in plan.targets:
        try:
            targets.append((parse_port_url(url, plan.run_dir), set(devices)))
        except PortUrlError as e:
            raise ConfigError("--to", "", url, str(e)) from None
    # As `hild run`: pty links go under the run directory only while this process holds it
    # (checked, locked against a daemon or another replay, cleaned of a dead one's links).
    held: contextlib.AbstractContextManager = contextlib.nullcontext()
    if pty_paths_under([spec for spec, _ in targets], plan.run_dir):
        held = RunDir(plan.run_dir)
    with held:
        return await _send(plan, sentences, targets, on_ready)


async def _send(
    plan: ReplayPlan,
    sentences: list[Sentence],
    targets: list[tuple[PortSpec, set[str]]],
    on_ready,
) -> dict:
    """Open the ports, send the sentences at their times, close the ports; returns counts."""
    routes: list[tuple[Port, set[str]]] = [
        (open_port(spec, queue_lines=1024, default_baud=115200), devices)
        for spec, devices in targets
    ]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    sent = 0
    laps = 0
    timer = DeadlineTimer()
    try:
        for port, _ in routes:
            await port.start()
        if on_ready is not None:
            on_ready([port for port, _ in routes])
        if plan.wait_s > 0.0:
            await _sleep_or_stop(stop, plan.wait_s)
        span = sentences[-1].offset_s
        gc.collect()
        gc.freeze()  # as the daemon's loop: no collection pauses between the sentences
        while not stop.is_set():
            start = time.monotonic()
            for s in sentences:
                await timer.sleep_until(start + s.offset_s / plan.speed)
                if stop.is_set():
                    break
                for port, wanted in routes:
                    if not wanted or s.device in wanted:
                        port.send(s.line)
                sent += 1
            laps += 1
            if not plan.loop:
                break
            # the next lap starts one mean sentence interval after the last sentence
            await timer.sleep_until(start + (span + span / max(len(sentences), 1)) / plan.speed)
    finally:
        timer.close()
        for port, _ in routes:
            await port.close()
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
    summary = {"sent": sent, "laps": laps, "span_s": round(sentences[-1].offset_s, 3)}
    log.info("replay.done", **summary)
    return summary
