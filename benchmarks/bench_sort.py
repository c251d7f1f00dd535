"""dapx's sample sort and unique next to hand-written mpi4py programs (and dask.array).

Run with::

    OMP_NUM_THREADS=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 \\
        .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/bench_sort.py

Every rank runs every variant; rank 0 prints. Each rank is bound to its own
core. After a warm-up, variants are interleaved over several rounds; each
timed call follows a ``Barrier``, each timing is the maximum over ranks, and
the median of those maxima is printed with its ratio to the hand-written one.

* ``np.sort`` of N float64 (standard normal, N/P per rank, block layout)
  against a plain mpi4py sample sort: local ``np.sort``, P - 1 regular samples
  per rank, ``allgather``, P - 1 splitters, ``Alltoall`` of the counts,
  ``Alltoallv``, ``np.sort`` of what arrived. Its result stays in the bucket
  layout (sizes differ by a few percent); dapx moves its buckets back to the
  input's even blocks, which the hand-written program does not do.
* ``np.unique`` of N int64 uniform in [0, 1000) (heavy duplicates) against
  local ``np.unique``, ``allgather`` of the local uniques and ``np.unique`` of
  their concatenation (its result is on every process; dapx's is a
  distributed array in even blocks).
* dask.array has no distributed sort (no ``dask.array.sort``; only ``topk``
  and ``argtopk``), so only ``da.unique`` is timed: on rank 0 alone, threaded
  scheduler with P workers, one chunk per rank, while the other ranks wait in
  a sleeping barrier.

Results are asserted: the full sorted array (gathered on rank 0) equals
``np.sort`` of the full input for both programs, and the unique values equal
``np.unique`` of the full input. ``--n`` sets N (default 10^8).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from mpi4py import MPI

import dapx

COMM = MPI.COMM_WORLD
RANK, P = COMM.Get_rank(), COMM.Get_size()


def _sleeping_barrier() -> None:
    """A barrier that sleeps while it waits, leaving the cores to whoever is working."""
    req = COMM.Ibarrier()
    while not req.Test():
        time.sleep(1e-3)


def _pin() -> None:
    """Bind this rank to its own core (unbound, two ranks now and then share one)."""
    cores = sorted(os.sched_getaffinity(0))
    local = COMM.Split_type(MPI.COMM_TYPE_SHARED)
    if local.Get_size() <= len(cores):
        os.sched_setaffinity(0, {cores[local.Get_rank()]})
    local.Free()


def mpi_sample_sort(x: np.ndarray) -> np.ndarray:
    """A plain sample sort: this rank's bucket of the sorted array."""
    s = np.sort(x)
    samples = s[(np.arange(1, P) * s.size) // P]
    pool = np.sort(np.concatenate(COMM.allgather(samples)))
    splitters = pool[(np.arange(1, P) * pool.size) // P]
    cuts = np.concatenate(([0], np.searchsorted(s, splitters, side="right"), [s.size]))
    counts = np.diff(cuts).astype(np.int64)
    recvcounts = np.empty(P, np.int64)
    COMM.Alltoall(counts, recvcounts)
    received = np.empty(int(recvcounts.sum()), s.dtype)
    sdispls = cuts[:-1].astype(np.int64)
    rdispls = np.concatenate(([0], np.cumsum(recvcounts)[:-1])).astype(np.int64)
    COMM.Alltoallv([s, counts, sdispls, MPI.DOUBLE], [received, recvcounts, rdispls, MPI.DOUBLE])
    received.sort()
    return received


def mpi_unique(x: np.ndarray) -> np.ndarray:
    """Local unique, allgather of the local uniques, unique of those (on every rank)."""
    return np.unique(np.concatenate(COMM.allgather(np.unique(x))))


def timed(func) -> float:
    COMM.Barrier()
    t0 = time.perf_counter()
    func()
    elapsed = time.perf_counter() - t0
    return COMM.allreduce(elapsed, op=MPI.MAX)


def interleaved(variants: dict, rounds: int) -> dict:
    for func in variants.values():  # warm-up
        func()
    times = {name: [] for name in variants}
    for _ in range(rounds):
        for name, func in variants.items():
            times[name].append(timed(func))
    return {name: statistics.median(t) for name, t in times.items()}


def gather_full(block: np.ndarray) -> np.ndarray | None:
    """The concatenation of every rank's block, on rank 0 (rank order)."""
    sizes = COMM.gather(block.size)
    full = np.empty(sum(sizes), block.dtype) if RANK == 0 else None
    COMM.Gatherv(block, [full, sizes] if RANK == 0 else None)
    return full


def check_sort(x: np.ndarray, dapx_result, mine: np.ndarray) -> None:
    full = gather_full(x)
    ours = gather_full(np.ascontiguousarray(dapx_result.local()))
    theirs = gather_full(mine)
    if RANK == 0:
        expected = np.sort(full)
        assert np.array_equal(ours, expected), "dapx's sort differs from np.sort"
        assert np.array_equal(theirs, expected), "the hand-written sort differs from np.sort"
    sizes = COMM.allgather(dapx_result.local().size)
    assert max(sizes) - min(sizes) <= 1, f"dapx's sorted blocks are not even: {sizes}"


def check_unique(xi: np.ndarray, dapx_result, mine: np.ndarray) -> None:
    full = gather_full(xi)
    ours = gather_full(np.ascontiguousarray(dapx_result.local()))
    if RANK == 0:
        expected = np.unique(full)
        assert np.array_equal(ours, expected), "dapx's unique differs from np.unique"
        assert np.array_equal(mine, expected), "the hand-written unique differs"


def dask_unique(xi: np.ndarray, rounds: int) -> float | None:
    """da.unique on rank 0 (threaded, P workers) over the same data, one chunk per rank."""
    full = gather_full(xi)
    result = None
    if RANK == 0:
        import dask
        import dask.array as da

        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
        d = da.from_array(full, chunks=xi.size)
        with dask.config.set(scheduler="threads", num_workers=P):
            expected = np.unique(full)
            assert np.array_equal(da.unique(d).compute(), expected), "dask's unique differs"
            times = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                da.unique(d).compute()
                times.append(time.perf_counter() - t0)
        result = statistics.median(times)
    _sleeping_barrier()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=float, default=1e8, help="global number of elements")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--distinct", type=int, default=1000, help="unique's value range")
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args()
    _pin()
    n = int(args.n)
    local_n = n // P + (n % P > RANK)
    rng = np.random.default_rng(1234 + RANK)
    x = rng.standard_normal(local_n)
    xi = rng.integers(0, args.distinct, local_n)
    a, ai = dapx.from_local(x), dapx.from_local(xi)
    if RANK == 0:
        print(f"{P} ranks, N = {n:.0e}, {args.rounds} rounds (median of per-round max over ranks)")

    check_sort(x, np.sort(a), mpi_sample_sort(x))
    sort_times = interleaved(
        {"dapx np.sort": lambda: np.sort(a), "mpi4py sample sort": lambda: mpi_sample_sort(x)},
        args.rounds,
    )
    check_unique(xi, np.unique(ai), mpi_unique(xi))
    unique_times = interleaved(
        {"dapx np.unique": lambda: np.unique(ai), "mpi4py unique": lambda: mpi_unique(xi)},
        args.rounds,
    )
    dask_time = None if args.no_dask else dask_unique(xi, max(1, args.rounds // 2))
    if RANK == 0:
        s, m = sort_times["dapx np.sort"], sort_times["mpi4py sample sort"]
        print(f"sort float64     dapx {s:8.3f} s   mpi4py {m:8.3f} s   ratio {s / m:5.2f}x")
        print("                 dask.array: no distributed sort")
        u, mu = unique_times["dapx np.unique"], unique_times["mpi4py unique"]
        print(f"unique int64     dapx {u:8.3f} s   mpi4py {mu:8.3f} s   ratio {u / mu:5.2f}x")
        if dask_time is not None:
            ratio = u / dask_time
            print(f"                 dask.array {dask_time:8.3f} s   dapx/dask {ratio:5.2f}x")
        print("results checked against NumPy on the full arrays")


if __name__ == "__main__":
    main()
