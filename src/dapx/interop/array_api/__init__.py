"""The Python array API standard (2025.12) for distributed arrays: ``x.__array_namespace__()``.

Functions of arrays forward to NumPy's array-API-compatible main namespace,
which dispatches to dapx (``__array_function__``/``__array_ufunc__``), so
each is the dapx implementation, distributed, never a gather; creation
functions make DistributedArrays on the current backend. The "device" of an
array is its backend: ``x.device``, ``device=`` and ``to_device`` speak of
backends. ``linalg`` and ``fft`` are the extensions.

Where the standard leaves an order unspecified (``unique_values``), dapx
returns it sorted; ``__dlpack__`` of a distributed array raises BufferError
(export one block with ``a.local(rank)``).
"""

from __future__ import annotations

import sys

import numpy as np

from ...core.dispatch import implements_method
from . import fft, linalg
from ._creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    meshgrid,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from ._functions import *  # noqa: F403 (the namespace's functions of arrays)
from ._functions import __all__ as _functions
from ._info import __array_namespace_info__

__array_api_version__ = "2025.12"
SUPPORTED_VERSIONS = ("2023.12", "2024.12", "2025.12")

e, inf, nan, pi, newaxis = np.e, np.inf, np.nan, np.pi, None


def __getattr__(name: str):
    # Note: beyond the standard, NumPy's other functions are here too (they dispatch to dapx):
    # libraries that take a namespace, such as xarray, call a few (pad, nanmean, ...).
    try:
        return getattr(np, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


@implements_method("array_namespace")
def array_namespace(api_version: str | None = None):
    """This module, for ``DistributedArray.__array_namespace__``."""
    if api_version is not None and api_version not in SUPPORTED_VERSIONS:
        raise ValueError(
            f"dapx implements the array API standard {SUPPORTED_VERSIONS}, not {api_version!r}"
        )
    return sys.modules[__name__]


bool = np.bool
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float32, float64 = np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128

__all__ = [
    "SUPPORTED_VERSIONS",
    "__array_api_version__",
    "__array_namespace_info__",
    "arange",
    "asarray",
    "bool",
    "complex128",
    "complex64",
    "e",
    "empty",
    "empty_like",
    "eye",
    "fft",
    "float32",
    "float64",
    "from_dlpack",
    "full",
    "full_like",
    "inf",
    "int16",
    "int32",
    "int64",
    "int8",
    "linalg",
    "linspace",
    "meshgrid",
    "nan",
    "newaxis",
    "ones",
    "ones_like",
    "pi",
    "tril",
    "triu",
    "uint16",
    "uint32",
    "uint64",
    "uint8",
    "zeros",
    "zeros_like",
    *_functions,
]
