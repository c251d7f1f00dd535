"""Metadata speed: `Distribution` index questions next to the NumPy code that answers them.

Run with::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 python benchmarks/bench_metadata.py

Each row does one piece of metadata work twice: with dapx, and with the
plain NumPy a hand-written program would use for the same answer (the
layout's parameters, e.g. the block bounds, precomputed as a program holds
them). The rows:

* ``global_indices(rank)`` of every rank of a 10^8-element dimension over
  1,024 ranks (block, irregular block, padded block, cyclic, block-cyclic,
  unstructured) and of a 4096^2 array on a 32 x 32 grid (block, cyclic),
  against the per-rank ``np.arange`` (or strided/outer ``np.arange``, or list
  lookup for the unstructured map, whose indices are stored) that builds the
  same arrays;
* ``owner(idx)`` of 10^7 random global indices, against ``np.searchsorted``
  on the bounds (block) and ``np.divmod`` (cyclic), which give the same ranks
  and local indices.

Every dapx answer is compared with its NumPy counterpart (``assert``) before
timing. Variants are interleaved over several rounds, after a warm-up, with
the order reversed every other round; the median of each and the ratio
dapx / NumPy are printed (target: <= 3x).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dapx import Distribution
from dapx.layout.maps import even_bounds

N = 10**8
P = 1024
N_OWNER = 10**7


# -- NumPy equivalents: the same per-rank arrays from the layout's parameters ----------------------
def _np_block(bounds, pad=0):
    """Block (padding `pad` on the inner edges only: DAP boundary padding at the ends)."""
    lo = np.maximum(bounds[:-1] - pad, 0).tolist()
    hi = np.minimum(bounds[1:] + pad, bounds[-1]).tolist()

    def run():
        return [np.arange(a, b) for a, b in zip(lo, hi)]

    return run


def _np_cyclic(n, p, bs=1):
    """Rank r holds blocks r, r + p, r + 2p, ... of `bs` indices (the last block may be short)."""
    if bs == 1:
        return lambda: [np.arange(r, n, p) for r in range(p)]
    within = np.arange(bs)

    def run():
        out = []
        for r in range(p):
            first = np.arange(r * bs, n, p * bs)
            idx = np.add.outer(first, within).reshape(-1)
            out.append(idx[: idx.size - max(0, int(idx[-1]) + 1 - n)] if idx.size else idx)
        return out

    return run


def _np_2d_block(shape, grid):
    rb, cb = (even_bounds(s, g).tolist() for s, g in zip(shape, grid))
    return lambda: [
        (np.arange(rb[i], rb[i + 1]), np.arange(cb[j], cb[j + 1]))
        for i in range(grid[0])
        for j in range(grid[1])
    ]


def _np_2d_cyclic(shape, grid):
    return lambda: [
        (np.arange(i, shape[0], grid[0]), np.arange(j, shape[1], grid[1]))
        for i in range(grid[0])
        for j in range(grid[1])
    ]


def _np_owner_block(bounds, idx):
    ranks = np.searchsorted(bounds, idx, "right") - 1
    return ranks, (idx - bounds[ranks],)


def _np_owner_cyclic(p, idx):
    local, ranks = np.divmod(idx, p)
    return ranks, (local,)


def _dapx_all_ranks(dist: Distribution):
    def run():
        out = [dist.global_indices(rank) for rank in range(dist.nranks)]
        return [idx[0] for idx in out] if dist.ndim == 1 else out

    return run


def _same(got, want) -> None:
    """Assert two (nested) lists / tuples of arrays are equal element by element."""
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    else:
        np.testing.assert_array_equal(got, want)


def rows() -> dict[str, tuple]:
    """Each row: (dapx callable, NumPy callable) computing the same thing."""
    block = Distribution.create(N, "b", grid=(P,))
    bounds = even_bounds(N, P)
    irregular = np.linspace(0, N, P + 1).astype(np.int64)
    perm = np.random.default_rng(0).permutation(N)
    splits = np.array_split(perm, P)
    del perm
    shape2, grid2 = (4096, 4096), (32, 32)
    idx = np.random.default_rng(1).integers(0, N, N_OWNER)
    cyclic = Distribution.create(N, "c", grid=(P,))
    return {
        # every rank's indices: dapx's per-rank arange vs the same aranges from the bounds
        "global_indices 1-D block": (_dapx_all_ranks(block), _np_block(bounds)),
        # the same with bounds given explicitly
        "global_indices irregular block": (
            _dapx_all_ranks(Distribution.create(N, {"dist": "b", "bounds": irregular}, grid=(P,))),
            _np_block(irregular),
        ),
        # padding 2 (DAP): 2 more indices on each inner edge
        "global_indices block padded 2": (
            _dapx_all_ranks(Distribution.create(N, "b", grid=(P,), padding=2)),
            _np_block(bounds, pad=2),
        ),
        # rank r holds r, r + P, ...: a strided arange
        "global_indices 1-D cyclic": (_dapx_all_ranks(cyclic), _np_cyclic(N, P)),
        # blocks of 7 dealt round-robin: an outer sum of block starts and offsets
        "global_indices block-cyclic 7": (
            _dapx_all_ranks(Distribution.create(N, "c", grid=(P,), block_size=7)),
            _np_cyclic(N, P, 7),
        ),
        # the indices are stored: both hand back the stored arrays
        "global_indices unstructured": (
            _dapx_all_ranks(Distribution.create(N, {"dist": "u", "indices": splits}, grid=(P,))),
            lambda: [splits[r] for r in range(P)],
        ),
        # one arange per axis and rank
        "global_indices 2-D 32x32 block": (
            _dapx_all_ranks(Distribution.create(shape2, grid=grid2)),
            _np_2d_block(shape2, grid2),
        ),
        "global_indices 2-D 32x32 cyclic": (
            _dapx_all_ranks(Distribution.create(shape2, "c", grid=grid2)),
            _np_2d_cyclic(shape2, grid2),
        ),
        # owner rank and local index of N_OWNER random indices: a search in the bounds
        f"owner {N_OWNER:.0e} idx, 1-D block": (
            lambda: block.owner((idx,)),
            lambda: _np_owner_block(bounds, idx),
        ),
        # ... and a division for the cyclic layout
        f"owner {N_OWNER:.0e} idx, 1-D cyclic": (
            lambda: cyclic.owner((idx,)),
            lambda: _np_owner_cyclic(P, idx),
        ),
    }


def main(rounds: int = 5) -> None:
    pairs = rows()
    for name, (dx, ref) in pairs.items():  # the same answers (also the warm-up)
        try:
            _same(dx(), ref())
        except AssertionError as exc:
            raise AssertionError(f"{name}: dapx and NumPy differ") from exc
    variants = {}
    for name, (dx, ref) in pairs.items():
        variants[(name, "numpy")] = ref
        variants[(name, "dapx")] = dx
    order = list(variants)
    times: dict[tuple, list[float]] = {key: [] for key in variants}
    for k in range(rounds):
        for key in order if k % 2 == 0 else order[::-1]:
            t0 = time.perf_counter()
            result = variants[key]()
            times[key].append(time.perf_counter() - t0)
            del result
    print(f"median of {rounds} rounds; ratio = dapx / NumPy (target <= 3x)")
    print(f"{'work':<34} {'numpy s':>10} {'dapx s':>10} {'ratio':>7}")
    for name in pairs:
        t_np = statistics.median(times[(name, "numpy")])
        t_dx = statistics.median(times[(name, "dapx")])
        print(f"{name:<34} {t_np:>10.4f} {t_dx:>10.4f} {t_dx / t_np:>7.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="10^7 indices, 3 rounds")
    args = parser.parse_args()
    if args.quick:
        N, N_OWNER = 10**7, 10**6
    main(3 if args.quick else args.rounds)
