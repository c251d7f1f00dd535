"""``__array_namespace_info__``: what this namespace supports."""

from __future__ import annotations

import numpy as np

from ...backends import get_backend

__all__ = ["__array_namespace_info__"]

_DTYPES = {
    "bool": np.dtype(np.bool_),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
}
_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "integral": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
    "numeric": tuple(k for k in _DTYPES if k != "bool"),
}


class _Info:
    """The inspection namespace of the standard (capabilities, devices, dtypes)."""

    def capabilities(self) -> dict:
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": 64,
        }

    def default_device(self):
        return get_backend()

    def devices(self) -> tuple:
        return (get_backend(),)

    def default_dtypes(self, *, device=None) -> dict:
        return {
            "real floating": np.dtype(np.float64),
            "complex floating": np.dtype(np.complex128),
            "integral": np.dtype(np.int64),
            "indexing": np.dtype(np.int64),
        }

    def dtypes(self, *, device=None, kind=None) -> dict:
        if kind is None:
            return dict(_DTYPES)
        kinds = (kind,) if isinstance(kind, str) else tuple(kind)
        names = [n for k in kinds for n in _KINDS[k]]
        return {n: _DTYPES[n] for n in dict.fromkeys(names)}


def __array_namespace_info__() -> _Info:
    """The namespace's inspection object."""
    return _Info()
