"""The controller's commands always get through (issue 50): the real daemon, real sockets.

A controller on a shared stream (a multiplexer forwarding a whole bus, status sentences sent
with the commands) and a flood from many source ports of one local process: what counts is
what was applied, per device, and that no watchdog tripped. Latencies and the daemon's share
of a core under a flood are figures of bench/bench_flood.py, not judged here.
"""

from __future__ import annotations

import itertools
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest
from endpoints import free_udp_port, nmea_line
from test_net_hardening import Run, raise_own_fd_limit, write_bench

from hild.transport.senders import MAX_SENDERS

TRC = nmea_line("RCTRC,0,1500.0,R,100.0,P,,B,C")
# Well-formed sentences of other talkers, as a multiplexer forwards them: no jet control takes
# them (IEC 61162-1 GGA, HDT, VTG, RSA, a proprietary one), each with its right checksum.
OTHER_SENTENCES = [
    nmea_line("GPGGA,120000.00,5924.6000,N,01028.8000,E,1,12,0.8,1.5,M,40.0,M,,"),
    nmea_line("GPHDT,12.3,T"),
    nmea_line("GPVTG,12.3,T,,M,5.1,N,9.4,K,A"),
    nmea_line("IIRSA,1.0,A,,V"),
    nmea_line("PXXXA,1,2,3"),
]
GARBAGE = [
    TRC[:-4] + b"00\r\n",  # a TRC with a bad checksum
    b"\x00\xff\x13 binary \xfe\r\n",
    b"$$$$,,,,*ZZ\r\n",
    b"no nmea here at all\r\n",
]
PERIOD_S = 0.1  # the controller's: ten bursts a second
SENT = 40  # bursts each controller sends before the daemon is stopped


def burst(size: int, where: str, fillers: list[bytes]) -> list[bytes]:
    """``size`` datagrams, one the TRC (first, in the middle or last), the others fillers."""
    others = [fillers[i % len(fillers)] for i in range(size - 1)]
    at = {"first": 0, "middle": (size - 1) // 2, "last": size - 1}[where]
    return others[:at] + [TRC] + others[at:]


CASES = [(1, "first", "other")] + [
    (size, where, fill)
    for size, where, fill in itertools.product(
        (4, 8, 9, 12, 20), ("first", "middle", "last"), ("other", "garbage")
    )
]


def test_a_controller_on_a_shared_stream_has_every_command_applied(tmp_path):
    # Reproduces: one sender, ten bursts a second, one of each burst's datagrams its TRC:
    # with 9 or more (other valid sentences before the TRC), or 8 with garbage, 0 of 50
    # commands were applied and the jets latched at idle. The sender was throttled after
    # eight refused lines in a row and its one datagram read per 0.1 s was the first of the
    # burst, never the TRC. Now only malformed lines count against a sender, a sender whose
    # lines are applied is served first and never throttled, and a throttled sender's probe
    # looks for its next well-formed line. One daemon, a jet control per case on its own port.
    ports = {case: free_udp_port() for case in CASES}
    devices = "".join(
        textwrap.dedent(f"""
        [[device]]
        name = "jets_{size}_{where}_{fill}"
        type = "jet-controller"
        rate_hz = 1
        ports = ["udp://127.0.0.1:{port}?listen=1"]
        """)
        for (size, where, fill), port in ports.items()
    )
    run = Run(write_bench(tmp_path, devices), tmp_path).ready()
    senders = {case: socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for case in CASES}
    bursts = {
        case: burst(case[0], case[1], OTHER_SENTENCES if case[2] == "other" else GARBAGE)
        for case in CASES
    }
    try:
        start = time.monotonic()
        for n in range(SENT):
            for case, datagrams in bursts.items():
                for datagram in datagrams:
                    senders[case].sendto(datagram, ("127.0.0.1", ports[case]))
            time.sleep(max(0.0, start + (n + 1) * PERIOD_S - time.monotonic()))
        run.proc.send_signal(signal.SIGTERM)
        # the lease runs on while the daemon stops: keep sending until it has ended
        while run.proc.poll() is None:
            for case in CASES:
                senders[case].sendto(TRC, ("127.0.0.1", ports[case]))
            time.sleep(PERIOD_S)
        summary = run.finish()
    finally:
        run.kill()
        for s in senders.values():
            s.close()
    short = {}
    for size, where, fill in CASES:
        jets = summary["devices"][f"jets_{size}_{where}_{fill}"]
        # 95 %: a datagram the kernel drops on a loaded machine is lost whoever sent it
        if jets["commands"] < 0.95 * SENT or jets["watchdog_trips"]:
            short[(size, where, fill)] = (jets["commands"], jets["watchdog_trips"])
    assert not short, f"(commands applied of {SENT}, watchdog trips) per case: {short}"


FLOODER = """
import socket, sys, time
port, rate, count = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
socks = []
for _ in range(count):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
line = sys.stdin.buffer.read()
sys.stdout.write("ready\\n")
sys.stdout.flush()
sent, start = 0, time.monotonic()
while True:
    due = int((time.monotonic() - start) * rate)
    while sent < due:
        try:
            socks[sent % count].sendto(line, ("127.0.0.1", port))
        except OSError:
            pass
        sent += 1
    time.sleep(0.001)
"""

UDP_JETS = """
[[device]]
name = "jets"
type = "jet-controller"
rate_hz = 5
ports = ["{url}"]
"""


@pytest.mark.parametrize("source_ports", [MAX_SENDERS + 6, 1000])
def test_a_flood_from_many_source_ports_leaves_the_controller_its_commands(tmp_path, source_ports):
    # Reproduces: a flood from 70 or 200 source ports of one local process let 0 or 1 of
    # 100 of the controller's commands through: the table of remembered senders (64) filled,
    # and the controller, the least recently heard between its commands, was the one
    # forgotten. Now a sender whose lines are applied is kept and served first, and a
    # newcomer takes the place of the least recently heard of the others.
    raise_own_fd_limit(source_ports + 200)
    udp = free_udp_port()
    url = f"udp://127.0.0.1:{udp}?listen=1"
    run = Run(write_bench(tmp_path, UDP_JETS, url=url), tmp_path).ready()
    flooder = subprocess.Popen(
        [sys.executable, "-c", FLOODER, str(udp), "20000", str(source_ports)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    controller = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        flooder.stdin.write(GARBAGE[0])
        flooder.stdin.close()
        assert flooder.stdout.readline() == b"ready\n"
        time.sleep(0.5)
        start, sent = time.monotonic(), 0
        while sent < SENT:
            controller.sendto(TRC, ("127.0.0.1", udp))
            sent += 1
            time.sleep(max(0.0, start + sent * PERIOD_S - time.monotonic()))
        run.proc.send_signal(signal.SIGTERM)
        while run.proc.poll() is None:
            controller.sendto(TRC, ("127.0.0.1", udp))
            time.sleep(PERIOD_S)
        summary = run.finish()
    finally:
        flooder.kill()
        flooder.wait()
        controller.close()
        run.kill()
    jets = summary["devices"]["jets"]
    stats = summary["ports"][url]
    print(f"{source_ports} ports: applied {jets['commands']} of {SENT}; port {stats}")
    assert jets["watchdog_trips"] == 0, jets
    assert jets["commands"] >= 0.95 * SENT, (jets["commands"], SENT)
    # the flood arrived and was counted: decoded and refused, or discarded unread
    assert stats["throttled"] + sum(jets["rejected"].values()) > 10 * SENT, (stats, jets)
