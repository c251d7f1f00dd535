"""Rearranging elements: rollaxis, take_along_axis, resize, unstack, block, tile, repeat,
insert, delete, trim_zeros.

Each is written with dapx's slicing, fancy indexing, `concatenate` and
`reshape`, so only the elements that change place move.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray
from ..core.dispatch import implements
from .joining import concatenate
from .reductions import any as any_
from .reductions import max as max_
from .reductions import min as min_
from .scans import whole
from .selection import compress, take
from .shaping import ravel, reshape

__all__ = [
    "block",
    "delete",
    "insert",
    "repeat",
    "resize",
    "rollaxis",
    "take_along_axis",
    "tile",
    "trim_zeros",
    "unstack",
]


@implements(np.rollaxis)
def rollaxis(a, axis, start=0):
    """`numpy.rollaxis`: a transpose (no data moves)."""
    n = a.ndim
    axis = normalize_axis_index(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(f"start arg requires {-n} <= start < {n + 1}, got {start}")
    if axis < start:
        start -= 1
    if axis == start:
        return a[...]
    order = list(range(n))
    order.remove(axis)
    order.insert(start, axis)
    return np.transpose(a, order)


def _along_index(shape: tuple, indices, axis: int) -> tuple:
    """The fancy index that picks ``indices`` along `axis` (NumPy's take_along_axis rule)."""
    out = []
    for k in range(len(shape)):
        if k == axis:
            out.append(indices)
        else:
            grid = np.arange(shape[k]).reshape([-1 if j == k else 1 for j in range(len(shape))])
            out.append(grid)
    return tuple(out)


@implements(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    """`numpy.take_along_axis` (distributed or NumPy `indices`), through fancy indexing.

    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.array([[3, 1, 2], [9, 7, 8]]), backend=dapx.simulated(2))
    >>> np.take_along_axis(a, np.argsort(a, axis=1), axis=1).gather()
    array([[1, 2, 3],
           [7, 8, 9]])
    """
    if axis is None:
        if np.ndim(indices) != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        return ravel(arr)[indices]
    axis = normalize_axis_index(axis, arr.ndim)
    if np.ndim(indices) != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    return arr[_along_index(arr.shape, indices, axis)]


@implements(np.resize)
def resize(a, new_shape):
    """`numpy.resize`: the flattened array repeated (or cut) to `new_shape`."""
    new_shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    if any(n < 0 for n in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    size = int(np.prod(new_shape, dtype=np.int64))
    flat = ravel(a)
    if not size:
        return reshape(flat[:0], new_shape)
    if not flat.size:  # NumPy fills with zeros when there is nothing to repeat
        return np.zeros_like(flat, shape=new_shape)
    repeats = -(-size // flat.size)
    whole_flat = concatenate([flat] * repeats) if repeats > 1 else flat
    return reshape(whole_flat[:size], new_shape)


@implements(np.unstack)
def unstack(x, /, *, axis=0):
    """`numpy.unstack`: the slices along `axis`."""
    if x.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    axis = normalize_axis_index(axis, x.ndim)
    return tuple(x[(slice(None),) * axis + (i,)] for i in range(x.shape[axis]))


def _depth(arrays) -> int:
    if isinstance(arrays, list):
        if not arrays:
            raise ValueError("List at arrays cannot be empty")
        depths = {_depth(a) for a in arrays}
        if len(depths) != 1:
            raise ValueError("List depths are mismatched")
        return 1 + depths.pop()
    if isinstance(arrays, tuple):
        raise TypeError("arrays is a tuple. Only lists can be used to arrange blocks")
    return 0


def _max_ndim(arrays) -> int:
    return max(_max_ndim(a) for a in arrays) if isinstance(arrays, list) else np.ndim(arrays)


@implements(np.block)
def block(arrays):
    """`numpy.block`: nested `concatenate`, innermost lists along the last axis."""
    depth = _depth(arrays)
    ndim = max(depth, _max_ndim(arrays))

    def assemble(item, level):
        if level == depth:
            a = item if isinstance(item, DistributedArray) else np.asarray(item)
            return (
                reshape(a, (1,) * (ndim - a.ndim) + a.shape)
                if isinstance(a, DistributedArray)
                else a.reshape((1,) * (ndim - a.ndim) + a.shape)
            )
        parts = [assemble(i, level + 1) for i in item]
        if not any(isinstance(p, DistributedArray) for p in parts):
            return np.concatenate(parts, axis=-(depth - level))  # a NumPy-only row
        return concatenate(parts, axis=-(depth - level))

    return assemble(arrays, 0)


@implements(np.tile)
def tile(A, reps):
    """`numpy.tile`: copies joined with `concatenate`, axis by axis."""
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    ndim = max(A.ndim, len(reps))
    A = reshape(A, (1,) * (ndim - A.ndim) + A.shape) if A.ndim < ndim else A
    reps = (1,) * (ndim - len(reps)) + reps
    if any(r < 0 for r in reps):  # concatenate([A] * -1) would say "need at least one array"
        raise ValueError("negative dimensions are not allowed")
    for axis, count in enumerate(reps):
        if count != 1:
            A = (
                concatenate([A] * count, axis=axis)
                if count
                else A[(slice(None),) * axis + (slice(0, 0),)]
            )
    return A if any(r != 1 for r in reps) else A.copy()


@implements(np.repeat)
def repeat(a, repeats, axis=None):
    """`numpy.repeat`: a `take` with NumPy's index map of ``arange(n)``."""
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis_index(axis, a.ndim)
    if isinstance(repeats, DistributedArray):  # NumPy takes a Python float, not a 0-d array
        repeats = whole(repeats, "np.repeat's repeats")
    index = np.repeat(np.arange(a.shape[axis]), repeats)
    return take(a, index, axis)


def _axis_for(arr, axis):
    if axis is None:
        return ravel(arr), 0
    return arr, normalize_axis_index(axis, arr.ndim)


@implements(np.delete)
def delete(arr, obj, axis=None):
    """`numpy.delete`: `compress` with a mask of the kept positions."""
    arr, axis = _axis_for(arr, axis)
    n = arr.shape[axis]
    keep = np.ones(n, bool)
    if isinstance(obj, slice):
        keep[obj] = False
    else:
        obj = np.asarray(whole(obj, "np.delete's positions"))
        if obj.dtype == bool:
            if obj.shape != (n,):
                raise ValueError(
                    f"boolean array argument obj to delete must be one dimensional and match "
                    f"the axis length of {n}"
                )
            keep = ~obj
        elif obj.dtype.kind not in "iu" and obj.size:
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        else:
            if obj.size and (obj.min() < -n or obj.max() >= n):
                bad = obj[(obj < -n) | (obj >= n)].ravel()[0]
                raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
            keep[obj.astype(np.intp)] = False
    return compress(keep, arr, axis)


@implements(np.insert)
def insert(arr, obj, values, axis=None):
    """`numpy.insert`: the old elements moved once to their new places, then the values set.

    NumPy's own rules decide the positions and the shape of the inserted
    block (it runs on an index array of the axis).
    """
    arr, axis = _axis_for(arr, axis)
    n = arr.shape[axis]
    obj = whole(obj, "np.insert's positions") if isinstance(obj, DistributedArray) else obj
    values = np.asarray(whole(values, "np.insert's values"), dtype=arr.dtype)
    if not isinstance(obj, slice) and np.ndim(obj) == 0:
        # NumPy: a scalar position inserts values.shape[axis] slices there (a[:, 0:1, :] rule).
        values = np.array(values, ndmin=arr.ndim)
        values = np.moveaxis(values, 0, axis)
        count = values.shape[axis]
        source = np.insert(np.arange(n), obj, np.full(count, -1))
    else:
        source = np.insert(np.arange(n), obj, -1)
    new_positions = np.flatnonzero(source < 0)
    result = take(arr, np.where(source < 0, 0, source), axis)
    if new_positions.size:
        shape = list(arr.shape)
        shape[axis] = new_positions.size
        result[(slice(None),) * axis + (new_positions,)] = np.broadcast_to(values, shape)
    return result


@implements(np.trim_zeros)
def trim_zeros(filt, trim="fb", axis=None):
    """`numpy.trim_zeros`: the smallest slice holding every nonzero (found with reductions)."""
    trim = trim.lower()
    if any(c not in "fb" for c in trim):
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    axes = range(filt.ndim) if axis is None else [normalize_axis_index(axis, filt.ndim)]
    key = [slice(None)] * filt.ndim
    nonzero = filt != 0
    for k in axes:
        others = tuple(j for j in range(filt.ndim) if j != k)
        present = any_(nonzero, axis=others) if others else nonzero
        where = np.flatnonzero(present)
        if where.size == 0:
            key[k] = slice(0, 0)
            continue
        start = int(min_(where)) if "f" in trim else 0
        stop = int(max_(where)) + 1 if "b" in trim else filt.shape[k]
        key[k] = slice(start, stop)
    return filt[tuple(key)]
