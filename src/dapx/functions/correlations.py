"""Covariance, correlation coefficients and 1-d convolutions.

`cov` demeans the variables (a distributed mean) and multiplies the
observations matrix by its conjugate transpose with dapx's `matmul` (the
result, variables x variables, is small). `convolve` and `correlate` slide
the (small, whole) kernel over windows of the distributed signal
(`numpy.lib.stride_tricks.sliding_window_view`, one halo-like exchange of
``len(v) - 1`` boundary elements) and contract each window with it.
"""

from __future__ import annotations

import numpy as np

from ..core.array import DistributedArray
from ..core.dispatch import implements
from .diagonals import diagonal
from .joining import concatenate
from .linalg import matmul
from .scans import whole
from .shaping import from_replicated, reshape
from .statistics import mean

__all__ = ["convolve", "corrcoef", "correlate", "cov"]


def _rows(v, rowvar: bool, name: str):
    """`v` as a (variables, observations) matrix, as `numpy.cov` reads it."""
    v = v if isinstance(v, DistributedArray) else np.asarray(v)
    if v.ndim > 2:
        raise ValueError(f"{name} has more than 2 dimensions")
    if v.ndim < 2:
        v = reshape(v, (1, -1)) if isinstance(v, DistributedArray) else v.reshape(1, -1)
    return v.T if not rowvar and v.shape[0] != 1 else v


def _observations(m, y, rowvar, dtype):
    x = _rows(m, rowvar, "m")
    if y is not None:
        x = concatenate([x, _rows(y, rowvar, "y")], axis=0)
    return x.astype(dtype)


@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """`numpy.cov` (without frequency or analytic weights): a demeaned product.

    >>> import numpy as np, dapx
    >>> x = np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.5]])
    >>> np.allclose(np.cov(dapx.asarray(x, backend=dapx.simulated(2))).gather(), np.cov(x))
    True
    """
    if fweights is not None or aweights is not None:
        raise NotImplementedError("np.cov with fweights or aweights is not implemented")
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    if dtype is None:
        dtype = np.result_type(m, np.float64) if y is None else np.result_type(m, y, np.float64)
    x = _observations(m, y, rowvar, dtype)
    if ddof is None:
        ddof = 0 if bias else 1
    n = x.shape[1]
    fact = max(n - ddof, 0)
    centered = x - mean(x, axis=1, keepdims=True)
    conj = np.conjugate(centered) if centered.dtype.kind == "c" else centered
    c = matmul(centered, conj.T) / fact if fact else matmul(centered, conj.T) * np.inf
    return c.squeeze() if c.shape == (1, 1) else c


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, bias=np._NoValue, ddof=np._NoValue, *, dtype=None):
    """`numpy.corrcoef`: `cov` normalised by the standard deviations, clipped to [-1, 1]."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = diagonal(c)
    stddev = np.sqrt(d.real)
    c = c / reshape(stddev, (-1, 1))
    c = c / reshape(stddev, (1, -1))
    if c.dtype.kind == "c":
        return np.clip(c.real, -1, 1) + 1j * np.clip(c.imag, -1, 1)
    return np.clip(c, -1, 1)


def _valid_correlation(a: DistributedArray, kernel: np.ndarray) -> DistributedArray:
    """``out[k] = sum_j a[k + j] * kernel[j]`` for every full window of `a`."""
    windows = np.lib.stride_tricks.sliding_window_view(a, kernel.shape[0])
    return np.einsum("ij,j->i", windows, kernel)


def _convolve(a, v, mode: str, name: str):
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"mode must be one of 'full', 'same', or 'valid' (got {mode!r})")
    if np.ndim(a) != 1 or np.ndim(v) != 1:
        raise ValueError("object too deep for desired array")
    if not isinstance(a, DistributedArray):
        a, v = v, a  # convolution commutes: the distributed operand slides
    kernel = np.asarray(whole(v, f"{name}'s second operand"))
    n, m = a.shape[0], kernel.shape[0]
    if n == 0 or m == 0:
        raise ValueError(f"{'v' if m == 0 else 'a'} cannot be empty")
    if m > n:  # the kernel is the longer one: NumPy swaps; the result is small
        small = np.asarray(whole(a, f"{name}'s shorter operand"))
        return from_replicated(np.convolve(small, kernel, mode), a.backend)
    flipped = kernel[::-1]
    if mode == "valid":
        return _valid_correlation(a, flipped)
    full = _valid_correlation(np.pad(a, (m - 1, m - 1)), flipped)
    if mode == "full":
        return full
    start = (m - 1) // 2
    return full[start : start + n]


@implements(np.convolve)
def convolve(a, v, mode="full"):
    """`numpy.convolve` of a distributed signal and a kernel (gathered if distributed)."""
    return _convolve(a, v, mode, "np.convolve")


@implements(np.correlate)
def correlate(a, v, mode="valid"):
    """`numpy.correlate`: a convolution with the reversed, conjugated second operand."""
    if isinstance(a, DistributedArray) and np.ndim(v) == 1 and np.shape(v)[0] <= a.shape[0]:
        kernel = np.asarray(whole(v, "np.correlate's second operand"))[::-1]
        if np.iscomplexobj(kernel):  # np.conjugate of bools gives int8: NumPy's answer is bool
            kernel = np.conjugate(kernel)
        return _convolve(a, kernel, mode, "np.correlate")
    small_a = np.asarray(whole(a, "np.correlate's first operand"))
    small_v = np.asarray(whole(v, "np.correlate's second operand"))
    backend = next(x for x in (a, v) if isinstance(x, DistributedArray)).backend
    return from_replicated(np.correlate(small_a, small_v, mode), backend)
