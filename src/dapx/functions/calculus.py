"""Differences and integrals that NumPy writes in Python: ediff1d and trapezoid.

Both are slices, elementwise arithmetic and a sum: the elementwise engine
aligns the shifted slices (one exchange of boundary elements for blocks),
and the sum combines partials in rank order.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray
from ..core.dispatch import implements
from .joining import concatenate, diff
from .reductions import sum as sum_
from .shaping import ravel

__all__ = ["ediff1d", "trapezoid"]


def _extra(values, dtype: np.dtype, name: str) -> np.ndarray | DistributedArray:
    if values is None:
        return np.empty(0, dtype)
    if isinstance(values, DistributedArray):
        if not np.can_cast(values.dtype, dtype, casting="same_kind"):
            raise TypeError(
                f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule."
            )
        return ravel(values).astype(dtype)
    values = np.asanyarray(values)
    if not np.can_cast(values, dtype, casting="same_kind"):
        raise TypeError(
            f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule."
        )
    return values.ravel().astype(dtype)


@implements(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    """`numpy.ediff1d`: differences of the flattened array, with optional ends.

    >>> import numpy as np, dapx
    >>> np.ediff1d(dapx.asarray([1, 2, 4, 7], backend=dapx.simulated(2)), to_begin=-9).gather()
    array([-9,  1,  2,  3])
    """
    flat = ravel(ary)
    dtype = flat.dtype
    if dtype.kind == "b":  # NumPy subtracts (diff would use not_equal): NumPy's TypeError
        np.subtract(np.zeros(0, bool), np.zeros(0, bool))
    parts = [_extra(to_begin, dtype, "to_begin"), diff(flat), _extra(to_end, dtype, "to_end")]
    return concatenate(parts)  # the differences, even empty, carry the backend and layout


@implements(np.trapezoid)
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """`numpy.trapezoid`: the trapezoidal rule along `axis`.

    >>> import numpy as np, dapx
    >>> float(np.trapezoid(dapx.asarray([1.0, 2.0, 3.0], backend=dapx.simulated(2))).gather())
    4.0
    """
    axis = normalize_axis_index(axis, y.ndim)
    upper = [slice(None)] * y.ndim
    lower = [slice(None)] * y.ndim
    upper[axis], lower[axis] = slice(1, None), slice(None, -1)
    if x is None:
        d = dx
    else:
        if not isinstance(x, DistributedArray):
            x = np.asanyarray(x)
        if x.ndim == 1:
            d = diff(x) if isinstance(x, DistributedArray) else np.diff(x)
            shape = [1] * y.ndim
            shape[axis] = d.shape[0]
            d = d.reshape(shape)
        else:
            d = diff(x, axis=axis) if isinstance(x, DistributedArray) else np.diff(x, axis=axis)
    return sum_(d * (y[tuple(upper)] + y[tuple(lower)]) / 2.0, axis=axis)
