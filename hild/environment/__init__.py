"""The environment: wind, current and waves, and their forces on the vessel."""
