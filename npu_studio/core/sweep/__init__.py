"""Design-space sweeps: NPU targets over models, on one machine or a Dask cluster (docs/sweep.md).

spec.py       the sweep.toml format and its design points
evaluate.py   one point: the NPU pipeline and the timing simulation, memoised
executors.py  where batches run: in-process, a local process pool, Dask
table.py      the row cache (content hashes) and the Parquet/CSV table
analysis.py   Pareto fronts, knee, sensitivity, monotonicity and sanity checks
run.py        the sweep from spec to table
"""
