"""Order statistics of distributed arrays: medians, quantiles and percentiles.

They are exact: the reduced axes are moved so that they are whole on every
rank (only 1-D slices along them move, see `dapx.exchange.whole_axes.move_axes`) and
NumPy computes each slice. A reduction over every axis therefore brings the
whole array to one rank (rank 0), never to every rank.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core.array import DistributedArray, new_array
from ..core.dispatch import implements
from ..exchange.whole_axes import holder_value, move_axes
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap
from .reduction_engine import (
    Axis,
    NoValue,
    any_true,
    as_distributed,
    drop,
    flag,
    from_replicated,
    layout,
    reduced_axes,
    scalar_call,
    select,
    single_out,
    spmd_warnings,
    store,
)
from .statistics import _weights, nanmean

__all__ = [
    "median",
    "nanmedian",
    "nanpercentile",
    "nanquantile",
    "percentile",
    "quantile",
]


def _local_statistic(func, block, axes, keepdims, dtype, kw):
    """`func` over `axes` of one block; an empty result is made, not computed (NumPy's
    multi-axis reshape fails on blocks with an empty kept dimension)."""
    shape = (
        *(np.shape(kw["q"]) if "q" in kw else ()),
        *(1 if k in axes else n for k, n in enumerate(block.shape) if keepdims or k not in axes),
    )
    if 0 in shape:
        return np.empty(shape, dtype)
    return np.asarray(func(block, axis=axes, keepdims=keepdims, **kw), dtype)


@spmd_warnings
def _order_statistic(func, a, axis, out, keepdims, q=None, method=None, weights=None):
    out = single_out(out)
    a = as_distributed(a, out)
    keepdims = flag(keepdims)
    kw = {}
    if q is not None:
        if isinstance(q, DistributedArray):
            from .scans import whole

            q = whole(q, func.__name__)
        kw["q"] = q
    if method is not None:
        kw["method"] = method
    if a.ndim == 0:
        if weights is not None:
            kw["weights"] = np.asarray(weights)
        return scalar_call(func, a, out, axis=axis, keepdims=keepdims, **kw)
    # NumPy's checks of q, method and dtype, on every rank, and the result dtype.
    res_dtype = np.asarray(func(np.zeros(1, a.dtype), **kw)).dtype
    if weights is not None and method != "inverted_cdf":
        raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
    axes = reduced_axes(axis, a.ndim)
    if a.size == 0:
        # NumPy's verdict on an empty array of this shape (it costs nothing): e.g. median over
        # several axes folds them with a reshape that fails when a kept dimension is empty.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            func(np.empty(a.shape, a.dtype), axis=axis, **kw)
    backend = a.backend
    wb = None
    if weights is not None:
        wb = _weights(weights, a, axis)
        if any_true({r: w < 0 for r, w in wb.items()}, backend):
            raise ValueError("Weights must be non-negative.")
    qmaps = [BlockMap(n, nprocs=1) for n in np.shape(q)] if q is not None else []
    lay = layout(a.distribution, axes, backend)
    if lay.count == 0:  # empty slices: NumPy's verdict (an error, or warnings), on every rank
        func(np.zeros(0, a.dtype), **kw)
    results = {}
    if not lay.dist_axes:
        for r, b in a.locals.items():
            if wb is not None:
                kw["weights"] = select(wb[r], lay.sel[r])
            view = select(b, lay.sel[r])
            results[r] = _local_statistic(func, view, axes, keepdims, res_dtype, kw)
        dist = Distribution([*qmaps, *drop(a.distribution.maps, axes, keepdims).maps])
        return store(new_array(dist, results, backend, copy_scalars=True), out, "unsafe")
    moved = move_axes(a.distribution, backend, axes, [a.locals, wb])
    for r, b in moved.blocks[0].items():
        if wb is not None:
            kw["weights"] = moved.blocks[1][r]
        results[r] = _local_statistic(func, b, moved.axes, keepdims, res_dtype, kw)
    if moved.dummy:
        value = holder_value(moved, results, backend, axis=len(qmaps))
        return store(from_replicated(value, backend), out, "unsafe")
    dist = Distribution([*qmaps, *drop(moved.dist.maps, moved.axes, keepdims).maps])
    return store(new_array(dist, results, backend, copy_scalars=True), out, "unsafe")


def _nan_order_statistic(func, a, axis, out, keepdims, q, method, weights):
    a = as_distributed(a, single_out(out))
    if a.size == 0:  # NumPy's checks of q, then its all-NaN result: the mean of nothing
        func(np.zeros(1, a.dtype), q, method=method)
        return nanmean(a, axis, out=out, keepdims=keepdims)
    return _order_statistic(func, a, axis, out, keepdims, q, method, weights)


@implements(np.median)
def median(
    a: DistributedArray, axis: Axis = None, out=None, overwrite_input=False, keepdims=False
) -> DistributedArray:
    """Median, as `numpy.median`, exact.

    The reduced axes are moved so that each rank holds whole 1-D slices
    along them; with every axis reduced, rank 0 holds the array.

    # Note: `overwrite_input` is accepted and ignored (the input is never changed).
    # Over several axes of an array with an empty kept dimension the result is
    # empty, where NumPy's own reshape fails with ValueError.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.array([[7., 1., 4.], [2., 9., 3.]]), backend=dapx.simulated(4))
    >>> float(np.median(a)), np.median(a, axis=1).gather().tolist()
    (3.5, [4.0, 3.0])
    """
    return _order_statistic(np.median, a, axis, out, keepdims)


@implements(np.nanmedian)
def nanmedian(
    a: DistributedArray, axis: Axis = None, out=None, overwrite_input=False, keepdims=NoValue
) -> DistributedArray:
    """Median ignoring NaNs, as `numpy.nanmedian`.

    # Note: `overwrite_input` is accepted and ignored.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> float(np.nanmedian(dapx.asarray([1., np.nan, 3., 10.], backend=dapx.simulated(2))))
    3.0
    """
    a = as_distributed(a, single_out(out))
    if a.size == 0:
        return nanmean(a, axis, out=out, keepdims=keepdims)
    return _order_statistic(np.nanmedian, a, axis, out, keepdims)


@implements(np.quantile)
def quantile(
    a: DistributedArray,
    q,
    axis: Axis = None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
) -> DistributedArray:
    """Quantiles, as `numpy.quantile`, exact (every method; weights with ``inverted_cdf``).

    # Note: `overwrite_input` is accepted and ignored.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(11., dist="c", backend=dapx.simulated(3))
    >>> np.quantile(a, [0.1, 0.5]).gather()
    array([1., 5.])
    """
    return _order_statistic(np.quantile, a, axis, out, keepdims, q, method, weights)


@implements(np.nanquantile)
def nanquantile(
    a: DistributedArray,
    q,
    axis: Axis = None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=NoValue,
    *,
    weights=None,
) -> DistributedArray:
    """Quantiles ignoring NaNs, as `numpy.nanquantile`.

    # Note: `overwrite_input` is accepted and ignored.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> float(np.nanquantile(dapx.asarray([np.nan, 1., 2., 3.], backend=dapx.simulated(2)), 0.5))
    2.0
    """
    return _nan_order_statistic(np.nanquantile, a, axis, out, keepdims, q, method, weights)


@implements(np.percentile)
def percentile(
    a: DistributedArray,
    q,
    axis: Axis = None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
) -> DistributedArray:
    """Percentiles, as `numpy.percentile`, exact.

    # Note: `overwrite_input` is accepted and ignored.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> float(np.percentile(dapx.arange(101., backend=dapx.simulated(4)), 25))
    25.0
    """
    return _order_statistic(np.percentile, a, axis, out, keepdims, q, method, weights)


@implements(np.nanpercentile)
def nanpercentile(
    a: DistributedArray,
    q,
    axis: Axis = None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=NoValue,
    *,
    weights=None,
) -> DistributedArray:
    """Percentiles ignoring NaNs, as `numpy.nanpercentile`.

    # Note: `overwrite_input` is accepted and ignored.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> float(np.nanpercentile(dapx.asarray([np.nan, 0., 10.], backend=dapx.simulated(2)), 50))
    5.0
    """
    return _nan_order_statistic(np.nanpercentile, a, axis, out, keepdims, q, method, weights)
