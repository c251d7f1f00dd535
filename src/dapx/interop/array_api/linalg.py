"""The standard's linalg extension: `numpy.linalg`, dispatched to dapx."""

from __future__ import annotations

import numpy as np

_NAMES = [
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]
__all__ = [*_NAMES, "eig", "eigvals"]
globals().update({name: getattr(np.linalg, name) for name in _NAMES})


def _complex(dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


def eig(x, /):
    """`numpy.linalg.eig`, always complex as the standard says (NumPy returns real when it can)."""
    w, v = np.linalg.eig(x)
    return type(np.linalg.eig(np.eye(1)))(w.astype(_complex(w.dtype)), v.astype(_complex(v.dtype)))


def eigvals(x, /):
    """`numpy.linalg.eigvals`, always complex."""
    w = np.linalg.eigvals(x)
    return w.astype(_complex(w.dtype))
