"""`hild sweep`: a scenario run many times over a ``[sweep]`` of parameters, on Dask.

plan (the [sweep] table and the runs it makes), sampling (random and Latin-hypercube draws),
worker (what a Dask worker runs), cluster (a local cluster or an existing scheduler), runner
(batches, submitted and collected as they finish), table (the Parquet results, streamed in
parts and consolidated), progress, summary, junit, plots, and command (``hild sweep``).
"""
