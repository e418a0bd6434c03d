"""AIS receiver: the traffic targets' transponder messages as AIVDM sentences, and the own
ship's as AIVDO (a transponder's own-ship output) when asked for.

On a one-boat bench each receiver keeps its own reporting schedule of the stations it hears
(as a lone receiver need not share one). In a fleet the boats' receivers share the world's one
VHF data link (``hild.traffic.ais.Air``, given by ``share_air``): each station's transmission is
made once and every receiver in range hears that one (its kind, channel and instant); the own
boat's VDO is its own station's transmissions, the very ones the other boats hear as VDM.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

import numpy as np

from hild.geodesy import Origin
from hild.sensors import kinematics
from hild.sensors.device import Device, DeviceConfig, Measurement
from hild.sensors.truth import Truth
from hild.traffic import ais
from hild.traffic.layout import T_EAST, T_HEADING, T_NORTH, T_SPEED, T_YAW_RATE
from hild.traffic.targets import KNOT, Course, Identity, Target

NM = 1852.0  # m
OWN_KEY = "\x00own ship"  # the own ship's reporting clock (no target's name starts with NUL)

# What a device type that leaves a setting out gets (devices/ais.toml gives them all).
DEFAULTS: dict[str, Any] = {
    "range_nm": 20.0,
    "class_b_range_nm": 8.0,
    "drop_rate": 0.0,
    "own_mmsi": 257000000,
    "own_class": "A",
    "own_name": "HILD",
    "own_callsign": "",
    "own_ship_type": 90,
    "own_nav_status": 0,
    "own_to_bow": 0,
    "own_to_stern": 0,
    "own_to_port": 0,
    "own_to_starboard": 0,
    "budget_targets": 20,
}


class Ais(Device):
    """An AIS receiver on the own ship (a transponder's receiver output, 38400 baud).

    Each epoch it sends the messages of every target due now (``hild.traffic.ais``'s schedule,
    Class A by speed, navigational status and rate of turn; Class B by speed) and within
    reception range: ``range_nm`` for Class A, ``class_b_range_nm`` for Class B (2 W against
    12.5 W). Each transmission is lost with probability ``drop_rate`` (slot collisions, fading),
    from a random stream of its own. The own ship, as its transponder reports it (VDO), when
    "VDO" is among the sentences: a Class A transponder (``own_class``) its messages 1/3 at the
    schedule of its own speed, status and turn, and 5; a Class B one its messages 18 and 24A/B.
    In a fleet (``share_air``) the transmissions are the world's, heard by every boat.

    Faults: dropout silences everything (the stations transmit on: their clocks run);
    invalid reports every position as not available (lat 91, lon 181, accuracy 0); freeze
    repeats each station's last reported position; bias_jump on ``position`` (m, north and
    east) shifts every reported position, as does the ``position`` noise (each report its own
    white noise; a random walk is one drift for the whole receiver).
    """

    model = "ais"
    sentences_available: ClassVar[tuple[str, ...]] = ("VDM", "VDO")
    noise_components = {"position": 2}
    # One Class A position report at the widest values (``encode``; the lines' length does not
    # depend on the values: every AIS message of a type has a fixed number of bits).
    worst_case = {
        "lat": -89.99999,
        "lon": -179.99999,
        "sog_kn": 102.2,
        "cog": 359.9,
        "heading": 359.0,
        "rot_deg_per_min": -720.0,
    }

    def __init__(self, config: DeviceConfig, seed: int, origin: Origin):
        super().__init__(config, seed, origin)
        ais.encoder()  # pyais imported now, before a clock starts, not in the first report's tick
        self.schedule = ais.ReportSchedule(
            int(
                np.random.SeedSequence([seed, zlib.crc32(config.name.encode())]).generate_state(1)[
                    0
                ]
            )
        )
        self._drop_rng = np.random.default_rng(
            [seed, zlib.crc32(b"ais-drop:" + config.name.encode())]
        )
        self._seq = 9  # the sequential message id of the last multi-sentence message
        self._last_position: dict[str, tuple[float | None, float | None]] = {}
        self.messages: Counter[str] = Counter()  # received and sent (VDM), by message type
        self.own_messages: Counter[str] = Counter()  # VDO
        self.dropped = 0  # transmissions lost to drop_rate
        self.out_of_range = 0  # transmissions from beyond the reception range
        self.silenced = 0  # transmissions lost to a dropout fault
        # a fleet's: the world's one data link, this receiver's number on it, its own station
        self.air: ais.Air | None = None
        self._listener = -1
        self.station = OWN_KEY
        n = int(self.setting("budget_targets"))
        self.budget_targets: tuple[Target, ...] = tuple(
            Target(f"budget-{i}", Identity(mmsi=999999999, name=""), Course(0.0, 0.0, 0.0, 0.0))
            for i in range(n)
        )

    def setting(self, name: str) -> Any:
        return self.config.settings.get(name, DEFAULTS.get(name))

    def share_air(self, air: ais.Air, station: str) -> None:
        """Hear the world's one data link (a fleet's) instead of a schedule of its own; its own
        boat is the station ``station`` on it (its VDO is that station's transmissions)."""
        self.air = air
        self.station = station
        if self.hears_targets() or self.reports_own():
            self._listener = air.listener()  # (one that never listens would hold the log)

    # --- what it passes on (another output, hild/n2k/ais.py's PGNs, says otherwise) ------------
    def hears_targets(self) -> bool:
        """Whether it passes on the other stations' messages (VDM)."""
        return "VDM" in self.config.sentences

    def reports_own(self) -> bool:
        """Whether it reports its own transponder's (VDO)."""
        return "VDO" in self.config.sentences

    # --- the identity of the own ship ---------------------------------------------------------
    def own_identity(self) -> Identity:
        s = self.setting
        return Identity(
            mmsi=int(s("own_mmsi")),
            name=str(s("own_name")),
            callsign=str(s("own_callsign")),
            ship_type=int(s("own_ship_type")),
            to_bow=int(s("own_to_bow")),
            to_stern=int(s("own_to_stern")),
            to_port=int(s("own_to_port")),
            to_starboard=int(s("own_to_starboard")),
            nav_status=int(s("own_nav_status")),
            ais_class=str(s("own_class")),
        )

    # --- one epoch ----------------------------------------------------------------------------
    def sample(self, truth: Truth) -> list[bytes]:
        """Every message due at ``truth.t`` that the receiver hears, each as its sentences."""
        self.stats.epochs += 1
        t = truth.t
        silent = self._fault("dropout", t)
        if silent:
            self.stats.silent_epochs += 1
        lines: list[bytes] = []
        if self.air is not None:
            if self._listener >= 0:
                lines = self._from_air(truth)
            self.stats.sentences += len(lines)
            return lines
        own = kinematics.position_ned(truth, self.lever_arm)
        if self.hears_targets() and truth.traffic is not None:
            view = truth.traffic
            rows = view.state.tolist()  # (plain floats: a numpy scalar per field costs more)
            for target, row in zip(view.targets, rows, strict=False):
                lines += self._target(truth, target, row, own[0], own[1], silent)
        if self.reports_own():
            lines += self._own(truth, silent)
        self.stats.sentences += len(lines)
        return lines

    def _target(
        self,
        truth: Truth,
        target: Target,
        row: list[float],
        own_n: float,
        own_e: float,
        silent: bool,
    ) -> list[bytes]:
        ident = target.identity
        class_a = ident.ais_class != "B"
        sog_kn = float(row[T_SPEED]) / KNOT
        rot = math.degrees(float(row[T_YAW_RATE])) * 60.0  # deg/min
        interval = ais.station_interval(ident.ais_class, sog_kn, ident.nav_status, rot)
        due = self.schedule.due(target.name, truth.t, interval, ident)
        if not due.position and not due.static:
            return []
        clock = self.schedule.clocks[target.name]
        north, east = float(row[T_NORTH]), float(row[T_EAST])
        distance = math.hypot(north - own_n, east - own_e)
        reach = self.setting("range_nm" if class_a else "class_b_range_nm") * NM
        kinds = due.kinds(class_a)
        heading = math.degrees(float(row[T_HEADING]))  # = course over ground (no drift)
        t, second = truth.t, truth.utc.second

        def dynamic() -> ais.Dynamic:
            return self._dynamic(t, second, target.name, north, east, sog_kn, heading, heading, rot)

        out: list[bytes] = []
        for kind in kinds:
            channel = clock.take_channel()  # the station transmits whether heard or not
            if distance > reach:
                self.out_of_range += 1
                continue
            if self._drop_rng.random() < float(self.setting("drop_rate")):
                self.dropped += 1
                continue
            if silent:
                self.silenced += 1
                continue
            sent = self._message(kind, ident, channel, "VDM", dynamic)
            if sent:
                self.messages[kind] += 1
            out += sent
        return out

    def _message(
        self, kind: str, ident: Identity, channel: str, sentence: str, dynamic
    ) -> list[bytes]:
        """The sentences of one message (``kind``: its type, "24A" or "24B"); a message that
        cannot be encoded is left out and counted under its sentence type. The one place a
        received message becomes lines: another output overrides it (hild/n2k/ais.py), and
        must call ``dynamic`` (the report's position, its noise drawn) as this does: once for a
        position report (1, 3, 18), never for static data."""
        talker = self.config.talker

        def build(_name: str) -> list[bytes]:
            if kind in ("1", "3"):
                return ais.position_report_a(
                    int(kind), ident.mmsi, ident.nav_status, dynamic(), channel, sentence, talker
                )
            if kind == "18":
                return ais.position_report_b(ident.mmsi, dynamic(), channel, sentence, talker)
            if kind == "5":
                self._seq = (self._seq + 1) % 10  # the receiver's sequential message id
                return ais.static_voyage(ident, self._seq, channel, sentence, talker)
            return ais.static_b(ident, kind[-1], channel, sentence, talker)

        return self.failures.build([sentence], build)

    def _own(self, truth: Truth, silent: bool) -> list[bytes]:
        """The own transponder's messages due now (its own schedule: a one-boat bench's)."""
        ident = self.own_identity()
        vel = kinematics.velocity_ned(truth, self.lever_arm)
        sog_kn = math.hypot(vel[0], vel[1]) / KNOT
        rot = math.degrees(kinematics.yaw_rate(truth)) * 60.0
        interval = ais.station_interval(ident.ais_class, sog_kn, ident.nav_status, rot)
        due = self.schedule.due(OWN_KEY, truth.t, interval, ident)
        if not due.position and not due.static:
            return []
        clock = self.schedule.clocks[OWN_KEY]
        dynamic = self._own_dynamic(truth, truth.t, truth.utc.second, vel, sog_kn, rot)
        out: list[bytes] = []
        for kind in due.kinds(ident.ais_class != "B"):
            channel = clock.take_channel()
            if silent:
                self.silenced += 1
                continue
            out += self._send_own(kind, ident, channel, dynamic)
        return out

    def _own_dynamic(
        self, truth: Truth, t: float, second: int, vel: np.ndarray, sog_kn: float, rot: float
    ) -> Callable[[], ais.Dynamic]:
        """The own ship's report values at the antenna, from the device's own truth; its noise
        and faults of ``t``, its UTC ``second``."""
        pos = kinematics.position_ned(truth, self.lever_arm)
        cog = math.degrees(math.atan2(vel[1], vel[0])) % 360.0
        heading = math.degrees(truth.eta[5]) % 360.0

        def dynamic() -> ais.Dynamic:
            north, east = float(pos[0]), float(pos[1])
            return self._dynamic(t, second, self.station, north, east, sog_kn, cog, heading, rot)

        return dynamic

    def _send_own(self, kind: str, ident: Identity, channel: str, dynamic) -> list[bytes]:
        sent = self._message(kind, ident, channel, "VDO", dynamic)
        if sent:
            self.own_messages[kind] += 1
        return sent

    # --- a fleet's: the world's one data link -------------------------------------------------
    def _from_air(self, truth: Truth) -> list[bytes]:
        """Every transmission on the air since this receiver last listened, as it hears them:
        the others' (VDM) through its range, drop rate, faults and noise, each judged at the
        instant it was sent; its own boat's (VDO) as its transponder reports them."""
        assert self.air is not None
        heard = self.air.heard(self._listener, truth.t)
        if not heard:
            return []
        vdm = self.hears_targets()
        vdo = self.reports_own()
        own = kinematics.position_ned(truth, self.lever_arm)
        own_n, own_e = float(own[0]), float(own[1])
        own_motion: tuple | None = None
        out: list[bytes] = []
        for tx in heard:
            if tx.station == self.station:
                if not vdo:
                    continue
                if self._fault("dropout", tx.t):
                    self.silenced += 1
                    continue
                if own_motion is None:
                    vel = kinematics.velocity_ned(truth, self.lever_arm)
                    sog_kn = math.hypot(vel[0], vel[1]) / KNOT
                    own_motion = (vel, sog_kn, math.degrees(kinematics.yaw_rate(truth)) * 60.0)
                # (its values the device's own at this epoch; its time the instant it was sent)
                second = self._second(truth, tx.t)
                dynamic = self._own_dynamic(truth, tx.t, second, *own_motion)
                out += self._send_own(tx.kind, self.own_identity(), tx.channel, dynamic)
            elif vdm:
                out += self._hear(truth, tx, own_n, own_e)
        return out

    def _hear(self, truth: Truth, tx: ais.Transmission, own_n: float, own_e: float) -> list[bytes]:
        """One transmission of another station, as this receiver hears it (or not)."""
        ident, row = tx.identity, tx.row
        class_a = ident.ais_class != "B"
        north, east = float(row[T_NORTH]), float(row[T_EAST])
        reach = self.setting("range_nm" if class_a else "class_b_range_nm") * NM
        if math.hypot(north - own_n, east - own_e) > reach:
            self.out_of_range += 1
            return []
        if self._drop_rng.random() < float(self.setting("drop_rate")):
            self.dropped += 1
            return []
        t = tx.t
        if self._fault("dropout", t):
            self.silenced += 1
            return []
        second = self._second(truth, t)
        sog_kn = float(row[T_SPEED]) / KNOT
        rot = math.degrees(float(row[T_YAW_RATE])) * 60.0  # deg/min
        heading = math.degrees(float(row[T_HEADING]))  # = course over ground (no drift)

        def dynamic() -> ais.Dynamic:
            return self._dynamic(t, second, tx.station, north, east, sog_kn, heading, heading, rot)

        sent = self._message(tx.kind, ident, tx.channel, "VDM", dynamic)
        if sent:
            self.messages[tx.kind] += 1
        return sent

    @staticmethod
    def _second(truth: Truth, t: float) -> int:
        """The UTC second of the instant ``t`` (a transmission's, at or before the truth's: a
        receiver listening less often than the link hears some after they were sent)."""
        return (truth.utc if t == truth.t else truth.utc - timedelta(seconds=truth.t - t)).second

    def _dynamic(
        self,
        t: float,
        second: int,
        key: str,
        north: float,
        east: float,
        sog_kn: float,
        cog_deg: float,
        heading_deg: float,
        rot: float,
    ) -> ais.Dynamic:
        """A report's values at ``t``: the position with the receiver's noise and faults."""
        valid = not self._fault("invalid", t)
        if self._fault("freeze", t) and key in self._last_position:
            lat, lon = self._last_position[key]
        else:
            lat, lon, _ = self.origin.to_geodetic(
                self.noisy("position", north, t, 0), self.noisy("position", east, t, 1)
            )
            self._last_position[key] = (lat, lon)
        return ais.Dynamic(
            lat_deg=lat if valid else None,
            lon_deg=lon if valid else None,
            sog_kn=sog_kn,
            cog_deg=cog_deg,
            heading_deg=heading_deg,
            rot_deg_per_min=rot,
            second=second,
            accurate=valid,
        )

    def summary(self) -> dict:
        """The base's counters; ``messages`` heard and sent by type ("1", "3", "5", "18",
        "24A", "24B"), ``own_messages`` (VDO), and the transmissions not sent: ``dropped``
        (drop_rate), ``out_of_range``, ``silenced`` (dropout)."""
        return {
            **super().summary(),
            "messages": dict(sorted(self.messages.items())),
            "own_messages": dict(sorted(self.own_messages.items())),
            "dropped": self.dropped,
            "out_of_range": self.out_of_range,
            "silenced": self.silenced,
        }

    # --- the serial budget --------------------------------------------------------------------
    def cadence(self) -> str:
        """Each target at its own reporting interval; the epoch rate is only how finely."""
        return "at ITU-R M.1371 intervals"

    def bytes_per_s(self, utc: datetime, traffic: Sequence[Target] = ()) -> float:
        """The worst-case load of the line [bytes/s]: every target in range, none dropped, each
        at the shortest interval of its class (Class A 2 s, Class B 30 s) and its static data
        every 6 min (message 5; 24 A and B); the own ship (VDO) likewise, of its ``own_class``.
        Each AIS message type has a fixed number of bits, so its sentences a fixed length. The
        targets are the bench's ``traffic``, made up to ``budget_targets`` with Class A
        stand-ins (room for targets added while running)."""
        targets = [*traffic, *self.budget_targets[len(traffic) :]]
        talker = self.config.talker
        ident = Identity(mmsi=999999999, name="")
        d = ais.Dynamic(None, None, 0.0, 0.0, None, None, 60, False)

        def size(lines: list[bytes]) -> int:
            return sum(map(len, lines))

        load = 0.0
        for sentence in ("VDM", "VDO"):
            if sentence not in self.config.sentences:
                continue
            position_a = size(ais.position_report_a(1, ident.mmsi, 0, d, "A", sentence, talker))
            static_a = size(ais.static_voyage(ident, 0, "A", sentence, talker))
            a = position_a / ais.shortest_interval("A") + static_a / ais.STATIC_INTERVAL_S
            position_b = size(ais.position_report_b(ident.mmsi, d, "A", sentence, talker))
            static_b = sum(size(ais.static_b(ident, p, "A", sentence, talker)) for p in "AB")
            b = position_b / ais.shortest_interval("B") + static_b / ais.STATIC_INTERVAL_S
            if sentence == "VDO":
                load += b if self.setting("own_class") == "B" else a
                continue
            load += sum(a if tg.identity.ais_class != "B" else b for tg in targets)
        return load

    def epoch_bytes(self, utc: datetime) -> int:
        """An AIS epoch has no fixed size: it depends on how many targets are due. For the
        base's budget (rate_hz x epoch_bytes = the line's load), this is the worst-case load
        (``bytes_per_s``) shared over the epochs of a second, rounded up: the mean epoch, not
        the longest burst (a receiver buffers its output; the line must carry the load).
        The targets reckoned with are ``budget_targets``: by default as many Class A targets
        as the ``budget_targets`` setting says; a bench that knows its traffic may set them."""
        return math.ceil(self.bytes_per_s(utc, self.budget_targets) / self.config.rate_hz)

    # --- the base's measurement API (one Class A report of a stand-in, e.g. for tests) ---------
    def measure(self, truth: Truth) -> Measurement:
        """The own ship as its transponder would report it."""
        vel = kinematics.velocity_ned(truth, self.lever_arm)
        pos = kinematics.position_ned(truth, self.lever_arm)
        lat, lon, _ = self.origin.to_geodetic(float(pos[0]), float(pos[1]))
        return {
            "lat": lat,
            "lon": lon,
            "sog_kn": math.hypot(vel[0], vel[1]) / KNOT,
            "cog": math.degrees(math.atan2(vel[1], vel[0])) % 360.0,
            "heading": math.degrees(truth.eta[5]) % 360.0,
            "rot_deg_per_min": math.degrees(kinematics.yaw_rate(truth)) * 60.0,
        }

    def sentence(self, name: str, m: Measurement, utc: datetime, valid: bool) -> list[bytes]:
        """One message 1 with ``m``'s values: of a stand-in target (VDM) or the own ship (VDO)."""
        d = ais.Dynamic(
            lat_deg=m["lat"] if valid else None,
            lon_deg=m["lon"] if valid else None,
            sog_kn=m["sog_kn"],
            cog_deg=m["cog"],
            heading_deg=m["heading"],
            rot_deg_per_min=m["rot_deg_per_min"],
            second=utc.second,
            accurate=valid,
        )
        mmsi = int(self.setting("own_mmsi")) if name == "VDO" else 999999999
        return ais.position_report_a(1, mmsi, 0, d, "A", name, self.config.talker)
