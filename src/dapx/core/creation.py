"""Creating distributed arrays: from NumPy data, from shapes, from DAP producers.

Every function takes ``backend=`` (default: the current backend) and the
distribution arguments of `dapx.Distribution.create` (``dist``, ``grid``,
``block_size``, ``padding``, ``periodic``, ``halo``), or a ready
`Distribution` as ``dist``. Each rank computes only its own elements.

With ``halo=`` the array gets ghost cells around every rank's block
(``a.shape`` stays the domain). Creation fills the interior; the halo is
filled by ``a.update_halos(boundary=...)``. Until then it holds the fill
value for `full`, `zeros`, `ones` and their ``_like`` forms, nothing in
particular for `empty`, and zeros otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..backends import Backend, resolve_backend
from ..errors import DAPError
from ..exchange.plans import outer_index, simplify_index
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap
from ..layout.protocol import validate_distbuffer
from .array import SCALAR, DistributedArray, new_array
from .guard import collective, raise_if_any_failed

__all__ = [
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "from_distarray",
    "from_local",
    "fromfunction",
    "full",
    "full_like",
    "linspace",
    "make_distribution",
    "normalize_shape",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]


def normalize_shape(shape) -> tuple[int, ...]:
    """`shape` (an int or a sequence of them) as a tuple of non-negative ints, else ValueError."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for n in shape:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"shape must be non-negative integers, got {shape}")
    return tuple(int(n) for n in shape)


def make_distribution(shape, dist=None, grid=None, backend: Backend | None = None, **options):
    """The `Distribution` of `shape` described by `dist`/`grid`/options on `backend`."""
    backend = resolve_backend(backend)
    shape = normalize_shape(shape)
    if not shape:
        return SCALAR
    if isinstance(dist, Distribution):
        if grid is not None or options:
            raise TypeError("pass either a Distribution as dist or a description, not both")
        target = dist
    else:
        target = Distribution.create(shape, dist, grid, nranks=backend.nranks, **options)
    if target.global_shape != shape:
        raise ValueError(f"distribution of shape {target.global_shape} given for shape {shape}")
    if target.nranks != backend.nranks:
        raise ValueError(
            f"the grid {target.grid_shape} has {target.nranks} ranks but the backend has "
            f"{backend.nranks}"
        )
    return target


def _local_index(dist: Distribution, rank: int):
    return outer_index([simplify_index(g) for g in dist.global_indices(rank)])


def _build(dist, backend, make: Callable[[int], np.ndarray], dtype=None) -> DistributedArray:
    return new_array(dist, {r: make(r) for r in backend.local_ranks}, backend, dtype)


def _build_indexed(dist, backend, make: Callable[[tuple], np.ndarray], dtype=None):
    """An array whose blocks are ``make(global indices of the block)``.

    On a layout with a halo `make` sees the owned indices only and the result
    is placed in a zeroed padded block (ghost cells are not part of the array).
    """
    if not dist.has_halo:
        return _build(dist, backend, lambda r: make(dist.global_indices(r)), dtype)
    from ..exchange.plans import owned_positions

    def padded(r):
        local, _ = owned_positions(dist, r)
        values = np.asarray(make(dist.owned_indices(r)))
        block = np.zeros(dist.local_shape(r), values.dtype)
        block[outer_index(local)] = values
        return block

    return _build(dist, backend, padded, dtype)


@collective
def asarray(
    obj: Any,
    dtype=None,
    *,
    dist=None,
    grid=None,
    backend: Backend | None = None,
    copy: bool | None = None,
    **options,
) -> DistributedArray:
    """Distribute array-like `obj`; each rank copies its own elements.

    A DistributedArray is returned as is (or redistributed/cast when asked).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.arange(12).reshape(3, 4), dist=("b", "c"), grid=(1, 2),
    ...                  backend=dapx.simulated(2))
    >>> a.local(1)
    array([[ 1,  3],
           [ 5,  7],
           [ 9, 11]])
    """
    if isinstance(obj, DistributedArray):
        if dist is not None or grid is not None or options:
            obj = obj.redistribute(dist, grid, **options)
        elif copy:
            obj = obj.copy()
        return obj if dtype is None else obj.astype(dtype, copy=False)
    backend = resolve_backend(backend)
    data = np.asarray(obj, dtype=dtype)
    target = make_distribution(data.shape, dist, grid, backend, **options)
    if data.ndim == 0:
        return _build(target, backend, lambda r: data.copy())
    if target.ndim and target.is_padded:
        from ..exchange.plans import owned_positions

        def make(r):
            block = np.zeros(target.local_shape(r), data.dtype)
            local, glob = owned_positions(target, r)
            block[outer_index(local)] = data[outer_index(glob)]
            return block

        return _build(target, backend, make, data.dtype)
    return _build(target, backend, lambda r: np.array(data[_local_index(target, r)]), data.dtype)


@collective
def full(shape, fill_value, dtype=None, *, dist=None, grid=None, backend=None, **options):
    """A new array of `shape` filled with `fill_value`."""
    backend = resolve_backend(backend)
    target = make_distribution(shape, dist, grid, backend, **options)
    dtype = np.asarray(fill_value).dtype if dtype is None else np.dtype(dtype)
    return _build(target, backend, lambda r: np.full(_local_shape(target, r), fill_value, dtype))


def _local_shape(dist, rank):
    return () if not dist.ndim else dist.local_shape(rank)


@collective
def zeros(shape, dtype=float, *, dist=None, grid=None, backend=None, **options):
    """A new array of zeros."""
    backend = resolve_backend(backend)
    target = make_distribution(shape, dist, grid, backend, **options)
    return _build(target, backend, lambda r: np.zeros(_local_shape(target, r), dtype))


@collective
def ones(shape, dtype=float, *, dist=None, grid=None, backend=None, **options):
    """A new array of ones."""
    return full(shape, 1, dtype, dist=dist, grid=grid, backend=backend, **options)


@collective
def empty(shape, dtype=float, *, dist=None, grid=None, backend=None, **options):
    """A new uninitialised array."""
    backend = resolve_backend(backend)
    target = make_distribution(shape, dist, grid, backend, **options)
    return _build(target, backend, lambda r: np.empty(_local_shape(target, r), dtype))


def _like(a, shape, dtype, dist, grid, backend, options):
    if shape is not None and normalize_shape(shape) != a.shape:
        return shape, (dtype or a.dtype), dist, grid, (backend or a.backend), options
    if dist is None and grid is None and not options:
        dist = a.distribution
    return a.shape, (dtype or a.dtype), dist, grid, (backend or a.backend), options


@collective
def zeros_like(a, dtype=None, *, shape=None, dist=None, grid=None, backend=None, **options):
    """Zeros with the shape, dtype and distribution of `a`."""
    s, t, d, g, b, o = _like(a, shape, dtype, dist, grid, backend, options)
    return zeros(s, t, dist=d, grid=g, backend=b, **o)


@collective
def ones_like(a, dtype=None, *, shape=None, dist=None, grid=None, backend=None, **options):
    """Ones with the shape, dtype and distribution of `a`."""
    s, t, d, g, b, o = _like(a, shape, dtype, dist, grid, backend, options)
    return ones(s, t, dist=d, grid=g, backend=b, **o)


@collective
def empty_like(a, dtype=None, *, shape=None, dist=None, grid=None, backend=None, **options):
    """Uninitialised, with the shape, dtype and distribution of `a`."""
    s, t, d, g, b, o = _like(a, shape, dtype, dist, grid, backend, options)
    return empty(s, t, dist=d, grid=g, backend=b, **o)


@collective
def full_like(
    a, fill_value, dtype=None, *, shape=None, dist=None, grid=None, backend=None, **options
):
    """`fill_value` everywhere, with the shape, dtype and distribution of `a`."""
    s, t, d, g, b, o = _like(a, shape, dtype, dist, grid, backend, options)
    return full(s, fill_value, t, dist=d, grid=g, backend=b, **o)


@collective
def arange(
    start, stop=None, step=1, dtype=None, *, dist=None, grid=None, backend=None, **options
) -> DistributedArray:
    """Evenly spaced values as `numpy.arange`; each rank computes its own.

    >>> import dapx
    >>> dapx.arange(2, 11, 3, backend=dapx.simulated(2)).gather()
    array([2, 5, 8])
    """
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ZeroDivisionError("arange: step must not be zero")
    n = max(0, math.ceil((stop - start) / step))
    dtype = np.result_type(start, stop, step) if dtype is None else np.dtype(dtype)
    backend = resolve_backend(backend)
    target = make_distribution((n,), dist, grid, backend, **options)
    return _build_indexed(
        target,
        backend,
        lambda idx: (start + idx[0] * step).astype(dtype, copy=False),
        dtype,
    )


@collective
def linspace(
    start, stop, num=50, endpoint=True, dtype=None, *, dist=None, grid=None, backend=None, **options
) -> DistributedArray:
    """`num` evenly spaced values over [start, stop], as `numpy.linspace`.

    >>> import dapx, numpy as np
    >>> np.array_equal(dapx.linspace(0, 1, 7, backend=dapx.simulated(3)).gather(),
    ...                np.linspace(0, 1, 7))
    True
    """
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    backend = resolve_backend(backend)
    target = make_distribution((num,), dist, grid, backend, **options)
    div = (num - 1) if endpoint else num
    result_dtype = np.dtype(dtype) if dtype is not None else np.result_type(start, stop, 1.0)

    def make(indices):
        idx = indices[0]
        if div > 0:
            step = (stop - start) / div
            vals = idx * step + start if step != 0 else idx * ((stop - start) / div) + start
        else:
            vals = np.full(idx.shape, float(start)) + 0 * idx
        if endpoint and num > 1:
            vals = np.where(idx == num - 1, stop, vals)
        if np.dtype(result_dtype).kind in "iu":
            vals = np.floor(vals)
        return np.asarray(vals).astype(result_dtype, copy=False)

    return _build_indexed(target, backend, make, result_dtype)


@collective
def fromfunction(
    function: Callable, shape, *, dtype=float, dist=None, grid=None, backend=None, **kwargs
) -> DistributedArray:
    """Evaluate ``function(*indices)`` where each rank passes only its own global indices.

    As `numpy.fromfunction`, the function gets one coordinate array per
    dimension (of `dtype`); here they hold the rank's global indices.

    >>> import dapx
    >>> a = dapx.fromfunction(lambda i, j: 10 * i + j, (2, 3), dtype=int,
    ...                       backend=dapx.simulated(2))
    >>> a.local(1)
    array([[10, 11, 12]])
    """
    backend = resolve_backend(backend)
    options = {
        k: kwargs.pop(k) for k in ("block_size", "padding", "periodic", "halo") if k in kwargs
    }
    target = make_distribution(shape, dist, grid, backend, **options)

    def make(indices):
        coords = np.meshgrid(*indices, indexing="ij")
        return np.asarray(function(*(c.astype(dtype) for c in coords), **kwargs))

    return _build_indexed(target, backend, make)


@collective
def from_distarray(x, backend: Backend | None = None) -> DistributedArray:
    """Wrap DAP producers without copying.

    Parameters
    ----------
    x : producer, distbuffer dict, or sequence of them
        An object with ``__distarray__()``, its dict, or one per rank in
        rank order (what the simulated backend needs). Under MPI each
        process passes its own.

    Notes
    -----
    Padded block dimensions are read as halos (`dapx.BlockMap.as_halo`):
    DAP boundary padding at a non-periodic edge becomes ghost cells outside
    the domain, so the array's shape is the DAP ``size`` less those widths,
    and ``distarray()`` exports the same dictionaries back. A dimension whose
    boundary padding cannot be read so (an edge rank that owns nothing else
    while its neighbour pads towards it) keeps the DAP reading.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(6, backend=dapx.simulated(2))
    >>> b = dapx.from_distarray([a.distarray(0), a.distarray(1)], backend=a.backend)
    >>> np.shares_memory(a.local(1), b.local(1))
    True

    The padded example of the DAP documentation (18 indices with boundary
    padding on 2 ranks) is a domain of 16 with a halo of 1:

    >>> dims = [{"dist_type": "b", "size": 18, "proc_grid_size": 2, "proc_grid_rank": r,
    ...          "start": 8 * r, "stop": 8 * r + 10, "padding": (1, 1), "periodic": False}
    ...         for r in range(2)]
    >>> c = dapx.from_distarray(
    ...     [{"__version__": "0.10.0", "buffer": np.arange(10.0) + 8 * r, "dim_data": (dims[r],)}
    ...      for r in range(2)], backend=dapx.simulated(2))
    >>> c.shape, c.interior.local(1), c.distarray(1)["dim_data"][0] == dims[1]
    ((16,), array([ 9., 10., 11., 12., 13., 14., 15., 16.]), True)
    """
    backend = resolve_backend(backend)
    items = list(x) if isinstance(x, Sequence) and not isinstance(x, (str, bytes)) else [x]
    dicts = [i.__distarray__() if hasattr(i, "__distarray__") else i for i in items]
    local = backend.local_ranks
    if len(dicts) != len(local):
        raise ValueError(
            f"this process holds ranks {list(local)} and needs one distbuffer for each, got "
            f"{len(dicts)}"
        )
    normal, errors = {}, {}
    for r, d in zip(local, dicts):
        try:
            normal[r], errors[r] = validate_distbuffer(d, rank=r), None
        except DAPError as e:
            errors[r] = e
    raise_if_any_failed(backend, errors, DAPError)
    everything = backend.allgather({r: n.dim_data for r, n in normal.items()})
    if all(len(dd) == 0 for dd in everything):
        dist = SCALAR
    else:
        dist = Distribution.from_dim_data(everything)
        if dist.is_padded:
            dist = Distribution([_as_halo(m) for m in dist.maps], dist.grid)
    dtypes = backend.allgather({r: n.buffer.dtype.str for r, n in normal.items()})
    if len(set(dtypes)) != 1:
        raise DAPError(f"ranks disagree on the buffer dtype: {dtypes} (in rank order)")
    return new_array(dist, {r: n.buffer for r, n in normal.items()}, backend, check=True)


def _as_halo(m):
    if not isinstance(m, BlockMap):
        return m
    try:
        return m.as_halo()
    except DAPError:
        return m


@collective
def from_local(blocks, axis: int = 0, backend: Backend | None = None) -> DistributedArray:
    """Wrap blocks that ranks already hold as one array, block-distributed along `axis`.

    The everyday SPMD entry point: under MPI each process passes its own
    block; on the simulated backend pass one block per rank, in rank order.
    Sizes along `axis` may differ (and be 0); every other dimension and the
    dtype must agree. No data is copied.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> parts = [np.arange(3.0), np.arange(3.0, 4.0), np.arange(4.0, 6.0)]
    >>> a = dapx.from_local(parts, backend=dapx.simulated(3))
    >>> a.shape, np.shares_memory(a.local(2), parts[2])
    ((6,), True)
    """
    backend = resolve_backend(backend)
    local = backend.local_ranks
    if len(local) == 1 and isinstance(blocks, np.ndarray):
        blocks = [blocks]
    blocks = list(blocks)
    if len(blocks) != len(local):
        raise ValueError(
            f"this process holds ranks {list(local)}: pass one block for each, got {len(blocks)}"
        )
    arrays = {r: np.asarray(b) for r, b in zip(local, blocks)}
    errors = {}
    for r, b in arrays.items():
        errors[r] = None
        if b.ndim == 0:
            errors[r] = ValueError(f"rank {r}: blocks must have at least one dimension")
        elif not -b.ndim <= axis < b.ndim:
            errors[r] = ValueError(f"rank {r}: axis {axis} is out of bounds for a {b.ndim}-d block")
        elif not (b.flags.c_contiguous or b.flags.f_contiguous):
            errors[r] = ValueError(f"rank {r}: blocks must be contiguous arrays")
    raise_if_any_failed(backend, errors)
    meta = backend.allgather({r: (b.shape, b.dtype.str) for r, b in arrays.items()})
    ndim = len(meta[0][0])
    axis = axis % ndim
    first_shape, first_dtype = meta[0]
    for rank, (shape, dtype) in enumerate(meta):
        other = shape[:axis] + shape[axis + 1 :]
        if len(shape) != ndim or other != first_shape[:axis] + first_shape[axis + 1 :]:
            raise ValueError(
                f"rank {rank}'s block has shape {shape} but rank 0's has {first_shape}: "
                f"blocks may differ only along axis {axis}"
            )
        if dtype != first_dtype:
            raise ValueError(
                f"rank {rank}'s block has dtype {np.dtype(dtype)} but rank 0's has "
                f"{np.dtype(first_dtype)}"
            )
    bounds = np.concatenate(([0], np.cumsum([shape[axis] for shape, _ in meta])))
    specs = ["n"] * ndim
    specs[axis] = {"dist": "b", "bounds": bounds}
    grid = [1] * ndim
    grid[axis] = backend.nranks
    shape = list(first_shape)
    shape[axis] = int(bounds[-1])
    dist = Distribution.create(tuple(shape), specs, grid)
    return new_array(dist, arrays, backend, first_dtype, check=True)
