"""``ufunc.at`` and ``ufunc.reduceat`` on distributed arrays.

``ufunc.at(a, indices, b)`` is unbuffered: repeated indices apply repeatedly.
Every rank applies NumPy's ``ufunc.at`` to its own block for the indices it
owns (each dimension's global-to-local lookup has the length of that
dimension, never of the array), so nothing moves but the index arrays each
process already has. ``ufunc.reduceat`` makes the reduced axis whole with
the other axes spread over the ranks and runs NumPy on each block.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray
from ..core.dispatch import implements_method
from ..exchange.plans import as_index_array, owned_positions
from .scans import whole
from .shaping import moveaxis
from .whole_core import on_whole_core

__all__ = ["at", "reduceat"]


def _global_indices(shape: tuple, indices) -> tuple[np.ndarray, ...]:
    """`indices` (as ``ufunc.at`` takes them) as one integer array per dimension, broadcast."""
    if not isinstance(indices, tuple):
        indices = (indices,)
    probe = np.zeros(shape, dtype=np.int8)
    flat = np.arange(probe.size).reshape(shape) if probe.size else probe.astype(np.intp)
    picked = flat[indices]  # NumPy validates the key exactly as ufunc.at would
    return np.unravel_index(np.asarray(picked).ravel(), shape), np.shape(picked)


@implements_method("ufunc.at")
def at(ufunc, a, indices, b=None):
    """``ufunc.at(a, indices[, b])`` in place on the owners of the indexed elements.

    # Note: the indices must be NumPy (or small distributed arrays, gathered).
    """
    if not isinstance(a, DistributedArray):
        raise TypeError("ufunc.at writes into its first argument, which must be distributed here")
    if isinstance(indices, DistributedArray):
        indices = whole(indices, f"{ufunc.__name__}.at's indices")
    elif isinstance(indices, tuple):
        indices = tuple(
            whole(i, f"{ufunc.__name__}.at's indices") if isinstance(i, DistributedArray) else i
            for i in indices
        )
    (positions, picked_shape) = _global_indices(a.shape, indices)
    values = None
    if b is not None:
        values = np.broadcast_to(
            np.asarray(whole(b, f"{ufunc.__name__}.at's values")), picked_shape
        )
        values = values.reshape(-1)
    dist = a.distribution
    for r, block in a.locals.items():
        local, glob = owned_positions(dist, r)
        mine = np.ones(positions[0].shape, bool) if positions else np.ones(0, bool)
        where = []
        for d, (g_idx, l_idx) in enumerate(zip(glob, local)):
            lookup = np.full(a.shape[d], -1, np.intp)
            lookup[as_index_array(g_idx)] = np.arange(block.shape[d])[l_idx]
            found = lookup[positions[d]]
            mine &= found >= 0
            where.append(found)
        key = tuple(w[mine] for w in where)
        if b is None:
            ufunc.at(block, key)
        else:
            ufunc.at(block, key, values[mine])


@implements_method("ufunc.reduceat")
def reduceat(ufunc, array, indices, axis=0, dtype=None, out=None):
    """``ufunc.reduceat`` along a whole axis, the other axes spread over the ranks."""
    if not isinstance(array, DistributedArray):
        raise TypeError("ufunc.reduceat of a NumPy array with distributed indices is not done")
    indices = np.asarray(whole(indices, f"{ufunc.__name__}.reduceat's indices"))
    if array.ndim == 0:
        raise TypeError("cannot reduceat a 0-d array")
    axis = normalize_axis_index(axis, array.ndim)
    moved = moveaxis(array, axis, -1)
    (result,) = on_whole_core(
        lambda block: ufunc.reduceat(block, indices, axis=-1, dtype=dtype),
        [moved],
        [1],
        f"{ufunc.__name__}.reduceat",
    )
    result = moveaxis(result, -1, axis)
    if out is not None:
        from .shaping import write_into

        target = out[0] if isinstance(out, tuple) else out
        return write_into(target, result)
    return result
