"""Triangles and diagonals: tril, triu, diagonal, trace, diag, diagflat.

`tril`/`triu` zero elements by their global row and column, which every
rank knows for its own block, so nothing moves on any layout. The diagonal
functions pick or place elements with dapx's fancy indexing (NumPy index
arrays of the diagonal's positions): only diagonal elements move.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray, new_array
from ..core.creation import zeros
from ..core.dispatch import implements
from .broadcasting import broadcast_to
from .reductions import sum as sum_
from .shaping import moveaxis, ravel

__all__ = ["diag", "diagflat", "diagonal", "trace", "tril", "triu"]


def _triangle(m: DistributedArray, k: int, lower: bool) -> DistributedArray:
    if m.ndim == 0:
        # NumPy's exception type (its tri() misses an argument for a 0-d array)
        raise TypeError("tril/triu need an array of at least 1 dimension")
    if m.ndim == 1:
        m = broadcast_to(m, (m.shape[0], m.shape[0]))
    dist, k = m.distribution, int(k)
    blocks = {}
    for r, block in m.locals.items():
        rows, cols = dist.global_indices(r)[-2:]
        offset = cols[np.newaxis, :] - rows[:, np.newaxis]
        keep = offset <= k if lower else offset >= k
        blocks[r] = np.where(keep, block, np.zeros((), block.dtype))
    return new_array(dist, blocks, m.backend, m.dtype)


@implements(np.tril)
def tril(m, k=0):
    """`numpy.tril`: elements above the `k`-th diagonal zeroed; nothing moves.

    >>> import numpy as np, dapx
    >>> np.tril(dapx.ones((3, 3), int, dist="c", backend=dapx.simulated(2))).gather()
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    return _triangle(m, k, lower=True)


@implements(np.triu)
def triu(m, k=0):
    """`numpy.triu`: elements below the `k`-th diagonal zeroed; nothing moves."""
    return _triangle(m, k, lower=False)


def _diagonal_positions(n: int, m: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    rows = np.arange(max(0, -offset), max(0, min(n, m - offset)))
    return rows, rows + offset


@implements(np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    """`numpy.diagonal` (a new array, not a view), the diagonal as the last axis.

    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.arange(12).reshape(3, 4), backend=dapx.simulated(2))
    >>> np.diagonal(a, 1).gather()
    array([ 1,  6, 11])
    """
    if a.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    axis1, axis2 = normalize_axis_index(axis1, a.ndim), normalize_axis_index(axis2, a.ndim)
    if axis1 == axis2:
        raise ValueError("axis1 and axis2 cannot be the same")
    moved = moveaxis(a, (axis1, axis2), (-2, -1))
    rows, cols = _diagonal_positions(*moved.shape[-2:], int(offset))
    return moved[..., rows, cols]


@implements(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """`numpy.trace`: the sum of `diagonal`, partials combined in rank order."""
    return sum_(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


@implements(np.diag)
def diag(v, k=0):
    """`numpy.diag`: the `k`-th diagonal of a 2-d array, or a 2-d array with `v` on it.

    The 2-d result of a 1-d `v` is laid out in even blocks over the rows.

    >>> import numpy as np, dapx
    >>> np.diag(dapx.arange(1, 3, backend=dapx.simulated(2)), 1).gather()
    array([[0, 1, 0],
           [0, 0, 2],
           [0, 0, 0]])
    """
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    k = int(k)
    n = v.shape[0] + abs(k)
    out = zeros((n, n), v.dtype, dist=("b", "n"), backend=v.backend)
    rows = np.arange(v.shape[0]) + max(0, -k)
    out[rows, rows + k] = v
    return out


@implements(np.diagflat)
def diagflat(v, k=0):
    """`numpy.diagflat`: `diag` of the flattened input."""
    return diag(ravel(v), k)
