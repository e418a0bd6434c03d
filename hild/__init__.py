"""hild: a hardware-in-the-loop emulator daemon for unmanned surface vessels."""

from hild.kernel_cache import configure_kernel_cache

__version__ = "0.1.0"

configure_kernel_cache()  # before anything imports numba
