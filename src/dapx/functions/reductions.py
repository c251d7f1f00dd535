"""NumPy reductions of distributed arrays: sum, prod, min, max, any, all, argmin, argmax.

All of them, and ``ufunc.reduce``, run on the engine of `dapx.functions.reduction_engine`:
each rank reduces the elements it owns, and partials are combined strictly in
rank order (a full reduction through one allgather; a reduction over
distributed axes as a reduce-scatter through the exchange plans). Results
therefore depend only on the data and the grid: two runs with the same grid
give bitwise identical answers, on any backend.

A full reduction returns a 0-d DistributedArray, replicated on every rank
(``int()``, ``float()`` and ``.item()`` read it without communication).

# Note: ufuncs that cannot be reordered (``subtract``, ``divide``, ``power``)
# are folded in order along the whole axis, after moving that axis onto one
# rank per line of the grid (`dapx.exchange.whole_axes`). NaN-ignoring reductions
# live in `dapx.functions.nanreductions`, scans and ``ufunc.outer`` in
# `dapx.functions.scans`, means and variances in `dapx.functions.statistics`,
# medians and quantiles in `dapx.functions.quantiles`.
"""

from __future__ import annotations

import builtins
import functools
import operator
import warnings
from collections.abc import Callable

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import SCALAR, DistributedArray, new_array
from ..core.dispatch import implements, implements_method
from ..exchange.whole_axes import holder_value, move_axes
from .reduction_engine import (
    Axis,
    NoValue,
    Spec,
    as_distributed,
    drop,
    emit_warnings,
    flag,
    full_reduction,
    gather_values,
    given,
    layout,
    ones_distribution,
    reduce_blocks,
    reduce_dtype,
    reduced_axes,
    reorderable,
    scalar_call,
    select,
    single_out,
    spmd_warnings,
    store,
    where_blocks,
)

__all__ = [
    "all",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "count_nonzero",
    "max",
    "min",
    "prod",
    "ptp",
    "sum",
    "ufunc_accumulate",
    "ufunc_outer",
    "ufunc_reduce",
]


# -- ufunc.reduce ----------------------------------------------------------------------------------
def _ufunc_spec(ufunc, axes, full, dtype, local_initial, maskable, res_dtype):
    ax = None if full else axes
    kw = {"dtype": dtype}
    if local_initial is not None:
        kw["initial"] = local_initial

    def partial(views, r, lay, keep):
        v, w = views
        if w is None:
            return (ufunc.reduce(v, axis=ax, keepdims=keep, **kw),)
        return (ufunc.reduce(v, axis=ax, keepdims=keep, where=w, **kw),)

    def combine(x, y):
        return (ufunc(x[0], y[0]),)

    return Spec(partial, combine, (res_dtype,) if maskable else None)


def _full_fast(ufunc, a, lay, dtype, res_dtype):
    """The hot path of a full reduction by a ufunc with an identity, no mask, no initial.

    The partials travel as bytes in one `Backend.allgather_array`, with a flag
    saying whether a rank recorded warnings computing them (`gather_values`),
    and are combined in rank order (as `Backend.combine` does); every rank then
    emits the same warnings (see `shared_warnings`).
    """
    sel = lay.sel
    backend = a.backend
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        partials = {
            r: ufunc.reduce(select(b, sel[r]) if sel[r] else b, axis=None, dtype=dtype)
            for r, b in a.locals.items()
        }
    seen = [(w.category, str(w.message)) for w in caught] if caught else ()
    everyone, warned = gather_values(backend, partials, seen)
    value = functools.reduce(ufunc, everyone)
    emit_warnings(warned)
    blocks = {r: np.array(value, res_dtype) for r in partials}
    return new_array(SCALAR, blocks, backend, res_dtype)


def _reduce(ufunc, a, axis, dtype, out, keepdims, initial, where, casting="unsafe"):
    if (
        axis is None
        and out is None
        and not keepdims
        and where is True
        and ufunc.identity is not None
        and not given(initial)
        and type(a) is DistributedArray
        and a.ndim
    ):
        a, lay = full_reduction(a)
        return _full_fast(ufunc, a, lay, dtype, reduce_dtype(ufunc, a.dtype, dtype))
    return _reduce_general(ufunc, a, axis, dtype, out, keepdims, initial, where, casting)


@spmd_warnings
def _reduce_general(ufunc, a, axis, dtype, out, keepdims, initial, where, casting):
    out = single_out(out)
    a = as_distributed(a, out)
    keepdims = flag(keepdims)
    has_initial = given(initial)
    if a.ndim == 0:
        kw = {"initial": initial} if has_initial else {}
        if where is not True and where is not NoValue:
            kw["where"] = where
        return scalar_call(
            ufunc.reduce, a, out, casting, axis=axis, dtype=dtype, keepdims=keepdims, **kw
        )
    axes = reduced_axes(axis, a.ndim)
    order_free = reorderable(ufunc, a.dtype)
    name = ufunc.__name__
    if len(axes) > 1 and not order_free:
        raise ValueError(
            f"reduction operation '{name}' is not reorderable, so at most one axis may be specified"
        )
    wb = where_blocks(where, a)
    backend = a.backend
    lay = layout(a.distribution, axes, backend)
    no_identity = ufunc.identity is None
    if no_identity and not has_initial:
        if wb is not None:
            raise ValueError(
                f"reduction operation '{name}' does not have an identity, so to use a where "
                "mask one has to specify 'initial'"
            )
        if lay.count == 0:
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    res_dtype = reduce_dtype(ufunc, a.dtype, dtype)
    if lay.dist_axes and not order_free:
        # A fold that cannot be reordered runs on the whole axis, on one rank per line.
        moved = move_axes(a.distribution, backend, axes, [a.locals, wb])
        kw = {"initial": initial} if has_initial else {}
        blocks = {}
        for r in backend.local_ranks:
            w = moved.blocks[1]
            if w is not None:
                kw["where"] = w[r]
            blocks[r] = ufunc.reduce(
                moved.blocks[0][r], axis=moved.axes[0], dtype=dtype, keepdims=keepdims, **kw
            )
        if moved.dummy:
            value = holder_value(moved, blocks, backend)
            if keepdims:
                dist = ones_distribution(a.ndim, backend.nranks)
                blocks = {r: np.full(dist.local_shape(r), value) for r in blocks}
                return store(new_array(dist, blocks, backend, res_dtype), out, casting)
            blocks = dict.fromkeys(blocks, value)
            result = new_array(SCALAR, blocks, backend, res_dtype, copy_scalars=True)
            return store(result, out, casting)
        dist = drop(moved.dist.maps, moved.axes, keepdims)
        return store(new_array(dist, blocks, backend, res_dtype, copy_scalars=True), out, casting)
    combines = builtins.bool(lay.dist_axes)
    # Note: with an identity, `initial` is applied once after combining; without one
    # (maximum, minimum, fmax, fmin) every rank may apply it, which is idempotent.
    finish_initial = has_initial and combines and not no_identity
    local_initial = initial if has_initial and not finish_initial else None
    spec = _ufunc_spec(
        ufunc, axes, lay.full, dtype, local_initial, no_identity and not has_initial, res_dtype
    )
    dist, parts = reduce_blocks(a.distribution, backend, axes, keepdims, spec, [a.locals, wb])
    if finish_initial:
        init = np.asarray(initial).astype(res_dtype)
        blocks = {r: ufunc(init, p[0]).astype(res_dtype, copy=False) for r, p in parts.items()}
    else:
        blocks = {r: p[0].astype(res_dtype, copy=False) for r, p in parts.items()}
    return store(new_array(dist, blocks, backend, res_dtype, copy_scalars=True), out, casting)


@implements_method("ufunc.reduce")
def ufunc_reduce(
    ufunc: np.ufunc,
    array,
    axis: Axis = 0,
    dtype=None,
    out=None,
    keepdims=False,
    initial=None,
    where=True,
) -> DistributedArray:
    """``ufunc.reduce`` of a distributed array (called by `DistributedArray.__array_ufunc__`).

    Partials are combined in rank order. Ufuncs that cannot be reordered
    (``subtract``, ``divide``, ...) are folded along the whole axis on one
    rank per line, after moving that axis there.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.arange(12).reshape(3, 4), dist=("b", "c"), grid=(2, 2),
    ...                  backend=dapx.simulated(4))
    >>> np.add.reduce(a, axis=1).gather()
    array([ 6, 22, 38])
    >>> int(np.maximum.reduce(a, axis=None))
    11
    >>> np.subtract.reduce(a, axis=1).gather()
    array([ -6, -14, -22])
    """
    return _reduce(ufunc, array, axis, dtype, out, keepdims, initial, where)


# -- NumPy reductions ------------------------------------------------------------------------------
@implements(np.sum)
def sum(
    a: DistributedArray,
    axis: Axis = None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=NoValue,
    where=True,
) -> DistributedArray:
    """Sum of elements, as `numpy.sum`; partials are added in rank order.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(10, backend=dapx.simulated(4))
    >>> int(np.sum(a)), int(a.sum(initial=5))
    (45, 50)
    """
    return _reduce(np.add, a, axis, dtype, out, keepdims, initial, where)


@implements(np.prod)
def prod(
    a: DistributedArray,
    axis: Axis = None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=NoValue,
    where=True,
) -> DistributedArray:
    """Product of elements, as `numpy.prod`.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> int(np.prod(dapx.arange(1, 6, backend=dapx.simulated(2))))
    120
    """
    return _reduce(np.multiply, a, axis, dtype, out, keepdims, initial, where)


@implements(np.max)
def max(
    a: DistributedArray, axis: Axis = None, out=None, keepdims=False, initial=NoValue, where=True
) -> DistributedArray:
    """Maximum, as `numpy.max` (NaN propagates; empty arrays need ``initial``).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.array([[1, 7], [5, 3]]), backend=dapx.simulated(4))
    >>> np.max(a, axis=0).gather()
    array([5, 7])
    """
    return _reduce(np.maximum, a, axis, None, out, keepdims, initial, where)


@implements(np.min)
def min(
    a: DistributedArray, axis: Axis = None, out=None, keepdims=False, initial=NoValue, where=True
) -> DistributedArray:
    """Minimum, as `numpy.min`.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> int(np.min(dapx.asarray(np.array([4, 2, 9]), backend=dapx.simulated(3))))
    2
    """
    return _reduce(np.minimum, a, axis, None, out, keepdims, initial, where)


@implements(np.amax)
def amax(
    a: DistributedArray, axis: Axis = None, out=None, keepdims=False, initial=NoValue, where=True
) -> DistributedArray:
    """Alias of `max`, as `numpy.amax`.

    >>> import numpy as np, dapx
    >>> int(np.amax(dapx.arange(5, backend=dapx.simulated(2))))
    4
    """
    return max(a, axis, out, keepdims, initial, where)


@implements(np.amin)
def amin(
    a: DistributedArray, axis: Axis = None, out=None, keepdims=False, initial=NoValue, where=True
) -> DistributedArray:
    """Alias of `min`, as `numpy.amin`.

    >>> import numpy as np, dapx
    >>> int(np.amin(dapx.arange(5, backend=dapx.simulated(2))))
    0
    """
    return min(a, axis, out, keepdims, initial, where)


@implements(np.any)
def any(
    a: DistributedArray, axis: Axis = None, out=None, keepdims=False, *, where=True
) -> DistributedArray:
    """Whether any element is true, as `numpy.any`.

    >>> import numpy as np, dapx
    >>> bool(np.any(dapx.arange(3, backend=dapx.simulated(2)) > 1))
    True
    """
    return _reduce(np.logical_or, a, axis, bool, out, keepdims, None, where, "unsafe")


@implements(np.all)
def all(
    a: DistributedArray, axis: Axis = None, out=None, keepdims=False, *, where=True
) -> DistributedArray:
    """Whether every element is true, as `numpy.all`.

    >>> import numpy as np, dapx
    >>> bool(np.all(dapx.arange(3, backend=dapx.simulated(2)) > 0))
    False
    """
    return _reduce(np.logical_and, a, axis, bool, out, keepdims, None, where, "unsafe")


@implements(np.count_nonzero)
def count_nonzero(a: DistributedArray, axis: Axis = None, *, keepdims=False) -> DistributedArray:
    """Number of non-zero elements, as `numpy.count_nonzero`.

    # Note: with ``axis=None`` the count is a 0-d DistributedArray (NumPy returns
    # an int); ``int()`` reads it without communication.

    >>> import numpy as np, dapx
    >>> int(np.count_nonzero(dapx.arange(5, backend=dapx.simulated(2))))
    4
    """
    a = as_distributed(a)
    if a.ndim == 0:
        return scalar_call(lambda b: np.intp(np.count_nonzero(b)), a)
    axes = reduced_axes(axis, a.ndim)
    lay = layout(a.distribution, axes, a.backend)
    ax = None if lay.full else axes

    def partial(views, r, lay, keep):
        if ax is None and not keep:
            return (np.intp(np.count_nonzero(views[0])),)
        return (np.asarray(np.count_nonzero(views[0], axis=ax, keepdims=keep), np.intp),)

    spec = Spec(partial, lambda x, y: (x[0] + y[0],))
    dist, parts = reduce_blocks(a.distribution, a.backend, axes, flag(keepdims), spec, [a.locals])
    blocks = {r: p[0] for r, p in parts.items()}
    return new_array(dist, blocks, a.backend, np.intp, copy_scalars=True)


@implements(np.ptp)
@spmd_warnings
def ptp(a: DistributedArray, axis: Axis = None, out=None, keepdims=False) -> DistributedArray:
    """Range of values (maximum minus minimum), as `numpy.ptp`.

    >>> import numpy as np, dapx
    >>> int(np.ptp(dapx.asarray(np.array([4, 9, 2]), backend=dapx.simulated(2))))
    7
    """
    out = single_out(out)
    a = as_distributed(a, out)
    keepdims = flag(keepdims)
    hi = max(a, axis, None, keepdims)
    lo = min(a, axis, None, keepdims)
    if out is None:
        return np.subtract(hi, lo)
    return store(np.subtract(hi, lo), out, "unsafe")


# -- argmin / argmax -------------------------------------------------------------------------------
def _arg_combine(better: np.ufunc, inexact: bool) -> Callable:
    """Keep the better value; ties and NaNs go to the smallest global index, as NumPy."""

    def combine(x, y):
        xv, xi = x
        yv, yi = y
        earlier = yi < xi
        if inexact:  # NaNs are handled here, so comparisons with them need not warn
            xn, yn = np.isnan(xv), np.isnan(yv)
            with np.errstate(invalid="ignore"):
                beats = better(yv, xv) | ((yv == xv) & earlier)
            take = np.where(xn, yn & earlier, yn | beats)
        else:
            take = better(yv, xv) | ((yv == xv) & earlier)
        return np.where(take, yv, xv), np.where(take, yi, xi)

    return combine


@spmd_warnings
def _arg(a, axis, out, keepdims, which: str):
    out = single_out(out)
    a = as_distributed(a, out)
    keepdims = flag(keepdims)
    find = np.argmin if which == "argmin" else np.argmax
    if a.ndim == 0:
        return scalar_call(find, a, out, keepdims=keepdims)
    if axis is None:
        axes = tuple(range(a.ndim))
    else:
        axes = (normalize_axis_index(operator.index(axis), a.ndim),)
    backend = a.backend
    lay = layout(a.distribution, axes, backend)
    if lay.count == 0:
        raise ValueError(f"attempt to get {which} of an empty sequence")
    shape = a.shape

    def partial(views, r, lay, keep):
        v = views[0]
        if lay.full:
            i = find(v)
            loc = np.unravel_index(i, v.shape)
            g = np.ravel_multi_index(tuple(gl[j] for gl, j in zip(lay.glob[r], loc)), shape)
            return np.asarray(v[loc]), np.asarray(g, np.intp)
        k = axes[0]
        i = find(v, axis=k, keepdims=True)
        return np.take_along_axis(v, i, axis=k), lay.glob[r][0][i]

    better = np.less if which == "argmin" else np.greater
    inexact = a.dtype.kind in "fc"
    spec = Spec(partial, _arg_combine(better, inexact), (a.dtype, np.dtype(np.intp)))
    dist, parts = reduce_blocks(a.distribution, backend, axes, False, spec, [a.locals])
    blocks = {r: p[1] for r, p in parts.items()}
    if keepdims:
        if lay.full:
            dist = ones_distribution(a.ndim, backend.nranks)
            value = blocks[backend.local_ranks[0]]
            blocks = {r: np.full(dist.local_shape(r), value, np.intp) for r in blocks}
        else:
            dist = layout(a.distribution, axes, backend).result[True]
            blocks = {r: np.expand_dims(b, axes[0]) for r, b in blocks.items()}
    return store(new_array(dist, blocks, backend, np.intp, copy_scalars=True), out, "unsafe")


@implements(np.argmin)
def argmin(a: DistributedArray, axis: Axis = None, out=None, *, keepdims=False) -> DistributedArray:
    """Index of the minimum, as `numpy.argmin` (first occurrence in global order).

    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.array([3, 1, 2, 1]), dist="c", backend=dapx.simulated(2))
    >>> int(np.argmin(a))
    1
    """
    return _arg(a, axis, out, keepdims, "argmin")


@implements(np.argmax)
def argmax(a: DistributedArray, axis: Axis = None, out=None, *, keepdims=False) -> DistributedArray:
    """Index of the maximum, as `numpy.argmax` (first occurrence in global order).

    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.array([[1, 5], [5, 0]]), backend=dapx.simulated(4))
    >>> int(np.argmax(a)), np.argmax(a, axis=0).gather().tolist()
    (1, [1, 0])
    """
    return _arg(a, axis, out, keepdims, "argmax")


# -- delegates (implemented in dapx.functions.scans) -------------------------------------
@implements_method("ufunc.accumulate")
def ufunc_accumulate(ufunc, array, axis=0, dtype=None, out=None):
    """``ufunc.accumulate``; see `dapx.functions.scans.accumulate`."""
    from .scans import accumulate

    return accumulate(ufunc, array, axis, dtype, out)


@implements_method("ufunc.outer")
def ufunc_outer(ufunc, a, b, **kwargs):
    """``ufunc.outer``; see `dapx.functions.scans.outer`."""
    from .scans import outer

    return outer(ufunc, a, b, **kwargs)
