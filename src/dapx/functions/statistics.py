"""Statistics of distributed arrays: means, variances, weighted averages.

Means and variances follow NumPy's own algorithms (``mean = sum / count``;
variance in two passes, the mean first, then the mean of ``abs(x - mean)**2``)
on top of the reduction engine of `dapx.functions.reduction_engine`, so partial sums are
combined in rank order and results are reproducible for a given grid.

The second pass of a variance (and every pass with ``where=`` or of the
NaN-ignoring statistics) runs over each rank's block in cache-sized chunks
(`dapx.functions.chunked_moments`), so no full-size temporary is made. An
unmasked first pass of `var` and `mean` is NumPy's own ``add.reduce`` over the
whole block, which casts a promoted ``dtype=`` in its own small buffers. Each
rank's chunks are summed in a fixed order and the ranks' partials in rank
order, so a result depends only on the data and the grid.

Medians, quantiles and percentiles are in `dapx.functions.quantiles`.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..core.array import SCALAR, DistributedArray, new_array
from ..core.dispatch import implements
from ..core.redistribution import align, redistribute
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap
from .chunked_moments import masked_sums, sum_squares
from .reduction_engine import (
    Axis,
    Blocks,
    NoValue,
    Spec,
    any_true,
    as_distributed,
    flag,
    given,
    layout,
    reduce_blocks,
    reduced_axes,
    scalar_call,
    single_out,
    spmd_warnings,
    store,
    where_blocks,
)

__all__ = [
    "average",
    "mean",
    "nanmean",
    "nanstd",
    "nanvar",
    "std",
    "var",
]


def _sums(a: DistributedArray, axes, keepdims, dtype, data: Blocks, where, valid):
    """Sums of `data` (masked by `where`) and, when `valid` (`where` itself) is given, counts.

    Returns the result distribution, the sums and the counts (or None), per rank.
    """
    if where is not None:  # chunked: NumPy's masked add.reduce adds one element at a time
        dist, sums, counts = masked_sums(a, axes, keepdims, dtype, where, nan=False, data=data)
        return dist, sums, None if valid is None else counts
    lay = layout(a.distribution, axes, a.backend)
    ax = None if lay.full else axes
    counted = valid is not None

    def partial(views, r, lay, keep):
        v, w, c = views
        kw = {} if w is None else {"where": w}
        s = np.asarray(np.add.reduce(v, axis=ax, dtype=dtype, keepdims=keep, **kw))
        if not counted:
            return (s,)
        return s, np.asarray(np.count_nonzero(c, axis=ax, keepdims=keep), np.intp)

    def combine(x, y):
        return tuple(np.add(p, q) for p, q in zip(x, y))

    dist, parts = reduce_blocks(
        a.distribution, a.backend, axes, keepdims, Spec(partial, combine), [data, where, valid]
    )
    sums = {r: np.array(p[0]) for r, p in parts.items()}
    counts = {r: p[1] for r, p in parts.items()} if counted else None
    return dist, sums, counts


def _mean_dtype(dtype, a_dtype):
    if dtype is None and a_dtype.kind in "biu":
        return np.dtype("f8")
    return dtype


@implements(np.mean)
@spmd_warnings
def mean(
    a: DistributedArray, axis: Axis = None, dtype=None, out=None, keepdims=False, *, where=True
) -> DistributedArray:
    """Arithmetic mean, as `numpy.mean`: the sum (in rank order) over the count.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.arange(12.).reshape(3, 4), dist=("c", "b"), grid=(2, 2),
    ...                  backend=dapx.simulated(4))
    >>> float(np.mean(a)), np.mean(a, axis=0).gather().tolist()
    (5.5, [4.0, 5.0, 6.0, 7.0])
    """
    out = single_out(out)
    a = as_distributed(a, out)
    keepdims = flag(keepdims)
    if a.ndim == 0:
        return scalar_call(np.mean, a, out, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    axes = reduced_axes(axis, a.ndim)
    wb = where_blocks(where, a)
    half = dtype is None and a.dtype == np.float16
    dtype = np.dtype("f4") if half else _mean_dtype(dtype, a.dtype)
    dist, sums, counts = _sums(a, axes, keepdims, dtype, a.locals, wb, wb)
    if counts is None:
        count = layout(a.distribution, axes, a.backend).count
        counts = dict.fromkeys(sums, np.intp(count))
        empty = count == 0
    else:
        empty = any_true({r: c == 0 for r, c in counts.items()}, a.backend)
    if empty:
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
    blocks = {r: np.true_divide(s, counts[r], out=s, casting="unsafe") for r, s in sums.items()}
    if half and out is None:
        blocks = {r: b.astype(np.float16) for r, b in blocks.items()}
    return store(new_array(dist, blocks, a.backend, copy_scalars=True), out, "unsafe")


def _ddof(ddof, correction):
    if given(correction):
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        return correction
    return ddof


def _aligned(x, a: DistributedArray) -> Blocks:
    """`x` (a DistributedArray, NumPy array or scalar) aligned with `a`'s blocks."""
    from ..core.elementwise import local_operands

    return local_operands([x], a.distribution, a.backend)[0]


def _mean_blocks(a, lay, dist, means: Blocks) -> Blocks:
    """Means with keepdims (or 0-d for full reductions) broadcast against `a`'s blocks."""
    if lay.full:
        return means
    return align(new_array(dist, means, a.backend, copy_scalars=True), a.distribution)


@spmd_warnings
def _var(a, axis, dtype, out, ddof, keepdims, where, mean_, correction, root):
    out = single_out(out)
    a = as_distributed(a, out)
    keepdims = flag(keepdims)
    ddof = _ddof(ddof, correction)
    if a.ndim == 0:
        kw = {"mean": mean_} if given(mean_) else {}
        return scalar_call(
            np.std if root else np.var,
            a,
            out,
            axis=axis,
            dtype=dtype,
            ddof=ddof,
            keepdims=keepdims,
            where=where,
            **kw,
        )
    axes = reduced_axes(axis, a.ndim)
    wb = where_blocks(where, a)
    backend = a.backend
    lay = layout(a.distribution, axes, backend)
    dtype = _mean_dtype(dtype, a.dtype)
    # Sums and counts with keepdims (0-d for full reductions, which broadcast as they are).
    kdist, sums, counts = _sums(a, axes, not lay.full, dtype, a.locals, wb, wb)
    if counts is None:
        counts = dict.fromkeys(sums, np.intp(lay.count))
        bad = ddof >= lay.count
    else:
        bad = any_true({r: ddof >= c for r, c in counts.items()}, backend)
    if bad:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
    if given(mean_):
        means = _aligned(mean_, a)
    else:
        divided = {
            r: np.true_divide(s, counts[r], out=s, casting="unsafe") for r, s in sums.items()
        }
        means = _mean_blocks(a, lay, kdist, divided)
    dist, ret = sum_squares(a, axes, keepdims, dtype, means, wb)
    blocks = {}
    for r, s in ret.items():
        c = counts[r] if np.ndim(counts[r]) == 0 else counts[r].reshape(s.shape)
        s = np.true_divide(s, np.maximum(c - ddof, 0), out=s, casting="unsafe")
        blocks[r] = np.sqrt(s, out=s) if root else s
    return store(new_array(dist, blocks, backend, copy_scalars=True), out, "unsafe")


@implements(np.var)
def var(
    a: DistributedArray,
    axis: Axis = None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=True,
    mean=NoValue,
    correction=NoValue,
) -> DistributedArray:
    """Variance, as `numpy.var`: the mean first, then the mean of ``abs(x - mean)**2``.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.array([[1., 2., 4.], [3., 5., 9.]])
    >>> a = dapx.asarray(x, dist=("b", "c"), grid=(2, 2), backend=dapx.simulated(4))
    >>> bool(np.isclose(float(np.var(a, ddof=1)), np.var(x, ddof=1)))
    True
    >>> np.allclose(np.var(a, axis=1).gather(), np.var(x, axis=1))
    True
    """
    return _var(a, axis, dtype, out, ddof, keepdims, where, mean, correction, False)


@implements(np.std)
def std(
    a: DistributedArray,
    axis: Axis = None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=True,
    mean=NoValue,
    correction=NoValue,
) -> DistributedArray:
    """Standard deviation, as `numpy.std` (the square root of `var`).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> float(np.std(dapx.asarray([1., 3., 5., 7.], backend=dapx.simulated(3))))
    2.23606797749979
    """
    return _var(a, axis, dtype, out, ddof, keepdims, where, mean, correction, True)


# -- NaN-ignoring statistics ------------------------------------------------------------------
def _inexact_check(dtype, out):
    if dtype is not None and not issubclass(np.dtype(dtype).type, np.inexact):
        raise TypeError("If a is inexact, then dtype must be inexact")
    if out is not None and not issubclass(out.dtype.type, np.inexact):
        raise TypeError("If a is inexact, then out must be inexact")


@implements(np.nanmean)
@spmd_warnings
def nanmean(
    a: DistributedArray,
    axis: Axis = None,
    dtype=None,
    out=None,
    keepdims=NoValue,
    *,
    where=NoValue,
) -> DistributedArray:
    """Mean ignoring NaNs, as `numpy.nanmean` (warns on slices with no numbers).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> float(np.nanmean(dapx.asarray([1., np.nan, 3.], backend=dapx.simulated(2))))
    2.0
    """
    out = single_out(out)
    a = as_distributed(a, out)
    if a.dtype.kind not in "fc":  # no NaNs possible
        return mean(a, axis, dtype, out, keepdims, where=where)
    _inexact_check(dtype, out)
    keepdims = flag(keepdims)
    if a.ndim == 0:
        return scalar_call(
            np.nanmean, a, out, axis=axis, dtype=dtype, keepdims=keepdims, where=where
        )
    axes = reduced_axes(axis, a.ndim)
    wb = where_blocks(where, a)
    dist, tot, cnt = masked_sums(a, axes, keepdims, dtype, wb)
    with np.errstate(invalid="ignore", divide="ignore"):
        avg = {r: np.true_divide(t, cnt[r], out=t, casting="unsafe") for r, t in tot.items()}
    if any_true({r: c == 0 for r, c in cnt.items()}, a.backend):
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
    return store(new_array(dist, avg, a.backend, copy_scalars=True), out, "unsafe")


@spmd_warnings
def _nanvar(a, axis, dtype, out, ddof, keepdims, where, mean_, correction, root):
    out = single_out(out)
    a = as_distributed(a, out)
    if a.dtype.kind not in "fc":  # no NaNs possible
        return _var(a, axis, dtype, out, ddof, keepdims, where, mean_, correction, root)
    _inexact_check(dtype, out)
    ddof = _ddof(ddof, correction)
    keepdims = flag(keepdims)
    if a.ndim == 0:
        kw = {"mean": mean_} if given(mean_) else {}
        return scalar_call(
            np.nanstd if root else np.nanvar,
            a,
            out,
            axis=axis,
            dtype=dtype,
            ddof=ddof,
            keepdims=keepdims,
            where=where,
            **kw,
        )
    axes = reduced_axes(axis, a.ndim)
    wb = where_blocks(where, a)
    backend = a.backend
    lay = layout(a.distribution, axes, backend)
    kdist, tot, cnt = masked_sums(a, axes, not lay.full, dtype, wb)
    if given(mean_):
        avg = _aligned(mean_, a)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            divided = {
                r: np.true_divide(t, cnt[r], out=t, casting="unsafe") for r, t in tot.items()
            }
        avg = _mean_blocks(a, lay, kdist, divided)
    dist, var_ = sum_squares(a, axes, keepdims, dtype, avg, wb, nan=True)
    blocks, bad = {}, {}
    for r, v in var_.items():
        dof = cnt[r] - ddof if np.ndim(cnt[r]) == 0 else (cnt[r] - ddof).reshape(v.shape)
        with np.errstate(invalid="ignore", divide="ignore"):
            v = np.true_divide(v, dof, out=v, casting="unsafe")
        bad[r] = dof <= 0
        blocks[r] = v
    if any_true(bad, backend):
        warnings.warn("Degrees of freedom <= 0 for slice.", RuntimeWarning, stacklevel=3)
        for r, v in blocks.items():
            np.copyto(v, np.nan, where=bad[r])
    if root:
        blocks = {r: np.sqrt(v, out=v) for r, v in blocks.items()}
    return store(new_array(dist, blocks, backend, copy_scalars=True), out, "unsafe")


@implements(np.nanvar)
def nanvar(
    a: DistributedArray,
    axis: Axis = None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=NoValue,
    *,
    where=NoValue,
    mean=NoValue,
    correction=NoValue,
) -> DistributedArray:
    """Variance ignoring NaNs, as `numpy.nanvar`.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> float(np.nanvar(dapx.asarray([1., np.nan, 3.], backend=dapx.simulated(2))))
    1.0
    """
    return _nanvar(a, axis, dtype, out, ddof, keepdims, where, mean, correction, False)


@implements(np.nanstd)
def nanstd(
    a: DistributedArray,
    axis: Axis = None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=NoValue,
    *,
    where=NoValue,
    mean=NoValue,
    correction=NoValue,
) -> DistributedArray:
    """Standard deviation ignoring NaNs, as `numpy.nanstd`.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> float(np.nanstd(dapx.asarray([1., np.nan, 3.], backend=dapx.simulated(2))))
    1.0
    """
    return _nanvar(a, axis, dtype, out, ddof, keepdims, where, mean, correction, True)


# -- weighted average --------------------------------------------------------------------------
def _weights(w, a: DistributedArray, axis) -> Blocks:
    """Weights aligned with `a`'s blocks and broadcast to them (NumPy's shape rules)."""
    shape = w.shape if isinstance(w, DistributedArray) else np.shape(w)
    if shape == a.shape:
        blocks = _aligned(w if isinstance(w, DistributedArray) else np.asarray(w), a)
        return {r: np.broadcast_to(blocks[r], b.shape) for r, b in a.locals.items()}
    if axis is None:
        raise TypeError("Axis must be specified when shapes of a and weights differ.")
    axes = normalize_axis_tuple(axis, a.ndim)
    if shape != tuple(a.shape[k] for k in axes):
        raise ValueError(
            "Shape of weights must be consistent with shape of a along specified axis."
        )
    perm = tuple(int(i) for i in np.argsort(axes))
    full = [a.shape[k] if k in axes else 1 for k in range(a.ndim)]
    if not isinstance(w, DistributedArray):
        blocks = _aligned(np.asarray(w).transpose(perm).reshape(full), a)
    else:
        if perm != tuple(sorted(perm)) and sum(m.nprocs > 1 for m in w.distribution.maps) > 1:
            # Permuting a grid with several distributed dimensions would renumber ranks:
            # first move the weights to a layout distributed along one dimension only.
            nd = w.ndim
            w = redistribute(w, ["b"] + ["n"] * (nd - 1), [w.backend.nranks] + [1] * (nd - 1))
        maps = iter([w.distribution.maps[i] for i in perm])
        dist = Distribution(
            [next(maps) if k in axes else BlockMap(1, nprocs=1) for k in range(a.ndim)]
        )
        local = {r: b.transpose(perm).reshape(dist.local_shape(r)) for r, b in w.locals.items()}
        blocks = align(new_array(dist, local, a.backend, copy_scalars=True), a.distribution)
    return {r: np.broadcast_to(blocks[r], b.shape) for r, b in a.locals.items()}


@implements(np.average)
@spmd_warnings
def average(
    a: DistributedArray, axis: Axis = None, weights=None, returned=False, *, keepdims=NoValue
) -> DistributedArray:
    """Weighted average, as `numpy.average`; `weights` may be distributed or NumPy.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.array([[1., 2.], [3., 4.]]), backend=dapx.simulated(4))
    >>> float(np.average(a, weights=np.array([[1, 1], [1, 3]])))
    3.0
    >>> np.average(a, axis=1, weights=np.array([3, 1])).gather()
    array([1.25, 3.25])
    """
    a = as_distributed(a)
    keep = flag(keepdims)
    if weights is None:
        avg = mean(a, axis, keepdims=keep)
        scl = avg.dtype.type(a.size / avg.size)
        if not returned:
            return avg
        blocks = {r: np.full(b.shape, scl) for r, b in avg.locals.items()}
        return avg, new_array(avg.distribution, blocks, a.backend, avg.dtype, copy_scalars=True)
    wdtype = weights.dtype if isinstance(weights, DistributedArray) else np.asarray(weights).dtype
    if a.dtype.kind in "biu":
        result_dtype = np.result_type(a.dtype, wdtype, "f8")
    else:
        result_dtype = np.result_type(a.dtype, wdtype)
    if a.ndim == 0:
        w = weights
        if isinstance(w, DistributedArray):
            w = w.locals[a.backend.local_ranks[0]]
        pairs = {r: np.average(b, axis=axis, weights=w, returned=True) for r, b in a.locals.items()}
        avg = new_array(SCALAR, {r: np.asarray(p[0]) for r, p in pairs.items()}, a.backend)
        scl = new_array(SCALAR, {r: np.asarray(p[1]) for r, p in pairs.items()}, a.backend)
        return (avg, scl) if returned else avg
    wb = _weights(weights, a, axis)
    axes = reduced_axes(axis, a.ndim)
    products = {r: np.multiply(b, wb[r], dtype=result_dtype) for r, b in a.locals.items()}
    dist, num, _ = _sums(a, axes, keep, None, products, None, None)
    _, scl, _ = _sums(a, axes, keep, result_dtype, wb, None, None)
    if any_true({r: s == 0.0 for r, s in scl.items()}, a.backend):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    avg = {r: np.true_divide(n, scl[r]) for r, n in num.items()}
    avg = new_array(dist, avg, a.backend, copy_scalars=True)
    return (avg, new_array(dist, scl, a.backend, copy_scalars=True)) if returned else avg
