"""Scans (``cumsum``, ``ufunc.accumulate``) and ``ufunc.outer`` of distributed arrays.

A scan along a block-distributed axis is the local scan plus the carry of the
preceding grid coordinates: every rank shares the last slice of its local
scan (an allgather of hyperplanes, not of the array) and folds those of its
predecessors in grid order. Along cyclic or unstructured axes the data are
first moved to a block layout and moved back afterwards; ufuncs that cannot
be reordered (``subtract``, ...) scan the whole axis on one rank per line.
``axis=None`` scans the C-order flattening, built by moving rows to a block
layout and reshaping locally.
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..config import config
from ..core.array import SCALAR, DistributedArray, new_array
from ..core.dispatch import implements
from ..core.redistribution import align
from ..errors import GatherWarning
from ..exchange.execute import run_plan
from ..exchange.plans import exchange_plan
from ..exchange.whole_axes import move_axes, move_back
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap
from .nanreductions import replace_nan
from .reduction_engine import (
    Axis,
    Blocks,
    accumulate_dtype,
    as_distributed,
    reorderable,
    single_out,
    spmd_warnings,
    store,
)

__all__ = [
    "accumulate",
    "cumprod",
    "cumsum",
    "cumulative_prod",
    "cumulative_sum",
    "nancumprod",
    "nancumsum",
    "outer",
    "ravel_blocks",
    "scan_blocks",
]


# -- scans -----------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _predecessors(grid, axis: int, rank: int) -> tuple[int, ...]:
    """Ranks on the same grid line as `rank` along `axis`, before it, in grid order."""
    c = grid.coords(rank)
    return tuple(grid.rank((*c[:axis], j, *c[axis + 1 :])) for j in range(c[axis]))


def _block_scan(ufunc, dist, blocks, backend, axis, dtype, res_dtype) -> Blocks:
    """Scan along block-distributed `axis`: local scans plus the carry of earlier ranks."""
    scanned = {
        r: ufunc.accumulate(b, axis=axis, dtype=dtype).astype(res_dtype, copy=False)
        for r, b in blocks.items()
    }
    last = (slice(None),) * axis + (slice(-1, None),)
    lasts = backend.allgather(
        {r: (np.array(s[last]) if s.shape[axis] else None) for r, s in scanned.items()}
    )
    for r, s in scanned.items():
        carry = None
        for p in _predecessors(dist.grid, axis, r):
            piece = lasts[p]
            if piece is not None:
                carry = piece if carry is None else ufunc(carry, piece)
        if carry is not None and s.size:
            ufunc(carry, s, out=s)
    return scanned


@functools.lru_cache(maxsize=128)
def _block_along(dist: Distribution, axis: int) -> Distribution:
    maps = list(dist.maps)
    maps[axis] = BlockMap(maps[axis].size, nprocs=maps[axis].nprocs)
    return Distribution(maps, dist.grid)


def scan_blocks(
    ufunc, dist: Distribution, blocks: Blocks, backend, axis: int, dtype, in_dtype
) -> Blocks:
    """``ufunc.accumulate`` along `axis` of blocks laid out by `dist`, in that layout."""
    res_dtype = accumulate_dtype(ufunc, np.dtype(in_dtype), dtype)
    m = dist.maps[axis]
    plain_block = isinstance(m, BlockMap) and not m.is_padded
    if plain_block and m.nprocs == 1:
        return {
            r: ufunc.accumulate(b, axis=axis, dtype=dtype).astype(res_dtype, copy=False)
            for r, b in blocks.items()
        }
    ranks = backend.local_ranks
    if reorderable(ufunc, np.dtype(in_dtype)):
        if plain_block:
            return _block_scan(ufunc, dist, blocks, backend, axis, dtype, res_dtype)
        target = _block_along(dist, axis)
        moved = run_plan(exchange_plan(dist, target, ranks), blocks, in_dtype, backend)
        scanned = _block_scan(ufunc, target, moved, backend, axis, dtype, res_dtype)
        return run_plan(exchange_plan(target, dist, ranks), scanned, res_dtype, backend)
    moved = move_axes(dist, backend, (axis,), [blocks])
    k = moved.axes[0]
    scanned = {
        r: ufunc.accumulate(b, axis=k, dtype=dtype).astype(res_dtype, copy=False)
        for r, b in moved.blocks[0].items()
    }
    return move_back(dist, (axis,), scanned, backend)


@functools.lru_cache(maxsize=128)
def _ravel_layout(dist: Distribution, ranks, nranks):
    shape = dist.global_shape
    rows = Distribution(
        [BlockMap(shape[0], nprocs=nranks), *(BlockMap(n, nprocs=1) for n in shape[1:])]
    )
    plan = None if rows == dist else exchange_plan(dist, rows, ranks)
    inner = math.prod(shape[1:])
    flat = Distribution([BlockMap(math.prod(shape), rows.maps[0].bounds * inner)])
    return plan, flat


def ravel_blocks(a: DistributedArray) -> tuple[Distribution, Blocks]:
    """The C-order flattening of `a`: rows moved to a block layout, then reshaped locally."""
    backend = a.backend
    if a.ndim == 0:
        dist = Distribution([BlockMap(1, nprocs=backend.nranks)])
        return dist, {r: b.reshape(1)[: dist.local_shape(r)[0]] for r, b in a.locals.items()}
    if a.ndim == 1:
        return a.distribution, dict(a.locals)
    plan, flat = _ravel_layout(a.distribution, backend.local_ranks, backend.nranks)
    blocks = a.locals if plan is None else run_plan(plan, a.locals, a.dtype, backend)
    return flat, {r: b.reshape(-1) for r, b in blocks.items()}


@spmd_warnings
def _accumulate(ufunc, a, axis, dtype, out, flatten: bool):
    out = single_out(out)
    a = as_distributed(a, out)
    if flatten and (axis is None or a.ndim == 0):
        dist, blocks = ravel_blocks(a)
        axis = 0
    else:
        if a.ndim == 0:
            raise TypeError("cannot accumulate on a scalar")
        dist, blocks = a.distribution, a.locals
        axis = normalize_axis_index(operator.index(axis), a.ndim)
    res = scan_blocks(ufunc, dist, blocks, a.backend, axis, dtype, a.dtype)
    result = new_array(dist, res, a.backend, accumulate_dtype(ufunc, a.dtype, dtype))
    return store(result, out, "unsafe")


def accumulate(ufunc, array, axis=0, dtype=None, out=None) -> DistributedArray:
    """``ufunc.accumulate`` of a distributed array along any axis.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.arange(6).reshape(2, 3), dist=("n", "c"), grid=(1, 2),
    ...                  backend=dapx.simulated(2))
    >>> np.add.accumulate(a, axis=1).gather()
    array([[ 0,  1,  3],
           [ 3,  7, 12]])
    """
    return _accumulate(ufunc, array, axis, dtype, out, flatten=False)


@implements(np.cumsum)
def cumsum(a: DistributedArray, axis: Axis = None, dtype=None, out=None) -> DistributedArray:
    """Cumulative sum, as `numpy.cumsum` (``axis=None`` flattens in C order).

    >>> import numpy as np, dapx
    >>> np.cumsum(dapx.arange(1, 6, backend=dapx.simulated(2))).gather()
    array([ 1,  3,  6, 10, 15])
    """
    return _accumulate(np.add, a, axis, dtype, out, flatten=True)


@implements(np.cumprod)
def cumprod(a: DistributedArray, axis: Axis = None, dtype=None, out=None) -> DistributedArray:
    """Cumulative product, as `numpy.cumprod`.

    >>> import numpy as np, dapx
    >>> np.cumprod(dapx.arange(1, 6, backend=dapx.simulated(3))).gather()
    array([  1,   2,   6,  24, 120])
    """
    return _accumulate(np.multiply, a, axis, dtype, out, flatten=True)


def _cumulative(ufunc, identity, x, axis, dtype, out, include_initial):
    """NumPy 2's ``cumulative_sum``/``_prod`` (array API): 0-d as 1-d, an optional initial."""
    from .joining import concatenate
    from .shaping import reshape, write_into

    x = as_distributed(x, None)
    if x.ndim == 0:
        x = reshape(x, (1,))
    if axis is None:
        if x.ndim > 1:
            raise ValueError(
                "For arrays which have more than one dimension ``axis`` argument is required."
            )
        axis = 0
    result = _accumulate(ufunc, x, axis, dtype, None, flatten=False)
    if include_initial:
        axis = normalize_axis_index(axis, x.ndim)
        shape = list(x.shape)
        shape[axis] = 1
        result = concatenate([np.full(shape, identity, result.dtype), result], axis=axis)
    return result if out is None else write_into(single_out(out), result)


@implements(np.cumulative_sum)
def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """`numpy.cumulative_sum` (the array API's), partials carried in rank order.

    >>> import numpy as np, dapx
    >>> x = dapx.arange(1, 4, backend=dapx.simulated(2))
    >>> np.cumulative_sum(x, include_initial=True).gather()
    array([0, 1, 3, 6])
    """
    return _cumulative(np.add, 0, x, axis, dtype, out, include_initial)


@implements(np.cumulative_prod)
def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """`numpy.cumulative_prod` (the array API's)."""
    return _cumulative(np.multiply, 1, x, axis, dtype, out, include_initial)


@implements(np.nancumsum)
def nancumsum(a: DistributedArray, axis: Axis = None, dtype=None, out=None) -> DistributedArray:
    """Cumulative sum treating NaN as zero, as `numpy.nancumsum`.

    >>> import numpy as np, dapx
    >>> np.nancumsum(dapx.asarray([1., np.nan, 2.], backend=dapx.simulated(2))).gather()
    array([1., 1., 3.])
    """
    out = single_out(out)
    a, _ = replace_nan(as_distributed(a, out), 0)
    return cumsum(a, axis, dtype, out)


@implements(np.nancumprod)
def nancumprod(a: DistributedArray, axis: Axis = None, dtype=None, out=None) -> DistributedArray:
    """Cumulative product treating NaN as one, as `numpy.nancumprod`.

    >>> import numpy as np, dapx
    >>> np.nancumprod(dapx.asarray([2., np.nan, 3.], backend=dapx.simulated(2))).gather()
    array([2., 2., 6.])
    """
    out = single_out(out)
    a, _ = replace_nan(as_distributed(a, out), 1)
    return cumprod(a, axis, dtype, out)


# -- ufunc.outer -----------------------------------------------------------------------------------
def whole(x, what: str) -> DistributedArray:
    """`x` as a NumPy array on every process; a large DistributedArray warns before gathering."""
    if not isinstance(x, DistributedArray):
        return np.asarray(x)
    if x.ndim == 0:
        return x.locals[x.backend.local_ranks[0]]
    if x.size > config.gather_warning_threshold:
        warnings.warn(
            f"{what} needs the whole {x.shape} array on every process and gathers it",
            GatherWarning,
            stacklevel=4,
        )
    return x.gather()


@spmd_warnings
def outer(ufunc, a, b, **kwargs) -> DistributedArray:
    """``ufunc.outer(a, b)``, distributed like `a` extended by undistributed dims of `b`.

    The second operand is needed whole on every rank: a NumPy array is used
    as is, a distributed one is gathered (with a `dapx.GatherWarning` above
    ``dapx.config.gather_warning_threshold`` elements). When only `b` is
    distributed the result follows `b`, with `a`'s dims undistributed in front.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(3, backend=dapx.simulated(2))
    >>> r = np.multiply.outer(a, np.arange(4))
    >>> r.shape, r.distribution.grid_shape
    ((3, 4), (2, 1))
    >>> r.gather()[2].tolist()
    [0, 2, 4, 6]
    """
    from ..core.elementwise import blockwise, local_operands

    out = kwargs.pop("out", None)
    where = kwargs.pop("where", True)
    outs = () if out is None else (out if isinstance(out, tuple) else (out,))
    for o in outs:
        if not isinstance(o, DistributedArray):
            raise TypeError(
                f"out= must be DistributedArrays when an operand is distributed, got "
                f"{type(o).__name__} (writing into a NumPy array would gather)"
            )
    backend = next(x for x in (a, b, *outs) if isinstance(x, DistributedArray)).backend
    ranks = backend.local_ranks
    name = f"{ufunc.__name__}.outer"
    a_nd = a.ndim if isinstance(a, DistributedArray) else np.ndim(a)
    if (
        not isinstance(a, DistributedArray)
        and a_nd
        and not (isinstance(b, DistributedArray) and b.ndim)
    ):
        from ..core.creation import asarray

        a = asarray(a, backend=backend)  # NumPy `a` against a scalar `b`: distribute `a`
    if isinstance(a, DistributedArray) and a.ndim:
        y = whole(b, name)
        target = Distribution([*a.distribution.maps, *(BlockMap(n, nprocs=1) for n in y.shape)])
        args = {r: (a.locals[r], y) for r in ranks}
    elif isinstance(b, DistributedArray) and b.ndim:
        x = whole(a, name)
        target = Distribution([*(BlockMap(n, nprocs=1) for n in x.shape), *b.distribution.maps])
        args = {r: (x, b.locals[r]) for r in ranks}
    else:  # two scalars (0-d arrays are replicated)
        target = SCALAR
        args = dict.fromkeys(ranks, (whole(a, name), whole(b, name)))
    wb = None
    if where is not True:
        w = np.asarray(where) if isinstance(where, (list, tuple)) else where
        wb = local_operands([w], target, backend)[0]
    direct = builtins.bool(outs) and builtins.all(o.distribution == target for o in outs)
    if direct:
        staging = [o.locals for o in outs]
    else:
        staging = [align(o, target) if o.ndim else dict(o.locals) for o in outs]
    wrapped = blockwise(ufunc.outer, args, kwargs, ufunc.nout, target, backend, staging, wb)
    if direct:
        return outs if len(outs) > 1 else outs[0]
    if outs:
        wrapped = tuple(store(w, o, "unsafe") for w, o in zip(wrapped, outs))
    return wrapped if ufunc.nout > 1 else wrapped[0]
