"""The standard's functions of arrays, forwarded to NumPy's compatible names (dispatched to dapx).

NumPy 2's main namespace follows the standard (``acos``, ``concat``,
``permute_dims``, ``pow``, ``unique_*``, ...), and every NumPy function and
ufunc called with a DistributedArray runs dapx's implementation. Where the
standard's signature differs from NumPy's (``correction``, ``descending``,
``copy``, keyword-only arguments) the wrapper translates.
"""

from __future__ import annotations

import numpy as np

from ...core.array import DistributedArray

_ELEMENTWISE = [
    "abs",
    "acos",
    "acosh",
    "add",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "ceil",
    "conj",
    "copysign",
    "cos",
    "cosh",
    "divide",
    "equal",
    "exp",
    "floor",
    "greater",
    "greater_equal",
    "hypot",
    "imag",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "nextafter",
    "not_equal",
    "positive",
    "pow",
    "real",
    "remainder",
    "round",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "square",
    "sqrt",
    "subtract",
    "tan",
    "trunc",
]

_FORWARDED = [
    "argmax",
    "argmin",
    "broadcast_arrays",
    "broadcast_to",
    "count_nonzero",
    "diff",
    "expand_dims",
    "flip",
    "isdtype",
    "matmul",
    "matrix_transpose",
    "moveaxis",
    "nonzero",
    "permute_dims",
    "result_type",
    "roll",
    "squeeze",
    "take",
    "take_along_axis",
    "tensordot",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "unstack",
    "vecdot",
    "where",
    "can_cast",
    "finfo",
    "iinfo",
    "cumulative_sum",
    "cumulative_prod",
]

__all__ = [
    *_ELEMENTWISE,
    *_FORWARDED,
    "all",
    "any",
    "expm1",
    "finfo",
    "floor_divide",
    "iinfo",
    "searchsorted",
    "tanh",
    "broadcast_shapes",
    "isin",
    "argsort",
    "astype",
    "clip",
    "concat",
    "max",
    "mean",
    "min",
    "prod",
    "reciprocal",
    "repeat",
    "reshape",
    "sort",
    "stack",
    "std",
    "sum",
    "tile",
    "var",
]

globals().update({name: getattr(np, name) for name in _ELEMENTWISE + _FORWARDED})


def astype(x, dtype, /, *, copy=True, device=None):
    """`x` as `dtype` (a copy unless ``copy=False`` and nothing changes)."""
    if device is not None and device is not x.backend:
        raise ValueError("astype cannot move an array to another backend")
    return x.astype(dtype, copy=copy)


def isin(x1, x2, /, *, invert=False):
    """`numpy.isin` (a distributed test set is gathered, with a GatherWarning if large)."""
    return np.isin(x1, x2, invert=invert)


def broadcast_shapes(*shapes):
    """`numpy.broadcast_shapes`."""
    return np.broadcast_shapes(*shapes)


class _FloatInfo:
    """The standard's finfo object: Python floats (NumPy's are NumPy scalars)."""

    def __init__(self, info):
        self.bits = int(info.bits)
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.smallest_normal = float(info.smallest_normal)
        self.dtype = info.dtype


class _IntInfo:
    def __init__(self, info):
        self.bits, self.max, self.min, self.dtype = (
            int(info.bits),
            int(info.max),
            int(info.min),
            info.dtype,
        )


def finfo(type, /):
    """`numpy.finfo`, with the standard's Python types."""
    dtype = type.dtype if isinstance(type, (DistributedArray, np.ndarray)) else type
    return _FloatInfo(np.finfo(dtype))


def iinfo(type, /):
    """`numpy.iinfo`, with the standard's Python types."""
    dtype = type.dtype if isinstance(type, (DistributedArray, np.ndarray)) else type
    return _IntInfo(np.iinfo(dtype))


def floor_divide(x1, x2, /):
    """``floor(x1 / x2)`` with the standard's special cases for infinite operands.

    # Note: NumPy (and dapx's ``//``) give NaN for ``inf // 2`` and -1 for ``1 // -inf``;
    # the standard asks for +inf and -0 there.
    """
    if np.result_type(x1, x2).kind != "f":
        return np.floor_divide(x1, x2)
    with np.errstate(invalid="ignore", divide="ignore"):  # the cases fixed below
        result = np.floor_divide(x1, x2)
        quotient = np.divide(x1, x2)
        special = (np.isinf(x1) & np.isfinite(x2) & (x2 != 0)) | (np.isfinite(x1) & np.isinf(x2))
        return np.where(special, quotient, result)


def expm1(x, /):
    """`numpy.expm1` with the standard's special cases for complex arguments."""
    result = np.expm1(x)
    if x.dtype.kind != "c":
        return result
    re, im = np.real(x), np.imag(x)
    zero_im = im == 0
    fixes = [
        ((re == 0) & zero_im & ~np.signbit(im), 0j),
        (np.isposinf(re) & zero_im & ~np.signbit(im), complex(np.inf, 0)),
        (np.isneginf(re) & (np.isinf(im) | np.isnan(im)), -1 + 0j),
        (np.isposinf(re) & (np.isinf(im) | np.isnan(im)), complex(np.inf, np.nan)),
        (np.isnan(re) & zero_im & ~np.signbit(im), complex(np.nan, 0)),
    ]
    for mask, value in fixes:
        result = np.where(mask, np.asarray(value, result.dtype), result)
    return result


def tanh(x, /):
    """`numpy.tanh` with the standard's special case ``tanh(+inf + yj) = 1 + 0j`` (y > 0 finite)."""
    result = np.tanh(x)
    if x.dtype.kind != "c":
        return result
    im = np.imag(x)
    mask = np.isposinf(np.real(x)) & np.isfinite(im) & (im > 0)
    return np.where(mask, np.asarray(1 + 0j, result.dtype), result)


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """`numpy.searchsorted`; the result is always an array of this namespace."""
    result = np.searchsorted(x1, x2, side=side, sorter=sorter)
    if isinstance(result, DistributedArray):
        return result
    from ...functions.shaping import from_replicated

    return from_replicated(np.asarray(result), x1.backend)


def reciprocal(x, /):
    """``1 / x``, elementwise."""
    return np.reciprocal(x) if x.dtype.kind in "fc" else np.divide(1, x)


def clip(x, /, min=None, max=None):
    """`numpy.clip` (the standard's keywords; bounds keep `x`'s dtype)."""
    if min is None and max is None:
        return x.copy()
    return np.clip(x, min, max).astype(x.dtype, copy=False)


def concat(arrays, /, *, axis=0):
    """`numpy.concat`."""
    return np.concat(tuple(arrays), axis=axis)


def stack(arrays, /, *, axis=0):
    """`numpy.stack`."""
    return np.stack(tuple(arrays), axis=axis)


def reshape(x, /, shape, *, copy=None):
    """`numpy.reshape` (``copy=True`` copies)."""
    result = np.reshape(x, shape)
    return result.copy() if copy else result


def repeat(x, repeats, /, *, axis=None):
    """`numpy.repeat`."""
    return np.repeat(x, repeats, axis=axis)


def tile(x, repetitions, /):
    """`numpy.tile`."""
    return np.tile(x, repetitions)


def _reduction(func):
    def reduce(x, /, *, axis=None, keepdims=False, **kwargs):
        return func(x, axis=axis, keepdims=keepdims, **kwargs)

    reduce.__name__ = func.__name__
    reduce.__doc__ = f"`numpy.{func.__name__}` with the standard's keywords."
    return reduce


all = _reduction(np.all)
any = _reduction(np.any)
max = _reduction(np.max)
min = _reduction(np.min)
mean = _reduction(np.mean)


def sum(x, /, *, axis=None, dtype=None, keepdims=False):
    """`numpy.sum`; integer sums keep NumPy's default accumulation dtype."""
    return np.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    """`numpy.prod`."""
    return np.prod(x, axis=axis, dtype=dtype, keepdims=keepdims)


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    """`numpy.std` with ``correction`` as ``ddof``."""
    return np.std(x, axis=axis, ddof=correction, keepdims=keepdims)


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    """`numpy.var` with ``correction`` as ``ddof``."""
    return np.var(x, axis=axis, ddof=correction, keepdims=keepdims)


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """`numpy.sort`; descending keeps equal elements in their order (stable)."""
    result = np.sort(x, axis=axis, stable=True)
    return np.flip(result, axis=axis) if descending else result


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """`numpy.argsort`; descending and stable: ``n - 1 - flip(argsort(flip(x)))``."""
    if not descending:
        return np.argsort(x, axis=axis, stable=True)
    n = x.shape[axis] if x.ndim else 1
    reversed_order = np.argsort(np.flip(x, axis=axis), axis=axis, stable=True)
    return (n - 1) - np.flip(reversed_order, axis=axis)
