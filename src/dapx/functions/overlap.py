"""`map_overlap`: a function applied to every rank's block extended by its neighbours' cells.

dask's ``map_overlap`` on distributed arrays: each input is laid out with a
halo as deep as `depth` (`dapx.core.halos`), its ghost cells are filled by one
halo update under the given boundary condition, and `func` runs on each
local rank's extended block; its results, trimmed by `depth` (or kept as
the halo with ``trim=False``), form the distributed result.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping

import numpy as np

from ..core.array import new_array
from ..core.elision import ELISION_ENABLED
from ..core.guard import collective
from ..errors import DAPError
from ..exchange.halo import (
    boundary_kinds,
    halo_plan,
    interior_distribution,
    interior_key,
    run_halo_plan,
)
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap
from ..layout.spec import by_axis

__all__ = ["map_overlap"]


def _depths(depth, ndim: int) -> list[tuple[int, int]]:
    """dask's depth: an int, one entry per axis, or a dict by axis; entries int or (lo, hi)."""
    if depth is None:
        entries = [0] * ndim
    elif isinstance(depth, Mapping):
        entries = [0] * ndim
        for axis, d in by_axis(depth, ndim, "depth").items():
            entries[axis] = d
    elif isinstance(depth, (int, np.integer)) and not isinstance(depth, bool):
        entries = [depth] * ndim
    elif isinstance(depth, (tuple, list)):
        if len(depth) != ndim:
            raise ValueError(f"depth needs one entry per axis ({ndim}), got {depth!r}")
        entries = list(depth)
    else:
        raise TypeError(f"depth must be an int, a tuple or a dict by axis, got {depth!r}")
    out = []
    for k, d in enumerate(entries):
        pair = (d, d) if np.ndim(d) == 0 else tuple(d)
        if len(pair) != 2 or any(
            isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 0 for w in pair
        ):
            raise ValueError(f"axis {k}: depth must be an int >= 0 or a (lo, hi) pair, got {d!r}")
        out.append((int(pair[0]), int(pair[1])))
    return out


@functools.lru_cache(maxsize=256)
def _overlap_layout(dist: Distribution, widths: tuple[int, ...]) -> Distribution:
    """`dist`'s blocks with a symmetric halo of `widths` (ghost edges) on every dimension."""
    maps = []
    for k, (m, w) in enumerate(zip(dist.maps, widths)):
        if not w and not (isinstance(m, BlockMap) and m.is_padded):
            maps.append(m)
            continue
        if isinstance(m, BlockMap):
            bounds, periodic = m.bounds, m.periodic
        else:
            bounds, periodic = None, False  # cyclic or unstructured: an even block instead
        try:
            maps.append(
                BlockMap(
                    m.size,
                    bounds,
                    nprocs=m.nprocs,
                    padding=np.full((m.nprocs, 2), w),
                    periodic=periodic,
                    ghost_edges=True,
                )
            )
        except DAPError as e:
            raise ValueError(
                f"map_overlap: depth {w} on axis {k} does not fit the blocks "
                f"{np.diff(BlockMap(m.size, bounds, nprocs=m.nprocs).bounds).tolist()} of that "
                f"axis ({e}); use fewer ranks along it or a smaller depth"
            ) from None
    return Distribution(maps, dist.grid)


@functools.lru_cache(maxsize=1024)
def _overlap_keys(dist: Distribution, rank: int, depths: tuple, kinds: tuple):
    """The part of `rank`'s padded buffer `func` sees, and the trim of its result.

    Along a dimension with boundary "none", a block at a non-periodic domain
    edge gets no ghost cells on that side (as in dask).
    """
    view, trim = [], []
    for m, c, (lo, hi), kind in zip(dist.maps, dist.coords(rank), depths, kinds):
        n = m.local_length(c)
        if not isinstance(m, BlockMap):
            view.append(slice(0, n))
            trim.append(slice(None))
            continue
        glo, ghi = m.ghost_widths(c)
        edge_lo = kind == "none" and not m.periodic and c == 0
        edge_hi = kind == "none" and not m.periodic and c == m.nprocs - 1
        lo, hi = (0 if edge_lo else lo), (0 if edge_hi else hi)
        view.append(slice(glo - lo, n - ghi + hi))
        trim.append(slice(lo, lo + m.num_owned(c)))
    return tuple(view), tuple(trim)


def _spare_room(x, target: Distribution):
    """`x` laid out by `target` without a copy, when its blocks have spare halo room; else None.

    A ``trim=True`` result of `map_overlap` keeps, as each local block, the
    interior view of `func`'s padded output. When every block of `x` is the
    interior (by `target`) of a writeable buffer of `target`'s block shape that
    nothing but that block references, the halos of those buffers are not
    visible to anyone: the buffers themselves are `x` laid out by `target`,
    whose ghost cells the caller then fills in place. Only where reference
    counts are exact (`dapx.core.elision`).
    """
    if not ELISION_ENABLED or x.distribution != interior_distribution(target):
        return None
    local = x.locals
    if not local:  # a handle of blocks held elsewhere
        return None
    buffers = {}
    for r in local:
        block = local[r]
        buf = block.base
        if (
            type(buf) is not np.ndarray
            or not buf.flags.owndata
            or not buf.flags.writeable
            or buf.dtype != block.dtype
            or buf.shape != target.local_shape(r)
        ):
            return None
        inner = buf[interior_key(target, r)]
        same = (
            inner.shape == block.shape
            and inner.strides == block.strides
            and inner.__array_interface__["data"][0] == block.__array_interface__["data"][0]
        )
        del inner, block
        # `block.base`, `buf` here and getrefcount's argument: more means someone else
        # (another view, or an array whose block is the buffer) can see the halo.
        if not same or sys.getrefcount(buf) > 3:
            return None
        buffers[r] = buf
    return new_array(target, buffers, x.backend, x.dtype)


_DASK_ONLY = ("chunks", "drop_axis", "new_axis", "align_arrays", "allow_rechunk", "meta")


@collective
def map_overlap(
    func: Callable, *arrays, depth=None, boundary=None, trim: bool = True, dtype=None, **kwargs
):
    """Apply `func` to every rank's block extended by `depth` neighbouring cells.

    The same semantics and signature as ``dask.array.map_overlap``: the
    blocks of each array are extended by `depth` cells copied from the
    neighbouring blocks (or made by `boundary` at the domain edges), `func`
    is called on the extended blocks of all arrays (plus `kwargs`), must
    return a block of the same shape, and the results, trimmed by `depth`,
    form the distributed result.

    Parameters
    ----------
    func : callable
        ``func(*blocks, **kwargs) -> ndarray`` of the blocks' shape.
    *arrays : DistributedArray
        Arrays of the same shape; the first one's block layout is used
        (the others are aligned to it). An input already laid out with a
        halo of exactly `depth` is used in place: its halo is updated, no
        copy is made. So is the trimmed result of an earlier call whose
        `func` returned a new padded block, when nothing else holds that
        block (``u = map_overlap(func, u, ...)`` in a loop): its halo is
        refilled in place.
    depth : int, tuple or dict, optional
        Ghost cells per side: one int, one entry per axis, or a dict by
        axis; an entry may be a ``(lo, hi)`` pair. Default 0.
    boundary : str, number, tuple or dict, optional
        ``"none"`` (default: a block at the domain edge gets no ghost cells
        there), ``"reflect"``, ``"nearest"``, ``"periodic"`` or a constant;
        one for every axis, a tuple per axis or a dict by axis. Periodic
        dimensions of the layout always wrap.
    trim : bool
        Trim the ghost cells off `func`'s results (default).
    dtype : dtype, optional
        The dtype of the result; default: that of `func`'s output.

    Returns
    -------
    DistributedArray
        With the first array's blocks and no halo; with ``trim=False``, an
        array of the same shape whose halo of `depth` holds the untrimmed
        results.

    Notes
    -----
    # Note: dask rechunks when `depth` exceeds a chunk; here `depth` must
    # fit each neighbour's block (a clear error says otherwise). With
    # ``trim=False`` dask concatenates the extended blocks into a larger
    # array; dapx keeps them as the halo of an array of the domain's shape.
    # Inputs must have one shape (dask also broadcasts blocks), and
    # ``chunks``, ``drop_axis``, ``new_axis`` are not supported: `func`
    # returns a block of the shape it was given.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.array([1, 1, 2, 3, 3, 3, 2, 1, 1])
    >>> a = dapx.asarray(x, backend=dapx.simulated(2))
    >>> def derivative(x):
    ...     return x - np.roll(x, 1)
    >>> dapx.map_overlap(derivative, a, depth=1, boundary=0).gather()
    array([ 1,  0,  1,  1,  0,  0, -1, -1,  0])
    """
    from ..core.array import DistributedArray, new_array

    if not callable(func):
        raise TypeError(f"the first argument must be a callable, got {type(func).__name__}")
    bad = [k for k in kwargs if k in _DASK_ONLY]
    if bad:
        raise TypeError(
            f"map_overlap does not support {bad}: func must return a block of the shape it is given"
        )
    if not arrays:
        raise TypeError("map_overlap needs at least one array")
    lead = next((x for x in arrays if isinstance(x, DistributedArray)), None)
    if lead is None:
        raise TypeError("map_overlap needs at least one DistributedArray")
    if not lead.ndim:
        raise ValueError("map_overlap needs arrays with at least one dimension")
    shapes = [x.shape if isinstance(x, DistributedArray) else np.shape(x) for x in arrays]
    if any(s != lead.shape for s in shapes):
        raise ValueError(f"map_overlap needs arrays of one shape, got {shapes}")
    depths = _depths(depth, lead.ndim)
    widths = tuple(max(p) for p in depths)
    base = interior_distribution(lead.distribution)
    target = _overlap_layout(base, widths)
    if isinstance(boundary, tuple):
        boundary = dict(enumerate(boundary))
    kinds, values = boundary_kinds(boundary, target)
    backend = lead.backend
    prepared = []
    for x in arrays:
        if not isinstance(x, DistributedArray):
            from ..core.creation import asarray

            x = asarray(x, dist=base, backend=backend)
        if x.distribution != target:
            padded = _spare_room(x, target) if target.is_padded else None
            x = x.redistribute(target) if padded is None else padded
        if target.is_padded:
            plan = halo_plan(target, kinds, backend.local_ranks)
            run_halo_plan(plan, x.locals, x.dtype, backend, values)
        prepared.append(x)
    results = {}
    for r in backend.local_ranks:
        view, cut = _overlap_keys(target, r, tuple(depths), kinds)
        blocks = [x.locals[r][view] for x in prepared]
        out = np.asarray(func(*blocks, **kwargs))
        if out.shape != blocks[0].shape:
            raise ValueError(
                f"map_overlap: func returned shape {out.shape} for a block of shape "
                f"{blocks[0].shape} (rank {r}); it must return a block of the same shape"
            )
        if dtype is not None:
            out = out.astype(dtype, copy=False)
        if trim:
            results[r] = out[cut]
        elif (
            out.shape == target.local_shape(r)
            and out.flags.c_contiguous
            and out.flags.writeable
            and not any(np.may_share_memory(out, b) for b in blocks)
        ):
            results[r] = out  # func's own new block is the padded block: no copy
        else:
            full = np.zeros(target.local_shape(r), out.dtype)
            full[view] = out
            results[r] = full
    dtypes = backend.allgather({r: b.dtype.str for r, b in results.items()})
    if len(set(dtypes)) != 1:
        raise TypeError(
            f"map_overlap: func returned different dtypes on different ranks ({dtypes}, in "
            "rank order); pass dtype="
        )
    dist = interior_distribution(target) if trim else target
    return new_array(dist, results, backend, np.dtype(dtypes[0]))
