"""One world, stepped by whoever owns time (hild/world/): the real-time driver and the lockstep
driver step the same tick, and every timer of the world runs on simulated time, so a paused
ArduPilot SITL trips no watchdog while a lockstep run trips a silent controller on time."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import time
from pathlib import Path

import pytest
from mcap.reader import make_reader

from hild.drivers.realtime import Daemon as RealTime
from hild.observers import TickObserver
from hild.record import channels
from hild.record.config import RecordConfig
from hild.record.observer import Recorder
from hild.scenario.file import load_scenario
from hild.scenario.lockstep import LockstepRun, run_lockstep
from hild.scenario.wiring import wire_run
from tests.ardupilot_client import Sitl
from tests.endpoints import Daemon, free_udp_port, nmea_line, write_bench

SILENT = """
[scenario]
name = "silent"
bench = "default"
duration_s = {duration}

[mission]
speed = 5.0
acceptance_m = 15
waypoints = [[100, 0], [100, 100]]

[controller]
python = "tests.controllers:{factory}"
{options}

[weather]
preset = "gale-hs1"
"""


def scenario(tmp_path: Path, factory: str, duration: float, options: str = ""):
    path = tmp_path / f"{factory}.toml"
    path.write_text(SILENT.format(factory=factory, duration=duration, options=options))
    return load_scenario(str(path))


def recorded(path: Path) -> dict[str, list[bytes]]:
    """A recording's messages by topic, without the stats (wall-clock figures) and without
    log times (a real-time run stamps its messages as they are written)."""
    out: dict[str, list[bytes]] = {}
    with path.open("rb") as f:
        for _, channel, message in make_reader(f).iter_messages(log_time_order=False):
            if channel.topic != channels.STATS:
                out.setdefault(channel.topic, []).append(message.data)
    return out


def test_the_real_time_and_the_lockstep_driver_record_the_same_truth(tmp_path):
    """One bench (the default one's devices, in a gale with waves and gusts, whose random
    streams run on the tick) through both drivers, with a controller that sends nothing:
    the same states, poses and sentences, message for message. The real-time run goes at
    50x, so its ticks are late and early on the wall clock: none of it may reach the world."""
    run = scenario(tmp_path, "recorder", duration=6.0)
    lockstep_file, realtime_file = tmp_path / "lockstep.mcap", tmp_path / "realtime.mcap"
    rate = run.bench.rate_hz
    run_lockstep(run, observers=[Recorder(RecordConfig.for_file(lockstep_file, rate), True)])
    bench = wire_run(run.bench, tmp_path / "run", 50.0).bench
    observers = [Recorder(RecordConfig.for_file(realtime_file, rate))]
    asyncio.run(RealTime(bench, run.duration_s, observers).run())
    lockstep, realtime = recorded(lockstep_file), recorded(realtime_file)
    assert set(lockstep) == set(realtime)
    assert {channels.STATE, channels.POSE} <= set(lockstep)
    assert any(topic.startswith(channels.SENSORS) for topic in lockstep)
    for topic in lockstep:
        assert len(lockstep[topic]) == len(realtime[topic]), topic
        assert lockstep[topic] == realtime[topic], topic


class SafeStates(TickObserver):
    """The simulated times at which a watchdog's safe state was applied."""

    def __init__(self) -> None:
        self.run = None
        self.at: list[float] = []

    async def start(self, run) -> None:
        self.run = run

    def on_control(self, run, record) -> None:
        if type(record).__name__ == "SafeState":
            self.at.append(run.t)


def test_a_lockstep_run_trips_a_silent_controller_after_its_lease_in_simulated_time(tmp_path):
    """hild's pilot, silent from 4 s on: the jets' watchdog (0.5 s) trips at 4.5 s of the
    run's time, whatever the wall clock did (the run goes as fast as the machine)."""
    run = scenario(tmp_path, "falls_silent", 12.0, "[controller.options]\nsilent_after_s = 4.0")
    seen = SafeStates()
    result = asyncio.run(_observed(LockstepRun(run, observers=[seen])))
    assert result.metrics["watchdog_trips"] == 1 and len(seen.at) == 1
    # The last command went out at the pilot's last step before 4.0 s (10 Hz: 3.9 s); its
    # lease ends 0.5 s later, and the first tick past it (50 Hz) applies the safe state.
    assert seen.at[0] == pytest.approx(4.4 + 0.02, abs=0.021)


async def _observed(run: LockstepRun):
    for observer in run.observers:
        await observer.start(run.world.view)
    return run.run()


AP_AND_JETS = """
[weather]
preset = "calm"
[[device]]
name = "autopilot"
type = "ardupilot-sitl"
port = "udp://127.0.0.1:{ap}?listen=1"
[[device]]
name = "jets"
type = "jet-controller"
port = "udp://127.0.0.1:{jets}?listen=1"
[device.settings]
watchdog_s = 0.5
"""


def jets_after_a_pause(tmp_path, pause_s: float, frames_after: int) -> dict:
    """ArduPilot's SITL (1200 Hz frames) and a controller on the jets: 0.1 s of frames, a
    neutral and a thrust command, 0.1 s of frames, ``pause_s`` of wall time without a frame,
    then ``frames_after`` frames; the jets' summary."""
    ap, jets = free_udp_port(), free_udp_port()
    tables = AP_AND_JETS.format(ap=ap, jets=jets)
    bench = write_bench(tmp_path / "ap.toml", "ap", tmp_path / "run", tables, rate_hz=1200)
    daemon = Daemon(str(bench), tmp=tmp_path)
    sitl, controller = Sitl(ap), socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    count = 0

    def frames(n: int) -> None:
        nonlocal count
        for _ in range(n):
            sitl.step(count)
            count += 1

    try:
        frames(120)
        for body in ("RCTRC,0,0.0,P,,V,,B,C", "RCTRC,0,40.0,P,,V,,B,C"):
            controller.sendto(nmea_line(body), ("127.0.0.1", jets))
        time.sleep(0.3)  # both applied at the next frame
        frames(120)  # the lease running
        time.sleep(pause_s)  # the SITL is paused: no frame, no tick
        frames(frames_after)
        return daemon.stop()["devices"]["jets"]
    finally:
        sitl.close()
        controller.close()


def test_ardupilots_frames_held_back_for_two_seconds_trip_no_watchdog(tmp_path):
    """A SITL paused for 2 s of wall time (a breakpoint, a slow machine) holds the world: the
    jets' lease, granted on simulated time, is still running when the frames come back (0.1 s
    before the pause and 0.2 s after it of the 0.5 s lease), so nothing trips."""
    jets = jets_after_a_pause(tmp_path, 2.0, 240)
    assert jets["commands"] == 2 and jets["watchdog_trips"] == 0, jets


def test_the_same_silence_on_simulated_time_trips_it(tmp_path):
    """The control for the test above: no pause, but 0.1 s and then 0.6 s of frames after the
    last command, past its lease: it trips, once."""
    jets = jets_after_a_pause(tmp_path, 0.0, 720)
    assert jets["commands"] == 2 and jets["watchdog_trips"] == 1, jets


def test_an_external_run_gets_the_same_observers(tmp_path):
    """`hild scenario run --report` of a command controller draws the target tracks: the
    observers an external run is given watch its world as they watch a lockstep one."""
    from hild.scenario.command import TargetTracks
    from hild.scenario.runs import run_scenario

    base = load_scenario("crossing-give-way")
    spec = dataclasses.replace(
        base.controller,
        kind="command",
        target=("{python}", "-c", "import time; time.sleep(30)"),
        time_scale=20.0,
    )
    external = dataclasses.replace(base, controller=spec, duration_s=4.0)
    tracks = TargetTracks()
    run_scenario(external, output_dir=tmp_path / "out", observers=[tracks])
    arrays = tracks.arrays()
    assert arrays, "no target tracks"
    for name, (t, north, east) in arrays.items():  # a point a second, from the first tick
        assert len(t) == 5 and list(t[1:]) == pytest.approx([1.0, 2.0, 3.0, 4.0]), name
        assert abs(north[-1] - north[0]) + abs(east[-1] - east[0]) > 10.0, name  # it moved


# --- what the observers see: the world's one read-only view ---------------------------------


class Keeps(TickObserver):
    """Reads what ``reads`` reads of the view after every tick, and keeps it (so that anything
    the view made for it stays alive for tracemalloc to see), with the object it was handed."""

    def __init__(self, reads) -> None:
        self.reads = reads
        self.kept: list = []
        self.handed: set[int] = set()

    def on_tick(self, run, t: float) -> None:
        self.handed.add(id(run))
        self.kept.append(self.reads(run))


def per_tick(run) -> tuple:
    """What the observers read of the view on every tick (the recorder, Foxglove, the systemd
    notifier, the external run's track feed, the status board's cheap part)."""
    environment, jets = run.environment, run.command_devices[0]
    state = (run.t, run.dt, run.x, run.act_state, run.act_cmd, run.actuator_force)
    clock = (run.late_s, run.tick_period_s, run.ticks, run.overruns, run.stop_reason)
    facts = (run.start_utc, run.duration, run.bench, run.devices, run.command_devices)
    bus = (run.commands_applied, run.received_lines, run.control_dropped)
    jets_seen = (jets.watchdog_state, jets.commands, jets.lease_s)
    return state, clock, facts, bus, jets_seen, environment.O, environment.weather


def allocated_in_view(reads, ticks: int = 300) -> int:
    """Memory blocks allocated by hild/world/view.py, still alive, over ``ticks`` ticks of a
    scenario's world whose one observer keeps what ``reads`` reads of the view."""
    import tracemalloc

    import hild.world.view

    keeps = Keeps(reads)
    world = LockstepRun(load_scenario("square-calm"), observers=[keeps]).world
    only_the_view = [tracemalloc.Filter(True, hild.world.view.__file__)]
    tracemalloc.start()
    try:
        for _ in range(20):  # warm: what the view makes once (its environment's) is made
            world.tick()
        before = tracemalloc.take_snapshot().filter_traces(only_the_view)
        for _ in range(ticks):
            world.tick()
        after = tracemalloc.take_snapshot().filter_traces(only_the_view)
    finally:
        tracemalloc.stop()
    assert keeps.handed == {id(world.view)}  # one view, made once, handed every tick
    assert len(keeps.kept) == 20 + ticks
    return sum(max(0, s.count_diff) for s in after.compare_to(before, "lineno"))


def test_the_observers_view_costs_no_allocation_per_tick():
    """An observer that reads the view's per-tick fields for 300 ticks and keeps them: the
    view made nothing for it (its arrays are read-only views made once, its figures the
    world's own). The measure sees what a view makes on a call: ``clients()`` builds a dict
    each time, and those kept are blocks of view.py's."""
    assert allocated_in_view(per_tick) == 0
    assert allocated_in_view(lambda run: run.clients()) > 100  # (the rest: free lists)


def test_the_observers_view_is_read_only_and_follows_the_world():
    import numpy as np

    world = LockstepRun(load_scenario("square-calm")).world
    view = world.view
    for _ in range(10):
        world.tick()
    assert view.t == world.t == world.sim.t and view.x.tolist() == world.sim.x.tolist()
    assert np.shares_memory(view.x, world.sim.x)  # the simulation's own state: no copy
    tried = {"t": 1.0, "x": None, "bench": None, "stop_reason": "mine", "new": 1, "_world": None}
    for name, value in tried.items():
        with pytest.raises(AttributeError):
            setattr(view, name, value)
    with pytest.raises(AttributeError):
        del view.t
    environment = view.environment
    assert environment is not None
    arrays = (view.x, view.act_state, view.act_cmd, view.actuator_force, environment.O)
    for array in arrays:
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1.0
    with pytest.raises(AttributeError):
        view.devices[0].name = "other"
    with pytest.raises(AttributeError):
        view.command_devices[0].commands = 0
    with pytest.raises(AttributeError):
        environment.weather = None
    # what an observer may do: put a record on the world's queue, applied between two ticks
    from hild.control import Reposition

    view.put(Reposition(123.0, -45.0))
    assert len(world.queue) == 1
    world.apply_controls()
    assert (view.x[0], view.x[1]) == (123.0, -45.0)
    # a new weather is a new environment: the view's follows it
    request = view.runtime_control.handle("weather", b'{"preset": "gale-calm-sea"}', "test")
    answer = asyncio.run(request)
    assert answer["ok"], answer
    world.apply_controls()
    seen = view.environment
    assert seen is not None and seen.weather.preset == "gale-calm-sea"
    assert world.sim.environment is not None
    assert np.shares_memory(seen.O, world.sim.environment.O)


def test_a_window_with_overruns_says_the_machine_is_not_keeping_up():
    """loop.stats counts overruns; a window in which more than one tick in a hundred came a
    whole step late warns as well (loop.overruns), one at or under it does not; once a run."""
    from structlog.testing import capture_logs

    from hild.bench import load_bench
    from hild.drivers.stats import LoopStats
    from hild.world.world import World

    stats = LoopStats(World(load_bench(None)), paced_by_frames=False)
    period = 0.01

    def window(late_ticks: int) -> list[dict]:
        for i in range(200):
            stats.window.add(2 * period if i < late_ticks else 0.0, period)
        with capture_logs() as logs:
            stats.log(10.0)
        return [e for e in logs if e["event"] == "loop.overruns"]

    assert window(2) == []  # 1 %: a busy machine's
    (warned,) = window(3)
    assert (warned["overruns"], warned["ticks"], warned["share"]) == (3, 200, 0.015)
    assert warned["log_level"] == "warning"
    assert window(50) == []  # said once a run: loop.stats counts the later windows'


def test_the_banners_drive_example_repeats_within_the_lease_at_any_time_scale():
    """The lease is the run's simulated time: at --time-scale 5 the banner's pasteable loop
    must repeat five times as often in wall time (0.5 s lease: every 0.04 s, not 0.2 s)."""
    import re
    from types import SimpleNamespace

    from hild.bench import load_bench
    from hild.examples import command_example
    from hild.transport.url import parse_port_url
    from hild.world.world import World

    (jets,) = World(load_bench(None)).command_devices
    port = SimpleNamespace(spec=parse_port_url("pty://jets", "/nonexistent/run"))
    for scale in (1.0, 5.0, 20.0):
        sleeps = re.findall(r"sleep ([0-9.]+);", command_example(jets, port, scale))
        assert sleeps, command_example(jets, port, scale)
        period_wall = float(sleeps[0])
        assert 0.0 < period_wall * scale <= 0.5 * jets.watchdog.timeout_s, (scale, sleeps)
