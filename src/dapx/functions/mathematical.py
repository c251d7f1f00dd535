"""Elementwise mathematical functions that NumPy writes in Python: rank by rank.

`angle`, `sinc`, `i0`, `fix`, `isposinf`, `isneginf`, `nan_to_num` map each
element on its own, so each rank applies NumPy's function to its block and
the layout is kept. `real_if_close` asks every rank first (one boolean each,
combined in rank order) whether all imaginary parts are close to zero.
"""

from __future__ import annotations

import operator

import numpy as np

from ..core.array import DistributedArray
from ..core.dispatch import implements
from .manipulation import _blockwise
from .shaping import owned_block

__all__ = ["angle", "fix", "i0", "isneginf", "isposinf", "nan_to_num", "real_if_close", "sinc"]


@implements(np.angle)
def angle(z, deg=False):
    """`numpy.angle`, rank by rank.

    >>> import numpy as np, dapx
    >>> np.angle(dapx.asarray([1j, -1.0], backend=dapx.simulated(2)), deg=True).gather()
    array([ 90., 180.])
    """
    return _blockwise(np.angle, [z], deg=deg)


@implements(np.sinc)
def sinc(x):
    """`numpy.sinc`, rank by rank."""
    return _blockwise(np.sinc, [x])


@implements(np.i0)
def i0(x):
    """`numpy.i0` (modified Bessel function of order 0), rank by rank."""
    return _blockwise(np.i0, [x])


@implements(np.fix)
def fix(x, out=None):
    """`numpy.fix` (round towards zero), rank by rank."""
    return _blockwise(np.fix, [x], out=out)


@implements(np.isposinf)
def isposinf(x, out=None):
    """`numpy.isposinf`, rank by rank."""
    return _blockwise(np.isposinf, [x], out=out)


@implements(np.isneginf)
def isneginf(x, out=None):
    """`numpy.isneginf`, rank by rank."""
    return _blockwise(np.isneginf, [x], out=out)


@implements(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """`numpy.nan_to_num`; with ``copy=False`` the blocks are replaced in place.

    >>> import numpy as np, dapx
    >>> x = dapx.asarray([np.nan, np.inf, 1.0], backend=dapx.simulated(2))
    >>> np.nan_to_num(x, posinf=9.0).gather()
    array([0., 9., 1.])
    """
    if not isinstance(x, DistributedArray):
        return np.nan_to_num(x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    if copy:
        return _blockwise(np.nan_to_num, [x], nan=nan, posinf=posinf, neginf=neginf)
    if x.dtype.kind in "fc":
        for block in x.locals.values():
            np.nan_to_num(block, copy=False, nan=nan, posinf=posinf, neginf=neginf)
    return x


@implements(np.real_if_close)
def real_if_close(a, tol=100):
    """`numpy.real_if_close`: the real part if every imaginary part is within `tol` epsilons."""
    if a.dtype.kind != "c":
        return a
    limit = tol * np.finfo(a.dtype).eps if tol > 1 else tol
    close = {r: bool(np.all(np.abs(owned_block(a, r).imag) < limit)) for r in a.backend.local_ranks}
    return np.real(a) if a.backend.combine(close, operator.and_) else a
