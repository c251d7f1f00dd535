"""Layout helpers, the `take` primitive, axis permutations and reshapes.

Every function first works out the layout of its result from the layout of
its input (metadata only, no communication), then moves elements, if any
must move, with the one exchange mechanism (`dapx.exchange.plans.exchange_plan`
executed by `dapx.core.redistribution.run_plan`).

`take` is the primitive behind roll, pad and diff (`dapx.functions.joining`): along
some axes, output index ``o`` takes input index ``idx[o]`` (repeats allowed;
``-1`` marks a fill value). Each rank first picks, locally, the elements it
owns in output order; that describes the data by an unstructured map over
the output indices, and one exchange moves it to the result's layout. Only
elements that change rank move; nothing here gathers a whole array.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..core.array import SCALAR, DistributedArray, new_array
from ..core.dispatch import implements
from ..core.redistribution import redistribute
from ..exchange.execute import run_plan
from ..exchange.plans import (
    ExchangePlan,
    Piece,
    as_index_array,
    exchange_plan,
    owned_positions,
    simplify_index,
)
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap, Map, UnstructuredMap, even_bounds

__all__ = [
    "clean_distribution",
    "expand_dims",
    "from_replicated",
    "matrix_transpose",
    "moveaxis",
    "owned_block",
    "permute_axes",
    "ravel",
    "reshape",
    "rows_distribution",
    "squeeze",
    "swapaxes",
    "take",
    "transpose",
    "write_into",
]


# -- small helpers ---------------------------------------------------------------------------------


def _index(parts: Sequence) -> tuple:
    """A NumPy index from one slice or index array per dimension (basic when possible)."""
    if all(isinstance(p, slice) for p in parts):
        return tuple(parts)
    return np.ix_(*[as_index_array(p) for p in parts])


def _global_key(dist: Distribution, rank: int) -> tuple:
    """The index selecting `rank`'s local block out of the whole array."""
    parts = []
    for m, c in zip(dist.maps, dist.coords(rank)):
        if isinstance(m, BlockMap) and not m.is_padded:
            # A block's indices are its bounds: no index array to build and inspect.
            parts.append(slice(int(m.bounds[c]), int(m.bounds[c + 1])))
        else:
            parts.append(simplify_index(m.global_indices(c)))
    return _index(parts)


def owned_block(x: DistributedArray, rank: int) -> np.ndarray:
    """The elements `rank` owns (padding and shared copies left out), in local order.

    Examples
    --------
    >>> import dapx
    >>> a = dapx.arange(6, padding=1, backend=dapx.simulated(2))
    >>> a.local(0), owned_block(a, 0)
    (array([0, 1, 2, 3]), array([0, 1, 2]))
    """
    if x.ndim == 0:
        return x.locals[rank]
    local, _ = owned_positions(x.distribution, rank)
    return x.locals[rank][_index(local)]


def _is_trivial(m: Map) -> bool:
    """Whether the map keeps its whole dimension on one grid rank, in order, unpadded."""
    if m.nprocs != 1 or m.local_length(0) != m.size:
        return False
    return bool(np.array_equal(m.global_indices(0), np.arange(m.size)))


def _clean_map(m: Map) -> Map:
    """`m` without padding and with one holder per index (the map of a fresh result)."""
    if isinstance(m, BlockMap) and m.is_padded:
        return BlockMap(m.size, m.bounds, periodic=m.periodic)
    if isinstance(m, UnstructuredMap) and not m.one_to_one:
        return UnstructuredMap(m.size, [m.owned_indices(c) for c in range(m.nprocs)], True)
    return m


def clean_distribution(dist: Distribution) -> Distribution:
    """`dist` without padding and without shared indices: every element held once.

    Examples
    --------
    >>> d = Distribution.create((10,), grid=(2,), padding=1)
    >>> clean_distribution(d).local_shape(0), d.local_shape(0)
    ((5,), (6,))
    """
    maps = tuple(_clean_map(m) for m in dist.maps)
    return dist if maps == dist.maps else Distribution(maps, dist.grid)


def rows_distribution(shape: Sequence[int], nranks: int, bounds=None) -> Distribution:
    """Block over the first dimension (even, or `bounds`), the others undistributed.

    Each rank then holds a contiguous run of the array in C order, in rank
    order: the layout through which reshapes and flattening go.

    Examples
    --------
    >>> rows_distribution((5, 3), 2).local_shape(1)
    (2, 3)
    """
    shape = tuple(shape)
    first = even_bounds(shape[0], nranks) if bounds is None else np.asarray(bounds)
    return Distribution([BlockMap(shape[0], first), *(BlockMap(n, nprocs=1) for n in shape[1:])])


def from_replicated(value, backend, dist: Distribution | None = None) -> DistributedArray:
    """Distribute a NumPy array that every process already holds (no communication).

    Each rank copies its own part; the default layout is `rows_distribution`.

    Examples
    --------
    >>> import dapx
    >>> a = from_replicated(np.arange(5), dapx.simulated(2))
    >>> a.local(1)
    array([3, 4])
    """
    value = np.asarray(value)
    if value.ndim == 0:
        return new_array(SCALAR, {r: value.copy() for r in backend.local_ranks}, backend)
    if dist is None:
        dist = rows_distribution(value.shape, backend.nranks)
    blocks = {r: np.array(value[_global_key(dist, r)]) for r in backend.local_ranks}
    return new_array(dist, blocks, backend, value.dtype)


def _copy(x: DistributedArray) -> DistributedArray:
    return new_array(x.distribution, {r: b.copy() for r, b in x.locals.items()}, x.backend, x.dtype)


def _view(x: DistributedArray) -> DistributedArray:
    return new_array(x.distribution, dict(x.locals), x.backend, x.dtype)


def _as_input(a):
    return a if isinstance(a, DistributedArray) else np.asarray(a)


def _common_backend(arrays):
    distributed = [a for a in arrays if isinstance(a, DistributedArray)]
    backend = distributed[0].backend
    for a in distributed[1:]:
        if a.backend != backend:
            raise ValueError(f"arrays live on different backends: {backend} and {a.backend}")
    return backend


def write_into(out, result: DistributedArray) -> DistributedArray:
    """Copy `result` into the owned elements of DistributedArray `out` (``out=``).

    `result` is aligned to ``out``'s layout in one exchange; padding and
    shared copies in `out` are left alone.

    Examples
    --------
    >>> import dapx
    >>> b = dapx.simulated(2)
    >>> out = dapx.zeros(4, int, dist="c", backend=b)
    >>> write_into(out, dapx.arange(4, backend=b)).gather()
    array([0, 1, 2, 3])
    """
    from ..core.redistribution import align

    if not isinstance(out, DistributedArray):
        raise TypeError(
            f"out= must be a DistributedArray, got {type(out).__name__} (writing into a "
            "NumPy array would gather)"
        )
    if out.shape != result.shape:
        raise ValueError(f"Output array is the wrong shape: {out.shape}, expected {result.shape}")
    if out.ndim == 0:
        value = result.locals[result.backend.local_ranks[0]]
        for block in out.locals.values():
            block[...] = value
        return out
    aligned = align(result, out.distribution)
    for r, block in out.locals.items():
        key = _index(owned_positions(out.distribution, r)[0])
        block[key] = aligned[r][key]
    return out


# -- the take primitive ----------------------------------------------------------------------------


def _take_local(block: np.ndarray, positions: np.ndarray, axis: int) -> np.ndarray:
    if block.shape[axis] == 0:  # only fill positions are asked of an empty block
        shape = list(block.shape)
        shape[axis] = positions.size
        return np.zeros(shape, block.dtype)
    return block[(slice(None),) * axis + (simplify_index(positions),)]


def take(
    x: DistributedArray, indexers: dict, target: Distribution, fills: dict | None = None, dtype=None
) -> DistributedArray:
    """Pick elements along axes, repeats allowed, and lay the result out by `target`.

    Along each axis ``k`` in `indexers`, result index ``o`` holds ``x``'s
    index ``indexers[k][o]``; ``-1`` there takes ``fills[k][o]`` instead
    (where several axes fill the same element, the last axis wins, as in
    `numpy.pad`). Other axes keep their size. One exchange.

    Parameters
    ----------
    x : DistributedArray
    indexers : dict of int -> 1-D integer array
    target : Distribution
        Layout of the result; its shape is ``x``'s with ``len(indexers[k])``
        along each axis ``k``.
    fills : dict of int -> 1-D array, optional
    dtype : dtype, optional
        Result dtype (default ``x.dtype``).

    Examples
    --------
    >>> import dapx
    >>> x = dapx.arange(6, backend=dapx.simulated(3))
    >>> take(x, {0: np.array([5, 5, 0])}, rows_distribution((3,), 3)).gather()
    array([5, 5, 0])
    """
    dtype = x.dtype if dtype is None else np.dtype(dtype)
    fills = fills or {}
    maps = list(x.distribution.maps)
    picks = {}
    for k in sorted(indexers):
        idx = np.asarray(indexers[k], np.intp)
        valid = idx >= 0
        coord = np.zeros(idx.size, np.intp)
        local = np.zeros(idx.size, np.intp)
        if valid.any():
            coord[valid], local[valid] = maps[k].owner(idx[valid])
        groups = [np.flatnonzero(coord == a) for a in range(maps[k].nprocs)]
        picks[k] = (idx, groups, local)
        maps[k] = UnstructuredMap(idx.size, groups, True)
    source = Distribution(maps, x.distribution.grid)
    blocks = {}
    for r in x.backend.local_ranks:
        block = x.locals[r]
        coords = source.coords(r)
        for k, (idx, groups, local) in picks.items():
            sel = groups[coords[k]]
            block = _take_local(block, local[sel], k)
            if k in fills:
                mask = idx[sel] < 0
                if mask.any():
                    shape = [1] * block.ndim
                    shape[k] = sel.size
                    fill = np.asarray(fills[k], dtype)[sel].reshape(shape)
                    block = np.where(mask.reshape(shape), fill, block)
        blocks[r] = block.astype(dtype, copy=False)
    if source == target:
        return new_array(target, {r: np.array(b) for r, b in blocks.items()}, x.backend, dtype)
    plan = exchange_plan(source, target, x.backend.local_ranks)
    return new_array(target, run_plan(plan, blocks, dtype, x.backend), x.backend, dtype)


# -- axis permutations -----------------------------------------------------------------------------


def _permutation(ndim: int, func, *args) -> tuple[int, ...]:
    """The axis permutation NumPy's `func` makes (validated by NumPy, on no data).

    The dummy has shape ``(0, 1, ..., ndim-1)``: size 0, and each axis's
    length names it.
    """
    return func(np.empty(tuple(range(ndim)), np.int8), *args).shape


def permute_axes(x: DistributedArray, perm: Sequence[int]) -> DistributedArray:
    """`x` with its axes permuted: the maps permute and local blocks transpose as views.

    The grid axes permute with the maps. Ranks are numbered row-major over
    the grid, so when that renumbers who holds which block, whole blocks move
    to their new ranks in one exchange; when the grid axes of size > 1 keep
    their order, nothing moves and the result shares memory with `x`.

    Examples
    --------
    >>> import dapx
    >>> a = dapx.asarray(np.arange(6).reshape(2, 3), dist=("b", "n"), backend=dapx.simulated(2))
    >>> t = permute_axes(a, (1, 0))
    >>> t.distribution.grid_shape, np.shares_memory(t.local(1), a.local(1))
    ((1, 2), True)
    """
    perm = tuple(int(p) for p in perm)
    if x.ndim == 0 or perm == tuple(range(x.ndim)):
        return _view(x)
    old = x.distribution
    new = Distribution([old.maps[p] for p in perm])
    blocks = {r: b.transpose(perm) for r, b in x.locals.items()}
    dest = [new.grid.rank(tuple(old.coords(r)[p] for p in perm)) for r in range(old.nranks)]
    if dest == list(range(old.nranks)):
        return new_array(new, blocks, x.backend, x.dtype)
    source = {q: r for r, q in enumerate(dest)}
    whole = (slice(None),) * x.ndim
    ranks = x.backend.local_ranks
    plan = ExchangePlan(
        sends={r: {dest[r]: Piece(whole, whole, new.local_shape(dest[r]))} for r in ranks},
        recvs={q: {source[q]: Piece(whole, whole, new.local_shape(q))} for q in ranks},
        dst_local_shapes={q: new.local_shape(q) for q in ranks},
    )
    return new_array(new, run_plan(plan, blocks, x.dtype, x.backend), x.backend, x.dtype)


@implements(np.transpose)
def transpose(a, axes=None):
    """`numpy.transpose`: permute the axes (see `permute_axes` for what moves).

    Examples
    --------
    >>> import dapx
    >>> a = dapx.asarray(np.arange(6).reshape(2, 3), backend=dapx.simulated(4))
    >>> np.transpose(a).gather()
    array([[0, 3],
           [1, 4],
           [2, 5]])
    """
    return permute_axes(a, _permutation(a.ndim, np.transpose, axes))


@implements(np.swapaxes)
def swapaxes(a, axis1, axis2):
    """`numpy.swapaxes`.

    Examples
    --------
    >>> import dapx
    >>> a = dapx.zeros((2, 3, 4), backend=dapx.simulated(2))
    >>> np.swapaxes(a, 0, 2).shape
    (4, 3, 2)
    """
    return permute_axes(a, _permutation(a.ndim, np.swapaxes, axis1, axis2))


@implements(np.moveaxis)
def moveaxis(a, source, destination):
    """`numpy.moveaxis`.

    Examples
    --------
    >>> import dapx
    >>> a = dapx.zeros((2, 3, 4), backend=dapx.simulated(2))
    >>> np.moveaxis(a, 0, -1).shape
    (3, 4, 2)
    """
    return permute_axes(a, _permutation(a.ndim, np.moveaxis, source, destination))


@implements(np.matrix_transpose)
def matrix_transpose(x, /):
    """`numpy.matrix_transpose`: swap the last two axes.

    Examples
    --------
    >>> import dapx
    >>> np.matrix_transpose(dapx.zeros((2, 3, 4), backend=dapx.simulated(2))).shape
    (2, 4, 3)
    """
    return permute_axes(x, _permutation(x.ndim, np.matrix_transpose))


# -- reshape ---------------------------------------------------------------------------------------


def _regroup(old: list[Map], new: list[int]) -> list[Map] | None:
    """Maps for `new` dims made of `old` dims (same total), if that is local on every rank."""
    first, rest = old[0], old[1:]
    if len(old) == 1 and len(new) == 1:
        return [first]
    if not all(_is_trivial(m) for m in rest):
        return None
    tail = [BlockMap(n, nprocs=1) for n in new[1:]]
    if _is_trivial(first):
        return [BlockMap(new[0], nprocs=1), *tail]
    if not isinstance(first, BlockMap) or first.is_padded:
        return None
    flat = first.bounds * math.prod(m.size for m in rest)
    inner = math.prod(new[1:])
    if (flat % inner).any():
        return None
    return [BlockMap(new[0], flat // inner), *tail]


def _local_reshape(dist: Distribution, shape: tuple[int, ...]) -> Distribution | None:
    """The layout of the reshaped array if every rank can reshape its own block, else None.

    Dimensions pair up in groups of equal product. A group is local when it
    is one dimension on each side, or when all its old dimensions but the
    first are undistributed and the first is a block whose rank boundaries,
    in flat elements, fall on whole rows of the new first dimension.
    Size-1 dimensions held by one grid rank come and go freely.
    """
    if 0 in dist.shape:
        return None
    old = [m for m in dist.maps if not (m.size == 1 and _is_trivial(m))]
    new = [n for n in shape if n != 1]
    out: list[Map] = []
    i = j = 0
    while i < len(old) and j < len(new):
        group_old, group_new = [old[i]], [new[j]]
        po, pn = old[i].size, new[j]
        i, j = i + 1, j + 1
        while po != pn:
            if po < pn:
                if i == len(old):
                    return None
                group_old.append(old[i])
                po, i = po * old[i].size, i + 1
            else:
                if j == len(new):
                    return None
                group_new.append(new[j])
                pn, j = pn * new[j], j + 1
        maps = _regroup(group_old, group_new)
        if maps is None:
            return None
        out.extend(maps)
    if i != len(old) or j != len(new):
        return None
    it = iter(out)
    return Distribution([BlockMap(1, nprocs=1) if n == 1 else next(it) for n in shape])


def _reshape_moving(x: DistributedArray, shape: tuple[int, ...]) -> DistributedArray:
    """Reshape through row layouts: the result is block-distributed along its first dim."""
    backend, P = x.backend, x.backend.nranks
    result = rows_distribution(shape, P)
    if x.size == 0:
        blocks = {r: np.empty(result.local_shape(r), x.dtype) for r in backend.local_ranks}
        return new_array(result, blocks, backend, x.dtype)
    inner_old, inner_new = math.prod(x.shape[1:]), math.prod(shape[1:])
    flat = even_bounds(shape[0], P) * inner_new  # the result's rank boundaries, in elements
    if not (flat % inner_old).any():
        # Rows of x can be cut exactly where the result's ranks start: one exchange.
        src = rows_distribution(x.shape, P, flat // inner_old)
        y = x if x.distribution == src else redistribute(x, src)
        blocks = {r: b.reshape(result.local_shape(r)) for r, b in y.locals.items()}
        return new_array(result, blocks, x.backend, x.dtype)
    src = rows_distribution(x.shape, P)
    y = x if x.distribution == src else redistribute(x, src)
    flat_src = Distribution([BlockMap(x.size, src.maps[0].bounds * inner_old)])
    flat_dst = Distribution([BlockMap(x.size, flat)])
    plan = exchange_plan(flat_src, flat_dst, backend.local_ranks)
    moved = run_plan(plan, {r: b.reshape(-1) for r, b in y.locals.items()}, x.dtype, backend)
    blocks = {r: b.reshape(result.local_shape(r)) for r, b in moved.items()}
    return new_array(result, blocks, x.backend, x.dtype)


def _to_scalar(x: DistributedArray) -> DistributedArray:
    """A size-1 array as a 0-d (replicated) one: its single element goes to every process."""
    pieces = x.backend.allgather({r: owned_block(x, r).reshape(-1) for r in x.backend.local_ranks})
    value = np.concatenate(pieces).reshape(())
    return new_array(SCALAR, {r: value.copy() for r in x.backend.local_ranks}, x.backend, x.dtype)


@implements(np.reshape)
def reshape(a, /, shape, order="C", *, copy=None):
    """`numpy.reshape`, in C order.

    Local (no data moves; views when NumPy would give views) when only
    undistributed trailing dimensions split or merge, or a block dimension
    merges with undistributed ones at whole rows. Otherwise the data moves
    through row layouts and the result is block-distributed along its first
    dimension.

    Raises
    ------
    ValueError
        As NumPy, for a shape of the wrong size, two ``-1``, a bad `order`,
        or ``copy=False`` when data must move.
    NotImplementedError
        For ``order="F"``.

    Examples
    --------
    >>> import dapx
    >>> a = dapx.arange(12, backend=dapx.simulated(3))
    >>> b = np.reshape(a, (3, -1))
    >>> b.shape, b.distribution.grid_shape
    ((3, 4), (3, 1))
    >>> b.local(0)
    array([[0, 1, 2, 3]])
    """
    dummy = np.broadcast_to(np.empty((), np.int8), a.shape)  # zero strides: reshape is a view
    new_shape = dummy.reshape(shape, order=order).shape
    if order == "F":
        # Note: only C order: an F-order reshape would need a transposed exchange.
        raise NotImplementedError(
            "dapx reshapes in C order only (order='C' or 'A'); order='F' would reorder "
            "elements across ranks: transpose, reshape and transpose back instead"
        )
    x = a
    if new_shape == x.shape:
        return _copy(x) if copy else _view(x)
    if x.ndim and new_shape:
        local = _local_reshape(x.distribution, new_shape)
        if local is not None:
            blocks = {
                r: np.reshape(b, local.local_shape(r), copy=copy) for r, b in x.locals.items()
            }
            return new_array(local, blocks, x.backend, x.dtype)
    if copy is False:
        raise ValueError(
            f"Unable to avoid creating a copy while reshaping: {x.shape} -> {new_shape} moves "
            "data between ranks"
        )
    if x.ndim == 0:
        value = x.locals[x.backend.local_ranks[0]].reshape(new_shape)
        return from_replicated(value, x.backend)
    if not new_shape:
        return _to_scalar(x)
    return _reshape_moving(x, new_shape)


@implements(np.ravel)
def ravel(a, order="C"):
    """`numpy.ravel` in C order (a view when no data moves).

    Examples
    --------
    >>> import dapx
    >>> a = dapx.asarray(np.arange(6).reshape(2, 3), backend=dapx.simulated(2))
    >>> np.ravel(a).gather()
    array([0, 1, 2, 3, 4, 5])
    """
    if order not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return reshape(a, (-1,), order="C" if order in ("A", "K") else order)


@implements(np.expand_dims)
def expand_dims(a, axis):
    """`numpy.expand_dims`: new undistributed size-1 axes; no data moves.

    Examples
    --------
    >>> import dapx
    >>> np.expand_dims(dapx.zeros((4, 5), backend=dapx.simulated(2)), (0, 2)).shape
    (1, 4, 1, 5)
    """
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = a.ndim + len(axes)
    axes = normalize_axis_tuple(axes, ndim)
    if a.ndim == 0:
        value = a.locals[a.backend.local_ranks[0]].reshape((1,) * ndim)
        return from_replicated(value, a.backend)
    it = iter(a.distribution.maps)
    dist = Distribution([BlockMap(1, nprocs=1) if k in axes else next(it) for k in range(ndim)])
    blocks = {r: np.expand_dims(b, axes) for r, b in a.locals.items()}
    return new_array(dist, blocks, a.backend, a.dtype)


@implements(np.squeeze)
def squeeze(a, axis=None):
    """`numpy.squeeze` (no data moves when the removed axes live on one grid rank).

    Examples
    --------
    >>> import dapx
    >>> np.squeeze(dapx.zeros((4, 1), backend=dapx.simulated(2))).shape
    (4,)
    """
    if axis is None:
        axes = tuple(k for k, n in enumerate(a.shape) if n == 1)
    else:
        axes = normalize_axis_tuple(axis, a.ndim)
        if any(a.shape[k] != 1 for k in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return reshape(a, tuple(n for k, n in enumerate(a.shape) if k not in axes))
