"""Variances and means at the memory-bandwidth limit: dapx next to NumPy and mpi4py.

Run everything in one go (it starts ``mpiexec -n 2`` itself for the MPI part)::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 OMP_NUM_THREADS=1 \\
        .venv/bin/python benchmarks/bench_reductions.py [--size 40000000] [--rounds 7]

Target (issue 18, item 4): ``np.std`` of 4e7 block-distributed float64 under
``mpiexec -n 2`` in at most 0.6x the time of the hand-written two-pass mpi4py
program (``m = Allreduce(sum(x)) / n; d = x - m; d *= d; Allreduce(sum(d))``,
NumPy's own order of operations, one full-size temporary).

* Simulated part (one process, 4 simulated ranks): ``np.std``, ``np.nanstd`` (1 %
  NaNs), ``np.var(where=)`` and ``np.mean(dtype=float64)`` of float32 on dapx next
  to the same call on the whole NumPy array, and ``np.std`` next to the
  hand-written two-pass program on the whole array.
* MPI part (``mpiexec -n 2``, each rank bound to its own core): ``np.std`` and
  ``np.nanstd`` on dapx next to the hand-written two-pass program on the same
  local blocks (`dapx.from_local` wraps them without a copy).

Variants are warmed up, then interleaved round by round; the median of each is
printed (under MPI, of the slowest rank's time, a ``Barrier`` before each call).
Results are asserted: within ``rtol=1e-12`` of NumPy's (float64), and under MPI
bitwise equal to the simulated backend's result with the same grid (rank 0
rebuilds the whole array). The peak of Python-traced memory (NumPy reports its
allocations to `tracemalloc`) of one call of each variant is printed next to
its time, in MB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

import dapx

ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "68719476736", "OMP_NUM_THREADS": "1"}


def _hand_std(x: np.ndarray, n: int, allreduce=float) -> float:
    """Two-pass standard deviation in `numpy.std`'s order of operations."""
    m = allreduce(np.sum(x)) / n
    d = x - m
    np.multiply(d, d, out=d)
    return float(np.sqrt(allreduce(np.sum(d)) / n))


def _hand_nanstd(x: np.ndarray, allreduce=float) -> float:
    """Two-pass NaN-ignoring standard deviation as `numpy.nanstd` computes it."""
    mask = np.isnan(x)
    c = x.copy()
    c[mask] = 0
    cnt = allreduce(float(x.size - np.count_nonzero(mask)))
    c -= allreduce(np.sum(c)) / cnt
    c[mask] = 0
    np.multiply(c, c, out=c)
    return float(np.sqrt(allreduce(np.sum(c)) / cnt))


def _peak_mb(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def _interleaved(variants: dict, rounds: int, barrier=lambda: None) -> dict[str, list[float]]:
    for fn in variants.values():  # warm-up
        barrier()
        fn()
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            barrier()
            t0 = time.perf_counter()
            result = fn()
            times[name].append(time.perf_counter() - t0)
            del result
    return times


def _close(got, want, what: str) -> None:
    if not np.allclose(got, want, rtol=1e-12, atol=0):
        raise AssertionError(f"{what}: dapx {got!r} and NumPy {want!r} disagree")


# -- simulated ranks -------------------------------------------------------------------------
def simulated(n: int, ranks: int, rounds: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n) + 10.0
    xn = x.copy()
    xn[rng.random(n) < 0.01] = np.nan
    f32 = x.astype(np.float32)
    mask = rng.random(n) < 0.5
    backend = dapx.simulated(ranks)
    a, an, a32 = (dapx.asarray(v, backend=backend) for v in (x, xn, f32))
    am = dapx.asarray(mask, backend=backend)
    pairs = {
        "np.std": (lambda: np.std(x), lambda: np.std(a)),
        "np.nanstd": (lambda: np.nanstd(xn), lambda: np.nanstd(an)),
        "np.var(where=)": (lambda: np.var(x, where=mask), lambda: np.var(a, where=am)),
        "np.mean(f32, dtype=f8)": (
            lambda: np.mean(f32, dtype=np.float64),
            lambda: np.mean(a32, dtype=np.float64),
        ),
    }
    for name, (ref, got) in pairs.items():
        _close(float(got()), float(ref()), name)
    _close(_hand_std(x, n), np.std(x), "hand-written np.std")
    variants = {"hand-written two-pass std": lambda: _hand_std(x, n)}
    for name, (ref, got) in pairs.items():
        variants[f"numpy {name}"] = ref
        variants[f"dapx {name}"] = got
    peaks = {k: _peak_mb(fn) for k, fn in variants.items()}
    times = _interleaved(variants, rounds)
    med = {k: float(np.median(v)) for k, v in times.items()}
    print(f"{ranks} simulated ranks, {n:.0e} float64, medians of {rounds} interleaved rounds")
    print(f"  {'variant':<34} {'time s':>8} {'peak MB':>8} {'/ numpy':>8} {'/ hand':>7}")
    for k, t in med.items():
        name = k.split(" ", 1)[1]
        ref = med.get(f"numpy {name}")
        numpy_cell = f"{t / ref:8.2f}" if ref else f"{'-':>8}"
        hand = t / med["hand-written two-pass std"]
        hand_cell = f"{hand:7.2f}" if name == "np.std" or k.startswith("hand") else f"{'':>7}"
        print(f"  {k:<34} {t:8.4f} {peaks[k]:8.1f} {numpy_cell} {hand_cell}")


# -- MPI ---------------------------------------------------------------------------------------
def _bounds(n: int, p: int) -> np.ndarray:
    counts = np.full(p, n // p)
    counts[: n % p] += 1
    return np.concatenate(([0], np.cumsum(counts)))


def _block(n: int, p: int, r: int) -> np.ndarray:
    b = _bounds(n, p)
    x = np.random.default_rng([0, r]).standard_normal(int(b[r + 1] - b[r])) + 10.0
    x[np.random.default_rng([1, r]).random(x.size) < 0.01] = np.nan
    return x


def mpi_rank(n: int, rounds: int) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    cores = sorted(os.sched_getaffinity(0))
    if local.Get_size() <= len(cores):  # as mpiexec -bind-to core would
        os.sched_setaffinity(0, {cores[local.Get_rank()]})
    xn = _block(n, p, rank)
    x = np.where(np.isnan(xn), 10.0, xn)

    def allreduce(v):
        return comm.allreduce(float(v), op=MPI.SUM)

    a, an = dapx.from_local(x), dapx.from_local(xn)
    got = {"np.std": float(np.std(a)), "np.nanstd": float(np.nanstd(an))}
    hand = {"np.std": _hand_std(x, n, allreduce), "np.nanstd": _hand_nanstd(xn, allreduce)}
    if rank == 0:  # the same grid on simulated ranks: bitwise the same result
        whole = np.concatenate([_block(n, p, r) for r in range(p)])
        sim = dapx.asarray(whole, backend=dapx.simulated(p))
        assert float(np.nanstd(sim)) == got["np.nanstd"], "MPI and simulated nanstd differ"
        np.copyto(whole, 10.0, where=np.isnan(whole))
        sim = dapx.asarray(whole, backend=dapx.simulated(p))
        assert float(np.std(sim)) == got["np.std"], "MPI and simulated std differ"
        for k in got:
            _close(got[k], hand[k], k)
        del sim, whole
    comm.Barrier()
    variants = {
        "hand-written two-pass std": lambda: _hand_std(x, n, allreduce),
        "dapx np.std": lambda: np.std(a),
        "hand-written two-pass nanstd": lambda: _hand_nanstd(xn, allreduce),
        "dapx np.nanstd": lambda: np.nanstd(an),
    }
    peaks = {k: comm.allreduce(_peak_mb(fn), op=MPI.MAX) for k, fn in variants.items()}
    times = _interleaved(variants, rounds, comm.Barrier)
    arr = np.array([times[k] for k in variants])
    comm.Allreduce(MPI.IN_PLACE, arr, op=MPI.MAX)
    if rank == 0:
        med = {k: float(np.median(arr[i])) for i, k in enumerate(variants)}
        print(json.dumps({"median": med, "peak_mb": peaks}))


def mpi(n: int, rounds: int) -> None:
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = {k: v for k, v in os.environ.items() if k != "DAPX_BACKEND"} | ENV
    cmd = [str(mpiexec if mpiexec.exists() else "mpiexec"), "-n", "2", sys.executable]
    cmd += [__file__, "--mpi-rank", "--size", str(n), "--rounds", str(rounds)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    med, peaks = res["median"], res["peak_mb"]
    print(f"mpiexec -n 2, {n:.0e} float64, medians of {rounds} interleaved rounds (slowest rank)")
    print(f"  {'variant':<34} {'time s':>8} {'peak MB':>8} {'/ hand':>7}")
    for k, t in med.items():
        what = "nanstd" if "nanstd" in k else "std"
        ref = med[f"hand-written two-pass {what}"]
        print(f"  {k:<34} {t:8.4f} {peaks[k]:8.1f} {t / ref:7.2f}")
    ratio = med["dapx np.std"] / med["hand-written two-pass std"]
    print(f"  np.std: {ratio:.2f}x the hand-written two-pass program (target <= 0.6x)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=40_000_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ranks", type=int, default=4, help="simulated ranks")
    parser.add_argument("--skip-mpi", action="store_true")
    parser.add_argument("--mpi-rank", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.mpi_rank:
        mpi_rank(args.size, args.rounds)
        return 0
    missing = {k: v for k, v in ENV.items() if os.environ.get(k) != v}
    if missing:
        print(f"note: run with {' '.join(f'{k}={v}' for k, v in ENV.items())} for stable figures")
    simulated(args.size, args.ranks, args.rounds)
    if not args.skip_mpi:
        mpi(args.size, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
