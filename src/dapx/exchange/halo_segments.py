"""The per-dimension side of a halo update: segments, classes and owners of ghost cells.

A halo update (`dapx.exchange.halo`) is the N-D product of one-dimensional
answers, which this module gives for one grid coordinate ``c`` of one map
along one dimension under one boundary kind:

* `dim_segments`: the positions of ``c``'s buffer, cut into *segments*
  (runs of data positions, or of positions holding a boundary constant),
  the data segments cut into *runs* of positions whose sources one grid
  coordinate (the *owner*) holds, each with the source positions in the
  owner's buffer. A run that is ``c``'s own data in place is the identity:
  nothing to copy. Block coordinates whose buffers lie inside the domain
  are answered by arithmetic, the others position by position (the source
  of a ghost cell beyond the domain as `numpy.pad` maps it).
* `dim_class` and `classes`: the segments with run owners taken *relative*
  to ``c``. Coordinates whose buffers copy alike (equal blocks away from the
  domain edges) have equal classes, so the ranks of one combination of
  classes share one piece list; many coordinates of a block map are grouped
  by the geometry their buffers see before any segments are computed.
* `owners` and `copiers`: the coordinates a buffer copies from, and those
  whose buffers copy from ``c``; for block maps, only the grid neighbours
  and the domain edges are checked (O(1) in the number of ranks).

Everything here is pure metadata; segments, classes and copiers are cached
per (map, coordinate, kind).

Examples
--------
A block map of 8 elements on 2 coordinates with 1 ghost cell on each side:
coordinate 1 receives its low ghost cell from coordinate 0 and holds a
boundary constant in its high one.

>>> m = BlockMap(8, nprocs=2, padding=[[1, 1], [1, 1]], ghost_edges=True)
>>> [(s.kind, s.dst) for s in dim_segments(m, 1, "constant")]
[('data', slice(0, 5, None)), ('constant', slice(5, 6, None))]
>>> [(r.owner, r.src, r.identity) for r in dim_segments(m, 1, "constant")[0].runs]
[(0, slice(4, 5, None), False), (1, slice(1, 5, 1), True)]
>>> owners(m, 1, "constant"), copiers(m, 1, "constant")
({0, 1}, (0, 1))
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from itertools import pairwise
from typing import NamedTuple

import numpy as np

from ..layout.distribution import Distribution
from ..layout.maps import BlockMap, Map
from .plans import simplify_index

__all__ = ["DimClass", "classes", "copiers", "dim_class", "dim_segments", "owners"]


# -- sources of ghost cells ---------------------------------------------------------------------


def _sources(g: np.ndarray, n: int, kind: str) -> np.ndarray:
    """Source index of each global index `g` (in or outside ``0..n-1``) under `kind`.

    Outside the domain: -1 for "none" (the cell keeps its value), -2 for
    "constant"; else as `numpy.pad` maps it ("periodic" = wrap, "reflect" =
    symmetric, "nearest" = edge).
    """
    inside = (g >= 0) & (g < n)
    if inside.all():
        return g
    if kind == "none":
        return np.where(inside, g, -1)
    if kind == "constant":
        return np.where(inside, g, -2)
    if n == 0:
        raise ValueError(f"boundary {kind!r} needs data, but the dimension is empty")
    if kind == "periodic":
        return np.remainder(g, n)
    if kind == "nearest":  # (np.clip's Python wrapper costs more than these two ufuncs)
        return np.minimum(np.maximum(g, 0), n - 1)
    folded = np.remainder(g, 2 * n)  # "reflect": numpy.pad's symmetric mode, period 2n
    return np.where(folded < n, folded, 2 * n - 1 - folded)


# -- segments of a coordinate's buffer ---------------------------------------------------------


class _Run(NamedTuple):
    """Consecutive buffer positions whose sources one grid coordinate owns."""

    owner: int  # grid coordinate along the dimension
    src: slice | np.ndarray  # positions in the owner's buffer
    dst: slice  # positions in this buffer
    count: int
    identity: bool  # the owner is this coordinate and src == dst (nothing to copy)


class _Segment(NamedTuple):
    """A run of buffer positions of one kind: data (with runs) or constant."""

    kind: str  # "data" or "constant"
    dst: slice
    runs: tuple[_Run, ...]


def _split_runs(values: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of the maximal runs of equal values."""
    if values.size == 0:
        return []
    cuts = np.flatnonzero(np.diff(values)) + 1
    edges = [0, *cuts.tolist(), values.size]
    return list(pairwise(edges))


@functools.lru_cache(maxsize=4096)
def dim_segments(m: Map, c: int, kind: str) -> tuple[_Segment, ...]:
    """The buffer of grid coordinate `c` of `m`, cut into segments with their sources."""
    if isinstance(m, BlockMap):
        inner = _inner_block_segments(m, c)
        if inner is not None:
            return inner
    return _scanned_segments(m, c, kind)


def _inner_block_segments(m: BlockMap, c: int) -> tuple[_Segment, ...] | None:
    """`dim_segments` of a block coordinate whose buffer lies inside the domain, by arithmetic.

    No boundary condition applies there: every position copies the element
    its global index names, so the runs are the owned ranges the buffer
    crosses (O(1) integer work per run, where `_scanned_segments` makes a
    dozen NumPy calls), the coordinate's own being the identity. None when
    the buffer is empty or leaves the domain.
    """
    start, stop = m.start(c), m.stop(c)
    if start < 0 or stop > m.size or start == stop:
        return None
    bounds = m.bounds
    owner = int(np.searchsorted(bounds, start, side="right")) - 1
    runs, g = [], start
    while g < stop:  # owner's owned range: bounds[owner] <= g < bounds[owner + 1] (or empty)
        end = min(int(bounds[owner + 1]), stop)
        if end > g:
            n, local = end - g, g - m.start(owner)
            src = slice(local, local + 1) if n == 1 else slice(local, local + n, 1)
            runs.append(_Run(owner, src, slice(g - start, end - start), n, owner == c))
            g = end
        owner += 1
    return (_Segment("data", slice(0, stop - start), tuple(runs)),)


def _scanned_segments(m: Map, c: int, kind: str) -> tuple[_Segment, ...]:
    """`dim_segments` by sources and owners computed position by position, with NumPy."""
    n = m.local_length(c)
    if isinstance(m, BlockMap):
        g = np.arange(m.start(c), m.stop(c), dtype=np.intp)  # unwrapped, may leave 0..size-1
    else:
        g = m.global_indices(c)
    src = _sources(g, m.size, kind)
    # A ghost cell left alone ("none") is its own source: it belongs to the rank at that
    # edge, from which the ghost cells of other ranks beyond it (corners) copy.
    left = src == -1
    cls = np.where(src == -2, 1, 0)  # 0 data, 1 constant
    segments = []
    for a, b in _split_runs(cls):
        if cls[a] == 1:
            segments.append(_Segment("constant", slice(a, b), ()))
            continue
        inside = ~left[a:b]
        owners = np.empty(b - a, np.intp)
        local = np.empty(b - a, np.intp)
        if inside.any():
            owners[inside], local[inside] = m.owner(src[a:b][inside])
        if not inside.all():
            edge = np.where(g[a:b][~inside] < 0, 0, m.nprocs - 1)
            starts = np.array([m.start(0), m.start(m.nprocs - 1)], np.intp)
            owners[~inside] = edge
            local[~inside] = g[a:b][~inside] - starts[np.sign(edge)]
        # Split where the owner changes and where a rank's own interior starts or ends.
        identity = (owners == c) & (local == np.arange(a, b))
        runs = []
        for i, j in _split_runs(owners * 2 + identity):
            runs.append(
                _Run(
                    int(owners[i]),
                    simplify_index(local[i:j]),
                    slice(a + i, a + j),
                    j - i,
                    bool(identity[i]),
                )
            )
        segments.append(_Segment("data", slice(a, b), tuple(runs)))
    if not segments and n:
        raise AssertionError("unreachable: a non-empty buffer has segments")
    return tuple(segments)


# -- classes: segments relative to their coordinate, grouped by block geometry ------------------


def _index_signature(index: slice | np.ndarray) -> tuple:
    """A hashable, comparable form of a run's source positions (slices hash from 3.12 only)."""
    if isinstance(index, slice):
        return ("s", index.start, index.stop, index.step)
    return ("a", *np.asarray(index).tolist())


class DimClass:
    """The segments of one grid coordinate's buffer, run owners *relative* to the coordinate.

    Coordinates whose buffers copy alike (the interior coordinates of equal
    blocks, say) have equal classes, so their ranks share one piece list
    (``_class_pieces`` in `dapx.exchange.halo`): a grid of P ranks has a
    handful of classes per dimension, not P. Equality and hashing go through
    a signature computed once (run source positions made hashable).
    """

    __slots__ = ("_hash", "_signature", "segments")

    def __init__(self, segments: tuple[_Segment, ...]):
        self.segments = segments
        self._signature = tuple(
            (
                s.kind,
                s.dst.start,
                s.dst.stop,
                tuple(
                    (r.owner, _index_signature(r.src), r.dst.start, r.dst.stop, r.identity)
                    for r in s.runs
                ),
            )
            for s in segments
        )
        self._hash = hash(self._signature)

    def __eq__(self, other) -> bool:
        return isinstance(other, DimClass) and self._signature == other._signature

    def __hash__(self) -> int:
        return self._hash


@functools.lru_cache(maxsize=4096)
def dim_class(m: Map, c: int, kind: str) -> DimClass:
    """The `DimClass` of grid coordinate `c` of `m` (run owners as offsets from `c`)."""
    segments = tuple(
        s._replace(runs=tuple(r._replace(owner=r.owner - c) for r in s.runs))
        for s in dim_segments(m, c, kind)
    )
    return DimClass(segments)


def classes(dist: Distribution, kinds: tuple[str, ...], ranks: Sequence[int]) -> list[tuple]:
    """The `DimClass` of every dimension of each of `ranks` (coordinates found at once)."""
    if not dist.ndim:
        return [()] * len(ranks)
    coords = np.unravel_index(np.asarray(ranks, np.intp), dist.grid.shape)
    per_dim = []
    for m, kind, cs in zip(dist.maps, kinds, coords):
        cs = cs.tolist()
        table = _coordinate_classes(m, kind, sorted(set(cs)))
        per_dim.append([table[c] for c in cs])
    return list(zip(*per_dim))


#: From how many coordinates of one block map `_coordinate_classes` groups them with NumPy.
_GROUP_FROM = 8


def _coordinate_classes(m: Map, kind: str, coords: list[int]) -> dict[int, DimClass]:
    """The `DimClass` of each of `coords` (distinct) along `m`.

    Many coordinates of a block map are grouped first, with NumPy, by the
    geometry their buffer sees: an inner coordinate ``c`` whose buffer lies
    within the owned ranges of ``c - 1 .. c + 1`` (inside the domain, so no
    boundary condition applies) copies position ``i`` from the owner and
    local position that the buffer length and the owned bounds and low ghost
    widths of ``c - 1 .. c + 1``, taken relative to its start, determine. So
    equal such keys mean equal classes, and only one coordinate per key has
    its segments computed; the others (domain edges) are computed one by one.
    """
    if not isinstance(m, BlockMap) or len(coords) < _GROUP_FROM or m.nprocs < 3:
        return {c: dim_class(m, c, kind) for c in coords}
    nprocs, b = m.nprocs, m.bounds.astype(np.intp)
    lo, hi = m.padding[:, 0].astype(np.intp), m.padding[:, 1].astype(np.intp)
    if not (m.ghost_edges or m.periodic):  # as `BlockMap.ghost_widths`: DAP boundary padding
        lo[0] = hi[-1] = 0  # is owned, not ghost cells
    c = np.asarray(coords, np.intp)
    k = np.clip(c, 1, nprocs - 2)
    start, stop = b[k] - lo[k], b[k + 1] + hi[k]
    valid = (c == k) & (start >= b[k - 1]) & (stop <= b[k + 2])
    keys = np.stack(
        [stop - start, *(b[k + j] - start for j in (-1, 0, 1, 2)), lo[k - 1], lo[k], lo[k + 1]],
        axis=1,
    )
    table, by_key = {}, {}
    for coord, ok, key in zip(coords, valid.tolist(), map(tuple, keys.tolist())):
        if not ok:
            table[coord] = dim_class(m, coord, kind)
            continue
        found = by_key.get(key)
        if found is None:
            found = by_key[key] = dim_class(m, coord, kind)
        table[coord] = found
    return table


# -- owners of ghost cells ----------------------------------------------------------------------


def owners(m: Map, c: int, kind: str) -> set[int]:
    """The grid coordinates the buffer of coordinate `c` of `m` copies from (`c` included).

    A block coordinate's buffer leaving the domain (an edge checked by
    `copiers` for every rank) is answered from its sources alone, without
    cutting it into segments: the owners of the range inside the domain and
    of the boundary condition's sources of the ghost cells outside it.
    """
    if isinstance(m, BlockMap):
        start, stop, size = m.start(c), m.stop(c), m.size
    if not isinstance(m, BlockMap) or 0 <= start <= stop <= size:
        return {r.owner for s in dim_segments(m, c, kind) for r in s.runs if not r.identity} | {c}
    bounds = m.bounds
    found = {c}
    low, high = max(start, 0), min(stop, size)
    if low < high:  # the non-empty owned ranges that meet [low, high)
        r = int(np.searchsorted(bounds, low, side="right")) - 1
        while r < m.nprocs and bounds[r] < high:
            if bounds[r + 1] > max(bounds[r], low):  # a non-empty range reaching past low
                found.add(r)
            r += 1
    outside = np.arange(start, min(stop, 0), dtype=np.intp)
    if stop > size:
        outside = np.concatenate((outside, np.arange(max(start, size), stop, dtype=np.intp)))
    src = _sources(outside, size, kind)
    data = src >= 0
    if data.any():
        found.update(m.owner(src[data])[0].tolist())
    if (src == -1).any():  # "none": the edge coordinate's own ghost cells
        found.update(np.where(outside[src == -1] < 0, 0, m.nprocs - 1).tolist())
    return found


@functools.lru_cache(maxsize=4096)
def copiers(m: Map, c: int, kind: str) -> tuple[int, ...]:
    """The grid coordinates of `m` whose buffers copy from coordinate `c` (`c` included), sorted.

    A block map's ghost cells between ranks are no wider than the neighbour's
    block, so they copy from the next coordinates only; the ghost cells at a
    domain edge (boundary conditions) belong to the two edge coordinates. So
    only ``c - 1``, ``c + 1`` (wrapped when periodic) and the edges need
    checking: O(1) in the number of ranks. Other maps (shared unstructured
    indices) may copy from anywhere, and are scanned.
    """
    P = m.nprocs
    if isinstance(m, BlockMap):
        near = {c - 1, c, c + 1, 0, P - 1}
        if m.periodic:
            near = {d % P for d in near}
        candidates = sorted(d for d in near if 0 <= d < P)
    else:
        candidates = range(P)
    return tuple(d for d in candidates if c in owners(m, d, kind))
