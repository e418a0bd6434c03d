"""The console log's renderer: key=value lines as ever, but ``run.summary`` as a short block.

On a terminal (``--log-format console``) the run's summary is a header line (time, level,
event, why the run ended) and a few indented lines, a quantity each with its unit and one
precision: the time simulated and on the wall, the loop's ticks and overruns, the commands,
each command device and link, the sensors' sentences, the actuators, where the boat (each
boat of a fleet) ended, the traffic's closest approaches, the ports, the recording, the
MQTT mirror, Foxglove and ``hild ctl``. A key it does not know (an observer's new one) gets a
line of its own, its nested dicts flattened to ``a.b=value``. Long lists end in
``(+N more)``. Every other event, and the JSON form, are as they were: this renderer is only
the console's (hild/log.py), and a summary it cannot read is printed as key=value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

import structlog

SUMMARY_EVENT = "run.summary"
HEADER_KEYS = ("timestamp", "level", "event", "reason")
WIDTH = 120  # characters of a line of the block, at most (a path may make one longer)
INDENT = "  "
MIN_LABEL = 10
MAX_LABEL = 16
PORT_PROBLEMS = (
    ("dropped_lines", "dropped"),
    ("errors", "errors"),
    ("refused", "refused"),
    ("overlong_lines", "overlong"),
    ("throttled", "throttled"),
    ("dropped_clients", "clients dropped"),
    ("reopens", "reopens"),
)
MQTT_KEYS = ("published", "dropped", "superseded", "connects", "connected")

Row = tuple[str, str]  # (label, text)
Summary = MutableMapping[str, Any]  # what is left of the summary; each section pops its keys


class ConsoleRenderer:
    """structlog's KeyValueRenderer (timestamp, level and event first), and ``run.summary``
    as the block of ``summary_block``."""

    def __init__(self) -> None:
        self.key_value = structlog.processors.KeyValueRenderer(key_order=list(HEADER_KEYS[:3]))

    def __call__(self, logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> str:
        if event_dict.get("event") == SUMMARY_EVENT:
            try:
                return self.summary_block(logger, method, event_dict)
            except Exception:  # a summary of an unexpected shape: as any other event
                pass
        return self.key_value(logger, method, event_dict)

    def summary_block(self, logger: Any, method: str, event_dict: Mapping[str, Any]) -> str:
        rest = dict(event_dict)
        header = {k: rest.pop(k) for k in HEADER_KEYS if k in rest}
        rows = summary_rows(rest)
        return "\n".join([self.key_value(logger, method, header), *layout(rows)])


def summary_rows(summary: Summary) -> list[Row]:
    """The block's rows, section by section; the keys no section knows, last."""
    rows: list[Row] = []
    for section in SECTIONS:
        rows += section(summary)
    return rows + other_rows(summary)


def layout(rows: list[Row]) -> list[str]:
    """Indented rows, their labels in one column (as wide as the longest, within bounds); a
    row too long for WIDTH goes on at its semicolons on lines of its own."""
    width = min(max([MIN_LABEL, *(len(label) for label, _ in rows)]), MAX_LABEL)
    room = WIDTH - len(INDENT) - max(width, *(len(label) for label, _ in rows)) - 1
    return [
        f"{INDENT}{label if i == 0 else '':<{width}} {part}".rstrip()
        for label, text in rows
        for i, part in enumerate(wrapped(text, room))
    ]


def wrapped(text: str, room: int) -> list[str]:
    """``text`` cut at its semicolons into parts of at most ``room`` characters (where it can)."""
    parts: list[str] = []
    for clause in text.split("; "):
        if parts and len(parts[-1]) + 2 + len(clause) <= room:
            parts[-1] += "; " + clause
        else:
            parts.append(clause)
    return parts


# --- formatting -------------------------------------------------------------------------------
def number(value: Any, digits: int) -> str:
    """A float with ``digits`` decimals; n/a for none (JSON's null) or not finite."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return "n/a"
    return f"{float(value) + 0.0:.{digits}f}"  # (+ 0.0: no "-0.0")


def count(value: Any, noun: str, plural: str | None = None) -> str:
    """``3 ticks``, ``1 tick``."""
    n = int(value) if isinstance(value, int | float) and math.isfinite(value) else 0
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def listing(items: list[str], room: int = WIDTH - MAX_LABEL - len(INDENT) - 1) -> str:
    """Items joined by commas within ``room`` characters, the rest as ``(+N more)``."""
    shown: list[str] = []
    for i, item in enumerate(items):
        more = len(items) - i - 1
        tail = f" (+{more} more)" if more else ""
        if shown and len(", ".join([*shown, item]) + tail) > room:
            return ", ".join(shown) + f" (+{len(items) - i} more)"
        shown.append(item)
    return ", ".join(shown)


def ms_figures(summary: Summary, prefix: str) -> str:
    """``p50 0.04 ms, p99 0.19 ms, max 0.60 ms`` of the keys ``<prefix>_p50_ms``..."""
    return ", ".join(
        f"{p} {number(summary.pop(f'{prefix}_{p}_ms', None), 2)} ms" for p in ("p50", "p99", "max")
    )


def at_path(label: str, path: str, text: str) -> list[Row]:
    """``path: text`` on a row, or when that is too long, the path and the text on two."""
    if len(path) + len(text) + 2 <= WIDTH - MAX_LABEL - len(INDENT) - 1:
        return [(label, f"{path}: {text}")]
    return [(label, path), ("", text)]


def has(summary: Summary, *keys: str) -> bool:
    return any(k in summary for k in keys)


# --- the sections ---------------------------------------------------------------------------
def time_rows(s: Summary) -> list[Row]:
    if not has(s, "t", "loop_wall_s"):
        return []
    t, wall = s.pop("t", None), s.pop("loop_wall_s", None)
    text = f"{number(t, 1)} s simulated in {number(wall, 1)} s wall"
    if isinstance(t, int | float) and isinstance(wall, int | float) and wall > 0:
        text += f" ({number(t / wall, 1)}x real time)"
    if "cpu_percent" in s:
        text += f", cpu {number(s.pop('cpu_percent'), 1)} %"
    return [("time", text)]


def loop_rows(s: Summary) -> list[Row]:
    if not has(s, "ticks", "overruns"):
        return []
    text = f"{count(s.pop('ticks', 0), 'tick')}, {count(s.pop('overruns', 0), 'overrun')}"
    if has(s, "jitter_p50_ms"):
        text += "; jitter " + ms_figures(s, "jitter")
    return [("loop", text)]


def command_rows(s: Summary) -> list[Row]:
    parts = []
    applied = s.get("commands_applied")
    if has(s, "commands_applied", "commands_rejected"):
        applied_now, refused = s.pop("commands_applied", 0), s.pop("commands_rejected", 0)
        parts.append(f"{applied_now} applied, {refused} refused")
    if "control_dropped" in s:
        parts.append(f"{s.pop('control_dropped')} lost to a full queue")
    if "received_lines" in s:
        parts.append(f"{count(s.pop('received_lines'), 'line')} received")
    rows = [("commands", ", ".join(parts))] if parts else []
    latency = "command " + ms_figures(s, "command_latency")  # (popped: no use without commands)
    if applied:
        rows.append(("latency", latency))
    return rows


def device_rows(s: Summary) -> list[Row]:
    devices = s.pop("devices", None)
    if not isinstance(devices, dict):
        return []
    rows: list[Row] = []
    sensors: dict[str, dict] = {}
    for name, d in devices.items():
        if "frames" in d:
            rows.append((name, link_text(d)))
        elif "watchdog" in d and "commands" in d:
            rows += command_device_rows(name, d)
        else:
            sensors[name] = d
    return rows + sensor_rows(sensors)


def link_text(d: Mapping[str, Any]) -> str:
    """An ArduPilot link's frames and answers."""
    counts = ", ".join(
        count(d.get(k, 0), noun, plural)
        for k, noun, plural in (
            ("frames", "frame", None),
            ("commands", "command", None),
            ("lost", "lost", "lost"),
            ("repeated", "repeated", "repeated"),
            ("restarts", "restart", None),
        )
    )
    return counts + "; answer " + ms_figures(dict(d), "answer")


def command_device_rows(name: str, d: Mapping[str, Any]) -> list[Row]:
    """A controller's device: lines, commands, refused, the watchdog; why lines were refused."""
    text = (
        f"{count(d.get('lines', 0), 'line')}, {count(d.get('commands', 0), 'command')}, "
        f"{d.get('rejected_total', 0)} refused, {d.get('clamped', 0)} clamped; "
        f"watchdog {d.get('watchdog')}, {count(d.get('watchdog_trips', 0), 'trip')}"
    )
    if d.get("sentences"):
        text += f"; {count(d['sentences'], 'feedback sentence')}"
    rows = [(name, text)]
    rejected = d.get("rejected") or {}
    if rejected:
        rows.append(("", "refused: " + listing([f"{k} {n}" for k, n in rejected.items()])))
    return rows


def sensor_rows(sensors: Mapping[str, Mapping[str, Any]]) -> list[Row]:
    """The sensors' sentences in one listing, and what failed or stayed silent, if anything."""
    if not sensors:
        return []
    sent = listing([f"{name} {d.get('sentences', 0)}" for name, d in sensors.items()])
    rows = [("sentences", sent)]
    failed = [
        f"{name} {sentence} {n}"
        for name, d in sensors.items()
        for sentence, n in (d.get("sentences_failed") or {}).items()
    ]
    failed += [
        f"{name} {count(d['failures'], 'epoch')} lost"
        for name, d in sensors.items()
        if d.get("failures")
    ]
    silent = [
        f"{name} {d['silent_epochs']}" for name, d in sensors.items() if d.get("silent_epochs")
    ]
    if failed:
        rows.append(("", "failed: " + listing(failed)))
    if silent:
        rows.append(("", "silent epochs: " + listing(silent)))
    return rows


def actuator_rows(s: Summary) -> list[Row]:
    """Each actuator's actual state and what was commanded (a fleet's: its first boat's)."""
    actuators = s.pop("actuators", None)
    if not isinstance(actuators, dict):
        return []
    boats = s.get("boats")
    boat = f"{next(iter(boats))} " if isinstance(boats, dict) and boats else ""  # (the first's)
    rows: list[Row] = []
    for name, a in actuators.items():
        (speed, angle, deflector), (speed_c, angle_c, deflector_c) = a["actual"], a["commanded"]
        text = (
            f"{boat}{name}: speed {number(speed, 1)}, angle {number(angle, 1)} deg, deflector "
            f"{number(deflector, 2)} (commanded {number(speed_c, 1)}, {number(angle_c, 1)} deg, "
            f"{number(deflector_c, 2)})"
        )
        rows.append(("actuators" if not rows else "", text))
    return rows


def place(where: Mapping[str, Any]) -> str:
    """``N 15.1 m, E 0.0 m, heading 90.0 deg`` of a summary's position_ned and heading_deg."""
    north, east = (where.get("position_ned") or [None, None])[:2]
    return (
        f"N {number(north, 1)} m, E {number(east, 1)} m, "
        f"heading {number(where.get('heading_deg'), 1)} deg"
    )


def closest(traffic: Mapping[str, Mapping[str, Any]]) -> str:
    """The targets by their closest approach, nearest first: ``tanker 1325.8 m at 3.0 s``."""
    by_range = sorted(traffic.items(), key=lambda kv: _or_inf(kv[1].get("min_range_m")))
    return listing(
        [
            f"{name} {number(t.get('min_range_m'), 1)} m at {number(t.get('at_t'), 1)} s"
            for name, t in by_range
        ],
        WIDTH - MAX_LABEL - len(INDENT) - 1 - len("closest: "),
    )


def _or_inf(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else math.inf


def vessel_rows(s: Summary) -> list[Row]:
    """Where the boat ended (each boat of a fleet: a line each) and the closest approaches."""
    where = {k: s.pop(k) for k in ("position_ned", "heading_deg") if k in s}
    boats = s.pop("boats", None)
    rows: list[Row] = []
    if isinstance(boats, dict):  # (the top level's position is the first boat's)
        for name, boat in boats.items():
            rows.append((name, place(boat)))
            if boat.get("traffic"):
                rows.append(("", "closest: " + closest(boat["traffic"])))
    elif where:
        rows.append(("position", place(where)))
    traffic = s.pop("traffic", None)
    if traffic:
        rows.append(("traffic", "closest: " + closest(traffic)))
    return rows


def port_rows(s: Summary) -> list[Row]:
    """The ports' totals, and each port that dropped, refused or failed something."""
    ports = s.pop("ports", None)
    if not isinstance(ports, dict) or not ports:
        return []
    total = {k: sum(p.get(k, 0) for p in ports.values()) for k in ports[next(iter(ports))]}
    text = (
        f"{count(len(ports), 'port')}: {count(total.get('sent_lines', 0), 'line')} sent "
        f"({number(total.get('sent_bytes', 0) / 1000, 1)} kB), "
        f"{total.get('dropped_lines', 0)} dropped, {total.get('received_lines', 0)} received"
    )
    if total.get("unsent_lines"):
        text += f", {total['unsent_lines']} unsent (no peer yet, or receive only)"
    rows = [("ports", text)]
    troubled = [
        f"{url}: " + " ".join(f"{p[k]} {what}" for k, what in PORT_PROBLEMS if p.get(k))
        for url, p in ports.items()
        if any(p.get(k) for k, _ in PORT_PROBLEMS)
    ]
    if troubled:
        rows.append(("", listing(troubled)))
    return rows


def record_rows(s: Summary) -> list[Row]:
    record = s.pop("record", None)
    if not isinstance(record, dict):
        return []
    text = (
        f"{count(record.get('messages', 0), 'message')}, "
        f"{count(record.get('nmea_lines', 0), 'NMEA line')}, {record.get('dropped', 0)} dropped"
    )
    if record.get("complete"):
        text += ", complete"
    else:
        text += f", INCOMPLETE: {record.get('error') or 'unfinished'}"
        if record.get("failed_at"):
            text += f" at {record['failed_at']}"
        if record.get("lost"):
            text += f", {record['lost']} lost"
    return at_path("record", str(record.get("file", "")), text)


def mqtt_rows(s: Summary) -> list[Row]:
    if "published" not in s:
        return []
    m = {k: s.pop(k) for k in MQTT_KEYS if k in s}
    return [
        (
            "mqtt",
            f"{m.get('published', 0)} published, {m.get('dropped', 0)} dropped, "
            f"{m.get('superseded', 0)} superseded, {count(m.get('connects', 0), 'connect')}, "
            + ("connected" if m.get("connected") else "not connected"),
        )
    ]


def foxglove_rows(s: Summary) -> list[Row]:
    f = s.pop("foxglove", None)
    if not isinstance(f, dict):
        return []
    text = f"{count(f.get('calls', 0), 'call')}, {count(f.get('logged', 0), 'message')} logged"
    return at_path("foxglove", str(f.get("url", "")), text)


def ctl_rows(s: Summary) -> list[Row]:
    ctl = s.pop("ctl", None)
    if not isinstance(ctl, dict):
        return []
    text = count(ctl.get("requests", 0), "request")
    for key, what in (
        ("connections_refused", "connections refused"),
        ("connections_idle_closed", "idle connections closed"),
    ):
        if ctl.get(key):
            text += f", {ctl[key]} {what}"
    return at_path("ctl", str(ctl.get("socket", "")), text)


def other_rows(s: Summary) -> list[Row]:
    """Keys no section knows: a row each, nested dicts flattened, long lists cut."""
    rows = []
    for key in list(s):
        value = s.pop(key)
        if isinstance(value, dict):
            rows.append((key, listing([f"{k}={v}" for k, v in flatten(value)]) or "(empty)"))
        else:
            rows.append((key, short_value(value)))
    return rows


def flatten(value: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """``(a.b, value)`` pairs of a nested dict's leaves."""
    out: list[tuple[str, str]] = []
    for k, v in value.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out += flatten(v, key + ".")
        else:
            out.append((key, short_value(v)))
    return out


def short_value(value: Any, items: int = 3) -> str:
    """A leaf as text: a float to 3 decimals, a list's first ``items`` then ``(+N more)``."""
    if isinstance(value, list | tuple):
        shown = " ".join(short_value(v) for v in value[:items])
        more = f" (+{len(value) - items} more)" if len(value) > items else ""
        return f"[{shown}{more}]"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if math.isfinite(value) else "n/a"
    if isinstance(value, dict):
        return "(empty)" if not value else " ".join(f"{k}={v}" for k, v in flatten(value))
    return str(value)


SECTIONS: tuple[Callable[[Summary], list[Row]], ...] = (
    time_rows,
    loop_rows,
    command_rows,
    device_rows,
    actuator_rows,
    vessel_rows,
    port_rows,
    record_rows,
    mqtt_rows,
    foxglove_rows,
    ctl_rows,
)
