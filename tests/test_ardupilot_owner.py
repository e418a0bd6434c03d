"""ArduPilot's link belongs to one SITL (hild/ardupilot/link.py): the device on its own UDP
socket, driven frame by frame as the daemon's loop drives it, by senders on real sockets of
127.0.0.1 (tests/ardupilot_client.py). Who owns the link, what a restart is, what is lost.
The whole run (answers, the summary, the log) is in tests/test_ardupilot_link.py."""

from __future__ import annotations

import time

import pytest

import hild.ardupilot.link as link_module
from hild.ardupilot.link import MAX_LOST_FRAMES, RESTART_BELOW, ArduPilotSitl
from hild.ardupilot.protocol import ServoFrame
from hild.bench import load_bench
from hild.control import ControlRecord, Restart
from hild.transport.url import parse_port_url
from hild.world.build import initial_simulation
from tests.ardupilot_client import Sitl
from tests.test_ardupilot import bench_file

SILENT_S = 1.0  # the owner's silence before a new SITL may take over, shortened for the tests


class Link:
    """The ardupilot-sitl device listening on an ephemeral port of 127.0.0.1."""

    def __init__(self, tmp_path):
        bench = load_bench(bench_file(tmp_path, port="udp://127.0.0.1:0?listen=1"))
        (config,) = bench.devices
        self.device = ArduPilotSitl(config, 0, bench.origin, bench.vessel)
        self.device.open(parse_port_url(config.ports[0]))
        sim = initial_simulation(bench)
        self.device.start(sim.x, sim.act_state, sim.act_cmd, 1.0 / 1200)
        assert self.device.socket is not None
        self.port = self.device.socket.sock.getsockname()[1]
        self.records: list[ControlRecord] = []
        self.step = 0
        self.senders: list[Sitl] = []

    def sender(self) -> Sitl:
        sitl = Sitl(self.port)
        self.senders.append(sitl)
        return sitl

    def take(self, sender: Sitl, count: int) -> ServoFrame | None:
        """``sender``'s frame ``count`` through the device: the frame stepped on, or None."""
        sender.send(count)
        frame = self.device.next_frame(self.records.append, self.step)
        if frame is not None:
            self.step += 1
        return frame

    def taken(self, sender: Sitl, counts) -> list[int | None]:
        """The counts of the frames stepped on (None for each not)."""
        return [None if (f := self.take(sender, c)) is None else f.frame_count for c in counts]

    @property
    def restarts(self) -> int:
        return sum(isinstance(r, Restart) for r in self.records)

    def close(self) -> None:
        for sitl in self.senders:
            sitl.close()
        self.device.close()


@pytest.fixture
def link(tmp_path, monkeypatch):
    monkeypatch.setattr(link_module, "OWNER_SILENT_S", SILENT_S)
    made = Link(tmp_path)
    yield made
    made.close()


def test_a_second_sender_interleaving_frames_is_refused_not_a_restart(link):
    """Two senders interleaving frames on the port: the first owns the link, the second's
    frames (near zero, or far from the owner's count) are counted as foreign, never a reset.
    (Before: every frame of the second was a restart, every next of the owner's lost frames.)"""
    owner, second, third = link.sender(), link.sender(), link.sender()
    for i in range(100):
        assert link.take(owner, 50_000 + i) is not None
        assert link.take(second, i) is None  # a newly started SITL's counts: refused
        assert link.take(third, 50_000 + 2 * i) is None  # a count near the owner's: refused
    stats = link.device.link
    assert (link.restarts, stats.restarts, stats.lost, stats.malformed) == (0, 0, 0, 0)
    assert (stats.frames, stats.foreign, link.step) == (100, 200, 100)
    assert link.device.summary()["foreign"] == 200  # on the run's summary


def test_a_restart_of_the_owner_from_its_own_address_resets(link):
    """Back to zero from the owner: a restart (the vessel reset, queued before the step)."""
    owner = link.sender()
    assert link.taken(owner, range(500)) == list(range(500))
    assert link.take(owner, 0) is not None
    assert link.restarts == link.device.link.restarts == 1
    assert link.taken(owner, range(1, 5)) == [1, 2, 3, 4]  # the new session's next frames
    assert link.restarts == 1


def test_a_count_back_but_not_near_zero_is_skipped_not_a_restart(link):
    """Back from 500 to 400 is no frame of this session and no new SITL's first: skipped
    unanswered as malformed; the count stays, so the owner's next frame is the next step."""
    owner = link.sender()
    link.taken(owner, range(500))
    assert link.take(owner, 400) is None
    assert link.take(owner, RESTART_BELOW) is None  # the first count that is no restart
    assert link.take(owner, 500) is not None
    stats = link.device.link
    assert (link.restarts, stats.malformed, stats.lost, stats.frames) == (0, 2, 0, 501)


def test_a_restart_from_a_new_port_after_the_owner_went_silent_resets(link):
    """A restarted SITL comes from a new ephemeral port with count 0 and sends it again while
    unanswered: refused while the owner may still be there, taken (a restart) once the owner
    has been silent for OWNER_SILENT_S, whatever the counts (here 0 after 2: no repeat)."""
    owner, restarted = link.sender(), link.sender()
    link.taken(owner, range(3))
    assert link.take(restarted, 0) is None  # the owner was heard just now
    assert link.device.link.foreign == 1
    time.sleep(SILENT_S + 0.05)
    assert link.take(restarted, 0) is not None
    assert link.restarts == link.device.link.restarts == 1
    assert link.taken(restarted, range(1, 4)) == [1, 2, 3]
    # the old owner is now the foreign one
    assert link.take(owner, 3) is None and link.device.link.foreign == 2
    assert link.restarts == 1


def test_a_paused_owner_keeps_its_link(link):
    """Silence alone moves nothing: a paused SITL resumes where it was; a sender whose count
    is no new SITL's (a second SITL that has run for a while) never takes the link over."""
    owner, other = link.sender(), link.sender()
    link.taken(owner, range(1000))
    time.sleep(SILENT_S + 0.05)
    assert link.take(other, 5000) is None  # the owner silent, but this is no new SITL
    assert link.take(other, RESTART_BELOW) is None
    assert link.taken(owner, range(1000, 1003)) == [1000, 1001, 1002]
    stats = link.device.link
    assert (link.restarts, stats.foreign, stats.frames) == (0, 2, 1003)


def test_lost_counts_frames_not_jumps(link):
    """Frames missing from the count are lost; a count no frame of this session's (far ahead,
    or back and up again) is skipped and adds nothing. (Before: back was a restart and up
    again up to 100,000 "lost" a time: 17.8 million from a few hundred frames.)"""
    owner = link.sender()
    link.taken(owner, range(1000))
    assert link.take(owner, 1004) is not None  # 1000 .. 1003 lost on the way
    assert link.device.link.lost == 4
    assert link.take(owner, 1004 + MAX_LOST_FRAMES + 2) is None  # far ahead: skipped
    count = 1004
    for _ in range(15):
        assert link.take(owner, 60_000) is None  # up ...
        assert link.take(owner, 500) is None  # ... and back again
        count += 2
        assert link.take(owner, count) is not None  # one frame lost
    stats = link.device.link
    assert (stats.lost, link.restarts, stats.frames) == (4 + 15, 0, 1000 + 1 + 15)
    assert stats.malformed == 1 + 2 * 15


def test_a_count_the_owner_says_again_is_followed(link):
    """A skipped count that the owner sends again (ArduPilot does, unanswered, about every
    1.1 s) is its count from then on: one step, nothing lost, no restart; no count can hold
    the link up."""
    owner = link.sender()
    link.taken(owner, range(10))
    assert link.take(owner, 10 + MAX_LOST_FRAMES + 5) is None
    assert link.take(owner, 10 + MAX_LOST_FRAMES + 5) is not None
    assert link.take(owner, 10 + MAX_LOST_FRAMES + 6) is not None
    assert link.take(owner, 300) is None  # and back, not near zero
    assert link.take(owner, 300) is not None
    assert link.take(owner, 301) is not None
    stats = link.device.link
    assert (stats.lost, stats.restarts, stats.malformed, stats.frames) == (0, 0, 2, 14)
