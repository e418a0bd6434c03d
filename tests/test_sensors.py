"""Sensor models against the truth they sample: lever arms, apparent wind, noise, faults."""

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pynmea2
import pytest

from hild.devices.registry import build_device
from hild.geodesy import Origin
from hild.nmea import extra_types  # noqa: F401
from hild.sensors.device import DeviceConfig
from hild.sensors.faults import FaultSpec
from hild.sensors.noise import NoiseSpec, QuantityNoise
from hild.sensors.truth import Truth

ORIGIN = Origin(59.41, 10.48)
UTC0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
KN = 3600 / 1852


def config(model, sentences, **kw):
    settings = {
        "gps": dict(
            fix_quality=1,
            satellites=10,
            hdop=0.9,
            pdop=1.6,
            vdop=1.3,
            geoid_separation=0.0,
            position_decimals=7,
        ),
        "heading": dict(accuracy_deg=0.05),
        "anemometer": dict(true_wind=True, height_correction=False),
        "speed-log": dict(ground_speed=True, heading=False),
    }[model]
    base = dict(
        name=model,
        type=model,
        model=model,
        talker="XX",
        rate_hz=1.0,
        baud=4800,
        sentences=tuple(sentences),
        lever_arm=(0.0, 0.0, 0.0),
        ports=(),
        settings=settings,
    )
    base.update(kw)
    return DeviceConfig(**base)


def truth(t=0.0, eta=(0, 0, 0, 0, 0, 0), nu=(0, 0, 0, 0, 0, 0), **kw):
    return Truth(t, UTC0 + timedelta(seconds=t), np.array(eta, float), np.array(nu, float), **kw)


def by_type(device, tr):
    out = {}
    for line in device.sample(tr):
        msg = pynmea2.parse(line.decode().strip(), check=True)
        out.setdefault(msg.sentence_type if hasattr(msg, "sentence_type") else "PASHR", []).append(
            msg
        )
    return out


def test_gps_reports_the_antenna_through_the_geodesy():
    # Heading east, antenna 2 m forward and 1 m up: it sits 2 m east of the origin.
    gps = build_device(
        config("gps", ["GGA", "RMC", "VTG", "HDT"], lever_arm=(2.0, 0.0, -1.0)), 0, ORIGIN
    )
    tr = truth(eta=(100.0, -50.0, 0, 0, 0, math.pi / 2), nu=(3.0, 0, 0, 0, 0, 0.1))
    msgs = by_type(gps, tr)
    lat, lon, _ = ORIGIN.to_geodetic(100.0, -48.0)
    assert msgs["GGA"][0].latitude == pytest.approx(lat, abs=1e-8)
    assert msgs["GGA"][0].longitude == pytest.approx(lon, abs=1e-8)
    assert float(msgs["GGA"][0].altitude) == 1.0
    # Over ground the antenna moves at u east plus r x (2 m forward) = 0.2 m/s to the south.
    vn, ve = -0.2, 3.0
    assert msgs["RMC"][0].spd_over_grnd == pytest.approx(math.hypot(vn, ve) * KN, abs=0.006)
    assert msgs["RMC"][0].true_course == pytest.approx(math.degrees(math.atan2(ve, vn)), abs=0.06)
    assert float(msgs["HDT"][0].heading) == 90.0


def test_gps_epoch_is_back_to_back_in_the_configured_order():
    gps = build_device(config("gps", ["ZDA", "GGA", "RMC", "GSV"]), 0, ORIGIN)
    kinds = [line[3:6] for line in gps.sample(truth())]
    assert kinds[:3] == [b"ZDA", b"GGA", b"RMC"] and set(kinds[3:]) == {b"GSV"}


def test_apparent_wind_from_motion_and_true_wind():
    wind = build_device(config("anemometer", ["MWV", "MWD"]), 0, ORIGIN)
    # Still air, vessel heading north at 5 m/s: apparent wind 5 m/s from dead ahead.
    m = by_type(wind, truth(nu=(5.0, 0, 0, 0, 0, 0)))["MWV"]
    assert float(m[0].wind_angle) in (0.0, 360.0) and float(m[0].wind_speed) == 5.0
    assert m[0].reference == "R" and float(m[1].wind_speed) == 0.0
    # Stationary, heading north, 10 m/s wind from the west (air moving east): from port, 270.
    tr = truth(wind_ned=(0.0, 10.0))
    m = by_type(wind, tr)
    assert float(m["MWV"][0].wind_angle) == 270.0 and float(m["MWV"][0].wind_speed) == 10.0
    assert float(m["MWD"][0].direction_true) == 270.0
    # Heading east into a 4 m/s easterly... air moving west at 4, vessel east at 3: 7 m/s ahead.
    tr = truth(eta=(0, 0, 0, 0, 0, math.pi / 2), nu=(3.0, 0, 0, 0, 0, 0), wind_ned=(0.0, -4.0))
    m = by_type(wind, tr)["MWV"]
    assert float(m[0].wind_angle) in (0.0, 360.0) and float(m[0].wind_speed) == 7.0
    assert float(m[1].wind_angle) in (0.0, 360.0) and float(m[1].wind_speed) == 4.0


def test_apparent_wind_follows_thesis_2_68_to_2_71():
    # Arbitrary state; MWV angle is -gamma_rw and speed V_rw of thesis eqs 2.68-2.71.
    wind = build_device(config("anemometer", ["MWV"]), 0, ORIGIN)
    psi, u, v = 0.7, 2.0, -0.5
    V_w, beta_w = 6.0, math.radians(200.0)  # speed and the direction it blows towards
    tr = truth(
        eta=(0, 0, 0, 0, 0, psi),
        nu=(u, v, 0, 0, 0, 0),
        wind_ned=(V_w * math.cos(beta_w), V_w * math.sin(beta_w)),
    )
    u_rw = u - V_w * math.cos(beta_w - psi)
    v_rw = v - V_w * math.sin(beta_w - psi)
    gamma_rw = -math.atan2(v_rw, u_rw)
    m = by_type(wind, tr)["MWV"][0]
    assert float(m.wind_angle) == pytest.approx(math.degrees(-gamma_rw) % 360, abs=0.051)
    assert float(m.wind_speed) == pytest.approx(math.hypot(u_rw, v_rw), abs=0.051)


def test_yaw_rate_moves_a_masthead_sensor():
    # Turning at 0.5 rad/s with the sensor 2 m aft: the sensor moves 1 m/s to port,
    # so the air arrives from port at 1 m/s.
    wind = build_device(config("anemometer", ["MWV"], lever_arm=(-2.0, 0.0, 0.0)), 0, ORIGIN)
    m = by_type(wind, truth(nu=(0, 0, 0, 0, 0, 0.5)))["MWV"][0]
    assert float(m.wind_angle) == 270.0 and float(m.wind_speed) == 1.0


def test_speed_log_with_current():
    # Heading east at 2 m/s through the water, current 0.5 m/s towards east.
    log = build_device(config("speed-log", ["VHW", "VBW"]), 0, ORIGIN)
    tr = truth(eta=(0, 0, 0, 0, 0, math.pi / 2), nu=(2.5, 0, 0, 0, 0, 0), current_ned=(0.0, 0.5))
    m = by_type(log, tr)
    assert float(m["VHW"][0].water_speed_knots) == pytest.approx(2.0 * KN, abs=0.006)
    vbw = m["VBW"][0]
    assert float(vbw.lon_grnd_spd) > float(vbw.lon_water_spd)
    assert float(vbw.lon_grnd_spd) == pytest.approx(2.5 * KN, abs=0.006)


def test_heading_attitude_and_rate_of_turn():
    hdg = build_device(config("heading", ["HDT", "THS", "ROT", "PASHR"]), 0, ORIGIN)
    tr = truth(
        eta=(0, 0, -0.2, math.radians(5), math.radians(-2), math.radians(300)),
        nu=(0, 0, 0, 0, 0, math.radians(3)),
    )
    m = by_type(hdg, tr)
    assert float(m["HDT"][0].heading) == 300.0 and m["THS"][0].heading == 300.0
    # psi_dot = r cos(phi)/cos(theta) (thesis eq. 2.4) in degrees per minute.
    expect = 180.0 * math.cos(math.radians(5)) / math.cos(math.radians(-2))
    assert float(m["ROT"][0].rate_of_turn) == pytest.approx(expect, abs=0.051)
    ashr = m["PASHR"][0]
    assert float(ashr.roll) == 5.0 and float(ashr.pitch) == -2.0 and float(ashr.heave) == 0.2


def test_white_noise_bias_and_quantization_statistics():
    n = 20000
    noise = QuantityNoise(NoiseSpec(white=0.5, bias=1.0), np.random.default_rng(1))
    samples = np.array([noise.apply(10.0, float(i)) for i in range(n)])
    # Standard error of the mean 0.5/sqrt(n) = 0.0035; of the std about 0.5/sqrt(2n) = 0.0025.
    assert samples.mean() == pytest.approx(11.0, abs=5 * 0.0035)
    assert samples.std() == pytest.approx(0.5, abs=5 * 0.0025)
    q = QuantityNoise(NoiseSpec(quantization=0.25), np.random.default_rng(1))
    assert q.apply(1.13, 0.0) == 1.25 and q.apply(-0.13, 1.0) == -0.25


def test_random_walk_variance_grows_linearly():
    # After T seconds the drift's variance is sigma^2 T; 2000 walks give its sample
    # variance within 5 sqrt(2/2000) = 16 % (chi-square standard error).
    sigma, T, runs = 0.2, 100.0, 2000
    ends = []
    for seed in range(runs):
        noise = QuantityNoise(NoiseSpec(random_walk=sigma), np.random.default_rng(seed))
        for t in np.arange(0.0, T + 0.5, 1.0):
            value = noise.apply(0.0, t)
        ends.append(value)
    assert np.var(ends) == pytest.approx(sigma**2 * T, rel=0.16)


def test_faults():
    faults = (
        FaultSpec("dropout", 10, 20),
        FaultSpec("freeze", 30, 40),
        FaultSpec("invalid", 50, 60),
        FaultSpec("bias_jump", 70, quantity="heading", value=5),
    )
    gps = build_device(config("gps", ["GGA", "RMC", "HDT"], faults=faults), 0, ORIGIN)
    assert gps.sample(truth(t=15.0)) == []
    frozen = by_type(gps, truth(t=30.0, eta=(0, 0, 0, 0, 0, 0.1)))
    later = by_type(gps, truth(t=35.0, eta=(500, 0, 0, 0, 0, 0.5)))
    assert later["GGA"][0].latitude == frozen["GGA"][0].latitude
    assert later["GGA"][0].timestamp != frozen["GGA"][0].timestamp  # time goes on
    invalid = by_type(gps, truth(t=55.0))
    assert invalid["GGA"][0].gps_qual == 0 and invalid["RMC"][0].status == "V"
    assert "HDT" not in invalid
    jumped = by_type(gps, truth(t=75.0))
    assert float(jumped["HDT"][0].heading) == 5.0


def test_same_seed_same_noise_and_streams_are_independent_of_other_devices():
    noisy = config("gps", ["GGA"], noise={"position": NoiseSpec(white=2.0)})
    a = build_device(noisy, 7, ORIGIN)
    b = build_device(noisy, 7, ORIGIN)
    other = build_device(replace(noisy, name="gps2"), 7, ORIGIN)
    run_a = [a.sample(truth(t=float(i))) for i in range(5)]
    other.sample(truth())  # another device drawing must not disturb these streams
    run_b = [b.sample(truth(t=float(i))) for i in range(5)]
    assert run_a == run_b
    assert [other.sample(truth(t=float(i))) for i in range(1, 5)] != run_a[1:]
    assert run_a != [build_device(noisy, 8, ORIGIN).sample(truth(t=float(i))) for i in range(5)]


def test_anemometer_reports_the_wind_at_its_height():
    # Thesis eq. 2.43 with kappa = 0.0026: U(z)/U10 = 1 + 2.5 sqrt(kappa) ln(z/10); at the
    # 10 m reference the wind is as given, 2.5 m up it is lower, and lower still at 1 m.
    def measured(z_position):
        settings = dict(true_wind=True, height_correction=True)
        cfg = config("anemometer", ["MWV"], settings=settings, lever_arm=(0.0, 0.0, z_position))
        device = build_device(cfg, 0, ORIGIN)
        return float(by_type(device, truth(wind_ned=(0.0, 10.0)))["MWV"][1].wind_speed)

    assert measured(-10.0) == pytest.approx(10.0, abs=0.05)
    expected = 10.0 * (1.0 + 2.5 * math.sqrt(0.0026) * math.log(2.5 / 10.0))
    assert measured(-2.5) == pytest.approx(expected, abs=0.05)  # MWV carries one decimal
    assert measured(-1.0) < measured(-2.5) < 10.0


def test_gps_course_at_rest_is_empty_as_a_u_blox_receiver_or_held():
    # u-blox integration manuals: below 0.1 m/s the course is frozen and, by default, not
    # printed in RMC and VTG; configured to, the receiver prints the frozen course
    sentences = ["RMC", "VTG"]
    moving = truth(eta=(0, 0, 0, 0, 0, math.radians(30.0)), nu=(2.0, 0, 0, 0, 0, 0))
    for at_rest, expected in (("empty", None), ("hold", 30.0)):
        base = config("gps", sentences)
        gps = build_device(
            replace(base, settings={**base.settings, "cog_at_rest": at_rest}), 0, ORIGIN
        )
        never_moved = by_type(gps, truth())
        assert never_moved["RMC"][0].true_course is None  # no course of motion to hold yet
        assert by_type(gps, moving)["RMC"][0].true_course == pytest.approx(30.0)
        # drifting at 0.09 m/s (below u-blox's 0.1 m/s) with the bow swung round to 200 deg
        drift = truth(t=1.0, eta=(0, 0, 0, 0, 0, math.radians(200.0)), nu=(0.09, 0, 0, 0, 0, 0))
        msgs = by_type(gps, drift)
        rmc, vtg = msgs["RMC"][0], msgs["VTG"][0]
        if expected is None:
            assert rmc.true_course is None and vtg.true_track is None
        else:
            assert rmc.true_course == pytest.approx(expected)
            assert float(vtg.true_track) == pytest.approx(expected)
        assert rmc.spd_over_grnd == pytest.approx(0.09 * KN, abs=0.006)  # the speed still is


def test_a_gps_sentence_too_long_costs_only_itself():
    # 14 decimals of minutes cannot fit GGA or RMC in 82 characters (the bench refuses more
    # than 6; a device built by hand can still ask for it)
    base = config("gps", ["GGA", "ZDA", "RMC", "HDT"])
    gps = build_device(
        replace(base, settings={**base.settings, "position_decimals": 14}), 0, ORIGIN
    )
    for t in (0.0, 1.0):
        kinds = [line[3:6] for line in gps.sample(truth(t=t))]
        assert kinds == [b"ZDA", b"HDT"]
    summary = gps.summary()
    assert summary["sentences_failed"] == {"GGA": 2, "RMC": 2}
    assert summary["sentences"] == 4 and summary["epochs"] == 2
