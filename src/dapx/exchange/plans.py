"""Pure exchange plans: which elements move from which rank to which.

A plan moves the elements of an array laid out by a source `Distribution`
into the layout of a target `Distribution` of the same number of
dimensions. It is computed from the two distributions alone, dimension by
dimension, without communication and without a Python loop over elements,
and each process computes only its own side: the pieces its local ranks
send and the pieces its local ranks receive.

Within a piece, elements are ordered by ascending global index along every
dimension, so sender and receiver agree on the order without talking.
A source dimension of size 1 under a larger target dimension is broadcast:
every target rank receives that one index, in a length-1 axis.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..layout.distribution import Distribution
from ..layout.maps import BlockMap, CyclicMap, Map, UnstructuredMap

__all__ = [
    "DimSelection",
    "ExchangePlan",
    "as_index_array",
    "exchange_plan",
    "expand_dims_distribution",
    "outer_index",
    "owned_positions",
    "simplify_index",
]

Index = slice | np.ndarray


def simplify_index(idx: np.ndarray) -> Index:
    """An arithmetic progression as a slice (fast basic indexing), else the array.

    >>> simplify_index(np.array([2, 4, 6]))
    slice(2, 8, 2)
    >>> simplify_index(np.array([3, 2, 1, 0]))
    slice(3, None, -1)
    >>> simplify_index(np.array([0, 5, 6]))
    array([0, 5, 6])
    """
    n = idx.size
    if n == 0:
        return slice(0, 0)
    first = int(idx[0])
    if n == 1:
        return slice(first, first + 1)
    step = int(idx[1]) - first
    if step == 0:
        return idx
    last = int(idx[-1])
    if last - first != step * (n - 1) or not (np.diff(idx) == step).all():
        return idx
    stop = last + step
    return slice(first, stop if stop >= 0 else None, step)


def _groups(keys: np.ndarray, order_by: np.ndarray):
    """Positions grouped by key value, each group sorted by `order_by`."""
    order = np.lexsort((order_by, keys))
    sorted_keys = keys[order]
    uniq, starts = np.unique(sorted_keys, return_index=True)
    bounds = [*starts.tolist(), order.size]
    return {int(k): order[bounds[i] : bounds[i + 1]] for i, k in enumerate(uniq)}


class DimSelection(NamedTuple):
    """One dimension of a piece: where it comes from and where it goes."""

    src: Index
    dst: Index
    count: int


def _held(m: Map, c: int) -> tuple[np.ndarray, np.ndarray]:
    """Global indices grid coordinate `c` of `m` must receive, and their local positions.

    Owned indices, except that every copy of a shared unstructured index is
    filled too; padding is left to halo updates.
    """
    if isinstance(m, UnstructuredMap) and not m.one_to_one:
        held = m.global_indices(c)
        return held, np.arange(held.size, dtype=np.intp)
    owned = m.owned_indices(c)
    return owned, (m.owner(owned)[1] if owned.size else owned)


def _holders(m: Map, g: np.ndarray):
    """Every (coordinate, local index) of `m` holding each of `g`, and which `g` it is."""
    if not (isinstance(m, UnstructuredMap) and not m.one_to_one):
        coords, local = m.owner(g)
        return coords, local, np.arange(g.size, dtype=np.intp)
    held = [m.global_indices(c) for c in range(m.nprocs)]
    all_g = np.concatenate(held)
    all_c = np.repeat(np.arange(m.nprocs, dtype=np.intp), [h.size for h in held])
    all_l = np.concatenate([np.arange(h.size, dtype=np.intp) for h in held])
    order = np.argsort(all_g, kind="stable")
    lo = np.searchsorted(all_g[order], g, side="left")
    hi = np.searchsorted(all_g[order], g, side="right")
    which = np.repeat(np.arange(g.size, dtype=np.intp), hi - lo)
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(hi - lo)[:-1])), hi - lo)
    picks = order[starts + np.arange(which.size, dtype=np.intp)]
    return all_c[picks], all_l[picks], which


class _Progression(NamedTuple):
    """Owned global indices ``range(first, stop, step)``; local position of `first` is `local0`."""

    first: int
    stop: int
    step: int
    local0: int

    def local(self, g: int, step: int, count: int) -> slice:
        """Local positions of ``g, g + step, ...`` (`count` of them) as a slice."""
        start = self.local0 + (g - self.first) // self.step
        inc = step // self.step
        return slice(start, start + inc * (count - 1) + 1, inc)


def _progression(m: Map, c: int) -> _Progression | None:
    """`m`'s owned indices of coordinate `c` as an arithmetic progression, when they are one."""
    if isinstance(m, BlockMap):
        lo, hi = int(m.bounds[c]), int(m.bounds[c + 1])
        return _Progression(lo, hi, 1, lo - m.start(c))
    if isinstance(m, CyclicMap) and m.block_size == 1:
        return _Progression(c, m.size, m.nprocs, 0)
    return None


def _intersect(p: _Progression, q: _Progression) -> DimSelection | None:
    """The common indices of `p` and `q` (one of them contiguous), or None if there are none.

    The general lexsort path costs O(n log n) per call (tens of seconds for a
    block -> cyclic plan of 1e8 elements); this is O(1).
    """
    step = max(p.step, q.step)
    lo, hi = max(p.first, q.first), min(p.stop, q.stop)
    base = p if p.step == step else q  # the strided one fixes the residue
    first = base.first + -(-(lo - base.first) // step) * step
    if first >= hi:
        return None
    count = (hi - 1 - first) // step + 1
    return DimSelection(p.local(first, step, count), q.local(first, step, count), count)


def _fast_pairs(src: Map, dst: Map) -> bool:
    """Whether every coordinate pair of `src` and `dst` intersects arithmetically."""
    if src.size != dst.size:
        return False
    p, q = _progression(src, 0), _progression(dst, 0)
    return p is not None and q is not None and (p.step == 1 or q.step == 1)


def _dim_sends(src: Map, dst: Map, a: int) -> dict[int, DimSelection]:
    """What grid coordinate `a` of `src` sends to each coordinate of `dst`."""
    if _fast_pairs(src, dst):
        p = _progression(src, a)
        pairs = ((b, _intersect(p, _progression(dst, b))) for b in range(dst.nprocs))
        return {b: s for b, s in pairs if s is not None}
    owned = src.owned_indices(a)
    if owned.size == 0:
        return {}
    _, src_local = src.owner(owned)
    if src.size == 1 and dst.size != 1:  # broadcast: everyone receives index 0
        one = DimSelection(simplify_index(src_local), slice(0, 1), 1)
        return {b: one for b in range(dst.nprocs) if _held(dst, b)[0].size}
    coords, dst_local, which = _holders(dst, owned)
    out = {}
    for b, pos in _groups(coords, owned[which]).items():
        out[b] = DimSelection(
            simplify_index(src_local[which[pos]]), simplify_index(dst_local[pos]), int(pos.size)
        )
    return out


def _dim_recvs(src: Map, dst: Map, b: int) -> dict[int, DimSelection]:
    """What grid coordinate `b` of `dst` receives from each coordinate of `src`."""
    if _fast_pairs(src, dst):
        q = _progression(dst, b)
        pairs = ((a, _intersect(_progression(src, a), q)) for a in range(src.nprocs))
        return {a: s for a, s in pairs if s is not None}
    wanted, dst_local = _held(dst, b)
    if wanted.size == 0:
        return {}
    if src.size == 1 and dst.size != 1:
        a, src_local = src.owner(np.zeros(1, np.intp))
        return {int(a[0]): DimSelection(simplify_index(src_local), slice(0, 1), 1)}
    coords, src_local = src.owner(wanted)
    out = {}
    for a, pos in _groups(coords, wanted).items():
        out[a] = DimSelection(
            simplify_index(src_local[pos]), simplify_index(dst_local[pos]), int(pos.size)
        )
    return out


class Piece(NamedTuple):
    """One N-D piece between a source and a destination rank."""

    src_key: tuple
    dst_key: tuple
    shape: tuple[int, ...]


class ExchangePlan(NamedTuple):
    """The local side of an exchange.

    ``sends[src_rank][dst_rank]`` and ``recvs[dst_rank][src_rank]`` are
    `Piece` s for this process's local ranks only.
    """

    sends: dict[int, dict[int, Piece]]
    recvs: dict[int, dict[int, Piece]]
    dst_local_shapes: dict[int, tuple[int, ...]]


def as_index_array(idx: Index) -> np.ndarray:
    if isinstance(idx, np.ndarray):
        return idx
    step = idx.step or 1
    stop = idx.stop if idx.stop is not None else -1
    return np.arange(idx.start, stop, step, dtype=np.intp)


def outer_index(parts: Sequence[Index]) -> tuple:
    """The N-D index selecting the outer product of per-dimension `parts`.

    Basic slices when every part is one (a view, fast), else ``np.ix_``.
    """
    if all(isinstance(i, slice) for i in parts):
        return tuple(parts)
    return np.ix_(*[as_index_array(i) for i in parts])


def _key(sels: Sequence[DimSelection], side: str) -> tuple:
    """A NumPy index selecting the piece on one side."""
    return outer_index([getattr(s, side) for s in sels])


def _combine(per_dim: Sequence[dict[int, DimSelection]], grid, coord_of_rank):
    """For each rank of `grid` that every dimension pairs with, the N-D piece."""
    out = {}
    for other in range(grid.nranks):
        coords = coord_of_rank(other)
        sels = []
        for k, c in enumerate(coords):
            s = per_dim[k].get(c)
            if s is None:
                break
            sels.append(s)
        else:
            out[other] = Piece(_key(sels, "src"), _key(sels, "dst"), tuple(s.count for s in sels))
    return out


@functools.lru_cache(maxsize=256)
def exchange_plan(src: Distribution, dst: Distribution, local_ranks: tuple[int, ...]):
    """The sends and receives of `local_ranks` that move `src`'s layout into `dst`'s.

    Both distributions have the same number of dimensions and the same
    number of ranks; ``src.shape[k]`` is either ``dst.shape[k]`` or 1
    (broadcast). Every element a destination rank owns is received from its
    owner in `src`; padding is not filled (that is a halo update).
    """
    if src.ndim != dst.ndim:
        raise ValueError(f"cannot plan from {src.ndim}-d to {dst.ndim}-d")
    for k, (m, n) in enumerate(zip(src.shape, dst.shape)):
        if m != n and m != 1:
            raise ValueError(f"dimension {k}: size {m} does not broadcast to {n}")
    sends, recvs, shapes = {}, {}, {}
    for r in local_ranks:
        if r < src.nranks:
            ca = src.coords(r)
            per_dim = [_dim_sends(src.maps[k], dst.maps[k], c) for k, c in enumerate(ca)]
            sends[r] = _combine(per_dim, dst.grid, dst.coords)
        if r < dst.nranks:
            cb = dst.coords(r)
            per_dim = [_dim_recvs(src.maps[k], dst.maps[k], c) for k, c in enumerate(cb)]
            recvs[r] = _combine(per_dim, src.grid, src.coords)
            shapes[r] = tuple(
                1 if (m == 1 and n != 1) else L
                for m, n, L in zip(src.shape, dst.shape, dst.local_shape(r))
            )
    return ExchangePlan(sends, recvs, shapes)


def expand_dims_distribution(dist: Distribution, ndim: int) -> Distribution:
    """`dist` with undistributed size-1 dimensions prepended up to `ndim`."""
    extra = ndim - dist.ndim
    if extra <= 0:
        return dist
    return Distribution((*(BlockMap(1, nprocs=1) for _ in range(extra)), *dist.maps))


def owned_positions(dist: Distribution, rank: int):
    """(local index, global index) per dimension of what `rank` owns, as slices when possible."""
    local, glob = [], []
    for m, c in zip(dist.maps, dist.coords(rank)):
        owned = m.owned_indices(c)
        _, loc = m.owner(owned) if owned.size else (None, owned)
        local.append(simplify_index(loc))
        glob.append(simplify_index(owned))
    return tuple(local), tuple(glob)
