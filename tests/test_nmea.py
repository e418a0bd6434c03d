"""Every sentence hild emits parses back with pynmea2, with the fields it was given."""

from datetime import UTC, datetime

import pynmea2
import pytest

from hild.nmea import SentenceTooLongError, checksum, frame
from hild.nmea import sentences as s
from hild.nmea.encode import angle360, fixed, latitude, longitude, utc_time

UTC_NOW = datetime(2026, 6, 1, 12, 34, 56, 789000, tzinfo=UTC)


def parse(line: bytes) -> pynmea2.NMEASentence:
    assert line.endswith(b"\r\n")
    assert len(line) <= 82
    return pynmea2.parse(line.decode("ascii").strip(), check=True)


def test_checksum_of_a_published_example():
    # The GGA example of the NMEA 0183 literature: checksum 47.
    body = "GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"
    assert checksum(body) == 0x47
    assert frame(body).endswith(b"*47\r\n")


def test_frame_refuses_more_than_82_characters():
    with pytest.raises(SentenceTooLongError):
        frame("GPTXT," + "x" * 80)


@pytest.mark.parametrize(
    ("deg", "text", "hemisphere"),
    [
        (59.41, "5924.60000", "N"),
        (-0.5, "0030.00000", "S"),
        (59.9999999999, "6000.00000", "N"),
        (12.0 + 59.999999 / 60, "1300.00000", "N"),
    ],
)
def test_latitude_field(deg, text, hemisphere):
    assert latitude(deg) == (text, hemisphere)


def test_longitude_field_has_three_degree_digits():
    assert longitude(10.48) == ("01028.80000", "E")
    assert longitude(-179.5) == ("17930.00000", "W")


def test_number_fields():
    assert fixed(-0.001, 2) == "0.00"
    assert fixed(float("nan"), 2) == ""
    assert angle360(359.96, 1) == "000.0"
    assert angle360(-90.0, 1) == "270.0"
    assert angle360(84.44, 1) == "084.4"
    assert utc_time(datetime(2026, 1, 1, 23, 59, 59, 999000)) == "000000.00"
    assert utc_time(UTC_NOW) == "123456.79"


def test_gga_parses_back():
    msg = parse(s.gga("GP", UTC_NOW, 59.41, 10.48, 1, 10, 0.9, 1.5, 39.2))
    assert msg.sentence_type == "GGA"
    assert msg.latitude == pytest.approx(59.41, abs=1e-7)
    assert msg.longitude == pytest.approx(10.48, abs=1e-7)
    assert msg.gps_qual == 1 and msg.num_sats == "10"
    assert float(msg.altitude) == 1.5 and float(msg.geo_sep) == 39.2
    assert msg.timestamp.isoformat() == "12:34:56.790000+00:00"


def test_gga_without_fix():
    msg = parse(s.gga("GP", UTC_NOW, None, None, 0, 0, 99.9, 0.0, 0.0))
    assert msg.gps_qual == 0 and msg.lat == ""


def test_rmc_parses_back():
    msg = parse(s.rmc("GN", UTC_NOW, True, -33.5, -70.25, 5.234, 84.44))
    assert msg.status == "A"
    assert msg.latitude == pytest.approx(-33.5) and msg.longitude == pytest.approx(-70.25)
    assert msg.spd_over_grnd == pytest.approx(5.23) and msg.true_course == pytest.approx(84.4)
    assert msg.datestamp.isoformat() == "2026-06-01"
    assert msg.mode_indicator == "A"
    invalid = parse(s.rmc("GN", UTC_NOW, False, None, None, None, None))
    assert invalid.status == "V"


def test_vtg_zda_gsa_gsv_parse_back():
    vtg = parse(s.vtg("GP", 271.25, 3.0))
    assert vtg.true_track == pytest.approx(271.2) and vtg.spd_over_grnd_kts == pytest.approx(3.0)
    assert vtg.spd_over_grnd_kmph == pytest.approx(5.56)
    zda = parse(s.zda("GP", UTC_NOW))
    assert (zda.day, zda.month, zda.year) == (1, 6, 2026)
    gsa = parse(s.gsa("GP", [3, 7, 12], 1.6, 0.9, 1.3))
    assert gsa.sv_id01 == "03" and float(gsa.hdop) == 0.9
    sats = [(p, 10 + p, 20 * p, 40) for p in range(1, 10)]
    gsv = [parse(line) for line in s.gsv("GP", sats)]
    assert [g.msg_num for g in gsv] == ["1", "2", "3"] and gsv[0].num_sv_in_view == "09"
    assert gsv[2].sv_prn_num_1 == "09"


def test_heading_sentences_parse_back():
    assert float(parse(s.hdt("HE", 359.999)).heading) == 0.0
    assert float(parse(s.hdt("HE", 12.346)).heading) == 12.35
    ths = parse(s.ths("HE", 45.0))
    assert ths.heading == 45.0 and ths.mode == "A"
    assert parse(s.ths("HE", None)).mode == "V"
    rot = parse(s.rot("HE", -123.45))
    assert float(rot.rate_of_turn) == -123.5 and rot.status == "A"
    ashr = parse(s.pashr(UTC_NOW, 45.0, -1.25, 2.5, 0.1, 0.05, 0.05, 0.1))
    assert float(ashr.roll) == -1.25 and float(ashr.pitch) == 2.5
    assert float(ashr.true_heading) == 45.0 and float(ashr.heave) == 0.1


def test_wind_and_speed_sentences_parse_back():
    mwv = parse(s.mwv("WI", 300.04, "R", 7.25))
    assert float(mwv.wind_angle) == 300.0 and mwv.reference == "R"
    assert float(mwv.wind_speed) == 7.2 and mwv.wind_speed_units == "M"
    mwd = parse(s.mwd("WI", 270.0, 10.0))
    assert float(mwd.direction_true) == 270.0 and float(mwd.wind_speed_meters) == 10.0
    assert float(mwd.wind_speed_knots) == pytest.approx(19.4)
    vhw = parse(s.vhw("VW", None, 5.5))
    assert float(vhw.water_speed_knots) == 5.5 and float(vhw.water_speed_km) == pytest.approx(10.19)
    vbw = parse(s.vbw("VW", 5.5, -0.25, 5.75, 0.1))
    assert float(vbw.lon_water_spd) == 5.5 and float(vbw.trans_water_spd) == -0.25
    assert vbw.data_validity_water_spd == "A" and vbw.data_validity_grnd_spd == "A"
