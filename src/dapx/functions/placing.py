"""Writing into distributed arrays in place: put, place, putmask, copyto, fill_diagonal, ....

Each is dapx's fancy or masked assignment (`DistributedArray.__setitem__`)
with the positions NumPy's function defines: only the written elements move.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray, new_array
from ..core.dispatch import implements
from .manipulation import where
from .scans import whole
from .shaping import ravel

__all__ = ["copyto", "fill_diagonal", "place", "put", "put_along_axis", "putmask"]


def _target(a, name: str) -> DistributedArray:
    if not isinstance(a, DistributedArray):
        raise TypeError(f"{name}: the array written into must be a DistributedArray here")
    return a


def _cycled(values, count: int) -> np.ndarray:
    values = np.ravel(whole(values, "the values written"))
    if count and not values.size:
        raise ValueError("cannot write from an empty set of values")
    return np.resize(values, count) if count else values[:0]


@implements(np.put)
def put(a, ind, v, mode="raise"):
    """`numpy.put`: `v` (repeated as needed) at flat indices `ind` of `a`.

    >>> import numpy as np, dapx
    >>> a = dapx.zeros(5, int, backend=dapx.simulated(2))
    >>> np.put(a, [0, 3], [7, 9]); a.gather()
    array([7, 0, 0, 9, 0])
    """
    a = _target(a, "put")
    ind = np.ravel(whole(ind, "np.put's indices")).astype(np.intp)
    n = a.size
    if mode == "wrap" and n:
        ind = np.mod(ind, n)
    elif mode == "clip":
        ind = np.clip(ind, 0, max(n - 1, 0))
    elif mode != "raise":
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    elif ind.size and (ind.min() < -n or ind.max() >= n):
        bad = ind[(ind < -n) | (ind >= n)][0]
        raise IndexError(f"index {bad} is out of bounds for axis 0 with size {n}")
    if not ind.size:
        return
    positions = np.unravel_index(np.mod(ind, n), a.shape)
    a[positions] = _cycled(v, ind.size)


@implements(np.place)
def place(arr, mask, vals):
    """`numpy.place`: the true positions of `mask`, in order, get `vals` repeated."""
    arr = _target(arr, "place")
    # A NumPy mask is counted by NumPy: dapx's count_nonzero takes only DistributedArrays.
    mask = mask if isinstance(mask, DistributedArray) else np.asarray(mask, bool)
    if mask.size != arr.size:  # NumPy does not broadcast the mask
        raise ValueError("place: mask and data must be the same size")
    count = int(np.count_nonzero(mask))
    if count == 0:
        return
    values = _cycled(vals, count)
    arr[mask] = values


@implements(np.putmask)
def putmask(a, mask, values):
    """`numpy.putmask`: ``a[i] = values[i % len(values)]`` where `mask` is true (flat order)."""
    a = _target(a, "putmask")
    if np.size(mask) != a.size:  # NumPy does not broadcast the mask
        raise ValueError("putmask: mask and data must be the same size")
    if isinstance(values, DistributedArray) or np.size(values) in (1, a.size):
        source = values if isinstance(values, DistributedArray) else np.reshape(values, (-1,))
        source = source.reshape(a.shape) if np.size(values) == a.size else source[0]
        a[...] = where(mask, source, a)
        return
    values = np.ravel(np.asarray(values))
    if not values.size:
        raise ValueError("putmask: values must not be empty")
    # Each rank cycles the (small) values over the flat positions of its own block.
    inner = a.interior if a.distribution.has_halo else a
    dist = inner.distribution
    blocks = {
        r: values[np.ravel_multi_index(np.ix_(*dist.global_indices(r)), a.shape) % values.size]
        for r in a.backend.local_ranks
    }
    a[...] = where(mask, new_array(dist, blocks, a.backend, values.dtype), a)


@implements(np.copyto)
def copyto(dst, src, casting="same_kind", where=True):
    """`numpy.copyto` into a DistributedArray (`src` broadcast, `where` a mask)."""
    dst = _target(dst, "copyto")
    src_dtype = src.dtype if hasattr(src, "dtype") else np.asarray(src).dtype
    if not np.can_cast(src_dtype, dst.dtype, casting=casting):
        raise TypeError(
            f"Cannot cast array data from dtype({src_dtype!r}) to dtype({dst.dtype!r}) "
            f"according to the rule {casting!r}"
        )
    if where is True:
        dst[...] = src
    else:
        dst[...] = np.where(where, src, dst)


@implements(np.fill_diagonal)
def fill_diagonal(a, val, wrap=False):
    """`numpy.fill_diagonal` in place (`val` repeated along the diagonal, `wrap` as NumPy)."""
    a = _target(a, "fill_diagonal")
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim == 2:
        cols = a.shape[1]
        stop = None if wrap else cols * cols
        flat = np.arange(0, a.size if stop is None else min(stop, a.size), cols + 1)
        positions = np.unravel_index(flat, a.shape)
    else:
        if len(set(a.shape)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        diag = np.arange(a.shape[0])
        positions = (diag,) * a.ndim
    if positions[0].size:
        a[positions] = _cycled(val, positions[0].size)


@implements(np.put_along_axis)
def put_along_axis(arr, indices, values, axis):
    """`numpy.put_along_axis` with NumPy `indices` (broadcast as NumPy broadcasts them)."""
    arr = _target(arr, "put_along_axis")
    if axis is None:
        put(ravel(arr), indices, values)
        return
    axis = normalize_axis_index(axis, arr.ndim)
    indices = np.asarray(whole(indices, "np.put_along_axis's indices"))
    if indices.ndim != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    n = arr.shape[axis]
    if indices.size and (indices.min() < -n or indices.max() >= n):  # np.mod below would wrap
        bad = indices[(indices < -n) | (indices >= n)].ravel()[0]
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    shape = np.broadcast_shapes(
        indices.shape, tuple(1 if k == axis else n for k, n in enumerate(arr.shape))
    )
    index = []
    for k in range(arr.ndim):
        if k == axis:
            index.append(np.broadcast_to(np.mod(indices, arr.shape[axis]), shape))
        else:
            grid = np.arange(arr.shape[k]).reshape([-1 if j == k else 1 for j in range(arr.ndim)])
            index.append(np.broadcast_to(grid, shape))
    arr[tuple(index)] = np.broadcast_to(whole(values, "np.put_along_axis's values"), shape)
