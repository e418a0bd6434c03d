"""`hild replay`: a recording's sentences sent to ports again, with their recorded timing.

Each sentence leaves at its recorded time (relative to the first one replayed) divided by
``speed``, against absolute deadlines on the monotonic clock, so that delays never add up:
not gpsd's gpsfake, which sends its lines with a fixed delay (ecosystem.md "Replay"). Ports
are given by the same URLs as in a bench; a serial line or a paced pty still spreads an
epoch's sentences over the time its baud rate needs (add ``?pace=0`` to a pty for none).

What goes where: ``--to DEVICE,...=URL`` sends those devices' lines; ``--to URL`` alone sends
what the recorded run sent to that port (the devices whose ports, in the recording's ``ports``
metadata, have its address: scheme, host, port, path; the options do not count), so a jet
controller's feedback that went to the controller's port never reaches the sensors' port; a
URL no recorded device used is refused. ``--all`` sends every line to every ``--to URL``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import time
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

import structlog

from hild.clock import DeadlineTimer
from hild.config import MISSING, ConfigError
from hild.heap import frozen_heap
from hild.record import channels
from hild.record.reader import head, inspect, messages
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
    send_all: bool = False  # a URL without devices gets every line, not what went to its port


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
        raise ConfigError(
            plan.file,
            "device",
            unknown[0],
            "a device of the recording: " + (", ".join(recorded) or "none"),
        )
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


def _address(url: str, run_dir: Path) -> tuple | str:
    """What makes two URLs the same place to send to: scheme, host, port, path (a pty's under
    ``run_dir``) and whether it listens (a recorded ``?listen=1`` port answered its senders:
    a plain URL to that address is a command port, never where its lines went); not the other
    options (a replay may add ?pace=0). The text if it does not parse."""
    try:
        spec = parse_port_url(url, run_dir)
    except PortUrlError:
        return url
    return (spec.scheme, spec.host, spec.port, spec.path, spec.option("listen") == "1")


def recorded_ports(file: Path) -> dict[str, tuple[str, ...]] | None:
    """Each recorded device's port URLs: the ``ports`` metadata record, or (a recording made
    before hild wrote it) the ``[[device]]`` tables of the bench text it holds; None if it says
    neither."""
    metadata = head(file).metadata
    if channels.PORTS in metadata:
        found = {}
        for device, text in metadata[channels.PORTS].items():
            try:
                urls = json.loads(text)
            except ValueError:
                urls = [text]
            found[device] = tuple(str(u) for u in urls) if isinstance(urls, list) else (text,)
        return found
    try:
        bench = tomllib.loads(metadata.get("bench", {}).get("text", ""))
    except tomllib.TOMLDecodeError:
        return None
    tables = bench.get("device")
    if not isinstance(tables, list) or not tables:
        return None
    found = {}
    for table in tables:
        if isinstance(table, dict) and isinstance(table.get("name"), str):
            urls = table.get("ports", [table.get("port")])
            if not isinstance(urls, list):
                urls = []
            found[table["name"]] = tuple(u for u in urls if isinstance(u, str))
    return found or None


def resolve_targets(plan: ReplayPlan) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The plan's targets with each bare URL given the devices whose lines went to it (left
    empty, every device, with ``send_all``); a URL no recorded device used is refused."""
    if plan.send_all or all(devices for _, devices in plan.targets):
        return plan.targets
    ports = recorded_ports(plan.file)
    resolved = []
    for url, devices in plan.targets:
        if not devices:
            where = _address(url, plan.run_dir)
            devices = tuple(
                d
                for d, urls in (ports or {}).items()
                if any(_address(u, plan.run_dir) == where for u in urls)
            )
            if not devices:
                raise ConfigError(plan.file, "--to", url, _unused_port(plan, ports))
        resolved.append((url, devices))
    return tuple(resolved)


def _unused_port(plan: ReplayPlan, ports: dict[str, tuple[str, ...]] | None) -> str:
    """What a refused bare --to URL should have been, and what to do instead."""
    instead = (
        "; to send lines there all the same, name the devices (--to DEVICE,...=URL) or "
        "add --all for every line"
    )
    if ports is None:
        devices = sorted(
            t[len(channels.SENSORS) :]
            for t in inspect(plan.file).channels
            if t.startswith(channels.SENSORS)
        )
        return (
            "a port of a recorded device, but the recording does not say which ports its "
            f"devices ({', '.join(devices) or 'none'}) sent to" + instead
        )
    listing = "; ".join(f"{d}: {', '.join(urls) or 'no port'}" for d, urls in ports.items())
    return f"a port a recorded device sent its lines to ({listing})" + instead


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


async def replay(plan: ReplayPlan, on_ready=None) -> dict:
    """Send the plan's sentences; returns counts. Stops at the end (or on a signal)."""
    resolved = resolve_targets(plan)
    # (the devices named are checked against the file; every device keeps the recording's
    # timeline, as with DEVICE=URL: a loop's lap is the recording's, whatever goes where)
    sentences, _ = load_sentences(plan)
    plan = replace(plan, targets=resolved)
    if not sentences:
        raise ConfigError(
            plan.file, "", MISSING, "a recording with sentences in the chosen devices and times"
        )
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
    ports_of = {
        device: [port for port, wanted in routes if not wanted or device in wanted]
        for device in {s.device for s in sentences}
    }
    sent = 0
    laps = 0
    timer = DeadlineTimer()
    try:
        gc.collect()  # as the daemon: before the ports open, not once a client is told to read
        for port, _ in routes:
            await port.start()
        if on_ready is not None:
            on_ready([port for port, _ in routes])
        if plan.wait_s > 0.0:
            await _sleep_or_stop(stop, plan.wait_s)
        span = sentences[-1].offset_s
        with frozen_heap():  # as the daemon's loop: no collection pauses between the sentences
            while not stop.is_set():
                start = time.monotonic()
                for s in sentences:
                    await timer.sleep_until(start + s.offset_s / plan.speed)
                    if stop.is_set():
                        break
                    routed = ports_of[s.device]
                    for port in routed:
                        port.send(s.line)
                    sent += bool(routed)  # a line that goes to no port is not counted as sent
                else:
                    laps += 1  # a whole lap: not one a signal cut short
                if stop.is_set() or not plan.loop:
                    break
                # the next lap starts one mean sentence interval after the last sentence
                lap_s = (span + span / max(len(sentences), 1)) / plan.speed
                await timer.sleep_until(start + lap_s)
    finally:
        timer.close()
        for port, _ in routes:
            await port.close()
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
    summary = {"sent": sent, "laps": laps, "span_s": round(sentences[-1].offset_s, 3)}
    log.info("replay.done", **summary)
    return summary
