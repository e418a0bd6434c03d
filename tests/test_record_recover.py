"""A recording any reader opens: `hild recover` makes a finished copy of one a kill cut short
(every message the original reads back, by the `mcap` package's seeking and streaming readers),
a recording says how it ended, each schema is written once and the header names hild's profile;
/control holds what its sender sent; a replay's bare --to URL gets what went to that port."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from mcap.reader import make_reader
from mcap.records import Header, Metadata, Schema
from mcap.stream_reader import StreamReader

from hild.record import channels
from hild.record.reader import inspect, inspect_open, messages
from hild.record.repair import open_recording
from hild.record.scan import summary_start
from hild.record.writer import RecordWriter
from tests.endpoints import Daemon, UdpClient, free_udp_port, nmea_line
from tests.forked_cli import run_hild
from tests.test_daemon import default_bench_on_free_ports

START = "2026-06-01T12:00:00Z"


def hild(*args: str) -> subprocess.CompletedProcess:
    return run_hild(*args, timeout=120)


def inspect_count(record: Path) -> int:
    """The message count `hild inspect` prints."""
    p = hild("inspect", str(record))
    assert p.returncode == 0, p.stderr
    return int(re.search(r"messages\s+(\d+) on", p.stdout).group(1))


def test_inspect_says_a_recording_a_hild_writes_now_is_being_written(tmp_path):
    """Reproduces: `hild inspect` on the file of a running `hild run --record` said it was cut
    short and named `hild recover`, which refuses a file a hild is writing."""
    record = tmp_path / "live.mcap"
    writer = RecordWriter(record, {"hild": {"kind": "test"}}, nmea_log=False)
    writer.start()
    try:
        live = hild("inspect", str(record))
        refused = hild("recover", str(record))
    finally:
        writer.close()
    assert live.returncode == 0, live.stderr
    assert live.stdout.startswith(f"{record}: being written by a running hild"), live.stdout
    assert "cut short" not in live.stdout and "hild recover" not in live.stdout
    assert refused.returncode == 2 and "no hild is writing" in refused.stderr  # (as it says)
    done = hild("inspect", str(record))
    assert done.stdout.startswith(f"{record}: complete"), done.stdout  # its writer finished it


def test_a_recording_this_process_holds_for_its_repair_is_not_one_being_written(tmp_path):
    """--repair and recover read the file they hold locked through their own descriptor:
    ``inspect`` by its path would take this process's own lock for a writer's."""
    record = tmp_path / "cut.mcap"
    writer = RecordWriter(record, {"hild": {"kind": "test"}}, nmea_log=False)
    writer.start()
    for i in range(50):
        writer.put(channels.SENSORS + "gps", 10**18 + i * 10**8, {"t": i / 10, "sentence": "x"})
    writer.close()
    with open(record, "r+b") as f:  # the summary and what follows it cut off
        f.truncate(summary_start(f.fileno(), record.stat().st_size))
    fd = open_recording(record, write=True)
    try:
        held = inspect_open(record, fd)
        by_path = inspect(record)
    finally:
        os.close(fd)
    assert not held.complete and not held.being_written
    assert by_path.being_written  # (what --repair saw of its own lock before)
    assert held.counts == inspect(record).counts and held.counts


def test_a_killed_recording_recovered_reads_in_full_with_any_reader(tmp_path):
    bench = default_bench_on_free_ports(tmp_path, free_udp_port(), free_udp_port())
    record = tmp_path / "killed.mcap"
    daemon = Daemon(
        bench,
        "--start-time",
        START,
        "--record",
        str(record),
        "--run-dir",
        str(tmp_path / "run"),
        tmp=tmp_path,
    )
    time.sleep(2.5)
    # while the daemon writes it, a copy is refused (its writer holds the file)
    busy = hild("recover", str(record))
    assert busy.returncode == 2 and "no hild is writing" in busy.stderr, busy.stderr
    daemon.proc.send_signal(signal.SIGKILL)  # a crash: nothing finished
    daemon.proc.wait(10)
    said = hild("inspect", str(record)).stdout
    assert "cut short" in said and f"hild recover {record}" in said, said
    counted = inspect_count(record)
    assert counted > 100
    original = record.read_bytes()
    ours = [(m.topic, m.log_time_ns, m.payload) for m in messages(record)]
    p = hild("recover", str(record))
    out = tmp_path / "killed-recovered.mcap"
    assert p.returncode == 0, p.stderr
    assert f"recovered to {out}: {counted} messages" in p.stdout, p.stdout
    assert record.read_bytes() == original  # the input as it was
    # the `mcap` package's seeking reader: by the summary, in log time order (its default)
    with open(out, "rb") as f:
        reader = make_reader(f, validate_crcs=True)
        summary = reader.get_summary()
        assert summary is not None and summary.chunk_indexes
        assert summary.statistics.message_count == counted
        assert sum(1 for _ in reader.iter_messages()) == counted
        theirs = [
            (c.topic, m.log_time, json.loads(m.data))
            for _, c, m in reader.iter_messages(log_time_order=False)
        ]
        assert {m.name for m in reader.iter_metadata()} >= {"hild", "bench", "recording"}
    assert theirs == ours
    # ... and its streaming reader, which make_reader gives a stream that cannot seek (a pipe)
    cat = subprocess.Popen(["cat", str(out)], stdout=subprocess.PIPE)
    assert cat.stdout is not None and not cat.stdout.seekable()
    streamed = sum(1 for _ in make_reader(cat.stdout, validate_crcs=True).iter_messages())
    cat.wait(10)
    assert streamed == counted
    # the copy says what it is: indexed, but not a recording its writer finished
    said = hild("inspect", str(out)).stdout
    assert "cut short, indexed since by hild recover" in said and "complete" not in said, said
    assert inspect_count(out) == counted
    # an existing copy is never replaced unasked; --force replaces it; the input never
    again = hild("recover", str(record))
    assert again.returncode == 2 and str(out) in again.stderr and "--force" in again.stderr
    assert "Traceback" not in again.stderr
    forced = hild("recover", str(record), str(out), "--force")
    assert forced.returncode == 0, forced.stderr
    itself = hild("recover", str(record), str(record), "--force")
    assert itself.returncode == 2 and "other than the recording itself" in itself.stderr
    assert record.read_bytes() == original
    # hild inspect --recover does the same, to a named file here, and describes the copy
    other = tmp_path / "copy.mcap"
    p = hild("recover", str(record), str(other))
    assert p.returncode == 0 and inspect_count(other) == counted
    p = hild("inspect", "--recover", "--force", str(record))
    assert p.returncode == 0 and f"recovered to {out}" in p.stdout, p.stderr
    assert "indexed since by hild recover" in p.stdout
    assert not list(tmp_path.glob(".*.part"))  # no temporary file left


def test_recover_names_what_it_cannot_do(tmp_path):
    missing = tmp_path / "none.mcap"
    p = hild("recover", str(missing))
    assert p.returncode == 2 and str(missing) in p.stderr and "no such file" in p.stderr
    bad = tmp_path / "notes.mcap"
    bad.write_text("hello\n")
    p = hild("recover", str(bad))
    assert p.returncode == 2 and str(bad) in p.stderr and "MCAP" in p.stderr, p.stderr
    assert not (tmp_path / "notes-recovered.mcap").exists()
    record = tmp_path / "ok.mcap"
    writer = RecordWriter(record, {"hild": {"kind": "test"}}, nmea_log=False)
    writer.start()
    writer.put(channels.SENSORS + "gps", 10**18, {"t": 0.0, "utc": "", "sentence": "$X"})
    writer.close()
    nowhere = tmp_path / "no-such-folder" / "copy.mcap"
    p = hild("recover", str(record), str(nowhere))
    assert p.returncode == 2 and str(nowhere) in p.stderr and "existing folder" in p.stderr
    p = hild("recover", str(record))  # complete: copied as it is, still a finished recording
    assert p.returncode == 0 and "complete already" in p.stdout, p.stderr
    said = hild("inspect", str(tmp_path / "ok-recovered.mcap")).stdout.splitlines()[0]
    assert said.endswith(": complete"), said


def records_of(path: Path) -> list:
    with open(path, "rb") as f:
        return list(StreamReader(f, skip_magic=False).records)


def test_one_schema_record_per_schema_the_profile_and_how_it_ended(tmp_path):
    record = tmp_path / "run.mcap"
    writer = RecordWriter(record, {"hild": {"kind": "test"}}, nmea_log=False)
    writer.start()
    t0 = 1_780_315_200 * 10**9
    for i, device in enumerate(("gps", "wind", "speed", "jets")):
        writer.put(channels.SENSORS + device, t0 + i, {"t": 0.0, "utc": "", "sentence": "$X"})
    writer.put(channels.STATE, t0, {"t": 0.0, "utc": "", "north": 0.0})
    writer.close()
    records = records_of(record)
    (header,) = [r for r in records if isinstance(r, Header)]
    assert header.profile == "x-hild" and header.library.startswith("hild ")
    with open(record, "rb") as f:
        summary = make_reader(f).get_summary()
    assert summary is not None
    # four /sensors channels, one hild.sensors schema; the state's own: in the data and summary
    names = [s.name for s in summary.schemas.values()]
    assert sorted(names) == ["hild.sensors", "hild.state"], names
    in_data = [r.name for r in records if isinstance(r, Schema)]
    assert sorted(in_data) == sorted(names * 2), in_data  # data section, then the summary
    sensors = {c.schema_id for c in summary.channels.values() if c.topic.startswith("/sensors/")}
    assert len(sensors) == 1 and len(summary.channels) == 5
    ending = [r.metadata for r in records if isinstance(r, Metadata) and r.name == "recording"]
    assert ending == [{"status": "finished", "messages": "5", "dropped": "0"}], ending
    assert inspect(record).ending["status"] == "finished"


def test_dotted_keys_come_nested_too(tmp_path):
    record = tmp_path / "sim.mcap"
    p = hild("sim", "otter", "--duration", "2", "--cmd", "port.rpm=900", "--record", str(record))
    assert p.returncode == 0, p.stderr
    actuators = [m.payload for m in messages(record, [channels.ACTUATORS])]
    assert actuators[-1]["port.rpm_commanded"] == 900.0
    for a in actuators:
        assert a["port"] == {"rpm": a["port.rpm"], "rpm_commanded": a["port.rpm_commanded"]}
        assert a["force"] == {"X": a["force.X"], "Y": a["force.Y"], "N": a["force.N"]}
    with open(record, "rb") as f:
        summary = make_reader(f).get_summary()
    (schema,) = [s for s in summary.schemas.values() if s.name == "hild.actuators"]
    properties = json.loads(schema.data)["properties"]
    assert "port.rpm" in properties and "rpm" in properties["port"]["properties"]


def recorded_run_with_jets_feedback(tmp_path) -> tuple[Path, UdpClient, int, int]:
    """A daemon run on the default bench: sensors to UDP port S, the jets' controller on UDP C
    (listening: its feedback goes back to the controller); one command sent, then stopped."""
    sensors = UdpClient().start()
    commands = free_udp_port()
    bench = default_bench_on_free_ports(tmp_path, sensors.port, commands)
    record = tmp_path / "run.mcap"
    daemon = Daemon(
        bench,
        "--start-time",
        START,
        "--record",
        str(record),
        "--run-dir",
        str(tmp_path / "run"),
        tmp=tmp_path,
    )
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            controller = s.getsockname()[1]
            for _ in range(10):
                s.sendto(nmea_line("RCTRC,1,1200.0,R,100.0,P,,B,C"), ("127.0.0.1", commands))
                time.sleep(0.2)
    finally:
        run = daemon.stop()
    assert run["record"]["complete"], run
    return record, sensors, commands, controller


def test_replay_sends_to_a_port_what_went_there(tmp_path):
    record, sensors, commands, _ = recorded_run_with_jets_feedback(tmp_path)
    try:
        by_device: dict[str, set[bytes]] = {}
        for m in messages(record, [channels.SENSORS]):
            line = m.payload["sentence"].encode() + b"\r\n"
            by_device.setdefault(m.topic.rsplit("/", 1)[1], set()).add(line)
        assert by_device.get("jets"), "no feedback from the jets recorded"
        jets = by_device["jets"]
        to_sensors = by_device["gps"] | by_device["wind"] | by_device["speed"]
        assert not jets & to_sensors
        url = f"udp://127.0.0.1:{sensors.port}"

        sent = []

        def replay(*args: str) -> set[bytes]:
            sensors.lines.clear()
            p = hild("replay", str(record), "--speed", "20", *args)
            assert p.returncode == 0, p.stderr
            time.sleep(0.3)  # the last datagrams into the collector
            done = [json.loads(x) for x in p.stderr.splitlines() if '"replay.done"' in x]
            sent.append(done[-1]["sent"])
            return {line for _, line in sensors.lines}

        got = replay("--to", url)  # what the run sent to the sensors' port, and only that
        assert got and got <= to_sensors, got - to_sensors
        assert not got & jets
        # its count is of the lines sent there, not of the recording's every line
        topics = [m.topic for m in messages(record, [channels.SENSORS])]
        assert sent[-1] == len([t for t in topics if not t.endswith("/jets")])
        got = replay("--to", url, "--all")  # every line, the jets' feedback too
        assert got & jets and got & to_sensors
        got = replay("--to", f"jets={url}")  # one device's lines, wherever they went
        assert got and got <= jets
    finally:
        sensors.close()
    # a port no recorded device sent to: refused, naming the devices and their ports
    unused = free_udp_port()
    p = hild("replay", str(record), "--to", f"udp://127.0.0.1:{unused}")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert str(record) in p.stderr and f"--to = 'udp://127.0.0.1:{unused}'" in p.stderr
    assert f"jets: pty://jets, udp://127.0.0.1:{commands}?listen=1" in p.stderr, p.stderr
    assert f"gps: pty://gps, udp://127.0.0.1:{sensors.port}" in p.stderr
    assert "--all" in p.stderr and "DEVICE" in p.stderr
    # the jets' command port is no place their lines went (it answered its senders): a plain
    # URL to its address is refused, not fed the jets' feedback
    p = hild("replay", str(record), "--to", f"udp://127.0.0.1:{commands}")
    assert p.returncode == 2 and f"--to = 'udp://127.0.0.1:{commands}'" in p.stderr, p.stderr


def test_nesting_follows_each_payloads_values_and_keys():
    # the nesting of a key set is kept between messages: values must still be each payload's
    first = channels.nested({"t": 1.0, "port.rpm": 100.0, "port.angle": 0.5, "force.X": 3.0})
    second = channels.nested({"t": 2.0, "port.rpm": 200.0, "port.angle": -0.5, "force.X": 4.0})
    assert first["port"] == {"rpm": 100.0, "angle": 0.5} and first["force"] == {"X": 3.0}
    assert second["port"] == {"rpm": 200.0, "angle": -0.5} and second["force"] == {"X": 4.0}
    assert second["port.rpm"] == 200.0 and second["t"] == 2.0
    # a name the payload has is never shadowed; a key set without dots comes back as it is
    own = {"port": "given", "port.rpm": 1.0}
    assert channels.nested(own) == own
    plain = {"t": 1.0, "x": 2.0}
    assert channels.nested(plain) is plain
    assert channels.nested({"t": 1.0, ".x": 1.0, "y.": 2.0}) == {"t": 1.0, ".x": 1.0, "y.": 2.0}


def test_a_finished_recording_damaged_since_reads_as_damaged_not_cut_short(tmp_path):
    """Bytes overwritten after the run (offset 100 on: the header's metadata) made `hild
    inspect` call a finished, indexed file "cut short" and advise --repair, which then found
    nothing to repair."""
    record = tmp_path / "r.mcap"
    assert hild("sim", "odin", "--duration", "5", "--record", str(record)).returncode == 0
    assert inspect(record).complete and inspect(record).unreadable_at is None
    data = bytearray(record.read_bytes())
    data[100:300] = bytes((i * 37 + 11) % 251 for i in range(200))  # not MCAP's records
    record.write_bytes(bytes(data))
    contents = inspect(record)
    assert contents.indexed and 100 <= contents.unreadable_at <= 300, contents
    said = hild("inspect", str(record)).stdout
    assert "DAMAGED" in said and "cut short" not in said and "--repair" not in said, said
    # a file cut short still reads as one: its end torn off, no footer
    record.write_bytes(bytes(data[: len(data) // 2]))
    assert "cut short" in hild("inspect", str(record)).stdout


def test_a_copy_into_a_folder_that_cannot_be_written_names_the_copy(tmp_path):
    """It named the hidden temporary file the copy is written to first."""
    record = tmp_path / "r.mcap"
    assert hild("sim", "odin", "--duration", "1", "--record", str(record)).returncode == 0
    done = hild("recover", str(record), "/proc/r.mcap")  # (/proc takes no new file, even root's)
    assert (
        done.returncode == 2
        and "/proc/r.mcap: expected a file that can be written in /proc" in done.stderr
        and ".part" not in done.stderr
    ), done.stderr
