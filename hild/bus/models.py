"""The registry of command device models, by the name device files give in ``model``."""

from __future__ import annotations

from hild.bus.device import CommandDevice, JetController, ThrusterController
from hild.bus.frontseat import Frontseat

COMMAND_MODELS: dict[str, type[CommandDevice]] = {
    cls.model: cls for cls in (JetController, ThrusterController, Frontseat)
}
