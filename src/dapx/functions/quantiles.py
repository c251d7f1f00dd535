"""Order statistics of distributed arrays: medians, quantiles and percentiles.

They are exact. Over some axes, the reduced axes are moved so that they are
whole on every rank (only 1-D slices along them move, see
`dapx.exchange.whole_axes.move_axes`) and NumPy computes each slice. Over
every axis of a distributed array (``axis=None``) the flattened array is
sorted with the distributed sample sort (`dapx.functions.sorting`: no rank
receives more than about 1.3 times its share, whatever the keys) and only
the few order statistics the result needs are fetched: NaNs sort last, so
the NaN-ignoring variants read the first ``n - count(NaN)`` elements. The
interpolation is NumPy's own (its quantile method table), so results are
bitwise NumPy's.

Weighted quantiles (``method="inverted_cdf"``) over every axis sort the values
with their weights carried along (`dapx.functions.sorting.sort_carrying`, in
the sort's bucket layout), scan the weights in float64 exactly as NumPy's
sequential ``cumsum`` does (`exact_cumsum`), and count, per quantile, the
cumulative weights below it on each rank: one small allgather; then only the
selected elements are fetched.
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
from .shaping import owned_block, ravel
from .sorting import searchsorted, sort, sort_carrying
from .statistics import _weights, nanmean

try:  # NumPy's quantile methods (private, stable since NumPy 1.22): exact interpolation
    from numpy.lib import _function_base_impl as _np_quantile
except ImportError:  # pragma: no cover - a NumPy without them gathers along the axes
    _np_quantile = None

__all__ = [
    "exact_cumsum",
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


_NAN_FUNCS = (np.nanmedian, np.nanquantile, np.nanpercentile)


def _fetch(s: DistributedArray, index: np.ndarray) -> np.ndarray:
    """Elements of the distributed sorted array at a few NumPy indices, on every process."""
    index = np.asarray(index, np.intp)
    if index.size == 0:
        return np.empty(index.shape, s.dtype)
    return s[index.ravel()].gather().reshape(index.shape)


def _from_sorted(func, a: DistributedArray, kw: dict):
    """`func` over every axis of `a` from its distributed sort, or None where not handled.

    Mirrors NumPy's `_quantile` (and `_median`): the result depends on the
    sorted values only at a few indices, and on whether the last one is NaN.
    """
    q = kw.get("q")
    if func not in (np.median, np.nanmedian) and _np_quantile is None:
        return None
    s = sort(ravel(a))
    n = s.shape[0]
    m = n
    if s.dtype.kind in "f":
        m = int(searchsorted(s, s.dtype.type(np.nan)))  # NaNs sort last
    if func in _NAN_FUNCS:
        if m == 0:
            return None  # all NaN: NumPy's warning and NaN, by the general path
    elif m < n:  # a NaN: NumPy's result is the last sorted element, NaN
        last = _fetch(s, np.array([n - 1]))[0]
        shape = np.shape(q) if q is not None else ()
        return np.full(shape, last)[()] if shape else last
    if func in (np.median, np.nanmedian):
        middle = _fetch(s, np.unique([(m - 1) // 2, m // 2]))
        return np.median(middle)  # the mean of the middle one or two, as NumPy's
    method = kw.get("method", "linear")
    props = _np_quantile._QuantileMethods.get(method)
    if props is None:
        return None  # NumPy's error, by the general path
    weak_q = type(q) in (int, float)
    if func in (np.percentile, np.nanpercentile):
        qa = np.true_divide(q, 100, out=...)
    else:
        qa = np.asanyarray(q)
    virtual = np.asanyarray(props["get_virtual_index"](m, qa))
    whole_index = props["fix_gamma"] is None or (
        method == "linear" and np.issubdtype(virtual.dtype, np.integer)
    )
    if whole_index:
        return _fetch(s, np.where(virtual < 0, virtual + m, virtual))[()]
    previous_at, next_at = _np_quantile._get_indexes(np.empty(0, s.dtype), virtual, m)
    previous = _fetch(s, np.where(previous_at < 0, previous_at + m, previous_at))
    following = _fetch(s, np.where(next_at < 0, next_at + m, next_at))
    gamma = _np_quantile._get_gamma(virtual, previous_at, props)
    gamma = float(gamma) if weak_q else gamma.reshape(virtual.shape)
    return _np_quantile._lerp(previous, following, gamma)[()]


def _two_sum_exact(a: np.ndarray, b: np.ndarray, sums: np.ndarray) -> bool:
    """Whether every ``sums = a + b`` (as rounded) was exact: the error-free sum's error is 0."""
    with np.errstate(all="ignore"):
        bb = sums - a
        return bool(np.all((a - (sums - bb)) + (b - bb) == 0))


def exact_cumsum(blocks: dict, backend) -> tuple[dict, float]:
    """NumPy's float64 ``cumsum`` of the rank-order concatenation of `blocks`, bit for bit.

    Floating-point addition is not associative, so adding the preceding ranks'
    total to a local scan may differ from NumPy's sequential sum in the last
    bit. When every addition involved is exact (integer weights, say: checked
    with error-free sums) the two cannot differ, and one allgather suffices;
    otherwise each rank in turn scans its block from the exact running total of
    the ranks before it (P broadcasts of one number). Returns the scanned blocks
    (each rank's own) and the total, on every process.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> b = dapx.simulated(2)
    >>> scanned, total = exact_cumsum({0: np.array([0.1, 0.2]), 1: np.array([0.3])}, b)
    >>> scanned[1][0] == np.cumsum([0.1, 0.2, 0.3])[-1], total
    (np.True_, 0.6000000000000001)
    """
    blocks = {r: np.asarray(w, np.float64) for r, w in blocks.items()}
    local = {r: np.cumsum(w) for r, w in blocks.items()}
    ends = np.array(
        backend.allgather({r: c[-1] if c.size else 0.0 for r, c in local.items()}), np.float64
    )
    carries = np.concatenate(([0.0], np.cumsum(ends)))  # sequential, in rank order
    exact = _two_sum_exact(carries[:-1], ends, carries[1:])
    mine = {
        r: _two_sum_exact(c[:-1], blocks[r][1:], c[1:])
        and _two_sum_exact(np.full(c.size, carries[r]), c, c + carries[r])
        for r, c in local.items()
    }
    if exact and all(backend.allgather(mine)):
        return {r: c + carries[r] for r, c in local.items()}, float(carries[-1])
    carry = 0.0
    for r in range(backend.nranks):
        end = carry
        if r in local:
            local[r] = np.cumsum(np.concatenate(([carry], blocks[r])))[1:]
            end = local[r][-1] if local[r].size else carry
        carry = float(backend.bcast(end, r))
    return local, carry


def _weighted(func, a: DistributedArray, wb: dict, kw: dict):
    """`func` with weights (``inverted_cdf``) over every axis of `a`, distributed.

    Mirrors NumPy's weighted `_quantile`: sort by value carrying the weights,
    cdf = cumsum(weights, float64) / total (in the dtype of q when it is a float
    type), zeros set to -1 when the first cdf is 0, and per quantile the first
    index whose cdf reaches it. The global index is the sum of the ranks' local
    counts of cdf values below the quantile (the cdf is non-decreasing).
    """
    backend = a.backend
    wdtype = np.result_type(*[w.dtype for w in wb.values()]) if wb else np.dtype(float)
    weights = new_array(
        a.distribution,
        {r: np.ascontiguousarray(w, wdtype) for r, w in wb.items()},
        backend,
        wdtype,
    )
    s, sw = sort_carrying(ravel(a), ravel(weights))
    n = s.shape[0]
    m = n
    if s.dtype.kind == "f":
        m = int(searchsorted(s, s.dtype.type(np.nan)))  # NaNs sort last
    if func in _NAN_FUNCS:
        if m == 0:  # all NaN: NumPy's warning and NaN, on one element
            return func(np.full(1, np.nan, a.dtype), weights=np.ones(1), **kw)
    elif m < n:  # a NaN: NumPy's result is the last sorted element, NaN
        last = _fetch(s, np.array([n - 1]))[0]
        shape = np.shape(kw["q"])
        return np.full(shape, last)[()] if shape else last
    q = kw["q"]
    qa = np.true_divide(q, 100, out=...) if func in (np.percentile, np.nanpercentile) else q
    qa = np.asanyarray(qa)
    blocks = {}  # each rank's weights of non-NaN values (a contiguous run of the sorted order)
    for r in backend.local_ranks:
        keep = int(np.count_nonzero(s.distribution.owned_indices(r)[0] < m))
        blocks[r] = owned_block(sw, r)[:keep]
    cumulative, total = exact_cumsum(blocks, backend)
    if total == 0 or not np.isfinite(total):  # NumPy's warning and ValueError
        return func(np.zeros(1, a.dtype), weights=np.array([total]), **kw)
    flat_q = qa.ravel()
    partial = {}
    for r, c in cumulative.items():
        cdf = c / total
        if qa.dtype.kind == "f":
            cdf = cdf.astype(qa.dtype)
        below = np.searchsorted(cdf, flat_q, side="left")
        zeros = np.searchsorted(cdf, cdf.dtype.type(0), side="right")  # cdf == 0: a prefix
        below_if_zeros_dropped = np.maximum(below, zeros)  # zeros become -1 < every q
        partial[r] = (cdf[0] if cdf.size else None, below, below_if_zeros_dropped)
    gathered = backend.allgather(partial)
    first = next((g[0] for g in gathered if g[0] is not None), None)
    column = 2 if first is not None and first == 0 else 1
    index = np.minimum(sum(g[column] for g in gathered), m - 1)
    return _fetch(s, index.reshape(qa.shape))[()]


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
    if len(axes) == a.ndim and a.size and a.dtype.kind in "biuf" and backend.nranks > 1:
        value = _from_sorted(func, a, kw) if wb is None else _weighted(func, a, wb, kw)
        if value is not None:
            value = np.asarray(value, res_dtype)
            if keepdims:
                value = value.reshape(value.shape + (1,) * a.ndim)
            return store(from_replicated(value, backend), out, "unsafe")
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
