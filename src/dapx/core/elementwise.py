"""The one engine for ufunc calls: broadcasting, alignment and local execution.

Every ``np.<ufunc>(...)`` on a DistributedArray and every operator comes
here. Operands are NumPy arrays, scalars and DistributedArrays; the result
takes the layout of ``out`` when given, else of the first distributed
operand (extended by broadcasting), and every other operand is aligned to
it: distributed ones by one exchange, NumPy ones by slicing locally.

Arrays with a halo (ghost cells, see `dapx.core.halos`) keep it: operands of one
padded layout are computed whole, halos included, so the result has that
layout and its halo holds the operation applied to the operands' halos
(valid ghost values when theirs were, except at constant boundaries; call
``update_halos`` before a stencil reads them). Any other operand gives the
result's halo nothing in particular. Writing into ``out=`` with a halo
touches its interior only, unless every operand has ``out``'s layout.
"""

from __future__ import annotations

import numpy as np

from ..layout.distribution import Distribution
from ..layout.maps import BlockMap
from .array import SCALAR, DistributedArray, new_array
from .dispatch import array_method

__all__ = [
    "apply_ufunc",
    "blockwise",
    "broadcast_distribution",
    "local_operands",
    "result_layout",
]


def _distributed(x) -> bool:
    return isinstance(x, DistributedArray)


_PY_SCALARS = (int, float, complex, bool)


def _same_layout_fast_path(ufunc, inputs, kwargs):
    """``ufunc(*inputs)`` when every operand is a Python scalar or shares one layout.

    The common case (``a + 1``, ``a * b`` on one distribution) needs no
    alignment and no layout resolution; skipping them keeps per-call
    overhead low on small arrays.
    """
    lead = None
    for x in inputs:
        if type(x) is DistributedArray:
            if lead is None:
                lead = x
            elif x._dist is not lead._dist or x._backend is not lead._backend:
                return None
        elif type(x) not in _PY_SCALARS:
            return None
    if lead is None or not lead.ndim or ufunc.nout != 1:
        return None
    results = {}
    for r in lead._backend.local_ranks:
        results[r] = ufunc(
            *[x._locals[r] if type(x) is DistributedArray else x for x in inputs], **kwargs
        )
    return new_array(lead._dist, results, lead._backend)


def broadcast_distribution(dist: Distribution, shape: tuple[int, ...]) -> Distribution:
    """`dist` stretched to the broadcast `shape`.

    New leading dimensions are undistributed; a size-1 dimension stretched
    to ``n`` becomes an even block over the same number of grid ranks.
    """
    if dist.global_shape == shape:
        return dist
    extra = len(shape) - dist.ndim
    maps = [BlockMap(n, nprocs=1) for n in shape[:extra]]
    for m, n in zip(dist.maps, shape[extra:]):
        maps.append(m if m.size == n else BlockMap(n, nprocs=m.nprocs))
    return Distribution(maps)


def _slice_numpy(x: np.ndarray, target: Distribution, rank: int):
    """The part of NumPy array `x` (broadcastable to target's shape) that `rank` holds."""
    from ..exchange.plans import as_index_array, simplify_index

    extra = target.ndim - x.ndim
    parts = []
    for k, idx in enumerate(target.global_indices(rank)):
        if k < extra:
            continue
        n = x.shape[k - extra]
        if n != 1 and idx.size and (idx[0] < 0 or idx[-1] >= n):
            # Note: the edge ghost cells of a halo lie outside the domain; they take the
            # values of the nearest edge (they are not part of the array).
            idx = np.clip(idx, 0, n - 1)
        parts.append(slice(None) if n == 1 else simplify_index(idx))
    if all(isinstance(p, slice) for p in parts):
        return x[tuple(parts)]
    # slice(None) marks a broadcast (length-1) axis; other slices are index ranges.
    arrays = [
        np.arange(x.shape[i]) if isinstance(p, slice) and p == slice(None) else as_index_array(p)
        for i, p in enumerate(parts)
    ]
    return x[np.ix_(*arrays)]


def result_layout(operands, out=None):
    """(backend, target distribution, result shape) of an elementwise call."""
    shapes = [x.shape if hasattr(x, "shape") else np.shape(x) for x in operands]
    shape = np.broadcast_shapes(*shapes)
    distributed = [x for x in operands if _distributed(x)]
    backend = (out[0] if out else distributed[0]).backend
    for x in distributed:
        if x.backend != backend:
            raise ValueError(f"operands live on different backends: {backend} and {x.backend}")
    if out:
        target = out[0].distribution
        if out[0].shape != shape:
            raise ValueError(
                f"non-broadcastable output operand with shape {out[0].shape} doesn't match "
                f"the broadcast shape {shape}"
            )
    elif not shape:
        target = SCALAR
    else:
        lead = next((x for x in distributed if x.ndim), None)
        if lead is None:
            target = Distribution.create(shape, nranks=backend.nranks)
        else:
            target = broadcast_distribution(lead.distribution, shape)
    return backend, target, shape


def local_operands(operands, target: Distribution, backend) -> list[dict]:
    """Each operand as rank -> local value aligned with `target`."""
    from .redistribution import align

    ranks = backend.local_ranks
    result = []
    for x in operands:
        if _distributed(x):
            if x.ndim == 0:
                result.append(dict.fromkeys(ranks, x._locals[ranks[0]][()]))
            else:
                result.append(align(x, target))
        elif isinstance(x, np.ndarray) and x.ndim:
            if target.ndim == 0:
                result.append(dict.fromkeys(ranks, x))
            else:
                result.append({r: _slice_numpy(x, target, r) for r in ranks})
        else:
            result.append(dict.fromkeys(ranks, x))
    return result


def _normalize_out(out):
    if out is None:
        return ()
    out = out if isinstance(out, tuple) else (out,)
    for o in out:
        if not _distributed(o):
            raise TypeError(
                f"out= must be DistributedArrays when an operand is distributed, got "
                f"{type(o).__name__} (writing into a NumPy array would gather)"
            )
    return out


def _interiors_for_out(out, operands):
    """`out` and `operands` as interiors when `out` has a halo the operands do not share."""
    dist = out[0].distribution
    if not dist.is_padded:
        return out, operands
    same = all(o.distribution == dist for o in out) and all(
        x.distribution == dist for x in operands if _distributed(x) and x.ndim
    )
    if same:
        return out, operands
    return (
        tuple(o.interior for o in out),
        [x.interior if _distributed(x) else x for x in operands],
    )


def _call(ufunc, inputs, kwargs):
    if "out" not in kwargs and "where" not in kwargs:
        fast = _same_layout_fast_path(ufunc, inputs, kwargs)
        if fast is not None:
            return fast
    out = _normalize_out(kwargs.pop("out", None))
    where = kwargs.pop("where", True)
    inputs = [np.asarray(x) if isinstance(x, (list, tuple)) else x for x in inputs]
    has_where = where is not True
    if has_where and isinstance(where, (list, tuple)):
        where = np.asarray(where)
    operands = [*inputs, where] if has_where else inputs
    given_out = out
    if out:
        out, operands = _interiors_for_out(out, operands)
    backend, target, _ = result_layout(operands, out)
    if out and len(out) != ufunc.nout:
        raise ValueError(f"{ufunc.__name__} has {ufunc.nout} outputs, got {len(out)} in out=")
    aligned = local_operands(operands, target, backend)
    where_blocks = aligned.pop() if has_where else None
    args = {r: [a[r] for a in aligned] for r in backend.local_ranks}
    out_blocks = [o._locals for o in out] if out else None
    wrapped = blockwise(ufunc, args, kwargs, ufunc.nout, target, backend, out_blocks, where_blocks)
    if out:
        return given_out if len(given_out) > 1 else given_out[0]
    return wrapped if ufunc.nout > 1 else wrapped[0]


def blockwise(func, args, kwargs, nout, target, backend, out=None, where=None) -> tuple:
    """``func(*args[r], **kwargs)`` on every local rank: the `nout` results laid out by `target`.

    `out` (``{rank: block}`` dicts, one per output) and `where` (one such
    dict) give each rank's ``out=`` and ``where=`` blocks.
    """
    results = {}
    for r in backend.local_ranks:
        kw = dict(kwargs)
        if out:
            kw["out"] = tuple(o[r] for o in out)
        if where is not None:
            kw["where"] = where[r]
        res = func(*args[r], **kw)
        results[r] = res if isinstance(res, tuple) else (res,)
    return tuple(
        new_array(target, {r: np.asarray(results[r][i]) for r in results}, backend)
        for i in range(nout)
    )


def apply_ufunc(ufunc, method, inputs, kwargs):
    """Entry point of ``DistributedArray.__array_ufunc__``."""
    out = kwargs.get("out") or ()
    for x in (*inputs, *(out if isinstance(out, tuple) else (out,))):
        handler = getattr(type(x), "__array_ufunc__", None)
        if handler is not None and not _distributed(x) and not isinstance(x, np.ndarray):
            return NotImplemented  # NEP 13: let the other type decide
    if method == "__call__" and ufunc.signature is not None:
        return array_method("gufunc")(ufunc, inputs, dict(kwargs))
    if method == "__call__":
        return _call(ufunc, inputs, dict(kwargs))
    if method in ("reduce", "accumulate", "outer", "at", "reduceat"):
        return array_method(f"ufunc.{method}")(ufunc, *inputs, **kwargs)
    return NotImplemented
