"""``np.linalg.eigh``: dapx's two methods under ``mpiexec -n 2`` vs one-process NumPy (LAPACK).

Run everything in one go (it starts every variant in its own processes, once per round)::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 \\
    python benchmarks/bench_eigh.py [--size 1024] [--rounds 3] [--methods tridiagonal,jacobi]

The methods are `dapx.functions.eigen.eigh`'s: ``tridiagonal`` (Householder
reduction, inverse iteration; what ``np.linalg.eigh`` uses by default) and
``jacobi`` (parallel block Jacobi).

dapx runs on two ranks with one BLAS thread each (``OMP_NUM_THREADS=1``);
NumPy on one process with two threads (the same total, the machine's two
cores). The matrix is symmetric with a Gaussian lower triangle (the only one
``eigh`` reads), each block of rows drawn from its own seed, so each rank
builds its own rows (a row layout: dapx redistributes it to column blocks
once). Each variant runs once before its timed run; the rounds interleave
NumPy and dapx. Checks, asserted in every round: dapx's eigenvalues are
within ``8 n eps ||A||_2`` of NumPy's, and its eigenvectors have residuals
``||A V - V diag(w)||_2 <= 16 n eps ||A||_2`` and orthogonality
``||V^T V - I||_2 <= 8 n eps`` (checked on the gathered result, outside the
timing). Times are the slowest rank's; figures are medians over rounds,
the ratio the median of per-round ratios.

The Householder method does LAPACK's work (``4/3 n^3`` flops for the
reduction, ``2 n^3`` for the back-transformation), but half of the
reduction is matrix-vector products over the trailing columns, one per column
with an allgather each: memory-bound and latency-bound where LAPACK's
``dsytrd`` is only memory-bound. Jacobi does ``~12 n^3`` flops per sweep
(~10 sweeps for such a matrix): several times slower, the price of keeping
every rank to its share whatever the spectrum.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np
from _children import run_child, thread_env

ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "68719476736"}
ROWS = 64  # rows per seed


def rows_of(first: int, last: int, n: int) -> np.ndarray:
    """Rows ``first:last`` of the matrix (whole blocks of ROWS rows, each from its own seed)."""
    out = np.empty((last - first, n))
    for start in range(first, last, ROWS):
        block = np.random.default_rng(start // ROWS).standard_normal((ROWS, n))
        out[start - first : start - first + ROWS] = block[: last - start]
    return out


def symmetric(n: int) -> np.ndarray:
    """The matrix ``eigh`` sees: the lower triangle mirrored."""
    low = np.tril(rows_of(0, n, n))
    return low + np.tril(low, -1).T


def numpy_child(n: int) -> dict:
    a = rows_of(0, n, n)
    np.linalg.eigh(a)  # warm-up at full size
    t0 = time.perf_counter()
    w, _ = np.linalg.eigh(a)
    return {"eigh": time.perf_counter() - t0, "w": w.tolist()}


def mpi_child(n: int, method: str) -> dict | None:
    from mpi4py import MPI

    import dapx
    from dapx.functions.eigen import eigh

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    backend = dapx.mpi()
    bounds = [min(n, ROWS * (-(-n // ROWS) * r // size)) for r in range(size + 1)]
    spec = {"dist": "b", "bounds": bounds}
    a = dapx.zeros((n, n), dist=(spec, "n"), grid=(size, 1), backend=backend)
    a.local()[...] = rows_of(bounds[rank], bounds[rank + 1], n)
    eigh(a, method=method)  # warm-up
    comm.Barrier()
    t0 = time.perf_counter()
    w, v = eigh(a, method=method)
    elapsed = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    got_w, got_v = w.gather(), v.gather()  # checks only, outside the timing
    if rank:
        return None
    x = symmetric(n)
    eps, norm = np.finfo(float).eps, np.linalg.norm(x, 2)
    residual = np.linalg.norm(x @ got_v - got_v * got_w, 2) / (n * eps * norm)
    orthogonality = np.linalg.norm(got_v.T @ got_v - np.eye(n), 2) / (n * eps)
    if residual > 16 or orthogonality > 8:
        raise AssertionError(
            f"dapx eigh ({method}): residual {residual}, orthogonality {orthogonality}"
        )
    return {"eigh": elapsed, "w": got_w.tolist(), "norm": norm, "residual": residual}


def _run(args: list[str], threads: int, ranks: int = 0) -> dict:
    return run_child(__file__, args, ranks=ranks, env={**ENV, **thread_env(threads)})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--methods", default="tridiagonal,jacobi")
    parser.add_argument("--child", choices=("numpy", "mpi"))
    args = parser.parse_args()
    n = args.size
    methods = args.methods.split(",")
    if args.child:
        result = numpy_child(n) if args.child == "numpy" else mpi_child(n, methods[0])
        if result is not None:
            print(json.dumps(result))
        return 0

    size = ["--size", str(n)]
    times: dict[str, list[float]] = {"numpy": [], **{m: [] for m in methods}}
    ratios: dict[str, list[float]] = {m: [] for m in methods}
    for k in range(args.rounds):
        ref = _run([*size, "--child", "numpy"], threads=args.ranks)
        times["numpy"].append(ref["eigh"])
        line = [f"round {k + 1}: numpy {ref['eigh']:.3f} s"]
        for method in methods:
            child = [*size, "--child", "mpi", "--methods", method]
            got = _run(child, threads=1, ranks=args.ranks)
            error = np.abs(np.array(got["w"]) - np.array(ref["w"])).max()
            if error > 8 * n * np.finfo(float).eps * got["norm"]:
                raise AssertionError(f"{method}: eigenvalues differ from NumPy's by {error}")
            times[method].append(got["eigh"])
            ratios[method].append(got["eigh"] / ref["eigh"])
            line.append(f"{method} {got['eigh']:.3f} s ({got['residual']:.2f} n eps ||A||)")
        print(", ".join(line))
    print(f"\n{n} x {n} float64, medians of {args.rounds} rounds (seconds; results checked)")
    print(f"numpy: one process, {args.ranks} BLAS threads; dapx: mpiexec -n {args.ranks}, 1 each")
    for name, ts in times.items():
        ratio = f"  {statistics.median(ratios[name]):5.1f}x numpy" if name in ratios else ""
        print(f"  {name:<12}{statistics.median(ts):8.3f} s{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
