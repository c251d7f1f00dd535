"""Cholesky and LU ``solve``: dapx under ``mpiexec -n 4`` (a 2 x 2 grid) vs one-process NumPy.

Run everything in one go (it starts every variant in its own processes, once per round)::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 \\
    python benchmarks/bench_factorizations.py [--size 4096] [--rounds 3]

Target (issue 17): ``np.linalg.cholesky`` and ``np.linalg.solve`` of a 4096 x
4096 float64 matrix within 1.5x of one-process LAPACK given the same total
threads. dapx runs on a 2 x 2 block-cyclic grid (``nb = 128``, the matrices
already in that layout), one BLAS thread per rank (``OMP_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1``). Four ranks oversubscribe this 2-core machine, so
NumPy runs twice: with 4 threads (the same total) and with 2 (the cores
there are).

The matrices are functions of the global indices, so each rank builds its own
blocks: a symmetric, strictly diagonally dominant (hence positive-definite)
``A`` for Cholesky and a Gaussian non-symmetric ``M`` (pivoting needed; each
block of ``nb`` rows drawn from its own seed)
for ``solve`` with a right-hand side of ones. Each variant factors once
before its timed run (the first large messages and first-touched heap pages
cost up to a second); the rounds interleave NumPy 2, dapx and NumPy 4, and
dapx alternates which of its two functions runs first. Checks, asserted in
every round: dapx's ``L`` satisfies ``L (L^T v) = A v`` for a random ``v``
(relative error below ``1e-12``, computed distributed), its solution has a
residual ``||M x - b|| / (||M|| ||x||)`` below ``n eps``, and the sums of
``diag(L)`` and of ``x`` match NumPy's. Times are the slowest rank's; figures
are medians over rounds, ratios the medians of per-round ratios.
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
NB = 128


def spd_entries(rows: np.ndarray, cols: np.ndarray, n: int) -> np.ndarray:
    """Entries of the symmetric positive-definite ``A``: ``n I`` plus terms of size <= 1."""
    i, j = rows[:, None], cols[None, :]
    return np.cos(1e-3 * (i * i + j * j) + 0.37 * np.abs(i - j)) + n * (i == j)


def general_entries(rows: np.ndarray, cols: np.ndarray, n: int) -> np.ndarray:
    """Entries of the non-symmetric ``M``: standard normals, each block of rows its own seed."""
    out = np.empty((len(rows), len(cols)))
    for first in range(0, len(rows), NB):  # `rows` holds whole blocks of NB rows (n % NB == 0)
        block = rows[first] // NB
        out[first : first + NB] = np.random.default_rng(block).standard_normal((NB, n))[:, cols]
    return out


# -- one-process NumPy ----------------------------------------------------------------------------


def numpy_child(n: int) -> dict:
    idx = np.arange(n)
    a, m, b = spd_entries(idx, idx, n), general_entries(idx, idx, n), np.ones(n)
    np.linalg.cholesky(a), np.linalg.solve(m, b)  # warm-up at full size
    t0 = time.perf_counter()
    low = np.linalg.cholesky(a)
    t1 = time.perf_counter()
    x = np.linalg.solve(m, b)
    t2 = time.perf_counter()
    residual = np.linalg.norm(m @ x - b) / (np.linalg.norm(m) * np.linalg.norm(x))
    if residual > n * np.finfo(float).eps:
        raise AssertionError(f"numpy: solve's residual is {residual}")
    return {
        "cholesky": t1 - t0,
        "solve": t2 - t1,
        "diag": float(np.diagonal(low).sum()),
        "xsum": float(x.sum()),
    }


# -- under mpiexec -n 4 ---------------------------------------------------------------------------


def mpi_child(n: int, turn: int) -> dict | None:
    from mpi4py import MPI

    import dapx

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if comm.Get_size() != 4:
        raise SystemExit("run the MPI part under mpiexec -n 4 (a 2 x 2 grid)")
    backend = dapx.mpi()
    spec = {"dist": "c", "block_size": NB}
    a = dapx.zeros((n, n), dist=(spec, spec), grid=(2, 2), backend=backend)
    m = dapx.zeros((n, n), dist=(spec, spec), grid=(2, 2), backend=backend)
    d = a.distribution
    i, j = d.coords(rank)
    rows, cols = d.maps[0].global_indices(i), d.maps[1].global_indices(j)
    a.local()[...] = spd_entries(rows, cols, n)
    m.local()[...] = general_entries(rows, cols, n)
    b = dapx.ones(n, backend=backend)

    def timed(fn):
        comm.Barrier()
        t0 = time.perf_counter()
        out = fn()
        return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX), out

    variants = {
        "dapx cholesky": lambda: np.linalg.cholesky(a),
        "dapx solve": lambda: np.linalg.solve(m, b),
    }
    for fn in variants.values():  # warm-up
        fn()
    names = list(variants)
    names = names[turn % 2 :] + names[: turn % 2]
    times, out = {}, {}
    for name in names:
        times[name], out[name] = timed(variants[name])
    low, x = out["dapx cholesky"], out["dapx solve"]
    if low.distribution != a.distribution:
        raise AssertionError(f"L is not in A's block-cyclic layout: {low.distribution}")
    # L (L^T v) = A v, distributed (SUMMA products), against a random v.
    v = dapx.asarray(np.random.default_rng(0).standard_normal(n), backend=backend)
    av = (a @ v).gather()
    error = np.linalg.norm((low @ (low.T @ v)).gather() - av) / np.linalg.norm(av)
    if error > 1e-12:
        raise AssertionError(f"dapx cholesky: ||L L^T v - A v|| / ||A v|| = {error}")
    xs = x.gather()
    residual = np.linalg.norm((m @ x).gather() - 1.0) / (
        float(np.linalg.norm(m).gather()) * np.linalg.norm(xs)
    )
    if residual > n * np.finfo(float).eps:
        raise AssertionError(f"dapx solve: the residual is {residual}")
    diag = float(np.diagonal(low).sum().gather())
    if rank:
        return None
    return {"times": times, "diag": diag, "xsum": float(xs.sum()), "residual": float(residual)}


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
    if n % (2 * NB):
        parser.error(f"--size must be a multiple of {2 * NB}")
    if args.child:
        result = numpy_child(n) if args.child == "numpy" else mpi_child(n, args.turn)
        if result is not None:
            print(json.dumps(result))
        return 0

    size = ["--size", str(n)]
    times: dict[str, list[float]] = {}
    for k in range(args.rounds):
        np2 = _run([*size, "--child", "numpy"], threads=2)
        mpi = _run([*size, "--child", "mpi", "--turn", str(k)], threads=1, mpi=True)
        np4 = _run([*size, "--child", "numpy"], threads=4)
        for ref in (np2, np4):  # dapx's answers against NumPy's
            for key in ("diag", "xsum"):
                if not np.isclose(mpi[key], ref[key], rtol=1e-10):
                    raise AssertionError(f"{key}: dapx {mpi[key]}, numpy {ref[key]}")
        row = {f"numpy 2 {f}": np2[f] for f in ("cholesky", "solve")}
        row.update({f"numpy 4 {f}": np4[f] for f in ("cholesky", "solve")})
        row.update(mpi["times"])
        for name, t in row.items():
            times.setdefault(name, []).append(t)
        print(f"round {k + 1}: {json.dumps({v: round(t, 3) for v, t in row.items()})}")

    print(f"\n{n} x {n} float64, medians of {args.rounds} rounds (seconds; results checked)")
    print("mpiexec -n 4 (2 x 2 grid, nb = 128, 1 BLAS thread per rank) on a 2-core machine")
    for name, ts in times.items():
        line = f"  {name:<18}{statistics.median(ts):8.3f} s"
        if name.startswith("dapx"):
            f = name.split()[1]
            refs = [f"numpy 2 {f}", f"numpy 4 {f}"]
            ratios = [statistics.median(t / r for t, r in zip(ts, times[ref])) for ref in refs]
            line += "   " + ", ".join(f"{x:.2f}x {ref}" for x, ref in zip(ratios, refs))
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
