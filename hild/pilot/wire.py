"""Actuator command sentences: IEC 61162-1 TRC and ROR, Odin's PHLDC/PHLDT, Heron's PYDIR.

Every sentence is framed with its checksum and ``\\r\\n``, talker ``AP``
(autopilot), numbers with at most one decimal. The formats are the contract
with the daemon's command decoders:

- ``iec``: per actuator ``$APTRC,<n>,<rpm>,R,<deflector %>,P,,B,C`` for a
  waterjet (pitch demand drives the astern deflector, 100 full ahead) or
  ``$APTRC,<n>,<thrust %>,P,,V,,B,C`` otherwise, then one
  ``$APROR,<starboard deg>,A,<port deg>,A,B`` for a vessel that can steer.
- ``phldc`` (thesis 3.10.2, range [-100, 100]): ``$PHLDC,<n>,<rpm>,<nozzle>,<deflector>``
  per waterjet, RPM and nozzle linear over the profile's ranges, deflector
  -100 full astern .. 100 full ahead; ``$PHLDT,<n>,<thrust %>,<azimuth>`` per
  thruster, the azimuth linear over its range in the model's convention
  (direction of thrust, positive towards starboard), 0 when fixed.
- ``pydir`` (Clearpath Heron frontseat): ``$PYDIR,<left %>,<right %>``, left = port.

With any of them, ``$APHSC,<heading to steer, deg true>,T,,M`` announces the heading
reference, as an autopilot does (layout: gpsd's NMEA page, "HSC - Heading Steering Command";
the magnetic field is left empty, as hild models no variation).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from hild.model.vessel import Vessel
from hild.nmea.encode import fixed, frame
from hild.pilot.actuation import Setpoint, steerable

TALKER = "AP"
Encoder = Callable[[Sequence[Setpoint]], list[bytes]]


class ProtocolError(ValueError):
    """A protocol that cannot drive a vessel (e.g. PYDIR for waterjets)."""


def number(value: float) -> str:
    """At most one decimal, never "-0.0"."""
    return fixed(value, 1)


def percent_of_range(value: float, lo: float, hi: float) -> float:
    """``value`` in [lo, hi] -> [-100, 100], linearly."""
    if hi <= lo:
        return 0.0
    return max(-100.0, min(100.0, (value - lo) / (hi - lo) * 200.0 - 100.0))


def thrust_percent(s: Setpoint) -> float:
    return max(-100.0, min(100.0, 100.0 * s.level))


def iec(setpoints: Sequence[Setpoint]) -> list[bytes]:
    out = []
    for s in setpoints:
        if s.is_waterjet:
            body = f"{TALKER}TRC,{s.number},{number(s.rpm)},R,{number(100.0 * s.deflector)},P,,B,C"
        else:
            body = f"{TALKER}TRC,{s.number},{number(thrust_percent(s))},P,,V,,B,C"
        out.append(frame(body))
    rudders = {s.number: s.rudder_deg for s in setpoints if s.rudder_deg is not None}
    if rudders:
        starboard = rudders.get(1, next(iter(rudders.values())))
        port = rudders.get(2, starboard)
        out.append(frame(f"{TALKER}ROR,{number(starboard)},A,{number(port)},A,B"))
    return out


def hsc(heading: float) -> bytes:
    """The heading to steer [rad] as HSC, 0.0 .. 359.9 degrees true (as the pilot prints it)."""
    return frame(f"{TALKER}HSC,{number(round(math.degrees(heading), 1) % 360.0)},T,,M")


def phldc(setpoints: Sequence[Setpoint]) -> list[bytes]:
    out = []
    for s in setpoints:
        spec = s.spec
        angle = percent_of_range(s.angle_deg, *spec.angle_range_deg)
        if spec.angle_kind == "none":
            angle = 0.0
        if s.is_waterjet:
            rpm = percent_of_range(s.rpm, *spec.speed_range)
            body = f"PHLDC,{s.number},{number(rpm)},{number(angle)},{number(100.0 * s.deflector)}"
        else:
            body = f"PHLDT,{s.number},{number(thrust_percent(s))},{number(angle)}"
        out.append(frame(body))
    return out


def pydir(setpoints: Sequence[Setpoint]) -> list[bytes]:
    by_number = {s.number: s for s in setpoints}
    left, right = thrust_percent(by_number[2]), thrust_percent(by_number[1])
    return [frame(f"PYDIR,{number(left)},{number(right)}")]


PROTOCOLS: dict[str, Encoder] = {"iec": iec, "phldc": phldc, "pydir": pydir}


def encoder_for(protocol: str, vessel: Vessel) -> Encoder:
    """The encoder of ``protocol``, after checking that it can drive ``vessel``."""
    if protocol not in PROTOCOLS:
        raise ProtocolError(
            f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}"
        )
    if protocol == "pydir":
        kinds = {a.kind for a in vessel.actuators}
        names = sorted(a.name for a in vessel.actuators)
        if "waterjet" in kinds or steerable(vessel) or names != ["port", "starboard"]:
            raise ProtocolError(
                f"pydir drives twin fixed thrusters named port and starboard; {vessel.name} has "
                + ", ".join(f"{a.name} ({a.kind}, angle {a.angle_kind})" for a in vessel.actuators)
                + "; use --protocol iec or phldc"
            )
    return PROTOCOLS[protocol]
