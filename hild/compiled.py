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
"""

from numba import njit

kernel = njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # (not in numba's stubs)
