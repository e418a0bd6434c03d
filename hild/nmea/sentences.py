"""Builders for the sentences hild's devices emit: one function per sentence, edge units.

Each takes the talker ID and values in the units the sentence carries (degrees,
knots) and returns the framed bytes. ``None`` for a value leaves its field empty,
as receivers do when they have no data.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from hild.nmea.encode import (
    MAX_SENTENCE_CHARS,
    angle180,
    angle360,
    bounded,
    fixed,
    frame,
    latitude,
    longitude,
    rounded_time,
    signed,
    utc_date,
    utc_time,
)
from hild.units import KMH_PER_KNOT, KNOTS_PER_MS

# The widths speeds and rates are printed with: beyond them a value saturates (a diverging
# model, a fault's bias), so that every sentence stays within its 82 characters.
SPEED_MAX_KN = 999.99  # over ground or through the water (RMC, VTG, VHW, VBW)
WIND_MAX_MS = 999.9  # MWV, MWD
ROT_MAX_DEG_MIN = 9999.9  # ROT: 167 deg/s


def _clamp(value: float, lo: float, hi: float) -> float:
    return min(max(value, lo), hi)


def _speed_kn(value: float | None, lo: float = -SPEED_MAX_KN) -> float | None:
    return None if value is None else _clamp(value, lo, SPEED_MAX_KN)


def _opt(value: float | None, decimals: int) -> str:
    return "" if value is None else fixed(value, decimals)


def _course(value: float | None, decimals: int = 1) -> str:
    return "" if value is None else angle360(value, decimals)


def gga(
    talker: str,
    utc: datetime,
    lat_deg: float | None,
    lon_deg: float | None,
    quality: int,
    satellites: int,
    hdop: float,
    altitude: float,
    geoid_separation: float,
    decimals: int = 5,
) -> bytes:
    """GGA, the fix: time, position, quality, satellites, HDOP, altitude above MSL."""
    if quality == 0 or lat_deg is None or lon_deg is None:
        pos = ",,,"
        alt = ",M,,M"
    else:
        lat, ns = latitude(lat_deg, decimals)
        lon, ew = longitude(lon_deg, decimals)
        pos = f"{lat},{ns},{lon},{ew}"
        # the widths receivers print: altitude -9999.9..99999.9 m, separation +-999.9 m
        alt = (
            f"{fixed(_clamp(altitude, -9999.9, 99999.9), 1)},M,"
            f"{fixed(_clamp(geoid_separation, -999.9, 999.9), 1)},M"
        )
    hdop_text = fixed(_clamp(hdop, 0.0, 99.9), 1)
    sats = min(max(int(satellites), 0), 99)
    return frame(f"{talker}GGA,{utc_time(utc)},{pos},{quality},{sats:02d},{hdop_text},{alt},,")


def rmc(
    talker: str,
    utc: datetime,
    valid: bool,
    lat_deg: float | None,
    lon_deg: float | None,
    sog_kn: float | None,
    cog_deg: float | None,
    mode: str = "A",
    decimals: int = 5,
) -> bytes:
    """RMC, the recommended minimum: time, status, position, SOG, COG, date, mode (0183 v2.3)."""
    sog_kn = _speed_kn(sog_kn, 0.0)  # a speed over ground is never negative
    if not valid or lat_deg is None or lon_deg is None:
        pos, status, mode = ",,,", "V", "N"
        sog_kn = cog_deg = None
    else:
        lat, ns = latitude(lat_deg, decimals)
        lon, ew = longitude(lon_deg, decimals)
        pos, status = f"{lat},{ns},{lon},{ew}", "A"
    utc = rounded_time(utc)  # the date of the instant the time says
    return frame(
        f"{talker}RMC,{utc_time(utc)},{status},{pos},{_opt(sog_kn, 2)},{_course(cog_deg)},"
        f"{utc_date(utc)},,,{mode}"
    )


def vtg(talker: str, cog_deg: float | None, sog_kn: float | None, mode: str = "A") -> bytes:
    """VTG, course and speed over ground (true course; no magnetic variation modelled)."""
    sog_kn = _speed_kn(sog_kn, 0.0)
    kmh = None if sog_kn is None else sog_kn * KMH_PER_KNOT
    if sog_kn is None:
        mode = "N"
    return frame(f"{talker}VTG,{_course(cog_deg)},T,,M,{_opt(sog_kn, 2)},N,{_opt(kmh, 2)},K,{mode}")


def zda(talker: str, utc: datetime) -> bytes:
    """ZDA, UTC date and time (local zone 00:00)."""
    utc = rounded_time(utc)  # the date of the instant the time says
    return frame(f"{talker}ZDA,{utc_time(utc)},{utc.day:02d},{utc.month:02d},{utc.year:04d},00,00")


def gsa(
    talker: str, prns: Sequence[int], pdop: float, hdop: float, vdop: float, fix: int = 3
) -> bytes:
    """GSA, DOP and the satellites used (up to 12), automatic 2D/3D mode."""
    slots = [f"{p:02d}" for p in list(prns)[:12]] + [""] * max(0, 12 - len(prns))
    dops = ",".join(fixed(_clamp(d, 0.0, 99.9), 1) for d in (pdop, hdop, vdop))  # two digits
    return frame(f"{talker}GSA,A,{fix},{','.join(slots)},{dops}")


def gsv(talker: str, satellites: Sequence[tuple[int, int, int, int]]) -> list[bytes]:
    """GSV, satellites in view: (PRN, elevation_deg, azimuth_deg, SNR_dB) four per sentence."""
    groups = [satellites[i : i + 4] for i in range(0, len(satellites), 4)] or [[]]
    out = []
    for index, group in enumerate(groups, start=1):
        sats = "".join(f",{p:02d},{e:02d},{a:03d},{s:02d}" for p, e, a, s in group)
        out.append(frame(f"{talker}GSV,{len(groups)},{index},{len(satellites):02d}{sats}"))
    return out


def hdt(talker: str, heading_deg: float) -> bytes:
    """HDT, true heading."""
    return frame(f"{talker}HDT,{angle360(heading_deg, 2)},T")


def ths(talker: str, heading_deg: float | None, mode: str = "A") -> bytes:
    """THS, true heading and status (A autonomous, E estimated, S simulator, V invalid)."""
    if heading_deg is None:
        return frame(f"{talker}THS,,V")
    return frame(f"{talker}THS,{angle360(heading_deg, 2)},{mode}")


def rot(talker: str, rate_deg_per_min: float | None) -> bytes:
    """ROT, rate of turn in degrees per minute, negative to port."""
    if rate_deg_per_min is None:
        return frame(f"{talker}ROT,,V")
    return frame(f"{talker}ROT,{bounded(rate_deg_per_min, ROT_MAX_DEG_MIN, 1)},A")


def pashr(
    utc: datetime,
    heading_deg: float,
    roll_deg: float,
    pitch_deg: float,
    heave: float,
    roll_sd_deg: float,
    pitch_sd_deg: float,
    heading_sd_deg: float,
    gnss_quality: int = 1,
    imu_status: int = 1,
) -> bytes:
    """PASHR (RT300/TSS attitude, emitted by POS MV, SPAN and many MRUs): heading, roll, pitch.

    Roll and pitch wrap into [-180, 180), heave saturates at +-99.99 m and the standard
    deviations at 99.999 deg: the widths that keep the sentence within 82 characters."""
    sds = ",".join(
        fixed(_clamp(sd, 0.0, 99.999), 3) for sd in (roll_sd_deg, pitch_sd_deg, heading_sd_deg)
    )
    return frame(
        f"PASHR,{utc_time(utc, 3)},{angle360(heading_deg, 2)},T,{_signed180(roll_deg)},"
        f"{_signed180(pitch_deg)},{signed(_clamp(heave, -99.99, 99.99), 2)},{sds},"
        f"{gnss_quality},{imu_status}"
    )


def _signed180(value_deg: float) -> str:
    text = angle180(value_deg, 2)
    return text if not text or text.startswith("-") else "+" + text


def mwv(
    talker: str, angle_deg: float, reference: str, speed_ms: float, valid: bool = True
) -> bytes:
    """MWV, wind angle from the bow (clockwise) and speed in m/s; reference R relative, T true."""
    speed_ms = _clamp(speed_ms, 0.0, WIND_MAX_MS)  # a speed, never negative
    return frame(
        f"{talker}MWV,{angle360(angle_deg, 1)},{reference},{fixed(speed_ms, 1)},M,"
        f"{'A' if valid else 'V'}"
    )


def mwd(talker: str, from_true_deg: float, speed_ms: float) -> bytes:
    """MWD, true wind direction (from, relative to true north) and speed in knots and m/s."""
    speed_ms = _clamp(speed_ms, 0.0, WIND_MAX_MS)
    speed_kn = speed_ms * KNOTS_PER_MS
    return frame(
        f"{talker}MWD,{angle360(from_true_deg, 1)},T,,M,{fixed(speed_kn, 1)},N,"
        f"{fixed(speed_ms, 1)},M"
    )


def vhw(talker: str, heading_deg: float | None, stw_kn: float | None) -> bytes:
    """VHW, water speed and heading (true heading when the log has one; empty when invalid)."""
    stw_kn = _speed_kn(stw_kn)
    kmh = None if stw_kn is None else stw_kn * KMH_PER_KNOT
    return frame(f"{talker}VHW,{_course(heading_deg)},T,,M,{_opt(stw_kn, 2)},N,{_opt(kmh, 2)},K")


def vbw(
    talker: str,
    water_long_kn: float,
    water_trans_kn: float,
    ground_long_kn: float | None,
    ground_trans_kn: float | None,
    water_valid: bool = True,
) -> bytes:
    """VBW, dual-ground/water speed: longitudinal (+ ahead) and transverse (+ starboard)."""
    if ground_long_kn is None or ground_trans_kn is None:
        ground = ",,V"
    else:
        ground = (
            f"{bounded(ground_long_kn, SPEED_MAX_KN, 2)},"
            f"{bounded(ground_trans_kn, SPEED_MAX_KN, 2)},A"
        )
    water = (
        f"{bounded(water_long_kn, SPEED_MAX_KN, 2)},{bounded(water_trans_kn, SPEED_MAX_KN, 2)},A"
        if water_valid
        else ",,V"
    )
    return frame(f"{talker}VBW,{water},{ground}")


# --- radar (ARPA) tracked targets ---------------------------------------------------------
# TTM's widths: distances (range, CPA) up to 999.99 of their unit (100 nm is 185.2 km), target
# speeds up to 999.9, TCPA within +-99.9 min (an ARPA's display of it saturates there too).
TTM_DISTANCE_MAX = 999.99
TTM_SPEED_MAX = 999.9
TTM_TCPA_MAX_MIN = 99.9
TTM_UNITS = ("N", "K", "S")  # nautical miles and knots, km and km/h, statute miles and mph
TTM_STATUSES = ("L", "Q", "T")  # lost, acquiring (query), tracking
# A name's room: 82 characters less the widest line without one (every field at its widest,
# talker and target number two characters; tests/test_radar.py checks the sum).
TTM_NAME_CHARS = 8
# Characters NMEA 0183 reserves (framing, field separator, checksum, tag blocks, escapes):
# a name never carries them.
_RESERVED = set("$!*,\\^~\r\n")


def _ttm_name(name: str) -> str:
    text = "".join(c if " " <= c <= "~" and c not in _RESERVED else " " for c in name)
    return text[:TTM_NAME_CHARS].rstrip()


def ttm(
    talker: str,
    number: int,
    distance: float | None,
    bearing_deg: float | None,
    speed: float | None,
    course_deg: float | None,
    cpa: float | None,
    tcpa_min: float | None,
    units: str = "N",
    name: str = "",
    status: str = "T",
    utc: datetime | None = None,
    acquisition: str = "A",
) -> bytes:
    """TTM, tracked target message (NMEA 0183 v4.10): target number 00-99, distance and true
    bearing from the own ship, the target's true course and speed, the distance and time of
    the closest point of approach (TCPA in minutes, negative once passed), the ``units`` of
    distances and speeds (N: nm and kn, K: km and km/h, S: statute miles and mph), the
    target's name (at most ``TTM_NAME_CHARS`` characters, reserved ones as blanks), its
    status (L lost, Q in acquisition, T tracking), no reference target, the UTC of the data
    (empty without one) and how it was acquired (A automatic, M manual, R reported).

    Distances and speeds saturate at their widths, TCPA at +-99.9 min; ``None`` empties."""
    number = min(max(int(number), 0), 99)

    def dist(value: float | None) -> str:
        return "" if value is None else bounded(max(value, 0.0), TTM_DISTANCE_MAX, 2)

    spd = "" if speed is None else bounded(max(speed, 0.0), TTM_SPEED_MAX, 1)
    tcpa = "" if tcpa_min is None else bounded(tcpa_min, TTM_TCPA_MAX_MIN, 1)
    stamp = "" if utc is None else utc_time(utc, 2)
    return frame(
        f"{talker}TTM,{number:02d},{dist(distance)},{_course(bearing_deg)},T,{spd},"
        f"{_course(course_deg)},T,{dist(cpa)},{tcpa},{units},{_ttm_name(name)},{status},,"
        f"{stamp},{acquisition}"
    )


# --- propulsion feedback (IEC 61162-1; layouts in shared/reference/protocols.md) ---------


def trd(
    talker: str,
    number: int,
    rpm: float | None,
    rpm_mode: str,
    pitch: float | None,
    pitch_mode: str,
    azimuth_deg: float | None,
) -> bytes:
    """TRD, thruster response: RPM (mode R rev/min, P per cent, V invalid), pitch (P per cent,
    D degrees, V invalid), azimuth 0-360 (direction of thrust; empty when it has none)."""
    return frame(
        f"{talker}TRD,{number},{_opt(rpm, 1)},{rpm_mode},{_opt(pitch, 1)},{pitch_mode},"
        f"{_course(azimuth_deg)}"
    )


def rpm(
    talker: str, source: str, number: int, speed_rpm: float, pitch_pct: float | None, valid: bool
) -> bytes:
    """RPM, revolutions: source S shaft or E engine, number (0 single, odd starboard, even
    port), rev/min, pitch in per cent of maximum (negative astern), status A/V."""
    return frame(
        f"{talker}RPM,{source},{number},{fixed(speed_rpm, 1)},{_opt(pitch_pct, 1)},"
        f"{'A' if valid else 'V'}"
    )


def rsa(talker: str, starboard_deg: float | None, port_deg: float | None) -> bytes:
    """RSA, rudder sensor angles: starboard (or single) and port, positive turning the bow to
    starboard; a missing sensor has an empty angle and status V."""

    def part(value: float | None) -> str:
        return "," + "V" if value is None else f"{fixed(value, 1)},A"

    return frame(f"{talker}RSA,{part(starboard_deg)},{part(port_deg)}")


def xdr(talker: str, groups: Sequence[tuple[str, float, str, str]]) -> bytes:
    """XDR, transducer values: groups of (type, value, units, identifier)."""
    return frame(f"{talker}XDR,{','.join(_xdr_group(g) for g in groups)}")


def xdr_lines(talker: str, groups: Sequence[tuple[str, float, str, str]]) -> list[bytes]:
    """XDR for any number of groups: as many to a sentence as fit in 82 characters."""
    room = MAX_SENTENCE_CHARS - len(f"${talker}XDR,*hh\r\n")
    out: list[bytes] = []
    batch: list[str] = []
    for group in groups:
        text = _xdr_group(group)
        if batch and len(",".join([*batch, text])) > room:
            out.append(frame(f"{talker}XDR,{','.join(batch)}"))
            batch = []
        batch.append(text)
    if batch:
        out.append(frame(f"{talker}XDR,{','.join(batch)}"))
    return out


def _xdr_group(group: tuple[str, float, str, str]) -> str:
    kind, value, units, name = group
    return f"{kind},{fixed(value, 1)},{units},{name}"


# --- the Clearpath Heron frontseat's own sentences -----------------------------------------
# Layouts: heron/heron_robot heron_nmea/REFERENCE.md (the output table), nodes/nav_publisher
# (CPNVG, CPNVR), nodes/imu_publisher (CPIMU, CPRCM), nodes/lights_publisher (CPALT); times
# hhmmss.sss as its nmea_helpers print them. The Heron prints its floats with up to six
# decimals, so its lines may pass 82 characters; hild prints fixed decimals, saturated at
# widths a boat never reaches, so that every line stays within 82 (devices/frontseat.toml).
FRONTSEAT_SPEED_MAX = 99.99  # m/s (194 kn)
FRONTSEAT_RATE_MAX = 999.99  # deg/s
FRONTSEAT_ACCEL_MAX = 999.999  # m/s^2


def cpnvg(
    utc: datetime,
    lat_deg: float,
    lon_deg: float,
    quality: int,
    heading_deg: float,
    roll_deg: float,
    pitch_deg: float,
    decimals: int = 5,
) -> bytes:
    """CPNVG, the frontseat's fix: time, position, quality, altitude above the bottom and depth
    below the surface (0 and 0, as the Heron sends them), heading, roll, pitch, time.

    Roll and pitch are whole degrees in [-180, 180): the Heron sends 0 for both, and with a
    decimal each the line would need up to 86 characters."""
    lat, ns = latitude(lat_deg, decimals)
    lon, ew = longitude(lon_deg, decimals)
    stamp = utc_time(utc, 3)
    return frame(
        f"CPNVG,{stamp},{lat},{ns},{lon},{ew},{quality},0,0,{angle360(heading_deg, 1)},"
        f"{angle180(roll_deg, 0)},{angle180(pitch_deg, 0)},{stamp}"
    )


def cpnvr(
    utc: datetime,
    vel_east: float,
    vel_north: float,
    vel_down: float,
    pitch_rate_deg: float,
    roll_rate_deg: float,
    yaw_rate_deg: float,
) -> bytes:
    """CPNVR, the frontseat's velocities [m/s] and body rates [deg/s], saturated at +-99.99 m/s
    and +-999.99 deg/s."""
    speeds = ",".join(bounded(v, FRONTSEAT_SPEED_MAX, 2) for v in (vel_east, vel_north, vel_down))
    rates = ",".join(
        bounded(r, FRONTSEAT_RATE_MAX, 2) for r in (pitch_rate_deg, roll_rate_deg, yaw_rate_deg)
    )
    return frame(f"CPNVR,{utc_time(utc, 3)},{speeds},{rates}")


def cprcm(
    utc: datetime, compass_id: str, heading_deg: float, pitch_deg: float, roll_deg: float
) -> bytes:
    """CPRCM, the frontseat's compass: heading, pitch and roll [deg], printed as given (the
    Heron's own zero and sense are the device's business: hild/bus/frontseat.py)."""
    stamp = utc_time(utc, 3)
    return frame(
        f"CPRCM,{stamp},{compass_id},{angle360(heading_deg, 1)},{angle180(pitch_deg, 1)},"
        f"{angle180(roll_deg, 1)},{stamp}"
    )


def cpimu(
    utc: datetime,
    rates_deg: tuple[float, float, float],
    accel: tuple[float, float, float],
) -> bytes:
    """CPIMU, the frontseat's IMU: angular velocities about x, y, z [deg/s] and linear
    accelerations along them [m/s^2], body axes x forward, y starboard, z down (the Heron
    negates the ROS IMU's y and z), saturated at +-999.99 deg/s and +-999.999 m/s^2."""
    rates = ",".join(bounded(r, FRONTSEAT_RATE_MAX, 2) for r in rates_deg)
    accels = ",".join(bounded(a, FRONTSEAT_ACCEL_MAX, 3) for a in accel)
    return frame(f"CPIMU,{utc_time(utc, 3)},{rates},{accels}")


def cpalt(utc: datetime, lights_on: bool) -> bytes:
    """CPALT, the frontseat's lights: 1 on, 0 off."""
    return frame(f"CPALT,{utc_time(utc, 3)},{1 if lights_on else 0}")


def cprbs(utc: datetime, voltage: float) -> bytes:
    """CPRBS, the battery: the ID omitted and the temperature sent as 0, as the Heron does."""
    v = fixed(_clamp(voltage, 0.0, 999.99), 2)
    return frame(f"CPRBS,{utc_time(utc, 3)},{v},{v},{v},0")
