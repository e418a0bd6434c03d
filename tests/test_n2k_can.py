"""NMEA 2000 devices on a CAN bus through python-can (hild/transport/can.py): the port URLs,
the frames a running daemon puts on the bus as another python-can program reads them (CAN
over UDP multicast, real sockets between processes; SocketCAN's vcan0 where this machine has
one), the frames it hears from the bus, and what `hild check` and `hild run` say of a CAN
interface that is not there."""

from __future__ import annotations

import asyncio
import random
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hild.check import check_bench
from hild.n2k.frames import Frame, fast_packet, parse_can_id, single_frame
from hild.n2k.lines import parse_ydraw, ydraw
from hild.transport import PORT_TYPES, CanUdpPort, PortUrlError, SocketCanPort, open_port
from hild.transport import can as can_port
from hild.transport.url import parse_port_url
from hild.transport.ydraw import parse_frame
from tests.endpoints import Daemon

can = pytest.importorskip("can")

ROOT = Path(__file__).resolve().parents[1]
VCAN = "vcan0"


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def group_address() -> tuple[str, int]:
    """A multicast group of its own for a test, and a free port."""
    return f"239.74.163.{random.randint(10, 250)}", free_udp_port()


def multicast_bus(group: str, port: int):
    return can.Bus(interface="udp_multicast", channel=group, port=port, hop_limit=0)


def multicast_works() -> bool:
    """Whether two udp_multicast buses on this machine hear each other."""
    group, port = group_address()
    try:
        a, b = multicast_bus(group, port), multicast_bus(group, port)
    except (can.CanError, OSError):
        return False
    try:
        a.send(can.Message(arbitration_id=1, is_extended_id=True, data=b"\x01"), timeout=1)
        return b.recv(2.0) is not None
    except (can.CanError, OSError):
        return False
    finally:
        a.shutdown()
        b.shutdown()


def socketcan_usable(name: str) -> bool:
    if not (Path("/sys/class/net") / name).exists():
        return False
    try:
        socket.socket(socket.PF_CAN, socket.SOCK_RAW, socket.CAN_RAW).close()
    except (AttributeError, OSError):
        return False
    return can_port.interface_problem(name) is None


needs_multicast = pytest.mark.skipif(
    not multicast_works(), reason="UDP multicast does not reach this machine's own sockets"
)
needs_vcan = pytest.mark.skipif(
    not socketcan_usable(VCAN),
    reason=f"no SocketCAN interface {VCAN} here (sudo modprobe vcan; sudo ip link add dev vcan0 "
    "type vcan; sudo ip link set up vcan0)",
)


# --- the URLs ---------------------------------------------------------------------------------
def test_the_can_urls_name_an_interface_or_a_multicast_group():
    spec = parse_port_url("socketcan://can0")
    assert (spec.scheme, spec.path, spec.framing) == ("socketcan", "can0", "")
    assert parse_port_url("ydraw+socketcan://vcan0?mode=send").option("mode") == "send"
    spec = parse_port_url("canudp://239.74.163.2:43113?ttl=0")
    assert (spec.scheme, spec.host, spec.port, spec.option("ttl")) == (
        "canudp",
        "239.74.163.2",
        43113,
        "0",
    )
    assert PORT_TYPES["socketcan"] is SocketCanPort
    assert PORT_TYPES["canudp"] is CanUdpPort


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("actisense+socketcan://can0", "not Actisense's whole messages"),
        ("canudp://127.0.0.1:43113", "127.0.0.1 is not a multicast group"),
        ("canudp://239.74.163.2", "the port number is missing"),
        ("socketcan://", "'' is not a network interface's name"),
        ("socketcan://can0/x", "unexpected path '/x'"),
        ("socketcan://can0?baud=250000", "unknown query parameter 'baud'"),
        ("socketcan://can0?bitrate=250000", "socketcan parameters: one of mode"),
    ],
)
def test_a_wrong_can_url_says_what_is_wrong_and_the_form(url, said):
    with pytest.raises(PortUrlError) as e:
        parse_port_url(url)
    assert said in str(e.value)
    assert "socketcan://can0" in str(e.value) or "canudp://" in str(e.value)


# --- frames and lines: YDRAW (hild/transport/ydraw.py) --------------------------------------------
def test_the_port_reads_and_writes_the_frames_hild_n2k_makes_as_ydraw():
    utc = datetime(2026, 6, 1, 12, 0, 0, 123456, tzinfo=UTC)
    frames = [
        *single_frame(0x09F8010A, bytes(range(8))),
        *fast_packet(0x0DF8050A, bytes(range(43)), 5),
        Frame(0x18EAFF0B, b"\x00\xee\x00"),
        Frame(0x1CFFFFFF, b""),
    ]
    for frame, line in zip(frames, ydraw(frames, utc), strict=True):
        assert parse_frame(line) == (frame.can_id, frame.data)
        assert parse_frame(line.split(b" R ")[1]) == (frame.can_id, frame.data)
        ours = can_port.line_of_frame(frame.can_id, frame.data, utc)
        assert ours == line.rstrip()  # a gateway's received frame, as ydraw() writes it
        assert parse_ydraw(ours) == frame
    for bad in (
        b"",
        b"$GPGGA,1,2,3*00",
        b"09F8010A 2D 3F 69 23 0F 1F 3F 06 07",  # 9 bytes
        b"9F8010A 2D",  # 7 digits
        b"20000000 00",  # 30 bits
        b"09F8010A 2D3F",
        b"09F8010A ZZ",
        b"\xff\xfe 00",
    ):
        assert parse_frame(bad) is None
        assert parse_ydraw(bad) is None


# --- a missing interface, at `hild check` and at `hild run` -------------------------------------
def fake_interface(root: Path, name: str, kind: int, flags: int) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "type").write_text(f"{kind}\n")
    (root / name / "flags").write_text(f"{flags:#x}\n")


def test_an_interface_missing_down_or_not_can_is_named_with_what_makes_it(tmp_path):
    fake_interface(tmp_path, "can0", 280, 0x1003)  # up
    fake_interface(tmp_path, "can1", 280, 0x1002)  # down
    fake_interface(tmp_path, "eth0", 1, 0x1003)
    assert can_port.interface_problem("can0", tmp_path) is None
    down = can_port.interface_problem("can1", tmp_path)
    assert down == (
        "can1 is down: sudo ip link set can1 up type can bitrate 250000 "
        "(a vcan: sudo ip link set up can1)"
    )
    assert "eth0 is not a CAN interface" in str(can_port.interface_problem("eth0", tmp_path))
    missing = can_port.interface_problem("can9", tmp_path)
    assert missing is not None and missing.startswith("no network interface can9")
    assert "sudo modprobe vcan; sudo ip link add dev can9 type vcan; sudo ip link set up can9" in (
        missing
    )
    assert "lo is not a CAN interface" in str(can_port.interface_problem("lo"))


BENCH = """
[bench]
name = "can"
rate_hz = 100
seed = 3
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"

[vessel]
profile = "otter"
heading_deg = 30.0
speed = 1.2

[origin]
latitude = 59.41
longitude = 10.48

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
{extra}
"""


def can_bench(tmp_path: Path, url: str, extra: str = "") -> Path:
    path = tmp_path / "can.toml"
    path.write_text(BENCH.format(run_dir=tmp_path / "run", url=url, extra=extra))
    return path


def test_hild_check_warns_of_a_missing_interface_and_of_devices_a_can_bus_cannot_carry(
    tmp_path, capsys
):
    if (Path("/sys/class/net") / "can9").exists():
        pytest.skip("this machine has a can9")
    extra = """
[[device]]
name = "gps"
type = "gps"
ports = ["canudp://239.74.163.2:43113"]
"""
    assert check_bench(str(can_bench(tmp_path, "socketcan://can9", extra))) == 0
    said = capsys.readouterr().out
    assert "socketcan://can9 (NMEA 2000 bus: gnss, compass): " in said
    assert (
        "warning: socketcan://can9 (device gnss): no network interface can9 on this machine" in said
    )
    assert "sudo modprobe vcan" in said
    assert said.count("no network interface can9") == 1  # once a port
    assert "canudp://239.74.163.2:43113 (device gps): a CAN bus carries NMEA 2000 frames, and " in (
        said
    )


def test_opening_a_missing_interface_names_it_and_how_to_make_one():
    port = open_port(parse_port_url("socketcan://can9"))

    async def start():
        await port.start()

    with pytest.raises(OSError) as e:
        asyncio.run(start())
    assert "no network interface can9" in str(e.value)
    assert "sudo ip link add dev can9 type vcan" in str(e.value)


def test_an_interface_python_can_cannot_open_is_named_with_the_reason(monkeypatch):
    # lo passes for a CAN interface here: python-can's socketcan interface then fails to open
    # it (no SocketCAN in this kernel, or lo is no CAN device)
    monkeypatch.setattr(can_port, "interface_problem", lambda name: None)
    port = open_port(parse_port_url("socketcan://lo"))
    with pytest.raises(OSError) as e:
        asyncio.run(port.start())
    assert str(e.value).startswith("[Errno ")
    assert "cannot open SocketCAN lo (NMEA 2000 frames; 250 kbit/s set on the interface): " in (
        e.value.strerror
    )
    assert not port.stats.connected


def test_hild_run_refuses_a_missing_interface_naming_the_device_and_the_port(tmp_path):
    if (Path("/sys/class/net") / "can9").exists():
        pytest.skip("this machine has a can9")
    bench = can_bench(tmp_path, "socketcan://can9")
    run = subprocess.run(
        [sys.executable, "-m", "hild.cli", "run", str(bench)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2, run.stderr
    assert (
        "hild: error: device gnss, compass, port socketcan://can9: no network interface can9"
        in (run.stderr)
    )


def test_python_can_missing_is_said_with_how_to_install_it(monkeypatch):
    monkeypatch.setattr(can_port.importlib.util, "find_spec", lambda name: None)
    spec = parse_port_url("canudp://239.74.163.2:43113")
    assert can_port.can_warnings(spec) == [
        "python-can is not installed: pip install 'python-can>=4.4,<5'"
    ]
    monkeypatch.setitem(sys.modules, "can", None)  # `import can` raises ImportError
    with pytest.raises(OSError) as e:
        asyncio.run(open_port(spec).start())
    assert "python-can is not installed: pip install" in str(e.value)


# --- a port in this process: what it hears, what it drops ---------------------------------------
def frame_with_id(bus, identifier: int, timeout: float = 2.0):
    """The next frame ``bus`` hears with that identifier (the group gives python-can its own
    frames back, and datagrams that are no frames are python-can's errors); None if none."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            message = bus.recv(left)
        except can.CanOperationError:
            continue
        if message is None or message.arbitration_id == identifier:
            return message
    return None


@needs_multicast
def test_frames_heard_go_to_on_line_as_ydraw_and_a_full_bus_drops_without_waiting():
    group, number = group_address()
    url = f"canudp://{group}:{number}?ttl=0"

    async def scenario():
        port = open_port(parse_port_url(url), queue_lines=1024)
        heard = []
        port.on_line = heard.append
        peer = multicast_bus(group, number)
        await port.start()
        try:
            # a datagram that is no frame, then from another node an ISO request (59904) to
            # 10 and an 11-bit frame (not N2K's)
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as raw:
                raw.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 0)
                raw.sendto(b"not msgpack", (group, number))
            request = can.Message(
                arbitration_id=0x18EA0A0B, is_extended_id=True, data=b"\x14\xf0\x01"
            )
            peer.send(request)
            peer.send(can.Message(arbitration_id=0x123, is_extended_id=False, data=b"\x00"))
            before = time.monotonic()
            line = b"12:00:00.100 R 09F8010A 2D 3F 69 23 0F 1F 3F 06\r\n"
            port.send(line)
            deadline = time.monotonic() + 5
            while (not heard or not port.stats.ignored_lines) and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            sent = await asyncio.to_thread(frame_with_id, peer, 0x09F8010A)
            assert sent is not None
            assert (sent.arbitration_id, sent.is_extended_id, bytes(sent.data)) == (
                0x09F8010A,
                True,
                bytes.fromhex("2D3F69230F1F3F06"),
            )
            await asyncio.sleep(0.1)  # its own frame, back from the group, is not heard
            assert len(heard) == 1
            item = heard[0]
            assert item.port == url and item.peer is None
            assert before <= item.t_rx <= time.monotonic()
            assert parse_ydraw(item.line) == Frame(0x18EA0A0B, b"\x14\xf0\x01")
            assert item.line.split()[1] == b"R"
            assert port.stats.received_lines == 1
            assert port.stats.ignored_lines == 1
            assert port.stats.errors == 1  # the datagram that was no frame
            assert port.stats.sent_lines == 1

            # a transmit queue full for a moment: the frame waits its turn, the tick does not
            real_send, refusals = port._bus.send, [2]

            def busy(message, timeout=None):
                if refusals[0]:
                    refusals[0] -= 1
                    raise can.CanOperationError("Transmit buffer full")
                real_send(message, timeout)

            port._bus.send = busy
            port.send(line)
            for _ in range(200):
                if port.stats.sent_lines == 2:
                    break
                await asyncio.sleep(0.005)
            assert (port.stats.sent_lines, port.stats.dropped_lines) == (2, 0)

            # a bus that takes nothing: every frame dropped after its wait, never the tick held
            def full(message, timeout=None):
                raise can.CanOperationError("Transmit buffer full")

            port._bus.send = full
            port.tx_patience_s = 0.01
            began = time.perf_counter()
            for _ in range(20):
                port.send(line)
            assert time.perf_counter() - began < 0.05  # queued: the tick goes on
            for _ in range(300):
                if port.stats.dropped_lines == 20:
                    break
                await asyncio.sleep(0.01)
            assert port.stats.dropped_lines == 20
            port.send(b"A120000.100 0AFF2 1F801 2D3F69230F1F3F06\r\n")  # not a frame's line
            await asyncio.sleep(0.05)
            assert port.stats.errors == 2  # (and the datagram that was no frame)
            assert port.describe() == (
                f"CAN over UDP multicast {group}:{number} (python-can udp_multicast, ttl 0)"
            )
        finally:
            await port.close()
            peer.shutdown()
        # closing twice is harmless; a closed port counts what it is given and never raises
        assert not port.stats.connected
        await port.close()
        dropped = port.stats.dropped_lines
        port.send(line)
        assert port.stats.dropped_lines == dropped + 1
        with pytest.raises(RuntimeError):
            await port.start()

    asyncio.run(scenario())


# --- the daemon's frames on the bus -------------------------------------------------------------
FAST = {126996, 129029}  # the fast-packet PGNs the two nodes send


def frames_on_the_bus(tmp_path: Path, url: str, bus, seconds: float = 2.5):
    """Run the gnss and the compass on ``url`` for ``seconds``, an ISO request sent to the
    daemon on the way; every frame ``bus`` heard (read as they come: a socket's buffer holds
    only a second or two of them) and the run's summary."""
    heard: list = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            message = bus.recv(0.1)
            # (python-can hears its own frames on multicast: the request's, from 32)
            if message is not None and message.arbitration_id & 0xFF != 32:
                heard.append(message)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        daemon = Daemon(str(can_bench(tmp_path, url)), tmp=tmp_path)
        try:
            time.sleep(seconds)
            request = can.Message(
                arbitration_id=0x18EAFF20, is_extended_id=True, data=b"\x14\xf0\x01"
            )
            bus.send(request)  # from 32: PGN 59904, asking all for 126996
            time.sleep(0.3)
        finally:
            summary = daemon.stop()
        time.sleep(0.3)
    finally:
        stop.set()
        reader.join(5)
    return heard, summary


def check_frames(heard) -> None:
    """Extended 29-bit identifiers, 8 bytes a frame, each node's address claim first, each PGN
    at its priority, and fast packets' frame and sequence counters in order."""
    assert len(heard) > 100
    assert all(m.is_extended_id and not m.is_remote_frame and not m.is_fd for m in heard)
    assert all(len(m.data) == 8 for m in heard)
    ids = [parse_can_id(m.arbitration_id) for m in heard]
    sources = sorted({source for _, _, source, _ in ids})
    assert sources == [10, 11]  # gnss, compass
    for source in sources:
        pgn, priority, _, _ = next(i for i in ids if i[2] == source)
        assert (pgn, priority) == (60928, 6)  # the address claim first
    for pgn, priority in ((129025, 2), (129029, 3), (60928, 6), (127250, 2), (126996, 6)):
        assert {q for g, q, _, _ in ids if g == pgn} == {priority}, pgn
    for source in sources:
        for pgn in FAST:
            data = [
                bytes(m.data)
                for m, i in zip(heard, ids, strict=True)
                if (i[0], i[2]) == (pgn, source)
            ]
            sequences = []
            while data:
                length = data[0][1]
                n = 1 + -(-max(length - 6, 0) // 7)
                message, data = data[:n], data[n:]
                assert [f[0] & 0x1F for f in message] == list(range(n)), (source, pgn)
                assert len({f[0] >> 5 for f in message}) == 1  # one sequence counter
                sequences.append(message[0][0] >> 5)
            if pgn == 129029 and source == 10:
                assert len(sequences) >= 2
            first = sequences[0] if sequences else 0
            assert sequences == [(first + k) % 8 for k in range(len(sequences))]


@needs_multicast
def test_the_daemon_s_nodes_on_can_over_udp_multicast(tmp_path):
    group, number = group_address()
    url = f"canudp://{group}:{number}?ttl=0"
    bus = multicast_bus(group, number)  # in the group before the daemon's first frame
    try:
        heard, summary = frames_on_the_bus(tmp_path, url, bus)
    finally:
        bus.shutdown()
    check_frames(heard)
    stats = summary["ports"][url]
    assert stats["sent_lines"] == len(heard)  # every frame the port sent, none lost
    assert stats["dropped_lines"] == 0 and stats["errors"] == 0
    assert stats["received_lines"] >= 1  # the ISO request, which each node answered:
    for source in (10, 11):  # its product information at its claim, and again
        firsts = [
            m
            for m in heard
            if parse_can_id(m.arbitration_id)[::2] == (126996, source) and m.data[0] & 0x1F == 0
        ]
        assert len(firsts) == 2, source


@needs_vcan
def test_the_daemon_s_nodes_on_socketcan_vcan0(tmp_path):
    url = f"socketcan://{VCAN}"
    bus = can.Bus(interface="socketcan", channel=VCAN)
    try:
        heard, summary = frames_on_the_bus(tmp_path, url, bus)
    finally:
        bus.shutdown()
    check_frames(heard)
    assert summary["ports"][url]["received_lines"] >= 1


def test_hild_transport_does_not_import_python_can():
    probe = "import sys, hild.transport, hild.check; print('can' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.stdout.strip() == "False", out.stderr
