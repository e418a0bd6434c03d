"""Sentence types pynmea2 (1.19) lacks, registered so that it parses what hild sends and reads.

A subclass of ``pynmea2.TalkerSentence`` named after its three-letter formatter registers
itself. Layouts: shared/reference/protocols.md.
"""

from __future__ import annotations

import pynmea2


class THS(pynmea2.TalkerSentence):
    """THS, true heading and status (NMEA 0183 v3.0+)."""

    fields = (
        ("Heading", "heading", float),
        ("Mode indicator", "mode"),  # A autonomous, E estimated, M manual, S simulator, V invalid
    )


class TRC(pynmea2.TalkerSentence):
    """TRC, thruster control data (IEC 61162-1 ed. 3): a command when the status flag is C."""

    fields = (
        ("Thruster number", "number", int),
        ("RPM demand", "rpm", float),
        ("RPM mode", "rpm_mode"),  # P per cent, R rev/min, V invalid
        ("Pitch demand", "pitch", float),
        ("Pitch mode", "pitch_mode"),  # P per cent, D degrees, V invalid
        ("Azimuth demand", "azimuth", float),
        ("Operating location", "location"),
        ("Sentence status flag", "status"),  # C command, R report
    )


class TRD(pynmea2.TalkerSentence):
    """TRD, thruster response data (IEC 61162-1 ed. 3)."""

    fields = (
        ("Thruster number", "number", int),
        ("RPM response", "rpm", float),
        ("RPM mode", "rpm_mode"),
        ("Pitch response", "pitch", float),
        ("Pitch mode", "pitch_mode"),
        ("Azimuth response", "azimuth", float),
    )


class PRC(pynmea2.TalkerSentence):
    """PRC, propulsion remote control status (IEC 61162-1 ed. 3)."""

    fields = (
        ("Lever demand position", "lever", float),
        ("Lever demand status", "lever_status"),
        ("RPM demand", "rpm", float),
        ("RPM mode", "rpm_mode"),
        ("Pitch demand", "pitch", float),
        ("Pitch mode", "pitch_mode"),
        ("Operating location", "location"),
        ("Engine or shaft number", "number", int),
    )


class ROR(pynmea2.TalkerSentence):
    """ROR, rudder order status (IEC 61162-1 ed. 3)."""

    fields = (
        ("Starboard rudder order", "starboard", float),
        ("Starboard status", "starboard_status"),
        ("Port rudder order", "port", float),
        ("Port status", "port_status"),
        ("Command source location", "location"),
    )


# --- the Heron frontseat's navigation sentences (talker CP) --------------------------------


class NVG(pynmea2.TalkerSentence):
    """CPNVG, the frontseat's navigation fix."""

    fields = (
        ("Timestamp", "timestamp", pynmea2.nmea_utils.timestamp),
        ("Latitude", "lat"),
        ("Latitude direction", "lat_dir"),
        ("Longitude", "lon"),
        ("Longitude direction", "lon_dir"),
        ("Position quality", "quality", int),
        ("Altitude from bottom", "altitude", float),
        ("Depth from top", "depth", float),
        ("Heading", "heading", float),
        ("Roll", "roll", float),
        ("Pitch", "pitch", float),
        ("Timestamp of the navigation data", "nav_timestamp", pynmea2.nmea_utils.timestamp),
    )

    @property
    def latitude(self) -> float:
        return pynmea2.nmea_utils.dm_to_sd(self.lat) * (-1 if self.lat_dir == "S" else 1)

    @property
    def longitude(self) -> float:
        return pynmea2.nmea_utils.dm_to_sd(self.lon) * (-1 if self.lon_dir == "W" else 1)


class NVR(pynmea2.TalkerSentence):
    """CPNVR, the frontseat's velocities (m/s) and rates (deg/s)."""

    fields = (
        ("Timestamp", "timestamp", pynmea2.nmea_utils.timestamp),
        ("Velocity east", "vel_east", float),
        ("Velocity north", "vel_north", float),
        ("Velocity down", "vel_down", float),
        ("Pitch rate", "pitch_rate", float),
        ("Roll rate", "roll_rate", float),
        ("Yaw rate", "yaw_rate", float),
    )


class RCM(pynmea2.TalkerSentence):
    """CPRCM, the frontseat's compass: heading zero facing south and increasing
    counter-clockwise, pitch positive bow down (heron_nmea REFERENCE.md, nodes/imu_publisher)."""

    fields = (
        ("Timestamp", "timestamp", pynmea2.nmea_utils.timestamp),
        ("Compass ID", "compass_id"),
        ("Heading", "heading", float),
        ("Pitch", "pitch", float),
        ("Roll", "roll", float),
        ("Timestamp of the reading", "reading_timestamp", pynmea2.nmea_utils.timestamp),
    )


class RBS(pynmea2.TalkerSentence):
    """CPRBS, the frontseat's battery (ID usually omitted, temperature 0)."""

    fields = (
        ("Timestamp", "timestamp", pynmea2.nmea_utils.timestamp),
        ("Battery voltage", "voltage", float),
        ("Minimum voltage", "voltage_min", float),
        ("Maximum voltage", "voltage_max", float),
        ("Temperature", "temperature", float),
    )


class IMU(pynmea2.TalkerSentence):
    """CPIMU, the frontseat's IMU: body rates (deg/s) and accelerations (m/s^2), x forward,
    y starboard, z down (heron_nmea REFERENCE.md, nodes/imu_publisher)."""

    fields = (
        ("Timestamp", "timestamp", pynmea2.nmea_utils.timestamp),
        ("X angular velocity", "rate_x", float),
        ("Y angular velocity", "rate_y", float),
        ("Z angular velocity", "rate_z", float),
        ("X linear acceleration", "accel_x", float),
        ("Y linear acceleration", "accel_y", float),
        ("Z linear acceleration", "accel_z", float),
    )


class ALT(pynmea2.TalkerSentence):
    """CPALT, the frontseat's lights: 1 on, 0 off (heron_nmea REFERENCE.md)."""

    fields = (
        ("Timestamp", "timestamp", pynmea2.nmea_utils.timestamp),
        ("Lights on", "lights", int),
    )
