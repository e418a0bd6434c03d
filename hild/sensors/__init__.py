"""Emulated sensors: what each device measures, its noise and faults, and the geodesy."""
