"""Computations that read neighbouring elements: sliding windows and gradients.

`numpy.lib.stride_tricks.sliding_window_view` and `numpy.gradient` (what
xarray's ``rolling`` and ``differentiate`` call) need, for each output
element, a few input elements on either side along some axes. Both work the
same way here: along those axes the result has a block layout (the input's
own blocks when the axis is block distributed), and one exchange brings
each rank its input block *extended* by the neighbours' boundary elements,
described by an unstructured map whose ranges overlap between neighbours.
Each rank then computes its block with NumPy alone. Only boundary elements
(and, for non-block axes, the elements that change rank) move: when the
extension fits the neighbours' blocks, by a halo update (`update_halos`)
of a padded copy, else by a general exchange (`dapx.exchange.plans`).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple
from numpy.lib.stride_tricks import sliding_window_view as _np_sliding_window_view

from ..core.array import DistributedArray, new_array
from ..core.dispatch import implements
from ..errors import DAPError
from ..exchange.execute import run_plan
from ..exchange.plans import exchange_plan
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap, Map, UnstructuredMap, even_bounds
from .shaping import _clean_map

__all__ = ["extended_blocks", "gradient", "sliding_window_view"]


# -- the extended-block exchange -------------------------------------------------------------------


def _block_bounds(m: Map) -> np.ndarray:
    """The owned boundaries of `m` if it is a block map, else an even block split."""
    m = _clean_map(m)
    if isinstance(m, BlockMap):
        return np.asarray(m.bounds, dtype=np.intp)
    return even_bounds(m.size, m.nprocs)


def _extended_map(n: int, out_bounds: np.ndarray, lo: int, hi: int) -> Map:
    """Grid rank ``c`` holds input ``[ob[c] - lo, ob[c+1] + hi)`` clipped to ``[0, n)``.

    Ranks with an empty output block hold nothing. Ranges overlap between
    neighbours, so the map is unstructured and not one-to-one.
    """
    if lo == hi == 0 and out_bounds[-1] == n:
        return BlockMap(n, out_bounds)
    ranges = []
    for c in range(out_bounds.size - 1):
        s, e = int(out_bounds[c]), int(out_bounds[c + 1])
        ranges.append(
            np.arange(max(s - lo, 0), min(e + hi, n), dtype=np.intp)
            if e > s
            else np.empty(0, np.intp)
        )
    return UnstructuredMap(n, ranges)


def extended_blocks(
    x: DistributedArray, spans: dict[int, tuple[np.ndarray, int, int]]
) -> tuple[dict[int, np.ndarray], Distribution]:
    """Each local rank's block of `x` extended by its neighbours' elements, in one exchange.

    Parameters
    ----------
    x : DistributedArray
    spans : dict
        ``axis -> (out_bounds, lo, hi)``: along `axis`, grid rank ``c`` gets
        the input indices ``[out_bounds[c] - lo, out_bounds[c + 1] + hi)``
        (clipped to the axis), where `out_bounds` are the block bounds of the
        result the caller computes. Other axes keep `x`'s (clean) layout.

    Returns
    -------
    blocks : dict
        Rank -> extended local block: a new array (or a view of one), or `x`'s
        own block when nothing has to move.
    dist : Distribution
        The layout of those blocks.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(8, backend=dapx.simulated(2))
    >>> blocks, _ = extended_blocks(a, {0: (np.array([0, 4, 8]), 1, 1)})
    >>> blocks[0], blocks[1]
    (array([0, 1, 2, 3, 4]), array([3, 4, 5, 6, 7]))
    """
    maps = [_clean_map(m) for m in x.distribution.maps]
    for axis, (out_bounds, lo, hi) in spans.items():
        maps[axis] = _extended_map(x.shape[axis], np.asarray(out_bounds), lo, hi)
    target = Distribution(maps, x.distribution.grid)
    if target == x.distribution:
        return dict(x.locals), target
    blocks = _through_halos(x, spans, target)
    if blocks is None:
        plan = exchange_plan(x.distribution, target, x.backend.local_ranks)
        blocks = run_plan(plan, x.locals, x.dtype, x.backend)
    return blocks, target


def _through_halos(x: DistributedArray, spans: dict, target: Distribution):
    """The extended blocks by a halo update, or None when the layout does not allow one.

    When every extended axis is block distributed and a halo as wide as the
    extension fits the neighbours' blocks, each rank copies its block once
    into a padded buffer and only the ghost cells travel (`update_halos`);
    the extended block is a view of that buffer. This halves the copying
    of a general exchange, which packs and unpacks every element.
    """
    inner = x.interior if x.distribution.is_padded else x
    dist = inner.distribution
    widths, starts = {}, {}
    for axis, (out_bounds, lo, hi) in spans.items():
        m = dist.maps[axis]
        if not isinstance(m, BlockMap) or m.is_padded:
            return None
        bounds, ob, n = m.bounds, np.asarray(out_bounds), m.size
        start, stop = np.clip(ob[:-1] - lo, 0, n), np.clip(ob[1:] + hi, 0, n)
        used = ob[1:] > ob[:-1]
        need = np.concatenate((bounds[:-1] - start, stop - bounds[1:]))[np.tile(used, 2)]
        widths[axis] = int(max(need.max(initial=0), 0))
        starts[axis] = start
    maps = list(dist.maps)
    for axis, w in widths.items():
        if w:
            m = maps[axis]
            try:
                maps[axis] = BlockMap(
                    m.size, m.bounds, padding=np.full((m.nprocs, 2), w), ghost_edges=True
                )
            except DAPError:  # a neighbour's block is narrower than the halo
                return None
    padded_dist = Distribution(maps, dist.grid)
    ranks = x.backend.local_ranks
    buffers = {r: np.empty(padded_dist.local_shape(r), x.dtype) for r in ranks}
    padded = new_array(padded_dist, buffers, x.backend, x.dtype)
    interior = padded.interior
    for r in ranks:
        interior.local(r)[...] = inner.local(r)
    padded.update_halos()
    blocks = {}
    for r in ranks:
        coords = dist.coords(r)
        key = [slice(None)] * x.ndim
        for axis, start in starts.items():
            c = coords[axis]
            length = target.maps[axis].local_length(target.coords(r)[axis])
            first = widths[axis] + int(start[c]) - int(dist.maps[axis].bounds[c])
            key[axis] = slice(first, first + length) if length else slice(0, 0)
        blocks[r] = buffers[r][tuple(key)]
    return blocks


def _along(ndim: int, axis: int, key) -> tuple:
    return (slice(None),) * axis + (key,)


# -- sliding_window_view ---------------------------------------------------------------------------


@implements(np.lib.stride_tricks.sliding_window_view)
def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """`numpy.lib.stride_tricks.sliding_window_view` of a DistributedArray.

    Along each windowed axis the result is block distributed, each window
    held by the rank that holds its *last* element in the input's block
    layout (so a trailing window over a padded axis, as xarray's ``rolling``
    builds, lands where its label is). One exchange brings each rank the
    ``window - 1`` input elements before its block; each rank then takes
    NumPy's strided view of its extended block, so the windows are not
    copied.

    # Note: the result is a read-only view of each rank's extended block (as
    # NumPy's is of the input), but the extended block is a new array: writing
    # through ``writeable=True`` does not change `x`.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(6.0, backend=dapx.simulated(2))
    >>> w = np.lib.stride_tricks.sliding_window_view(a, 3)
    >>> w.shape
    (4, 3)
    >>> w.sum(axis=-1).gather()
    array([ 3.,  6.,  9., 12.])
    """
    window_shape = tuple(window_shape) if isinstance(window_shape, Iterable) else (window_shape,)
    # NumPy's own checks and result shape, on a stand-in that holds no data.
    dummy = np.broadcast_to(np.empty((), np.int8), x.shape)
    shape = _np_sliding_window_view(dummy, window_shape, axis).shape
    if axis is None:
        axis = tuple(range(x.ndim))
    axes = normalize_axis_tuple(axis, x.ndim, allow_duplicate=True)
    window_shape = tuple(operator.index(w) for w in window_shape)
    backend = x.backend
    maps = list(x.distribution.maps)
    extra = [BlockMap(w, nprocs=1) for w in window_shape]
    if not math.prod(shape):
        # Nothing to compute: empty blocks of an even layout of the result.
        for k in set(axes):
            maps[k] = BlockMap(shape[k], nprocs=maps[k].nprocs)
        dist = Distribution([*(_clean_map(m) for m in maps), *extra])
        blocks = {r: np.empty(dist.local_shape(r), x.dtype) for r in backend.local_ranks}
        return new_array(dist, blocks, backend, x.dtype)
    spans = {}
    for k in sorted(set(axes)):
        reach = sum(w - 1 for w, a in zip(window_shape, axes) if a == k)
        bounds = _block_bounds(maps[k])
        out_bounds = np.clip(bounds - reach, 0, shape[k])
        spans[k] = (out_bounds, 0, reach)
        maps[k] = BlockMap(shape[k], out_bounds)
    blocks, _ = extended_blocks(x, spans)
    dist = Distribution([*(_clean_map(m) for m in maps), *extra])
    views = {}
    for r, block in blocks.items():
        local_shape = dist.local_shape(r)
        if math.prod(local_shape):
            views[r] = _np_sliding_window_view(
                block, window_shape, axes, subok=subok, writeable=writeable
            )
        else:  # an empty output block: its extended block may be too short for a window
            views[r] = np.empty(local_shape, x.dtype)
    return new_array(dist, views, backend, x.dtype)


# -- gradient --------------------------------------------------------------------------------------


def _spacings(f, varargs: Sequence, axes: tuple[int, ...]) -> list:
    """NumPy's parsing of gradient's spacing arguments: a scalar or 1-D differences per axis."""
    n = len(varargs)
    values = []
    for v in varargs:
        if isinstance(v, DistributedArray):
            if v.ndim:
                # Note: spacings are small 1-D coordinates; NumPy arrays are expected.
                raise TypeError(
                    f"np.gradient: pass the spacing of shape {v.shape} as a NumPy array, not "
                    "a DistributedArray (call .gather() on it)"
                )
            v = v.locals[v.backend.local_ranks[0]][()]
        values.append(v)
    if n == 0:
        return [1.0] * len(axes)
    if n == 1 and np.ndim(values[0]) == 0:
        return values * len(axes)
    if n != len(axes):
        raise TypeError("invalid number of arguments")
    dx = list(values)
    for i, distances in enumerate(dx):
        distances = np.asanyarray(distances)
        if distances.ndim == 0:
            continue
        if distances.ndim != 1:
            raise ValueError("distances must be either scalars or 1d")
        if len(distances) != f.shape[axes[i]]:
            raise ValueError(
                "when 1d, distances must match the length of the corresponding dimension"
            )
        if np.issubdtype(distances.dtype, np.integer):
            distances = distances.astype(np.float64)
        diffx = np.diff(distances)
        if (diffx == diffx[0]).all():
            diffx = diffx[0]
        dx[i] = diffx
    return dx


def _gradient_block(f, out, axis, ax_dx, s, g0, n, edge_order, coefficients) -> None:
    """NumPy's gradient formulas for the global indices ``[s, s + len)`` of `out`.

    `f` is the extended input block, starting at global index `g0`.
    """
    ndim = f.ndim
    e = s + out.shape[axis]
    uniform = np.ndim(ax_dx) == 0

    def at(i0, i1, base):
        return _along(ndim, axis, slice(i0 - base, i1 - base))

    i0, i1 = max(s, 1), min(e, n - 1)
    if i0 < i1:
        if uniform:
            out[at(i0, i1, s)] = (f[at(i0 + 1, i1 + 1, g0)] - f[at(i0 - 1, i1 - 1, g0)]) / (
                2.0 * ax_dx
            )
        else:
            shape = [1] * ndim
            shape[axis] = -1
            a, b, c = (v[i0 - 1 : i1 - 1].reshape(shape) for v in coefficients)
            out[at(i0, i1, s)] = (
                a * f[at(i0 - 1, i1 - 1, g0)]
                + b * f[at(i0, i1, g0)]
                + c * f[at(i0 + 1, i1 + 1, g0)]
            )
    first, last = (s == 0 < e), (s < e == n)
    if edge_order == 1:
        if first:
            dx_0 = ax_dx if uniform else ax_dx[0]
            out[at(0, 1, s)] = (f[at(1, 2, g0)] - f[at(0, 1, g0)]) / dx_0
        if last:
            dx_n = ax_dx if uniform else ax_dx[-1]
            out[at(n - 1, n, s)] = (f[at(n - 1, n, g0)] - f[at(n - 2, n - 1, g0)]) / dx_n
        return
    if first:
        if uniform:
            a, b, c = -1.5 / ax_dx, 2.0 / ax_dx, -0.5 / ax_dx
        else:
            dx1, dx2 = ax_dx[0], ax_dx[1]
            a = -(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2))
            b = (dx1 + dx2) / (dx1 * dx2)
            c = -dx1 / (dx2 * (dx1 + dx2))
        out[at(0, 1, s)] = a * f[at(0, 1, g0)] + b * f[at(1, 2, g0)] + c * f[at(2, 3, g0)]
    if last:
        if uniform:
            a, b, c = 0.5 / ax_dx, -2.0 / ax_dx, 1.5 / ax_dx
        else:
            dx1, dx2 = ax_dx[-2], ax_dx[-1]
            a = dx2 / (dx1 * (dx1 + dx2))
            b = -(dx2 + dx1) / (dx1 * dx2)
            c = (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2))
        out[at(n - 1, n, s)] = (
            a * f[at(n - 3, n - 2, g0)] + b * f[at(n - 2, n - 1, g0)] + c * f[at(n - 1, n, g0)]
        )


@implements(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """`numpy.gradient` of a DistributedArray, with NumPy's formulas and results.

    For each axis, one exchange brings every rank the one (``edge_order=2``:
    two) neighbouring elements on each side of its block along that axis;
    each rank then applies NumPy's central and one-sided differences to its
    own elements. The result keeps `f`'s layout where the axis is block
    distributed (else it is block distributed along that axis). Spacings are
    scalars or 1-D NumPy arrays, as in NumPy.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.array([1.0, 2.0, 4.0, 7.0, 11.0, 16.0])
    >>> a = dapx.asarray(x, backend=dapx.simulated(3))
    >>> np.gradient(a).gather()
    array([1. , 1.5, 2.5, 3.5, 4.5, 5. ])
    >>> t = np.array([0.0, 1.0, 2.0, 4.0, 6.0, 9.0])
    >>> np.array_equal(np.gradient(a, t, edge_order=2).gather(),
    ...                np.gradient(x, t, edge_order=2))
    True
    """
    if not isinstance(f, DistributedArray):
        raise TypeError(
            f"np.gradient: the array must be the DistributedArray here, got {type(f).__name__} "
            "with a DistributedArray spacing (gather the spacing)"
        )
    axes = tuple(range(f.ndim)) if axis is None else normalize_axis_tuple(axis, f.ndim)
    dx = _spacings(f, varargs, axes)
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = f.dtype
    convert = None
    if otype.type is np.datetime64:
        otype = np.dtype(otype.name.replace("datetime", "timedelta"))
        convert = otype
    elif otype.type is np.timedelta64 or np.issubdtype(otype, np.inexact):
        pass
    else:
        if np.issubdtype(otype, np.integer):
            convert = np.dtype(np.float64)
        otype = np.dtype(np.float64)
    reach = 1 if edge_order == 1 else 2
    results = []
    for ax, ax_dx in zip(axes, dx):
        n = f.shape[ax]
        if n < edge_order + 1:
            raise ValueError(
                "Shape of array too small to calculate a numerical gradient, "
                "at least (edge_order + 1) elements are required."
            )
        coefficients = None
        if np.ndim(ax_dx):
            dx1, dx2 = ax_dx[0:-1], ax_dx[1:]
            coefficients = (
                -(dx2) / (dx1 * (dx1 + dx2)),
                (dx2 - dx1) / (dx1 * dx2),
                dx1 / (dx2 * (dx1 + dx2)),
            )
        bounds = _block_bounds(f.distribution.maps[ax])
        blocks, ext = extended_blocks(f, {ax: (bounds, reach, reach)})
        maps = [_clean_map(m) for m in f.distribution.maps]
        maps[ax] = BlockMap(n, bounds)
        dist = Distribution(maps, f.distribution.grid)
        outs = {}
        for r, block in blocks.items():
            if convert is not None:
                block = block.view(convert) if convert.kind == "m" else block.astype(convert)
            out = np.empty(dist.local_shape(r), otype)
            c = dist.coords(r)[ax]
            starts = ext.maps[ax].global_indices(ext.coords(r)[ax])
            g0 = int(starts[0]) if starts.size else 0
            _gradient_block(block, out, ax, ax_dx, int(bounds[c]), g0, n, edge_order, coefficients)
            outs[r] = out
        results.append(new_array(dist, outs, f.backend, otype))
    return results[0] if len(axes) == 1 else tuple(results)
