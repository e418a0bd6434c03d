"""The anemometer at (near) zero wind: no direction below 0.05 m/s, as a Gill WindSonic in its
NMEA set-up leaves it out (hild/sensors/anemometer.py quotes its manual): MWV's angle and MWD's
direction are empty with status A, 130306's Wind Angle "not available". Every line of a wind of
0.05 m/s or more is the one hild sent before.
"""

from __future__ import annotations

import math
import time

import pynmea2
import pytest

from hild.devices.registry import build_device
from hild.nmea import sentences as nmea
from hild.nmea.encode import frame
from hild.sensors.anemometer import MIN_DIRECTION_SPEED_MS
from hild.sensors.noise import NoiseSpec
from tests.endpoints import Daemon, UdpClient, free_udp_port
from tests.n2k_tools import decode, needs_analyzerjs
from tests.test_daemon import default_bench_on_free_ports
from tests.test_sensors import ORIGIN, config, truth
from tests.test_sentence_properties import device_config


def anemometer(**kw):
    return build_device(config("anemometer", ["MWV", "MWD"], **kw), 0, ORIGIN)


def from_the(from_deg: float, speed_ms: float) -> tuple[float, float]:
    """The air's velocity (north, east) of a wind of ``speed_ms`` coming from ``from_deg``."""
    rad = math.radians(from_deg)
    return -speed_ms * math.cos(rad), -speed_ms * math.sin(rad)


def parsed(lines: list[bytes]) -> list[pynmea2.NMEASentence]:
    return [pynmea2.parse(line.decode().strip(), check=True) for line in lines]


def test_a_still_boat_in_still_air_sends_no_direction():
    lines = anemometer().sample(truth())
    assert lines == [
        frame("XXMWV,,R,0.0,M,A"),
        frame("XXMWV,,T,0.0,M,A"),
        frame("XXMWD,,T,,M,0.0,N,0.0,M"),
    ]
    relative, true, mwd = parsed(lines)
    assert (relative.wind_angle, relative.reference, relative.status) == (None, "R", "A")
    assert float(relative.wind_speed) == 0.0
    assert (true.wind_angle, true.reference, true.status) == (None, "T", "A")
    assert mwd.direction_true is None and float(mwd.wind_speed_meters) == 0.0


def test_a_boat_under_way_in_still_air_has_an_apparent_wind_but_no_true_one():
    relative, true, mwd = parsed(anemometer().sample(truth(nu=(2.0, 0, 0, 0, 0, 0))))
    assert float(relative.wind_angle) == 0.0 and float(relative.wind_speed) == 2.0
    assert true.wind_angle is None and float(true.wind_speed) == 0.0
    assert mwd.direction_true is None


def test_a_wind_rising_from_zero_gets_its_direction_back_and_loses_it_again():
    device = anemometer()
    speeds = [0.0, 0.02, 0.049, 0.051, 0.3, 4.0, 0.04, 0.0]
    for t, speed in enumerate(speeds):
        relative, true, mwd = parsed(device.sample(truth(t=t, wind_ned=from_the(270.3, speed))))
        if speed < MIN_DIRECTION_SPEED_MS:
            assert relative.wind_angle is None and true.wind_angle is None, speed
            assert mwd.direction_true is None, speed
        else:
            assert float(relative.wind_angle) == float(true.wind_angle) == 270.3, speed
            assert float(mwd.direction_true) == 270.3, speed
        assert relative.status == true.status == "A"
        assert float(relative.wind_speed) == round(speed, 1)


# Lines hild sent before the change (device seed 7, white noise on wind speed and angle),
# for (wind speed m/s, towards deg, surge m/s, heading rad) at t = 0, 1, 2, 3: bit for bit.
BEFORE = [
    (
        (0.06, 10, 0.0, 0.0),
        [
            b"$XXMWV,195.5,R,0.1,M,A*37",
            b"$XXMWV,190.0,T,0.1,M,A*31",
            b"$XXMWD,190.0,T,,M,0.1,N,0.1,M*62",
        ],
    ),
    (
        (0.1, 200, 0.0, 1.0),
        [
            b"$XXMWV,321.5,R,0.3,M,A*38",
            b"$XXMWV,322.7,T,0.1,M,A*3D",
            b"$XXMWD,020.0,T,,M,0.2,N,0.1,M*6B",
        ],
    ),
    (
        (3.0, 300, 2.0, 2.5),
        [
            b"$XXMWV,347.0,R,5.2,M,A*39",
            b"$XXMWV,336.8,T,3.0,M,A*35",
            b"$XXMWD,120.0,T,,M,5.8,N,3.0,M*67",
        ],
    ),
    (
        (12.0, 45, -1.0, 4.0),
        [
            b"$XXMWV,356.4,R,11.2,M,A*08",
            b"$XXMWV,355.8,T,12.0,M,A*00",
            b"$XXMWD,225.0,T,,M,23.3,N,12.0,M*6E",
        ],
    ),
]


def test_the_lines_of_a_wind_are_those_sent_before_noise_and_all():
    noise = {"wind_speed": NoiseSpec(white=0.3), "wind_angle": NoiseSpec(white=2.0)}
    device = build_device(config("anemometer", ["MWV", "MWD"], noise=noise), 7, ORIGIN)
    for t, ((speed, towards_deg, u, psi), expected) in enumerate(BEFORE):
        rad = math.radians(towards_deg)
        tr = truth(
            t=float(t),
            eta=(0, 0, 0, 0, 0, psi),
            nu=(u, 0, 0, 0, 0, 0),
            wind_ned=(speed * math.cos(rad), speed * math.sin(rad)),
        )
        assert [line.rstrip(b"\r\n") for line in device.sample(tr)] == expected


@pytest.mark.parametrize("speed", [0.06, 0.1, 0.26, 1.0, 7.5, 33.3, 999.9])
def test_any_wind_of_a_direction_is_encoded_as_the_encoder_always_did(speed):
    device = anemometer()
    for i in range(36):
        from_deg, heading_deg = 10.0 * i + 0.3, 7.0 * i + 0.2
        tr = truth(
            eta=(0, 0, 0, 0, 0, math.radians(heading_deg)), wind_ned=from_the(from_deg, speed)
        )
        angle = (from_deg - heading_deg) % 360.0
        assert device.sample(tr) == [
            nmea.mwv("XX", angle, "R", speed),
            nmea.mwv("XX", angle, "T", speed),
            nmea.mwd("XX", from_deg, speed),
        ]


@needs_analyzerjs
def test_nmea_2000_sends_the_wind_angle_as_not_available():
    cfg = device_config("n2k-wind", true_wind=True, height_correction=False)
    device = build_device(cfg, 0, ORIGIN)
    lines = device.sample(truth()) + device.sample(truth(t=0.1, wind_ned=from_the(270.0, 5.0)))
    wind = [m["fields"] for m in decode(lines) if m["pgn"] == 130306]
    assert [w["Reference"] for w in wind] == ["Apparent", "True (boat referenced)"] * 2
    for still in wind[:2]:  # all ones, which canboat leaves out; the speed is there: zero
        assert "Wind Angle" not in still and still["Wind Speed"] == 0
    for blowing in wind[2:]:
        assert blowing["Wind Angle"] == pytest.approx(math.radians(270.0), abs=1e-4)
        assert blowing["Wind Speed"] == 5


def test_hild_run_s_default_bench_sends_no_wind_direction_at_rest(tmp_path):
    """`hild run` with the default bench (Odin lying still, calm): what a chart plotter on its
    UDP port reads."""
    udp = UdpClient().start()
    bench = default_bench_on_free_ports(tmp_path, udp.port, free_udp_port())
    daemon = Daemon(bench, "--run-dir", str(tmp_path / "run"), tmp=tmp_path)
    try:
        time.sleep(2.5)
    finally:
        udp.close()
        daemon.stop()
    wind = [raw.strip() for _, raw in udp.lines if raw[3:6] in (b"MWV", b"MWD")]
    assert len(wind) >= 3, wind
    assert set(wind) == {
        frame("WIMWV,,R,0.0,M,A").strip(),
        frame("WIMWV,,T,0.0,M,A").strip(),
        frame("WIMWD,,T,,M,0.0,N,0.0,M").strip(),
    }
    for msg in parsed(wind):
        assert getattr(msg, "wind_angle", None) is None
        assert getattr(msg, "direction_true", None) is None
