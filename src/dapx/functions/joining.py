"""Joining and shifting: concatenate, stack, pad, roll, diff.

These cross rank boundaries, so each is expressed as data movement with the
one exchange mechanism, never as a gather. Concatenation moves each input in
one exchange into its slab of the result's layout (the result's map along
the axis, restricted to the slab and relabelled from 0, is the target).
Roll and diff are `dapx.functions.shaping.take` calls: roll with NumPy's own index map
of ``arange(n)``, diff with two shifted takes into one layout. Pad keeps the
rank boundaries of block axes and adds the new edges to the edge ranks: each
rank copies its block and fills its part of the edges from its own data where
that suffices, so only edge values that live on other ranks move (a `take`
with NumPy's index map is the general path, for cyclic and unstructured axes).
Block axes keep their rank boundaries, so mostly boundary elements move.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..core.array import DistributedArray, new_array
from ..core.dispatch import implements
from ..core.redistribution import redistribute
from ..exchange.execute import run_plan
from ..exchange.plans import exchange_plan, simplify_index
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap, CyclicMap, Map, UnstructuredMap
from .shaping import (
    _as_input,
    _clean_map,
    _common_backend,
    _copy,
    _global_key,
    _index,
    clean_distribution,
    expand_dims,
    owned_block,
    ravel,
    reshape,
    take,
    write_into,
)

__all__ = ["concatenate", "diff", "pad", "roll", "stack"]


def _resized_map(m: Map, size: int, shift: int = 0) -> Map:
    """A map of `size` indices over the same grid ranks, like `m` with indices shifted."""
    m = _clean_map(m)
    if isinstance(m, BlockMap):
        bounds = np.clip(m.bounds + shift, 0, size)
        bounds[0], bounds[-1] = 0, size
        return BlockMap(size, bounds, periodic=m.periodic)
    if isinstance(m, CyclicMap):
        return CyclicMap(size, m.nprocs, m.block_size)
    return BlockMap(size, nprocs=m.nprocs)


def _fill_slab(blocks: dict, a, target: Distribution, axis: int, start: int, backend) -> None:
    """Write `a` into indices ``start .. start + a.shape[axis]`` along `axis` of `blocks`.

    `blocks` are laid out by `target` (unpadded); `a` has `target`'s shape
    except along `axis`. A DistributedArray moves in one exchange into the
    slab's sub-layout; a NumPy array is sliced locally.
    """
    n = a.shape[axis]
    if n == 0:
        return
    m = target.maps[axis]
    maps = list(target.maps)
    if isinstance(m, BlockMap) and not m.is_padded:
        # The slab of a block axis is itself blocks: bounds, no index arrays (and fast plans).
        bounds = np.asarray(m.bounds)
        lo, hi = bounds[:-1], bounds[1:]
        first, last = np.clip(start, lo, hi), np.clip(start + n, lo, hi)
        positions = [slice(int(f - b), int(e - b)) for f, e, b in zip(first, last, lo)]
        maps[axis] = BlockMap(n, np.clip(bounds - start, 0, n))
    else:
        parts, positions = [], []
        for c in range(m.nprocs):
            g = m.global_indices(c)
            keep = (g >= start) & (g < start + n)
            parts.append(g[keep] - start)
            positions.append(simplify_index(np.flatnonzero(keep)))
        maps[axis] = UnstructuredMap(n, parts, True)
    sub = Distribution(maps, target.grid)
    ranks = backend.local_ranks
    slabs = {}
    for r in ranks:
        key = [slice(None)] * target.ndim
        key[axis] = positions[sub.coords(r)[axis]]
        slabs[r] = _index(key)
    if isinstance(a, DistributedArray):
        if a.ndim and a.distribution == sub:
            moved = a.locals
        else:
            plan = exchange_plan(a.distribution, sub, ranks)
            if all(isinstance(p, slice) for p in positions):
                # The slab is a view of each result block: receive straight into it.
                views = {r: blocks[r][slabs[r]] for r in ranks}
                run_plan(plan, a.locals, a.dtype, backend, out=views)
                return
            moved = run_plan(plan, a.locals, a.dtype, backend)
    else:
        moved = {r: a[_global_key(sub, r)] for r in ranks}
    for r in ranks:
        blocks[r][slabs[r]] = moved[r]


# -- joining ---------------------------------------------------------------------------------------


def _result_dtype(arrays, dtype, casting) -> np.dtype:
    """NumPy's result dtype and casting check for joining `arrays` (on empty stand-ins)."""
    return np.concatenate(
        [np.empty(0, a.dtype) for a in arrays], dtype=dtype, casting=casting
    ).dtype


@implements(np.concatenate)
def concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """`numpy.concatenate` of DistributedArrays and NumPy arrays.

    The result is laid out like the first distributed input along the other
    dimensions and even-block along `axis` over the same grid ranks. Each
    distributed input moves into its slab in one exchange; NumPy inputs are
    sliced locally.

    Examples
    --------
    >>> import dapx
    >>> b = dapx.simulated(2)
    >>> x = dapx.arange(3, backend=b)
    >>> np.concatenate([x, np.array([7, 8]), x]).gather()
    array([0, 1, 2, 7, 8, 0, 1, 2])
    """
    arrays = [_as_input(a) for a in arrays]
    if axis is None:
        arrays = [ravel(a) if isinstance(a, DistributedArray) else a.ravel() for a in arrays]
        axis = 0
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    ndim = arrays[0].ndim
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis_index(axis, ndim)
    for i, a in enumerate(arrays[1:], 1):
        if a.ndim != ndim:
            raise ValueError(
                "all the input arrays must have same number of dimensions, but the array at "
                f"index 0 has {ndim} dimension(s) and the array at index {i} has {a.ndim} "
                "dimension(s)"
            )
        for k in range(ndim):
            if k != axis and a.shape[k] != arrays[0].shape[k]:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {k}, the array at index 0 has size "
                    f"{arrays[0].shape[k]} and the array at index {i} has size {a.shape[k]}"
                )
    result_dtype = _result_dtype(arrays, dtype, casting)
    backend = _common_backend(arrays)
    lead = next(a for a in arrays if isinstance(a, DistributedArray))
    maps = [_clean_map(m) for m in lead.distribution.maps]
    total = sum(a.shape[axis] for a in arrays)
    maps[axis] = BlockMap(total, nprocs=maps[axis].nprocs)
    target = Distribution(maps, lead.distribution.grid)
    blocks = {r: np.empty(target.local_shape(r), result_dtype) for r in backend.local_ranks}
    start = 0
    for a in arrays:
        _fill_slab(blocks, a, target, axis, start, backend)
        start += a.shape[axis]
    result = new_array(target, blocks, backend, result_dtype)
    return result if out is None else write_into(out, result)


@implements(np.stack)
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """`numpy.stack`: a new undistributed axis, then `concatenate`.

    Examples
    --------
    >>> import dapx
    >>> x = dapx.arange(3, backend=dapx.simulated(2))
    >>> np.stack([x, x], axis=1).gather()
    array([[0, 0],
           [1, 1],
           [2, 2]])
    """
    arrays = [_as_input(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    if len({a.shape for a in arrays}) != 1:
        raise ValueError("all input arrays must have the same shape")
    axis = normalize_axis_index(axis, arrays[0].ndim + 1)
    expanded = [
        expand_dims(a, axis) if isinstance(a, DistributedArray) else np.expand_dims(a, axis)
        for a in arrays
    ]
    return concatenate(expanded, axis=axis, out=out, dtype=dtype, casting=casting)


# -- pad, roll, diff -------------------------------------------------------------------------------


def _as_pairs(x, ndim: int, as_index: bool = False) -> list:
    """`x` broadcast to one (before, after) pair per dimension, as `numpy.pad` reads it."""
    x = np.array(x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            if as_index and x[0] < 0:
                raise ValueError("index can't contain negative values")
            return [(x[0], x[0])] * ndim
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            if as_index and (x[0] < 0 or x[1] < 0):
                raise ValueError("index can't contain negative values")
            return [(x[0], x[1])] * ndim
    if as_index and x.size and x.min() < 0:
        raise ValueError("index can't contain negative values")
    return np.broadcast_to(x, (ndim, 2)).tolist()


_PAD_KWARGS = {
    "constant": {"constant_values"},
    "edge": set(),
    "wrap": set(),
    "reflect": {"reflect_type"},
    "symmetric": {"reflect_type"},
}
_NUMPY_ONLY_PAD_MODES = ("empty", "linear_ramp", "maximum", "mean", "median", "minimum")


@implements(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    """`numpy.pad` with modes constant, edge, reflect, symmetric and wrap.

    When every padded axis is a block axis, the result keeps the rank
    boundaries and the first and last ranks along each padded axis take the
    new edges. Each rank copies its block into place and fills its edges
    from its own data where NumPy's index map of ``arange(n)`` stays within
    the rank's block (always for constant, usually for edge, reflect and
    symmetric); the edges that need other ranks' data (wrap, or edge ranks
    with too few elements) arrive in small exchanges of the edges only. Padded
    cyclic or unstructured axes go through one `take` with NumPy's index
    map of ``arange(n)``.

    Raises
    ------
    NotImplementedError
        For other modes, a callable mode, and ``reflect_type="odd"``.

    Examples
    --------
    >>> import dapx
    >>> x = dapx.arange(4, backend=dapx.simulated(2))
    >>> np.pad(x, (2, 1), mode="reflect").gather()
    array([2, 1, 0, 1, 2, 3, 2])
    >>> np.pad(x, 1, mode="wrap").local(0)  # rank 0 holds the new first element
    array([3, 0, 1])
    """
    if callable(mode) or mode in _NUMPY_ONLY_PAD_MODES:
        raise NotImplementedError(
            f"np.pad mode {mode!r} is not implemented for DistributedArray; use one of "
            f"{sorted(_PAD_KWARGS)}"
        )
    if mode not in _PAD_KWARGS:
        raise ValueError(f"mode '{mode}' is not supported")
    unsupported = set(kwargs) - _PAD_KWARGS[mode]
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    # Note: modes that compute values (mean, linear_ramp, ...) and the "odd" reflection
    # are not index maps of the input, so they are not implemented.
    if kwargs.get("reflect_type", "even") == "odd":
        raise NotImplementedError(
            "np.pad with reflect_type='odd' is not implemented for DistributedArray (only 'even')"
        )
    x = array
    if isinstance(pad_width, dict):
        seq = [(0, 0)] * x.ndim
        for ax, width in pad_width.items():
            seq[ax] = (width, width) if isinstance(width, int) else tuple(width)
        pad_width = seq
    if np.asarray(pad_width).dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    widths = [(int(lo), int(hi)) for lo, hi in _as_pairs(pad_width, x.ndim, as_index=True)]
    if x.ndim == 0:
        return _copy(x)
    values = _as_pairs(kwargs.get("constant_values", 0), x.ndim) if mode == "constant" else None
    maps = [_clean_map(m) for m in x.distribution.maps]
    indexers, fills = {}, {}
    for k, (lo, hi) in enumerate(widths):
        n = x.shape[k]
        if not lo and not hi:
            continue
        if mode == "constant":
            indexers[k] = np.pad(np.arange(n), (lo, hi), constant_values=-1)
            fill = np.zeros(n + lo + hi, x.dtype)
            fill[:lo], fill[n + lo :] = values[k][0], values[k][1]
            fills[k] = fill
        else:
            if not n:
                raise ValueError(
                    f"can't extend empty axis {k} using modes other than 'constant' or 'empty'"
                )
            options = {"reflect_type": kwargs["reflect_type"]} if "reflect_type" in kwargs else {}
            indexers[k] = np.pad(np.arange(n), (lo, hi), mode=mode, **options)
        maps[k] = _resized_map(maps[k], n + lo + hi, lo)
    target = Distribution(maps, x.distribution.grid)
    if not indexers:
        return _copy(x) if target == x.distribution else redistribute(x, target)
    if all(isinstance(_clean_map(x.distribution.maps[k]), BlockMap) for k in indexers):
        return _pad_blocks(x, widths, values, indexers, target)
    return take(x, indexers, target, fills)


def _pad_blocks(
    x: DistributedArray, widths: list, values, indexers: dict, target: Distribution
) -> DistributedArray:
    """`pad` when every padded axis (the keys of `indexers`) is a block axis.

    `target` has `x`'s rank boundaries shifted by the low widths. Each rank
    writes its owned block into the middle of its result block, then fills
    the edges it holds axis by axis, as `numpy.pad` does: along axis ``k``
    the edge region spans the whole result block along earlier axes (whose
    edges are filled already, which makes the corners) and only the middle
    along later ones. A constant fills it; otherwise the values are NumPy's
    index map ``indexers[k]``, read from the rank's own middle when the map
    stays within its block, else taken from the ranks that hold them: one
    small exchange for the edge slab, and one more for its corners when an
    earlier axis is padded (`take` of the outer index map: the same values).
    `values` are the (before, after) constants per axis (None unless mode
    is constant).
    """
    dist, backend = x.distribution, x.backend
    clean = [_clean_map(m) for m in dist.maps]
    padded = sorted(indexers)
    remote = {}
    for k in padded if values is None else ():
        (lo, hi), n, bounds = widths[k], x.shape[k], clean[k].bounds
        idx = indexers[k]
        if (idx[:lo] < bounds[1]).all() and (idx[lo + n :] >= bounds[-2]).all():
            continue  # the edge ranks hold every index their edges read
        nprocs = clean[k].nprocs  # > 1: one rank holds its whole axis
        edges = BlockMap(lo + hi, [0, *[lo] * (nprocs - 1), lo + hi])
        slab = take(
            x,
            {k: np.concatenate([idx[:lo], idx[lo + n :]])},
            Distribution([*clean[:k], edges, *clean[k + 1 :]], dist.grid),
        )
        earlier = {j: indexers[j] for j in padded if j < k}
        if earlier:  # the corners: the earlier axes' edges of the (small) slab
            maps = [target.maps[j] if j < k else m for j, m in enumerate(slab.distribution.maps)]
            slab = take(slab, earlier, Distribution(maps, dist.grid))
        remote[k] = slab.locals
    blocks = {}
    for r in backend.local_ranks:
        own = owned_block(x, r)
        coords = dist.coords(r)
        out = np.empty(target.local_shape(r), x.dtype)
        middle = []
        for k, m in enumerate(own.shape):
            start = widths[k][0] if k in indexers and coords[k] == 0 else 0
            middle.append(slice(start, start + m))
        out[tuple(middle)] = own
        for k in padded:
            (lo, hi), n, c = widths[k], x.shape[k], coords[k]
            last = clean[k].nprocs - 1
            sides = [(0, slice(0, lo), indexers[k][:lo])] if c == 0 and lo else []
            if c == last and hi:
                sides.append((1, slice(out.shape[k] - hi, None), indexers[k][lo + n :]))
            for side, where, idx in sides:
                region = (*[slice(None)] * k, where, *middle[k + 1 :])
                if values is not None:
                    out[region] = values[k][side]
                elif k in remote:
                    out[region] = remote[k][r]
                else:
                    positions = idx - clean[k].bounds[c] + middle[k].start
                    out[region] = out[
                        (*[slice(None)] * k, simplify_index(positions), *middle[k + 1 :])
                    ]
        blocks[r] = out
    return new_array(target, blocks, x.backend, x.dtype)


@implements(np.roll)
def roll(a, shift, axis=None):
    """`numpy.roll`: one `take` along the rolled axes, into the same layout.

    Examples
    --------
    >>> import dapx
    >>> x = dapx.arange(5, backend=dapx.simulated(2))
    >>> np.roll(x, 2).gather()
    array([3, 4, 0, 1, 2])
    """
    if a.ndim == 0:
        return _copy(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    axes = normalize_axis_tuple(axis, a.ndim, allow_duplicate=True)
    pairs = np.broadcast(shift, axes)
    if pairs.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = [0] * a.ndim
    for sh, ax in pairs:
        shifts[ax] += int(sh)
    indexers = {
        k: (np.arange(n) - shifts[k]) % n for k, n in enumerate(a.shape) if n and shifts[k] % n
    }
    target = clean_distribution(a.distribution)
    if not indexers:
        return _copy(a) if target == a.distribution else redistribute(a, target)
    return take(a, indexers, target)


def _edge_operand(value, a, axis: int):
    """`prepend`/`append` of `numpy.diff`: a 0-d value is broadcast to one slice of `a`."""
    if isinstance(value, DistributedArray):
        if value.ndim:
            return value
        value = value.locals[value.backend.local_ranks[0]]
    value = np.asanyarray(value)
    if value.ndim == 0:
        shape = list(a.shape)
        shape[axis] = 1
        value = np.broadcast_to(value, tuple(shape))
    return value


@implements(np.diff)
def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    """`numpy.diff`: each order is two `take`s into one layout and a local subtraction.

    Along a block axis both takes keep the rank boundaries, so only one
    boundary slice per rank moves.

    Examples
    --------
    >>> import dapx
    >>> x = dapx.asarray([1, 4, 9, 16, 25], backend=dapx.simulated(2))
    >>> np.diff(x).gather()
    array([3, 5, 7, 9])
    >>> np.diff(x, n=2, prepend=0).gather()
    array([2, 2, 2, 2])
    """
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    a = _as_input(a)
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis_index(axis, a.ndim)
    parts = []
    if prepend is not np._NoValue:
        parts.append(_edge_operand(prepend, a, axis))
    parts.append(a)
    if append is not np._NoValue:
        parts.append(_edge_operand(append, a, axis))
    if len(parts) > 1:
        a = concatenate(parts, axis=axis)
    op = np.not_equal if a.dtype == np.bool_ else np.subtract
    for _ in range(n):
        length = a.shape[axis]
        new = max(length - 1, 0)
        maps = [_clean_map(m) for m in a.distribution.maps]
        maps[axis] = _resized_map(maps[axis], new)
        target = Distribution(maps, a.distribution.grid)
        upper = take(a, {axis: np.arange(1, length)}, target)
        lower = take(a, {axis: np.arange(new)}, target)
        a = op(upper, lower)
    return a
