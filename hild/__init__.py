"""hild: a hardware-in-the-loop emulator daemon for unmanned surface vessels."""

__version__ = "0.1.0"
