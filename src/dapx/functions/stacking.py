"""Stacking, splitting and flipping: NumPy's compositions of concatenate, slicing and reshape.

Each is written in terms of dapx's own `concatenate`, basic indexing and
`reshape`/`expand_dims`, so data moves only where those move it: splits are
slices of the input's layout, stacks are one exchange per input into its
slab. A flip of block axes mirrors the block boundaries: every rank's block
goes whole, reversed, to the rank at the mirrored grid position (one
exchange, no index arrays in the layout).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray, new_array
from ..core.dispatch import implements
from ..exchange.execute import execute
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap
from .joining import concatenate
from .shaping import _copy, clean_distribution, expand_dims, reshape

__all__ = [
    "append",
    "array_split",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "column_stack",
    "dsplit",
    "dstack",
    "flip",
    "fliplr",
    "flipud",
    "hsplit",
    "hstack",
    "rot90",
    "split",
    "vsplit",
    "vstack",
]


def _array(a):
    return a if isinstance(a, DistributedArray) else np.asarray(a)


def _one_or_tuple(results: list):
    return results[0] if len(results) == 1 else tuple(results)


def _at_least(arrays, ndim: int, place):
    out = []
    for a in map(_array, arrays):
        while a.ndim < ndim:
            a = place(a)
        out.append(a)
    return out


def _expand(a, axis):
    return expand_dims(a, axis) if isinstance(a, DistributedArray) else np.expand_dims(a, axis)


@implements(np.atleast_1d)
def atleast_1d(*arys):
    """`numpy.atleast_1d`: 0-d arrays become 1-d; no data moves.

    >>> import numpy as np, dapx
    >>> np.atleast_1d(dapx.asarray(5, backend=dapx.simulated(2))).shape
    (1,)
    """
    return _one_or_tuple(_at_least(arys, 1, lambda a: _expand(a, 0)))


@implements(np.atleast_2d)
def atleast_2d(*arys):
    """`numpy.atleast_2d`: a new leading axis as needed; no data moves."""
    return _one_or_tuple(_at_least(arys, 2, lambda a: _expand(a, 0)))


@implements(np.atleast_3d)
def atleast_3d(*arys):
    """`numpy.atleast_3d`: ``(N,) -> (1, N, 1)``, ``(M, N) -> (M, N, 1)`` as NumPy."""

    def place(a):
        if a.ndim == 0:
            return _expand(_expand(_expand(a, 0), 0), 0)
        if a.ndim == 1:
            return _expand(_expand(a, 0), 2)
        return _expand(a, 2)

    return _one_or_tuple([place(a) if a.ndim < 3 else a for a in map(_array, arys)])


def _sequence(tup, name: str) -> list:
    if not isinstance(tup, (list, tuple)):
        raise TypeError(f"arrays to {name} must be passed as a sequence (list or tuple)")
    return list(tup)


@implements(np.hstack)
def hstack(tup, *, dtype=None, casting="same_kind"):
    """`numpy.hstack`: along the first axis for 1-d inputs, else the second.

    >>> import numpy as np, dapx
    >>> x = dapx.arange(3, backend=dapx.simulated(2))
    >>> np.hstack([x, x]).gather()
    array([0, 1, 2, 0, 1, 2])
    """
    arrays = _at_least(_sequence(tup, "hstack"), 1, lambda a: _expand(a, 0))
    axis = 0 if arrays and arrays[0].ndim == 1 else 1
    return concatenate(arrays, axis=axis, dtype=dtype, casting=casting)


@implements(np.vstack)
def vstack(tup, *, dtype=None, casting="same_kind"):
    """`numpy.vstack`: along the first axis, 1-d inputs as rows."""
    arrays = _at_least(_sequence(tup, "vstack"), 2, lambda a: _expand(a, 0))
    return concatenate(arrays, axis=0, dtype=dtype, casting=casting)


@implements(np.dstack)
def dstack(tup):
    """`numpy.dstack`: along the third axis (`atleast_3d` first)."""
    arrays = atleast_3d(*_sequence(tup, "dstack"))
    arrays = [arrays] if not isinstance(arrays, tuple) else list(arrays)
    return concatenate(arrays, axis=2)


@implements(np.column_stack)
def column_stack(tup):
    """`numpy.column_stack`: 1-d inputs become columns, 2-d ones join along axis 1."""
    arrays = [
        _expand(a, 1) if a.ndim < 2 else a for a in map(_array, _sequence(tup, "column_stack"))
    ]
    return concatenate(arrays, axis=1)


@implements(np.append)
def append(arr, values, axis=None):
    """`numpy.append`: `concatenate`, flattening both when `axis` is None."""
    arr, values = _array(arr), _array(values)
    if axis is None:
        arr = reshape(arr, -1) if isinstance(arr, DistributedArray) else arr.ravel()
        values = reshape(values, -1) if isinstance(values, DistributedArray) else values.ravel()
        axis = arr.ndim - 1
    return concatenate([arr, values], axis=axis)


# -- splitting ----------------------------------------------------------------------------------


@implements(np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    """`numpy.array_split`: slices of `ary` (each keeps `ary`'s layout of its part).

    >>> import numpy as np, dapx
    >>> [p.gather() for p in np.array_split(dapx.arange(7, backend=dapx.simulated(3)), 3)]
    [array([0, 1, 2]), array([3, 4]), array([5, 6])]
    """
    axis = normalize_axis_index(axis, ary.ndim)
    n = ary.shape[axis]
    if np.ndim(indices_or_sections) == 0:
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        sizes = [0] + extra * [each + 1] + (sections - extra) * [each]
        bounds = np.cumsum(sizes)
    else:
        bounds = np.array([0, *list(indices_or_sections), n])
    parts = []
    for start, stop in itertools.pairwise(bounds):
        key = [slice(None)] * ary.ndim
        key[axis] = slice(int(start), int(stop))
        parts.append(ary[tuple(key)])
    return parts


@implements(np.split)
def split(ary, indices_or_sections, axis=0):
    """`numpy.split`: `array_split` that insists on equal sections."""
    if np.ndim(indices_or_sections) == 0:
        n = ary.shape[normalize_axis_index(axis, ary.ndim)]
        if n % int(indices_or_sections):
            raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


@implements(np.hsplit)
def hsplit(ary, indices_or_sections):
    """`numpy.hsplit`: along axis 1 (axis 0 for 1-d)."""
    if ary.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


@implements(np.vsplit)
def vsplit(ary, indices_or_sections):
    """`numpy.vsplit`: along axis 0 of arrays of 2 or more dimensions."""
    if ary.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


@implements(np.dsplit)
def dsplit(ary, indices_or_sections):
    """`numpy.dsplit`: along axis 2 of arrays of 3 or more dimensions."""
    if ary.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


# -- flipping -----------------------------------------------------------------------------------


def _mirrored(m: DistributedArray, axes: set[int]) -> DistributedArray | None:
    """`m` flipped along `axes` (all unpadded block axes), in mirrored blocks; else None.

    Grid coordinate ``c`` along a flipped axis of ``p`` ranks gets the block
    of coordinate ``p - 1 - c``, reversed: the mirrored bounds ``size -
    bounds[::-1]`` make it exactly that block, so each block moves whole to
    one rank. The sender sends its block as it is in memory (no packing copy
    when it is contiguous) and the receiver reverses it on arrival (the MPI
    backend's receive buffer is viewed reversed, no copy; a block passed within
    one process is copied once, so the result never aliases `m`).
    """
    dist = m.distribution
    if clean_distribution(dist) != dist:
        return None
    maps = list(dist.maps)
    for ax in axes:
        b = maps[ax]
        if not isinstance(b, BlockMap) or b.is_padded:
            return None
        maps[ax] = BlockMap(b.size, b.size - np.asarray(b.bounds)[::-1], periodic=b.periodic)
    target = Distribution(maps, dist.grid)
    grid, backend, ndim = dist.grid, m.backend, m.ndim
    nranks = backend.nranks

    def partner(rank: int) -> int:
        coords = list(grid.coords(rank))
        for ax in axes:
            coords[ax] = grid.shape[ax] - 1 - coords[ax]
        return grid.rank(coords)

    everything = (slice(None),) * ndim
    reverse = tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(ndim))
    sends, recvcounts, recvs, out = {}, {}, {}, {}
    for r, block in m.locals.items():
        counts = np.zeros(nranks, np.intp)
        counts[partner(r)] = block.size
        sends[r] = (counts, [(everything, 0, block.size, block.shape)])
        shape = target.local_shape(r)
        size = math.prod(shape)
        source = partner(r)
        counts = np.zeros(nranks, np.intp)
        counts[source] = size
        recvcounts[r] = counts
        recvs[r] = [(source, reverse, 0, size, shape)]
        out[r] = np.empty(shape, m.dtype)
    execute(m.locals, sends, recvcounts, recvs, out, m.dtype, backend, adopt=True)
    return new_array(target, out, backend, m.dtype)


@implements(np.flip)
def flip(m, axis=None):
    """`numpy.flip`, as a new array (NumPy's is a view).

    Flipped block axes mirror their block boundaries (``size - bounds[::-1]``),
    so each rank receives, whole and reversed, the block of the rank at the
    mirrored grid position: one exchange of whole blocks, a layout of bounds
    only, and the result is as cheap to use as the input. Other layouts
    (cyclic, unstructured or padded axes) are a reversed slice of the input's
    layout, copied.

    # Note: NumPy returns a view; writing into dapx's result does not change
    # `m` (a view would need a reversed rank order, which DAP's block maps
    # cannot describe). ``m[::-1]`` is dapx's view.

    >>> import numpy as np, dapx
    >>> f = np.flip(dapx.arange(5, backend=dapx.simulated(2)))
    >>> f.gather(), f.local(0)
    (array([4, 3, 2, 1, 0]), array([4, 3]))
    """
    if m.ndim == 0:
        return _copy(m[()])
    axes = range(m.ndim) if axis is None else np.atleast_1d(axis)
    flipped = {normalize_axis_index(int(ax), m.ndim) for ax in axes}
    result = _mirrored(m, flipped)
    if result is not None:
        return result
    key = [slice(None)] * m.ndim
    for ax in flipped:
        key[ax] = slice(None, None, -1)
    return _copy(m[tuple(key)])


@implements(np.fliplr)
def fliplr(m):
    """`numpy.fliplr`: reverse axis 1."""
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


@implements(np.flipud)
def flipud(m):
    """`numpy.flipud`: reverse axis 0."""
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


@implements(np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    """`numpy.rot90`: flips and a transpose of the two axes."""
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError("Axes must be different.")
    if not (-m.ndim <= axes[0] < m.ndim and -m.ndim <= axes[1] < m.ndim):
        raise ValueError(f"Axes={axes} out of range for array of ndim={m.ndim}.")
    k %= 4
    if k == 0:
        return m[...]
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    order = list(range(m.ndim))
    a0, a1 = (normalize_axis_index(ax, m.ndim) for ax in axes)
    order[a0], order[a1] = order[a1], order[a0]
    if k == 1:
        return np.transpose(flip(m, axes[1]), order)
    return flip(np.transpose(m, order), axes[1])
