"""Planning at scale: per-rank plans without a backend, and simulated-backend totals.

Run::

    python benchmarks/bench_planning.py [--repeat 3] [--max-ranks 1024]

Targets (issue 18, item 3):

* one rank's plan, built as a pure function of the distributions (no backend),
  at 4,096 ranks: a 2-D halo plan under 1 ms; a redistribution plan
  (block -> cyclic, and a 2-D block -> transposed grid) under 50 ms. The same at
  65,536 ranks is printed for the trend.
* on ``dapx.simulated(P)`` with 1,000 float64 per rank, plans included (caches
  cleared before each run), at P = 1,024: block -> cyclic under 2 s, the first
  ``update_halos`` of a 2-D array (halo 1, default grid) under 100 ms.

Every figure is the median of ``--repeat`` cold runs (plan caches cleared).
Correctness is asserted in the same run: a block -> cyclic redistribution and a
halo update on a small P are checked against NumPy, the per-rank plans built
here are checked to cover what their rank owns or receives, and every
simulated result is checked against NumPy.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

import dapx
from dapx import Distribution
from dapx.exchange import execute as execute_module
from dapx.exchange import halo as halo_module
from dapx.exchange import halo_segments
from dapx.exchange import plans as plans_module

PER_RANK = 1000


def clear_caches() -> None:
    """Forget every cached plan, so that each run builds its plans (cold)."""
    for f in (
        plans_module.exchange_plan,
        plans_module._cached_dim_sends,
        plans_module._cached_dim_recvs,
        plans_module.many_pieces,
        execute_module._all_flat,
        halo_module.halo_plan,
        halo_module._cached_plan,
        halo_module._class_pieces,
        halo_segments.dim_class,
        halo_segments.dim_segments,
        halo_segments.copiers,
        halo_module._copies_across,
        halo_module._no_counts,
    ):
        f.cache_clear()


def timed(f, repeat: int) -> float:
    """Median seconds of `repeat` cold calls of `f`."""
    times = []
    for _ in range(repeat):
        clear_caches()
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def square(nranks: int) -> tuple[int, int]:
    n = max(round(math.sqrt(PER_RANK * nranks)), 1)
    return n, n


# -- per-rank plans without a backend -------------------------------------------------------------


def per_rank_rows(nranks: int, repeat: int) -> list[tuple[str, float, float]]:
    """(name, seconds, target) of one rank's plans of an `nranks`-rank distribution."""
    rank = nranks // 2 + 3  # an interior rank: it has every kind of neighbour
    rows = []
    halo = Distribution.create(square(nranks), grid=None, nranks=nranks, halo=1)
    kinds = ("nearest",) * 2

    def halo_plan():
        plan = halo_module.halo_plan(halo, kinds, (rank,))
        assert plan.recvcounts[rank].sum() > 0 and len(plan.sends[rank][1]) > 0
        return plan

    rows.append((f"halo plan (2-D, grid {halo.grid_shape})", timed(halo_plan, repeat), 1e-3))

    size = PER_RANK * nranks
    block = Distribution.create(size, "b", nranks=nranks)
    cyclic = Distribution.create(size, "c", nranks=nranks)

    def cyclic_plan():
        plan = plans_module.exchange_plan(block, cyclic, (rank,))
        assert sum(math.prod(p.shape) for p in plan.sends[rank].values()) == PER_RANK
        assert sum(math.prod(p.shape) for p in plan.recvs[rank].values()) == PER_RANK
        return plan

    def cyclic_flat():
        sends = plans_module.flat_sends(block, cyclic, rank)
        recvs = plans_module.flat_recvs(block, cyclic, rank)
        assert sends.counts.sum() == PER_RANK and recvs.counts.sum() == PER_RANK
        np.testing.assert_array_equal(np.sort(sends.index), np.arange(PER_RANK))

    rows.append(("block -> cyclic plan (pieces)", timed(cyclic_plan, repeat), 50e-3))
    rows.append(("block -> cyclic plan (flat)", timed(cyclic_flat, repeat), 50e-3))

    shape = square(nranks)
    grid = transposable_grid(nranks)
    src = Distribution.create(shape, grid=grid)
    dst = Distribution.create(shape, grid=grid[::-1])

    def transpose_plan():
        plan = plans_module.exchange_plan(src, dst, (rank,))
        owned = math.prod(dst.local_shape(rank))
        assert sum(math.prod(p.shape) for p in plan.recvs[rank].values()) == owned
        return plan

    rows.append((f"2-D block {grid} -> {grid[::-1]} plan", timed(transpose_plan, repeat), 50e-3))
    return rows


def transposable_grid(nranks: int) -> tuple[int, int]:
    """A 2-D grid of `nranks` whose transpose is a different grid (p x 4p when possible)."""
    p = math.isqrt(nranks // 4)
    while p > 1 and nranks % p:
        p -= 1
    return p, nranks // p


# -- simulated-backend totals -------------------------------------------------------------------


def simulated_rows(nranks: int, repeat: int) -> tuple[float, float]:
    """Seconds of block -> cyclic and of the first update_halos on ``simulated(nranks)``."""
    backend = dapx.simulated(nranks)
    x = np.arange(PER_RANK * nranks, dtype=np.float64)
    a = dapx.asarray(x, backend=backend)
    result = {}

    def to_cyclic():
        result["c"] = a.redistribute("c")

    t_cyclic = timed(to_cyclic, repeat)
    c = result["c"]
    for r in (0, nranks // 2, nranks - 1):
        np.testing.assert_array_equal(c.local(r), x[r::nranks])
    np.testing.assert_array_equal(c.gather(), x)

    y = np.arange(math.prod(square(nranks)), dtype=np.float64).reshape(square(nranks))
    h = dapx.asarray(y, backend=backend, halo=1)

    def first_update():
        h.update_halos("nearest")

    t_halo = timed(first_update, repeat)
    padded = np.pad(y, 1, mode="edge")
    for r in (0, nranks // 2, nranks - 1):
        idx = [np.asarray(g) + 1 for g in h.distribution.global_indices(r)]
        np.testing.assert_array_equal(h.local(r), padded[np.ix_(*idx)])
    return t_cyclic, t_halo


def check_small() -> None:
    """Redistributions and a halo update on small P, against NumPy."""
    for nranks in (3, 8):
        backend = dapx.simulated(nranks)
        x = np.random.default_rng(nranks).standard_normal((24, 10))
        a = dapx.asarray(x, backend=backend)
        for dist in ("c", ("c", "b"), ("b", "c")):
            b = a.redistribute(dist)
            np.testing.assert_array_equal(b.gather(), x)
            for r in backend.local_ranks:
                np.testing.assert_array_equal(
                    b.local(r), x[np.ix_(*b.distribution.global_indices(r))]
                )
        h = dapx.asarray(x, backend=backend, halo=1)
        h.update_halos("reflect")
        padded = np.pad(x, 1, mode="symmetric")
        for r in backend.local_ranks:
            idx = [np.asarray(g) + 1 for g in h.distribution.global_indices(r)]
            np.testing.assert_array_equal(h.local(r), padded[np.ix_(*idx)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-ranks", type=int, default=1024)
    args = parser.parse_args()
    check_small()
    print("per-rank plans, no backend (median of cold builds)")
    print(f"{'ranks':>7}  {'plan':<44} {'ms':>9} {'target ms':>10}")
    failed = []
    for nranks in (4096, 65536):
        for name, seconds, target in per_rank_rows(nranks, args.repeat):
            mark = "" if seconds < target else "  (over)"
            if nranks == 4096 and seconds >= target:
                failed.append(f"{name} at {nranks}: {seconds * 1e3:.2f} ms")
            print(f"{nranks:>7}  {name:<44} {seconds * 1e3:9.3f} {target * 1e3:10.1f}{mark}")
    print()
    print(f"simulated backend, {PER_RANK} float64 per rank, plans included (median, cold)")
    print(f"{'P':>6} {'block -> cyclic s':>18} {'first update_halos s':>21}")
    for nranks in (4, 16, 64, 256, 1024, 4096):
        if nranks > args.max_ranks:
            break
        t_cyclic, t_halo = simulated_rows(nranks, args.repeat)
        print(f"{nranks:>6} {t_cyclic:18.4f} {t_halo:21.4f}")
        if nranks == 1024:
            if t_cyclic >= 2.0:
                failed.append(f"block -> cyclic at 1024: {t_cyclic:.2f} s")
            if t_halo >= 0.1:
                failed.append(f"update_halos at 1024: {t_halo * 1e3:.0f} ms")
    print()
    print("targets missed: " + ("; ".join(failed) if failed else "none"))


if __name__ == "__main__":
    main()
