"""Tall-skinny QR and SVD: dapx under ``mpiexec -n 2`` vs one-process NumPy and dask's tsqr.

Run everything in one go (it starts every variant in its own process, once per round)::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 OMP_NUM_THREADS=1 \\
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_tsqr.py [--rows 4000000] [--cols 64]

Targets (issue 17), ``np.linalg.qr`` (mode 'reduced') and ``np.linalg.svd``
(``full_matrices=False``) of a 4*10^6 x 64 float64 matrix:

* dapx under ``mpiexec -n 2`` (one BLAS thread per rank) at least 1.6x faster
  than one-process NumPy with one thread;
* faster than ``dask.array.linalg.tsqr`` (and ``dask.array.linalg.svd``) on the
  same row chunks (two of ``m / 2`` rows), threaded scheduler with 2 workers.

The matrix is the same in every process: chunks of rows drawn from generators
seeded by the chunk's index, so each MPI rank draws only its own rows. Every
variant's results are checked (asserted) in its process: ``|Q R - A| / |A|``
and ``|Q^T Q - I|`` small, ``U diag(s) V^T = A``, and the singular values
against NumPy's. Each round runs the three variants one after the other (fresh
processes: interleaved rounds); the figures are medians of the rounds and the
speed-ups the medians of the per-round ratios. Times are of the factorization
alone (the data is in memory before the clock starts; a warm-up call on a
small matrix comes first).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np
from _children import run_child

CHILD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MALLOC_MMAP_MAX_": "0",
    "MALLOC_TRIM_THRESHOLD_": "68719476736",
}
PIECES = 16  # the matrix is drawn in 16 chunks of rows, each from its own seed


def rows(lo: int, hi: int, m: int, n: int) -> np.ndarray:
    """Rows ``lo:hi`` of the benchmark matrix (`lo`, `hi` multiples of ``m / PIECES``)."""
    step = m // PIECES
    if lo % step or hi % step:
        raise ValueError(f"rows {lo}:{hi} are not aligned to the {step}-row pieces")
    out = np.empty((hi - lo, n))
    for k in range(lo // step, hi // step):
        rng = np.random.default_rng(k)
        out[k * step - lo : (k + 1) * step - lo] = rng.standard_normal((step, n))
    out[:, 0] *= 1e3  # columns of different scales: not a trivially conditioned matrix
    return out


def _check(name: str, ok: bool) -> None:
    if not ok:
        raise AssertionError(f"{name}: the result check failed")


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


# -- one-process NumPy ----------------------------------------------------------------------------


def numpy_child(m: int, n: int) -> dict:
    a = rows(0, m, m, n)
    np.linalg.qr(a[: 4 * n])  # warm-up
    t_qr, (q, r) = _timed(lambda: np.linalg.qr(a))
    norm = np.linalg.norm(a)
    _check("numpy qr", np.linalg.norm(q @ r - a) / norm < 1e-12)
    del q, r
    t_svd, (u, s, vh) = _timed(lambda: np.linalg.svd(a, full_matrices=False))
    _check("numpy svd", np.linalg.norm((u * s) @ vh - a) / norm < 1e-12)
    return {"qr": t_qr, "svd": t_svd, "s": s.tolist()}


# -- dapx under mpiexec -n 2 ----------------------------------------------------------------------


def mpi_child(m: int, n: int) -> dict | None:
    from mpi4py import MPI

    import dapx

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    backend = dapx.mpi()
    lo, hi = rank * m // size, (rank + 1) * m // size
    a = dapx.from_local(rows(lo, hi, m, n), backend=backend)
    small = dapx.from_local(rows(0, m // PIECES, m, n)[: 4 * n], backend=backend)
    np.linalg.qr(small)  # warm-up (and the imports)

    def timed(fn):
        comm.Barrier()
        t, out = _timed(fn)
        return comm.allreduce(t, op=MPI.MAX), out

    def total(x: float) -> float:
        return comm.allreduce(x, op=MPI.SUM)

    t_qr, (q, r) = timed(lambda: np.linalg.qr(a))
    local_a = a.local()
    norm = np.sqrt(total(np.sum(local_a**2)))
    error = np.sqrt(total(np.sum((q.local() @ r.gather() - local_a) ** 2))) / norm
    gram = comm.allreduce(q.local().T @ q.local(), op=MPI.SUM)
    _check("dapx qr", error < 1e-12 and np.abs(gram - np.eye(n)).max() < 1e-12)
    del q, r
    t_svd, (u, s, vh) = timed(lambda: np.linalg.svd(a, full_matrices=False))
    product = (u.local() * s.gather()) @ vh.gather()
    _check("dapx svd", np.sqrt(total(np.sum((product - local_a) ** 2))) / norm < 1e-12)
    values = s.gather()  # collective: on every rank
    return None if rank else {"qr": t_qr, "svd": t_svd, "s": values.tolist()}


# -- dask.array.linalg ----------------------------------------------------------------------------


def dask_child(m: int, n: int) -> dict:
    import dask
    import dask.array as da

    a = rows(0, m, m, n)
    x = da.from_array(a, chunks=(m // 2, n))
    with dask.config.set(scheduler="threads", num_workers=2):
        da.linalg.tsqr(da.from_array(a[: 8 * n], chunks=(4 * n, n)))[1].compute()  # warm-up
        t_qr, (q, r) = _timed(lambda: dask.compute(*da.linalg.tsqr(x)))
        norm = np.linalg.norm(a)
        _check("dask tsqr", np.linalg.norm(q @ r - a) / norm < 1e-12)
        del q, r
        t_svd, (u, s, vh) = _timed(lambda: dask.compute(*da.linalg.svd(x)))
        _check("dask svd", np.linalg.norm((u * s) @ vh - a) / norm < 1e-12)
    return {"qr": t_qr, "svd": t_svd, "s": s.tolist()}


# -- the driver -----------------------------------------------------------------------------------


def _run(args: list[str], mpi: bool = False) -> dict:
    return run_child(__file__, args, ranks=2 if mpi else 0, env=CHILD_ENV)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--cols", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=("numpy", "mpi", "dask"))
    args = parser.parse_args()
    m, n = args.rows, args.cols
    if m % (2 * PIECES):
        parser.error(f"--rows must be a multiple of {2 * PIECES}")
    if args.child:
        result = {"numpy": numpy_child, "mpi": mpi_child, "dask": dask_child}[args.child](m, n)
        if result is not None:
            print(json.dumps(result))
        return 0

    sizes = ["--rows", str(m), "--cols", str(n)]
    variants = ("numpy", "mpi", "dask")
    times = {v: {"qr": [], "svd": []} for v in variants}
    for k in range(args.rounds):
        results = {v: _run([*sizes, "--child", v], mpi=v == "mpi") for v in variants}
        reference = np.array(results["numpy"]["s"])
        for v in ("mpi", "dask"):
            got = np.array(results[v]["s"])
            if not np.allclose(got, reference, rtol=1e-10, atol=0):
                raise AssertionError(f"{v}'s singular values differ from NumPy's")
        for v in variants:
            for op in ("qr", "svd"):
                times[v][op].append(results[v][op])
        print(
            f"round {k + 1}: "
            + json.dumps({v: {o: round(t[o][-1], 3) for o in t} for v, t in times.items()})
        )

    print(f"\n{m} x {n} float64, medians of {args.rounds} rounds (seconds)")
    print(f"{'':6}{'numpy 1 thread':>16}{'dapx mpiexec -n 2':>20}{'dask tsqr 2 thr':>18}")
    for op in ("qr", "svd"):
        med = {v: statistics.median(times[v][op]) for v in variants}
        print(f"{op:6}{med['numpy']:>16.3f}{med['mpi']:>20.3f}{med['dask']:>18.3f}")
    print()
    ok = True
    for op in ("qr", "svd"):
        over_numpy = statistics.median(a / b for a, b in zip(times["numpy"][op], times["mpi"][op]))
        over_dask = statistics.median(a / b for a, b in zip(times["dask"][op], times["mpi"][op]))
        print(
            f"{op}: dapx -n 2 is {over_numpy:.2f}x faster than NumPy (target 1.6x), "
            f"{over_dask:.2f}x faster than dask (target > 1)"
        )
        ok &= over_numpy >= 1.6 and over_dask > 1.0
    print("targets met" if ok else "targets NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
