"""The ``ardupilot-sitl`` device: ArduPilot's SITL on one side, hild's vessel on the other.

One frame from ArduPilot, one physics step, one answer (protocol.py). The frame's servo
outputs become an actuator command on the control queue (servos.py), applied before the step
like any other command; the answer is the state after it (state.py).

The link belongs to one SITL: the first sender of a frame (its address and port) owns it.
Frames from any other address are refused unanswered, counted (``foreign``) and logged at a
limited rate with the sender's address: a second program on ArduPilot's port (a second SITL
started with the same ``-I``, a test tool) neither resets the vessel nor moves the count (two
senders interleaving once made every other frame a restart and every jump back up "lost
frames"). Another sender takes the link over only as a newly started SITL would come: its frame
count near zero (below RESTART_BELOW) while the owner has sent nothing for OWNER_SILENT_S of
wall time. That is how a restarted SITL comes, on a new source port (ArduPilot's socket binds a
new ephemeral port in the new process): SIM_JSON.cpp counts from 0 and counts only frames it
got an answer to, so refused, it sends its frame 0 again about every 1.1 s (measured:
protocols.md) until the old owner's silence lets it in, a few seconds late. A running
SITL sends at least that often even when it hears nothing, so three seconds without a frame is
two of its re-sends missed: stopped, paused or gone. Both conditions are needed: a paused SITL
keeps its link however long the pause when nothing else comes, and against a second SITL that
has run for a while; a second SITL refused from the start stays at 0 and does not steal the
link from a running owner (it would every 1.1 s on its count alone). Silence is wall time, as
simulated time stands still with the frames.

The owner's frame count tells what a frame is (ArduPilot's JSON description and SIM_JSON.cpp;
measured: protocols.md):

- one more than the last: the next step;
- the same as the last: ArduPilot heard no answer and sends the frame again (every 10 s by its
  description, about every 1.1 s as measured): the last answer goes again, nothing steps;
- more than one ahead, by up to MAX_LOST_FRAMES: frames were lost on the way; the missing
  frames counted (``lost``), and one step taken (ArduPilot's clock is the answers'
  timestamps, so no time is lost on either side);
- back to near zero (below RESTART_BELOW): SITL restarted. The vessel goes back to how the
  run began (its place, heading, speed and actuators) and the timestamps start again from 0,
  as a newly started ArduPilot expects; hild's own clock, its weather and its traffic run on,
  so the NMEA out, the MQTT mirror and the recording see one run with a reset in it. A new
  owner (above) is a restart the same way, whatever its count;
- more than MAX_LOST_FRAMES ahead, or back but not near zero: no frame of this SITL's session
  (ArduPilot's count only grows within one) and no restart: counted as ``malformed``, skipped
  unanswered, the count kept. Should the owner send that same count again (ArduPilot does when
  it hears no answer; a stray datagram does not) hild takes it as the owner's count from then
  on: one step, nothing counted lost, no restart, so that no count can hold the link up.

No frame for a while is no failure: ArduPilot is paused, stopped or not yet started, and hild
waits with it (the whole loop is paced by the frames). The answer goes back to the address
and port the frame came from.
"""

from __future__ import annotations

import contextlib
import math
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import structlog

from hild.ardupilot.paramfile import ParamFile, read_params
from hild.ardupilot.protocol import (
    MAX_FRAME_BYTES,
    FrameError,
    ServoFrame,
    encode_state,
    parse_frame,
)
from hild.ardupilot.servos import MappingError, ServoMapping, build_mapping, params_problems
from hild.ardupilot.state import physics_state
from hild.bus.device import SettingError
from hild.clock import JitterStats
from hild.config import ConfigError
from hild.control import ActuatorCommand, ControlRecord, Restart, StepRate
from hild.geodesy import Origin
from hild.log import RateLimited
from hild.model.stability import StepLimit
from hild.model.vessel import Vessel
from hild.profiles import ARDUPILOT_PARAMS
from hild.sensors import kinematics
from hild.sensors.device import Device, DeviceConfig
from hild.sensors.noise import NoiseSpec
from hild.sensors.truth import Truth
from hild.transport.allow import SourceFilter
from hild.transport.url import PortSpec, parse_port_url

log = structlog.get_logger("hild.ardupilot")

DEFAULT_PORT = 9002  # where ArduPilot's SITL sends its frames (its JSON description)
POLL_S = 0.1  # how long the loop waits for a frame before it looks at its stop flag again
PAUSED_AFTER_S = 5.0  # wall seconds without a frame before the log says ArduPilot paused
# A count this far ahead is no frame of the SITL that sent the last. In lockstep ArduPilot
# counts the answers it receives (SIM_JSON.cpp: frame_counter++ in recv_fdm) and sends one
# frame per answer, so hild misses a count only when an answer of its own went to a frame sent
# again (one per 1.1 s that ArduPilot waited): a few at most. A second of frames at
# ArduPilot's default SIM_RATE_HZ (1200) is far above that and counts no stray datagram's
# count (4,294,967,295, say) as lost frames. (It was 100,000: each jump back and up again,
# taken as a restart and as lost frames, added up to that; 17.8 million in issue 50.)
MAX_LOST_FRAMES = 1_200
# A count below this is a newly started SITL's. Its first frame counts 0 and it counts only
# frames it got an answer to (SIM_JSON.cpp), so a new SITL that hild answers at once or refuses
# comes with 0; the margin is for frames lost on the way (a few: above) and test tools that
# count from 1. Small enough that a running SITL is past it within 0.1 s at 1200 Hz (0.5 s at
# 200 Hz), so a count going back that far is nothing else.
RESTART_BELOW = 100
# Wall seconds without a frame of the owner's before a newly started SITL (count below
# RESTART_BELOW) from another address takes the link over. A running SITL sends a frame at
# least every 1.1 s even when it hears nothing (measured: protocols.md); three seconds is two
# of those missed. The new SITL waits up to this plus one re-send (it is blocked, not late).
OWNER_SILENT_S = 3.0
RATE_SAME_HZ = 0.5  # a frame rate this close to the step's is the same (it wobbles by a hertz)
URL_EXPECTED = "udp://HOST:PORT?listen=1, e.g. udp://127.0.0.1:9002?listen=1"


@dataclass
class LinkStats:
    frames: int = 0  # frames taken (stepped)
    repeated: int = 0  # frames ArduPilot sent again: answered again, not stepped
    lost: int = 0  # frames missing from the count (lost on the way)
    restarts: int = 0  # SITL restarts: the vessel reset
    malformed: int = 0  # datagrams that were no servo frame
    refused: int = 0  # datagrams from an address the port does not allow
    foreign: int = 0  # frames from another sender than the link's SITL: refused, unanswered
    commands: int = 0  # actuator commands queued (frames whose servo outputs changed)
    unanswered: int = 0  # frames whose state could not be sent (not finite: diverged)
    refused_rate: int = 0  # first frames refused: their rate asks for a step beyond the limit


class ArduPilotSitl(Device):
    """ArduPilot's SITL JSON physics link (see the module's description)."""

    model: ClassVar[str] = "ardupilot-sitl"
    sentences_available: ClassVar[tuple[str, ...]] = ()
    noise_components: ClassVar[dict[str, int]] = {"gyro": 3, "accel": 3}
    worst_case: ClassVar[dict[str, float]] = {}

    def __init__(self, config: DeviceConfig, seed: int, origin: Origin, vessel: Vessel):
        super().__init__(config, seed, origin)
        self.vessel = vessel  # the boat it flies (a fleet's: its own)
        params = vehicle_params(config, vessel)
        self.mapping: ServoMapping = build_mapping(config.settings, vessel, params)
        self.accelerometer = kinematics.Accelerometer(self.lever_arm)
        self._arm = (float(self.lever_arm[0]), float(self.lever_arm[1]), float(self.lever_arm[2]))
        self.wind = bool(config.settings.get("wind", True))
        # noise to apply (else the exact values, without the per-value calls; faults, which
        # runtime control may add, are looked at each time)
        self._noisy = any(spec != NoiseSpec() for spec in config.noise.values())
        self.link = LinkStats()
        self.answer_time = JitterStats()  # frame received -> answer sent [s]
        self.socket: FrameSocket | None = None
        self.dt = 0.0
        self._start: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # x, states, cmds
        self._last_count: int | None = None
        self._session_step = 0  # the daemon's step at which this ArduPilot session began
        self._last_pwm: tuple[int, ...] | None = None
        self._last_answer = b""
        self._peer: tuple | None = None  # the SITL that owns the link: its address and port
        self._new_sitl = False  # another SITL took the link over: its first frame restarts
        self._skipped: int | None = None  # the count of the owner's last frame skipped
        self._t_frame = 0.0
        self._t_heard = 0.0
        self._paused = False
        self._rate_warned = False  # said once per ArduPilot session that its step differs
        self._log_malformed = RateLimited(log, "ardupilot.malformed_frame")
        self._log_lost = RateLimited(log, "ardupilot.frames_lost")
        self._log_foreign = RateLimited(log, "ardupilot.foreign_frame")
        self._log_unanswered = RateLimited(log, "ardupilot.unanswered", level="error")
        self._log_rate_refused = RateLimited(log, "ardupilot.rate_refused", level="error")
        self.limit: StepLimit | None = None

    # --- the bench's rules ------------------------------------------------------------
    @classmethod
    def check(cls, config: DeviceConfig, vessel: Vessel) -> list[SettingError]:
        """What cannot work: a mapping this vessel cannot follow, a port that is no UDP
        listener."""
        problems = []
        try:
            params = vehicle_params(config, vessel)
        except ConfigError as e:  # (the file's own line: where ArduPilot would stop too)
            problems.append(SettingError("params", e.file, f"an ArduPilot parameter file; {e}"))
        else:
            if params is not None:
                errors = params_problems(params, vessel, config.settings)
            else:
                try:
                    build_mapping(config.settings, vessel)
                    errors = []
                except MappingError as e:
                    errors = [e]
            problems += [SettingError(e.key, e.value, e.expected) for e in errors]
        if len(config.ports) != 1:
            problems.append(SettingError("ports", list(config.ports), "one port: " + URL_EXPECTED))
        else:
            spec = parse_port_url(config.ports[0])
            if spec.scheme != "udp" or spec.option("listen") != "1":
                problems.append(SettingError("ports", config.ports[0], URL_EXPECTED))
        return problems

    # --- the socket and the run ---------------------------------------------------------
    def open(self, spec: PortSpec) -> None:
        self.socket = FrameSocket.bind(spec)

    def close(self) -> None:
        if self.socket is not None:
            self.socket.close()
            self.socket = None

    def start(
        self,
        x: np.ndarray,
        act_state: np.ndarray,
        act_cmd: np.ndarray,
        dt: float,
        limit: StepLimit | None = None,
    ) -> None:
        """Remember how the run begins (what a SITL restart goes back to), the step, and the
        longest step the vessel takes stably (``limit``: a frame rate that asks for a longer
        one is refused; None: the bench's step is kept whatever ArduPilot asks)."""
        self._start = (x.copy(), act_state.copy(), act_cmd.copy())
        self.dt = dt
        self.limit = limit
        self._t_heard = time.monotonic()
        assert self.socket is not None
        log.info(
            "ardupilot.waiting",
            device=self.config.name,
            listening=self.socket.where,
            step_hz=round(1.0 / dt, 3),
        )

    def next_frame(
        self, put: Callable[[ControlRecord], None], step: int, wait_s: float = POLL_S
    ) -> ServoFrame | None:
        """Wait up to POLL_S for a frame; the frame to step on (its command and any restart
        queued with ``put``), or None (nothing came, a repeated frame was answered again, a
        datagram was refused, foreign or malformed, a count skipped). ``step`` is the daemon's
        step count so far."""
        assert self.socket is not None
        received = self.socket.receive(wait_s)
        now = time.monotonic()
        frame = None if received is None else self._owners_frame(*received, now)
        if frame is None:
            self._note_silence(now)
            return None
        self._heard(now)
        if self._last_count is None and not self._takes_rate(frame, put):
            return None
        if not self._steps_on(frame, put, step):
            return None
        self._last_count = frame.frame_count
        self._check_rate(frame.frame_rate)
        self.link.frames += 1
        if frame.pwm != self._last_pwm:
            self._last_pwm = frame.pwm
            self.link.commands += 1
            put(ActuatorCommand(self.config.name, now, self.mapping.demands(frame.pwm)))
        return frame

    def _owners_frame(self, data: bytes, address: tuple, now: float) -> ServoFrame | None:
        """The datagram as a frame of the SITL that owns the link (the first sender, or a new
        SITL that takes it over), else None: counted as refused, malformed or foreign."""
        assert self.socket is not None
        if not self.socket.allows(address):
            self.link.refused += 1
            return None
        try:
            frame = parse_frame(data)
        except FrameError as e:
            self.link.malformed += 1
            self._log_malformed(
                device=self.config.name,
                sender=str(address[0]),
                problem=str(e),
                malformed=self.link.malformed,
            )
            return None
        if address == self._peer:
            return frame
        if self._peer is not None and not self._may_take_over(frame, now):
            self.link.foreign += 1
            self._log_foreign(
                device=self.config.name,
                sender=_where(address),
                owner=_where(self._peer),
                frame_count=frame.frame_count,
                foreign=self.link.foreign,
                note="another sender on ArduPilot's port: refused, unanswered "
                f"(a new SITL, its count below {RESTART_BELOW}, is let in once "
                f"the owner has been silent {OWNER_SILENT_S:g} s)",
            )
            return None
        self._connect(frame, address, now)
        return frame

    def _may_take_over(self, frame: ServoFrame, now: float) -> bool:
        """A newly started SITL (its count near zero) while the owner is silent: a restart on
        a new source port (see the module's description)."""
        return frame.frame_count < RESTART_BELOW and now - self._t_heard >= OWNER_SILENT_S

    def _connect(self, frame: ServoFrame, address: tuple, now: float) -> None:
        """``address`` owns the link from now on; its first frame restarts the session when
        another SITL had it."""
        previous = {}
        if self._peer is not None:
            previous = {"previous": _where(self._peer), "silent_s": round(now - self._t_heard, 1)}
        log.info(
            "ardupilot.connected",
            device=self.config.name,
            sender=_where(address),
            frame_rate=frame.frame_rate,
            frame_count=frame.frame_count,
            **previous,
        )
        self._peer = address
        self._new_sitl = self._last_count is not None

    def _heard(self, now: float) -> None:
        """A frame of the owner's came (the next, a repeat or one skipped: it is alive)."""
        self._t_frame = now
        if self._paused:
            log.info(
                "ardupilot.resumed", device=self.config.name, after_s=round(now - self._t_heard, 1)
            )
            self._paused = False
        self._t_heard = now

    def _note_silence(self, now: float) -> None:
        """No frame of the owner's this time: say once when it has been a while."""
        if self._paused or self._last_count is None or now - self._t_heard <= PAUSED_AFTER_S:
            return
        self._paused = True
        note = "no frame for a while: ArduPilot paused or stopped; hild waits"
        log.info("ardupilot.paused", device=self.config.name, frames=self.link.frames, note=note)

    def _steps_on(self, frame: ServoFrame, put: Callable[[ControlRecord], None], step: int) -> bool:
        """Whether to step on the owner's ``frame``, by its count (the module's description):
        repeats answered again, restarts queued, lost frames counted, no-frames skipped."""
        assert self.socket is not None and self._peer is not None
        count, last = frame.frame_count, self._last_count
        if last is None:  # the run's first frame
            self._session_step = step
            return True
        if self._new_sitl:
            self._new_sitl = False
            self._restart(put, step, frame, last)
            return True
        if count == last:
            self.link.repeated += 1
            self.socket.send(self._last_answer, self._peer)
            return False
        problem = _implausible(count, last)
        if problem is not None and count != self._skipped:
            self._skipped = count
            self.link.malformed += 1  # no SITL's next frame: counted and skipped, unanswered
            self._log_malformed(
                device=self.config.name,
                sender=_where(self._peer),
                problem=problem,
                malformed=self.link.malformed,
            )
            return False
        if problem is not None:  # said again, as ArduPilot does unanswered: its count
            log.warning(
                "ardupilot.count_followed",
                device=self.config.name,
                frame_count=count,
                last_frame_count=last,
                note="the SITL sent a skipped count again: "
                "taken as its own, nothing lost, no restart",
            )
        elif count < last:
            self._restart(put, step, frame, last)
        elif count > last + 1:
            self.link.lost += count - last - 1
            self._log_lost(device=self.config.name, lost=count - last - 1, total=self.link.lost)
        self._skipped = None
        return True

    def answer(self, truth: Truth, step: int) -> None:
        """Send the state after ``step`` (the daemon's step count) to the frame's sender."""
        assert self.socket is not None and self._peer is not None
        t = truth.t
        p, q, r = truth.nu[3:6].tolist()
        gyro = (p, q, r)
        accel = self.accelerometer.specific_force(truth)
        if self._noisy or self.faults:
            fx, fy, fz = accel
            gyro = (
                self.noisy("gyro", p, t, 0),
                self.noisy("gyro", q, t, 1),
                self.noisy("gyro", r, t, 2),
            )
            accel = (
                self.noisy("accel", fx, t, 0),
                self.noisy("accel", fy, t, 1),
                self.noisy("accel", fz, t, 2),
            )
        timestamp = (step - self._session_step) * self.dt
        state = physics_state(truth, timestamp, self._arm, accel, gyro, self.wind)
        try:
            self._last_answer = encode_state(state)
        except ValueError as e:  # a diverged state: no answer (the loop's state check stops it)
            self.link.unanswered += 1
            self._log_unanswered(device=self.config.name, t=round(t, 3), problem=str(e)[:200])
            return
        self.socket.send(self._last_answer, self._peer)
        self.answer_time.add(time.monotonic() - self._t_frame)

    def _restart(
        self, put: Callable[[ControlRecord], None], step: int, frame: ServoFrame, last: int
    ) -> None:
        assert self._start is not None
        self.link.restarts += 1
        x, states, commands = self._start
        put(Restart(self.config.name, tuple(x), tuple(states), tuple(commands)))
        self._session_step = step
        self._last_pwm = None
        self._skipped = None
        self._rate_warned = False
        self.accelerometer.reset()
        note = "SITL restarted: the vessel is back at its start"
        sender = _where(self._peer) if self._peer is not None else None
        log.info(
            "ardupilot.restarted",
            device=self.config.name,
            sender=sender,
            frame_count=frame.frame_count,
            last_frame_count=last,
            note=note,
        )

    def _takes_rate(self, frame: ServoFrame, put: Callable[[ControlRecord], None]) -> bool:
        """The run's first frame says the step: 1 / its frame_rate (SIM_RATE_HZ), as ArduPilot's
        own JSON examples step. Another step than the bench's is queued (``StepRate``: the world
        takes it before its first step) when the vessel takes it stably; a longer one is
        refused: the frame goes unanswered (ArduPilot sends it again) and the error says the
        limit, until a SITL comes at a rate hild can step."""
        rate = frame.frame_rate
        if not rate or self.limit is None or abs(rate - 1.0 / self.dt) <= RATE_SAME_HZ:
            return True
        problem = self.limit.problem(1.0 / rate)
        if problem:
            self.link.refused_rate += 1
            self._log_rate_refused(
                device=self.config.name,
                frame_rate=rate,
                expected=problem,
                hint=f"set SIM_RATE_HZ to at least {math.ceil(1.0 / self.limit.dt)} in "
                "ArduPilot (its frames then come at that rate) and start it again",
                refused=self.link.refused_rate,
            )
            return False
        self.dt = 1.0 / rate
        put(StepRate(self.config.name, float(rate)))
        return True

    def _check_rate(self, frame_rate: int) -> None:
        """Say once per ArduPilot session when it asks for another step than hild takes (a
        SITL restarted at another SIM_RATE_HZ than the run's first: the step is the run's from
        its first frame on; ArduPilot's frame rate then wobbles by a hertz as it follows hild's
        timestamps: once is enough)."""
        if self._rate_warned or not self.dt:
            return
        step_hz = 1.0 / self.dt
        if frame_rate == 0 or abs(frame_rate - step_hz) > RATE_SAME_HZ:
            self._rate_warned = True
            log.warning(
                "ardupilot.step_differs",
                device=self.config.name,
                ardupilot_hz=frame_rate,
                hild_hz=round(step_hz, 3),
                note="hild takes one step of its own per frame and ArduPilot's clock "
                "follows the answers' timestamps, so both keep the same time; the run's step "
                "is the one its first frame asked for",
                hint=f"to match, start hild again (its step follows the first frame) or set "
                f"SIM_RATE_HZ {step_hz:g} in ArduPilot",
            )

    # --- what a sensor device would say -------------------------------------------------
    def measure(self, truth: Truth) -> dict[str, float]:
        return {}  # (it answers frames; it has no epochs)

    def cadence(self) -> str:
        return "one answer per ArduPilot frame (the loop's pace)"

    def describe(self) -> str:
        return f"{self.config.name} ({self.config.type}: servo frames in, state out)"

    def summary(self) -> dict[str, Any]:
        return {
            **vars(self.link),
            "mapping": self.mapping.kind,
            "servo_functions": {f"SERVO{n}": f for n, f in self.mapping.functions.items()},
            **({"params": self.mapping.source} if self.mapping.source else {}),
            "answer_p50_ms": round(self.answer_time.percentile_ms(50), 3),
            "answer_p99_ms": round(self.answer_time.percentile_ms(99), 3),
            "answer_max_ms": round(self.answer_time.max_s * 1e3, 3),
        }


def vehicle_params(config: DeviceConfig, vessel: Vessel) -> ParamFile | None:
    """The vehicle's ArduPilot parameter file the device's settings name (``params``; the bench
    resolved its path), else the built-in one its profile's boats come with
    (``profile_params``: the BlueBoat's own outputs), else None."""
    path = config.settings.get("params", "")
    if not path:
        name = (config.settings.get("profile_params") or {}).get(vessel.name)
        path = str(ARDUPILOT_PARAMS.builtin_path(name)) if name else ""
    return read_params(Path(path)) if path else None


class FrameSocket:
    """The link's UDP socket, bound where its URL says and read by the loop's own thread: a
    blocking receive with a timeout, no event loop between a frame and its answer."""

    def __init__(self, sock: socket.socket, spec: PortSpec):
        self.sock = sock
        self.spec = spec
        self.allow = SourceFilter.parse(spec.option("allow"))
        self._allowed: dict[str, bool] = {}  # sender host -> allowed
        self._timeout: float | None = None
        host, port = sock.getsockname()[:2]
        self.where = f"udp {_where((host, port))}"

    @classmethod
    def bind(cls, spec: PortSpec) -> FrameSocket:
        assert spec.host is not None and spec.port is not None
        infos = socket.getaddrinfo(spec.host, spec.port, type=socket.SOCK_DGRAM)
        family, _, _, _, address = infos[0]
        sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            sock.bind(address)
        except OSError as e:
            sock.close()
            raise OSError(e.errno, f"cannot receive on {spec.url}: {e.strerror or e}") from None
        return cls(sock, spec)

    def fileno(self) -> int:
        return self.sock.fileno()

    def receive(self, timeout: float) -> tuple[bytes, tuple] | None:
        if timeout != self._timeout:  # (settimeout is a system call: not at every frame)
            self.sock.settimeout(timeout)
            self._timeout = timeout
        try:
            return self.sock.recvfrom(MAX_FRAME_BYTES + 1)
        except TimeoutError:
            return None
        except OSError:  # (an ICMP error from an earlier answer, on some systems)
            return None

    def allows(self, address: tuple) -> bool:
        host = address[0]
        allowed = self._allowed.get(host)
        if allowed is None:  # (parsing an address is dearer than the rest of a frame)
            if len(self._allowed) > 64:
                self._allowed.clear()
            allowed = self._allowed[host] = self.allow.allows(str(host))
        return allowed

    def send(self, data: bytes, address: tuple) -> None:
        with contextlib.suppress(OSError):  # ArduPilot gone: it sends again when it is back
            self.sock.sendto(data, address)

    def close(self) -> None:
        self.sock.close()


def _implausible(count: int, last: int) -> str | None:
    """Why the owner's ``count`` after ``last`` is no frame of its session and no restart
    (None: it is one): far ahead, or back but not to a new SITL's first frames."""
    if count - last - 1 > MAX_LOST_FRAMES:
        return f"frame count {count} after {last}: more than {MAX_LOST_FRAMES} frames ahead"
    if RESTART_BELOW <= count < last:
        return (
            f"frame count {count} after {last}: back, but not to a restarted SITL's "
            f"first frames (below {RESTART_BELOW})"
        )
    return None


def _where(address: tuple) -> str:
    host, port = str(address[0]), int(address[1])
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


__all__ = ["ArduPilotSitl", "DEFAULT_PORT", "FrameSocket"]
