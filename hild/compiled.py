"""How the compiled core is compiled: ``kernel``, the decorator of the kernels on a step's path.

numba counts the references to every array a compiled function is given: an atomic increment
where the function takes the array and a decrement where it last uses it, for each array and
each call. Its pruning pass removes such pairs only in simple shapes of code, not across a
kernel the size of the vessel's step: an RK4 step of Odin spent a third of its time on them
(perf, 2026-11-27: docs/benchmarks.md). A kernel that allocates nothing and returns no array
needs no counting: it borrows its arrays for the length of the call from a caller that holds
them. ``kernel`` compiles such a kernel without numba's runtime (its ``_nrt`` option; numba
refuses to compile an allocation without it, so a kernel that starts to allocate fails to
compile rather than leak). The loops that allocate their buffers keep ``njit``; a kernel
inlined into another (``inline="always"``) is compiled as part of its caller.

A factory that makes a kernel per variant (an integrator, a sea: constants of a closure) names
each variant with ``variant``. numba names a compiled function by its qualified name and a
counter of the process that compiled it, and caches it so; two variants of one closure compiled
in two processes (a calm run, then a run in waves) could so carry the same symbol, and a third
process that loaded both from the cache ran the first for both: a run in waves without its
waves (measured, tests/test_kernel_cache.py). With the variant's constants in its name, no two
variants share a symbol, whichever process compiled them.
"""

from collections.abc import Callable
from typing import Any

from numba import njit

kernel = njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # (not in numba's stubs)


def variant(**constants: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``kernel`` for one variant of a factory's closure, its constants in its name
    (``env_outputs_sea2``)."""
    suffix = "_".join(f"{name}{value}" for name, value in constants.items())

    def compile_variant(function: Callable[..., Any]) -> Callable[..., Any]:
        function.__name__ = f"{function.__name__}_{suffix}"
        function.__qualname__ = f"{function.__qualname__}_{suffix}"
        return kernel(function)

    return compile_variant
