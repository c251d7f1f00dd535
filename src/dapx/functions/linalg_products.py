"""`numpy.linalg`'s products, transposes, traces, diagonals and cross products; `multi_dot`.

They reuse dapx's distributed implementations (`matmul` with SUMMA, `tensordot`,
`diagonal`, ...): nothing here makes a matrix whole.
"""

from __future__ import annotations

import numpy as np
from numpy.linalg import LinAlgError

from ..core.array import DistributedArray
from ..core.dispatch import implements
from .diagonals import diagonal as diagonal_
from .linalg import matmul
from .linalg import outer as outer_
from .linalg import tensordot as tensordot_
from .reductions import sum as sum_
from .shaping import matrix_transpose as matrix_transpose_

__all__ = [
    "check_square",
    "cross",
    "cross_product",
    "diagonal",
    "linalg_matmul",
    "matrix_transpose",
    "multi_dot",
    "outer",
    "tensordot",
    "trace",
    "vecdot",
]

la = np.linalg


def check_square(a: DistributedArray, name: str) -> None:
    if a.ndim < 2:
        raise LinAlgError(
            f"{a.ndim}-dimensional array given. Array must be at least two-dimensional"
        )
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")


@implements(la.matmul)
def linalg_matmul(x1, x2, /):
    """`numpy.linalg.matmul`: `numpy.matmul`."""
    return matmul(x1, x2)


@implements(la.matrix_transpose)
def matrix_transpose(x, /):
    """`numpy.linalg.matrix_transpose`."""
    return matrix_transpose_(x)


@implements(la.outer)
def outer(x1, x2, /):
    """`numpy.linalg.outer` of two vectors."""
    if np.ndim(x1) != 1 or np.ndim(x2) != 1:
        raise ValueError("Input arrays must be one-dimensional")
    return outer_(x1, x2)


@implements(la.tensordot)
def tensordot(x1, x2, /, *, axes=2):
    """`numpy.linalg.tensordot`."""
    return tensordot_(x1, x2, axes)


@implements(la.vecdot)
def vecdot(x1, x2, /, *, axis=-1):
    """`numpy.linalg.vecdot`: the conjugate of `x1` times `x2`, summed along `axis`."""
    if np.shape(x1)[axis] != np.shape(x2)[axis]:
        raise ValueError(
            f"vecdot: the vector dimensions differ: shapes {np.shape(x1)} and {np.shape(x2)}"
        )
    product = np.multiply(np.conjugate(x1) if np.iscomplexobj(x1) else x1, x2)
    return sum_(product, axis=axis, dtype=product.dtype)


@implements(la.trace)
def trace(x, /, *, offset=0, dtype=None):
    """`numpy.linalg.trace` over the last two axes."""
    return sum_(diagonal_(x, offset, -2, -1), axis=-1, dtype=dtype)


@implements(la.diagonal)
def diagonal(x, /, *, offset=0):
    """`numpy.linalg.diagonal` of the last two axes."""
    return diagonal_(x, offset, -2, -1)


@implements(la.cross)
def cross(x1, x2, /, *, axis=-1):
    """`numpy.linalg.cross` of 3-element vectors."""
    if np.shape(x1)[axis] != 3 or np.shape(x2)[axis] != 3:
        raise ValueError(
            "Both input arrays must be (arrays of) 3-dimensional vectors, but they are "
            f"{np.shape(x1)[axis]} and {np.shape(x2)[axis]} dimensional instead."
        )
    return cross_product(x1, x2, axis=axis)


@implements(np.cross)
def cross_product(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """`numpy.cross` of (arrays of) 3-element vectors: slices and elementwise products.

    # Note: NumPy's deprecated 2-element vectors are refused.

    >>> import numpy as np, dapx
    >>> x = dapx.asarray(np.eye(3), backend=dapx.simulated(2))
    >>> np.cross(x[0], x[1]).gather()
    array([0., 0., 1.])
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a = np.moveaxis(a, axisa, -1)
    b = np.moveaxis(b, axisb, -1)
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise ValueError(
            "incompatible dimensions for cross product (dimension must be 3; dapx does not "
            "take NumPy's deprecated 2-element vectors)"
        )
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    c = np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return np.moveaxis(c, -1, axisc)


@implements(la.multi_dot)
def multi_dot(arrays, *, out=None):
    """`numpy.linalg.multi_dot`: the chain of `matmul` in NumPy's cheapest order."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    first_vector, last_vector = np.ndim(arrays[0]) == 1, np.ndim(arrays[-1]) == 1
    shapes = [np.shape(x) for x in arrays]
    shapes[0] = (1, shapes[0][0]) if first_vector else shapes[0]
    shapes[-1] = (shapes[-1][0], 1) if last_vector else shapes[-1]
    split = _chain_order([shapes[0][0], *(s[1] for s in shapes)])

    def chain(i, j):
        if i == j:
            return arrays[i]
        k = split[i][j]
        return matmul(chain(i, k), chain(k + 1, j))

    result = chain(0, len(arrays) - 1)
    if out is not None:
        from .shaping import write_into

        return write_into(out, result)
    return result


def _chain_order(dims: list[int]) -> list[list[int]]:
    """Where to split each sub-chain of matrices ``dims[i] x dims[i+1]`` (fewest flops)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split
