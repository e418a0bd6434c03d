"""Drivers own time and nothing else: each steps a world (hild/world/) on its own clock."""
