"""Command protocols: each decodes the sentences it knows into actuator demands.

A protocol is a name a device lists in its ``protocols`` setting, the sentence addresses it
claims, and a pure decode function ``(Sentence, ActuatorMap) -> tuple[Demand, ...]`` that
raises ``Rejected`` for anything unusable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hild.bus.mapping import ActuatorMap, Demand
from hild.bus.protocols import frontseat, iec, normalized
from hild.bus.sentence import Sentence

Decoder = Callable[[Sentence, ActuatorMap], tuple[Demand, ...]]


@dataclass(frozen=True)
class Protocol:
    """One selectable protocol: its name in device files and how to match and decode."""

    name: str
    description: str
    decode: Decoder
    formatter: str = ""  # IEC sentences: the three letters after any talker ID
    address: str = ""  # proprietary sentences: the whole address

    def claims(self, sentence: Sentence) -> bool:
        if self.address:
            return sentence.address == self.address
        return (
            len(sentence.address) == 5
            and sentence.address.endswith(self.formatter)
            and (not sentence.address.startswith("P"))
        )


PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol("TRC", "IEC 61162-1 thruster control", iec.decode_trc, formatter="TRC"),
        Protocol("PRC", "IEC 61162-1 propulsion remote control", iec.decode_prc, formatter="PRC"),
        Protocol("ROR", "IEC 61162-1 rudder order", iec.decode_ror, formatter="ROR"),
        Protocol(
            "PHLDC", "Odin's normalized jet command", normalized.decode_phldc, address="PHLDC"
        ),
        Protocol("PHLDT", "normalized thruster command", normalized.decode_phldt, address="PHLDT"),
        Protocol("PYDIR", "Heron frontseat direct thrust", frontseat.decode_pydir, address="PYDIR"),
        Protocol(
            "PYDEV",
            "Heron frontseat heading and speed",
            frontseat.decode_unsupported,
            address="PYDEV",
        ),
        Protocol(
            "PYDEP",
            "Heron frontseat yaw rate and thrust",
            frontseat.decode_unsupported,
            address="PYDEP",
        ),
    )
}
