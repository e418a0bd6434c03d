"""The device kinds' registry (hild/devices/registry.py): every type name loads its class, the
class says the same name, and it plays the role the registry gives it (hild/devices/roles.py);
nothing else in hild asks a device what class it is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hild.devices.catalog import available_device_types, load_device_type
from hild.devices.registry import KINDS, build_device
from hild.devices.roles import COMMANDS, FRAMES, ROLES, SENSOR, PacesFrames, Sampled, TakesCommands

HILD = Path(__file__).resolve().parents[1] / "hild"
PROTOCOL = {SENSOR: Sampled, COMMANDS: TakesCommands, FRAMES: PacesFrames}


@pytest.mark.parametrize("model", sorted(KINDS))
def test_each_kind_loads_a_class_of_its_name(model):
    kind = KINDS[model]
    assert kind.role in ROLES and kind.load().model == model
    assert kind.needs_vessel == (kind.role != SENSOR)


def test_every_shipped_device_type_builds_a_device_that_plays_its_kinds_role():
    """Each file in devices/ names a registered kind; built, it has what its role's protocol
    asks (and a sensor has nothing of the others': it takes no command, paces nothing)."""
    from hild.geodesy import Origin
    from hild.profiles.vessel import load_profile
    from hild.sensors.device import DeviceConfig

    origin = Origin(59.41, 10.48)
    vessels = {"jets": load_profile("odin"), "thrusters": load_profile("otter")}
    roles = set()
    for name in available_device_types():
        t = load_device_type(name)
        config = DeviceConfig(
            name=name,
            type=name,
            model=t.model.model,
            talker=t.talker,
            rate_hz=t.rate_hz,
            baud=t.baud,
            sentences=t.sentences,
            lever_arm=t.position,
            ports=("udp://127.0.0.1:9",),
            settings=t.settings,
        )
        vessel = vessels["jets" if config.model == "jet-controller" else "thrusters"]
        device = build_device(config, 0, origin, vessel)
        role = KINDS[config.model].role
        roles.add(role)
        assert isinstance(device, PROTOCOL[role]), name
        if role == SENSOR:
            assert not isinstance(device, TakesCommands | PacesFrames), name
    assert roles == set(ROLES)


def test_no_module_outside_the_registry_asks_a_device_its_class():
    """isinstance on a device kind (or the device base classes) stays in hild/devices/."""
    kinds = {KINDS[m].name for m in KINDS} | {"Device", "CommandDevice"}
    pattern = re.compile(r"isinstance\([^,]+,\s*\(?\s*(" + "|".join(sorted(kinds)) + r")\b")
    found = []
    for path in HILD.rglob("*.py"):
        if path.parent.name == "devices":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(HILD.parent)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
