"""Python's operators with NumPy's semantics where they are not plain ufunc calls.

``ndarray.__pow__`` does not always call `numpy.power`: for a Python scalar
exponent it takes a fast path, ``x ** 2`` being ``np.square(x)`` (so a
boolean array squared is int8, not int64), and for inexact arrays ``x ** -1``
is ``np.reciprocal(x)`` and ``x ** 0.5`` is ``np.sqrt(x)`` (bitwise different
from `numpy.power` for complex numbers). `power_ufunc` says which ufunc NumPy
applies, so that ``a ** e`` on a DistributedArray gives NumPy's result and
dtype.
"""

from __future__ import annotations

import numpy as np

__all__ = ["power_ufunc"]


def power_ufunc(dtype: np.dtype, exponent) -> np.ufunc:
    """The ufunc ``x ** exponent`` applies to an array `x` of `dtype` (NumPy 2's rules).

    A unary ufunc (`numpy.square`, `numpy.reciprocal`, `numpy.sqrt`) takes
    `x` alone; `numpy.power` takes `x` and `exponent`.

    >>> power_ufunc(np.dtype(bool), 2).__name__, power_ufunc(np.dtype(bool), 2.0).__name__
    ('square', 'power')
    >>> power_ufunc(np.dtype(complex), -1).__name__, power_ufunc(np.dtype(int), -1).__name__
    ('reciprocal', 'power')
    >>> power_ufunc(np.dtype(complex), 0.5).__name__, power_ufunc(np.dtype(int), 0.5).__name__
    ('sqrt', 'power')
    """
    # Note: only exact Python ints and floats take the fast path (not bool, not NumPy scalars).
    inexact = dtype.kind in "fc"
    if type(exponent) is int:
        if exponent == 2:
            return np.square
        if exponent == -1 and inexact:
            return np.reciprocal
    elif type(exponent) is float and exponent == 0.5 and inexact:
        return np.sqrt
    return np.power
