"""Benchmark: what writing a recording costs per message, hild's writer against the
``foxglove-sdk``'s MCAP writer (the one the live view's SDK offers: ``foxglove.open_mcap``,
fed by ``Channel.log``), on the same messages in the same run.

The messages are a real run's: the four-device bench of bench/bench_daemon.py (every device at
10 Hz, gale-hs1) recorded for ``--duration`` simulated seconds by ``hild run --record`` at
``--time-scale 5``, then read back. Each writer then writes them all, ``--repeat`` times, and
the process's CPU time (every thread: hild's writer thread, the SDK's own) is divided by the
messages written. hild's writer is fed as the daemon feeds it (``put`` from the caller's
thread, encoded and written by its thread in batches); the SDK's takes each message's dict in
``Channel.log`` (it encodes the JSON and writes the chunk in the caller's thread), its JSON
schema the same. Both compress with zstd.

    python bench/bench_record_writer.py [--duration 60] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_daemon import FOUR_DEVICES  # noqa: E402

from hild.record import channels  # noqa: E402
from hild.record.reader import messages  # noqa: E402
from hild.record.writer import RecordWriter  # noqa: E402


def recorded(tmp: Path, duration: float) -> list[tuple[str, int, dict]]:
    """A real run's messages (UDP ports only: nothing needs to read ptys)."""
    bench = tmp / "four.toml"
    text = FOUR_DEVICES.format(run_dir=tmp / "run", udp=9)  # the discard port: never read
    bench.write_text(re.sub(r'ports = \["pty://\w+", (".*?")\]', r"ports = [\1]", text))
    record = tmp / "source.mcap"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "hild.cli",
            "run",
            str(bench),
            "--record",
            str(record),
            "--duration",
            str(duration),
            "--time-scale",
            "5",
            "--quiet",
            "--log-format",
            "json",
        ],
        check=True,
        capture_output=True,
    )
    # what the daemon puts (the writer makes /tf and /fix/<device> from them itself)
    return [
        (m.topic, m.log_time_ns, m.payload)
        for m in messages(record)
        if m.topic != channels.TF and not m.topic.startswith(channels.FIX)
    ]


def hild_writer(path: Path, items: list) -> tuple[float, int]:
    writer = RecordWriter(path, {"hild": {"bench": "four-devices"}}, nmea_log=True, lossless=True)
    writer.start()
    cpu0 = time.process_time()
    for item in items:
        writer.put(*item)
    writer.close(60.0)
    return time.process_time() - cpu0, writer.written


def sdk_writer(path: Path, items: list) -> tuple[float, int]:
    import foxglove

    context = foxglove.Context()
    mcap = foxglove.open_mcap(path, allow_overwrite=True, context=context)
    opened: dict[str, foxglove.Channel] = {}
    cpu0 = time.process_time()
    for topic, ns, payload in items:
        channel = opened.get(topic)
        if channel is None:
            _, schema = channels.schema_for(topic, payload)
            channel = opened[topic] = foxglove.Channel(topic, schema=schema, context=context)
        channel.log(payload, log_time=ns)
    mcap.close()
    return time.process_time() - cpu0, len(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--duration", type=float, default=60.0, help="simulated seconds of the recorded run (60)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="writes per writer (3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        items = recorded(tmp, args.duration)
        rows: dict[str, list[float]] = {"hild": [], "foxglove-sdk": []}
        sizes: dict[str, int] = {}
        for i in range(args.repeat):  # alternated, so that both share the machine's load
            for name, write in (("hild", hild_writer), ("foxglove-sdk", sdk_writer)):
                path = tmp / f"{name}-{i}.mcap"
                cpu_s, written = write(path, items)
                rows[name].append(1e6 * cpu_s / len(items))
                sizes[name] = os.path.getsize(path)
                print(
                    json.dumps({"writer": name, "cpu_s": round(cpu_s, 4), "messages": written}),
                    file=sys.stderr,
                )
    base = median(rows["hild"])
    per_s = len(items) / args.duration
    print(
        f"writing {len(items)} messages of a recorded run ({per_s:.0f} a simulated second), "
        f"{args.repeat} times each, alternated; CPU of the whole process per message put:"
    )
    for name, us in rows.items():
        print(
            f"  {name:<13} {median(us):6.1f} us (range {min(us):.1f}-{max(us):.1f})  "
            f"{median(us) / base:5.2f}x hild's  {per_s * median(us) / 1e4:.2f} % of a core at "
            f"{per_s:.0f} messages/s  file {sizes[name] / 1e6:.2f} MB"
        )


if __name__ == "__main__":
    main()
