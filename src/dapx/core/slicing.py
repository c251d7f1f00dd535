"""Indexing as metadata: normalised keys, and the layouts they produce.

Nothing here touches array data or communicates; `dapx.core.indexing` runs the
results.

Basic indexing (integers, slices, ``None``) of a distributed array moves no
data: every rank indexes its own block, and the result is described by a
new `Distribution` computed here from the old one and the key alone.

* A slice of a dimension keeps its grid axis. A block map sliced with a
  positive step stays a block map; otherwise the result is whatever the new
  positions of each rank's elements describe (a block or cyclic map when
  they happen to form one, else an unstructured map).
* An integer drops its dimension but not its grid axis, which still holds
  ranks: it is merged into the grid axis of the preceding remaining
  dimension (new coordinate ``c_prev * P_drop + c_drop``), or of the
  following one (``c_drop * P_next + c_next``) when none precedes. Only the
  ranks whose coordinate on the dropped axis owns the index keep data.
* ``None`` adds a length-1 undistributed dimension.

Local order follows the source: a rank's selected elements keep their local
order, reversed when the step is negative (as NumPy's ``block[::-1]``).

Advanced keys (`AdvancedLayout`, `FancyLayout`) apply their slices first,
then pick elements with index arrays; `parse_key` normalises keys as NumPy
does, raising NumPy's errors.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from ..exchange.plans import ExchangePlan, exchange_plan, simplify_index
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap, CyclicMap, Map, UnstructuredMap, even_bounds

__all__ = [
    "EMPTY",
    "AdvancedLayout",
    "BasicLayout",
    "FancyLayout",
    "basic_layout",
    "broadcast_indices",
    "checked_indices",
    "detect_map",
    "is_one_to_one",
    "merge_axis",
    "one_to_one_map",
    "owned_flags",
    "parse_key",
    "permuted_plan",
    "slice_map",
]

Index = slice | np.ndarray


class _Empty:
    """Marks a dropped dimension whose index this rank does not hold."""

    __slots__ = ()

    def __repr__(self):
        return "EMPTY"


#: Local key part of a dropped dimension on a rank that does not own the index.
EMPTY = _Empty()


def is_one_to_one(m: Map) -> bool:
    """Whether every index of `m` is held by exactly one grid rank (padding aside)."""
    return not isinstance(m, UnstructuredMap) or m.one_to_one


def one_to_one_map(m: Map) -> Map:
    """`m` restricted to owned indices: `m` itself unless it shares indices.

    >>> m = UnstructuredMap(3, [[0, 1], [1, 2]])
    >>> one_to_one_map(m).global_indices(1).tolist()
    [2]
    """
    if is_one_to_one(m):
        return m
    return UnstructuredMap(m.size, [m.owned_indices(c) for c in range(m.nprocs)], True)


def _check_unpadded(m: Map) -> None:
    if isinstance(m, BlockMap) and m.is_padded:
        raise NotImplementedError(
            f"indexing arrays with padded (halo) dimensions is not supported yet ({m!r}); "
            "redistribute to an unpadded layout first"
        )


def detect_map(size: int, indices: Sequence[np.ndarray], one_to_one: bool = True) -> Map:
    """The map whose grid ranks hold `indices` (in local order), as simple as it is.

    A `BlockMap` when the ranks hold consecutive ranges in grid-rank order,
    a `CyclicMap` when they hold its blocks, else an `UnstructuredMap`.

    >>> detect_map(5, [np.array([0, 1]), np.array([2, 3, 4])])
    BlockMap(size=5, bounds=[0, 2, 5])
    >>> detect_map(5, [np.array([0, 2, 4]), np.array([1, 3])])
    CyclicMap(size=5, nprocs=2, block_size=1)
    >>> detect_map(3, [np.array([2, 1]), np.array([0])])
    UnstructuredMap(size=3, nprocs=2, one_to_one=True)
    """
    indices = [np.asarray(i, dtype=np.intp).reshape(-1) for i in indices]
    counts = np.array([i.size for i in indices], dtype=np.intp)
    bounds = np.concatenate(([0], np.cumsum(counts))).astype(np.intp)
    if bounds[-1] == size and all(
        i.size == 0 or (i[0] == bounds[c] and (np.diff(i) == 1).all())
        for c, i in enumerate(indices)
    ):
        return BlockMap(size, bounds)
    P = len(indices)
    if P > 1 and size and counts[0] and indices[0][0] == 0:
        steps = np.flatnonzero(np.diff(indices[0]) != 1)
        block_size = int(steps[0]) + 1 if steps.size else int(counts[0])
        cyclic = CyclicMap(size, P, block_size)
        if all(np.array_equal(cyclic.global_indices(c), i) for c, i in enumerate(indices)):
            return cyclic
    return UnstructuredMap(size, indices, None if one_to_one else False)


def _block_slice(m: BlockMap, start: int, stop: int, step: int):
    """Closed form of `slice_map` for a block map and a positive step."""
    lo, hi = m.bounds[:-1], m.bounds[1:]
    first = start + (np.maximum(lo, start) - start + step - 1) // step * step
    last = np.minimum(hi, stop)
    counts = np.where(last > first, (last - first + step - 1) // step, 0)
    keys = tuple(
        slice(int(f - a), int(f - a + (n - 1) * step + 1), step) if n else slice(0, 0)
        for f, a, n in zip(first.tolist(), lo.tolist(), counts.tolist())
    )
    bounds = np.concatenate(([0], np.cumsum(counts))).astype(np.intp)
    return BlockMap(int(bounds[-1]), bounds), keys


def slice_map(m: Map, start: int, stop: int, step: int, owned: bool = False):
    """The map of dimension `m` sliced by ``start:stop:step`` (as from `slice.indices`).

    Returns
    -------
    (Map, tuple)
        The new map and, per grid coordinate, the key (a slice, or an integer
        array when no slice selects the elements) into that coordinate's
        local buffer that yields its part of the result, in local order.
        With `owned`, only owned elements are selected (shared indices of a
        non-one-to-one map are kept by their owner alone).

    Examples
    --------
    >>> new, keys = slice_map(BlockMap(10, nprocs=3), 1, 10, 3)
    >>> new, keys
    (BlockMap(size=3, bounds=[0, 1, 2, 3]), (slice(1, 2, 3), slice(0, 1, 3), slice(0, 1, 3)))
    >>> new, keys = slice_map(CyclicMap(6, 2), 5, -1, -1)
    >>> [new.global_indices(c).tolist() for c in range(2)], keys
    ([[1, 3, 5], [0, 2, 4]], (slice(2, None, -1), slice(2, None, -1)))
    """
    _check_unpadded(m)
    P = m.nprocs
    n = len(range(start, stop, step))
    if (start, step, n) == (0, 1, m.size) and (not owned or is_one_to_one(m)):
        return m, (slice(None),) * P
    if isinstance(m, BlockMap) and step > 0:
        return _block_slice(m, start, stop, step)
    shared = owned and not is_one_to_one(m)
    keys, new = [], []
    for c in range(P):
        g = m.owned_indices(c) if shared else m.global_indices(c)
        local = m.owner(g)[1] if shared else np.arange(g.size, dtype=np.intp)
        offset = g - start
        if step > 0:
            hit = (offset >= 0) & (g < stop) & (offset % step == 0)
        else:
            hit = (offset <= 0) & (g > stop) & (offset % -step == 0)
        pos = np.flatnonzero(hit)
        if step < 0:
            pos = pos[::-1]
        key = simplify_index(local[pos])
        keys.append(key)
        new.append(offset[pos] // step)
    return detect_map(n, new, owned or is_one_to_one(m)), tuple(keys)


def merge_axis(m: Map, p_drop: int, c_own: int, before: bool) -> Map:
    """Merge a dropped grid axis of `p_drop` ranks into the grid axis of map `m`.

    Coordinate ``c_own`` of the dropped axis keeps `m`'s data; the others
    hold nothing. With `before`, `m`'s dimension precedes the dropped one
    (new coordinate ``c_keep * p_drop + c_drop``), else it follows it
    (``c_drop * m.nprocs + c_keep``); either way the ranks keep their
    row-major numbering.

    >>> merge_axis(BlockMap(5, nprocs=2), 2, 1, before=True)
    BlockMap(size=5, bounds=[0, 0, 3, 3, 5])
    """
    P = m.nprocs
    coords = np.arange(P * p_drop)
    keep, drop = (coords // p_drop, coords % p_drop) if before else (coords % P, coords // P)
    if isinstance(m, BlockMap):
        _check_unpadded(m)
        counts = np.where(drop == c_own, np.diff(m.bounds)[keep], 0)
        return BlockMap(m.size, np.concatenate(([0], np.cumsum(counts))).astype(np.intp))
    none = np.empty(0, np.intp)
    indices = [m.global_indices(k) if d == c_own else none for k, d in zip(keep, drop)]
    return detect_map(m.size, indices, is_one_to_one(m))


class BasicLayout:
    """The result of a basic key on a distribution: its `Distribution` and local keys.

    Attributes
    ----------
    source : Distribution
        The distribution indexed.
    dist : Distribution
        The distribution of the result (at least 1-D).
    """

    __slots__ = ("_parts", "dist", "source")

    def __init__(self, source: Distribution, dist: Distribution, parts: tuple):
        self.source = source
        self.dist = dist
        self._parts = parts

    def local_key(self, rank: int) -> tuple:
        """Key parts for `rank`'s block, one per key item: int, slice, integer array,
        None (new axis) or `EMPTY` (a dropped index this rank does not own)."""
        coords = self.source.coords(rank)
        key = []
        for p in self._parts:
            if p[0] == "n":
                key.append(None)
            elif p[0] == "s":
                key.append(p[2][coords[p[1]]])
            else:
                key.append(p[3] if coords[p[1]] == p[2] else EMPTY)
        return tuple(key)


@functools.lru_cache(maxsize=256)
def basic_layout(source: Distribution, key: tuple, owned: bool = False) -> BasicLayout:
    """The layout of ``source[key]`` for a normalised basic `key`.

    Parameters
    ----------
    source : Distribution
        At least 1-D.
    key : tuple
        One item per source dimension or new axis: ``("i", index)`` with
        ``0 <= index < size``, ``("s", start, stop, step)`` as from
        `slice.indices`, or ``("n",)``. At least one ``"s"`` or ``"n"``.
    owned : bool
        Select owned elements only (see `slice_map`).

    Examples
    --------
    >>> d = Distribution.create((4, 6), dist="b", grid=(2, 2))
    >>> lay = basic_layout(d, (("i", 3), ("s", 0, 6, 2)))
    >>> lay.dist.global_shape, lay.dist.grid_shape
    ((3,), (4,))
    >>> [lay.dist.local_shape(r) for r in range(4)]
    [(0,), (0,), (2,), (1,)]
    >>> lay.local_key(2)
    (1, slice(0, 3, 2))
    """
    axes: list[list] = []  # [kind, map]; kind "s" (kept) or "n" (new)
    drops = []  # (dimension, position among axes, grid size, owning coordinate)
    parts = []
    dim = 0
    for item in key:
        if item[0] == "n":
            axes.append(["n", BlockMap(1, nprocs=1)])
            parts.append(("n",))
            continue
        m = source.maps[dim]
        _check_unpadded(m)
        if item[0] == "s":
            new, keys = slice_map(m, *item[1:], owned=owned)
            axes.append(["s", new])
            parts.append(("s", dim, keys))
        else:
            c, local = m.owner(np.intp(item[1]))
            drops.append((dim, len(axes), m.nprocs, int(c)))
            parts.append(("i", dim, int(c), int(local)))
        dim += 1
    kept = [k for k, a in enumerate(axes) if a[0] == "s"]
    if not axes:
        raise ValueError("basic_layout needs a slice or a new axis in the key")
    merges = []
    for d, pos, p, c in drops:
        before = [k for k in kept if k < pos]
        after = [k for k in kept if k >= pos]
        if p == 1:
            continue
        if before:
            merges.append((0, d, before[-1], p, c, True))
        else:
            merges.append((1, -d, (after or [0])[0], p, c, False))
    for _, _, k, p, c, ahead in sorted(merges):  # ascending "before", then descending "after"
        axes[k][1] = merge_axis(axes[k][1], p, c, ahead)
    return BasicLayout(source, Distribution([a[1] for a in axes]), tuple(parts))


# -- keys -----------------------------------------------------------------------------------------

INVALID_INDEX = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
    "boolean arrays are valid indices"
)
NOT_INTEGER = "arrays used as indices must be of integer (or boolean) type"


def ndim_used(e) -> int:
    """How many array dimensions a normalised key entry consumes."""
    if e is None or e is Ellipsis or isinstance(e, bool):
        return 0
    if hasattr(e, "dtype") and e.dtype.kind == "b":
        return e.ndim
    return 1


def out_of_bounds(values: np.ndarray, n: int, axis: int) -> IndexError | None:
    """NumPy's error for the first of `values` outside a dimension of size `n`, if any."""
    bad = (values < -n) | (values >= n)
    if bad.any():
        return IndexError(
            f"index {int(values[bad].flat[0])} is out of bounds for axis {axis} with size {n}"
        )
    return None


def parse_key(shape: tuple[int, ...], entries: list) -> list[tuple]:
    """Normalise a key for an array of `shape`, raising NumPy's errors.

    Parameters
    ----------
    entries : list
        Key entries already reduced to int, slice, None, Ellipsis, NumPy
        integer or boolean arrays (at least 1-D) and distributed arrays.

    Returns
    -------
    list of tuple
        One item per consumed dimension or new axis: ``("i", dim, index)``
        (checked, non-negative), ``("s", dim, start, stop, step)``,
        ``("n", None)``, ``("a", dim, integer array)`` (unchecked; NumPy
        masks become one per dimension), ``("d", dim, distributed integers)``
        or ``("m", dim, distributed mask)``.

    Examples
    --------
    >>> parse_key((4, 5), [-1, Ellipsis, None])
    [('i', 0, 3), ('s', 1, 0, 5, 1), ('n', None)]
    >>> parse_key((4, 5), [np.array([True, False, True, False])])[0][2].tolist()
    [0, 2]
    """
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(ndim_used(e) for e in entries)
    if used > len(shape):
        raise IndexError(
            f"too many indices for array: array is {len(shape)}-dimensional, but {used} "
            "were indexed"
        )
    if not any(e is Ellipsis for e in entries):
        entries = [*entries, Ellipsis]
    at = next(k for k, e in enumerate(entries) if e is Ellipsis)
    fill = [slice(None)] * (len(shape) - used)
    entries = entries[:at] + fill + entries[at + 1 :]
    items, dim = [], 0
    for e in entries:
        if e is None:
            items.append(("n", None))
            continue
        if isinstance(e, slice):
            items.append(("s", dim, *e.indices(shape[dim])))
        elif isinstance(e, int):
            err = out_of_bounds(np.array(e), shape[dim], dim)
            if err:
                raise err
            items.append(("i", dim, e % shape[dim]))
        elif e.dtype.kind == "b":
            axes = tuple(shape[dim : dim + e.ndim])
            if e.size == 0 and e.shape != axes and all(k in (0, n) for k, n in zip(e.shape, axes)):
                # As NumPy: a mask axis of length 0 matches any axis; the mask selects nothing.
                items.extend(("a", dim + j, np.zeros(0, np.intp)) for j in range(e.ndim))
                dim += e.ndim
                continue
            for j in range(e.ndim):
                if e.shape[j] != shape[dim + j]:
                    raise IndexError(
                        f"boolean index did not match indexed array along axis {dim + j}; size "
                        f"of axis is {shape[dim + j]} but size of corresponding boolean axis "
                        f"is {e.shape[j]}"
                    )
            if not isinstance(e, np.ndarray):
                items.append(("m", dim, e))
            else:
                items.extend(("a", dim + j, nz) for j, nz in enumerate(np.nonzero(e)))
            dim += e.ndim
            continue
        elif not isinstance(e, np.ndarray):
            items.append(("d", dim, e))
        else:
            items.append(("a", dim, e))
        dim += 1
    return items


def checked_indices(a: np.ndarray, n: int, axis: int) -> np.ndarray:
    """Integer indices `a` into a dimension of size `n`, bounds-checked and non-negative."""
    err = out_of_bounds(a, n, axis)
    if err:
        raise err
    return np.where(a < 0, a + n, a).astype(np.intp, copy=False)


def broadcast_indices(arrays) -> tuple[int, ...]:
    """The broadcast shape of index arrays, or NumPy's IndexError."""
    try:
        return np.broadcast_shapes(*[a.shape for a in arrays])
    except ValueError:
        shapes = " ".join(fmt_shape(a.shape) for a in arrays)
        raise IndexError(
            f"shape mismatch: indexing arrays could not be broadcast together with shapes {shapes} "
        ) from None


def fmt_shape(shape) -> str:
    """A shape as NumPy's messages print it: ``(3,4)``, ``(3,)``."""
    return "(" + ",".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def _inverse(perm: np.ndarray) -> np.ndarray:
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size)
    return inv


def permuted_plan(src, dst, src_perm, dst_perm, local_ranks, nranks) -> ExchangePlan:
    """`exchange_plan` between distributions whose rank ``r`` lives on process rank
    ``perm[r]`` (None: on rank ``r``), keyed by process ranks."""
    ident = np.arange(nranks)
    sp = ident if src_perm is None else src_perm
    dp = ident if dst_perm is None else dst_perm
    s_local = tuple(sorted(int(r) for r in _inverse(sp)[list(local_ranks)]))
    d_local = tuple(sorted(int(r) for r in _inverse(dp)[list(local_ranks)]))
    ps = exchange_plan(src, dst, s_local)
    pr = ps if d_local == s_local else exchange_plan(src, dst, d_local)
    sends = {int(sp[s]): {int(dp[d]): p for d, p in ps.sends[s].items()} for s in s_local}
    recvs = {int(dp[d]): {int(sp[s]): p for s, p in pr.recvs[d].items()} for d in d_local}
    shapes = {int(dp[d]): pr.dst_local_shapes[d] for d in d_local}
    return ExchangePlan(sends, recvs, shapes)


# -- advanced keys --------------------------------------------------------------------------------


class AdvancedLayout:
    """Result order of an advanced key (parsed items) and the slices it applies first.

    Slices act first (``step1``, no data moves, giving layout ``x1``); the
    advanced dimensions ``A`` are then indexed by arrays broadcast together.
    Their result dimensions (``B``) replace them when they are adjacent in
    the key, else come first, as in NumPy. In the *exchange order* (``final``
    without new axes) ``B`` sits at position ``pB`` among the other
    dimensions, ``nonadv``.

    Examples
    --------
    >>> d = Distribution.create((4, 5, 6), grid=(1, 1, 1))
    >>> items = [("a", 0, np.array([1])), ("s", 1, 0, 5, 1), ("a", 2, np.array([2]))]
    >>> lay = AdvancedLayout(d, items)
    >>> lay.A, lay.final, lay.pB, lay.nonadv
    ([0, 2], ['B', ('x', 1)], 0, [1])
    """

    def __init__(self, source: Distribution, items: Sequence[tuple]):
        self.source = source
        adv = [k for k, it in enumerate(items) if it[0] in "ad"]
        self.A = [items[k][1] for k in adv]
        adjacent = adv == list(range(adv[0], adv[-1] + 1))
        rest = [it for it in items if it[0] not in "ad"]
        if adjacent:
            final = [
                ("B",) if k == adv[0] else it
                for k, it in enumerate(items)
                if k == adv[0] or it[0] not in "ad"
            ]
        else:
            final = [("B",), *rest]
        self.final = [it[0] if it[0] in "Bn" else ("x", it[1]) for it in final]
        exch = [e for e in self.final if e != "n"]
        self.pB = exch.index("B")
        self.nonadv = [e[1] for e in exch if e != "B"]
        key = [("s", 0, n, 1) for n in source.global_shape]
        for it in items:
            if it[0] == "s":
                key[it[1]] = ("s", *it[2:])
        self.step1 = basic_layout(source, tuple(key))
        self.x1 = self.step1.dist

    def final_dist(self, bmaps, nmaps) -> Distribution:
        """The result's distribution from the maps of ``B`` and of ``nonadv``."""
        maps, k = [], 0
        for e in self.final:
            if e == "B":
                maps.extend(bmaps)
            elif e == "n":
                maps.append(BlockMap(1, nprocs=1))
            else:
                maps.append(nmaps[k])
                k += 1
        return Distribution(maps)

    def drop_new(self, block: np.ndarray, nb: int) -> np.ndarray:
        """`block` in final order without its new axes (final -> exchange order)."""
        key = []
        for e in self.final:
            key.extend([slice(None)] * nb if e == "B" else [0 if e == "n" else slice(None)])
        return block[tuple(key)]

    def mesh(self, rank: int, shape: tuple, adv_local: list[np.ndarray]) -> tuple:
        """Index of `rank`'s block (of `shape`) picking positions `adv_local` of ``x1``'s
        block on the advanced dimensions, times the owned elements of the others: the
        result has shape ``(n, L_1, ..., L_k)``, all dimensions indexed by arrays."""
        parts = self.step1.local_key(rank)
        coords = self.x1.coords(rank)
        k = len(self.nonadv)
        idx = [None] * len(shape)
        for j, d in enumerate(self.A):
            idx[d] = compose(parts[d], adv_local[j], shape[d]).reshape((-1,) + (1,) * k)
        for j, d in enumerate(self.nonadv):
            m, c = self.x1.maps[d], coords[d]
            own = (
                np.arange(m.local_length(c)) if is_one_to_one(m) else m.owner(m.owned_indices(c))[1]
            )
            idx[d] = compose(parts[d], own, shape[d]).reshape(
                (1,) * (j + 1) + (-1,) + (1,) * (k - j - 1)
            )
        return tuple(idx)

    def owned_nonadv(self, rank: int) -> list[np.ndarray]:
        """The global indices (of ``x1``) `rank` owns along each of ``nonadv``."""
        coords = self.x1.coords(rank)
        return [self.x1.maps[d].owned_indices(coords[d]) for d in self.nonadv]

    def adv_coord(self, coords) -> int:
        """Row-major coordinate over the advanced dimensions' grid axes."""
        P = tuple(self.x1.grid_shape[d] for d in self.A)
        return int(np.ravel_multi_index([coords[d] for d in self.A], P))


def compose(part, local1: np.ndarray, n: int) -> np.ndarray:
    """Block positions of positions `local1` of ``block[part]`` along one axis."""
    if isinstance(part, slice):
        return np.arange(*part.indices(n), dtype=np.intp)[local1]
    return part[local1]


class FancyLayout(AdvancedLayout):
    """Where the elements picked by NumPy index arrays are, and where they go.

    The picked elements, flattened to ``M`` positions, form a virtual
    distribution ``Vs`` (exchange order) in which each rank holds, in
    ascending order, the positions whose element it owns; the result ``Dt``
    splits ``B[0]`` in even blocks over the grid ranks of the advanced
    dimensions. ``Vs``'s ranks are numbered in exchange order, which is not
    the process order when the advanced dimensions are not adjacent:
    process ``perm[r]`` holds its rank ``r``.

    Examples
    --------
    >>> d = Distribution.create((4, 6), dist="b", grid=(2, 2))
    >>> items = [("s", 0, 0, 4, 1), ("a", 1, np.array([5, 0, 4]))]
    >>> lay = FancyLayout(d, items)
    >>> lay.final_d.global_shape, [p.tolist() for p in lay.held]
    ((4, 3), [[1], [0, 2]])
    """

    def __init__(self, source: Distribution, items: Sequence[tuple]):
        super().__init__(source, items)
        arrays = [it[2] for it in items if it[0] == "a"]
        self.B = B = broadcast_indices(arrays)
        M = math.prod(B)
        flat = [np.broadcast_to(a, B).reshape(-1) for a in arrays]
        x1 = self.x1
        owners = [x1.maps[d].owner(f) for d, f in zip(self.A, flat)]
        self.adv_local = [o[1] for o in owners]
        PA = tuple(x1.grid_shape[d] for d in self.A)
        Padv = math.prod(PA)
        C = np.ravel_multi_index([o[0] for o in owners], PA) if M else np.zeros(0, np.intp)
        order = np.argsort(C, kind="stable")
        self.held = np.split(order, np.cumsum(np.bincount(C, minlength=Padv))[:-1])
        nmaps = [one_to_one_map(x1.maps[d]) for d in self.nonadv]
        pB, B0 = self.pB, B[0]
        self.Vs = Distribution([*nmaps[:pB], detect_map(M, self.held), *nmaps[pB:]])
        blocks = BlockMap(M, even_bounds(B0, Padv) * math.prod(B[1:]))
        self.Dt = Distribution([*nmaps[:pB], blocks, *nmaps[pB:]])
        bmaps = [BlockMap(B0, even_bounds(B0, Padv))] + [BlockMap(n, nprocs=1) for n in B[1:]]
        self.final_d = self.final_dist(bmaps, nmaps)
        vc = np.unravel_index(np.arange(source.nranks), self.Vs.grid_shape)
        src = [None] * source.ndim
        for d, c in zip(self.A, np.unravel_index(vc[pB], PA)):
            src[d] = c
        for j, d in enumerate(self.nonadv):
            src[d] = vc[j if j < pB else j + 1]
        self.perm = np.ravel_multi_index(src, x1.grid_shape)

    def held_mesh(self, rank: int, shape: tuple) -> tuple:
        """(positions among the ``M`` that `rank` holds, the `mesh` picking them)."""
        pos = self.held[self.adv_coord(self.x1.coords(rank))]
        return pos, self.mesh(rank, shape, [a[pos] for a in self.adv_local])


def owned_flags(dist: Distribution, rank: int):
    """True, or a boolean array broadcastable to `rank`'s local shape: what it owns."""
    if all(is_one_to_one(m) for m in dist.maps):
        return True
    flags = []
    for k, (m, c) in enumerate(zip(dist.maps, dist.coords(rank))):
        f = np.zeros(m.local_length(c), bool)
        f[m.owner(m.owned_indices(c))[1]] = True
        flags.append(f.reshape((1,) * k + (-1,) + (1,) * (dist.ndim - k - 1)))
    return functools.reduce(np.logical_and, flags)
