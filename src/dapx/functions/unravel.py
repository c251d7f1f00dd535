"""`numpy.unravel_index` for distributed flat indices.

xarray's ``argmin``/``argmax`` over several dimensions stack them, take the
flat argmin, and unravel it with ``np.unravel_index``. That is elementwise:
each rank unravels its own block, and the coordinate arrays keep the
layout of the indices.
"""

from __future__ import annotations

import numpy as np

from ..core.array import DistributedArray, new_array
from ..core.dispatch import implements
from ..core.guard import raise_if_any_failed

__all__ = ["unravel_index"]


@implements(np.unravel_index)
def unravel_index(indices, shape, order="C"):
    """`numpy.unravel_index`: one DistributedArray of coordinates per dimension of `shape`.

    Raises
    ------
    ValueError
        On every rank, when an index on any rank is out of bounds (NumPy's
        message, prefixed with the rank).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> i = dapx.asarray(np.array([0, 5, 7, 11]), backend=dapx.simulated(2))
    >>> [c.gather() for c in np.unravel_index(i, (3, 4))]
    [array([0, 1, 1, 2]), array([0, 1, 3, 3])]
    """
    if not isinstance(indices, DistributedArray):
        raise TypeError(
            f"np.unravel_index: the shape must be a sequence of ints, not a DistributedArray "
            f"(got indices of type {type(indices).__name__})"
        )
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    # NumPy's own checks of shape, order and the index dtype, on no data.
    np.unravel_index(np.zeros(0, indices.dtype), shape, order=order)
    results: dict[int, tuple] = {}
    errors: dict[int, Exception | None] = {}
    for r, block in indices.locals.items():
        try:
            results[r] = np.unravel_index(block, shape, order=order)
            errors[r] = None
        except ValueError as e:
            errors[r] = e
    raise_if_any_failed(indices.backend, errors)
    dist, backend = indices.distribution, indices.backend
    return tuple(
        new_array(dist, {r: np.asarray(results[r][k]) for r in results}, backend, np.intp)
        for k in range(len(shape))
    )
