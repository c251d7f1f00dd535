"""Hypothesis strategies for dapx maps and distributions.

Every strategy builds objects that are valid under the DAP v0.10 rules, so a
test that fails on one of them has found a bug in dapx, not in the strategy.

Block padding follows the spec: at a non-periodic edge of the grid a width is
boundary padding (inside the owned range, counted in ``size``); every other
width is communication padding, equal to its counterpart on the neighbouring
grid rank and no wider than what that neighbour owns.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from dapx.layout.distribution import Distribution
from dapx.layout.maps import BlockMap, CyclicMap, UnstructuredMap, even_bounds

__all__ = [
    "MAX_SIZE",
    "SETTINGS",
    "block_maps",
    "cyclic_maps",
    "dicts_equal",
    "distributions",
    "maps",
    "to_v09",
    "unstructured_maps",
]

MAX_SIZE = 50

#: Settings shared by the property tests: no deadline (first calls import
#: things), a moderate number of examples, and no example database on disk.
SETTINGS = settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

sizes = st.integers(0, MAX_SIZE)
nprocs_st = st.integers(1, 6)


def _size_and_nprocs(draw, size, nprocs):
    size = draw(sizes) if size is None else size
    nprocs = draw(nprocs_st) if nprocs is None else nprocs
    return size, nprocs


@st.composite
def block_bounds(draw, size: int, nprocs: int) -> np.ndarray:
    """Regular (`even_bounds`) or irregular (random cut points, empty blocks allowed)."""
    if draw(st.booleans()):
        return even_bounds(size, nprocs)
    cuts = draw(st.lists(st.integers(0, size), min_size=nprocs - 1, max_size=nprocs - 1))
    return np.array([0, *sorted(cuts), size], dtype=np.intp)


@st.composite
def block_paddings(draw, bounds: np.ndarray, periodic: bool) -> np.ndarray:
    """A valid ``(nprocs, 2)`` padding table for `bounds`."""
    counts = np.diff(bounds).astype(int)
    P = counts.size
    pad = np.zeros((P, 2), np.intp)
    # Communication padding: one width per interface between grid ranks r and r+1
    # (and P-1 -> 0 when periodic), no wider than either side owns.
    for r in range(P if periodic else P - 1):
        right = (r + 1) % P
        w = draw(st.integers(0, int(min(counts[r], counts[right]))))
        pad[r, 1] = w
        pad[right, 0] = w
    if not periodic:
        # Boundary padding lies inside the owned range of the edge ranks.
        lo = draw(st.integers(0, int(counts[0])))
        if P == 1:
            hi = draw(st.integers(0, int(counts[0]) - lo))
        else:
            hi = draw(st.integers(0, int(counts[-1])))
        pad[0, 0] = lo
        pad[-1, 1] = hi
    return pad


@st.composite
def block_maps(draw, size: int | None = None, nprocs: int | None = None) -> BlockMap:
    """Block maps: regular or irregular, unpadded or padded, periodic or not."""
    size, nprocs = _size_and_nprocs(draw, size, nprocs)
    bounds = draw(block_bounds(size, nprocs))
    periodic = draw(st.booleans())
    padding = draw(block_paddings(bounds, periodic)) if draw(st.booleans()) else None
    return BlockMap(size, bounds, padding=padding, periodic=periodic)


@st.composite
def cyclic_maps(draw, size: int | None = None, nprocs: int | None = None) -> CyclicMap:
    """Cyclic and block-cyclic maps, block_size 1..size+1 and ceil(size / nprocs)."""
    size, nprocs = _size_and_nprocs(draw, size, nprocs)
    block_size = draw(
        st.one_of(
            st.just(1),
            st.integers(1, size + 1),
            st.just(max(1, math.ceil(size / nprocs))),
        )
    )
    return CyclicMap(size, nprocs, block_size)


@st.composite
def unstructured_maps(
    draw,
    size: int | None = None,
    nprocs: int | None = None,
    one_to_one: bool | None = None,
) -> UnstructuredMap:
    """Unstructured maps: a random permutation split over the ranks (one-to-one), or
    random overlapping subsets covering every index (not one-to-one). Some indices
    may be given as negative values (allowed by the DAP)."""
    size, nprocs = _size_and_nprocs(draw, size, nprocs)
    if one_to_one is None:
        one_to_one = draw(st.booleans())
    perm = np.array(draw(st.permutations(range(size))), dtype=np.intp)
    if one_to_one:
        cuts = sorted(
            draw(st.lists(st.integers(0, size), min_size=nprocs - 1, max_size=nprocs - 1))
        )
        parts = np.split(perm, cuts)
        flag = draw(st.sampled_from([None, True, False]))
    else:
        primary = draw(st.lists(st.integers(0, nprocs - 1), min_size=size, max_size=size))
        extra = draw(st.lists(st.integers(0, 2**nprocs - 1), min_size=size, max_size=size))
        member = np.zeros((nprocs, size), dtype=bool)
        for g in range(size):
            member[primary[g], g] = True
            for r in range(nprocs):
                if extra[g] >> r & 1:
                    member[r, g] = True
        # Local order: the order of the permutation.
        parts = [perm[member[r, perm]] for r in range(nprocs)]
        flag = draw(st.sampled_from([None, False]))
    if size and draw(st.booleans()):
        negative = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)))
        parts = [np.where(negative[p], p - size, p) for p in parts]
    dtype = draw(st.sampled_from([np.intp, np.int32, np.int64]))
    parts = [p.astype(dtype) for p in parts]
    if draw(st.booleans()):
        parts = [p.tolist() for p in parts]
    return UnstructuredMap(size, parts, flag)


def maps(size: int | None = None, nprocs: int | None = None) -> st.SearchStrategy:
    """Any kind of 1-D map."""
    return st.one_of(
        block_maps(size, nprocs),
        cyclic_maps(size, nprocs),
        unstructured_maps(size, nprocs),
    )


@st.composite
def distributions(
    draw,
    min_ndim: int = 0,
    max_ndim: int = 4,
    max_ranks: int = 16,
    max_elements: int = 5000,
    max_size: int = MAX_SIZE,
) -> Distribution:
    """N-D distributions: 0-D to 4-D, sizes 0..50, 1..4 grid ranks per dimension and at
    most `max_ranks` ranks in all, every dimension of any kind.

    The product of the non-zero sizes is kept below `max_elements` so that tests
    can afford a dense accumulator over the global index space.
    """
    ndim = draw(st.integers(min_ndim, max_ndim))
    shape, budget = [], max_elements
    for _ in range(ndim):
        n = draw(st.integers(0, min(max_size, budget)))
        budget //= max(n, 1)
        shape.append(n)
    shape = draw(st.permutations(shape)) if shape else []
    grid, total = [], 1
    for _ in range(ndim):
        p = draw(st.integers(1, min(4, max_ranks // total)))
        total *= p
        grid.append(p)
    grid = draw(st.permutations(grid)) if grid else []
    return Distribution([draw(maps(n, p)) for n, p in zip(shape, grid)])


# -- helpers shared by the tests ----------------------------------------------------------


def to_v09(d: dict, *, use_n: bool = False, omit_defaults: bool = False) -> dict:
    """Convert a v0.10 dimension dictionary to v0.9.

    In v0.9 a block dim's start/stop bound the indices *without* communication
    padding, and an undistributed dimension may be written as dist_type 'n'.
    """
    if d["dist_type"] != "b":
        return dict(d)
    P, r = d["proc_grid_size"], d["proc_grid_rank"]
    lo, hi = d["padding"]
    comm_lo = d["periodic"] or r > 0
    comm_hi = d["periodic"] or r < P - 1
    start = d["start"] + (lo if comm_lo else 0)
    stop = d["stop"] - (hi if comm_hi else 0)
    if use_n and P == 1:
        out = {"dist_type": "n", "size": d["size"]}
    else:
        out = {
            "dist_type": "b",
            "size": d["size"],
            "proc_grid_size": P,
            "proc_grid_rank": r,
            "start": start,
            "stop": stop,
        }
    if not (omit_defaults and (lo, hi) == (0, 0)):
        out["padding"] = (lo, hi)
    if not (omit_defaults and not d["periodic"]):
        out["periodic"] = d["periodic"]
    return out


def dicts_equal(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    return all(
        np.array_equal(a[k], b[k])
        if isinstance(a[k], np.ndarray) or isinstance(b[k], np.ndarray)
        else a[k] == b[k]
        for k in a
    )
