"""Grids and spaced values from distributed arrays: meshgrid, ix_, linspace, logspace,
geomspace, kron.

`linspace` and friends dispatch to dapx when `start`/`stop` are distributed:
the new axis of samples is undistributed and the others keep their layout.
`meshgrid`, `ix_` and `kron` reshape and broadcast, so nothing moves until a
result is copied (``meshgrid(copy=True)`` writes each rank's own block).
"""

from __future__ import annotations

import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray
from ..core.dispatch import implements
from .broadcasting import broadcast_to
from .shaping import from_replicated, moveaxis, reshape

__all__ = ["geomspace", "ix_", "kron", "linspace", "logspace", "meshgrid"]


def _as_array(x):
    return x if isinstance(x, DistributedArray) else np.asarray(x)


@implements(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """`numpy.meshgrid` of 1-d arrays: reshapes, broadcast unless `sparse`.

    >>> import numpy as np, dapx
    >>> x = dapx.arange(3, backend=dapx.simulated(2))
    >>> [g.gather().tolist() for g in np.meshgrid(x, np.array([0, 10]))]
    [[[0, 1, 2], [0, 1, 2]], [[0, 0, 0], [10, 10, 10]]]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    arrays = [_as_array(x) for x in xi]
    backend = next(x.backend for x in arrays if isinstance(x, DistributedArray))
    # NumPy inputs become distributed too (no communication), so every grid is.
    arrays = [x if isinstance(x, DistributedArray) else from_replicated(x, backend) for x in arrays]
    ndim = len(arrays)
    grids = []
    for k, x in enumerate(arrays):
        shape = [1] * ndim
        shape[k] = x.size
        flat = x.reshape(-1) if not isinstance(x, DistributedArray) else reshape(x, (-1,))
        grids.append(
            flat.reshape(shape) if not isinstance(flat, DistributedArray) else reshape(flat, shape)
        )
    if indexing == "xy" and ndim > 1:
        swap = [1, 0, *range(2, ndim)]
        grids = [
            np.transpose(g, swap) if isinstance(g, DistributedArray) else g.transpose(swap)
            for g in grids
        ]
    if not sparse:
        shape = np.broadcast_shapes(*(g.shape for g in grids))
        grids = [
            broadcast_to(g, shape) if isinstance(g, DistributedArray) else np.broadcast_to(g, shape)
            for g in grids
        ]
    if copy:
        grids = [np.copy(g) for g in grids]
    return tuple(grids)


@implements(np.ix_)
def ix_(*args):
    """`numpy.ix_`: each 1-d sequence reshaped to its own axis (booleans via `nonzero`)."""
    out = []
    n = len(args)
    arrays = [_as_array(x) for x in args]
    backend = next(x.backend for x in arrays if isinstance(x, DistributedArray))
    for k, x in enumerate(arrays):
        if not isinstance(x, DistributedArray):
            x = from_replicated(x, backend)
        if x.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if x.dtype == bool:
            (x,) = np.nonzero(x)
        shape = (1,) * k + (x.size,) + (1,) * (n - k - 1)
        out.append(reshape(x, shape) if isinstance(x, DistributedArray) else x.reshape(shape))
    return tuple(out)


@implements(np.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """`numpy.linspace` between distributed `start` and `stop` (NumPy's arithmetic).

    >>> import numpy as np, dapx
    >>> start = dapx.asarray([0.0, 10.0], backend=dapx.simulated(2))
    >>> np.linspace(start, 1.0, 3).gather()
    array([[ 0. , 10. ],
           [ 0.5,  5.5],
           [ 1. ,  1. ]])
    """
    num = operator.index(num)  # NumPy refuses a float number of samples
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    start, stop = _as_array(start), _as_array(stop)
    result_dtype = np.result_type(start, stop, float(num))
    # NumPy subtracts in the result's (inexact) dtype: bool endpoints cannot be subtracted.
    delta = np.subtract(stop, start, dtype=result_dtype)
    steps = np.arange(0, num, dtype=result_dtype).reshape((-1,) + (1,) * np.ndim(delta))
    if div > 0:
        step = delta / div
        y = steps * step + start
    else:
        step = np.nan * delta
        y = steps * delta + start
    if endpoint and num > 1:
        y[-1, ...] = stop
    if axis != 0:
        y = moveaxis(y, 0, normalize_axis_index(axis, np.ndim(y)))
    if dtype is not None:
        if np.issubdtype(dtype, np.integer):  # NumPy rounds down, not towards zero
            y = np.floor(y)
        y = y.astype(dtype, copy=False)
    return (y, step) if retstep else y


@implements(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """`numpy.logspace`: `base` to the power of `linspace`."""
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    if not isinstance(base, (float, int)):  # a Python scalar stays weak, as in NumPy:
        base = _as_array(base)  # float32 exponents give float32 powers
        if np.ndim(base):
            base = np.expand_dims(base, axis)
    result = np.power(base, y)
    return result if dtype is None else result.astype(dtype, copy=False)


@implements(np.geomspace)
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """`numpy.geomspace`, NumPy's algorithm: `start` rotated to the positive reals, `logspace`
    between the logarithms, the rotation undone (so opposite signs give NaNs as NumPy's do,
    and complex endpoints work); the endpoints are exact."""
    start, stop = _as_array(start), _as_array(stop)
    if bool(np.any(start == 0)) or bool(np.any(stop == 0)):
        raise ValueError("Geometric sequence cannot include zero")
    dt = np.result_type(start, stop, float(num), np.zeros((), dtype))
    start, stop = start.astype(dt, copy=True), stop.astype(dt, copy=True)
    out_sign = np.sign(start)
    start = start / out_sign
    stop = stop / out_sign
    y = logspace(np.log10(start), np.log10(stop), num, endpoint=endpoint, base=10.0, dtype=dt)
    if num > 0:
        y[0, ...] = start
        if endpoint and num > 1:
            y[-1, ...] = stop
    y = y * out_sign
    if axis != 0:
        y = moveaxis(y, 0, normalize_axis_index(axis, np.ndim(y)))
    return y if dtype is None else y.astype(dtype, copy=False)


@implements(np.kron)
def kron(a, b):
    """`numpy.kron`: an outer product, axes interleaved, then reshaped."""
    a, b = _as_array(a), _as_array(b)
    ndim = max(a.ndim, b.ndim)
    a = (
        reshape(a, (1,) * (ndim - a.ndim) + a.shape)
        if isinstance(a, DistributedArray)
        else a.reshape((1,) * (ndim - a.ndim) + a.shape)
    )
    b = (
        reshape(b, (1,) * (ndim - b.ndim) + b.shape)
        if isinstance(b, DistributedArray)
        else b.reshape((1,) * (ndim - b.ndim) + b.shape)
    )
    product = np.multiply.outer(a, b)
    order = [k for pair in zip(range(ndim), range(ndim, 2 * ndim)) for k in pair]
    interleaved = np.transpose(product, order)
    return reshape(interleaved, tuple(m * n for m, n in zip(a.shape, b.shape)))
