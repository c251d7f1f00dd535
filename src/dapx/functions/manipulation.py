"""NumPy functions that keep or derive a layout: where, clip, round, comparisons, copies.

Elementwise functions (`where`, `clip`, `round`, `isclose`) align their
operands with the elementwise engine (`dapx.core.elementwise.result_layout` and
`local_operands`) and call NumPy on each rank's blocks. Whole-array answers
(`allclose`, `array_equal`) reduce one boolean per rank with
`Backend.combine`; no data is gathered. Functions that move data between
layouts live in `dapx.functions.shaping` (transpose, reshape) and `dapx.functions.joining`
(concatenate, pad, roll, diff), sorting in `dapx.functions.sorting` and einsum in
`dapx.functions.contraction`.
"""

from __future__ import annotations

import operator

import numpy as np

from ..core import creation
from ..core.array import DistributedArray, new_array
from ..core.dispatch import implements, implements_method
from ..core.elementwise import local_operands, result_layout
from ..core.guard import collective, raise_if_any_failed
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap
from .shaping import (
    _copy,
    _index,
    _is_trivial,
    from_replicated,
    owned_block,
    ravel,
    rows_distribution,
)

__all__ = [
    "allclose",
    "argwhere",
    "array_equal",
    "astype",
    "clip",
    "copy",
    "empty_like",
    "flatnonzero",
    "full_like",
    "imag",
    "isclose",
    "nonzero",
    "ones_like",
    "part",
    "real",
    "result_type",
    "round",
    "set_part",
    "where",
    "zeros_like",
]


# -- elementwise through the engine ----------------------------------------------------------------


def _operand(v):
    return np.asarray(v) if isinstance(v, (list, tuple)) else v


def _blockwise(func, operands: list, out=None, check=False, **kwargs) -> DistributedArray:
    """``func(*operands, **kwargs)`` on every rank's aligned blocks; None operands pass through.

    With `check`, for functions whose input can be bad on some ranks only (an index out of
    range), a rank's exception is shared and raised, with its type, on every rank
    (`raise_if_any_failed`, one small collective), instead of a `RankError` elsewhere.
    """
    present = [i for i, v in enumerate(operands) if v is not None]
    values = [_operand(operands[i]) for i in present]
    if out is not None and not isinstance(out, DistributedArray):
        raise TypeError(
            f"out= must be a DistributedArray, got {type(out).__name__} (writing into a NumPy "
            "array would gather)"
        )
    backend, target, _ = result_layout(values, (out,) if out is not None else None)
    aligned = local_operands(values, target, backend)
    results, errors = {}, {}
    for r in backend.local_ranks:
        args = list(operands)
        for j, i in enumerate(present):
            args[i] = aligned[j][r]
        errors[r] = None
        try:
            if out is not None:
                func(*args, out=out.locals[r], **kwargs)
            else:
                results[r] = np.asarray(func(*args, **kwargs))
        except Exception as e:
            if not check:
                raise
            errors[r] = e
    if check:
        raise_if_any_failed(backend, errors)
    return out if out is not None else new_array(target, results, backend)


@implements(np.where)
def where(condition, x=None, y=None, /):
    """`numpy.where`: with `x` and `y`, elementwise choice; alone, `nonzero`.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(6, backend=dapx.simulated(3))
    >>> np.where(a % 2 == 0, a, -1).gather()
    array([ 0, -1,  2, -1,  4, -1])
    >>> np.where(a > 3)[0].gather()
    array([4, 5])
    """
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    return _blockwise(np.where, [condition, x, y])


@implements(np.clip)
def clip(
    a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue, max=np._NoValue, **kwargs
):
    """`numpy.clip` (bounds may be arrays, distributed or not, or None).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> np.clip(dapx.arange(6, backend=dapx.simulated(2)), 1, 4).gather()
    array([1, 1, 2, 3, 4, 4])
    """
    if a_min is np._NoValue and a_max is np._NoValue:
        a_min = None if min is np._NoValue else min
        a_max = None if max is np._NoValue else max
    elif a_min is np._NoValue:
        raise TypeError("clip() missing 1 required positional argument: 'a_min'")
    elif a_max is np._NoValue:
        raise TypeError("clip() missing 1 required positional argument: 'a_max'")
    elif min is not np._NoValue or max is not np._NoValue:
        raise ValueError(
            "Passing `min` or `max` keyword argument when `a_min` and `a_max` "
            "are provided is forbidden."
        )
    return _blockwise(np.clip, [a, a_min, a_max], out=out, **kwargs)


@implements(np.round, np.around)
def round(a, decimals=0, out=None):
    """`numpy.round` / `numpy.around`, rank by rank.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> np.round(dapx.linspace(0, 1, 5, backend=dapx.simulated(2)), 1).gather()
    array([0. , 0.2, 0.5, 0.8, 1. ])
    """
    return _blockwise(np.round, [a], out=out, decimals=decimals)


@implements(np.isclose)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """`numpy.isclose`, elementwise.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> np.isclose(dapx.asarray([1.0, 2.0], backend=dapx.simulated(2)), [1.0, 2.1]).gather()
    array([ True, False])
    """
    return _blockwise(np.isclose, [a, b], rtol=rtol, atol=atol, equal_nan=equal_nan)


def _all_true(x: DistributedArray) -> bool:
    """Whether every element is true: one boolean per rank, combined in rank order."""
    partials = {r: bool(np.all(owned_block(x, r))) for r in x.backend.local_ranks}
    return bool(x.backend.combine(partials, operator.and_))


@implements(np.allclose)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """`numpy.allclose`: a Python bool from one boolean per rank.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.linspace(0, 1, 7, backend=dapx.simulated(3))
    >>> np.allclose(a, np.linspace(0, 1, 7)), np.allclose(a, 0)
    (True, False)
    """
    return _all_true(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


@implements(np.array_equal)
def array_equal(a1, a2, equal_nan=False):
    """`numpy.array_equal`: False on different shapes, else a distributed all of ``==``.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(4, backend=dapx.simulated(2))
    >>> np.array_equal(a, [0, 1, 2, 3]), np.array_equal(a, np.arange(5))
    (True, False)
    """
    try:
        a1, a2 = (v if isinstance(v, DistributedArray) else np.asarray(v) for v in (a1, a2))
    except Exception:
        return False
    if a1.shape != a2.shape:
        return False

    def equal(u, v):
        eq = np.equal(u, v)
        if equal_nan and (np.asarray(u).dtype.kind in "fc" or np.asarray(v).dtype.kind in "fc"):
            eq = eq | (np.isnan(u) & np.isnan(v))
        return eq

    return _all_true(_blockwise(equal, [a1, a2]))


# -- indices of nonzero elements -------------------------------------------------------------------


def _in_rows(x: DistributedArray) -> DistributedArray:
    """`x` laid out so that ranks hold consecutive runs of rows in rank order (C order)."""
    first, *rest = x.distribution.maps
    if isinstance(first, BlockMap) and not first.is_padded and all(map(_is_trivial, rest)):
        return x
    return x.redistribute(rows_distribution(x.shape, x.backend.nranks))


@implements(np.nonzero)
def nonzero(a):
    """`numpy.nonzero`: one index array per dimension, in C order, block-distributed.

    Each rank finds the nonzero elements of a run of rows (the array is
    first laid out by rows when it is not already), so the results come out
    in global C order; rank ``r`` holds the ``r``-th run of them.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.array([[0, 3, 0], [4, 0, 5]])
    >>> i, j = np.nonzero(dapx.asarray(x, dist=("c", "b"), grid=(2, 2),
    ...                                backend=dapx.simulated(4)))
    >>> i.gather(), j.gather()
    (array([0, 1, 1]), array([1, 0, 2]))
    """
    if a.ndim == 0:
        raise ValueError(
            "Calling nonzero on 0d arrays is not allowed. Use "
            "np.atleast_1d(scalar).nonzero() instead."
        )
    y = _in_rows(a)
    backend = y.backend
    bounds = y.distribution.maps[0].bounds
    found = {r: np.nonzero(y.locals[r]) for r in backend.local_ranks}
    counts = backend.allgather({r: int(f[0].size) for r, f in found.items()})
    dist = Distribution([BlockMap(sum(counts), np.concatenate(([0], np.cumsum(counts))))])
    result = []
    for k in range(a.ndim):
        blocks = {}
        for r, f in found.items():
            offset = bounds[y.distribution.coords(r)[0]] if k == 0 else 0
            blocks[r] = (f[k] + offset).astype(np.intp)
        result.append(new_array(dist, blocks, backend, np.intp))
    return tuple(result)


@implements(np.argwhere)
def argwhere(a):
    """`numpy.argwhere`: ``(count, ndim)``, block-distributed along the first axis.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> np.argwhere(dapx.asarray([0, 2, 0, 3], backend=dapx.simulated(2))).gather()
    array([[1],
           [3]])
    """
    if a.ndim == 0:
        value = a.locals[a.backend.local_ranks[0]]
        return from_replicated(np.argwhere(value), a.backend)
    idx = nonzero(a)
    dist = Distribution([idx[0].distribution.maps[0], BlockMap(a.ndim, nprocs=1)])
    blocks = {r: np.stack([i.locals[r] for i in idx], axis=1) for r in a.backend.local_ranks}
    return new_array(dist, blocks, a.backend, np.intp)


@implements(np.flatnonzero)
def flatnonzero(a):
    """`numpy.flatnonzero`.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> np.flatnonzero(dapx.asarray([[0, 1], [1, 0]], backend=dapx.simulated(2))).gather()
    array([1, 2])
    """
    return nonzero(ravel(a))[0]


# -- new arrays like others, copies, dtypes --------------------------------------------------------


def _check_order(order) -> None:
    if order not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if order == "F":
        # Note: local blocks are always C-ordered.
        raise NotImplementedError("dapx keeps local blocks in C order; order='F' is not supported")


def _check_device(device) -> None:
    if device not in (None, "cpu"):
        raise ValueError(f'Device not understood. Only "cpu" is allowed, but received: {device}')


@implements(np.zeros_like)
def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """`numpy.zeros_like`: same layout as `a` (`dapx.zeros_like`).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(5, backend=dapx.simulated(2))
    >>> z = np.zeros_like(a, dtype=float)
    >>> z.distribution == a.distribution, z.dtype
    (True, dtype('float64'))
    """
    _check_order(order)
    _check_device(device)
    return creation.zeros_like(a, dtype, shape=shape)


@implements(np.ones_like)
def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """`numpy.ones_like` (`dapx.ones_like`).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> np.ones_like(dapx.arange(3, backend=dapx.simulated(2))).gather()
    array([1, 1, 1])
    """
    _check_order(order)
    _check_device(device)
    return creation.ones_like(a, dtype, shape=shape)


@implements(np.empty_like)
def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """`numpy.empty_like` (`dapx.empty_like`).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> np.empty_like(dapx.arange(3, backend=dapx.simulated(2))).shape
    (3,)
    """
    _check_order(order)
    _check_device(device)
    return creation.empty_like(prototype, dtype, shape=shape)


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """`numpy.full_like` (`dapx.full_like`).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> np.full_like(dapx.arange(3, backend=dapx.simulated(2)), 7).gather()
    array([7, 7, 7])
    """
    _check_order(order)
    _check_device(device)
    return creation.full_like(a, fill_value, dtype, shape=shape)


@implements(np.copy)
def copy(a, order="K", subok=False):
    """`numpy.copy`: a new array with the same layout and copied blocks.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(3, backend=dapx.simulated(2))
    >>> np.shares_memory(np.copy(a).local(0), a.local(0))
    False
    """
    _check_order(order)
    return _copy(a)


@implements(np.result_type)
def result_type(*arrays_and_dtypes):
    """`numpy.result_type` on the dtypes of distributed arrays (no data is touched).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> np.result_type(dapx.arange(3, backend=dapx.simulated(2)), 1.5)
    dtype('float64')
    """
    return np.result_type(
        *(a.dtype if isinstance(a, DistributedArray) else a for a in arrays_and_dtypes)
    )


@implements(np.ndim)
def ndim(a) -> int:
    """`numpy.ndim`, from the metadata.

    >>> import numpy as np, dapx
    >>> np.ndim(dapx.zeros((2, 3), backend=dapx.simulated(2))), np.shape(dapx.zeros(4))
    (2, (4,))
    """
    return a.ndim


@implements(np.shape)
def shape(a) -> tuple[int, ...]:
    """`numpy.shape`, from the metadata (the domain, without any halo)."""
    return a.shape


@implements(np.size)
def size(a, axis=None) -> int:
    """`numpy.size`, from the metadata.

    >>> import numpy as np, dapx
    >>> np.size(dapx.zeros((2, 3), backend=dapx.simulated(2)), axis=1)
    3
    """
    if axis is None:
        return a.size
    axis = operator.index(axis)
    if not -a.ndim <= axis < a.ndim:
        raise np.exceptions.AxisError(axis, a.ndim)
    return a.shape[axis]


@implements(np.iscomplexobj)
def iscomplexobj(x) -> bool:
    """`numpy.iscomplexobj`: whether the dtype is complex (no data is touched)."""
    return issubclass(x.dtype.type, np.complexfloating)


@implements(np.isrealobj)
def isrealobj(x) -> bool:
    """`numpy.isrealobj`: whether the dtype is not complex (no data is touched)."""
    return not iscomplexobj(x)


@implements(np.iscomplex)
def iscomplex(x):
    """`numpy.iscomplex`: elementwise, whether the imaginary part is non-zero.

    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.array([1 + 1j, 2]), backend=dapx.simulated(2))
    >>> np.iscomplex(a).gather()
    array([ True, False])
    """
    if not iscomplexobj(x):
        return np.zeros_like(x, dtype=bool)
    return np.not_equal(np.imag(x), 0)


@implements(np.isreal)
def isreal(x):
    """`numpy.isreal`: elementwise, whether the imaginary part is zero."""
    return np.logical_not(iscomplex(x))


@implements(np.can_cast)
def can_cast(from_, to, casting="safe") -> bool:
    """`numpy.can_cast` from a distributed array's dtype (no data is touched)."""
    return np.can_cast(from_.dtype, to, casting=casting)


@implements_method("astype")
@collective
def astype(x, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """`numpy.ndarray.astype`: the same layout with every block cast.

    Returns `x` itself when ``copy=False`` and the dtype is already right.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> dapx.arange(3, backend=dapx.simulated(2)).astype(np.float32).dtype
    dtype('float32')
    """
    _check_order(order)
    dtype = np.dtype(dtype)
    if not copy and dtype == x.dtype:
        return x
    blocks = {r: b.astype(dtype, casting=casting) for r, b in x.locals.items()}
    return new_array(x.distribution, blocks, x.backend, dtype)


@implements(np.astype)
def _np_astype(x, dtype, /, *, copy=True, device=None):
    """`numpy.astype`.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> np.astype(dapx.arange(3, backend=dapx.simulated(2)), bool).gather()
    array([False,  True,  True])
    """
    _check_device(device)
    return astype(x, dtype, copy=copy)


@implements_method("part")
def part(x: DistributedArray, name: str) -> DistributedArray:
    """``x.real`` or ``x.imag``: views of the blocks, as NumPy gives.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.asarray([1 + 2j, 3 - 1j], backend=dapx.simulated(2))
    >>> part(a, "imag").gather(), np.shares_memory(part(a, "real").local(0), a.local(0))
    (array([ 2., -1.]), True)
    """
    blocks = {r: getattr(b, name) for r, b in x.locals.items()}
    dtype = getattr(np.empty(0, x.dtype), name).dtype
    return new_array(x.distribution, blocks, x.backend, dtype)


@implements(np.real)
def real(val):
    """`numpy.real`: ``val.real``.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> np.real(dapx.asarray([1 + 2j, 3 - 1j], backend=dapx.simulated(2))).gather()
    array([1., 3.])
    """
    return part(val, "real")


@implements(np.imag)
def imag(val):
    """`numpy.imag`: ``val.imag``.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> np.imag(dapx.asarray([1 + 2j, 3 - 1j], backend=dapx.simulated(2))).gather()
    array([ 2., -1.])
    """
    return part(val, "imag")


@implements_method("set_part")
@collective
def set_part(x: DistributedArray, name: str, value) -> None:
    """``x.real = value`` or ``x.imag = value``: owned elements only; `value` broadcasts.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.zeros(3, complex, backend=dapx.simulated(2))
    >>> set_part(a, "imag", [1, 2, 3])
    >>> a.gather()
    array([0.+1.j, 0.+2.j, 0.+3.j])
    """
    if name == "imag" and x.dtype.kind != "c":
        raise TypeError("array does not have imaginary part to set")
    value = _operand(value)
    shape = value.shape if hasattr(value, "shape") else ()
    if np.broadcast_shapes(shape, x.shape) != x.shape:
        raise ValueError(f"could not broadcast input array from shape {shape} into shape {x.shape}")
    aligned = local_operands([value], x.distribution, x.backend)[0]
    for r, block in x.locals.items():
        key = () if not x.ndim else _owned_key(x.distribution, r)
        target = getattr(block, name)
        target[key] = np.broadcast_to(aligned[r], block.shape)[key]


def _owned_key(dist: Distribution, rank: int) -> tuple:
    from ..exchange.plans import owned_positions

    return _index(owned_positions(dist, rank)[0])
