"""Every sentence hild emits, at every value a boat (or a broken model) can give it: within 82
characters, parsed by pynmea2 with its checksum checked, and read back as the value within the
precision it is printed with.

Tolerances: a value printed with d decimals reads back within half a unit of its last digit,
0.5 * 10**-d, plus 1e-9 for the binary floats on both sides of the conversion. Angles compare
modulo 360 (359.96 prints as 000.0), times of day modulo a day.
"""

from __future__ import annotations

import inspect
import math
from datetime import UTC, date, datetime, timedelta

import numpy as np
import pynmea2
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hild.devices.catalog import load_device_type
from hild.devices.registry import COMMANDS, SENSOR, build_device, models
from hild.geodesy import Origin
from hild.model import layout as L
from hild.nmea import sentences as s
from hild.profiles.vessel import load_profile
from hild.sensors.device import DeviceConfig
from hild.sensors.truth import Truth

EPS = 1e-9
NAN = float("nan")
# Per test, not a global profile: other modules' property tests keep their own settings.
# No deadline: a first call may compile the vessel model's rotation (numba), in seconds.
prop = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Any float at all (NaN, infinities, 1e308, -0.0): what a diverging model or a fault may give.
wild = st.floats(allow_nan=True, allow_infinity=True)
lat_st = st.floats(-90.0, 90.0)
lon_st = st.floats(-180.0, 180.0)
angle_st = st.floats(-720.0, 720.0) | st.sampled_from([0.0, 359.9, 359.94, 359.95, 359.96, 360.0])
talker_st = st.sampled_from(["GP", "GN", "HE", "WI", "VW", "RC", "XX"])
# UTC from GPS time's start to the latest start a bench accepts, to the microsecond
utc_st = st.datetimes(
    datetime(1980, 1, 6), datetime(2199, 12, 31, 23, 59, 59, 999999), timezones=st.just(UTC)
)


def checked(line: bytes) -> pynmea2.NMEASentence:
    """A line as a listener takes it: framed, at most 82 characters, checksum right."""
    assert line.startswith(b"$") and line.endswith(b"\r\n"), line
    assert len(line) <= 82, (len(line), line)
    text = line.decode("ascii")
    assert "*" in text and len(text.split("*")[1].strip()) == 2  # a checksum, always
    return pynmea2.parse(text.strip(), check=True)  # raises on a wrong checksum


def near(got: float, want: float, decimals: int) -> bool:
    return abs(got - want) <= 0.5 * 10**-decimals + EPS * max(1.0, abs(want))


def near_angle(got: float, want: float, decimals: int) -> bool:
    diff = (got - want + 180.0) % 360.0 - 180.0
    return abs(diff) <= 0.5 * 10**-decimals + EPS * 1000


def seconds_of_day(t) -> float:
    return t.hour * 3600 + t.minute * 60 + t.second + t.microsecond / 1e6


def near_time(got, want: datetime, decimals: int) -> bool:
    diff = (seconds_of_day(got) - seconds_of_day(want) + 43200) % 86400 - 43200
    return abs(diff) <= 0.5 * 10**-decimals + 1e-6


def near_position(msg, lat: float, lon: float, decimals: int) -> bool:
    """ddmm.mmmmm: half a unit of the last decimal of minutes, in degrees."""
    tol = 0.5 * 10**-decimals / 60.0 + EPS
    lon_diff = (msg.longitude - lon + 180.0) % 360.0 - 180.0
    return abs(msg.latitude - lat) <= tol and abs(lon_diff) <= tol


def value(field: str) -> float:
    return float(field) if field else NAN


# --- the GNSS sentences ------------------------------------------------------------------


@prop
@given(
    utc_st,
    talker_st,
    lat_st,
    lon_st,
    st.integers(0, 8),
    st.integers(0, 99),
    st.floats(0.0, 99.9),
    st.floats(-9999.9, 99999.9),
    st.floats(-999.9, 999.9),
    st.integers(0, 6),
)
def test_gga(utc, talker, lat, lon, quality, sats, hdop, alt, sep, decimals):
    msg = checked(s.gga(talker, utc, lat, lon, quality, sats, hdop, alt, sep, decimals))
    assert near_time(msg.timestamp, utc, 2)
    if quality:
        assert near_position(msg, lat, lon, decimals)
        assert near(msg.altitude, alt, 1) and near(float(msg.geo_sep), sep, 1)
    else:  # no fix: no position
        assert msg.lat == "" and msg.altitude is None
    assert msg.gps_qual == quality and int(msg.num_sats) == sats
    assert near(float(msg.horizontal_dil), hdop, 1)


@prop
@given(utc_st, lat_st, lon_st, st.floats(0.0, 999.99), angle_st, st.booleans(), st.integers(0, 6))
@example(datetime(2026, 12, 31, 23, 59, 59, 996000, tzinfo=UTC), 0.0, 0.0, 1.0, 0.0, True, 5)
def test_rmc(utc, lat, lon, sog, cog, valid, decimals):
    msg = checked(s.rmc("GP", utc, valid, lat, lon, sog, cog, decimals=decimals))
    assert near_time(msg.timestamp, utc, 2)
    # the date is the printed time's, also when the time rounds up to midnight; RMC's year
    # has two digits (pynmea2 reads 69-99 as 19xx)
    d, when = msg.datestamp, utc + timedelta(seconds=0.005)
    assert (d.day, d.month, d.year % 100) in {(x.day, x.month, x.year % 100) for x in (utc, when)}
    if msg.timestamp.hour == 0 and utc.hour == 23:  # rounded up into the next day
        assert (d.day, d.month) == (when.day, when.month)
    if valid:
        assert msg.status == "A" and near_position(msg, lat, lon, decimals)
        assert near(msg.spd_over_grnd, sog, 2) and near_angle(msg.true_course, cog, 1)
    else:
        assert msg.status == "V" and msg.true_course is None


@prop
@given(angle_st, st.floats(0.0, 999.99))
def test_vtg(cog, sog):
    msg = checked(s.vtg("GP", cog, sog))
    assert near_angle(float(msg.true_track), cog, 1)
    assert near(float(msg.spd_over_grnd_kts), sog, 2)
    assert near(float(msg.spd_over_grnd_kmph), sog * 1.852, 2)


@prop
@given(utc_st)
@example(datetime(2026, 12, 31, 23, 59, 59, 996000, tzinfo=UTC))  # rounds into a new year
def test_zda(utc):
    msg = checked(s.zda("GP", utc))
    assert near_time(msg.timestamp, utc, 2)
    # the printed date and time are one instant, within half the time's last digit of utc
    printed = datetime.combine(
        date(int(msg.year), int(msg.month), int(msg.day)),
        msg.timestamp.replace(tzinfo=None),
        tzinfo=UTC,
    )
    assert abs((printed - utc).total_seconds()) <= 0.005 + 1e-6


@prop
@given(st.lists(st.integers(1, 99), max_size=20), wild, wild, wild, st.sampled_from([1, 2, 3]))
def test_gsa(prns, pdop, hdop, vdop, fix):
    msg = checked(s.gsa("GP", prns, pdop, hdop, vdop, fix))
    used = [getattr(msg, f"sv_id{i:02d}") for i in range(1, 13)]
    assert [int(p) for p in used if p] == prns[:12]
    for got, want in ((msg.pdop, pdop), (msg.hdop, hdop), (msg.vdop, vdop)):
        if math.isfinite(want):  # saturated at the field's two digits
            assert near(float(got), min(max(want, 0.0), 99.9), 1)


sky_st = st.tuples(st.integers(1, 99), st.integers(0, 90), st.integers(0, 359), st.integers(0, 99))


@prop
@given(st.lists(sky_st, max_size=36))
def test_gsv(sky):
    lines = s.gsv("GP", sky)
    msgs = [checked(line) for line in lines]
    assert len(msgs) == max(1, math.ceil(len(sky) / 4))
    seen = []
    for i, msg in enumerate(msgs, start=1):
        assert int(msg.msg_num) == i and int(msg.num_messages) == len(msgs)
        assert int(msg.num_sv_in_view) == len(sky)
        for k in range(1, 5):
            if getattr(msg, f"sv_prn_num_{k}"):
                fields = ("sv_prn_num", "elevation_deg", "azimuth", "snr")
                seen.append(tuple(int(getattr(msg, f"{f}_{k}")) for f in fields))
    assert seen == list(sky)


# --- heading and attitude ----------------------------------------------------------------


@prop
@given(angle_st)
def test_hdt_and_ths(heading):
    assert near_angle(float(checked(s.hdt("HE", heading)).heading), heading, 2)
    ths = checked(s.ths("HE", heading))
    assert near_angle(ths.heading, heading, 2) and ths.mode == "A"
    assert checked(s.ths("HE", None)).mode == "V"


@prop
@given(st.floats(-9999.9, 9999.9))
def test_rot(rate):
    assert near(float(checked(s.rot("HE", rate)).rate_of_turn), rate, 1)


@prop
@given(
    utc_st,
    angle_st,
    st.floats(-179.99, 179.99),
    st.floats(-90.0, 90.0),
    st.floats(-99.99, 99.99),
    st.floats(0.0, 90.0),
)
def test_pashr(utc, heading, roll, pitch, heave, sd):
    msg = checked(s.pashr(utc, heading, roll, pitch, heave, sd, sd, sd, 1, 1))
    assert near_time(msg.timestamp, utc, 3)
    assert near_angle(float(msg.true_heading), heading, 2)
    assert near_angle(float(msg.roll), roll, 2) and near_angle(float(msg.pitch), pitch, 2)
    assert near(float(msg.heave), heave, 2) and near(float(msg.roll_accuracy), sd, 3)


# --- wind and water ----------------------------------------------------------------------


@prop
@given(angle_st, st.floats(0.0, 999.9), st.sampled_from("RT"), st.booleans())
def test_mwv(angle, speed, reference, valid):
    msg = checked(s.mwv("WI", angle, reference, speed, valid))
    assert near_angle(float(msg.wind_angle), angle, 1) and near(float(msg.wind_speed), speed, 1)
    assert msg.reference == reference and msg.status == ("A" if valid else "V")


@prop
@given(angle_st, st.floats(0.0, 999.9))
def test_mwd(direction, speed):
    msg = checked(s.mwd("WI", direction, speed))
    assert near_angle(float(msg.direction_true), direction, 1)
    assert near(float(msg.wind_speed_meters), speed, 1)
    assert near(float(msg.wind_speed_knots), speed * 3600 / 1852, 1)


@prop
@given(angle_st, st.floats(-999.99, 999.99))
def test_vhw(heading, stw):
    msg = checked(s.vhw("VW", heading, stw))
    assert near_angle(float(msg.heading_true), heading, 1)
    assert near(float(msg.water_speed_knots), stw, 2)
    assert near(float(msg.water_speed_km), stw * 1.852, 2)


speed_kn_st = st.floats(-999.99, 999.99)


@prop
@given(speed_kn_st, speed_kn_st, speed_kn_st, speed_kn_st, st.booleans())
def test_vbw(wl, wt, gl, gt, ground):
    msg = checked(s.vbw("VD", wl, wt, gl if ground else None, gt if ground else None))
    assert near(float(msg.lon_water_spd), wl, 2) and near(float(msg.trans_water_spd), wt, 2)
    if ground:
        assert near(float(msg.lon_grnd_spd), gl, 2) and near(float(msg.trans_grnd_spd), gt, 2)
    assert msg.data_validity_grnd_spd == ("A" if ground else "V")


@prop
@given(
    utc_st,
    st.integers(0, 99),
    st.floats(0.0, 999.99),
    angle_st,
    st.floats(0.0, 999.9),
    angle_st,
    st.floats(0.0, 999.99),
    st.floats(-99.9, 99.9),
    st.sampled_from("NKS"),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20),
    st.sampled_from("LQT"),
)
def test_ttm(utc, number, distance, bearing, speed, course, cpa, tcpa, units, name, status):
    msg = checked(
        s.ttm("RA", number, distance, bearing, speed, course, cpa, tcpa, units, name, status, utc)
    )
    assert int(msg.target_number) == number and msg.data[0] == f"{number:02d}"
    assert near(float(msg.distance), distance, 2) and near(float(msg.dist_cpa), cpa, 2)
    assert near_angle(float(msg.bearing), bearing, 1) and near_angle(float(msg.cog), course, 1)
    assert near(float(msg.speed), speed, 1) and near(float(msg.time_cpa), tcpa, 1)
    assert (msg.brg_ref, msg.cog_unit, msg.dist_unit) == ("T", "T", units)
    assert (msg.status, msg.reference, msg.acquisition) == (status, "", "A")
    assert near_time(msg.timestamp, utc, 2)
    kept = "".join(" " if c in "$!*,\\^~" else c for c in name)[: s.TTM_NAME_CHARS].rstrip()
    assert msg.name == kept


# --- propulsion feedback -----------------------------------------------------------------


@prop
@given(st.integers(0, 9), st.floats(-9999.9, 9999.9), st.floats(-100.0, 100.0), angle_st)
def test_trd(number, rpm, pitch, azimuth):
    msg = checked(s.trd("RC", number, rpm, "R", pitch, "P", azimuth))
    assert msg.number == number and near(msg.rpm, rpm, 1) and near(msg.pitch, pitch, 1)
    assert near_angle(msg.azimuth, azimuth, 1)


@prop
@given(
    st.sampled_from("SE"),
    st.integers(0, 9),
    st.floats(-9999.9, 9999.9),
    st.floats(-100.0, 100.0),
    st.booleans(),
)
def test_rpm(source, number, speed, pitch, valid):
    msg = checked(s.rpm("RC", source, number, speed, pitch, valid))
    assert msg.source == source and int(msg.engine_no) == number
    assert near(float(msg.speed), speed, 1) and near(float(msg.pitch), pitch, 1)


@prop
@given(st.floats(-180.0, 180.0), st.none() | st.floats(-180.0, 180.0))
def test_rsa(starboard, port):
    msg = checked(s.rsa("RC", starboard, port))
    assert near(float(msg.rsa_starboard), starboard, 1) and msg.rsa_starboard_status == "A"
    if port is None:
        assert msg.rsa_port is None and msg.rsa_port_status == "V"
    else:
        assert near(float(msg.rsa_port), port, 1)


@prop
@given(st.lists(st.floats(-100.0, 100.0), min_size=1, max_size=12))
def test_xdr_groups_split_over_as_many_sentences_as_fit(values):
    groups = [("G", v, "P", f"DEFLECTOR_{i}") for i, v in enumerate(values, start=1)]
    msgs = [checked(line) for line in s.xdr_lines("RC", groups)]
    got = [m.get_transducer(i) for m in msgs for i in range(m.num_transducers)]
    assert [(t.type, t.units, t.id) for t in got] == [(g[0], g[2], g[3]) for g in groups]
    assert all(near(float(t.value), v, 1) for t, v in zip(got, values, strict=True))
    if len(values) <= 2:  # a twin-jet boat's deflectors fit one XDR
        assert checked(s.xdr("RC", groups)).num_transducers == len(values)


# --- the Heron frontseat -----------------------------------------------------------------


@prop
@given(utc_st, lat_st, lon_st, angle_st, st.floats(-720.0, 720.0), st.floats(-720.0, 720.0))
def test_cpnvg(utc, lat, lon, heading, roll, pitch):
    msg = checked(s.cpnvg(utc, lat, lon, 1, heading, roll, pitch))
    assert near_time(msg.timestamp, utc, 3) and near_time(msg.nav_timestamp, utc, 3)
    assert near_position(msg, lat, lon, 5) and msg.quality == 1
    assert (msg.altitude, msg.depth) == (0.0, 0.0)
    assert near_angle(msg.heading, heading, 1)
    assert near_angle(msg.roll, roll, 0) and near_angle(msg.pitch, pitch, 0)


rate_st = st.floats(-999.99, 999.99)
vel_st = st.floats(-99.99, 99.99)


@prop
@given(utc_st, vel_st, vel_st, vel_st, rate_st, rate_st, rate_st)
def test_cpnvr(utc, ve, vn, vd, q, p, r):
    msg = checked(s.cpnvr(utc, ve, vn, vd, q, p, r))
    assert near_time(msg.timestamp, utc, 3)
    for got, want in (
        (msg.vel_east, ve),
        (msg.vel_north, vn),
        (msg.vel_down, vd),
        (msg.pitch_rate, q),
        (msg.roll_rate, p),
        (msg.yaw_rate, r),
    ):
        assert near(got, want, 2)


@prop
@given(utc_st, angle_st, st.floats(-720.0, 720.0), st.floats(-720.0, 720.0))
def test_cprcm(utc, heading, pitch, roll):
    msg = checked(s.cprcm(utc, "0", heading, pitch, roll))
    assert near_time(msg.timestamp, utc, 3) and msg.compass_id == "0"
    assert near_angle(msg.heading, heading, 1)
    assert near_angle(msg.pitch, pitch, 1) and near_angle(msg.roll, roll, 1)


accel_st = st.floats(-999.999, 999.999)


@prop
@given(utc_st, st.tuples(rate_st, rate_st, rate_st), st.tuples(accel_st, accel_st, accel_st))
def test_cpimu(utc, rates, accel):
    msg = checked(s.cpimu(utc, rates, accel))
    assert near_time(msg.timestamp, utc, 3)
    got_rates, got_accel = (
        (msg.rate_x, msg.rate_y, msg.rate_z),
        (msg.accel_x, msg.accel_y, msg.accel_z),
    )
    assert all(near(g, w, 2) for g, w in zip(got_rates, rates, strict=True))
    assert all(near(g, w, 3) for g, w in zip(got_accel, accel, strict=True))


@prop
@given(utc_st, st.booleans(), st.floats(0.0, 100.0))
def test_cpalt_and_cprbs(utc, lights, voltage):
    alt = checked(s.cpalt(utc, lights))
    assert near_time(alt.timestamp, utc, 3) and alt.lights == int(lights)
    rbs = checked(s.cprbs(utc, voltage))
    assert near(rbs.voltage, voltage, 2) and rbs.voltage_min == rbs.voltage_max == rbs.voltage


# --- whatever the values: every builder stays framed and within 82 characters ------------

BUILDERS = {
    "gga": lambda u, v: [s.gga("GP", u, v[0], v[1], 1, 99, v[2], v[3], v[4], 6)],
    "rmc": lambda u, v: [s.rmc("GP", u, True, v[0], v[1], v[2], v[3], decimals=6)],
    "vtg": lambda u, v: [s.vtg("GP", v[0], v[1])],
    "zda": lambda u, v: [s.zda("GP", u)],
    "gsa": lambda u, v: [s.gsa("GP", list(range(1, 13)), v[0], v[1], v[2])],
    "gsv": lambda u, v: s.gsv("GP", [(99, 90, 359, 99)] * 9),
    "hdt": lambda u, v: [s.hdt("HE", v[0])],
    "ths": lambda u, v: [s.ths("HE", v[0])],
    "rot": lambda u, v: [s.rot("HE", v[0])],
    "pashr": lambda u, v: [s.pashr(u, v[0], v[1], v[2], v[3], v[4], v[5], v[6])],
    "mwv": lambda u, v: [s.mwv("WI", v[0], "R", v[1])],
    "mwd": lambda u, v: [s.mwd("WI", v[0], v[1])],
    "vhw": lambda u, v: [s.vhw("VW", v[0], v[1])],
    "vbw": lambda u, v: [s.vbw("VD", v[0], v[1], v[2], v[3])],
    "ttm": lambda u, v: [
        s.ttm("RA", 99, v[0], v[1], v[2], v[3], v[4], v[5], "K", "A NAME OF 20 LETTERS", "T", u)
    ],
    "trd": lambda u, v: [s.trd("RC", 9, v[0], "R", v[1], "P", v[2])],
    "rpm": lambda u, v: [s.rpm("RC", "E", 9, v[0], v[1], True)],
    "rsa": lambda u, v: [s.rsa("RC", v[0], v[1])],
    "xdr": lambda u, v: [s.xdr("RC", [("G", v[0], "P", "DEFLECTOR_1"), ("G", v[1], "P", "D_2")])],
    "xdr_lines": lambda u, v: s.xdr_lines("RC", [("G", x, "P", "DEFLECTOR_1") for x in v]),
    "cpnvg": lambda u, v: [s.cpnvg(u, v[0], v[1], 1, v[2], v[3], v[4])],
    "cpnvr": lambda u, v: [s.cpnvr(u, v[0], v[1], v[2], v[3], v[4], v[5])],
    "cprcm": lambda u, v: [s.cprcm(u, "0", v[0], v[1], v[2])],
    "cpimu": lambda u, v: [s.cpimu(u, (v[0], v[1], v[2]), (v[3], v[4], v[5]))],
    "cpalt": lambda u, v: [s.cpalt(u, v[0] > 0)],
    "cprbs": lambda u, v: [s.cprbs(u, v[0])],
}


def test_every_sentence_builder_is_covered():
    public = {
        name
        for name, f in inspect.getmembers(s, inspect.isfunction)
        if not name.startswith("_") and f.__module__ == s.__name__
    }
    assert public == set(BUILDERS)


@pytest.mark.parametrize("name", sorted(BUILDERS))
@prop
@given(utc=utc_st, values=st.lists(wild, min_size=7, max_size=7))
def test_any_value_gives_a_sentence_within_its_limit(name, utc, values):
    for line in BUILDERS[name](utc, values):
        checked(line)


# --- every device model: any measurement fits the epoch the serial budget counts ----------

ORIGIN = Origin(59.41, 10.48)
WORST_UTC = datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC)


def device_config(type_name: str, **settings) -> DeviceConfig:
    dtype = load_device_type(type_name)
    return DeviceConfig(
        name=type_name,
        type=type_name,
        model=dtype.model.model,
        talker=dtype.talker,
        rate_hz=dtype.rate_hz,
        baud=dtype.baud,
        sentences=dtype.model.sentences_available,
        lever_arm=(0.0, 0.0, 0.0),
        ports=(),
        settings={**dtype.settings, **settings},
    )


SENSOR_TYPES = {
    "gps": "gps",
    "heading": "heading",
    "anemometer": "anemometer",
    "speed-log": "speed-log",
    "radar": "radar",
}


# The AIS receiver speaks encapsulated sentences of its own schedule, not one epoch of a
# measurement: tests/test_ais.py checks every line of it against an independent decoder.
OWN_TESTS = {"ais", "n2k-ais", "n2k-engine"}  # (the NMEA 2000 ones: tests/test_n2k_*.py)
# The NMEA 2000 kinds' measurements are their 0183 kinds'; their lines are CAN frames (YDRAW).
N2K_TYPES = ("n2k-gnss", "n2k-compass", "n2k-wind", "n2k-speed")


def test_every_sensor_model_is_covered():
    assert set(SENSOR_TYPES) | OWN_TESTS | set(N2K_TYPES) == set(models(SENSOR))


@pytest.mark.parametrize("model", N2K_TYPES)
@prop
@given(data=st.data(), utc=utc_st, valid=st.booleans())
def test_n2k_sensor_encodes_any_measurement_as_whole_frames(model, data, utc, valid):
    from hild.n2k.lines import parse_ydraw

    device = build_device(device_config(model), 0, ORIGIN)
    m = {key: data.draw(wild, label=key) for key in device.worst_case}
    if model == "n2k-gnss":
        m["lat"], m["lon"] = data.draw(lat_st | wild), data.draw(lon_st | wild)
    device.stats.epochs = 1  # (an epoch at which every PGN is due)
    lines = device.encode(m, utc, valid)
    assert lines
    for line in lines:
        frame = parse_ydraw(line)
        assert frame is not None and len(frame.data) == 8 and line.endswith(b"\r\n"), line


@pytest.mark.parametrize("model", sorted(SENSOR_TYPES))
@prop
@given(data=st.data(), utc=utc_st, valid=st.booleans())
def test_sensor_encode_any_measurement(model, data, utc, valid):
    # every sentence the model has, at the widest position the bench allows
    # (the radar: a fused name in every TTM)
    widest = {"gps": {"position_decimals": 6}, "radar": {"names": True}}
    config = device_config(SENSOR_TYPES[model], **widest.get(model, {}))
    device = build_device(config, 0, ORIGIN)
    m = {key: data.draw(wild, label=key) for key in device.worst_case}
    if model == "gps":  # position and speed come from the geodesy and a hypot
        m["lat"], m["lon"] = data.draw(lat_st | wild), data.draw(lon_st | wild)
    lines = device.encode(m, utc, valid)
    for line in lines:
        checked(line)
    assert sum(map(len, lines)) <= device.epoch_bytes(WORST_UTC)


PROFILES = {"jet-controller": "odin", "thruster-controller": "wamv", "frontseat": "otter"}


def test_every_command_model_is_covered():
    assert set(PROFILES) == set(models(COMMANDS))


@pytest.mark.parametrize("type_name", ["jet-controller", "thruster-controller"])
@prop
@given(data=st.data(), valid=st.booleans())
def test_feedback_any_actuator_state(type_name, data, valid):
    vessel = load_profile(PROFILES[type_name])
    config = device_config(type_name)
    device = build_device(config, 0, ORIGIN, vessel)
    state = np.zeros(vessel.n_act * L.S_SIZE)
    for a in vessel.actuators:  # anywhere the actuators can be: their speed range, any angle
        lo, hi = a.speed_range
        base = a.index * L.S_SIZE
        state[base + L.S_SPEED] = data.draw(st.floats(lo, hi))
        state[base + L.S_ANGLE] = data.draw(st.floats(-math.pi, math.pi))
        state[base + L.S_DEFLECTOR] = data.draw(st.floats(-1.0, 1.0))
    lines = device.feedback(state, valid)
    for line in lines:
        checked(line)
    assert sum(map(len, lines)) <= device.epoch_bytes(WORST_UTC)


state_st = st.lists(wild, min_size=12, max_size=12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's, on overflowing states
@prop
@given(state=state_st, utc=utc_st)
def test_frontseat_any_state(state, utc):
    device = build_device(device_config("frontseat"), 0, ORIGIN, load_profile("otter"))
    eta, nu = np.array(state[:6]), np.array(state[6:])
    truth = Truth(0.0, utc, eta, nu)
    lines = device.sample(truth)  # epoch 0: every sentence
    assert device.summary()["sentences_failed"] == {}
    assert len(lines) == len(device.config.sentences)
    for line in lines:
        checked(line)
    assert sum(map(len, lines)) <= device.epoch_bytes(WORST_UTC)


def test_a_boat_rolled_and_pitched_bow_down_fits_cpnvg():
    # the line: roll and pitch both negative made CPNVG 83 characters
    device = build_device(device_config("frontseat"), 0, ORIGIN, load_profile("otter"))
    utc = datetime(2026, 6, 1, 19, 48, 19, 200000, tzinfo=UTC)
    eta = np.array([0.0, 0.0, 0.0, math.radians(-0.2), math.radians(-0.1), math.radians(354.3)])
    truth = Truth(0.0, utc, eta, np.zeros(6))
    lines = device.navigation(truth, list(device.config.sentences))
    assert sorted(checked(line).sentence_type for line in lines) == [
        "ALT",
        "GGA",
        "IMU",
        "NVG",
        "NVR",
        "RBS",
        "RCM",
        "RMC",
    ]
