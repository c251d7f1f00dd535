"""NumPy functions on distributed arrays: dapx next to NumPy, hand-written mpi4py and dask.

Run everything in one go (it starts ``mpiexec -n 2`` itself, once per round)::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 OMP_NUM_THREADS=1 \\
        python benchmarks/bench_functions.py [--size 10000000] [--rounds 3]

Targets (issue text), on 10^7 - 10^8 elements: ``np.unique``, ``np.isin``,
``np.histogram``, ``np.bincount``, ``np.hstack`` and ``np.flip`` within 1.5x
of NumPy on one array (4 simulated ranks) and of a hand-written mpi4py
version (``mpiexec -n 2``), printed beside dask.array.

Data: int64 uniform in [0, 10^6) for unique, isin (against 1,000 test values),
isin_dist (against n/10 test values held distributed: dapx never gathers them)
and bincount; standard normal float64 for histogram (100 bins), hstack (of
two such arrays) and flip. Every variant computes the same result and it is
checked (outside the timed region, on the warm-up calls) against NumPy.

The hand-written mpi4py versions (each process holds its block of the 1-d
block layout) are the natural SPMD codes:

* unique: local ``np.unique``, ``comm.allgather`` of the local uniques,
  ``np.unique`` of their concatenation (the result is on every process;
  dapx's is in even blocks);
* isin: local ``np.isin``;
* isin_dist: ``comm.allgather`` of the test set's blocks, local ``np.isin``
  (every process then holds the whole test set; dapx's exchanges keep each
  rank's memory near its share);
* histogram: global min and max in one ``Allreduce``, local ``np.histogram``
  with ``bins=100, range=(min, max)`` (NumPy's uniform-bin path), counts
  ``Allreduce``-d;
* bincount: global max by ``allreduce``, local ``np.bincount`` to that
  length, counts ``Allreduce``-d;
* hstack: the result in the 1-d block layout of its 2n elements; each
  process sends the parts of its blocks of a and b that other processes own
  straight from those blocks and receives straight into its result block
  (one ``Alltoallv`` for a, one for b);
* flip: dapx's ``np.flip`` returns a new array (NumPy's is a view): a
  flipped block axis mirrors its block boundaries, so every rank receives
  the block of its mirrored rank, reversed (for sizes divisible by the rank
  count that is the ordinary block layout again; checked). The same work in
  NumPy is a flipped copy, ``np.flip(x).copy()``, and by hand an exchange of
  blocks between ranks r and P-1-r (one ``Sendrecv``) and a local flip view
  of the received block. (Comparing with NumPy's O(1) view would compare a
  copy of 10^7 elements with none.)

dask.array: ``da.from_array(x, chunks=len(x) // 4)``, threaded scheduler
with 2 workers. Results that are arrays as large as the input (isin, hstack,
flip) are ``persist()``-ed (chunks stay in memory, as dapx's blocks do);
unique, histogram and bincount are ``compute()``-d. The histogram gets its
``range`` precomputed (dask needs it).

Times are medians over interleaved rounds: in each round every function runs
in NumPy and dapx on 4 simulated ranks, then one ``mpiexec -n 2`` child runs
the hand-written and dapx MPI versions (after an untimed, checked warm-up;
each timed call follows a ``Barrier`` and its time is the slowest rank's),
then dask. Ratios are medians of the per-round ratios. ``--profile`` prints a
cProfile listing (by cumulative time) of each dapx call on simulated ranks.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import dapx

FUNCTIONS = ["unique", "isin", "isin_dist", "histogram", "bincount", "hstack", "flip"]
BINS = 100
CHILD_ENV = {
    "MALLOC_MMAP_MAX_": "0",
    "MALLOC_TRIM_THRESHOLD_": "68719476736",
    "OMP_NUM_THREADS": "1",
}
TARGET = 1.5


def make_data(n: int) -> dict[str, np.ndarray]:
    """The same data in every process: ints for the counting functions, floats for the rest."""
    rng = np.random.default_rng(0)
    return {
        "xi": rng.integers(0, 10**6, n),
        "xf": rng.standard_normal(n),
        "yf": rng.standard_normal(n),
        "test": np.random.default_rng(1).integers(0, 10**6, 1000),
        "big_test": np.random.default_rng(2).integers(0, 10**6, n // 10),
    }


def numpy_reference(d: dict) -> dict:
    """NumPy's results, computed independently where that is cheaper (unique by bincount)."""
    return {
        "unique": np.flatnonzero(np.bincount(d["xi"])),
        "isin": np.isin(d["xi"], d["test"]),
        "isin_dist": np.isin(d["xi"], d["big_test"]),
        "histogram": np.histogram(d["xf"], bins=BINS),
        "bincount": np.bincount(d["xi"]),
        "hstack": np.hstack([d["xf"], d["yf"]]),
        "flip": np.flip(d["xf"]),
    }


def _same(name: str, got, want) -> bool:
    if name == "histogram":
        return all(np.array_equal(g, w) for g, w in zip(got, want))
    return np.array_equal(got, want)


def _gathered(name: str, result):
    if name == "histogram":
        return tuple(r.gather() for r in result)
    return result.gather()


# -- NumPy and dapx on simulated ranks ------------------------------------------------------------


def numpy_calls(d: dict) -> dict:
    xi, xf, yf, test, big = d["xi"], d["xf"], d["yf"], d["test"], d["big_test"]
    return {
        "unique": lambda: np.unique(xi),
        "isin": lambda: np.isin(xi, test),
        "isin_dist": lambda: np.isin(xi, big),
        "histogram": lambda: np.histogram(xf, bins=BINS),
        "bincount": lambda: np.bincount(xi),
        "hstack": lambda: np.hstack([xf, yf]),
        "flip": lambda: np.flip(xf).copy(),  # dapx's flip is a new array: the same work
    }


def dapx_calls(ai, af, bf, test, big) -> dict:
    return {
        "unique": lambda: np.unique(ai),
        "isin": lambda: np.isin(ai, test),
        "isin_dist": lambda: np.isin(ai, big),
        "histogram": lambda: np.histogram(af, bins=BINS),
        "bincount": lambda: np.bincount(ai),
        "hstack": lambda: np.hstack([af, bf]),
        "flip": lambda: np.flip(af),
    }


def _timed(fn) -> float:
    t0 = time.perf_counter()
    result = fn()
    t = time.perf_counter() - t0
    del result
    return t


class Simulated:
    """NumPy on one array and dapx on 4 simulated ranks, checked on the warm-up calls."""

    def __init__(self, d: dict, reference: dict, profile: bool):
        backend = dapx.simulated(4)
        self.numpy = numpy_calls(d)
        ai, af, bf = (dapx.asarray(d[k], backend=backend) for k in ("xi", "xf", "yf"))
        big = dapx.asarray(d["big_test"], backend=backend)
        self.dapx = dapx_calls(ai, af, bf, d["test"], big)
        for name in FUNCTIONS:  # warm-up and checks
            if not _same(name, self.numpy[name](), reference[name]):
                raise AssertionError(f"NumPy {name} disagrees with the reference")
            got = self.dapx[name]()
            if not _same(name, _gathered(name, got), reference[name]):
                raise AssertionError(f"dapx (4 simulated ranks) {name} disagrees with NumPy")
            if name in ("hstack", "flip"):  # the block layout the hand-written versions build
                block = dapx.Distribution.create(got.shape, "b", nranks=4)
                if got.distribution != block:
                    raise AssertionError(f"dapx {name} is not in the block layout")
            del got
            if profile:
                _profile(f"dapx {name}, 4 simulated ranks", self.dapx[name])

    def round(self) -> dict[str, tuple[float, float]]:
        """One timed call of each function, NumPy then dapx."""
        return {name: (_timed(self.numpy[name]), _timed(self.dapx[name])) for name in FUNCTIONS}


def _profile(title: str, fn, top: int = 14) -> None:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumtime").print_stats(top)
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
    print(f"\n--- cProfile: {title}, by cumulative time ---")
    print("\n".join(lines[2:]), flush=True)


# -- under mpiexec -n 2: hand-written mpi4py and dapx on MPI --------------------------------------


def _even_bounds(size: int, nprocs: int) -> np.ndarray:
    counts = np.full(nprocs, size // nprocs, dtype=np.int64)
    counts[: size % nprocs] += 1
    return np.concatenate(([0], np.cumsum(counts)))


def _pin(comm) -> None:
    """Bind this rank to its own core, as ``mpiexec -bind-to core`` would (see bench_mpi.py)."""
    from mpi4py import MPI

    cores = sorted(os.sched_getaffinity(0))
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    if local.Get_size() <= len(cores):
        os.sched_setaffinity(0, {cores[local.Get_rank()]})
    local.Free()


def hand_calls(comm, xi, xf, yf, test, big, n: int) -> dict:
    """The hand-written SPMD versions on this process's blocks `xi`, `xf`, `yf` (of n in all)."""
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()

    def unique():
        return np.unique(np.concatenate(comm.allgather(np.unique(xi))))

    def isin():
        return np.isin(xi, test)

    def isin_dist():
        return np.isin(xi, np.concatenate(comm.allgather(big)))

    def histogram():
        ends = np.array([-xf.min(), xf.max()])
        comm.Allreduce(MPI.IN_PLACE, ends, op=MPI.MAX)
        hist, edges = np.histogram(xf, bins=BINS, range=(-ends[0], ends[1]))
        comm.Allreduce(MPI.IN_PLACE, hist, op=MPI.SUM)
        return hist, edges

    def bincount():
        length = comm.allreduce(int(xi.max()), op=MPI.MAX) + 1
        counts = np.bincount(xi, minlength=length)
        comm.Allreduce(MPI.IN_PLACE, counts, op=MPI.SUM)
        return counts

    # hstack: the result's block layout over 2n elements; a at [0, n), b at [n, 2n).
    src = _even_bounds(n, size)
    dst = _even_bounds(2 * n, size)

    def overlap(range_a, range_b):
        start, stop = max(range_a[0], range_b[0]), min(range_a[1], range_b[1])
        return start, max(stop - start, 0)

    plans = []
    for offset, block in ((0, xf), (n, yf)):
        held = [(offset + int(src[s]), offset + int(src[s + 1])) for s in range(size)]
        owned = [(int(dst[r]), int(dst[r + 1])) for r in range(size)]
        sends = [overlap(held[rank], owned[r]) for r in range(size)]  # from my block
        recvs = [overlap(owned[rank], held[s]) for s in range(size)]  # into my result
        scounts = np.array([c for _, c in sends], np.int64)
        sdispls = np.array([st - held[rank][0] if c else 0 for st, c in sends], np.int64)
        rcounts = np.array([c for _, c in recvs], np.int64)
        rdispls = np.array([st - owned[rank][0] if c else 0 for st, c in recvs], np.int64)
        plans.append((block, scounts, sdispls, rcounts, rdispls))
    lo, hi = owned[rank]

    def hstack():
        out = np.empty(hi - lo)
        for block, scounts, sdispls, rcounts, rdispls in plans:
            comm.Alltoallv(
                [block, (scounts, sdispls), MPI.DOUBLE], [out, (rcounts, rdispls), MPI.DOUBLE]
            )
        return out

    partner = size - 1 - rank

    def flip():
        recv = np.empty_like(xf)
        if partner == rank:
            recv[...] = xf
        else:
            comm.Sendrecv(xf, dest=partner, recvbuf=recv, source=partner)
        return np.flip(recv)

    return {
        "unique": unique,
        "isin": isin,
        "isin_dist": isin_dist,
        "histogram": histogram,
        "bincount": bincount,
        "hstack": hstack,
        "flip": flip,
    }


def mpi_part(n: int, rounds: int) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    _pin(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    backend = dapx.mpi()
    d = make_data(n)
    b = _even_bounds(n, size)
    mine = slice(int(b[rank]), int(b[rank + 1]))
    xi, xf, yf = (d[k][mine] for k in ("xi", "xf", "yf"))
    tb = _even_bounds(len(d["big_test"]), size)
    big = d["big_test"][int(tb[rank]) : int(tb[rank + 1])]
    hand = hand_calls(comm, xi, xf, yf, d["test"], big, n)
    ai, af, bf, bigd = (dapx.from_local(v, backend=backend) for v in (xi, xf, yf, big))
    dx = dapx_calls(ai, af, bf, d["test"], bigd)
    reference = numpy_reference(d) if rank == 0 else None

    # Warm-up calls, checked: dapx gathered against NumPy on rank 0; the hand-written
    # result against dapx's (same local block where the layouts agree, else gathered).
    failures = []
    for name in FUNCTIONS:
        comm.Barrier()
        h, x = hand[name](), dx[name]()
        whole = _gathered(name, x)
        if rank == 0 and not _same(name, whole, reference[name]):
            failures.append(f"dapx {name}")
        if name in ("unique", "histogram", "bincount"):
            ok = _same(name, h, whole)  # replicated results
        else:
            ok = np.array_equal(h, x.local())
        if not comm.allreduce(bool(ok), op=MPI.LAND):
            failures.append(f"hand-written {name}")
        del h, x, whole
    failures = comm.bcast(failures)
    if failures:
        raise AssertionError(f"results differ from NumPy's: {', '.join(failures)}")
    del reference

    times = {name: {"hand": [], "dapx": []} for name in FUNCTIONS}
    for _ in range(rounds):
        for name in FUNCTIONS:
            for key, fn in (("hand", hand[name]), ("dapx", dx[name])):
                comm.Barrier()
                t = _timed(fn)
                times[name][key].append(comm.allreduce(t, op=MPI.MAX))
    if rank == 0:
        med = {name: {k: statistics.median(v) for k, v in t.items()} for name, t in times.items()}
        print(json.dumps({"nranks": size, "times": med}))


def mpi_run(n: int) -> dict:
    """One timed round of the MPI part, in its own ``mpiexec -n 2``."""
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = {k: v for k, v in os.environ.items() if k != "DAPX_BACKEND"}
    env.update(CHILD_ENV)
    cmd = [
        str(mpiexec if mpiexec.exists() else "mpiexec"),
        "-n",
        "2",
        sys.executable,
        __file__,
        "--mpi-rank",
        "--size",
        str(n),
        "--rounds",
        "1",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["times"]


# -- dask.array -----------------------------------------------------------------------------------


class Dask:
    """dask.array on the same data, 4 chunks, threaded scheduler with 2 workers."""

    def __init__(self, d: dict, reference: dict):
        import dask
        import dask.array as da

        self.config = dask.config.set(scheduler="threads", num_workers=2)
        chunks = len(d["xi"]) // 4
        di, df, dg = (da.from_array(d[k], chunks=chunks) for k in ("xi", "xf", "yf"))
        test = d["test"]
        rng = (float(d["xf"].min()), float(d["xf"].max()))
        self.calls = {
            "unique": lambda: da.unique(di).compute(),
            "isin": lambda: da.isin(di, test).persist(),
            "isin_dist": lambda: da.isin(di, d["big_test"]).persist(),
            "histogram": lambda: dask.compute(*da.histogram(df, bins=BINS, range=rng)),
            "bincount": lambda: da.bincount(di).compute(),
            "hstack": lambda: da.hstack([df, dg]).persist(),
            "flip": lambda: da.flip(df).persist(),
        }
        with self.config:
            for name, fn in self.calls.items():  # warm-up and checks
                got = fn()
                if name in ("isin", "isin_dist", "hstack", "flip"):
                    got = got.compute()
                if not _same(name, got, reference[name]):
                    raise AssertionError(f"dask.array {name} disagrees with NumPy")

    def round(self) -> dict[str, float]:
        with self.config:
            return {name: _timed(fn) for name, fn in self.calls.items()}


# -- the report -----------------------------------------------------------------------------------


def _cell(t: float | None) -> str:
    return f"{'-':>11}" if t is None else f"{t:>11.4g}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10**7, help="elements per array")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--part", choices=["all", "simulated", "mpi", "dask"], default="all")
    parser.add_argument("--profile", action="store_true", help="cProfile the simulated dapx calls")
    # Set on the processes this script starts under mpiexec, not by hand.
    parser.add_argument("--mpi-rank", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    n, rounds = args.size, args.rounds
    if n % 4:
        parser.error("--size must be a multiple of 4 (even blocks for flip's block exchange)")
    dapx.config.gather_warning_threshold = 10**12
    if args.mpi_rank:
        mpi_part(n, rounds)
        return 0
    if not os.environ.get("MALLOC_MMAP_MAX_"):
        print("note: run with MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 (see above)")
    print(f"dapx {dapx.__version__}, NumPy {np.__version__}; {n:.0e} elements per array")
    start = time.perf_counter()
    d = make_data(n)
    reference = numpy_reference(d)
    parts = {"simulated", "mpi", "dask"} if args.part == "all" else {args.part}
    sim = Simulated(d, reference, args.profile) if "simulated" in parts else None
    dsk = Dask(d, reference) if "dask" in parts else None
    del reference
    runs: dict[str, list] = {"sim": [], "mpi": [], "dask": []}
    for r in range(rounds):  # every variant in every round, so all see the same machine
        if sim:
            runs["sim"].append(sim.round())
        if "mpi" in parts:
            runs["mpi"].append(mpi_run(n))
        if dsk:
            runs["dask"].append(dsk.round())
        print(f"round {r + 1}/{rounds} done ({time.perf_counter() - start:.0f} s)", flush=True)

    def med(values):
        return statistics.median(values) if values else None

    rows = {}
    for name in FUNCTIONS:
        sim_np = med([x[name][0] for x in runs["sim"]])
        sim_dx = med([x[name][1] for x in runs["sim"]])
        sim_ratio = med([x[name][1] / x[name][0] for x in runs["sim"]])
        mpi_hand = med([x[name]["hand"] for x in runs["mpi"]])
        mpi_dx = med([x[name]["dapx"] for x in runs["mpi"]])
        mpi_ratio = med([x[name]["dapx"] / x[name]["hand"] for x in runs["mpi"]])
        dask_t = med([x[name] for x in runs["dask"] if name in x])
        rows[name] = (sim_np, sim_dx, sim_ratio, mpi_hand, mpi_dx, mpi_ratio, dask_t)

    print(f"\n{n:.0e} elements, seconds, median of {rounds} interleaved rounds; results checked")
    head = ["NumPy", "dapx sim4", "ratio", "mpi4py -n2", "dapx mpi", "ratio", "dask"]
    print(f"{'function':<14}" + "".join(f"{h:>11}" for h in head))
    for name, row in rows.items():
        print(f"{name:<14}" + "".join(_cell(t) for t in row))
    print(f"\ntargets: dapx within {TARGET}x of NumPy (4 simulated) and of mpi4py (mpiexec -n 2)")
    for name, (_, _, sim_ratio, _, _, mpi_ratio, _) in rows.items():
        for label, ratio in (("sim4 vs NumPy", sim_ratio), ("mpi -n2 vs mpi4py", mpi_ratio)):
            if ratio is not None:
                verdict = "holds" if ratio <= TARGET else "MISSED"
                print(f"  {name:<14} {label:<18} {ratio:6.2f}x  {verdict}")
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
