"""Selecting along an axis: take, compress, extract, through dapx's fancy indexing.

The indices (NumPy or distributed) select elements along one axis; only the
selected elements move, into the layout fancy indexing gives.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray
from ..core.dispatch import implements
from .manipulation import nonzero
from .shaping import ravel, write_into

__all__ = ["compress", "extract", "take"]


def _along(a, axis: int, index):
    return a[(slice(None),) * axis + (index,)]


@implements(np.take)
def take(a, indices, axis=None, out=None, mode="raise"):
    """`numpy.take` (``mode`` 'raise', 'wrap' or 'clip').

    >>> import numpy as np, dapx
    >>> np.take(dapx.arange(10, 20, backend=dapx.simulated(2)), [3, -1, 0]).gather()
    array([13, 19, 10])
    """
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis_index(axis, a.ndim)
    n = a.shape[axis]
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    if not isinstance(indices, DistributedArray):
        indices = np.asarray(indices)
        if indices.dtype.kind not in "iu":  # NumPy casts any numbers (unsafe), as astype
            indices = indices.astype(np.intp)
        if mode == "wrap" and n:
            indices = np.mod(indices, n)
        elif mode == "clip":
            indices = np.clip(indices, 0, max(n - 1, 0))
    elif mode == "wrap":
        indices = np.mod(indices, n)
    elif mode == "clip":
        indices = np.clip(indices, 0, max(n - 1, 0))
    result = _along(a, axis, indices)
    return result if out is None else write_into(out, result)


def _condition_indices(condition, n: int):
    """The positions where 1-d `condition` holds; beyond its length counts as False."""
    if isinstance(condition, DistributedArray):
        if condition.ndim != 1:
            raise ValueError("condition must be a 1-d array")
        (where,) = nonzero(condition)
        if condition.shape[0] > n and where.size and int(np.max(where)) >= n:
            raise IndexError(f"index {int(np.max(where))} is out of bounds for axis with size {n}")
        return where
    condition = np.asarray(condition)
    if condition.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    where = np.flatnonzero(condition)
    if where.size and where[-1] >= n:
        raise IndexError(f"index {where[-1]} is out of bounds for axis 0 with size {n}")
    return where


@implements(np.compress)
def compress(condition, a, axis=None, out=None):
    """`numpy.compress`: the slices along `axis` where `condition` is true."""
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis_index(axis, a.ndim)
    result = _along(a, axis, _condition_indices(condition, a.shape[axis]))
    return result if out is None else write_into(out, result)


@implements(np.extract)
def extract(condition, arr):
    """`numpy.extract`: the elements of `arr` where `condition` is true, flattened."""
    flat = ravel(arr)
    cond = ravel(condition) if isinstance(condition, DistributedArray) else np.ravel(condition)
    # NumPy takes the true positions: a shorter condition is fine, a true one beyond is not.
    return flat[_condition_indices(cond, flat.shape[0])]
