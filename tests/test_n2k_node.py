"""An NMEA 2000 node answers ISO requests (PGN 59904) heard on its ports (hild/n2k/requests.py):
its address claim for 60928, its product information for 126996, one of its own PGNs at its
next epoch whatever its schedule, and a NAK (59392) for anything else asked of it by address
(never for a request to all). Through the real daemon and real UDP sockets, the answers
decoded by canboat's analyzerjs; the rules and the epoch they are answered at through a World;
garbage lines counted and skipped.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from hild.bench import load_bench
from hild.bus.dispatch import Dispatcher
from hild.control import ControlQueue
from hild.n2k import requests
from hild.transport.base import Inbound
from hild.transport.judging import Verdict
from hild.world.world import World
from tests.endpoints import Daemon, UdpClient, free_udp_port, write_bench
from tests.n2k_tools import decode, needs_analyzerjs

START = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
CLIENT = 0x23  # the requester's source address (35)
GNSS, COMPASS = 10, 11  # the nodes' addresses (devices/n2k-gnss.toml, n2k-compass.toml)


def request(pgn: int, destination: int, source: int = CLIENT) -> bytes:
    """An ISO request as a computer sends it to a YDRAW gateway: ``IIIIIIII B0 B1 B2``, the
    identifier written out here by hand (priority 6, PDU1 59904 = 0xEA00 with the destination
    in its low byte), the requested PGN in 3 bytes little-endian, no padding (canboat: "a data
    length of 3 bytes with no padding")."""
    identifier = (6 << 26) | (0xEA << 16) | (destination << 8) | source
    data = pgn.to_bytes(3, "little")
    return (f"{identifier:08X} " + " ".join(f"{b:02X}" for b in data) + "\r\n").encode()


def inbound(line: bytes, port: str = "ydraw+udp://127.0.0.1:9?listen=1") -> Inbound:
    return Inbound(line.rstrip(b"\r\n"), port, ("127.0.0.1", 40000), 0.0)


# --- hearing ------------------------------------------------------------------------------------
def test_a_request_is_heard_by_the_node_it_is_for_and_garbage_is_counted():
    heard = requests.Requests(lambda: GNSS)
    assert heard.hear(request(126996, GNSS)) == Verdict.APPLIED
    assert heard.hear(b"12:00:01.000 T " + request(60928, 255)) == Verdict.APPLIED
    assert heard.hear(request(126996, COMPASS)) == Verdict.IGNORED  # another node's
    assert heard.hear(b"09F8010A 01 02 03 04 05 06 07 08") == Verdict.IGNORED  # not a request
    for garbage in (b"hello", b"\x00\xff\xfe\x80", b"18EA0A23 14", b"18EA0A23 1 F0 01", b""):
        assert heard.hear(garbage) == Verdict.MALFORMED
    assert heard.hear(request(126996, GNSS), overlong=True) == Verdict.MALFORMED
    assert [(r.pgn, r.requester, r.destination) for r in heard.take()] == [
        (126996, CLIENT, GNSS),
        (60928, CLIENT, 255),
    ]
    assert heard.take() == []
    s = heard.stats
    assert (s.heard, s.ignored, s.malformed) == (2, 2, 6)


def test_the_dispatcher_hands_a_node_its_port_s_lines_and_leaves_other_ports_alone():
    class Node:
        def __init__(self):
            self.lines: list[bytes] = []

        def hear(self, item: Inbound) -> Verdict:
            self.lines.append(item.line)
            return Verdict.IGNORED

    dispatcher = Dispatcher(ControlQueue(), lambda: 0.0)
    node = Node()
    dispatcher.listen("ydraw+udp://127.0.0.1:9?listen=1", node)
    assert dispatcher.receive(inbound(b"anything")) == Verdict.IGNORED
    assert dispatcher.receive(inbound(b"$GPGGA,,*56", "udp://127.0.0.1:8")) is None  # as before
    assert node.lines == [b"anything"] and dispatcher.received_lines == 2


def test_a_nak_carries_the_requested_pgn():
    # 59392: control 1 (NAK), group function 255, 24 reserved, the PGN (130306 = 0x01FD02)
    assert requests.iso_acknowledgement(requests.NAK, 130306) == bytes(
        [1, 0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0xFD, 0x01]
    )


# --- answering, epoch by epoch ----------------------------------------------------------------
WORLD = """
[bench]
name = "node"
rate_hz = 50
seed = 2
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"
[vessel]
profile = "otter"
[origin]
latitude = 59.41
longitude = 10.48
[weather]
preset = "calm"

[[device]]
name = "gnss"
type = "n2k-gnss"
ports = ["ydraw+udp://127.0.0.1:41471?listen=1"]
[[device.fault]]
kind = "dropout"
start = 0.5
end = 0.6
"""


@needs_analyzerjs
def test_a_node_answers_at_its_next_epoch(tmp_path):
    """Requests heard between two epochs are answered with the next one's lines: 129029 (1 Hz)
    at an epoch it is not due at, the claim and product information once however often asked,
    a NAK to the requester for a PGN it does not send asked of it, none asked of all; a node
    in a dropout answers nothing."""
    path = tmp_path / "node.toml"
    path.write_text(WORLD.format(run_dir=tmp_path / "run"))
    world = World(load_bench(path), duration=1.0)
    world.start_utc = START
    (rt,) = world.devices
    node = rt.device
    port = node.config.ports[0]
    per_epoch: list[list[bytes]] = [[ls for _, ls in world.first_epoch()][0]]

    def epoch() -> list[bytes]:
        """The ticks up to the node's next epoch: its lines."""
        while True:
            out = world.tick()
            if out:
                return [line for _, ls in out for line in ls]

    per_epoch.append(epoch())  # 0.1 s: nothing asked
    for line in (
        request(129029, GNSS),  # its own, due at 1.0 s: now
        request(60928, 255),
        request(60928, GNSS),  # the claim twice: once
        request(126996, 255),
        request(130306, GNSS),  # not its own, asked of it: a NAK to 35
        request(130310, 255),  # not its own, asked of all: nothing
        request(130311, COMPASS),  # another node's business
    ):
        node.hear(inbound(line, port))
    per_epoch.append(epoch())  # 0.2 s: the answers
    for _ in range(2):
        per_epoch.append(epoch())
    node.hear(inbound(request(126996, GNSS), port))
    per_epoch.append(epoch())  # 0.5 s in a dropout, silent: the next lines are 0.6 s's

    def pgns_at(lines: list[bytes]) -> list[tuple[int, int]]:
        return [(m["pgn"], m["dst"]) for m in decode(lines)]

    rapid = [(129025, 255), (129026, 255), (127250, 255)]
    assert pgns_at(per_epoch[1]) == rapid
    answers = pgns_at(per_epoch[2])
    # the answers first, then the epoch's PGNs with the one asked for among them
    assert answers == [(60928, 255), (126996, 255), (59392, CLIENT), (129025, 255)] + [
        (129026, 255),
        (129029, 255),
        (127250, 255),
    ]
    nak = next(m for m in decode(per_epoch[2]) if m["pgn"] == 59392)
    assert nak["src"] == GNSS and nak["fields"]["Control"] == "NAK"
    assert nak["fields"]["PGN"] == 130306
    assert pgns_at(per_epoch[3]) == rapid  # asked once, sent once
    assert pgns_at(per_epoch[5]) == rapid  # (0.6 s) heard in the dropout: not answered
    assert round(world.t, 6) == 0.6
    stats = node.summary()["requests"]
    assert stats == {
        "heard": 7,
        "answered": 5,
        "nak": 1,
        "unanswered": 2,  # 130310 to all, and 126996 during the dropout
        "ignored": 1,
        "malformed": 0,
        "dropped": 0,
    }


# --- through the daemon ---------------------------------------------------------------------
@needs_analyzerjs
def test_the_daemon_s_nodes_answer_requests_on_their_udp_port(tmp_path):
    """Two nodes on one listening UDP port (a gateway's): a client asks the GNSS for its
    product information and all for their address claims, the GNSS for a PGN it does not send
    (a NAK back) and all for one (no NAK); garbage between them is counted and skipped, and
    the nodes go on."""
    port = free_udp_port()
    url = f"ydraw+udp://127.0.0.1:{port}?listen=1"
    bench = write_bench(
        tmp_path / "bench.toml",
        "n2k-node",
        tmp_path / "run",
        f"""
[weather]
preset = "calm"
[[device]]
name = "gnss"
type = "n2k-gnss"
ports = ["{url}"]
[[device]]
name = "compass"
type = "n2k-compass"
ports = ["{url}"]
""",
        rate_hz=50,
        profile="otter",
    )
    client = UdpClient().start()
    daemon = Daemon(str(bench), tmp=tmp_path)
    to = ("127.0.0.1", port)
    garbage = [b"hello\r\n", b"\x00\xff\xfe\x80\r\n", b"18EA0A23 14\r\n", b"ZZZZZZZZ 00\r\n"]
    try:
        client.sock.sendto(b"hello\r\n", to)  # heard: a peer the port replies to from now on
        deadline = time.monotonic() + 20.0
        while not client.lines and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.lines, daemon.stderr()
        time.sleep(0.3)  # well past the power-up claims (at the first epoch)
        mark = len(client.lines)
        for datagram in (
            request(126996, GNSS),
            *garbage[1:],
            request(60928, 255),
            request(130306, GNSS),
            request(130306, 255),
        ):
            client.sock.sendto(datagram, to)
        time.sleep(1.5)
        received = [line for _, line in client.lines[mark:]]
    finally:
        client.close()
        summary = daemon.stop()
    messages = decode(received)
    by = {(m["pgn"], m["src"], m["dst"]) for m in messages}
    # asked of the GNSS: its product information; of all: both claims
    info = [m for m in messages if m["pgn"] == 126996]
    assert [m["src"] for m in info] == [GNSS]
    assert info[0]["fields"]["Model ID"] == "hild n2k-gnss"
    claims = [m for m in messages if m["pgn"] == 60928]
    assert sorted(m["src"] for m in claims) == [GNSS, COMPASS]
    assert {m["fields"]["Unique Number"] for m in claims} == {1001, 1002}
    # 130306 asked of the GNSS: a NAK to the client; asked of all: no other
    naks = [m for m in messages if m["pgn"] == 59392]
    assert [(m["src"], m["dst"]) for m in naks] == [(GNSS, CLIENT)]
    assert naks[0]["fields"]["Control"] == "NAK" and naks[0]["fields"]["PGN"] == 130306
    # and the nodes went on: their rapid PGNs all along
    assert (129025, GNSS, 255) in by and (127250, COMPASS, 255) in by
    gnss = summary["devices"]["gnss"]["requests"]
    compass = summary["devices"]["compass"]["requests"]
    assert gnss["malformed"] == len(garbage)
    assert (gnss["heard"], gnss["answered"], gnss["nak"], gnss["unanswered"]) == (4, 3, 1, 1)
    assert (compass["heard"], compass["answered"], compass["nak"]) == (2, 1, 0)
    # the frames addressed to the GNSS are not the compass's business, the short one too
    assert compass["ignored"] == 3 and compass["malformed"] == len(garbage) - 1
    assert summary["devices"]["gnss"]["failures"] == 0
    assert summary["ports"][url]["errors"] == 0
    assert summary["reason"] == "SIGTERM"


@pytest.mark.parametrize("pgn", [60928, 126996])
def test_a_request_to_a_node_without_an_address_claim_is_answered_to_all(pgn):
    """The system PGNs go to all whoever asks: ISO 11783's address claim always, the product
    information as a PDU2 PGN."""
    stats = requests.RequestStats()
    sent: list[tuple[int, int]] = []

    def message(p, payload, utc, destination):  # noqa: ANN001, ANN202
        sent.append((p.number, destination))
        return [b"x"]

    r = requests.Request(pgn, requests.NULL_ADDRESS, GNSS)
    lines, asked = requests.answer([r], ("129025",), b"", b"", message, START, stats)
    assert sent == [(pgn, 255)] and lines == [b"x"] and asked == set()


def test_a_nak_to_a_requester_without_an_address_goes_to_all():
    """A PGN the node does not send, asked of it by a requester without an address (ISO
    11783's NULL address, 254): the NAK (ISO Acknowledgement, control 1) cannot be addressed
    to it, so it goes to all; to a requester with an address, to that one. Once per PGN and
    destination in a batch."""
    stats = requests.RequestStats()
    sent: list[tuple[int, int, bytes]] = []

    def message(p, payload, utc, destination):  # noqa: ANN001, ANN202
        sent.append((p.number, destination, payload))
        return [b"x"]

    asked = [
        requests.Request(130306, requests.NULL_ADDRESS, GNSS),
        requests.Request(130306, requests.NULL_ADDRESS, GNSS),  # (the same again: one NAK)
        requests.Request(130306, 0x42, GNSS),
    ]
    lines, _ = requests.answer(asked, ("129025",), b"", b"", message, START, stats)
    nak = requests.iso_acknowledgement(1, 130306)
    assert sent == [(59392, 255, nak), (59392, 0x42, nak)] and lines == [b"x", b"x"]
    assert stats.nak == 2
