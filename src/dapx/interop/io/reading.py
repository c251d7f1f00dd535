"""Reading a distributed array out of any NumPy-indexable object, each rank its own elements.

`from_array` takes what `dask.array.from_array` takes: an object with ``shape``,
``dtype`` and NumPy-style ``__getitem__`` (an h5py Dataset, a zarr Array, a
netCDF4 Variable, an xarray Variable holding lazily loaded or dask data, a
memmap). Each rank reads exactly the elements it owns and nothing else:

- a block dimension is one slice, a cyclic one a strided slice;
- block-cyclic and unstructured dimensions are read as their runs of
  consecutive indices, then put into the map's local order.

An N-D block is read as the outer product of those reads, so a block layout
costs one ``__getitem__`` per rank. Ghost cells (``halo=``) are not read: as
for `dapx.asarray`, they hold zeros until ``a.update_halos()``.
"""

from __future__ import annotations

import functools
import itertools
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ...backends import Backend, resolve_backend
from ...core.array import DistributedArray, new_array
from ...core.creation import make_distribution
from ...core.elision import ELISION_ENABLED
from ...core.guard import collective
from ...exchange.plans import outer_index, owned_positions, simplify_index
from ...layout.distribution import Distribution
from .progress import progress_bar
from .sources import shippable
from .threads import io_threads, zarr_in_flight

__all__ = ["concurrent_safe", "dim_reads", "from_array", "read_block", "read_rank"]


def dim_reads(indices: np.ndarray) -> tuple[list[slice], np.ndarray | None]:
    """How to read the global `indices` of one dimension without reading any other.

    Returns the slices to read, back to back, and the positions in their
    concatenation that give `indices` in order (None when the concatenation
    already is `indices`).

    Examples
    --------
    >>> dim_reads(np.array([1, 4, 7]))
    ([slice(1, 10, 3)], None)
    >>> dim_reads(np.array([0, 1, 6, 7]))
    ([slice(0, 2, None), slice(6, 8, None)], None)
    >>> dim_reads(np.array([5, 2, 3]))
    ([slice(2, 4, None), slice(5, 6, None)], array([2, 0, 1]))
    """
    indices = np.asarray(indices, dtype=np.int64)
    simple = simplify_index(indices)
    if isinstance(simple, slice) and (simple.step or 1) > 0:
        return [simple], None
    ordered, inverse = np.unique(indices, return_inverse=True)
    breaks = np.flatnonzero(np.diff(ordered) != 1) + 1
    starts = ordered[np.concatenate(([0], breaks))]
    stops = ordered[np.concatenate((breaks - 1, [ordered.size - 1]))] + 1
    slices = [slice(int(a), int(b)) for a, b in zip(starts, stops)]
    if ordered.size == indices.size and (ordered == indices).all():
        return slices, None
    return slices, inverse.reshape(-1)


def _owned_copy(part: Any, dtype: np.dtype) -> np.ndarray:
    """`part` (what the source returned) as an array of `dtype` that shares no memory."""
    out = np.asarray(part)
    if out.dtype != dtype or not out.flags.writeable:
        return out.astype(dtype, copy=True)
    if out.flags.owndata or _sole_view(out):
        return out
    return out.astype(dtype, copy=True)


def _sole_view(out: np.ndarray) -> bool:
    """Whether `out` views the whole of a buffer that nothing else references.

    xarray's lazily indexed variables return a view of the array they just
    read; copying it would hold every block twice at the peak. A view of a
    user's array (a NumPy or memmap source) is referenced elsewhere and is
    copied. Reference counts decide only where they are exact (see
    `dapx.core.elision`).
    """
    if not ELISION_ENABLED:
        return False
    # References: the view's, `base` below and getrefcount's argument; a fourth is someone else's.
    base = out.base
    return (
        type(base) is np.ndarray
        and base.flags.owndata
        and base.flags.writeable
        and base.nbytes == out.nbytes
        and sys.getrefcount(base) <= 3
    )


def read_block(source: Any, indices: tuple[np.ndarray, ...], dtype) -> np.ndarray:
    """The elements of `source` at the outer product of the global `indices` (one per axis).

    Reads only those elements (see `dim_reads`), in as few ``__getitem__``
    calls as the runs allow.
    """
    dtype = np.dtype(dtype)
    if not indices:
        return _owned_copy(source[()], dtype)
    if any(np.size(i) == 0 for i in indices):
        return np.empty(tuple(np.size(i) for i in indices), dtype)
    reads = [dim_reads(i) for i in indices]
    if all(len(slices) == 1 for slices, _ in reads):
        out = _owned_copy(source[tuple(slices[0] for slices, _ in reads)], dtype)
    else:
        out = np.empty(tuple(sum(_length(s) for s in slices) for slices, _ in reads), dtype)
        placed = [_placements(slices) for slices, _ in reads]
        for combination in itertools.product(*placed):
            key = tuple(src for src, _ in combination)
            out[tuple(dst for _, dst in combination)] = source[key]
    for axis, (_, reorder) in enumerate(reads):
        if reorder is not None:
            out = np.take(out, reorder, axis=axis)
    return out


def _length(s: slice) -> int:
    return len(range(s.start, s.stop, s.step or 1))


def _placements(slices: list[slice]) -> list[tuple[slice, slice]]:
    """(slice of the source, slice of the buffer) for each run read back to back."""
    out, at = [], 0
    for s in slices:
        n = _length(s)
        out.append((s, slice(at, at + n)))
        at += n
    return out


def _check_source(obj: Any) -> None:
    missing = [name for name in ("shape", "dtype", "__getitem__") if not hasattr(obj, name)]
    if missing:
        raise TypeError(
            f"from_array needs an object with shape, dtype and NumPy-style __getitem__; "
            f"a {type(obj).__name__} has no {', '.join(missing)}"
        )


def from_array(
    obj: Any,
    dtype=None,
    *,
    dist=None,
    grid=None,
    halo=None,
    backend: Backend | None = None,
    progress: bool = False,
    **options,
) -> DistributedArray:
    """Distribute an array-like that is read piecewise: each rank reads only its own elements.

    Parameters
    ----------
    obj : array-like
        Anything with ``shape``, ``dtype`` and NumPy-style ``__getitem__``
        (h5py.Dataset, zarr.Array, netCDF4.Variable, xarray.Variable or
        DataArray, numpy.memmap), as `dask.array.from_array` takes.
    dtype : dtype, optional
        Cast to this dtype after reading.
    dist, grid, halo, **options
        The layout, as `dapx.Distribution.create` (or a ready Distribution).
    backend : dapx.Backend, optional
        Default: the current backend. Under MPI each process reads its own
        rank's elements through its own `obj`; on the dask backend each
        worker does (h5py and netCDF4 objects are reopened there by file
        name).
    progress : bool
        Show a progress bar (tqdm) on the process of rank 0.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.arange(12).reshape(3, 4)
    >>> a = dapx.from_array(x, dist=("n", "c"), backend=dapx.simulated(2))
    >>> a.local(1)
    array([[ 1,  3],
           [ 5,  7],
           [ 9, 11]])
    """
    _check_source(obj)
    backend = resolve_backend(backend)
    if halo is not None:
        options["halo"] = halo
    source = shippable(obj) if not backend.local_ranks else obj
    shape = tuple(int(n) for n in obj.shape)
    dtype = np.dtype(obj.dtype if dtype is None else dtype)
    return _read(source, shape, dtype, dist, grid, backend, progress, options)


@collective
def _read(source, shape, dtype, dist, grid, backend, progress, options) -> DistributedArray:
    backend = resolve_backend(backend)
    target = make_distribution(shape, dist, grid, backend, **options)
    ranks = backend.local_ranks
    shown = progress and 0 in ranks
    read = functools.partial(read_rank, source, target, dtype=dtype)
    if not concurrent_safe(source):
        blocks = {r: read(r) for r in progress_bar(ranks, shown, "reading", len(ranks))}
    elif len(ranks) > 1:
        # Several ranks in this process (the simulated backend): their reads run at once, so
        # the store decodes every rank's chunks in parallel as one whole-array read would.
        threads = io_threads(len(ranks))
        with zarr_in_flight(threads), ThreadPoolExecutor(threads) as pool:
            results = list(progress_bar(pool.map(read, ranks), shown, "reading", len(ranks)))
        blocks = dict(zip(ranks, results))
    else:
        with zarr_in_flight(1):
            blocks = {r: read(r) for r in ranks}
    return new_array(target, blocks, backend, dtype)


def concurrent_safe(source: Any) -> bool:
    """Whether `source` may be read from several threads at once (zarr stores may).

    xarray's lazily loaded variables are unwrapped to the backend array they
    read from; h5py and netCDF4 serialize or are not thread-safe, so they are
    read one rank after another.
    """
    inner = getattr(source, "_data", source)  # an xarray Variable's data
    for _ in range(8):
        if type(inner).__module__.startswith(("zarr", "xarray.backends.zarr")):
            return True
        inner = getattr(inner, "array", None)
        if inner is None:
            return False
    return False


def read_rank(source: Any, dist: Distribution, rank: int, dtype=None) -> np.ndarray:
    """`rank`'s block of `dist` read from `source` (ghost cells zero)."""
    if not dist.ndim:
        return read_block(source, (), dtype)
    if not dist.is_padded:
        return read_block(source, dist.global_indices(rank), dtype)
    local, _ = owned_positions(dist, rank)
    block = np.zeros(dist.local_shape(rank), dtype)
    block[outer_index(local)] = read_block(source, dist.owned_indices(rank), dtype)
    return block
