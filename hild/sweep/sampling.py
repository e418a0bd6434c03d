"""Random and Latin-hypercube samples in the unit hypercube, from a seed.

A Latin hypercube of n samples in d dimensions cuts each axis into n equal strata and puts
exactly one sample in each stratum of each axis: column j is a random permutation of the
strata 0..n-1, each sample placed uniformly within its stratum. Plain random sampling draws
every coordinate independently. Both return an (n, d) array of values in [0, 1); a sweep maps
each column onto its parameter (a range, or an index into a list of values).
"""

from __future__ import annotations

import numpy as np

SAMPLING_STREAM = 0x5A3D  # the sweep seed's stream for samples (runs' seeds use the index)


def sample_rng(sweep_seed: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([sweep_seed, SAMPLING_STREAM]))


def random_unit(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    return rng.random((n, d))


def latin_hypercube_unit(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    strata = np.empty((n, d))
    for j in range(d):
        strata[:, j] = rng.permutation(n)
    within = rng.random((n, d))
    return (strata + within) / n
