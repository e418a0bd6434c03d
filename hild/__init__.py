"""hild: a hardware-in-the-loop emulator daemon for unmanned surface vessels."""

from hild.kernel_cache import configure_kernel_cache, started_cold

__version__ = "0.1.0"

configure_kernel_cache()  # before anything imports numba
started_cold()  # (whether this process will compile: asked before it does)
