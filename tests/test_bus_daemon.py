"""The controller's bus in the real daemon: commands over ptys, UDP and TCP move the actuators.

Everything runs `hild run` as a subprocess and talks to it as a controller would; the
expected values come from the written mappings (README, devices/*.toml), computed here.
"""

from __future__ import annotations

import math
import textwrap
import time

import pytest
from endpoints import (
    Daemon,
    PtyClient,
    Repeater,
    TcpClient,
    UdpClient,
    free_tcp_port,
    free_udp_port,
    nmea_line,
)

ODIN_RPM = (400.0, 2000.0)
TAU_RPM, TAU_NOZZLE, TAU_DEFLECTOR = 0.4, 1.0, 0.1  # profiles/odin.toml
DT = 0.01
OTTER_MAX_RPM, TAU_OTTER = 992.467, 0.1  # profiles/otter.toml

HEAD = """
[bench]
rate_hz = 100
seed = 1
start_time = "2026-06-01T12:00:00Z"
run_dir = "{run_dir}"
stats_interval = 1.0
"""


def write_bench(tmp_path, body: str, **fields) -> str:
    path = tmp_path / "bench.toml"
    text = HEAD + textwrap.dedent(body)
    path.write_text(text.format(run_dir=tmp_path / "run", **fields))
    return str(path)


def wait_until(condition, timeout: float = 8.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def steps_since_step(value: float, start: float, target: float, tau: float) -> float:
    """Solve value = target - (target - start) exp(-n dt / tau) for n, the steps since the
    command was applied (the actuator lag is solved exactly per step, thesis eq. 2.37)."""
    return -tau / DT * math.log((target - value) / (target - start))


def assert_first_order(
    values: list[float],
    start: float,
    target: float,
    tau: float,
    resolution: float,
    samples_apart: int,
) -> int:
    """Every reported value lies on the exact first-order response at a whole step, and
    successive reports are ``samples_apart`` steps apart. A value printed to ``resolution``
    pins n to resolution / |d value / dn|; only values where that is under 0.05 step count.
    Returns how many values were checked. The reports made before the command took effect
    (the first ones, still at ``start``: the client may read an epoch that came between the
    command's arrival and the tick that applied it) belong to no step of the response."""
    before = 0
    while before < len(values) and values[before] == start:
        before += 1
    checked = []
    for v in values[before:]:
        gap = abs(target - v)
        slope = gap * DT / tau  # |d value / dn|
        if gap > 0 and resolution / slope < 0.05:
            n = steps_since_step(v, start, target, tau)
            assert n == pytest.approx(round(n), abs=0.05), (v, n)
            checked.append(round(n))
    for a, b in zip(checked, checked[1:], strict=False):
        assert b - a == samples_apart, checked
    return len(checked)


def lag(x0: float, commands: list[tuple[int, float]], tau: float, step: int) -> float:
    """An actuator's exact first-order response at ``step``: from ``x0`` it follows each
    (step applied, target) of ``commands`` in turn. Thesis eq. 2.37, solved exactly per step:
    each step multiplies the gap to the target by exp(-dt / tau)."""
    x = x0
    for i, (at, target) in enumerate(commands):
        if step <= at:
            break
        until = min(step, commands[i + 1][0]) if i + 1 < len(commands) else step
        x = target - (target - x) * math.exp(-(until - at) * DT / tau)
    return x


def fit_command_step(
    values: list[float],
    x0: float,
    target: float,
    tau: float,
    before: tuple[tuple[int, float], ...] = (),
    samples_apart: int = 5,
    resolution: float = 0.05,
) -> int:
    """The step at which the command to ``target`` took effect, the k-th value being
    reported at step k * samples_apart: the one step for which every value is the exact
    first-order response (after the ``before`` commands) as printed to ``resolution``.
    Unlike assert_first_order it needs no fast slope, so it holds a slow nozzle too; a
    series with too little of the transient in it fits several steps and fails."""

    def fits(at: int) -> bool:
        commands = [*before, (at, target)]
        # feedback prints one decimal: within 0.05 of the truth (1e-9 for float rounding)
        return all(
            abs(v - lag(x0, commands, tau, k * samples_apart)) <= resolution + 1e-9
            for k, v in enumerate(values)
        )

    first = before[-1][0] if before else -20 * samples_apart
    steps = [at for at in range(first, len(values) * samples_apart) if fits(at)]
    assert len(steps) == 1, (steps, values[:20])
    return steps[0]


JETS = """
[vessel]
profile = "odin"
[[device]]
name = "jets"
type = "jet-controller"
rate_hz = 20
baud = 115200
ports = ["pty://jets", "udp://127.0.0.1:{udp}?listen=1"]
[[device]]
name = "strict"
type = "jet-controller"
ports = ["pty://strict"]
[device.settings]
out_of_range = "refuse"
"""


@pytest.fixture
def jets(tmp_path):
    bench = write_bench(tmp_path, JETS, udp=free_udp_port())
    daemon = Daemon(bench, "--log-level", "debug", tmp=tmp_path)
    yield daemon, tmp_path / "run"
    if daemon.proc.poll() is None:
        daemon.proc.kill()


def test_trc_and_ror_move_the_jets_with_their_first_order_dynamics(jets):
    daemon, run = jets
    client = PtyClient(run / "jets").start()
    # starboard jet (number 1): 1500 rpm, deflector full ahead; both nozzles 10 deg starboard
    sender = Repeater(client.write).start(
        nmea_line("RCTRC,1,1500.0,R,100.0,P,,B,C"), nmea_line("RCROR,10.0,A,,V,B")
    )
    time.sleep(4.0)  # ten time constants of the engine: within 0.05 rpm of its target
    sender.stop()
    summary = daemon.stop()
    client.close()
    jets_summary = summary["devices"]["jets"]
    assert jets_summary["rejected_total"] == 0 and jets_summary["commands"] == sender.sent

    trd1 = [m for _, m in client.sentences("TRD") if m.number == 1]
    trd2 = [m for _, m in client.sentences("TRD") if m.number == 2]
    # 20 Hz feedback of a 100 Hz loop: successive epochs are 5 steps apart.
    n = assert_first_order([m.rpm for m in trd1], 400.0, 1500.0, TAU_RPM, 0.05, 5)
    assert n >= 5
    assert trd1[-1].rpm == pytest.approx(1500.0, abs=0.1) and trd1[-1].rpm_mode == "R"
    assert {m.rpm for m in trd2} == {400.0}  # the port jet was not addressed
    rsa = client.sentences("RSA")
    # The nozzle is too slow for assert_first_order (0.1 deg per step at most); the whole
    # series must still be the lag at 20 Hz from one step. TRC and ROR are written back to
    # back: applied in the same tick or the next.
    nozzle_step = fit_command_step([float(m.rsa_starboard) for _, m in rsa], 0.0, 10.0, TAU_NOZZLE)
    rpm_step = fit_command_step([m.rpm for m in trd1], 400.0, 1500.0, TAU_RPM)
    assert nozzle_step - rpm_step in (0, 1)
    assert all(m.rsa_port == m.rsa_starboard for _, m in rsa)  # a single order steers both
    # TRD's azimuth is the direction of thrust: a nozzle at +10 deg thrusts towards 350 deg
    assert trd1[-1].azimuth == pytest.approx(360.0 - float(rsa[-1][1].rsa_starboard), abs=0.1)
    xdr = [m for _, m in client.sentences("XDR")]
    deflector = [float(m.value) for m in xdr]
    assert_first_order(deflector, 0.0, 100.0, TAU_DEFLECTOR, 0.05, 5)
    assert deflector[-1] == pytest.approx(100.0, abs=0.05)
    assert {float(m.data[5]) for m in xdr} == {0.0}  # port deflector (DEFLECTOR_2) untouched
    rpm = [m for _, m in client.sentences("RPM") if m.engine_no == 1]
    assert rpm[-1].source == "E" and rpm[-1].speed == pytest.approx(1500.0, abs=0.1)
    assert summary["actuators"]["starboard"]["commanded"] == [1500.0, 10.0, 1.0]


def test_prc_and_phldc_over_udp_with_feedback_to_the_sender(jets, tmp_path):
    daemon, _ = jets
    port = next(
        int(w.split(":")[1].split()[0])
        for w in daemon.banner.split()
        if w.startswith("127.0.0.1:") and "listening" in daemon.banner
    )
    controller = UdpClient().start()
    sender = Repeater(lambda line: controller.sock.sendto(line, ("127.0.0.1", port)))

    def latest(kind):
        found = controller.sentences(kind)
        return found[-1][1] if found else None

    # PRC lever 60 %: the first 20 % puts the deflector full ahead, the remaining 40 of 80 %
    # raise the engine halfway from idle: 400 + 0.5 * 1600 = 1200 rpm, on both (engine 0).
    sender.start(nmea_line("RCPRC,60.0,A,,V,,V,B,0"))
    wait_until(lambda: (m := latest("TRD")) and abs(m.rpm - 1200.0) < 0.5, what="1200 rpm")
    assert float(latest("XDR").value) == pytest.approx(100.0, abs=0.1)
    # Odin's normalized interface: rpm 25 -> 400 + 125/200 * 1600 = 1400 rpm; nozzle -50 ->
    # -13.5 deg; deflector 100 -> full ahead.
    phldc_sent = time.monotonic()
    sender.set(nmea_line("PHLDC,0,25.0,-50.0,100.0"))
    wait_until(
        lambda: (m := latest("RSA")) and abs(float(m.rsa_port) + 13.5) < 0.05,
        what="nozzles at -13.5 deg",
    )
    wait_until(lambda: (m := latest("TRD")) and abs(m.rpm - 1400.0) < 0.5, what="1400 rpm")
    summary = daemon.stop()
    sender.stop()
    controller.close()
    for side in ("port", "starboard"):
        assert summary["actuators"][side]["commanded"] == [1400.0, -13.5, 1.0]
    assert summary["devices"]["jets"]["rejected_total"] == 0

    # The trajectories, from the 20 Hz feedback (each epoch sends every sentence, so the
    # k-th TRD of a jet, RSA and XDR are the same step): PRC's step to 1200 rpm and full
    # ahead at one step, PHLDC's to 1400 rpm and -13.5 deg at a later one, each actuator
    # on its own time constant.
    rsa = [float(m.rsa_port) for _, m in controller.sentences("RSA")]
    deflector = [float(m.value) for _, m in controller.sentences("XDR")]
    prc_step = fit_command_step(deflector, 0.0, 100.0, TAU_DEFLECTOR)
    phldc_step = fit_command_step(rsa, 0.0, -13.5, TAU_NOZZLE)
    assert all(m.rsa_starboard == m.rsa_port for _, m in controller.sentences("RSA"))
    for number in (1, 2):
        trd = [(t, m.rpm) for t, m in controller.sentences("TRD") if m.number == number]
        before_phldc = [rpm for t, rpm in trd if t < phldc_sent]
        assert fit_command_step(before_phldc, 400.0, 1200.0, TAU_RPM) == prc_step
        rpm = [rpm for _, rpm in trd]
        prc = ((prc_step, 1200.0),)
        assert fit_command_step(rpm, 400.0, 1400.0, TAU_RPM, before=prc) == phldc_step


def test_out_of_range_values_are_clamped_or_refused_as_configured(jets):
    daemon, run = jets
    strict = PtyClient(run / "strict").start()
    lenient = PtyClient(run / "jets").start()
    too_fast = nmea_line("RCTRC,1,2500.0,R,100.0,P,,B,C")  # Odin's engines stop at 2000 rpm
    for _ in range(5):
        strict.write(too_fast)
    time.sleep(0.3)
    keep = Repeater(lenient.write).start(too_fast)
    time.sleep(1.0)
    # the controller stops before the daemon (a line written as the daemon stopped was counted
    # sent, not clamped), and the daemon stops well within the watchdog's 0.5 s lease after
    # the last line, which the loop reads within a tick or two
    keep.stop()
    time.sleep(0.15)
    summary = daemon.stop()
    strict.close()
    lenient.close()
    assert summary["devices"]["strict"]["rejected"] == {"out_of_range": 5}
    assert summary["devices"]["strict"]["commands"] == 0
    assert summary["devices"]["jets"]["clamped"] == keep.sent > 0
    assert summary["actuators"]["starboard"]["commanded"][0] == 2000.0


def test_the_watchdog_trips_reports_and_waits_for_a_neutral_command(jets):
    daemon, run = jets
    client = PtyClient(run / "jets").start()
    ahead = nmea_line("RCTRC,0,1500.0,R,100.0,P,,B,C")
    sender = Repeater(client.write).start(ahead)
    wait_until(lambda: client.sentences("TRD") and client.sentences("TRD")[-1][1].rpm > 1400)
    sender.stop()  # the controller goes silent
    silent_at = time.monotonic()
    wait_until(lambda: client.sentences("TRD")[-1][1].rpm_mode == "V", what="TRD mode V")
    tripped_after = time.monotonic() - silent_at
    assert tripped_after > 0.4  # the 0.5 s lease (minus one feedback period) ran out first
    time.sleep(3.0)  # idle and neutral: 1100 rpm above idle decay below 1 rpm in 7 tau = 2.8 s
    trd = client.sentences("TRD")[-1][1]
    assert trd.rpm < 401.0 and trd.rpm_mode == "V" and trd.pitch_mode == "V"
    assert client.sentences("RPM")[-1][1].status == "V"
    assert abs(float(client.sentences("XDR")[-1][1].value)) < 0.1
    # Latched: throttle is refused until the controller sends a neutral command.
    for _ in range(10):
        client.write(ahead)
    time.sleep(0.5)
    assert client.sentences("TRD")[-1][1].rpm < 401.0
    client.write(nmea_line("RCPRC,0.0,A,,V,,V,B,0"))  # lever in the neutral detent
    sender = Repeater(client.write).start(ahead)
    wait_until(lambda: client.sentences("TRD")[-1][1].rpm > 1000, what="throttle again")
    assert client.sentences("TRD")[-1][1].rpm_mode == "R"
    summary = daemon.stop()
    sender.stop()
    client.close()
    jets_summary = summary["devices"]["jets"]
    assert jets_summary["rejected"] == {"latched": 10}
    assert jets_summary["watchdog_trips"] == 1 and jets_summary["watchdog"] == "active"
    assert daemon.events("bus.watchdog_tripped") and daemon.events("bus.watchdog_released")


def test_frontseat_over_tcp_drives_the_otter_and_streams_navigation(tmp_path):
    port = free_tcp_port()
    bench = write_bench(
        tmp_path,
        """
        [vessel]
        profile = "otter"
        [[device]]
        name = "frontseat"
        type = "frontseat"
        port = "tcp://127.0.0.1:{port}"
        [[device]]
        name = "monitor"               # reports the motors (CPNVG and the rest do not)
        type = "thruster-controller"
        port = "pty://monitor"
        rate_hz = 20
        sentences = ["TRD"]
    """,
        port=port,
    )
    daemon = Daemon(bench, tmp=tmp_path)
    monitor = PtyClient(tmp_path / "run" / "monitor").start()
    backseat = TcpClient(port).start()
    # iM200 sends a bare '*': the frontseat's checksum is optional
    sender = Repeater(backseat.sock.sendall, hz=10).start(b"$PYDIR,60,40*\r\n")
    time.sleep(2.0)
    backseat.sock.sendall(nmea_line("PYDEV,90.0,1.5"))
    time.sleep(1.0)
    summary = daemon.stop()
    sender.stop()
    backseat.close()
    monitor.close()
    frontseat = summary["devices"]["frontseat"]
    assert frontseat["rejected"] == {"unsupported": 1}
    # left (port) 60 %, right (starboard) 40 % of the Otter's 992.467 rpm maximum
    assert summary["actuators"]["port"]["commanded"][0] == pytest.approx(595.48, abs=0.01)
    assert summary["actuators"]["starboard"]["commanded"][0] == pytest.approx(396.99, abs=0.01)
    # ... reached on the motors' first-order lag (profiles/otter.toml: 0.1 s), both from
    # one step: the monitor's TRD (2 = port, 1 = starboard) at 20 Hz from before the first
    # PYDIR.
    steps = {
        fit_command_step(
            [m.rpm for _, m in monitor.sentences("TRD") if m.number == number],
            0.0,
            pct / 100.0 * OTTER_MAX_RPM,
            TAU_OTTER,
        )
        for number, pct in ((2, 60.0), (1, 40.0))
    }
    assert len(steps) == 1
    nvr = backseat.sentences("NVR")
    nvg = backseat.sentences("NVG")
    assert nvr[-1][1].yaw_rate > 1.0  # more thrust to port turns the bow to starboard
    # the Heron's rates (heron_nmea nmea_if.launch): CPNVR and CPNVG 5 Hz, CPRBS every 2 s
    assert len(nvr) == len(nvg)
    assert 1 <= len(backseat.sentences("RBS")) <= 3
    assert nvg[-1][1].latitude == pytest.approx(59.41, abs=0.01)


BACKSEAT = """
[vessel]
profile = "otter"
[[device]]
name = "frontseat"
type = "frontseat"
port = "tcp://127.0.0.1:{port}"
[[device]]
name = "monitor"               # reports the motors (the frontseat's sentences do not)
type = "thruster-controller"
port = "pty://monitor"
rate_hz = 20
sentences = ["TRD"]
"""


def motors_rpm(monitor: PtyClient) -> tuple[float, float]:
    """The latest (port, starboard) rpm the monitor reported (TRD 2 = port, 1 = starboard)."""
    latest = {m.number: m.rpm for _, m in monitor.sentences("TRD")}
    return latest.get(2, math.nan), latest.get(1, math.nan)


def test_a_backseat_that_froze_for_a_second_gets_its_thrust_back_with_its_next_pydir(tmp_path):
    # MOOS-IvP's iM200 froze for 1 s on a real bench (a scheduling hiccup): the Heron stops
    # the motors after 0.5 s and takes the next PYDIR, whatever it asks (protocols.md).
    port = free_tcp_port()
    daemon = Daemon(write_bench(tmp_path, BACKSEAT, port=port), tmp=tmp_path)
    monitor = PtyClient(tmp_path / "run" / "monitor").start()
    backseat = TcpClient(port).start()
    sender = Repeater(backseat.sock.sendall, hz=10).start(b"$PYDIR,60,40*\r\n")  # iM200's form
    wait_until(lambda: motors_rpm(monitor)[0] > 550, what="port motor at 60 %")
    sender.stop()  # the backseat freezes
    time.sleep(1.0)
    # the lease ran out: both motors stopped (from 595 rpm on a 0.1 s lag)
    wait_until(lambda: max(motors_rpm(monitor)) < 30.0, what="the motors stopped")
    # back, asking for more thrust: taken at once, with no neutral PYDIR first; the Heron
    # reads no checksum digits, so wrong ones carry the command too
    sender = Repeater(backseat.sock.sendall, hz=10).start(b"$PYDIR,80,80*00\r\n")
    wait_until(lambda: min(motors_rpm(monitor)) > 750, what="both motors at 80 %")
    backseat.sock.sendall(b"$PYDIR,10,10\r\n")  # without its '*' the Heron takes nothing
    # the trip is in loop.stats's window (one a second) too
    wait_until(
        lambda: sum(w["watchdog_trips"] for w in daemon.events("loop.stats")) == 1,
        what="the trip in loop.stats",
    )
    # and the line without '*' refused before the stop (on a busy machine the trip can be in
    # loop.stats before the daemon has read that line)
    wait_until(
        lambda: sum(w["rejected"] for w in daemon.events("loop.stats")) >= 1,
        what="the line without '*' refused",
    )
    summary = daemon.stop()
    sender.stop()
    backseat.close()
    monitor.close()
    frontseat = summary["devices"]["frontseat"]
    assert frontseat["rejected"] == {"missing_checksum": 1}  # no PYDIR refused as latched
    assert frontseat["watchdog_trips"] == 1 and frontseat["watchdog"] == "active"
    for side in ("port", "starboard"):  # 80 % of the Otter's maximum, as the summary rounds it
        commanded_rpm = summary["actuators"][side]["commanded"][0]
        assert commanded_rpm == pytest.approx(0.8 * OTTER_MAX_RPM, abs=0.01)
    (tripped,) = daemon.events("bus.watchdog_tripped")
    assert tripped["device"] == "frontseat" and tripped["release"] == "next-command"
    assert tripped["silent_s"] >= 0.5  # (rounded to ms: a trip at 0.5004 s says 0.5)
    (released,) = daemon.events("bus.watchdog_released")
    assert released["device"] == "frontseat" and released["release"] == "next-command"


def test_a_jet_controller_frozen_for_a_second_still_waits_for_a_neutral_command(tmp_path):
    # the same hiccup on Odin's jets: jet controls take throttle again only from neutral
    port = free_tcp_port()
    bench = write_bench(
        tmp_path,
        """
        [vessel]
        profile = "odin"
        [[device]]
        name = "jets"
        type = "jet-controller"
        port = "tcp://127.0.0.1:{port}"
        rate_hz = 20
        sentences = ["TRD"]
    """,
        port=port,
    )
    daemon = Daemon(bench, tmp=tmp_path)
    controller = TcpClient(port).start()
    ahead = nmea_line("RCTRC,0,1500.0,R,100.0,P,,B,C")
    sender = Repeater(controller.sock.sendall, hz=10).start(ahead)
    wait_until(lambda: (m := controller.sentences("TRD")) and m[-1][1].rpm > 1400)
    sender.stop()  # the controller freezes
    time.sleep(1.0)
    wait_until(lambda: controller.sentences("TRD")[-1][1].rpm_mode == "V", what="tripped")
    sender = Repeater(controller.sock.sendall, hz=10).start(ahead)  # back, full ahead again
    time.sleep(1.0)
    sender.stop()
    refused = sender.sent
    trd = controller.sentences("TRD")[-1][1]
    assert trd.rpm_mode == "V" and trd.rpm < 500.0  # still tripped, the engines at idle
    controller.sock.sendall(nmea_line("RCPRC,0.0,A,,V,,V,B,0"))  # lever in the neutral detent
    sender = Repeater(controller.sock.sendall, hz=10).start(ahead)
    wait_until(
        lambda: (m := controller.sentences("TRD")[-1][1]).rpm > 1000 and m.rpm_mode == "R",
        what="throttle again",
    )
    summary = daemon.stop()
    sender.stop()
    controller.close()
    jets = summary["devices"]["jets"]
    assert refused > 0 and jets["rejected"] == {"latched": refused}  # every one until neutral
    assert jets["watchdog_trips"] == 1 and jets["watchdog"] == "active"
    (released,) = daemon.events("bus.watchdog_released")
    assert released["release"] == "neutral"


def test_thruster_controller_steers_the_wamv_azimuths(tmp_path):
    udp = free_udp_port()
    bench = write_bench(
        tmp_path,
        """
        [vessel]
        profile = "wamv"
        [[device]]
        name = "thrusters"
        type = "thruster-controller"
        port = "udp://127.0.0.1:{udp}?listen=1"
    """,
        udp=udp,
    )
    daemon = Daemon(bench, tmp=tmp_path)
    controller = UdpClient().start()
    sender = Repeater(lambda line: controller.sock.sendto(line, ("127.0.0.1", udp)))
    # both thrusters half ahead, thrust directed 30 deg to starboard
    sender.start(nmea_line("RCTRC,0,50.0,P,,V,30.0,B,C"))
    wait_until(lambda: (m := controller.sentences("TRD")) and abs(m[-1][1].azimuth - 30) < 0.05)
    summary = daemon.stop()
    sender.stop()
    controller.close()
    trd = controller.sentences("TRD")[-1][1]
    assert trd.rpm == pytest.approx(50.0) and trd.rpm_mode == "P"  # normalized 0.5, in per cent
    rsa = controller.sentences("RSA")[-1][1]
    assert float(rsa.rsa_starboard) == pytest.approx(-30.0, abs=0.05)  # as a rudder angle
    assert not controller.sentences("RPM")  # VRX thrusters have no RPM to report
    assert summary["actuators"]["port"]["commanded"] == [0.5, 30.0, 1.0]
