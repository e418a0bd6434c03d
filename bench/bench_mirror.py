"""What the MQTT mirror costs the daemon: CPU and tick jitter with and without it.

`hild run` on the default bench (moved to free ports) as a subprocess, three runs of
--duration seconds in one go, so that the figures are ratios against a baseline measured
the same way on the same machine at the same time:

1. no mirror (the baseline);
2. the mirror to a local mosquitto at its default rates (about 33 messages a second);
3. the same with the Signal K paths too (about 57 messages a second);
4. the mirror to a broker that accepts the connection and never reads (the worst case of a
   broker that hangs: the daemon keeps trying).

    python bench/bench_mirror.py [--duration 30]
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, free_port, last_events, print_cpu_table


def bench_file(folder: Path, mqtt_url: str | None, signalk: bool) -> Path:
    text = (REPO / "profiles" / "bench" / "default.toml").read_text()
    text = text.replace("10110", str(free_port(socket.SOCK_DGRAM)))
    text = text.replace("10112", str(free_port(socket.SOCK_DGRAM)))
    if mqtt_url:
        text += f'\n[mqtt]\nurl = "{mqtt_url}"\nsignalk = {str(signalk).lower()}\n'
    path = folder / f"bench-{len(list(folder.glob('bench-*')))}.toml"
    path.write_text(text)
    return path


def run(folder: Path, mqtt_url: str | None, duration: float, signalk: bool = False) -> dict:
    bench = bench_file(folder, mqtt_url, signalk)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "hild.cli",
            "run",
            str(bench),
            "--duration",
            str(duration),
            "--run-dir",
            str(folder / "run"),
            "--log-format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=duration + 120,
    )
    events = last_events(p.stderr.splitlines(), "run.summary", "mirror.stop")
    summary, mirror = events.get("run.summary", {}), events.get("mirror.stop", {})
    if not summary:
        raise SystemExit(f"no run.summary:\n{p.stderr[-2000:]}")
    return {**summary, "mirror": mirror}


class NeverReads:
    def __init__(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0)
    args = parser.parse_args()
    mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    if not Path(mosquitto).exists():
        raise SystemExit("needs mosquitto (apt-get install mosquitto)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        port = free_port(socket.SOCK_STREAM)
        conf = folder / "mosquitto.conf"
        conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\n")
        broker = subprocess.Popen(
            [mosquitto, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        stalled = NeverReads()
        time.sleep(0.5)
        try:
            rows = [
                ("no mirror", run(folder, None, args.duration)),
                ("mirror to mosquitto", run(folder, f"mqtt://127.0.0.1:{port}", args.duration)),
                (
                    "mirror and Signal K to mosquitto",
                    run(folder, f"mqtt://127.0.0.1:{port}", args.duration, signalk=True),
                ),
                (
                    "mirror to a broker that never reads",
                    run(folder, f"mqtt://127.0.0.1:{stalled.port}", args.duration),
                ),
            ]
        finally:
            broker.terminate()
            stalled.server.close()
    for _, r in rows:
        r["observer"] = r.get("mirror", {})
    print_cpu_table(
        rows, "no mirror", {"published": "published", "dropped": "dropped"}, args.duration
    )


if __name__ == "__main__":
    main()
