"""Python's operators with NumPy's semantics where they are not plain ufunc calls.

``ndarray.__pow__`` does not always call `numpy.power`: for a scalar exponent
it may take a fast path, ``x ** 2`` being ``np.square(x)`` (so a boolean
array squared is int8, not int64), ``x ** -1`` ``np.reciprocal(x)`` and
``x ** 0.5`` ``np.sqrt(x)`` (bitwise different from `numpy.power` for complex
numbers). Which exponents and dtypes take it differs between NumPy releases
(2.2 also takes ``2.0`` and NumPy scalars, 2.4 only exact Python ints and
floats), so `power_ufunc` asks the installed NumPy: it compares ``probe **
exponent`` on a small sample of the dtype with each candidate, once per
(dtype, exponent).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

__all__ = ["power_ufunc", "power_ufunc_in_place"]

_FAST_PATHS = {2.0: np.square, -1.0: np.reciprocal, 0.5: np.sqrt}


def power_ufunc(dtype: np.dtype, exponent) -> tuple[np.ufunc, np.dtype | None]:
    """The ufunc ``x ** exponent`` applies to an array `x` of `dtype` in this NumPy.

    Returns ``(ufunc, loop_dtype)``: a unary ufunc (`numpy.square`,
    `numpy.reciprocal`, `numpy.sqrt`) takes `x` alone, `numpy.power` takes
    `x` and `exponent`; `loop_dtype`, when not None, is the ``dtype=`` NumPy's
    fast path computes in (NumPy 2.2 squares int8 in float64 for a float32
    exponent).

    >>> power_ufunc(np.dtype(bool), 2)[0].__name__, power_ufunc(np.dtype(bool), 3)[0].__name__
    ('square', 'power')
    >>> power_ufunc(np.dtype(complex), 0.5)[0].__name__, power_ufunc(np.dtype(int), 0.5)[0].__name__
    ('sqrt', 'power')
    """
    if not isinstance(exponent, (int, float, np.integer, np.floating)):
        return np.power, None  # arrays, complex and other exponents: never a fast path
    candidate = _FAST_PATHS.get(float(exponent))
    if candidate is None:
        return np.power, None
    try:
        return _probed(np.dtype(dtype), type(exponent), exponent, candidate)
    except TypeError:  # an unhashable exponent type: no cache, no fast path
        return np.power, None


@functools.lru_cache(maxsize=512)
def _probed(dtype: np.dtype, kind: type, exponent, candidate: np.ufunc):
    # `kind` is part of the key: 2 and 2.0 are equal but may take different paths.
    probe = _sample(dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            numpy_result = probe**exponent
        except Exception:
            return np.power, None  # NumPy raises: np.power raises the same way
        wanted = numpy_result.dtype
        # NumPy's own choice first: a plain call, then its fast path as it is, then in a dtype.
        power, fast = (np.power, (probe, exponent)), (candidate, (probe,))
        for (ufunc, args), loop in ((power, None), (fast, None), (fast, wanted), (power, wanted)):
            try:
                result = ufunc(*args) if loop is None else ufunc(*args, dtype=loop)
            except Exception:
                continue
            if result.dtype == wanted and result.tobytes() == numpy_result.tobytes():
                return ufunc, loop
    return np.power, None


def power_ufunc_in_place(dtype: np.dtype, exponent) -> np.ufunc:
    """The ufunc ``x **= exponent`` applies (into `x`) for an array `x` of `dtype`."""
    if not isinstance(exponent, (int, float, np.integer, np.floating)):
        return np.power
    candidate = _FAST_PATHS.get(float(exponent))
    if candidate is None:
        return np.power
    try:
        return _probed_in_place(np.dtype(dtype), type(exponent), exponent, candidate)
    except TypeError:
        return np.power


@functools.lru_cache(maxsize=512)
def _probed_in_place(dtype: np.dtype, kind: type, exponent, candidate: np.ufunc) -> np.ufunc:
    probe = _sample(dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        numpy_result = probe.copy()
        try:
            numpy_result **= exponent
        except Exception:
            return np.power
        for ufunc, args in ((np.power, (exponent,)), (candidate, ())):
            result = probe.copy()
            try:
                ufunc(result, *args, out=result)
            except Exception:
                continue
            if result.tobytes() == numpy_result.tobytes():
                return ufunc
    return np.power


def _sample(dtype: np.dtype) -> np.ndarray:
    """64 values of `dtype` on which the candidate ufuncs differ where their algorithms do."""
    rng = np.random.default_rng(12345)
    if dtype.kind == "b":
        return rng.random(64) > 0.5
    if dtype.kind in "iu":
        return rng.integers(1, 10, 64).astype(dtype)
    values = rng.uniform(0.1, 10.0, 64)
    if dtype.kind == "c":
        values = values + 1j * rng.uniform(-10.0, 10.0, 64)
    return values.astype(dtype)
