"""Benchmark: `hild run` in real time, tick jitter and CPU per cent of one core, against the
floors of the same clock measured in the same run.

Runs the daemon as a subprocess (as a user would) at 100 Hz with four devices (all at
10 Hz) on ptys and UDP in gale-hs1, with this process reading every pty and the UDP port as
clients would, then the built-in default bench the same way; each bench once plain and once
with ``--record`` (MCAP and the Signal K log in a temporary folder), one after the other, so
that the two rows of a bench share the machine's load; ``--repeat N`` alternates the pair N
times and prints, per bench, the median and range of p99 jitter and CPU with and without
recording, so that a difference can be told from run-to-run noise. Then, per bench, the
difference that recording makes, with the CPU of the recording's own thread (named
``hild-record`` for the kernel: /proc/PID/task/TID/stat). Before and after them, the floors
of bench/clock_floor.py: a bare Python loop that blocks on the same timerfd clock (alone,
and stepping the default bench's model each tick) and an empty asyncio loop woken by it.
Prints one table, with each row's CPU per tick and its excess over the stepping floor.

With ``--side-by-side`` it runs only the daemons, plain and ``--record`` of a bench at the same
time (each reading its own clients), and prints the difference per pair: the two share the
machine's load moment by moment, which runs one after the other on a shared machine do not.
``--record-rate HZ`` records the truth at HZ instead of the default 20 Hz (what a lower rate
saves). With ``--against CHECKOUT`` it does the same with another checkout of hild and this one
(both plain, or both with ``--record``): what a change costs or saves, the difference this
one's CPU less that one's (the same checkout on both sides differs by about 0.1 % of a core
here).

    python bench/bench_daemon.py [--duration 60] [--repeat 1]
    python bench/bench_daemon.py --side-by-side [--duration 60] [--repeat 3] [--record-rate HZ]
    git worktree add --detach ../hild-before HEAD~1
    python bench/bench_daemon.py --against ../hild-before [--record] [--duration 20] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import tty
from dataclasses import dataclass
from pathlib import Path
from statistics import mean, median

from common import REPO, free_port

FOUR_DEVICES = """
[bench]
name = "four-devices"
rate_hz = 100
run_dir = "{run_dir}"
stats_interval = 1000

[vessel]
profile = "odin"
speed = 2.0
[weather]
preset = "gale-hs1"
[vessel.commands]
"port.rpm" = 1200
"starboard.rpm" = 1200

[[device]]
name = "gps"
type = "gps"
rate_hz = 10
baud = 115200
ports = ["pty://gps", "udp://127.0.0.1:{udp}"]

[[device]]
name = "heading"
type = "heading"
rate_hz = 10
baud = 38400
ports = ["pty://heading", "udp://127.0.0.1:{udp}"]

[[device]]
name = "wind"
type = "anemometer"
rate_hz = 10
baud = 38400
ports = ["pty://wind", "udp://127.0.0.1:{udp}"]

[[device]]
name = "speed"
type = "speed-log"
rate_hz = 10
baud = 38400
ports = ["pty://speed", "udp://127.0.0.1:{udp}"]
"""


FLOORS = {
    "bare": "floor: bare loop on the clock",
    "bare-step": "floor: bare loop + model step",
    "asyncio": "floor: empty asyncio loop",
}


def drain(paths: list[Path], sock: socket.socket, stop: threading.Event, counts: dict) -> None:
    """Read every pty and the UDP socket as clients would, counting bytes."""
    fds = {}
    for p in paths:
        fd = os.open(p, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(fd)
        fds[fd] = p.name
    watch = [*fds, sock.fileno()]
    while not stop.is_set():
        ready, _, _ = select.select(watch, [], [], 0.2)
        for fd in ready:
            try:
                data = sock.recv(65536) if fd == sock.fileno() else os.read(fd, 65536)
            except OSError:  # the daemon has ended and closed its side of the pty
                watch.remove(fd)
                continue
            key = "udp" if fd == sock.fileno() else fds[fd]
            counts[key] = counts.get(key, 0) + len(data)
    for fd in fds:
        os.close(fd)


def thread_cpu(pid: int, stop: threading.Event, seconds: dict) -> None:
    """Each of the daemon's threads' CPU seconds (user + system, /proc/PID/task/TID/stat), by
    thread name, sampled until ``stop``: the last reading of a thread is kept."""
    tick = os.sysconf("SC_CLK_TCK")
    by_tid: dict[str, tuple[str, float]] = {}
    while not stop.wait(0.25):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            break
        for tid in tids:
            try:
                text = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
            except OSError:
                continue
            name = text[text.index("(") + 1 : text.rindex(")")]
            fields = text[text.rindex(")") + 2 :].split()
            by_tid[tid] = (name, (int(fields[11]) + int(fields[12])) / tick)  # utime, stime
    for name, cpu_s in by_tid.values():
        seconds[name] = seconds.get(name, 0.0) + cpu_s


def run(
    bench_args: list[str], run_dir: Path, duration: float, sock: socket.socket, tree: Path = REPO
) -> dict:
    """One `hild run` of the checkout ``tree`` (its folder is the daemon's working directory,
    so ``python -m hild.cli`` imports that checkout's hild), read by clients as a user's."""
    cmd = [
        sys.executable,
        "-m",
        "hild.cli",
        "run",
        *bench_args,
        "--run-dir",
        str(run_dir),
        "--duration",
        str(duration),
        "--log-format",
        "json",
        "--stats-interval",
        "1000",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tree
    )
    banner = []
    while not any(line.startswith("Ctrl-C stops") for line in banner):
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"daemon failed:\n{proc.stderr.read()}")
        banner.append(line)
    paths = sorted(p for p in run_dir.iterdir() if p.is_symlink())
    stop, counts, threads = threading.Event(), {}, {}
    reader = threading.Thread(target=drain, args=(paths, sock, stop, counts))
    reader.start()
    watcher = threading.Thread(target=thread_cpu, args=(proc.pid, stop, threads))
    watcher.start()
    stderr = proc.stderr.read()
    proc.wait()
    stop.set()
    reader.join()
    watcher.join()
    summary = [json.loads(x) for x in stderr.splitlines() if '"run.summary"' in x][-1]
    summary["client_bytes"] = counts
    # the recording thread's CPU over the loop's wall time (the last quarter second unseen)
    summary["thread_percent"] = {
        name: 100.0 * cpu_s / summary["loop_wall_s"] for name, cpu_s in threads.items()
    }
    return summary


def floor(kind: str, duration: float) -> dict:
    """One of bench/clock_floor.py's loops, as a subprocess."""
    script = Path(__file__).resolve().parent / "clock_floor.py"
    p = subprocess.run(
        [sys.executable, str(script), kind, "--duration", str(duration)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(p.stdout.strip().splitlines()[-1])


def default_bench_on(folder: Path, udp: int) -> Path:
    """The built-in default bench sending to ``udp``, its command port a free one (two of them
    run at once side by side)."""
    text = (REPO / "profiles" / "bench" / "default.toml").read_text()
    text = text.replace("10110", str(udp)).replace("10112", str(free_port(socket.SOCK_DGRAM)))
    path = folder / f"default-{udp}.toml"
    path.write_text(text)
    return path


def run_into(
    results: dict,
    key: int,
    bench_args: list[str],
    run_dir: Path,
    duration: float,
    sock: socket.socket,
    tree: Path,
) -> None:
    results[key] = run(bench_args, run_dir, duration, sock, tree)


@dataclass(frozen=True)
class Side:
    """One of two daemons run at the same time: a checkout, plain or recording (at
    ``record_rate_hz`` truth samples a second: the bench's [record] table; None: hild's
    default)."""

    label: str
    tree: Path
    record: bool
    record_rate_hz: float | None = None


def with_record_rate(bench: Path, rate_hz: float | None) -> None:
    """Give ``bench`` a [record] table at ``rate_hz`` (`--record FILE` keeps the table's rate);
    nothing for None."""
    if rate_hz is not None:
        text = bench.read_text()
        assert "[record]" not in text
        bench.write_text(f'{text}\n[record]\nfile = "run.mcap"\nrate_hz = {rate_hz:g}\n')


def side_by_side(duration: float, repeat: int, sides: tuple[Side, Side]) -> None:
    """Each bench twice at the same time, one run per side, so that both share the machine's
    load moment by moment: the difference (the second side's CPU less the first's) is the
    change's, less the machine's noise than in runs one after the other. Plain against
    --record of this checkout by default; with --against, another checkout against this one."""
    first, second = sides
    what = (
        "plain and --record"
        if first.tree == second.tree
        else (f"{first.label} and {second.label}{' --record' if first.record else ''}")
    )
    rate = second.record_rate_hz
    if second.record and rate is not None:
        what += f" (recording the truth at {rate:g} Hz)"
    print(
        f"hild run, 100 Hz, {duration:g} s, {what} at the same time, {repeat} time(s) each "
        f"bench, {os.cpu_count()} cores:"
    )
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for name in ("4 devices", "default bench"):
            differences, threads = [], []
            for i in range(repeat):
                socks, argv = [], []
                for k, side in enumerate(sides):
                    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    sock.bind(("127.0.0.1", 0))
                    udp = sock.getsockname()[1]
                    folder = tmp / f"{name[0]}{i}side{k}"
                    folder.mkdir()
                    if name == "4 devices":
                        bench = folder / "four.toml"
                        bench.write_text(FOUR_DEVICES.format(run_dir=folder / "links", udp=udp))
                    else:
                        bench = default_bench_on(folder, udp)
                    extra = ["--record", str(folder / "run.mcap")] if side.record else []
                    if side.record:
                        with_record_rate(bench, side.record_rate_hz)
                    socks.append(sock)
                    argv.append(([str(bench), *extra], folder / "run"))
                results: dict[int, dict] = {}
                workers = [
                    threading.Thread(
                        target=run_into,
                        args=(results, k, *argv[k], duration, socks[k], sides[k].tree),
                    )
                    for k in (0, 1)
                ]
                for worker in workers:
                    worker.start()
                for worker in workers:
                    worker.join()
                for sock in socks:
                    sock.close()
                a, b = results[0], results[1]
                differences.append(b["cpu_percent"] - a["cpu_percent"])
                threads.append(b["thread_percent"].get("hild-record", 0.0))
                recorded = ""
                if second.record:
                    recorded = (
                        f"  (the recording thread {threads[-1]:.2f} %; "
                        f"{b['record']['messages']} messages, "
                        f"{b['record']['dropped']} dropped)"
                    )
                print(
                    f"  {name:<14} {first.label} {a['cpu_percent']:.2f} %  {second.label} "
                    f"{b['cpu_percent']:.2f} %  difference {differences[-1]:+.2f} %{recorded}",
                    flush=True,
                )
            thread = f", the recording thread {median(threads):.2f} %" if second.record else ""
            spread = f"range {min(differences):+.2f} to {max(differences):+.2f}"
            print(
                f"  {name:<14} median difference {median(differences):+.2f} % of a core "
                f"({spread}){thread}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds per run (60)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="plain and --record runs of each bench, alternated (1)",
    )
    parser.add_argument(
        "--side-by-side",
        action="store_true",
        help="only: plain and --record of each bench at the same time",
    )
    parser.add_argument(
        "--against",
        type=Path,
        metavar="CHECKOUT",
        help="only: another checkout of hild (e.g. `git worktree add --detach "
        "DIR REV`) and this one at the same time, each bench; the difference is "
        "this one's CPU less that one's",
    )
    parser.add_argument("--record", action="store_true", help="with --against: both sides record")
    parser.add_argument(
        "--record-rate",
        type=float,
        metavar="HZ",
        help="with --side-by-side: record the truth (state, actuators, "
        "environment, location, pose) at HZ instead of hild's default 20 Hz "
        "(a [record] table's rate_hz)",
    )
    args = parser.parse_args()
    if args.record_rate is not None and not args.side_by_side:
        parser.error("--record-rate goes with --side-by-side")
    if args.against is not None:
        other = args.against.resolve()
        if not (other / "hild" / "cli.py").is_file():
            sys.exit(f"--against {args.against}: not a checkout of hild (no hild/cli.py there)")
        sides = (Side(f"that ({other.name})", other, args.record), Side("this", REPO, args.record))
        side_by_side(args.duration, args.repeat, sides)
        return
    if args.side_by_side:
        side_by_side(
            args.duration,
            args.repeat,
            (Side("plain", REPO, False), Side("--record", REPO, True, args.record_rate)),
        )
        return
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    udp = sock.getsockname()[1]
    rows = []
    floors = {kind: [floor(kind, args.duration)] for kind in FLOORS}
    with tempfile.TemporaryDirectory() as tmp:
        bench = Path(tmp) / "four.toml"
        bench.write_text(FOUR_DEVICES.format(run_dir=Path(tmp) / "a", udp=udp))
        record = ["--record", str(Path(tmp) / "run.mcap")]
        for name, bench_args in (("4 devices", [str(bench)]), ("default bench", [])):
            for _ in range(args.repeat):
                for suffix, extra in (("", []), (" --record", record)):
                    run_dir = Path(tmp) / f"run{len(rows)}"
                    rows.append(
                        (name + suffix, run([*bench_args, *extra], run_dir, args.duration, sock))
                    )
    for kind in FLOORS:  # again after the daemon's runs: the floor is their mean
        floors[kind].append(floor(kind, args.duration))
    base = mean(f["cpu_percent"] for f in floors["bare-step"])
    print(f"hild run, 100 Hz, {args.duration:g} s each, {os.cpu_count()} cores")
    print(
        f"{'loop':<30} {'ticks':>6} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
        f"{'overruns':>8} {'CPU %':>6} {'us/tick':>7} {'vs floor':>8} {'sentences':>9} "
        f"{'dropped':>7}"
    )
    for kind in FLOORS:
        for f in floors[kind]:
            print(
                f"{FLOORS[kind]:<30} {f['ticks']:>6} {f['jitter_p50_ms']:>7.3f} "
                f"{f['jitter_p99_ms']:>7.3f} {f['jitter_max_ms']:>7.3f} {f['overruns']:>8} "
                f"{f['cpu_percent']:>6.2f} {f['cpu_per_tick_us']:>7.0f} "
                f"{f['cpu_percent'] - base:>+8.2f} {'':>9} {'':>7}"
            )
    for name, s in rows:
        sentences = sum(d["sentences"] for d in s["devices"].values())
        dropped = sum(p["dropped_lines"] for p in s["ports"].values())
        per_tick_us = 1e6 * s["cpu_percent"] / 100.0 * s["loop_wall_s"] / s["ticks"]
        print(
            f"{'hild: ' + name:<30} {s['ticks']:>6} {s['jitter_p50_ms']:>7.3f} "
            f"{s['jitter_p99_ms']:>7.3f} {s['jitter_max_ms']:>7.3f} {s['overruns']:>8} "
            f"{s['cpu_percent']:>6.2f} {per_tick_us:>7.0f} {s['cpu_percent'] - base:>+8.2f} "
            f"{sentences:>9} {dropped:>7}"
        )
    print(
        f"recording, the difference (median of {args.repeat} alternated pair(s) each), and "
        "the threads' own CPU (from /proc):"
    )
    for name in dict.fromkeys(n for n, _ in rows if not n.endswith(" --record")):
        plain = median(s["cpu_percent"] for n, s in rows if n == name)
        recorded = [s for n, s in rows if n == name + " --record"]
        cpu = median(s["cpu_percent"] for s in recorded)
        thread = median(s["thread_percent"].get("hild-record", 0.0) for s in recorded)
        plain_tick = [s["thread_percent"].get("hild-tick", 0.0) for n, s in rows if n == name]
        tick = median(s["thread_percent"].get("hild-tick", 0.0) for s in recorded)
        messages = median(s["record"]["messages"] / s["loop_wall_s"] for s in recorded)
        print(
            f"  {'hild: ' + name:<28} plain {plain:.2f} %  --record {cpu:.2f} %  "
            f"difference {cpu - plain:+.2f} % of a core; the recording thread {thread:.2f} %, "
            f"the tick thread {median(plain_tick):.2f} -> {tick:.2f} %; "
            f"{messages:.0f} messages/s"
        )
    if args.repeat > 1:
        print(f"median (range) of {args.repeat} alternated runs each:")
        for name in dict.fromkeys(n for n, _ in rows):
            runs = [s for n, s in rows if n == name]
            p99 = sorted(s["jitter_p99_ms"] for s in runs)
            cpu = sorted(s["cpu_percent"] for s in runs)
            print(
                f"  {'hild: ' + name:<28} p99 {median(p99):.3f} ms ({p99[0]:.3f}-{p99[-1]:.3f})"
                f"  CPU {median(cpu):.2f} % ({cpu[0]:.2f}-{cpu[-1]:.2f})"
            )
    print("CPU %: process CPU time over the loop's wall time, of one core; us/tick: the same")
    print(f"per tick; vs floor: CPU % minus the stepping floor's mean ({base:.2f} %), the floors")
    print("measured before and after the daemon's runs.")


if __name__ == "__main__":
    main()
