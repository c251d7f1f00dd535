"""The engine of reductions: per-rank partials combined in rank order.

`reduce_blocks` reduces the blocks of one or more operands laid out by a
`Distribution`:

* each rank reduces the elements it *owns* along the reduced axes (padding
  and shared copies left out, owned indices in ascending global order), with
  ``keepdims``;
* a full reduction gathers the per-rank partials (as bytes, see
  `dapx.functions.small_partials`) and combines them strictly in rank order;
* a partial reduction over undistributed axes stays local and keeps the
  other dimensions' maps;
* a partial reduction over distributed axes is a reduce-scatter through the
  one exchange mechanism (`dapx.exchange.plans`): the partials are viewed as an array
  whose reduced dimensions are *slot* dimensions as long as the grid along
  them (each rank holds the slot of its grid coordinate), redistributed so
  that slot dimensions are whole on every rank and the other dimensions are
  spread over all ranks, and the slots are folded in order.

A result therefore depends only on the data and the grid: two runs with the
same grid give bitwise identical answers. `dapx.exchange.whole_axes.move_axes` is the
other tool: it makes reduced axes whole on every rank (for folds that cannot
be reordered, and for medians and quantiles), moving only 1-D slices.
Metadata is computed once per distribution (`functools.lru_cache`).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..core.array import SCALAR, DistributedArray, new_array
from ..core.guard import backend_of
from ..core.redistribution import align
from ..exchange.execute import Blocks, run_plan
from ..exchange.plans import exchange_plan, simplify_index
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap, UnstructuredMap
from .small_partials import gather_values

__all__ = [
    "Axis",
    "Blocks",
    "Layout",
    "NoValue",
    "Spec",
    "accumulate_dtype",
    "any_true",
    "as_distributed",
    "drop",
    "emit_warnings",
    "flag",
    "from_replicated",
    "full_reduction",
    "gather_values",
    "given",
    "layout",
    "ones_distribution",
    "owned_only",
    "reduce_blocks",
    "reduce_dtype",
    "reduced_axes",
    "reorderable",
    "scalar_call",
    "select",
    "shared_warnings",
    "single_out",
    "spmd_warnings",
    "store",
    "where_blocks",
]

#: NumPy's "not given" default, shared with NumPy's signatures.
NoValue = np._NoValue
#: An ``axis`` argument: None, an int, or a tuple of ints.
Axis = Any


# -- small helpers ---------------------------------------------------------------------------------
def given(x) -> bool:
    """Whether an optional argument was given (neither None nor NumPy's ``NoValue``)."""
    return x is not None and x is not NoValue


def flag(x) -> bool:
    """A boolean option that may be NumPy's ``NoValue`` (meaning False)."""
    return False if x is NoValue else builtins.bool(x)


@functools.lru_cache(maxsize=1024)
def reduced_axes(axis, ndim: int) -> tuple[int, ...]:
    """Sorted non-negative axes; None means all. Raises NumPy's errors."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(normalize_axis_tuple(axis, ndim)))


def single_out(out):
    """``out`` as one array or None (ufunc methods pass a 1-tuple)."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"expected one output array, got {len(out)}")
        out = out[0]
    return out


def as_distributed(x, *others) -> DistributedArray:
    """The owned elements of `x` (see `owned_only`); array-like `x` is first distributed on
    the backend of the first DistributedArray in `others` (each rank copies its own part of
    `x`, which every process already has)."""
    if isinstance(x, DistributedArray):
        return owned_only(x)
    for o in others:
        if isinstance(o, DistributedArray):
            from ..core.creation import asarray

            return owned_only(asarray(x, backend=o.backend))
    raise TypeError(f"expected a DistributedArray, got {type(x).__name__}")


@functools.lru_cache(maxsize=256)
def _owned_layout(dist: Distribution, ranks: tuple[int, ...]):
    maps, changed = [], []
    for k, m in enumerate(dist.maps):
        if isinstance(m, BlockMap) and m.is_padded:
            maps.append(BlockMap(m.size, m.bounds))
        elif isinstance(m, UnstructuredMap) and not m.one_to_one:
            owned = [m.owned_indices(c) for c in range(m.nprocs)]
            maps.append(UnstructuredMap(m.size, owned, one_to_one=True))
        else:
            maps.append(m)
            continue
        changed.append(k)
    if not changed:
        return None
    ops = {}
    for r in ranks:
        coords = dist.coords(r)
        sel = []
        for k in changed:
            m, c = dist.maps[k], coords[k]
            owned = m.owned_indices(c)
            pos = m.owner(owned)[1] if owned.size else owned
            sel.append((k, simplify_index(pos)))
        ops[r] = tuple(sel)
    return Distribution(maps, dist.grid), ops


def owned_only(a: DistributedArray) -> DistributedArray:
    """`a` without padding and without the copies of shared unstructured indices.

    Reductions, scans and statistics work on owned elements only, so their
    results never hold halo or shared copies (which nothing would keep
    consistent). Returns `a` itself when it has neither.
    """
    if not a.ndim:
        return a
    owned = _owned_layout(a.distribution, a.backend.local_ranks)
    if owned is None:
        return a
    dist, ops = owned
    return new_array(dist, {r: select(b, ops[r]) for r, b in a.locals.items()}, a.backend, a.dtype)


def full_reduction(a: DistributedArray) -> tuple[DistributedArray, Layout]:
    """`owned_only(a)` and the `Layout` of reducing it over all its axes (``a.ndim > 0``).

    The hot path of full reductions: both are per-distribution metadata, found
    here in one cached lookup instead of three.
    """
    backend = a.backend
    owned, lay = _full_layout(a.distribution, backend.local_ranks, backend.nranks)
    if owned is not None:
        dist, ops = owned
        blocks = {r: select(b, ops[r]) for r, b in a.locals.items()}
        a = new_array(dist, blocks, backend, a.dtype)
    return a, lay


@functools.lru_cache(maxsize=256)
def _full_layout(dist: Distribution, ranks: tuple[int, ...], nranks: int):
    owned = _owned_layout(dist, ranks)
    reduced = dist if owned is None else owned[0]
    return owned, _layout(reduced, tuple(range(reduced.ndim)), ranks, nranks)


def from_replicated(value: np.ndarray, backend) -> DistributedArray:
    """A small array known on every process, laid out over all ranks (no communication)."""
    value = np.asarray(value)
    if not value.ndim:
        blocks = dict.fromkeys(backend.local_ranks, value)
        return new_array(SCALAR, blocks, backend, copy_scalars=True)
    from ..core.creation import asarray

    return asarray(value, backend=backend)


def where_blocks(where, a: DistributedArray) -> Blocks | None:
    """A ``where=`` mask aligned with `a` and broadcast to its local blocks, or None."""
    if where is True or where is NoValue or (isinstance(where, np.bool_) and where):
        return None
    from ..core.elementwise import local_operands

    if isinstance(where, (list, tuple)):
        where = np.asarray(where)
    shape = where.shape if isinstance(where, DistributedArray) else np.shape(where)
    if np.broadcast_shapes(shape, a.shape) != a.shape:
        raise ValueError(
            f"where= of shape {shape} does not broadcast to the array's shape {a.shape}"
        )
    aligned = local_operands([where], a.distribution, a.backend)[0]
    return {r: np.broadcast_to(aligned[r], b.shape) for r, b in a.locals.items()}


def store(result: DistributedArray, out, casting: str = "unsafe"):
    """Copy `result` into ``out`` (any layout) and return it; no-op without ``out``.

    NumPy's reductions compute in their own dtype and cast into ``out``
    unsafely; so does this by default.
    """
    out = single_out(out)
    if out is None:
        return result
    ranks = result.backend.local_ranks
    if isinstance(out, np.ndarray) and not isinstance(out, DistributedArray):
        if result.ndim:
            raise TypeError(
                "out= must be a DistributedArray for a distributed result (writing into a "
                "NumPy array would gather it)"
            )
        np.copyto(out, result.locals[ranks[0]], casting=casting)
        return out
    if not isinstance(out, DistributedArray):
        raise TypeError(f"out= must be a DistributedArray, got {type(out).__name__}")
    if out.shape != result.shape:
        raise ValueError(f"out= has shape {out.shape} but the result has shape {result.shape}")
    if out.backend != result.backend:
        raise ValueError(f"out= lives on {out.backend}, the result on {result.backend}")
    if out.distribution == result.distribution or not result.ndim:
        blocks = result.locals
    else:
        blocks = align(result, out.distribution)
    targets = out.locals
    for r in ranks:
        np.copyto(targets[r], blocks[r], casting=casting)
    return out


def scalar_call(func: Callable, a: DistributedArray, out=None, casting="unsafe", **kwargs):
    """`func` on the replicated value of 0-d `a` (the same on every rank), no communication.

    DistributedArrays among `kwargs` (``where=``, ``mean=``) must be 0-d too and
    are passed as their (replicated) value. A result with dimensions (quantiles
    of a scalar) is small and known everywhere; it is laid out over all ranks.
    """
    for k, v in kwargs.items():
        if isinstance(v, DistributedArray):
            if v.ndim:
                raise ValueError(f"{k}= of shape {v.shape} does not broadcast to shape ()")
            kwargs[k] = v.locals[v.backend.local_ranks[0]]
    blocks = {r: np.asarray(func(b, **kwargs)) for r, b in a.locals.items()}
    first = blocks[a.backend.local_ranks[0]]
    if first.ndim:  # e.g. quantiles of a scalar: small, known on every process
        return store(from_replicated(first, a.backend), out, casting)
    return store(new_array(SCALAR, blocks, a.backend, copy_scalars=True), out, casting)


_sharing = 0  # > 0 inside a shared_warnings block (inner blocks do not share again)


def emit_warnings(everyone) -> None:
    """Emit, in rank order and once each, the (category, message) pairs of every rank.

    # Note: a warning NumPy would repeat (two invalid divisions) is shown once.
    """
    done = set()
    for seen in everyone:
        for item in seen:
            if item not in done:
                done.add(item)
                warnings.warn(item[1], item[0], stacklevel=4)


@contextlib.contextmanager
def shared_warnings(backend):
    """Every rank shows the warnings that any rank raised inside the block.

    NumPy's warnings (an empty slice, an invalid division, ...) arise only on
    the ranks whose blocks trigger them; under MPI, with warnings turned into
    errors, the other ranks would carry on alone. Inside the block warnings
    are recorded; at its end every rank says whether it recorded any (one
    flag each, `Backend.allgather_array`, no pickle) and only when some rank
    did, one allgather shares them and every rank emits the union,
    deduplicated, under the user's filters. Nested blocks share once, at the
    outermost. An exception skips the sharing and propagates.
    """
    global _sharing
    if _sharing:
        yield
        return
    _sharing += 1
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        _sharing -= 1
    seen = [(w.category, str(w.message)) for w in caught]
    flags = backend.allgather_array(dict.fromkeys(backend.local_ranks, np.bool_(bool(seen))))
    if flags.any():
        emit_warnings(backend.allgather(dict.fromkeys(backend.local_ranks, seen)))


def spmd_warnings(func: Callable) -> Callable:
    """Decorator: run `func` inside `shared_warnings` on its arrays' backend."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        backend = None if _sharing else backend_of(args, kwargs, default=False)
        if backend is None:
            return func(*args, **kwargs)
        with shared_warnings(backend):
            return func(*args, **kwargs)

    return wrapper


def any_true(blocks: Mapping[int, np.ndarray], backend) -> bool:
    """Whether any element of any rank's block is true (collective; one flag each, as bytes)."""
    flags = {r: np.any(b, axis=None).astype(np.bool_) for r, b in blocks.items()}
    return builtins.bool(backend.allgather_array(flags).any())


@functools.lru_cache(maxsize=256)
def reorderable(ufunc: np.ufunc, dtype: np.dtype) -> bool:
    """Whether `ufunc` reductions may be reordered (NumPy's own test)."""
    try:
        ufunc.reduce(np.zeros((1, 1), dtype), axis=(0, 1))
    except ValueError as e:
        if "reorderable" in str(e):
            return False
    except Exception:  # the real call raises NumPy's own error
        pass
    return True


@functools.lru_cache(maxsize=512)
def reduce_dtype(ufunc: np.ufunc, in_dtype: np.dtype, dtype) -> np.dtype:
    """The dtype of ``ufunc.reduce`` on `in_dtype` data (NumPy's own resolution)."""
    return ufunc.reduce(np.zeros(1, in_dtype), dtype=dtype).dtype


@functools.lru_cache(maxsize=512)
def accumulate_dtype(ufunc: np.ufunc, in_dtype: np.dtype, dtype) -> np.dtype:
    """The dtype of ``ufunc.accumulate`` on `in_dtype` data."""
    return ufunc.accumulate(np.zeros(1, in_dtype), dtype=dtype).dtype


def select(block: np.ndarray, ops: tuple) -> np.ndarray:
    """`block` indexed along some axes: `ops` holds ``(axis, slice or index array)`` pairs."""
    for k, idx in ops:
        if isinstance(idx, slice):
            block = block[(slice(None),) * k + (idx,)]
        else:
            block = block.take(idx, axis=k)
    return block


def _squeeze(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return x.reshape([n for k, n in enumerate(x.shape) if k not in axes])


# -- cached metadata -------------------------------------------------------------------------------
def ones_distribution(ndim: int, nranks: int) -> Distribution:
    """Shape ``(1,) * ndim`` over `nranks` ranks (rank 0 holds the element)."""
    return _ones_distribution(ndim, nranks)


@functools.lru_cache(maxsize=64)
def _ones_distribution(ndim, nranks):
    if ndim == 0:
        return SCALAR
    return Distribution((BlockMap(1, nprocs=nranks), *(BlockMap(1, nprocs=1),) * (ndim - 1)))


def drop(maps: Sequence, axes: tuple[int, ...], keepdims: bool) -> Distribution:
    """The distribution of `maps` with `axes` removed (or kept as undistributed size 1)."""
    if keepdims:
        return Distribution([BlockMap(1, nprocs=1) if k in axes else m for k, m in enumerate(maps)])
    return Distribution([m for k, m in enumerate(maps) if k not in axes])


class Layout:
    """What reducing `dist` over `axes` needs, computed once per distribution (cached).

    Attributes
    ----------
    sel : dict
        Per local rank, the indexing that keeps only owned positions along the
        reduced dimensions, sorted by global index (empty when the block is
        already that).
    glob : dict
        Per local rank, the sorted owned global indices of each reduced dimension.
    dist_axes : tuple
        The reduced axes that are distributed (``nprocs > 1``).
    count : int
        Number of elements each result element reduces.
    empty : bool
        Whether some rank owns nothing along a reduced distributed axis (then
        reductions without an identity mark such partials as absent).
    plan, slots
        For reductions over distributed axes: the exchange plan from the slot
        layout of the partials to the target layout, and the index of each slot
        in fold order (None otherwise).
    result : dict
        The result distribution for ``keepdims`` False and True.
    """

    __slots__ = (
        "axes",
        "count",
        "dist_axes",
        "empty",
        "full",
        "glob",
        "plan",
        "result",
        "sel",
        "shape",
        "slots",
    )

    def __init__(self, dist: Distribution, axes: tuple[int, ...], ranks, nranks: int):
        maps = dist.maps
        self.axes = axes
        self.shape = dist.global_shape
        self.full = len(axes) == dist.ndim
        self.count = math.prod(self.shape[k] for k in axes)
        self.sel, self.glob = {}, {}
        for r in ranks:
            coords = dist.coords(r)
            ops, glob = [], []
            for k in axes:
                m, c = maps[k], coords[k]
                owned = m.owned_indices(c)
                g = np.sort(owned)
                pos = m.owner(g)[1] if g.size else g
                if pos.size != m.local_length(c) or not np.array_equal(pos, np.arange(pos.size)):
                    ops.append((k, simplify_index(pos)))
                glob.append(g)
            self.sel[r] = tuple(ops)
            self.glob[r] = tuple(glob)
        self.dist_axes = tuple(k for k in axes if maps[k].nprocs > 1)
        self.empty = builtins.any(
            maps[k].num_owned(c) == 0 for k in self.dist_axes for c in range(maps[k].nprocs)
        )
        self.plan = self.slots = None
        if self.full:
            self.result = {False: SCALAR, True: ones_distribution(dist.ndim, nranks)}
        elif not self.dist_axes:
            self.result = {False: drop(maps, axes, False), True: drop(maps, axes, True)}
        else:
            slot_maps = []
            for k, m in enumerate(maps):
                if k in self.dist_axes:
                    slot_maps.append(BlockMap(m.nprocs, nprocs=m.nprocs))
                elif k in axes:
                    slot_maps.append(BlockMap(1, nprocs=1))
                else:
                    slot_maps.append(m)
            slots = Distribution(slot_maps, dist.grid)
            ndim = dist.ndim
            target = Distribution.create(
                slots.global_shape,
                dist=["n" if k in axes else "b" for k in range(ndim)],
                grid=[1 if k in axes else 0 for k in range(ndim)],
                nranks=nranks,
            )
            self.plan = exchange_plan(slots, target, tuple(ranks))
            counts = [maps[k].nprocs for k in self.dist_axes]
            self.slots = []
            for s in np.ndindex(*counts):
                key = [slice(None)] * ndim
                for j, k in enumerate(self.dist_axes):
                    key[k] = slice(s[j], s[j] + 1)
                self.slots.append(tuple(key))
            self.result = {
                False: drop(target.maps, axes, False),
                True: drop(target.maps, axes, True),
            }


@functools.lru_cache(maxsize=512)
def _layout(dist, axes, ranks, nranks):
    return Layout(dist, axes, ranks, nranks)


def layout(dist: Distribution, axes: tuple[int, ...], backend) -> Layout:
    """The cached `Layout` of reducing `dist` over `axes` on `backend`."""
    return _layout(dist, axes, backend.local_ranks, backend.nranks)


# -- the engine ------------------------------------------------------------------------------------
class Spec(NamedTuple):
    """How to reduce: per-rank partials and how two partials combine.

    ``partial(views, rank, layout, keepdims)`` returns a tuple of arrays from the
    owned views of the operands; ``combine(x, y)`` merges two such tuples
    elementwise, `x` coming first in rank order. ``empty`` gives the component
    dtypes when a rank with no elements cannot produce a partial (no identity),
    else None.
    """

    partial: Callable
    combine: Callable
    empty: tuple | None = None


def _masked(combine: Callable) -> Callable:
    """`combine` for tuples whose last component says whether the partial is present."""

    def f(x, y):
        xh, yh = x[-1], y[-1]
        merged = combine(x[:-1], y[:-1])
        both = xh & yh
        out = tuple(
            np.where(both, m, np.where(yh, b, a)) for m, a, b in zip(merged, x[:-1], y[:-1])
        )
        return (*out, xh | yh)

    return f


def reduce_blocks(
    dist: Distribution,
    backend,
    axes: tuple[int, ...],
    keepdims: bool,
    spec: Spec,
    operands: Sequence[Mapping[int, np.ndarray] | None],
) -> tuple[Distribution, dict[int, tuple]]:
    """Reduce `operands` (blocks laid out by `dist`) over `axes`.

    Parameters
    ----------
    dist : Distribution
        Layout of the operands; each operand maps local ranks to arrays of the
        local block shape (or None for an absent operand).
    axes : tuple of int
        Sorted reduced axes.
    spec : Spec
        Partials and how they combine.

    Returns
    -------
    (Distribution, dict)
        The result layout and, per local rank, the tuple of combined components.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.arange(12.).reshape(3, 4), dist=("b", "c"), grid=(2, 2),
    ...                  backend=dapx.simulated(4))
    >>> spec = Spec(lambda v, r, lay, keep: (np.add.reduce(v[0], axis=1, keepdims=keep),),
    ...             lambda x, y: (x[0] + y[0],))
    >>> d, parts = reduce_blocks(a.distribution, a.backend, (1,), False, spec, [a.locals])
    >>> d.global_shape, parts[0][0]
    ((3,), array([6.]))
    """
    lay = layout(dist, axes, backend)
    ranks = backend.local_ranks
    if lay.full:
        partials = {}
        for r in ranks:
            views = tuple(None if o is None else select(o[r], lay.sel[r]) for o in operands)
            if spec.empty is not None and views[0].size == 0:
                partials[r] = None
            else:
                partials[r] = spec.partial(views, r, lay, False)
        # As `Backend.combine` does, but the partials (scalars) travel as bytes.
        present = [p for p in gather_values(backend, partials)[0] if p is not None]
        value = functools.reduce(spec.combine, present) if present else None
        if value is None:
            raise ValueError("zero-size array to a reduction operation which has no identity")
        res = lay.result[keepdims]
        if keepdims:
            return res, {
                r: tuple(np.full(res.local_shape(r), v, np.asarray(v).dtype) for v in value)
                for r in ranks
            }
        return res, {r: tuple(np.array(v) for v in value) for r in ranks}
    parts = {}
    masked = spec.empty is not None and lay.empty
    for r in ranks:
        views = tuple(None if o is None else select(o[r], lay.sel[r]) for o in operands)
        if not masked:
            parts[r] = spec.partial(views, r, lay, True)
            continue
        shape = tuple(1 if k in axes else n for k, n in enumerate(views[0].shape))
        present = builtins.all(views[0].shape[k] for k in axes)
        if present:
            p = spec.partial(views, r, lay, True)
        else:
            p = tuple(np.zeros(shape, t) for t in spec.empty)
        parts[r] = (*p, np.full(shape, present))
    if lay.plan is None:  # nothing to combine across ranks
        res = lay.result[keepdims]
        if keepdims:
            return res, parts
        return res, {r: tuple(_squeeze(c, axes) for c in p) for r, p in parts.items()}
    ncomp = len(parts[ranks[0]])
    moved = [
        run_plan(lay.plan, {r: parts[r][i] for r in ranks}, parts[ranks[0]][i].dtype, backend)
        for i in range(ncomp)
    ]
    combine = _masked(spec.combine) if masked else spec.combine
    result = {}
    for r in ranks:
        acc = None
        for key in lay.slots:
            item = tuple(m[r][key] for m in moved)
            acc = item if acc is None else combine(acc, item)
        if masked:
            acc = acc[:-1]
        result[r] = acc if keepdims else tuple(_squeeze(c, axes) for c in acc)
    return lay.result[keepdims], result
