"""`--foxglove [HOST:]PORT` read as users write it, a port already taken refused naming the
option, a service call the run cannot answer answered an error (not left hanging); and the
GPS fixes of /fix/<device> read from the sentences as they were sent."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading

import pytest

from hild.live import foxglove
from hild.live.address import FOXGLOVE_HOST, FOXGLOVE_PORT, parse_foxglove_address
from hild.record.fixes import FixReader, reports_fixes
from tests.endpoints import write_bench


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9000", (FOXGLOVE_HOST, 9000)),
        ("0.0.0.0:8765", ("0.0.0.0", 8765)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:9001", ("::1", 9001)),
        (":9002", (FOXGLOVE_HOST, 9002)),
        ("boat.local:8765", ("boat.local", 8765)),
    ],
)
def test_an_address_is_read_as_written(text, expected):
    assert parse_foxglove_address(text) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("localhost:http", "[HOST:]PORT"),
        ("70000", "0 to 65535"),
        ("", "[HOST:]PORT"),
        ("127.0.0.1:-1", "0 to 65535"),
    ],
)
def test_a_bad_address_says_what_was_expected(text, says):
    with pytest.raises(ValueError, match=None) as e:
        parse_foxglove_address(text)
    assert says in str(e.value)


def test_the_bare_option_is_foxgloves_default():
    assert (FOXGLOVE_HOST, FOXGLOVE_PORT) == ("127.0.0.1", 8765)


def test_a_port_already_taken_is_refused_naming_the_option(tmp_path):
    pytest.importorskip("foxglove")
    bench = write_bench(
        tmp_path / "bench.toml",
        "taken",
        tmp_path / "run",
        """
[[device]]
name = "gps"
type = "gps"
port = "pty://gps"
""",
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "hild.cli",
                "run",
                str(bench),
                "--foxglove",
                f"127.0.0.1:{port}",
                "--duration",
                "1",
                "--quiet",
                "--log-format",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 2, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"hild: error: --foxglove 127.0.0.1:{port}: "), last
    assert "in use" in last
    assert "Traceback" not in result.stderr


def test_a_call_after_the_run_has_ended_is_answered():
    live = foxglove.FoxgloveLive()
    answer = json.loads(live._call("weather", b"{}"))
    assert answer == {"ok": False, "request": "weather", "error": "the run has ended"}


def test_a_call_the_loop_does_not_answer_in_time_is_answered(monkeypatch):
    """A loop held up (here: a handler that takes longer than the call may wait) answers the
    viewer an error after CALL_TIMEOUT_S, and the SDK's thread is free again."""
    monkeypatch.setattr(foxglove, "CALL_TIMEOUT_S", 0.2)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    live = foxglove.FoxgloveLive()
    live._loop = loop

    class HeldUp:  # the run's runtime control, taking longer than the call may wait
        async def handle(self, request: str, payload: bytes, source: str) -> dict:
            await asyncio.sleep(30)
            return {"ok": True}

    live.runtime = HeldUp()
    try:
        answer = json.loads(live._call("fault", b"{}"))
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        if not thread.is_alive():  # (a loop left open is closed by the collector, later, in
            loop.close()  # another test, whose warnings it then spoils)
    assert answer == {"ok": False, "request": "fault", "error": "no answer from the run"}
    assert live.calls == 1


def frame(body: str) -> str:
    """An NMEA 0183 line: $, the body, * and the XOR of the body's bytes in hex."""
    checksum = 0
    for c in body.encode():
        checksum ^= c
    return f"${body}*{checksum:02X}"


GGA = frame("GPGGA,120000.00,5924.60000,N,01028.80000,E,1,10,0.9,2.5,M,40.0,M,,")
RMC = frame("GPRMC,120000.00,A,5924.60000,N,01028.80000,E,3.0,90.0,010626,,,A")
GGA_NO_FIX = frame("GPGGA,120001.00,,,,,0,00,0.9,,M,,M,,")
RMC_VOID = frame("GPRMC,120001.00,V,,,,,,,010626,,,N")
NVG = frame("CPNVG,120002.00,5924.61200,N,01028.80000,E,1,,,90.0,0.0,0.0,120002.00")


def test_one_fix_an_epoch_from_the_first_position_sentence():
    reader = FixReader()
    fix = reader.fix("gps", 1_000, GGA)
    assert fix is not None
    assert fix["frame_id"] == "gps" and fix["timestamp"] == {"sec": 0, "nsec": 1_000}
    assert fix["latitude"] == pytest.approx(59.41, abs=1e-12)  # 59 deg 24.6 min
    assert fix["longitude"] == pytest.approx(10.48, abs=1e-12)  # 10 deg 28.8 min
    assert fix["altitude"] == pytest.approx(42.5)  # 2.5 m above MSL, geoid 40 m above WGS84
    assert reader.fix("gps", 1_000, RMC) is None  # the same epoch: its RMC adds no fix
    assert reader.fix("other", 1_000, RMC)["altitude"] == 0.0  # (another device; RMC: no height)
    assert reader.fix("gps", 2_000, GGA_NO_FIX) is None  # no fix reported: none drawn
    assert reader.fix("gps", 2_000, RMC_VOID) is None
    assert reader.fix("gps", 2_000, frame("GPHDT,90.0,T")) is None  # no position sentence
    assert reader.fix("gps", 3_000, GGA[:-2] + "00") is None  # a bad checksum
    nvg = reader.fix("frontseat", 3_000, NVG)
    assert nvg is not None and nvg["latitude"] == pytest.approx(59.4102, abs=1e-12)


def test_which_devices_send_fixes():
    assert reports_fixes(["GGA", "VTG"]) and reports_fixes(["RMC"])
    assert reports_fixes(["GPRMC", "CPNVG"])  # the frontseat's names
    assert not reports_fixes(["HDT", "XDR"]) and not reports_fixes([])
