"""The standard's creation functions: DistributedArrays on the backend ``device=`` names."""

from __future__ import annotations

import numpy as np

from ...core import creation
from ...core.array import DistributedArray
from ._devices import resolve_device

__all__ = [
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "full",
    "full_like",
    "linspace",
    "meshgrid",
    "ones",
    "ones_like",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
]


def _dtype(dtype):
    return None if dtype is None else np.dtype(dtype)


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """`dapx.asarray`; ``copy=False`` is refused when a copy is needed (as the standard says)."""
    if isinstance(obj, DistributedArray):
        if device is not None and resolve_device(device) is not obj.backend:
            raise ValueError("asarray cannot move an array to another backend; use to_device")
        if dtype is not None and np.dtype(dtype) != obj.dtype:
            if copy is False:
                raise ValueError("asarray with copy=False cannot change the dtype")
            return obj.astype(dtype)
        return obj.copy() if copy else obj
    backend = resolve_device(device)
    if copy is False and not isinstance(obj, np.ndarray):
        raise ValueError("asarray with copy=False needs an array to share memory with")
    if isinstance(obj, (bool, int, float, complex)) and dtype is None:
        # Python scalars take the standard's default dtypes.
        dtype = {bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}[
            type(obj)
        ]
    if dtype is None and isinstance(obj, (list, tuple)):
        values = np.asarray(obj)
        if values.dtype.kind == "f":
            dtype = np.float64
    return creation.asarray(obj, dtype=_dtype(dtype), backend=backend)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """`numpy.arange`, distributed."""
    return creation.arange(start, stop, step, dtype=_dtype(dtype), backend=resolve_device(device))


def empty(shape, *, dtype=None, device=None):
    """`numpy.empty`, distributed (default dtype float64)."""
    return creation.empty(shape, _dtype(dtype) or np.float64, backend=resolve_device(device))


def zeros(shape, *, dtype=None, device=None):
    """`numpy.zeros`, distributed."""
    return creation.zeros(shape, _dtype(dtype) or np.float64, backend=resolve_device(device))


def ones(shape, *, dtype=None, device=None):
    """`numpy.ones`, distributed."""
    return creation.ones(shape, _dtype(dtype) or np.float64, backend=resolve_device(device))


def full(shape, fill_value, *, dtype=None, device=None):
    """`numpy.full`, distributed (Python scalars take the default dtypes)."""
    if dtype is None:
        dtype = {bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}.get(
            type(fill_value)
        )
    return creation.full(shape, fill_value, _dtype(dtype), backend=resolve_device(device))


def _like(x, device):
    if device is not None and resolve_device(device) is not x.backend:
        raise ValueError("*_like functions make arrays on the backend of their input")


def empty_like(x, /, *, dtype=None, device=None):
    """`numpy.empty_like`, with `x`'s layout."""
    _like(x, device)
    return creation.empty_like(x, _dtype(dtype))


def zeros_like(x, /, *, dtype=None, device=None):
    """`numpy.zeros_like`, with `x`'s layout."""
    _like(x, device)
    return creation.zeros_like(x, _dtype(dtype))


def ones_like(x, /, *, dtype=None, device=None):
    """`numpy.ones_like`, with `x`'s layout."""
    _like(x, device)
    return creation.ones_like(x, _dtype(dtype))


def full_like(x, /, fill_value, *, dtype=None, device=None):
    """`numpy.full_like`, with `x`'s layout."""
    _like(x, device)
    return creation.full_like(x, fill_value, _dtype(dtype))


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """`numpy.eye`, distributed: each rank writes the ones of its own block."""
    n_cols = n_rows if n_cols is None else n_cols
    dtype = _dtype(dtype) or np.float64
    return creation.fromfunction(
        lambda i, j: (j - i == k).astype(dtype),
        (n_rows, n_cols),
        dtype=np.int64,
        backend=resolve_device(device),
    )


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """`numpy.linspace`, distributed."""
    if dtype is None and any(isinstance(v, complex) for v in (start, stop)):
        dtype = np.complex128
    return creation.linspace(
        start, stop, num, endpoint=endpoint, dtype=_dtype(dtype), backend=resolve_device(device)
    )


def meshgrid(*arrays, indexing="xy"):
    """`numpy.meshgrid` of distributed 1-d arrays (a tuple, as the 2025.12 standard returns)."""
    if not arrays:
        return ()
    return tuple(np.meshgrid(*arrays, indexing=indexing))


def tril(x, /, *, k=0):
    """`numpy.tril`."""
    return np.tril(x, k)


def triu(x, /, *, k=0):
    """`numpy.triu`."""
    return np.triu(x, k)


def from_dlpack(x, /, *, device=None, copy=None):
    """An array from a DLPack producer (NumPy's import), then distributed."""
    return asarray(np.from_dlpack(x), device=device)
