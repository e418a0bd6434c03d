"""ArduPilot's SITL link end to end: `hild run` on a bench with an ardupilot-sitl device, driven
by a client that speaks SITL's side of the protocol (tests/ardupilot_client.py) on real UDP
sockets. Lockstep, the IMU against the trajectory, frame counts, the shared clock."""

from __future__ import annotations

import math
import struct
import time

import numpy as np
import pytest

from hild.ardupilot.link import OWNER_SILENT_S
from tests.ardupilot_client import Sitl
from tests.endpoints import Daemon, UdpClient, free_udp_port, write_bench

G = 9.81  # hild's gravity (hild/environment/spectra.py), what ArduPilot's description expects


def start(
    tmp_path,
    profile="odin",
    rate=1200,
    weather='preset = "calm"',
    extra="",
    duration=None,
    name="ap",
    args=(),
) -> tuple[Daemon, Sitl]:
    """hild running the bench (its banner seen), and a SITL client towards its link."""
    port = free_udp_port()
    bench = tmp_path / f"{name}.toml"
    write_bench(
        bench,
        name,
        tmp_path / "run",
        f"""[weather]
{weather}
[[device]]
name = "autopilot"
type = "ardupilot-sitl"
port = "udp://127.0.0.1:{port}?listen=1"
{extra}
""",
        rate_hz=rate,
        profile=profile,
    )
    options = [str(bench), *args] + (["--duration", str(duration)] if duration else [])
    folder = tmp_path / name
    folder.mkdir()
    return Daemon(*options, tmp=folder), Sitl(port)


def rotation(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Body to NED for ZYX Euler angles (the aerospace convention ArduPilot's from_euler uses),
    written out here rather than taken from hild."""
    cr, sr, cp, sp, cy, sy = (
        math.cos(roll),
        math.sin(roll),
        math.cos(pitch),
        math.sin(pitch),
        math.cos(yaw),
        math.sin(yaw),
    )
    return np.array(
        [
            [cp * cy, sr * sp * cy - cr * sy, cr * sp * cy + sr * sy],
            [cp * sy, sr * sp * sy + cr * cy, cr * sp * sy - sr * cy],
            [-sp, sr * cp, cr * cp],
        ]
    )


# --- lockstep ---------------------------------------------------------------------------------
def throttle_schedule(i: int) -> tuple[int, ...]:
    """0 us for the first frames (as SITL starts), then ahead, a hard turn, astern."""
    if i < 300:
        return ()
    if i < 2400:
        return (1500, 0, 1850)
    if i < 3600:
        return (2000, 0, 1850)
    return (1200, 0, 1150)


NOISY = """
[device.noise.gyro]
white = 0.002
[device.noise.accel]
white = 0.05
random_walk = 0.01
"""


def answers(tmp_path, name: str, pause_every: int) -> tuple[list[bytes], dict]:
    daemon, sitl = start(
        tmp_path, weather='preset = "gale-hs1"', extra=NOISY, duration=4, name=name
    )
    try:
        for i in range(4800):
            if pause_every and i % pause_every == pause_every - 1:
                time.sleep(0.25)  # SITL paused, or slower than real time
            sitl.step(i, throttle_schedule(i))
        return sitl.raw, daemon.wait(60)
    finally:
        sitl.close()


def test_the_same_frames_give_the_same_answers_bit_for_bit_at_any_pace(tmp_path):
    """Waves, gusts and sensor noise all run on the frames' clock: 4 s of Odin in a gale,
    answered as fast as the client asks and again with pauses, byte for byte the same."""
    fast, summary = answers(tmp_path, "fast", pause_every=0)
    slow, _ = answers(tmp_path, "slow", pause_every=700)
    assert len(fast) == 4800 and fast == slow
    link = summary["devices"]["autopilot"]
    assert link["frames"] == 4800 and link["repeated"] == link["lost"] == link["restarts"] == 0
    assert summary["t"] == pytest.approx(4.0) and summary["reason"] == "duration"
    assert link["commands"] == 4  # the frames whose outputs changed
    assert summary["position_ned"][0] > 5.0  # it went ahead


# --- the IMU --------------------------------------------------------------------------------
def test_at_rest_and_level_the_accelerometer_reads_minus_g_on_z(tmp_path):
    daemon, sitl = start(tmp_path)
    try:
        first = [sitl.step(i) for i in range(600)]
    finally:
        sitl.close()
        daemon.stop()
    for a in first:
        assert a["accel_body"] == pytest.approx((0.0, 0.0, -G), abs=1e-9)  # at rest: exactly
        assert a["gyro"] == (0.0, 0.0, 0.0) and a["attitude"] == (0.0, 0.0, 0.0)
    assert [a["timestamp"] for a in first[:3]] == pytest.approx([1 / 1200, 2 / 1200, 3 / 1200])


def fit_circle(points: np.ndarray) -> tuple[np.ndarray, float]:
    """Least-squares circle through points (x, y): centre and radius (Kasa's algebraic fit)."""
    x, y = points[:, 0], points[:, 1]
    a = np.column_stack([2 * x, 2 * y, np.ones_like(x)])
    cx, cy, c = np.linalg.lstsq(a, x * x + y * y, rcond=None)[0]
    return np.array([cx, cy]), math.sqrt(c + cx * cx + cy * cy)


def test_in_a_steady_turn_the_accelerometer_feels_the_centripetal_acceleration(tmp_path):
    """Odin at 60 % throttle with full right steering settles into a circle. What the IMU says
    must agree with the circle the positions draw: the horizontal specific force, turned to NED
    with the answered attitude, is U^2 / R towards the circle's centre, and the vertical is -g.
    The boat heels in the turn, so gravity's roll and pitch terms are in the body axes."""
    rate = 200  # a steady turn needs a minute and more: a coarser step keeps the test short
    daemon, sitl = start(tmp_path, rate=rate, duration=90)
    try:
        states = [sitl.step(i, (2000, 0, 1800), rate) for i in range(90 * rate)]
    finally:
        sitl.close()
    daemon.wait(60)
    last = states[-30 * rate :]  # the last 30 s: more than one lap (about 27 s)
    points = np.array([s["position"][:2] for s in last])
    centre, radius = fit_circle(points)
    residual = np.abs(np.hypot(*(points - centre).T) - radius).max()
    assert residual < 0.01 * radius  # a circle: steady
    speed = np.mean([math.hypot(*s["velocity"][:2]) for s in last])
    for s in last[:: rate * 3]:
        f_ned = rotation(*s["attitude"]) @ np.array(s["accel_body"])
        inward = centre - np.array(s["position"][:2])
        inward /= np.linalg.norm(inward)
        # The fit's radius and the mean speed are good to a fraction of a per cent on a
        # circle this steady; 2 % holds that with room and is far below the heel's own
        # share (g sin(roll) is 16 % of the centripetal term here).
        assert np.linalg.norm(f_ned[:2]) == pytest.approx(speed**2 / radius, rel=0.02)
        assert float(f_ned[:2] @ inward) == pytest.approx(speed**2 / radius, rel=0.02)
        assert f_ned[2] == pytest.approx(-G, abs=2e-3)
        assert s["accel_body"][1] > 0.3  # right turn: the centripetal term to starboard
    roll = np.mean([s["attitude"][0] for s in last])
    assert abs(G * math.sin(roll)) > 0.1 * speed**2 / radius  # the heel matters to the check


def test_rolling_in_waves_the_imu_agrees_with_the_trajectory(tmp_path):
    """Odin lying in a gale's waves rolls by several degrees. The specific force turned to NED
    with the answered attitude must equal the NED velocity's rate of change minus gravity,
    frame by frame: the identity an autopilot's navigation filter rests on. The two sides are
    differences over the same step taken in different frames, so they differ by the jerk
    times the step: about 2e-3 m/s^2 at 1200 Hz for a rolling hull (accelerations of about 1
    m/s^2 at wave frequencies near 2 rad/s); a sign or axis error in any term is g sin(roll),
    near 1 m/s^2 here."""
    daemon, sitl = start(tmp_path, weather='preset = "gale-hs1"', duration=20)
    try:
        states = [sitl.step(i) for i in range(20 * 1200)]
    finally:
        sitl.close()
    daemon.wait(60)
    rolls = np.array([s["attitude"][0] for s in states])
    assert np.degrees(np.abs(rolls).max()) > 3.0
    worst = 0.0
    for before, now in zip(states[1000:], states[1001:], strict=False):
        dt = now["timestamp"] - before["timestamp"]
        acceleration = (np.array(now["velocity"]) - np.array(before["velocity"])) / dt
        f_ned = rotation(*now["attitude"]) @ np.array(now["accel_body"])
        worst = max(worst, float(np.abs(f_ned - (acceleration - [0.0, 0.0, G])).max()))
    assert worst < 0.01


# --- frame counts -------------------------------------------------------------------------
def test_repeated_lost_malformed_and_restarted_frames(tmp_path):
    daemon, sitl = start(tmp_path)
    dt = 1 / 1200
    try:
        run = [sitl.step(i, (1500, 0, 2000) if i >= 10 else ()) for i in range(1200)]
        assert run[-1]["position"][0] > 0.05  # moving ahead
        # ArduPilot heard no answer and sends its frame again: the same answer, no step
        again = sitl.step(1199, (1500, 0, 2000))
        assert again == run[-1] and sitl.raw[-1] == sitl.raw[-2]
        # a datagram that is no frame is skipped without an answer; the next frame is answered
        sitl.sock.sendto(b"$GPGGA,garbage*00\r\n", ("127.0.0.1", sitl.port))
        # four frames lost on the way: one step, as ArduPilot's clock is the answers'
        jumped = sitl.step(1204, (1500, 0, 2000))
        assert jumped["timestamp"] == pytest.approx(run[-1]["timestamp"] + dt)
        # a count no SITL sends next (a stray datagram's): skipped unanswered, not 4e9 frames
        # lost, and the real next frame is the next step, not a restart
        sitl.sock.sendto(
            struct.pack("<HHI16H", 18458, 1200, 0xFFFFFFFF, *[1500] * 16), ("127.0.0.1", sitl.port)
        )
        after = sitl.step(1205, (1500, 0, 2000))
        assert after["timestamp"] == pytest.approx(jumped["timestamp"] + dt)
        # SITL restarted: the vessel back at its start, the timestamps from the start again
        restarted = sitl.step(0)
        assert restarted["timestamp"] == pytest.approx(dt)
        # back where the run began; the weather's own state ran on (its filters), so the first
        # step from there differs from the run's first by 1e-7 m/s at most
        assert restarted["position"] == pytest.approx(run[0]["position"], abs=1e-6)
        assert restarted["velocity"] == pytest.approx(run[0]["velocity"], abs=1e-6)
        assert restarted["accel_body"] == pytest.approx((0.0, 0.0, -G), abs=1e-9)
        moving = [sitl.step(i, (1500, 0, 2000)) for i in range(1, 600)]
        assert moving[-1]["timestamp"] == pytest.approx(600 * dt)
    finally:
        sitl.close()
    summary = daemon.stop()
    link = summary["devices"]["autopilot"]
    assert (link["repeated"], link["lost"], link["malformed"], link["restarts"]) == (1, 4, 2, 1)
    assert link["frames"] == 1200 + 1 + 1 + 1 + 599
    assert summary["t"] == pytest.approx((1200 + 1 + 1 + 1 + 599) * dt)  # hild's clock ran on
    assert daemon.events("ardupilot.restarted") and daemon.events("control.restart")


def test_a_second_sender_on_the_port_is_refused_and_resets_nothing(tmp_path):
    """Two programs interleaving frames on ArduPilot's port: the first owns the link; the
    second's frames (a newly started SITL's counts) get no answer and reset nothing, and are
    counted and logged with its address. (Before: each was a restart.)"""
    daemon, sitl = start(tmp_path)
    second = Sitl(sitl.port, timeout=0.3)
    senders = [f"127.0.0.1:{s.sock.getsockname()[1]}" for s in (sitl, second)]
    try:
        run = []
        for i in range(200):  # (the owner's first: the first sender owns the link)
            run.append(sitl.step(i, (1500, 0, 2000) if i >= 10 else ()))
            second.send(i)
        with pytest.raises(TimeoutError):
            second.receive()  # not one answer
    finally:
        sitl.close()
        second.close()
    summary = daemon.stop()
    assert [a["timestamp"] for a in run] == pytest.approx([(i + 1) / 1200 for i in range(200)])
    link = summary["devices"]["autopilot"]
    assert (link["frames"], link["foreign"]) == (200, 200)
    assert link["restarts"] == link["lost"] == link["malformed"] == link["repeated"] == 0
    first = daemon.events("ardupilot.foreign_frame")[0]
    assert (first["sender"], first["owner"]) == (senders[1], senders[0])
    assert len(daemon.events("ardupilot.foreign_frame")) < 10  # at a limited rate
    assert not daemon.events("ardupilot.restarted")


def test_a_sitl_restarted_on_a_new_port_takes_the_link_once_the_old_one_is_silent(tmp_path):
    """A restarted SITL binds a new ephemeral port and sends its frame 0 again about every
    1.1 s while unanswered (protocols.md): refused while the old one may be alive, then taken
    as a restart once it has been silent OWNER_SILENT_S: the vessel back at its start."""
    daemon, sitl = start(tmp_path)
    restarted = Sitl(sitl.port, timeout=1.1)  # its own socket: a new port
    dt = 1 / 1200
    try:
        run = [sitl.step(i, (1500, 0, 2000) if i >= 10 else ()) for i in range(1200)]
        assert run[-1]["position"][0] > 0.05
        sitl.close()
        stopped, unanswered = time.monotonic(), 0
        while True:
            assert time.monotonic() - stopped < OWNER_SILENT_S + 10
            restarted.send(0)
            try:
                first = restarted.receive()
                break
            except TimeoutError:
                unanswered += 1
        waited = time.monotonic() - stopped
        moving = [restarted.step(i, (1500, 0, 2000)) for i in range(1, 600)]
    finally:
        sitl.close()
        restarted.close()
    summary = daemon.stop()
    assert unanswered >= 2 and waited >= OWNER_SILENT_S
    assert first["timestamp"] == pytest.approx(dt)
    assert first["position"] == pytest.approx(run[0]["position"], abs=1e-6)
    assert moving[-1]["timestamp"] == pytest.approx(600 * dt)
    link = summary["devices"]["autopilot"]
    assert (link["restarts"], link["frames"]) == (1, 1200 + 600) and link["foreign"] >= 2
    connected = daemon.events("ardupilot.connected")
    assert len(connected) == 2 and connected[1]["silent_s"] >= OWNER_SILENT_S
    assert connected[1]["previous"] == connected[0]["sender"] != connected[1]["sender"]
    assert daemon.events("ardupilot.restarted") and daemon.events("control.restart")


# --- one clock -----------------------------------------------------------------------------
def test_nmea_runs_on_the_frames_clock_and_waits_with_a_paused_sitl(tmp_path):
    """A GPS at 1 Hz on the same bench: one fix per simulated second, stamped with the run's
    simulated UTC, none while SITL is paused however long the pause."""
    gps = UdpClient().start()
    extra = f"""
[[device]]
name = "gps"
type = "gps"
rate_hz = 1.0
sentences = ["GGA"]
port = "udp://127.0.0.1:{gps.port}"
"""
    daemon, sitl = start(tmp_path, extra=extra)
    try:
        for i in range(3 * 1200):
            sitl.step(i)
        time.sleep(0.3)  # the fix of t = 3 s is sent after the frame that reached it
        before = len(gps.lines)
        time.sleep(1.5)  # SITL paused: hild waits, and so does its GPS
        assert len(gps.lines) == before == 4  # t = 0, 1, 2, 3 s
        for i in range(3 * 1200, 6 * 1200):
            sitl.step(i)
        time.sleep(0.3)
    finally:
        sitl.close()
        daemon.stop()
        gps.close()
    stamps = [raw.split(b",")[1] for _, raw in gps.lines]
    assert stamps == [
        b"120000.00",
        b"120001.00",
        b"120002.00",
        b"120003.00",
        b"120004.00",
        b"120005.00",
        b"120006.00",
    ]


def test_the_recording_follows_the_frames_clock_and_shows_a_restart(tmp_path):
    """What `--record` writes of a SITL run: the state on the simulated clock (a paused SITL
    leaves no gap and no extra records), and SITL's restart as a /control record, the
    vessel's state back at its start."""
    from hild.record.reader import messages

    recording = tmp_path / "run.mcap"
    daemon, sitl = start(tmp_path, args=("--record", str(recording)))
    try:
        for i in range(2 * 1200):
            sitl.step(i, (1500, 0, 2000) if i >= 10 else ())
        time.sleep(1.0)  # paused
        for i in range(1200):
            sitl.step(i, (1500, 0, 2000) if i >= 10 else ())  # restarted
    finally:
        sitl.close()
    daemon.stop()
    (restart,) = [m.payload for m in messages(recording, ["/control"])]
    assert restart["kind"] == "restart" and restart["source"] == "autopilot"
    assert restart["t"] == pytest.approx(2.0, abs=0.01)
    states = [m.payload for m in messages(recording, ["/state"])]
    times = [s["t"] for s in states]
    assert times == sorted(times) and times[-1] == pytest.approx(3.0, abs=0.1)
    steps = np.diff(times)
    assert steps.max() < 2 * np.median(steps)  # no gap where SITL paused
    before = [s for s in states if s["t"] <= 2.0][-1]
    after = next(s for s in states if s["t"] > 2.0)
    assert before["north"] > 1.0 and abs(after["north"]) < 0.01  # back at the start


def test_the_first_frame_sets_the_step_and_a_restart_at_another_rate_is_said_once(tmp_path):
    """SIM_RATE_HZ 400 against a bench at 1200 Hz: hild steps 1/400 s a frame, as the frame
    asks (ArduPilot's JSON examples step 1/frame_rate); the world, its devices and the
    recording go by that step. A SITL restarted at 1200 Hz is told once, with both rates, and
    the run keeps the step it began with (it cannot change a stepped world's)."""
    from hild.record.reader import messages

    recording = tmp_path / "run.mcap"
    daemon, sitl = start(tmp_path, args=("--record", str(recording)))
    try:
        stamps = [sitl.step(i, (), rate=400)["timestamp"] for i in range(400)]
        again = [sitl.step(i, (), rate=1200)["timestamp"] for i in range(3)]  # count back to 0
    finally:
        sitl.close()
    summary = daemon.stop()
    assert summary["t"] == pytest.approx(403 / 400)  # 400 frames, and 3 after the restart
    assert np.diff(stamps) == pytest.approx([1 / 400] * 399, rel=1e-9)
    assert np.diff(again) == pytest.approx([1 / 400] * 2, rel=1e-9)  # the run's step kept
    (taken,) = daemon.events("control.step_rate")
    assert (taken["rate_hz"], taken["bench_rate_hz"]) == (400.0, 1200.0)
    (warning,) = daemon.events("ardupilot.step_differs")
    assert (warning["ardupilot_hz"], warning["hild_hz"]) == (1200, 400.0)
    (control,) = [m.payload for m in messages(recording, ["/control"]) if m.payload["t"] < 0.1]
    assert control["kind"] == "step_rate" and control["result"]["rate_hz"] == 400.0
    times = [m.payload["t"] for m in messages(recording, ["/state"])]
    # the recording's 20 Hz (its default) in the world's steps of 1/400 s, every 20th; had it
    # kept the bench's 1/1200 s, every 60th step: 6.7 Hz
    assert np.diff(times) == pytest.approx([1 / 20] * (len(times) - 1), rel=1e-6)
    assert times[-1] == pytest.approx(1.0)


def test_a_frame_rate_beyond_the_vessel_s_stable_step_is_refused_with_the_limit(tmp_path):
    """Frames at 5 Hz ask Odin for steps of 0.2 s, longer than RK4 takes stably (about 0.134 s,
    hild/model/stability.py): unanswered, an error saying the limit and the SIM_RATE_HZ that
    would do; a SITL started again at 50 Hz (its count from 0) is then taken."""
    daemon, sitl = start(tmp_path)
    try:
        sitl.send(0, (), rate=5)
        sitl.sock.settimeout(1.5)
        with pytest.raises(TimeoutError):  # refused: unanswered
            sitl.receive()
        sitl.sock.settimeout(5.0)
        stamps = [sitl.step(i, (), rate=50)["timestamp"] for i in range(5)]
    finally:
        sitl.close()
    summary = daemon.stop()
    (refused,) = daemon.events("ardupilot.rate_refused")
    assert refused["frame_rate"] == 5 and "a step of at most 0.13" in refused["expected"]
    assert "SIM_RATE_HZ to at least 8" in refused["hint"]
    assert np.diff(stamps) == pytest.approx([1 / 50] * 4, rel=1e-9)
    assert summary["devices"]["autopilot"]["refused_rate"] == 1


@pytest.mark.parametrize(
    ("profile", "right_turn"),
    [
        ("odin", (2000, 0, 1800)),  # throttle-steering: SERVO1 steering right, SERVO3 ahead
        ("otter", (2000, 0, 1500)),  # skid: left throttle (SERVO1) ahead, right (SERVO3) zero
    ],
)
def test_ardupilot_conventions_hold_through_the_mapping(tmp_path, profile, right_turn):
    """What ArduPilot expects of its outputs: throttle ahead moves the boat ahead (north, at
    heading 0), steering right (or the left side faster) turns it to starboard: a positive
    yaw rate on the gyro's z (down) axis and a yaw that grows."""
    rate = 200
    daemon, sitl = start(tmp_path, profile=profile, rate=rate)
    try:
        ahead = (1500, 0, 1800) if profile == "odin" else (1800, 0, 1800)
        states = [sitl.step(i, ahead, rate) for i in range(10 * rate)]
        assert states[-1]["velocity"][0] > 0.5 and abs(states[-1]["attitude"][2]) < 0.01
        turning = [sitl.step(i, right_turn, rate) for i in range(10 * rate, 15 * rate)]
    finally:
        sitl.close()
    daemon.stop()
    assert turning[-1]["gyro"][2] > 0.05  # rad/s, to starboard
    assert turning[-1]["attitude"][2] > states[-1]["attitude"][2] + 0.2  # the yaw grew


def test_the_first_window_counts_from_the_first_frame_not_the_wait_for_sitl(tmp_path):
    """hild waits for a SITL (here 2 s) before its first step: the first loop.stats's time
    scale is that of the frames, counted from the first frame, not diluted by the wait."""
    daemon, sitl = start(tmp_path, args=("--stats-interval", "0.5"))
    try:
        time.sleep(2.0)
        started = time.monotonic()
        for i in range(600):  # 0.5 s of simulated time at 1200 Hz: one window
            sitl.step(i)
        wall = time.monotonic() - started  # from the first frame sent to the last answer
        time.sleep(0.2)
        first = daemon.events("loop.stats")[0]
        daemon.stop()
    finally:
        sitl.close()
    assert first["t"] == pytest.approx(0.5)
    # the daemon's window is inside the test's (first frame to last answer), so its time
    # scale is at least the test's; counting the wait it would be under 0.5 / 2.0
    assert first["time_scale"] >= 0.5 / wall * 0.999, (first, wall)
