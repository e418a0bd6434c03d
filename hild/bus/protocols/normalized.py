"""Odin's normalized command interface (thesis sec. 3.10.2), in a proprietary sentence.

Odin's control system outputs RPM, nozzle and deflector each in [-100, 100]: RPM over the
engine's range (400 .. 2000 rev/min, linearly), nozzle over its range (-27 .. 27 deg, 0
centred, positive turning the bow to starboard), deflector from full astern (-100) through
neutral (0, no thrust) to full ahead (100). hild carries them in

    $PHLDC,<actuator>,<rpm>,<nozzle>,<deflector>*hh

and the same for thrusters in

    $PHLDT,<actuator>,<thrust>,<azimuth>*hh

(thrust -100 .. 100 per cent from full reverse to full ahead, azimuth -100 .. 100 over the
azimuth range, positive towards starboard). ``<actuator>`` is the wire number (0 for all)
or the actuator's name; an empty value leaves that part unchanged.
"""

from __future__ import annotations

from hild.bus.mapping import Actuator, ActuatorMap, Demand, nonempty
from hild.bus.sentence import Rejected, Sentence, expect_fields, integer, number


def decode_phldc(s: Sentence, amap: ActuatorMap) -> tuple[Demand, ...]:
    expect_fields(s, 4)
    rpm = number(s.fields[1], "rpm")
    nozzle = number(s.fields[2], "nozzle")
    deflector = number(s.fields[3], "deflector")
    demands = []
    for a in _actuators(s.fields[0], amap):
        if not a.has_deflector or a.speed_unit != "rpm":
            raise Rejected("unsupported", f"{a.name} is not a waterjet (send PHLDT)")
        demands.append(
            Demand(
                a.index,
                None if rpm is None else amap.speed_normalized(a, rpm),
                None if nozzle is None else amap.angle_normalized(a, nozzle),
                None if deflector is None else amap.deflector_percent(a, deflector),
            )
        )
    return nonempty(demands, s.address)


def decode_phldt(s: Sentence, amap: ActuatorMap) -> tuple[Demand, ...]:
    expect_fields(s, 2, 3)
    thrust = number(s.fields[1], "thrust")
    azimuth = number(s.fields[2], "azimuth") if len(s.fields) == 3 else None
    demands = []
    for a in _actuators(s.fields[0], amap):
        if a.has_deflector:
            raise Rejected("unsupported", f"{a.name} is a waterjet (send PHLDC)")
        angle = None
        if azimuth is not None and a.angle_kind == "azimuth":
            angle = amap.angle_normalized(a, azimuth)
        demands.append(
            Demand(a.index, None if thrust is None else amap.speed_percent(a, thrust), angle)
        )
    return nonempty(demands, s.address)


def _actuators(text: str, amap: ActuatorMap) -> tuple[Actuator, ...]:
    for a in amap.actuators:
        if text == a.name:
            return (a,)
    return amap.resolve(integer(text, "actuator"))
