"""IEC 61162-1 (NMEA 0183 edition 3+) propulsion and steering commands: TRC, PRC, ROR.

Field layouts: shared/reference/protocols.md (from the NAVIS NavDP 4000 manual pp. 293-300
and Furuno's NMEA appendices).

- TRC ``$--TRC,n,rpm,mode,pitch,mode,azimuth,location,status``: a command only with status
  ``C``. RPM mode ``R`` rev/min or ``P`` per cent (an engine's 0 % is idle); for a waterjet the
  pitch demand in per cent drives the astern deflector (-100 astern, 0 neutral, 100 ahead),
  and the azimuth demand (direction of thrust) drives the nozzle.
- PRC ``$--PRC,lever,A,rpm,mode,pitch,mode,location,engine``: the lever (-100 .. 100, 0 stop)
  drives deflector and RPM together as a single-lever jet control does; RPM and pitch demands,
  when present, override what the lever set. Engine 0 is all (single or centre line).
- ROR ``$--ROR,starboard,A,port,A[,location]``: rudder orders in degrees, positive turning the
  bow to starboard; the starboard field steers the starboard-most steerable actuator, the port
  field the port-most; with the port field empty the one order steers every one of them.
"""

from __future__ import annotations

from hild.bus.mapping import ActuatorMap, Demand, nonempty
from hild.bus.sentence import Rejected, Sentence, expect_fields, integer, number


def decode_trc(s: Sentence, amap: ActuatorMap) -> tuple[Demand, ...]:
    expect_fields(s, 8)
    n_text, rpm_text, rpm_mode, pitch_text, pitch_mode, az_text, _location, status = s.fields
    if status != "C":
        raise Rejected("not_command", f"TRC status flag {status!r}, a command has 'C'")
    actuators = amap.resolve(integer(n_text, "thruster number"))
    rpm = number(rpm_text, "rpm demand")
    pitch = number(pitch_text, "pitch demand")
    azimuth = number(az_text, "azimuth demand")
    _mode(rpm_mode, "RPV", "RPM mode")
    _mode(pitch_mode, "PDV", "pitch mode")
    demands = []
    for a in actuators:
        speed = amap.speed_demand(a, rpm, rpm_mode)
        deflector = None
        if a.has_deflector and pitch is not None and pitch_mode != "V":
            if pitch_mode != "P":
                raise Rejected("bad_mode", f"{a.name}: a deflector takes per cent (mode P)")
            deflector = amap.deflector_percent(a, pitch)
        angle = None
        if azimuth is not None and a.angle_kind != "none":
            angle = amap.thrust_direction(a, azimuth)
        demands.append(Demand(a.index, speed, angle, deflector))
    return nonempty(demands, s.address)


def decode_prc(s: Sentence, amap: ActuatorMap) -> tuple[Demand, ...]:
    expect_fields(s, 8)
    lever_text, lever_status, rpm_text, rpm_mode, pitch_text, pitch_mode, _loc, n_text = s.fields
    actuators = amap.resolve(integer(n_text, "engine number"))
    lever = number(lever_text, "lever demand")
    rpm = number(rpm_text, "rpm demand")
    pitch = number(pitch_text, "pitch demand")
    _mode(lever_status, "AV", "lever status")
    _mode(rpm_mode, "RPV", "RPM mode")
    _mode(pitch_mode, "PDV", "pitch mode")
    demands = []
    for a in actuators:
        speed = deflector = None
        if lever is not None and lever_status == "A":
            speed, deflector = amap.lever(a, lever)
        override = amap.speed_demand(a, rpm, rpm_mode)
        if override is not None:
            speed = override
        if a.has_deflector and pitch is not None and pitch_mode != "V":
            if pitch_mode != "P":  # as in TRC: a deflector takes per cent, not degrees
                raise Rejected("bad_mode", f"{a.name}: a deflector takes per cent (mode P)")
            deflector = amap.deflector_percent(a, pitch)
        demands.append(Demand(a.index, speed, None, deflector))
    return nonempty(demands, s.address)


def decode_ror(s: Sentence, amap: ActuatorMap) -> tuple[Demand, ...]:
    expect_fields(s, 4, 5)
    stbd_text, stbd_status, port_text, port_status = s.fields[:4]
    starboard = number(stbd_text, "starboard rudder order")
    port = number(port_text, "port rudder order")
    _mode(stbd_status, "AV", "starboard status")
    if port_text or port_status:
        _mode(port_status, "AV", "port status")
    steerable = amap.steerable
    if not steerable:
        raise Rejected("unsupported", "no actuator of this vessel steers")
    orders: dict[int, float] = {}
    if starboard is not None and stbd_status == "A":
        if port_text == "":  # a single rudder order: every steerable actuator follows it
            orders = {a.index: starboard for a in steerable}
        else:
            orders[amap.side("starboard").index] = starboard
    if port is not None and port_status == "A":
        orders[amap.side("port").index] = port
    if not orders:
        raise Rejected("empty", "no valid rudder order")
    return tuple(
        Demand(i, angle=amap.rudder_order(amap.actuators[i], deg)) for i, deg in orders.items()
    )


def _mode(letter: str, allowed: str, name: str) -> None:
    if len(letter) != 1 or letter not in allowed:
        raise Rejected("bad_mode", f"{name} {letter!r}, expected one of {', '.join(allowed)}")
