"""Functions applied along whole axes: apply_along_axis, apply_over_axes, packbits,
unpackbits, unwrap.

`apply_along_axis`, `packbits` and `unpackbits` make the axis whole with the
other axes spread over the ranks (`dapx.functions.whole_core.on_whole_core`)
and run NumPy on each rank's block. `unwrap` is differences, a cumulative sum
and arithmetic along the axis, distributed as those are; `apply_over_axes`
calls the (dapx-dispatched) function axis by axis as NumPy does.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray
from ..core.dispatch import implements
from .joining import concatenate, diff
from .shaping import moveaxis, ravel
from .whole_core import on_whole_core

__all__ = ["apply_along_axis", "apply_over_axes", "packbits", "unpackbits", "unwrap"]


def _along(func, arr, axis: int, name: str, skip_empty: bool = False):
    axis = normalize_axis_index(axis, arr.ndim)
    moved = moveaxis(arr, axis, -1)
    (result,) = on_whole_core(func, [moved], [1], name, skip_empty=skip_empty)
    core = result.ndim - (arr.ndim - 1)
    if core == 1:
        return moveaxis(result, -1, axis)
    if core == 0:
        return result
    return moveaxis(result, list(range(arr.ndim - 1, result.ndim)), list(range(axis, axis + core)))


@implements(np.apply_along_axis)
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """`numpy.apply_along_axis`: each 1-d slice whole on one rank, the others spread.

    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.arange(6).reshape(2, 3), backend=dapx.simulated(2))
    >>> np.apply_along_axis(np.cumsum, 1, a).gather()
    array([[ 0,  1,  3],
           [ 3,  7, 12]])
    """
    if arr.ndim == 0:
        raise np.exceptions.AxisError("axis out of bounds for 0-d array")
    return _along(
        lambda b: np.apply_along_axis(func1d, -1, b, *args, **kwargs),
        arr,
        axis,
        "np.apply_along_axis",
        skip_empty=True,
    )


@implements(np.apply_over_axes)
def apply_over_axes(func, a, axes):
    """`numpy.apply_over_axes`: ``func(a, axis)`` axis by axis, keeping the dimensions."""
    for axis in np.atleast_1d(axes):
        axis = normalize_axis_index(int(axis), a.ndim)
        result = func(a, axis)
        if result.ndim == a.ndim:
            a = result
        elif result.ndim == a.ndim - 1:
            a = np.expand_dims(result, axis)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return a


@implements(np.packbits)
def packbits(a, /, axis=None, bitorder="big"):
    """`numpy.packbits` along a whole axis (the flattened array when `axis` is None)."""
    if axis is None:
        a, axis = ravel(a), 0
    return _along(lambda b: np.packbits(b, axis=-1, bitorder=bitorder), a, axis, "np.packbits")


@implements(np.unpackbits)
def unpackbits(a, /, axis=None, count=None, bitorder="big"):
    """`numpy.unpackbits` along a whole axis."""
    if axis is None:
        a, axis = ravel(a), 0
    return _along(
        lambda b: np.unpackbits(b, axis=-1, count=count, bitorder=bitorder),
        a,
        axis,
        "np.unpackbits",
    )


@implements(np.unwrap)
def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """`numpy.unwrap` (NumPy's arithmetic), with distributed differences and cumulative sum."""
    if not isinstance(p, DistributedArray):
        return np.unwrap(p, discont, axis, period=period)
    axis = normalize_axis_index(axis, p.ndim)
    dd = diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    integer = np.issubdtype(dd.dtype, np.integer)
    if integer:
        interval_high, rem = divmod(period, 2)
        boundary_ambiguous = rem == 0
    else:
        interval_high = period / 2
        boundary_ambiguous = True
    interval_low = -interval_high
    ddmod = np.mod(dd - interval_low, period) + interval_low
    if boundary_ambiguous:
        ddmod = np.where((ddmod == interval_low) & (dd > 0), interval_high, ddmod)
    ph_correct = ddmod - dd
    ph_correct = np.where(np.abs(dd) < discont, 0, ph_correct)
    head = p[(slice(None),) * axis + (slice(0, 1),)]
    corrected = p[(slice(None),) * axis + (slice(1, None),)] + np.cumsum(ph_correct, axis=axis)
    return concatenate([head.astype(corrected.dtype), corrected], axis=axis)
