"""dapx on the MPI backend next to hand-written mpi4py + NumPy SPMD code (and dask.array).

Run with::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 \\
        .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/bench_mpi.py

Every rank runs every variant; rank 0 prints. Variants are interleaved over
several rounds after a warm-up (for the redistributions, the checked first
call); every timed call follows a ``comm.Barrier()``, each timing is the
maximum over ranks (``Allreduce`` with ``MAX``), and the median of those
maxima is printed with its ratio to the hand-written program. Each rank is
bound to its own core first (``--no-pin`` to skip), as ``mpiexec -bind-to
core`` would do.

* ``a*b+c``, ``np.sum(a)``, ``np.std(a)`` on 4e7 block-distributed float64.
  The hand-written program works on the same local blocks (`dapx.from_local`
  wraps them without a copy): a local NumPy expression, a local sum and an
  ``Allreduce``, and a two-pass variance in NumPy's own order of operations
  (``d = x - mean; d *= d; d.sum()``) with two ``Allreduce``. Target: 1.1x.
* dask.array (threaded scheduler, same total size, one chunk per rank) is
  timed on rank 0 alone in a separate phase, while the other ranks wait in a
  sleeping ``Ibarrier`` (a spinning ``Barrier`` would take a core from dask).
  ``a*b+c`` is ``persist()``-ed (chunks stay in memory, as dapx's do);
  reductions are ``compute()``-d.
* Transpose-style redistribution of 8192 x 8192 float64 from row blocks to
  column blocks, and 1-D block -> cyclic of 1e8 float64, against
  ``Alltoallv`` with the same three steps as dapx (pack with one copy per
  destination, ``Alltoallv``, unpack with one copy per source). A second
  hand-written variant receives straight into the result (for these two
  layouts every source's piece is one contiguous run of the destination),
  the best an explicit program can do. Target: 1.5x of pack/unpack.
* Per-operation time of ``a + 1`` and ``np.sum(a)`` on 1,000 elements, in
  microseconds (targets: 10 us and 20 us), next to the hand-written ``x + 1``
  and local sum + ``Allreduce``. ``--small`` runs only these rows.

Results are checked before timing, and a mismatch raises on every rank:
reductions with ``np.allclose``, elementwise results and redistributions by
comparing every rank's local block with the hand-written one, plus a small
sample gathered on rank 0 and compared with ``np.array_equal`` to the values
the global index formula predicts.

Peak memory: for the large operations and the redistributions, the most
memory one call allocates on a rank (``tracemalloc``, which sees NumPy's
buffers, the result included; MPI's internal buffers are not seen), the
largest over ranks, in MB, for the hand-written program and dapx (one call
each, outside the timed rounds). Not for dask.array (rank 0 alone, threads).

``--profile`` adds a cProfile listing (rank 0) of the dapx redistributions
and of the small-array operations; ``--quick`` shrinks sizes and rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import time
import tracemalloc

import numpy as np
from mpi4py import MPI

import dapx

COMM = MPI.COMM_WORLD
RANK = COMM.Get_rank()
P = COMM.Get_size()
CORES = sorted(os.sched_getaffinity(0))


def _print(*args) -> None:
    if RANK == 0:
        print(*args, flush=True)


def _even_bounds(size: int, nprocs: int) -> np.ndarray:
    """Block boundaries as MPI codes (and dapx) split: the first ``size % nprocs`` get one more."""
    counts = np.full(nprocs, size // nprocs, dtype=np.int64)
    counts[: size % nprocs] += 1
    return np.concatenate(([0], np.cumsum(counts)))


def _displs(counts: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)


def _check(ok: bool, what: str) -> None:
    """Raise on every rank when `ok` is false on any rank (nobody is left in a collective)."""
    if not COMM.allreduce(bool(ok), op=MPI.LAND):
        raise AssertionError(f"dapx and the hand-written program disagree: {what}")


def _sleeping_barrier() -> None:
    """A barrier that sleeps while it waits, leaving the cores to whoever is working."""
    req = COMM.Ibarrier()
    while not req.Test():
        time.sleep(1e-3)


def _pin(enabled: bool) -> None:
    """Bind this rank to its own core, as ``mpiexec -bind-to core`` would.

    Unbound, the scheduler now and then puts both ranks on one core, and
    every collective then waits for a time slice (latencies jump 100-fold).
    """
    local = COMM.Split_type(MPI.COMM_TYPE_SHARED)
    if enabled and local.Get_size() <= len(CORES):
        os.sched_setaffinity(0, {CORES[local.Get_rank()]})
    local.Free()


@contextlib.contextmanager
def _all_cores():
    """Let this process (and the threads it starts) use every core for a while."""
    pinned = os.sched_getaffinity(0)
    os.sched_setaffinity(0, CORES)
    try:
        yield
    finally:
        os.sched_setaffinity(0, pinned)


def _interleaved(
    variants: dict, rounds: int, warmup: int = 1, batch: int = 1, budget: float = float("inf")
) -> tuple[dict[str, float], int]:
    """Median of the slowest rank's time of each call, variants interleaved round by round.

    Each round runs every variant `batch` times in a row (a Barrier before
    each timed call), so a variant's calls are not all disturbed by the one
    before; `warmup` untimed calls of each variant come first. After two
    rounds, no round starts that would end past `budget` seconds. Returns
    the medians and the number of rounds run.
    """
    for fn in variants.values():
        for _ in range(warmup):
            COMM.Barrier()
            result = fn()
            del result
    times = np.empty((len(variants), rounds * batch))
    start = time.perf_counter()
    done = 0
    while done < rounds:
        for k, fn in enumerate(variants.values()):
            for j in range(done * batch, (done + 1) * batch):
                COMM.Barrier()
                t0 = time.perf_counter()
                result = fn()
                times[k, j] = time.perf_counter() - t0
                del result
        done += 1
        elapsed = COMM.allreduce(time.perf_counter() - start, op=MPI.MAX)
        if done >= 2 and elapsed * (done + 1) / done > budget:
            break
    times = np.ascontiguousarray(times[:, : done * batch])
    COMM.Allreduce(MPI.IN_PLACE, times, op=MPI.MAX)
    return {name: float(np.median(times[k])) for k, name in enumerate(variants)}, done


def _peak_mb(fn) -> float:
    """Peak MB allocated during one call of `fn` (NumPy buffers included), the max over ranks."""
    COMM.Barrier()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    del result
    return COMM.allreduce(peak, op=MPI.MAX) / 1e6


def _row(name: str, values: list[float], ref: float, fmt: str = "9.4f") -> str:
    cells = " ".join(f"{v:>{fmt}}" if v == v else f"{'-':>9}" for v in values)
    return f"{name:<22} {cells} {values[1] / ref:>7.2f}"


# -- large elementwise operations and reductions ---------------------------------------------
def _sum_hand(x: np.ndarray) -> float:
    total = np.array([np.sum(x)])
    COMM.Allreduce(MPI.IN_PLACE, total, op=MPI.SUM)
    return float(total[0])


def _std_hand(x: np.ndarray, n: int) -> float:
    """Two-pass standard deviation in `numpy.std`'s order of operations."""
    s = np.array([np.sum(x)])
    COMM.Allreduce(MPI.IN_PLACE, s, op=MPI.SUM)
    d = x - s[0] / n
    np.multiply(d, d, out=d)
    ss = np.array([np.sum(d)])
    COMM.Allreduce(MPI.IN_PLACE, ss, op=MPI.SUM)
    return float(np.sqrt(ss[0] / n))


def large_ops(n: int, rounds: int) -> dict[str, float]:
    """Medians of the dapx and hand-written variants on `n` block-distributed float64."""
    bounds = _even_bounds(n, P)
    rng = np.random.default_rng([0, RANK])
    x, y, z = (rng.standard_normal(int(bounds[RANK + 1] - bounds[RANK])) for _ in range(3))
    a, b, c = (dapx.from_local(v) for v in (x, y, z))

    _check(np.array_equal((a * b + c).local(), x * y + z), "a*b+c")
    sums = (float(np.sum(a)), _sum_hand(x))
    stds = (float(np.std(a)), _std_hand(x, n))
    ok = np.allclose(*sums, rtol=1e-12) and np.allclose(*stds, rtol=1e-12)
    _check(ok, f"reductions: sum {sums}, std {stds}")

    pairs = {
        "a*b+c": (lambda: x * y + z, lambda: a * b + c),
        "np.sum(a)": (lambda: _sum_hand(x), lambda: np.sum(a)),
        "np.std(a)": (lambda: _std_hand(x, n), lambda: np.std(a)),
    }
    variants = {}
    for name, (hand, dx) in pairs.items():
        variants[f"hand {name}"] = hand
        variants[f"dapx {name}"] = dx
    peaks = {f"{key} MB": _peak_mb(fn) for key, fn in variants.items()}
    return {**_interleaved(variants, rounds)[0], **peaks}


def dask_large_ops(n: int, rounds: int) -> dict[str, float]:
    """dask.array on rank 0 alone (threaded scheduler, P chunks); others sleep in a barrier."""
    med: dict[str, float] = {}
    if RANK == 0:
        import dask
        import dask.array as da

        rng = np.random.default_rng(1)
        x, y, z = (rng.standard_normal(n) for _ in range(3))
        chunks = (tuple(np.diff(_even_bounds(n, P)).tolist()),)
        a, b, c = (da.from_array(v, chunks=chunks) for v in (x, y, z))
        variants = {
            "a*b+c": lambda: (a * b + c).persist(),
            "np.sum(a)": lambda: np.sum(a).compute(),
            "np.std(a)": lambda: np.std(a).compute(),
        }
        with _all_cores(), dask.config.set(scheduler="threads", num_workers=P):
            if not (
                np.allclose(variants["np.sum(a)"](), np.sum(x))
                and np.allclose(variants["np.std(a)"](), np.std(x))
                and np.allclose(variants["a*b+c"]().compute(), x * y + z)
            ):
                raise AssertionError("dask.array disagrees with NumPy")
            for fn in variants.values():
                fn()
            times: dict[str, list[float]] = {k: [] for k in variants}
            for _ in range(rounds):
                for name, fn in variants.items():
                    t0 = time.perf_counter()
                    result = fn()
                    times[name].append(time.perf_counter() - t0)
                    del result
        med = {k: float(np.median(v)) for k, v in times.items()}
        del a, b, c, x, y, z
    _sleeping_barrier()
    return med


# -- redistribution ---------------------------------------------------------------------------
def _alltoallv(send, scounts, rcounts, recv=None):
    if recv is None:
        recv = np.empty(int(rcounts.sum()), send.dtype)
    COMM.Alltoallv(
        [send, (scounts, _displs(scounts)), MPI.DOUBLE],
        [recv, (rcounts, _displs(rcounts)), MPI.DOUBLE],
    )
    return recv


def transpose(n: int, rounds: int, budget: float, profile: bool):
    """Row blocks -> column blocks of an n x n float64 array; x[i, j] = i * n + j."""
    rb = cb = _even_bounds(n, P)
    rows, cols = int(rb[RANK + 1] - rb[RANK]), int(cb[RANK + 1] - cb[RANK])
    x = np.arange(rb[RANK] * n, rb[RANK + 1] * n, dtype=np.float64).reshape(rows, n)
    a = dapx.from_local(x)
    widths, heights = np.diff(cb), np.diff(rb)
    scounts = rows * widths  # to every destination: my rows x its columns
    rcounts = heights * cols  # from every source: its rows x my columns

    def hand():
        send = np.empty(rows * n)
        for d in range(P):
            off, w = rows * int(cb[d]), int(widths[d])
            np.copyto(send[off : off + rows * w].reshape(rows, w), x[:, cb[d] : cb[d + 1]])
        recv = _alltoallv(send, scounts, rcounts)
        out = np.empty((n, cols))
        for s in range(P):
            off = int(rb[s]) * cols
            np.copyto(out[rb[s] : rb[s + 1]], recv[off : off + int(rcounts[s])].reshape(-1, cols))
        return out

    def hand_in_place():
        send = np.empty(rows * n)
        for d in range(P):
            off, w = rows * int(cb[d]), int(widths[d])
            np.copyto(send[off : off + rows * w].reshape(rows, w), x[:, cb[d] : cb[d + 1]])
        out = np.empty((n, cols))
        _alltoallv(send, scounts, rcounts, out.reshape(-1))
        return out

    def dx():
        return a.redistribute(("n", "b"), grid=(1, P))

    COMM.Barrier()
    t0 = time.perf_counter()
    result = dx()
    first = COMM.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    reference = hand()
    _check(np.array_equal(result.local(), reference), "transpose local blocks")
    _check(np.array_equal(hand_in_place(), reference), "transpose (in place) local blocks")
    ii = np.arange(0, n, 97)
    jj = np.arange(0, cols, 13)
    sample = COMM.gather((RANK, result.local()[np.ix_(ii, jj)]), root=0)
    if RANK == 0:
        for r, got in sample:
            want = ii[:, None] * n + (cb[r] + jj)[None, :]
            if not np.array_equal(got, want):
                raise AssertionError(f"transpose: rank {r}'s sample differs from x[i, j] = i*n + j")
    del result, reference
    if profile:
        _profile("transpose", dx)
    # the checked calls above were the warm-up (plans cached, pages touched)
    variants = {"hand": hand, "dapx": dx, "hand in place": hand_in_place}
    peaks = {f"{key} MB": _peak_mb(fn) for key, fn in variants.items()}
    med, done = _interleaved(variants, rounds, 0, budget=budget)
    return {**med, **peaks, "dapx first": first}, done


def block_to_cyclic(n: int, rounds: int, budget: float, profile: bool):
    """1-D block -> cyclic of n float64; x[g] = g."""
    b = _even_bounds(n, P)
    start, stop = int(b[RANK]), int(b[RANK + 1])
    x = np.arange(start, stop, dtype=np.float64)
    a = dapx.from_local(x)

    def count(lo, hi, d):  # global indices g in [lo, hi) with g % P == d
        first = lo + (d - lo) % P
        return max(0, (hi - first + P - 1) // P)

    scounts = np.array([count(start, stop, d) for d in range(P)], np.int64)
    rcounts = np.array([count(int(b[s]), int(b[s + 1]), RANK) for s in range(P)], np.int64)
    mine = count(0, n, RANK)
    soff, roff = _displs(scounts), _displs(rcounts)
    # where source s's first element lands in my cyclic block: ceil((b[s] - RANK) / P)
    dst_at = [max(0, -((RANK - int(b[s])) // P)) for s in range(P)]

    def hand():
        send = np.empty(stop - start)
        for d in range(P):
            k = int(scounts[d])
            np.copyto(send[soff[d] : soff[d] + k], x[(d - start) % P :: P])
        recv = _alltoallv(send, scounts, rcounts)
        out = np.empty(mine)
        for s in range(P):
            k = int(rcounts[s])
            np.copyto(out[dst_at[s] : dst_at[s] + k], recv[roff[s] : roff[s] + k])
        return out

    def hand_in_place():
        send = np.empty(stop - start)
        for d in range(P):
            k = int(scounts[d])
            np.copyto(send[soff[d] : soff[d] + k], x[(d - start) % P :: P])
        return _alltoallv(send, scounts, rcounts, np.empty(mine))

    def dx():
        return a.redistribute("c")

    COMM.Barrier()
    t0 = time.perf_counter()
    result = dx()
    first = COMM.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    reference = hand()
    _check(np.array_equal(result.local(), reference), "block -> cyclic local blocks")
    _check(np.array_equal(hand_in_place(), reference), "block -> cyclic (in place) local blocks")
    pos = np.arange(0, mine, 9973)
    sample = COMM.gather((RANK, pos, result.local()[pos]), root=0)
    if RANK == 0:
        for r, p, got in sample:
            if not np.array_equal(got, (p * P + r).astype(np.float64)):
                raise AssertionError(f"block -> cyclic: rank {r}'s sample differs from x[g] = g")
    del result, reference
    if profile:
        _profile("block -> cyclic", dx)
    # the checked calls above were the warm-up (plans cached, pages touched)
    variants = {"hand": hand, "dapx": dx, "hand in place": hand_in_place}
    peaks = {f"{key} MB": _peak_mb(fn) for key, fn in variants.items()}
    med, done = _interleaved(variants, rounds, 0, budget=budget)
    return {**med, **peaks, "dapx first": first}, done


# -- per-operation overhead -------------------------------------------------------------------
def overhead(n: int, calls: int, profile: bool) -> dict[str, float]:
    """Median per-call time of ``a + 1`` and ``np.sum(a)`` on `n` elements, dapx and by hand."""
    bounds = _even_bounds(n, P)
    x = np.random.default_rng([2, RANK]).standard_normal(int(bounds[RANK + 1] - bounds[RANK]))
    a = dapx.from_local(x)
    sums = (float(np.sum(a)), _sum_hand(x))
    if RANK == 0 and not np.allclose(*sums):
        raise AssertionError(f"np.sum of the small array disagrees: {sums}")
    _check(np.array_equal((a + 1).local(), x + 1), "a + 1 on the small array")
    variants = {
        "hand a + 1": lambda: x + 1,
        "dapx a + 1": lambda: a + 1,
        "hand np.sum(a)": lambda: _sum_hand(x),
        "dapx np.sum(a)": lambda: np.sum(a),
    }
    if profile:
        _profile("a + 1 (x1000)", lambda: [a + 1 for _ in range(1000)])
        _profile("np.sum(a) (x1000)", lambda: [np.sum(a) for _ in range(1000)])
    return _interleaved(variants, calls // 50, warmup=50, batch=50)[0]


def dask_overhead(n: int, calls: int) -> dict[str, float]:
    """The same small operations in dask.array on rank 0 alone (others sleep in a barrier)."""
    med: dict[str, float] = {}
    if RANK == 0:
        import dask
        import dask.array as da

        x = np.random.default_rng(3).standard_normal(n)
        d = da.from_array(x, chunks=(tuple(np.diff(_even_bounds(n, P)).tolist()),))
        variants = {
            "a + 1": lambda: (d + 1).persist(),
            "np.sum(a)": lambda: np.sum(d).compute(),
        }
        with _all_cores(), dask.config.set(scheduler="threads", num_workers=P):
            for name, fn in variants.items():
                fn()
                ts = []
                for _ in range(calls):
                    t0 = time.perf_counter()
                    fn()
                    ts.append(time.perf_counter() - t0)
                med[name] = float(np.median(ts))
    _sleeping_barrier()
    return med


def _profile(title: str, fn) -> None:
    COMM.Barrier()
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    COMM.Barrier()
    if RANK == 0:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
        lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
        print(f"\n--- cProfile (rank 0): {title}, by own time ---")
        print("\n".join(lines[2:]))


# -- report -----------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", action="store_true", help="cProfile dapx calls on rank 0")
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    parser.add_argument("--no-pin", action="store_true", help="do not bind ranks to cores")
    parser.add_argument("--small", action="store_true", help="only the per-operation rows")
    args = parser.parse_args()
    _pin(not args.no_pin)
    q = args.quick
    n_large, r_large = (4 * 10**6, 3) if q else (4 * 10**7, 5)
    n_t, n_c, r_redist, budget = (2048, 10**7, 3, 10.0) if q else (8192, 10**8, 5, 25.0)
    n_small, calls = 1000, (500 if q else 2000)

    backend = dapx.default_backend()
    if backend.name != "mpi" and P > 1:
        raise RuntimeError(f"expected the MPI backend under mpiexec, got {backend!r}")
    _print(
        f"dapx {dapx.__version__} on {backend!r} x {P} processes, MPI: "
        f"{MPI.Get_library_version().splitlines()[0].strip()}, "
        f"{'unbound' if args.no_pin else 'one core per rank'}"
    )
    _print("times: median over rounds of the slowest rank (s unless noted); ratio = dapx / hand")

    t0 = phase = time.perf_counter()

    def lap() -> str:
        nonlocal phase
        now = time.perf_counter()
        text = f"(this part: {now - phase:.0f} s)"
        phase = now
        return text

    if args.small:
        _small_rows(n_small, calls, args.profile, lap)
        _print(f"\ntotal {time.perf_counter() - t0:.0f} s")
        return
    dask_large = dask_large_ops(n_large, max(3, r_large - 2))
    large = large_ops(n_large, r_large)
    _print(
        f"\n{n_large:.0e} float64 over {P} ranks, median of {r_large} (dask: rank 0 alone, "
        f"{P} chunks, threads)"
    )
    _print(
        f"{'operation':<22} {'hand s':>9} {'dapx s':>9} {'dask s':>9} {'ratio':>7}  target"
        f"  {'hand MB':>8} {'dapx MB':>8}"
    )
    for name in ("a*b+c", "np.sum(a)", "np.std(a)"):
        h, d = large[f"hand {name}"], large[f"dapx {name}"]
        mb = f"  {large[f'hand {name} MB']:>8.1f} {large[f'dapx {name} MB']:>8.1f}"
        _print(_row(name, [h, d, dask_large.get(name, float("nan"))], h) + "  <= 1.10" + mb)
    _print(lap())

    rows = []
    for title, fn, size in (
        (f"transpose {n_t}x{n_t}", transpose, n_t),
        (f"block->cyclic {n_c:.0e}", block_to_cyclic, n_c),
    ):
        med, done = fn(size, r_redist, budget, args.profile)
        rows.append((title, med, done))
    _print(
        f"\nredistribution of float64 over {P} ranks, median of up to {r_redist} rounds "
        f"({budget:.0f} s budget each)"
    )
    _print(
        f"{'operation':<22} {'hand s':>9} {'dapx s':>9} {'in-place':>9} {'ratio':>7}  target"
        "  (ratio to in-place; rounds; dapx 1st call incl. plan)"
    )
    for title, med, done in rows:
        h, d, ip = med["hand"], med["dapx"], med["hand in place"]
        _print(
            _row(title, [h, d, ip], h)
            + f"  <= 1.50  ({d / ip:.2f}; {done}; {med['dapx first']:.2f} s)"
        )
    _print(
        f"{'peak MB (largest rank)':<35}"
        + " ".join(f"{h:>8}" for h in ("hand", "dapx", "in-place"))
    )
    for title, med, _ in rows:
        mb = [med[f"{key} MB"] for key in ("hand", "dapx", "hand in place")]
        _print(f"  {title:<32} " + " ".join(f"{v:>8.1f}" for v in mb))
    _print(lap())

    _small_rows(n_small, calls, args.profile, lap)
    _print(f"\ntotal {time.perf_counter() - t0:.0f} s")


#: The per-operation targets of issue 18 (microseconds, under mpiexec -n 2).
SMALL_TARGETS = {"a + 1": 10.0, "np.sum(a)": 20.0}


def _small_rows(n_small: int, calls: int, profile: bool, lap) -> None:
    small = overhead(n_small, calls, profile)
    dask_small = dask_overhead(n_small, max(20, calls // 20))
    _print(f"\nper-operation time on {n_small} float64 over {P} ranks, median of {calls} calls")
    _print(f"{'operation':<22} {'hand us':>9} {'dapx us':>9} {'dask us':>9} {'ratio':>7}  target")
    for name, target in SMALL_TARGETS.items():
        h, d = small[f"hand {name}"] * 1e6, small[f"dapx {name}"] * 1e6
        k = dask_small.get(name, float("nan")) * 1e6
        _print(_row(name, [h, d, k], h, "9.1f") + f"  dapx <= {target:.0f} us")
    _print(lap())


if __name__ == "__main__":
    main()
