"""Builders for the sentences hild's devices emit: one function per sentence, edge units.

Each takes the talker ID and values in the units the sentence carries (degrees,
knots) and returns the framed bytes. ``None`` for a value leaves its field empty,
as receivers do when they have no data.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from hild.nmea.encode import (
    angle360,
    fixed,
    frame,
    latitude,
    longitude,
    signed,
    utc_date,
    utc_time,
)
from hild.units import KMH_PER_KNOT, KNOTS_PER_MS


def _clamp(value: float, lo: float, hi: float) -> float:
    return min(max(value, lo), hi)


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
        alt = (f"{fixed(_clamp(altitude, -9999.9, 99999.9), 1)},M,"
               f"{fixed(_clamp(geoid_separation, -999.9, 999.9), 1)},M")  # fmt: skip
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
    if not valid or lat_deg is None or lon_deg is None:
        pos, status, mode = ",,,", "V", "N"
        sog_kn = cog_deg = None
    else:
        lat, ns = latitude(lat_deg, decimals)
        lon, ew = longitude(lon_deg, decimals)
        pos, status = f"{lat},{ns},{lon},{ew}", "A"
    return frame(
        f"{talker}RMC,{utc_time(utc)},{status},{pos},{_opt(sog_kn, 2)},{_course(cog_deg)},"
        f"{utc_date(utc)},,,{mode}"
    )


def vtg(talker: str, cog_deg: float | None, sog_kn: float | None, mode: str = "A") -> bytes:
    """VTG, course and speed over ground (true course; no magnetic variation modelled)."""
    kmh = None if sog_kn is None else sog_kn * KMH_PER_KNOT
    if sog_kn is None:
        mode = "N"
    return frame(f"{talker}VTG,{_course(cog_deg)},T,,M,{_opt(sog_kn, 2)},N,{_opt(kmh, 2)},K,{mode}")


def zda(talker: str, utc: datetime) -> bytes:
    """ZDA, UTC date and time (local zone 00:00)."""
    return frame(f"{talker}ZDA,{utc_time(utc)},{utc.day:02d},{utc.month:02d},{utc.year:04d},00,00")


def gsa(
    talker: str, prns: Sequence[int], pdop: float, hdop: float, vdop: float, fix: int = 3
) -> bytes:
    """GSA, DOP and the satellites used (up to 12), automatic 2D/3D mode."""
    slots = [f"{p:02d}" for p in list(prns)[:12]] + [""] * max(0, 12 - len(prns))
    return frame(
        f"{talker}GSA,A,{fix},{','.join(slots)},{fixed(pdop, 1)},{fixed(hdop, 1)},{fixed(vdop, 1)}"
    )


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
    return frame(f"{talker}ROT,{fixed(rate_deg_per_min, 1)},A")


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
    """PASHR (RT300/TSS attitude, emitted by POS MV, SPAN and many MRUs): heading, roll, pitch."""
    return frame(
        f"PASHR,{utc_time(utc, 3)},{angle360(heading_deg, 2)},T,{signed(roll_deg, 2)},"
        f"{signed(pitch_deg, 2)},{signed(heave, 2)},{fixed(roll_sd_deg, 3)},"
        f"{fixed(pitch_sd_deg, 3)},{fixed(heading_sd_deg, 3)},{gnss_quality},{imu_status}"
    )


def mwv(
    talker: str, angle_deg: float, reference: str, speed_ms: float, valid: bool = True
) -> bytes:
    """MWV, wind angle from the bow (clockwise) and speed in m/s; reference R relative, T true."""
    return frame(
        f"{talker}MWV,{angle360(angle_deg, 1)},{reference},{fixed(speed_ms, 1)},M,"
        f"{'A' if valid else 'V'}"
    )


def mwd(talker: str, from_true_deg: float, speed_ms: float) -> bytes:
    """MWD, true wind direction (from, relative to true north) and speed in knots and m/s."""
    speed_kn = speed_ms * KNOTS_PER_MS
    return frame(
        f"{talker}MWD,{angle360(from_true_deg, 1)},T,,M,{fixed(speed_kn, 1)},N,"
        f"{fixed(speed_ms, 1)},M"
    )


def vhw(talker: str, heading_deg: float | None, stw_kn: float | None) -> bytes:
    """VHW, water speed and heading (true heading when the log has one; empty when invalid)."""
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
        ground = f"{fixed(ground_long_kn, 2)},{fixed(ground_trans_kn, 2)},A"
    water = f"{fixed(water_long_kn, 2)},{fixed(water_trans_kn, 2)},A" if water_valid else ",,V"
    return frame(f"{talker}VBW,{water},{ground}")


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
    body = ",".join(
        f"{kind},{fixed(value, 1)},{units},{name}" for kind, value, units, name in groups
    )
    return frame(f"{talker}XDR,{body}")


# --- the Clearpath Heron frontseat's own sentences (shared/reference/protocols.md) ---------


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
    """CPNVG, the frontseat's fix: time, position, quality, altitude above the bottom (empty:
    unknown), depth below the surface (0 for a surface craft), heading, roll, pitch, time."""
    lat, ns = latitude(lat_deg, decimals)
    lon, ew = longitude(lon_deg, decimals)
    stamp = utc_time(utc, 3)
    return frame(
        f"CPNVG,{stamp},{lat},{ns},{lon},{ew},{quality},,0.0,{angle360(heading_deg, 1)},"
        f"{fixed(roll_deg, 1)},{fixed(pitch_deg, 1)},{stamp}"
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
    """CPNVR, the frontseat's velocities [m/s] and rates [deg/s]."""
    return frame(
        f"CPNVR,{utc_time(utc, 3)},{fixed(vel_east, 2)},{fixed(vel_north, 2)},"
        f"{fixed(vel_down, 2)},{fixed(pitch_rate_deg, 2)},{fixed(roll_rate_deg, 2)},"
        f"{fixed(yaw_rate_deg, 2)}"
    )


def cprcm(utc: datetime, compass_id: str, heading_deg: float, pitch_deg: float, roll_deg: float):
    """CPRCM, the frontseat's compass: heading, pitch and roll [deg]."""
    stamp = utc_time(utc, 3)
    return frame(
        f"CPRCM,{stamp},{compass_id},{angle360(heading_deg, 1)},{fixed(pitch_deg, 1)},"
        f"{fixed(roll_deg, 1)},{stamp}"
    )


def cprbs(utc: datetime, voltage: float) -> bytes:
    """CPRBS, the battery: the ID omitted and the temperature sent as 0, as the Heron does."""
    v = fixed(voltage, 2)
    return frame(f"CPRBS,{utc_time(utc, 3)},{v},{v},{v},0")
