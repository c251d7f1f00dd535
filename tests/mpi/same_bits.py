"""One script, two backends: writes its results to an .npz for a byte comparison.

``python same_bits.py OUT 3`` uses 3 simulated ranks; under ``mpiexec -n 3``
the same script uses the MPI backend with the same grid.
"""

from __future__ import annotations

import sys

import numpy as np

import dapx
from dapx.functions import chunked_moments

# Small chunks: the chunked variances make many chunks (and fused dots) of these small blocks.
chunked_moments.CHUNK, chunked_moments.ROW = 64, 16


def main(out: str, nranks: int) -> None:
    backend = dapx.default_backend() if dapx.backends.mpi_world_size() > 1 else None
    backend = backend or dapx.simulated(nranks)
    x = np.random.default_rng(7).standard_normal((31, 17))
    results = {}
    for name, dist in {"block": "b", "cyclic": "c", "bc3": {"dist": "c", "block_size": 3}}.items():
        a = dapx.asarray(x, dist=dist, backend=backend)
        results[f"{name}_expr"] = (a * 1.5 - a**2).gather()
        results[f"{name}_redist"] = a.redistribute("c", block_size=2).gather()
        results[f"{name}_sum"] = np.asarray(float(np.sum(a)))
        results[f"{name}_std"] = np.asarray(float(np.std(a)))
        results[f"{name}_mean0"] = np.mean(a, axis=0).gather()
        results[f"{name}_var1"] = np.var(a, axis=1, ddof=1).gather()
        results[f"{name}_std_where"] = np.asarray(float(np.std(a, where=x > -1)))
        nans = dapx.asarray(np.where(x > 1.5, np.nan, x), dist=dist, backend=backend)
        results[f"{name}_nanstd"] = np.asarray(float(np.nanstd(nans)))
        results[f"{name}_nanvar0"] = np.nanvar(nans, axis=0).gather()
    if dapx.backends.mpi_world_size() <= 1 or backend.comm.rank == 0:
        np.savez(out, **results)
    backend.barrier()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
