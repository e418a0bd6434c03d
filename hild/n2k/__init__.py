"""NMEA 2000: PGN encoders, CAN frames and fast packets, gateway framings, N2K devices."""
