"""The 6-DOF vessel model: pure, numba-compiled numerics on flat float64 arrays."""
