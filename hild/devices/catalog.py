"""Device types: the TOML definitions in ``devices/`` and the models that implement them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hild.ardupilot.servos import MAPPINGS
from hild.builtin import builtin_candidates, builtin_folder
from hild.bus.frontseat import CPNVG_HEADINGS
from hild.config import ConfigError, FileKind, Problems, Reading, Section, load_toml
from hild.devices.registry import KINDS
from hild.nmea.sentences import TTM_UNITS
from hild.profiles import ARDUPILOT_PARAMS
from hild.sensors.course import COG_AT_REST

# A device's sentence rate: from once per 100 s (a slow status sentence) to 100 Hz (the
# fastest heading and IMU outputs on an NMEA bus); never more than the loop's rate either.
MIN_RATE_HZ = 0.01
MAX_RATE_HZ = 100.0
# Numeric device settings: the values a sentence field can carry or a receiver can mean.
SETTING_LIMITS: dict[str, tuple[float, float]] = {
    "fix_quality": (0, 8),  # GGA quality indicator 0-8 (NMEA 0183 v4.10)
    "satellites": (0, 99),  # GGA: two digits
    "hdop": (0.0, 99.9),
    "pdop": (0.0, 99.9),
    "vdop": (0.0, 99.9),
    "geoid_separation": (-200.0, 200.0),  # m: the geoid stays within about 110 m of WGS 84
    # ddmm.mmmmmm: with 7 decimals a GGA at the field widths' extremes needs 83 characters
    "position_decimals": (0, 6),
    "accuracy_deg": (0.0, 90.0),
    "battery_voltage": (0.0, 100.0),
    # the AIS receiver (hild/sensors/ais.py): VHF reception reaches some 20-40 nm at most
    "range_nm": (0.0, 100.0),
    "class_b_range_nm": (0.0, 100.0),
    "drop_rate": (0.0, 1.0),  # a share of the transmissions
    "own_mmsi": (0, 999999999),  # 30 bits, nine digits
    "own_ship_type": (0, 255),  # 8 bits (ITU-R M.1371-5 Table 53)
    "own_nav_status": (0, 15),  # 4 bits
    "own_to_bow": (0, 511),  # m, 9 bits
    "own_to_stern": (0, 511),
    "own_to_port": (0, 63),  # m, 6 bits
    "own_to_starboard": (0, 63),
    "budget_targets": (0, 1000),  # targets the serial budget reckons with
    # an NMEA 2000 node (hild/n2k/): its address and its ISO 11783 NAME's fields
    "source": (0, 253),  # 254 is "cannot claim", 255 global
    "unique_number": (0, 2**21 - 1),
    "manufacturer_code": (0, 2**11 - 1),
    "device_function": (0, 255),
    "device_class": (0, 127),
    "device_instance": (0, 255),
    "system_instance": (0, 15),
    "variation_deg": (-180.0, 180.0),
    "variation_source": (0, 15),
    "transducer_type": (0, 254),
    # the radar (hild/sensors/radar.py); range_nm as above (a radar's scales reach 96 nm)
    "origin_height_m": (-100.0, 100.0),  # the body origin's height above the sea
    "target_height_m": (0.0, 100.0),  # a target's radar echo height above the sea
    "capacity": (1, 99),  # tracks at once: TTM numbers them with two digits
    "acquire_s": (0.0, 600.0),  # an ARPA's vector is stable within 1-3 min
    # ArduPilot's servo outputs (hild/ardupilot/servos.py): SERVO1 .. SERVO32, pulses in us
    "steering_channel": (1, 32),
    "throttle_channel": (1, 32),
    "throttle_left_channel": (1, 32),
    "throttle_right_channel": (1, 32),
    "pwm_min": (500, 2500),
    "pwm_trim": (500, 2500),
    "pwm_max": (500, 2500),
    "no_signal_below_us": (0, 2500),
}


# Device settings that name one of a few behaviours.
SETTING_CHOICES: dict[str, tuple[str, ...]] = {
    "cog_at_rest": COG_AT_REST,  # a receiver's course below 0.1 m/s (hild/sensors/course.py)
    "cpnvg_heading": CPNVG_HEADINGS,  # the frontseat's CPNVG heading
    "units": TTM_UNITS,  # the radar's TTM distances and speeds: nm, km or statute miles
    "mapping": MAPPINGS,  # ArduPilot's servo outputs to the actuators (hild/ardupilot/servos.py)
    "own_class": ("A", "B"),  # the AIS receiver's own transponder (hild/sensors/ais.py)
}
# Device settings that name a file: a built-in one by its name, or a path (relative to the
# bench that names it); "" for none.
SETTING_FILES: dict[str, FileKind] = {
    "params": ARDUPILOT_PARAMS,  # the vehicle's ArduPilot parameters (hild/ardupilot/servos.py)
}

DEVICE_DIR = builtin_folder("devices")


@dataclass(frozen=True)
class DeviceType:
    """A device type's defaults: what it sends, how fast, on what line, and its settings."""

    name: str
    file: str
    description: str
    model: Any  # the kind's class (hild/devices/registry.py)
    talker: str
    rate_hz: float
    baud: int
    sentences: tuple[str, ...]
    position: tuple[float, float, float]
    quantity_units: dict[str, str]  # quantity -> the unit its noise and faults are given in
    settings: dict[str, Any]


DEVICE_TYPES = FileKind(
    "device type", "type", DEVICE_DIR, "HILD_DEVICE_PATH", searched=builtin_candidates("devices")
)


def available_device_types() -> list[str]:
    """Every device type's name, in $HILD_DEVICE_PATH's folders and ``devices/``."""
    return sorted({p.stem for d in DEVICE_TYPES.folders() for p in d.glob("*.toml")})


def load_device_type(name: str) -> DeviceType:
    """Read and check a device type: a path, or a name in $HILD_DEVICE_PATH or ``devices/``;
    every problem of the file is reported at once."""
    path = DEVICE_TYPES.resolve(name)
    root = Section(load_toml(path), path)
    problems = Problems()
    dev = problems.attempt(lambda: root.table("device", required=True)) or root.child("device")
    r = Reading(problems)
    model_name = r.get("model", dev.string, "model", name)
    kind = KINDS.get(model_name) if model_name is not None else None
    if model_name is not None and kind is None:
        problems.add(dev.error("model", model_name, "one of " + ", ".join(sorted(KINDS))))
    model = kind.load() if kind is not None else None
    sentences: tuple[str, ...] = ()
    if model is not None and model.sentences_available:
        sentences = r.get(
            "sentences", sentence_list, dev, "sentences", model.sentences_available, default=()
        )
    else:
        dev.skip("sentences")  # they depend on the model (and some models send none)
    quantity_units = _quantity_units(root, model, problems)

    def optional(default: Any) -> list[Any]:
        """A line's keys (talker, baud) are optional for a model that sends no sentences."""
        return [] if model is None or model.sentences_available else [default]

    settings = problems.attempt(root.table, "settings")
    setting_values = dict(settings.data) if settings else {}
    for key in setting_values:
        problems.attempt(check_setting, settings, key)
    result = DeviceType(
        name=name,
        file=str(path),
        description=r.get("description", dev.string, "description", "", default=""),
        model=model or KINDS["gps"].load(),
        talker=r.get("talker", talker, dev, "talker", *optional("GP"), default="GP"),
        rate_hz=r.get(
            "rate_hz", dev.number, "rate_hz", lo=MIN_RATE_HZ, hi=MAX_RATE_HZ, unit="Hz", default=1.0
        ),
        baud=r.get("baud", dev.integer, "baud", *optional(4800), lo=300, default=4800),
        sentences=sentences,
        position=tuple(
            r.get(
                "position", dev.array, "position", (3,), [0.0, 0.0, 0.0], default=np.zeros(3)
            ).tolist()
        ),
        quantity_units=quantity_units,
        settings=setting_values,
    )
    for section in (dev, root):
        problems.attempt(section.finish)
    problems.raise_any()
    return result


def _quantity_units(root: Section, model: Any, problems: Problems) -> dict[str, str]:
    """The [quantities] table: each a noise component of the model (unchecked without one)."""
    quantities = problems.attempt(root.table, "quantities") or root.child("quantities")
    quantity_units = dict(quantities.data)
    for q in quantity_units:
        quantities.raw(q)
        if model is not None and q not in model.noise_components:
            known = ", ".join(model.noise_components)
            problems.add(quantities.error(q, quantity_units[q], f"one of {known}"))
    return quantity_units


def check_setting(section: Section, key: str) -> None:
    """A setting's value within what it can mean (its choices or limits), as a device type
    file gives it; a bench's overrides are checked against the same."""
    value = section.raw(key)
    if key in SETTING_CHOICES:
        section.string(key, choices=SETTING_CHOICES[key])
    elif key in SETTING_LIMITS and not isinstance(value, bool) and isinstance(value, int | float):
        lo, hi = SETTING_LIMITS[key]
        if not lo <= value <= hi:
            raise section.error(key, value, f"a value from {lo:g} to {hi:g}")


def talker(section: Section, key: str, default: Any = None) -> str:
    value = section.string(key) if default is None else section.string(key, default)
    if len(value) != 2 or not value.isalnum() or not value.isupper():
        raise section.error(key, value, "a two-letter NMEA talker ID such as 'GP', 'GN', 'HE'")
    return value


def sentence_list(
    section: Section, key: str, available: tuple[str, ...], default: Any = None
) -> tuple[str, ...]:
    sentences, problem = read_sentences(section, key, available, default)
    if problem is not None:
        raise problem
    return sentences


def read_sentences(
    section: Section, key: str, available: tuple[str, ...], default: Any = None
) -> tuple[tuple[str, ...], ConfigError | None]:
    """The list's known sentences, each once, and the problem with the list if it has one (a
    name that is no sentence, one given twice); a list with no known sentence raises."""
    value = section.raw(key) if default is None else section.raw(key, default)
    what = "a list of sentence names from: " + ", ".join(available)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise section.error(key, value, what)
    unknown = [v for v in dict.fromkeys(value) if v not in available]
    known = tuple(v for v in dict.fromkeys(value) if v in available)
    problem = None
    if unknown:
        names = ", ".join(repr(v) for v in unknown)
        verb = "is not one of them" if len(unknown) == 1 else "are not among them"
        problem = section.error(key, value, f"{what} ({names} {verb})")
    elif len(set(value)) != len(value):
        problem = section.error(key, value, f"{what}, each once")
    if not known:
        raise problem or section.error(key, value, what)
    return known, problem


__all__ = ["ConfigError", "DeviceType", "available_device_types", "load_device_type"]
