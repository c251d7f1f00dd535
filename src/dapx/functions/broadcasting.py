"""`numpy.broadcast_to` and `numpy.broadcast_arrays` for DistributedArrays.

xarray's `broadcast`, ``expand_dims`` and ``broadcast_like`` reach these
through ``Variable.set_dims``. The result takes the layout of the input
stretched to the new shape (`dapx.core.elementwise.broadcast_distribution`): new
leading dimensions are undistributed and each rank holds a zero-stride view,
so nothing is copied; only a distributed size-1 dimension that is stretched
needs its one element sent to the ranks along it (one exchange).
"""

from __future__ import annotations

import numpy as np

from ..core.array import SCALAR, DistributedArray, new_array
from ..core.dispatch import implements
from ..core.elementwise import broadcast_distribution
from ..core.redistribution import align
from .shaping import clean_distribution

__all__ = ["broadcast_arrays", "broadcast_to"]


@implements(np.broadcast_to)
def broadcast_to(array, shape, subok=False):
    """`numpy.broadcast_to`: a read-only view of `array` with the broadcast `shape`.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(3.0, backend=dapx.simulated(3))
    >>> b = np.broadcast_to(a, (2, 3))
    >>> b.shape, b.distribution.grid_shape
    ((2, 3), (1, 3))
    >>> b.gather()
    array([[0., 1., 2.],
           [0., 1., 2.]])
    """
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    # NumPy's own checks and messages, on a stand-in that holds no data.
    np.broadcast_to(np.broadcast_to(np.empty((), np.int8), array.shape), shape)
    backend = array.backend
    if not shape:
        return new_array(SCALAR, dict(array.locals), backend, array.dtype)
    if array.ndim == 0:
        from ..core.creation import make_distribution

        target = make_distribution(shape, backend=backend)
        value = array.locals[backend.local_ranks[0]]
        blocks = {r: np.broadcast_to(value, target.local_shape(r)) for r in backend.local_ranks}
        return new_array(target, blocks, backend, array.dtype)
    target = broadcast_distribution(clean_distribution(array.distribution), shape)
    aligned = align(array, target)
    blocks = {r: np.broadcast_to(b, target.local_shape(r), subok=subok) for r, b in aligned.items()}
    return new_array(target, blocks, backend, array.dtype)


@implements(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    """`numpy.broadcast_arrays`: distributed inputs become `broadcast_to` views.

    NumPy inputs stay NumPy arrays (NumPy's views), as NumPy returns them.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(3, backend=dapx.simulated(2))
    >>> x, y = np.broadcast_arrays(a, np.ones((2, 1)))
    >>> type(x).__name__, type(y).__name__, x.shape, y.shape
    ('DistributedArray', 'ndarray', (2, 3), (2, 3))
    """
    shape = np.broadcast_shapes(
        *(np.shape(a) if not isinstance(a, DistributedArray) else a.shape for a in args)
    )
    return tuple(
        broadcast_to(a, shape, subok=subok)
        if isinstance(a, DistributedArray)
        else np.broadcast_to(a, shape, subok=subok)
        for a in args
    )
