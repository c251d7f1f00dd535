"""Matrix products: ``@``/`numpy.matmul`, `dot`, `vdot`, `inner`, `outer`, `tensordot`.

Three routes, chosen from the operands' shapes alone:

* a contraction in which one distributed operand has every axis of the
  other distributed operands (a matrix times a vector, a distributed array
  times a NumPy array, a full contraction) is `numpy.einsum`: local work
  plus a reduction of partials, in `dapx.functions.contraction`;
* two distributed stacks of matrices: each pair of matrices is made whole
  on one rank with the stack spread over the ranks
  (`dapx.functions.whole_core.on_whole_core`);
* otherwise (a distributed matrix times a distributed matrix, and a
  `tensordot` of two distributed operands that both keep free axes, as a
  matrix product) is SUMMA on a 2-D process grid
  (`dapx.functions.summa`): panels of the left operand's columns travel
  along the grid rows and panels of the right operand's rows along the grid
  columns, so no rank holds more than its blocks plus one panel of each
  operand, and every rank adds its products in the same order on every
  backend (bitwise reproducible for a given grid). The result is in 2-D
  blocks on that grid.

The generalized ufuncs `numpy.vecdot`, `numpy.matvec` and `numpy.vecmat`
are elementwise products followed by a sum over the core axis.
"""

from __future__ import annotations

import math
import operator
import string

import numpy as np

from ..core.array import DistributedArray
from ..core.dispatch import implements, implements_method
from .shaping import write_into
from .summa import summa

__all__ = ["apply_gufunc", "dot", "inner", "matmul", "outer", "tensordot", "vdot"]


def _distributed(x) -> bool:
    return isinstance(x, DistributedArray) and x.ndim > 0


def _finish(result, out, dtype):
    if dtype is not None and result.dtype != np.dtype(dtype):
        result = result.astype(dtype)
    return result if out is None else write_into(out, result)


def _letters(count: int, start: int = 0) -> str:
    return string.ascii_letters[start : start + count]


def _tensordot_axes(a, b, axes) -> tuple[list[int], list[int]]:
    """Normalized contracted axes of `a` and `b`, checked as `numpy.tensordot` checks them."""
    try:
        count = operator.index(axes)
    except TypeError:
        axes_a, axes_b = axes
        axes_a = [axes_a] if np.ndim(axes_a) == 0 else list(axes_a)
        axes_b = [axes_b] if np.ndim(axes_b) == 0 else list(axes_b)
    else:
        if count < 0 or count > min(np.ndim(a), np.ndim(b)):
            raise ValueError(f"tensordot: axes={count} exceeds the dimensions of an operand")
        axes_a = list(range(np.ndim(a) - count, np.ndim(a)))
        axes_b = list(range(count))
    if len(axes_a) != len(axes_b):
        raise ValueError(f"tensordot: {len(axes_a)} axes of a but {len(axes_b)} of b")
    axes_a = [_axis(x, np.ndim(a), "a") for x in axes_a]
    axes_b = [_axis(x, np.ndim(b), "b") for x in axes_b]
    for x, y in zip(axes_a, axes_b):
        if np.shape(a)[x] != np.shape(b)[y]:
            raise ValueError(
                f"tensordot: shape-mismatch for sum: axis {x} of a has {np.shape(a)[x]} "
                f"elements, axis {y} of b has {np.shape(b)[y]}"
            )
    return axes_a, axes_b


def _axis(x, ndim: int, name: str) -> int:
    x = operator.index(x)
    if not -ndim <= x < ndim:
        raise np.exceptions.AxisError(x, ndim, f"tensordot: axis of {name}")
    return x % ndim


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    """`numpy.tensordot`: sum products over the given axes of `a` and `b`.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> be = dapx.simulated(3)
    >>> x, y = np.arange(24.0).reshape(2, 3, 4), np.arange(12.0).reshape(4, 3)
    >>> r = np.tensordot(dapx.asarray(x, backend=be), dapx.asarray(y, backend=be), axes=([1], [1]))
    >>> np.array_equal(r.gather(), np.tensordot(x, y, axes=([1], [1])))
    True
    """
    axes_a, axes_b = _tensordot_axes(a, b, axes)
    free_a = [i for i in range(np.ndim(a)) if i not in axes_a]
    free_b = [i for i in range(np.ndim(b)) if i not in axes_b]
    if _distributed(a) and _distributed(b) and free_a and free_b:
        return _tensordot_by_matmul(a, b, axes_a, axes_b, free_a, free_b)
    sub_a = _letters(np.ndim(a))
    sub_b = list(_letters(np.ndim(b), np.ndim(a)))
    for x, y in zip(axes_a, axes_b):
        sub_b[y] = sub_a[x]
    sub_b = "".join(sub_b)
    rhs = "".join(sub_a[i] for i in free_a) + "".join(sub_b[i] for i in free_b)
    return np.einsum(f"{sub_a},{sub_b}->{rhs}", a, b)


def _tensordot_by_matmul(a, b, axes_a, axes_b, free_a, free_b):
    """Contract through 2-D matrices: ``(free_a, contracted) @ (contracted, free_b)``."""
    shape_a = [a.shape[i] for i in free_a]
    shape_b = [b.shape[i] for i in free_b]
    k = math.prod(a.shape[i] for i in axes_a)
    left = np.reshape(np.transpose(a, free_a + axes_a), (math.prod(shape_a), k))
    right = np.reshape(np.transpose(b, axes_b + free_b), (k, math.prod(shape_b)))
    product = summa(left, right)
    return np.reshape(product, (*shape_a, *shape_b))


def matmul(x1, x2, /, out=None, *, dtype=None, **kwargs):
    """`numpy.matmul` (the ``@`` operator) with NumPy's rules for 1-D and N-D operands.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> be = dapx.simulated(4)
    >>> x = np.arange(12.0).reshape(4, 3)
    >>> a = dapx.asarray(x, backend=be)
    >>> np.array_equal((a @ a.T).gather(), x @ x.T)
    True
    >>> np.array_equal((a @ np.ones(3)).gather(), x @ np.ones(3))
    True
    """
    unsupported = sorted(set(kwargs) - {"casting", "order", "subok"})
    if unsupported or kwargs.get("casting", "same_kind") != "same_kind":
        raise NotImplementedError(
            f"matmul keywords {unsupported or ['casting']} are not implemented for DistributedArray"
        )
    nd1, nd2 = np.ndim(x1), np.ndim(x2)
    if nd1 == 0 or nd2 == 0:
        which = 0 if nd1 == 0 else 1
        raise ValueError(
            f"matmul: Input operand {which} does not have enough dimensions (it is 0-d)"
        )
    s1, s2 = np.shape(x1), np.shape(x2)
    inner1, inner2 = s1[-1], s2[0] if nd2 == 1 else s2[-2]
    if inner1 != inner2:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
            f"(size {inner2} is different from {inner1}): shapes {s1} and {s2}"
        )
    if nd1 <= 2 and nd2 <= 2:
        if nd1 == 2 and nd2 == 2 and _distributed(x1) and _distributed(x2):
            return _finish(summa(x1, x2), out, dtype)
        sub1 = "ij"[2 - nd1 :]
        sub2 = "jk"[:nd2] if nd2 == 2 else "j"
        rhs = (sub1[0] if nd1 == 2 else "") + ("k" if nd2 == 2 else "")
        return _finish(np.einsum(f"{sub1},{sub2}->{rhs}", x1, x2), out, dtype)
    # Stacks of matrices: batch axes broadcast, as in NumPy.
    batch1 = s1[:-2] if nd1 > 1 else ()
    batch2 = s2[:-2] if nd2 > 1 else ()
    batch = np.broadcast_shapes(batch1, batch2)
    if nd1 > 1 and nd2 > 1 and _distributed(x1) and _distributed(x2):
        # Two distributed stacks: each pair of matrices whole on one rank, the stack spread.
        from .whole_core import on_whole_core

        left = np.broadcast_to(x1, (*batch, *s1[-2:]))
        right = np.broadcast_to(x2, (*batch, *s2[-2:]))
        (product,) = on_whole_core(np.matmul, [left, right], [2, 2], "np.matmul")
        return _finish(product, out, dtype)
    letters = _letters(len(batch), 3)
    sub1 = letters[len(letters) - len(batch1) :] + ("ij" if nd1 > 1 else "j")
    sub2 = letters[len(letters) - len(batch2) :] + ("jk" if nd2 > 1 else "j")
    rhs = letters + ("i" if nd1 > 1 else "") + ("k" if nd2 > 1 else "")
    return _finish(np.einsum(f"{sub1},{sub2}->{rhs}", x1, x2), out, dtype)


@implements(np.dot)
def dot(a, b, out=None):
    """`numpy.dot`: a product for 0-d, an inner product for 1-D, matmul for 2-D.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(5.0, backend=dapx.simulated(2))
    >>> float(np.dot(a, a))
    30.0
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        result = np.multiply(a, b)
    elif np.ndim(b) == 1:
        result = tensordot(a, b, axes=([np.ndim(a) - 1], [0]))
    else:
        result = tensordot(a, b, axes=([np.ndim(a) - 1], [np.ndim(b) - 2]))
    return _finish(result, out, None)


@implements(np.inner)
def inner(a, b, /):
    """`numpy.inner`: sum products over the last axes.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> be = dapx.simulated(2)
    >>> x = np.arange(6.0).reshape(2, 3)
    >>> np.array_equal(np.inner(dapx.asarray(x, backend=be), x).gather(), np.inner(x, x))
    True
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.multiply(a, b)
    return tensordot(a, b, axes=([np.ndim(a) - 1], [np.ndim(b) - 1]))


@implements(np.outer)
def outer(a, b, out=None):
    """`numpy.outer`: every product of the flattened operands.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> be = dapx.simulated(3)
    >>> np.outer(dapx.arange(4, backend=be), dapx.arange(3, backend=be)).gather()[3]
    array([0, 3, 6])
    """
    a = np.reshape(a, -1) if np.ndim(a) != 1 else a
    b = np.reshape(b, -1) if np.ndim(b) != 1 else b
    # A broadcast product (as NumPy computes it: -0 stays -0, unlike a contraction).
    return _finish(np.multiply(np.reshape(a, (-1, 1)), np.reshape(b, (1, -1))), out, None)


@implements(np.vdot)
def vdot(a, b, /):
    """`numpy.vdot`: the dot product of the flattened operands, the first conjugated.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.array([1 + 2j, 3j]), backend=dapx.simulated(2))
    >>> complex(np.vdot(a, a))
    (14+0j)
    """
    if np.size(a) != np.size(b):
        raise ValueError(f"vdot: vectors have different lengths ({np.size(a)} and {np.size(b)})")
    a = np.reshape(a, -1) if np.ndim(a) != 1 else a
    b = np.reshape(b, -1) if np.ndim(b) != 1 else b
    if np.iscomplexobj(a):
        a = np.conjugate(a)
    return np.einsum("i,i->", a, b)


@implements_method("gufunc")
def apply_gufunc(ufunc, inputs, kwargs):
    """The generalized ufuncs NumPy reaches `DistributedArray.__array_ufunc__` with."""
    out = kwargs.get("out")
    if isinstance(out, tuple):  # ufuncs pass out= as a tuple, one entry per output
        kwargs["out"] = out[0] if len(out) == 1 else out
    if ufunc is np.matmul:
        return matmul(*inputs, **kwargs)
    vector_products = {"vecdot": (-1, -1), "matvec": (-1, -1), "vecmat": (-2, -1)}
    name = getattr(ufunc, "__name__", "")
    if name in vector_products and getattr(np, name, None) is ufunc:
        return _vector_product(name, *inputs, **kwargs)
    raise NotImplementedError(
        f"the generalized ufunc np.{name} (signature {ufunc.signature}) is not implemented "
        "for DistributedArray"
    )


def _vector_product(name: str, x1, x2, /, out=None, *, axes=None, axis=None, dtype=None, **kwargs):
    """`numpy.vecdot`, `numpy.matvec`, `numpy.vecmat` as a broadcast product and a sum."""
    if kwargs or (axes is not None and name != "vecdot"):
        raise NotImplementedError(
            f"np.{name} with {sorted(kwargs) or ['axes']} is not implemented for DistributedArray"
        )
    if name == "vecdot":
        if axes is not None:
            axis = axes[0][0] if np.ndim(axes[0]) else axes[0]
            second = axes[1][0] if np.ndim(axes[1]) else axes[1]
            x2 = np.moveaxis(x2, second, -1)
            x1 = np.moveaxis(x1, axis, -1)
        elif axis is not None:
            x1, x2 = np.moveaxis(x1, axis, -1), np.moveaxis(x2, axis, -1)
        if np.ndim(x1) == 0 or np.ndim(x2) == 0 or np.shape(x1)[-1] != np.shape(x2)[-1]:
            raise ValueError(
                f"vecdot: the vector dimensions differ: shapes {np.shape(x1)} and {np.shape(x2)}"
            )
        product = np.multiply(np.conjugate(x1) if np.iscomplexobj(x1) else x1, x2)
        result = np.sum(product, axis=-1, dtype=product.dtype)
    elif name == "matvec":  # (..., m, n) x (..., n) -> (..., m)
        result = np.sum(np.multiply(x1, np.expand_dims(x2, -2)), axis=-1)
    else:  # vecmat: (..., n) x (..., n, m) -> (..., m)
        v = np.conjugate(x1) if np.iscomplexobj(x1) else x1
        result = np.sum(np.multiply(np.expand_dims(v, -1), x2), axis=-2)
    return _finish(result, out, dtype)
