"""SUMMA ``a @ b``: dapx under ``mpiexec -n 4`` (a 2 x 2 grid) vs one-process NumPy.

Run everything in one go (it starts every variant in its own processes, once per round)::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 \\
    python benchmarks/bench_summa.py [--size 4096] [--rounds 3]

Target (issue 17): ``a @ b`` of two 4096 x 4096 float64 matrices on a 2 x 2
process grid, one BLAS thread per rank (``OMP_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1``), against one-process NumPy given the same total
threads. Four ranks oversubscribe this 2-core machine, so NumPy runs twice:
with 4 threads (the same total) and with 2 (the cores there are).

Variants, each in its own processes, all rounds interleaved:

* ``numpy T``: one process, ``OPENBLAS_NUM_THREADS=T``, ``a @ b``;
* under one ``mpiexec -n 4`` (one BLAS thread each):
  ``dapx 2x2`` (operands already in 2 x 2 blocks: SUMMA alone),
  ``dapx rows`` (operands in dapx's default layout for 4096 x 4096 on 4
  ranks, row blocks: one redistribution each to 2 x 2, then SUMMA),
  ``mpi4py SUMMA`` (hand-written: ``Bcast`` of the panels on row and column
  communicators, the same panels and order as dapx's) and ``mpi4py ring``
  (hand-written: the row-block ring dapx used before SUMMA, with
  ``Sendrecv_replace``).

Each MPI variant runs once at full size before the timed runs (the first large
messages and first-touched heap pages cost up to a second), and the timed
runs start with a different variant each round; NumPy also multiplies once
before its timed run. Checks, asserted: in every round each rank compares
its blocks of every MPI variant with NumPy's product of its rows of ``a``
and columns of ``b``; the two dapx variants must be bitwise identical (same
grid, same panels); the sum of all entries of every variant must match the
NumPy process's. Times are the slowest rank's; figures are medians over
rounds and ratios the medians of per-round ratios.
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
PIECES = 16  # each matrix is drawn in 16 chunks of rows, each from its own seed


def matrix(which: int, lo: int, hi: int, n: int, cols: slice = slice(None)) -> np.ndarray:
    """Rows ``lo:hi`` (and `cols`) of benchmark matrix `which` (0: a, 1: b), chunk by chunk."""
    step = n // PIECES
    if lo % step or hi % step:
        raise ValueError(f"rows {lo}:{hi} are not aligned to the {step}-row pieces")
    width = len(range(n)[cols])
    out = np.empty((hi - lo, width))
    for k in range(lo // step, hi // step):
        piece = np.random.default_rng(100 * which + k).standard_normal((step, n))
        out[k * step - lo : (k + 1) * step - lo] = piece[:, cols]
    return out


def _close(name: str, got: np.ndarray, expected: np.ndarray) -> None:
    # float64 products of k standard normals: errors of order k * eps * sqrt(k).
    scale = np.abs(expected).max(initial=1.0)
    if not np.allclose(got, expected, rtol=1e-12, atol=1e-12 * scale):
        raise AssertionError(f"{name}: the product differs from NumPy's")


# -- one-process NumPy ----------------------------------------------------------------------------


def numpy_child(n: int) -> dict:
    a, b = matrix(0, 0, n, n), matrix(1, 0, n, n)
    a @ b  # warm-up at full size, as the MPI variants get
    t0 = time.perf_counter()
    c = a @ b
    elapsed = time.perf_counter() - t0
    probe = [(0, 0), (n - 1, n - 1), (n // 3, 2 * n // 3)]
    for i, j in probe:  # the product itself, entry by entry
        _close("numpy", c[i, j], np.dot(a[i], b[:, j]))
    return {"time": elapsed, "sum": float(c.sum())}


# -- under mpiexec -n 4 ---------------------------------------------------------------------------


def mpi4py_summa(a: np.ndarray, b: np.ndarray, comm, side: int) -> np.ndarray:
    """Hand-written SUMMA on a `side` x `side` grid: panel t is a's grid column t, b's row t."""
    i, j = divmod(comm.Get_rank(), side)
    rows, cols = comm.Split(i, j), comm.Split(j, i)
    c = None
    for t in range(side):
        panel_a = a if j == t else np.empty_like(a)
        panel_b = b if i == t else np.empty_like(b)
        rows.Bcast(panel_a, root=t)
        cols.Bcast(panel_b, root=t)
        if c is None:
            c = panel_a @ panel_b
        else:
            c += panel_a @ panel_b
    rows.Free()
    cols.Free()
    return c


def mpi4py_ring(a: np.ndarray, b: np.ndarray, comm) -> np.ndarray:
    """The row-block ring: b's row blocks travel round the ranks, a and c stay."""
    rank, size = comm.Get_rank(), comm.Get_size()
    k = b.shape[0]
    held = b.copy()
    c = np.zeros((a.shape[0], b.shape[1]))
    for step in range(size):
        s = (rank + step) % size
        c += a[:, s * k : (s + 1) * k] @ held
        if step < size - 1:
            comm.Sendrecv_replace(held, dest=(rank - 1) % size, source=(rank + 1) % size)
    return c


def mpi_child(n: int, turn: int) -> dict | None:
    from mpi4py import MPI

    import dapx

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if size != 4:
        raise SystemExit("run the MPI part under mpiexec -n 4 (a 2 x 2 grid)")
    backend = dapx.mpi()
    h = n // 2
    i, j = divmod(rank, 2)
    cols = slice(j * h, (j + 1) * h)
    # The operands in 2 x 2 blocks (dapx's and the hand-written SUMMA's) and in row blocks.
    a2 = dapx.zeros((n, n), dist=("b", "b"), grid=(2, 2), backend=backend)
    b2 = dapx.zeros((n, n), dist=("b", "b"), grid=(2, 2), backend=backend)
    a2.local()[...] = matrix(0, i * h, (i + 1) * h, n, cols)
    b2.local()[...] = matrix(1, i * h, (i + 1) * h, n, cols)
    q = n // size
    ar = dapx.from_local(matrix(0, rank * q, (rank + 1) * q, n), backend=backend)
    br = dapx.from_local(matrix(1, rank * q, (rank + 1) * q, n), backend=backend)
    if ar.distribution != dapx.Distribution.create((n, n), nranks=size):
        raise AssertionError("the row blocks are not dapx's default layout")

    def timed(fn):
        comm.Barrier()
        t0 = time.perf_counter()
        out = fn()
        return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX), out

    variants = {
        "dapx 2x2": lambda: a2 @ b2,
        "dapx rows": lambda: ar @ br,
        "mpi4py SUMMA": lambda: mpi4py_summa(a2.local(), b2.local(), comm, 2),
        "mpi4py ring": lambda: mpi4py_ring(ar.local(), br.local(), comm),
    }
    # A full-size warm-up of every variant: the first large messages and the first touch of
    # the heap's pages cost up to a second, and would fall on whichever variant ran first.
    for fn in variants.values():
        fn()
    times, out = {}, {}
    names = list(variants)
    for name in names[turn % 4 :] + names[: turn % 4]:  # a different first variant per round
        times[name], out[name] = timed(variants[name])
    c2, cr, cs, cring = (out[name] for name in names)
    if c2.distribution.grid_shape != (2, 2) or cr.distribution != c2.distribution:
        layouts = f"{c2.distribution}, {cr.distribution}"
        raise AssertionError(f"dapx's products are not in 2 x 2 blocks: {layouts}")
    # Every rank checks its blocks against NumPy's (one BLAS thread: outside the timings).
    a_rows = matrix(0, i * h, (i + 1) * h, n)
    expected = a_rows @ matrix(1, 0, n, n, cols)
    for name, block in (("dapx 2x2", c2.local()), ("dapx rows", cr.local()), ("SUMMA", cs)):
        _close(name, block, expected)
    same_bits = comm.allreduce(bool(np.array_equal(c2.local(), cr.local())), op=MPI.LAND)
    if not same_bits:
        raise AssertionError("dapx's two runs on the same grid differ in their bits")
    like_mpi4py = comm.allreduce(bool(np.array_equal(c2.local(), cs)), op=MPI.LAND)
    del a_rows, expected
    _close("ring", cring, matrix(0, rank * q, (rank + 1) * q, n) @ matrix(1, 0, n, n))
    sums = {
        "dapx 2x2": c2.local().sum(),
        "dapx rows": cr.local().sum(),
        "mpi4py SUMMA": cs.sum(),
        "mpi4py ring": cring.sum(),
    }
    sums = {k: comm.allreduce(float(v), op=MPI.SUM) for k, v in sums.items()}
    if rank:
        return None
    return {"times": times, "sums": sums, "same_bits_as_mpi4py": like_mpi4py}


# -- the driver -----------------------------------------------------------------------------------


def _run(args: list[str], threads: int, mpi: bool = False) -> dict:
    return run_child(__file__, args, ranks=4 if mpi else 0, env={**ENV, **thread_env(threads)})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=("numpy", "mpi"))
    parser.add_argument("--turn", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    n = args.size
    if n % (4 * PIECES):
        parser.error(f"--size must be a multiple of {4 * PIECES}")
    if args.child:
        result = numpy_child(n) if args.child == "numpy" else mpi_child(n, args.turn)
        if result is not None:
            print(json.dumps(result))
        return 0

    size = ["--size", str(n)]
    times: dict[str, list[float]] = {}
    for k in range(args.rounds):
        results = {
            "numpy 2": _run([*size, "--child", "numpy"], threads=2),
            "mpi": _run([*size, "--child", "mpi", "--turn", str(k)], threads=1, mpi=True),
            "numpy 4": _run([*size, "--child", "numpy"], threads=4),
        }
        reference = results["numpy 2"]["sum"]
        sums = {"numpy 4": results["numpy 4"]["sum"], **results["mpi"]["sums"]}
        for name, total in sums.items():
            if not np.isclose(total, reference, rtol=1e-9, atol=1e-9 * n * n):
                raise AssertionError(f"{name}: the sum of the product is {total}, not {reference}")
        row = {"numpy 2": results["numpy 2"]["time"], "numpy 4": results["numpy 4"]["time"]}
        row.update(results["mpi"]["times"])
        for name, t in row.items():
            times.setdefault(name, []).append(t)
        bits = results["mpi"]["same_bits_as_mpi4py"]
        print(f"round {k + 1}: {json.dumps({v: round(t, 3) for v, t in row.items()})}")
        print(f"  dapx's product is bitwise the hand-written mpi4py SUMMA's: {bits}")

    print(f"\n{n} x {n} float64 a @ b, medians of {args.rounds} rounds (seconds; results checked)")
    print("mpiexec -n 4 (2 x 2 grid, 1 BLAS thread per rank) on a machine with 2 cores")
    for name, ts in times.items():
        line = f"  {name:<14}{statistics.median(ts):8.3f} s"
        if not name.startswith("numpy"):
            refs = [r for r in ("numpy 2", "numpy 4", "mpi4py SUMMA") if r != name]
            ratios = [statistics.median(t / r for t, r in zip(ts, times[ref])) for ref in refs]
            line += "   " + ", ".join(f"{x:.2f}x {ref}" for x, ref in zip(ratios, refs))
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
