"""dask interop: ``dask.array`` conversions and the dask backend's ``__partitioned__``.

* `to_dask` and `from_dask` convert to and from ``dask.array`` along the
  block grid of `dapx.interop.partitioned.partitioned`.
* `partitioned_futures` is the ``__partitioned__`` export of arrays on the
  dask backend: each partition's data is a future computed on the rank's
  worker, turned into data by `get_futures`. `get_futures` is module-level
  because the dicts that name it are pickled and shipped to dask workers.
"""

from __future__ import annotations

import math
import uuid
from typing import Any

import numpy as np

from ..backends import Backend, resolve_backend
from ..core.array import DistributedArray
from ..core.dispatch import implements_method
from ..core.guard import collective
from ..layout.distribution import Distribution
from ..layout.grid import ProcessGrid
from .partitioned import _block_bounds, from_partitioned, get_data, partitioned

__all__ = ["from_dask", "get_futures", "partitioned_futures", "to_dask"]


# -- dask backend export --------------------------------------------------------------------


def get_futures(handles: Any) -> Any:
    """The ``get`` of dask-backend exports: the data of one future or of a sequence of them."""
    if isinstance(handles, (list, tuple)):
        return handles[0].client.gather(list(handles)) if handles else []
    return handles.result()


def _owned_partition(a, rank: int) -> np.ndarray:
    """`rank`'s partition of `a` (owned elements, halo excluded), as `partitioned` gives it."""
    pos = tuple(int(c) for c in a.distribution.coords(rank)) if a.ndim else ()
    return np.array(partitioned(a)["partitions"][pos]["data"])


def _owned_block(actor, array_id) -> np.ndarray:
    return actor.apply(array_id, _owned_partition).result()


@implements_method("partitioned_futures")
def partitioned_futures(a) -> dict:
    """The ``__partitioned__`` dict of an array on the dask backend.

    Like `partitioned`, but each partition's ``data`` is a dask future of the
    rank's owned block, computed on the rank's worker (the ``location``), the
    ``get`` gathers futures and there is no ``locals`` (the client holds no
    rank).
    """
    backend = a.backend
    if a.ndim == 0:
        raise ValueError("a 0-d array on the dask backend has no partitions: use float(a)")
    dist = a.distribution
    bounds = [_block_bounds(m, i) for i, m in enumerate(dist.maps)]
    client = backend.client
    partitions = {}
    for r in range(dist.nranks):
        pos = tuple(int(c) for c in dist.coords(r))
        worker = backend.workers[r]
        future = client.submit(
            _owned_block,
            backend.actors[r],
            a.remote_id,
            workers=[worker],
            allow_other_workers=False,
            pure=False,
        )
        partitions[pos] = {
            "start": tuple(b[c] for b, c in zip(bounds, pos)),
            "shape": tuple(b[c + 1] - b[c] for b, c in zip(bounds, pos)),
            "data": future,
            "location": [worker],
        }
    return {
        "shape": a.shape,
        "partition_tiling": dist.grid_shape,
        "partitions": partitions,
        "get": get_futures,
    }


# -- dask.array -----------------------------------------------------------------------------


@implements_method("to_dask")
def to_dask(a: DistributedArray):
    """A ``dask.array`` whose chunks are the blocks of `a` (no copy).

    The graph holds the owned part of each rank's block (halo padding
    excluded) as it is: later writes to `a` show in the dask array.

    Raises
    ------
    ValueError
        If `a` is not block-distributed (redistribute to block first), or
        this process does not hold every block (under MPI each process holds
        one: gather explicitly, or run dapx on the dask backend).

    Examples
    --------
    >>> import dapx
    >>> x = dapx.arange(10, backend=dapx.simulated(3)).to_dask()
    >>> x.chunks
    ((4, 3, 3),)
    >>> int(x.sum().compute())
    45
    """
    import dask.array as da

    backend = a.backend
    desc = a.__partitioned__  # NumPy blocks of this process, or futures (dask backend)
    if any(info["data"] is None for info in desc["partitions"].values()):
        raise ValueError(
            f"to_dask builds one dask graph from every block, but this process holds only "
            f"ranks {list(backend.local_ranks)} of {backend.nranks} ({type(backend).__name__}): "
            "gather explicitly (a.gather()) or use a backend whose blocks dask can reach"
        )
    name = f"dapx-{uuid.uuid4().hex}"
    tiling = desc["partition_tiling"]
    graph = {(name, *pos): info["data"] for pos, info in desc["partitions"].items()}
    parts = desc["partitions"]
    chunks = tuple(
        tuple(parts[tuple(c if j == i else 0 for j in range(a.ndim))]["shape"][i] for c in range(t))
        for i, t in enumerate(tiling)
    )
    meta = np.empty((0,) * a.ndim, a.dtype)
    return da.Array(graph, name, chunks, dtype=a.dtype, meta=meta)


@collective
def from_dask(x, backend: Backend | None = None) -> DistributedArray:
    """A block-distributed array from a ``dask.array``, one chunk per rank.

    Parameters
    ----------
    x : dask.array.Array
        With known chunk sizes. When its chunk grid has ``backend.nranks``
        chunks, that grid is the distribution (irregular chunks give
        irregular blocks). Otherwise it is first rechunked to the even block
        grid dapx would choose for ``backend.nranks`` ranks
        (``Distribution.create(x.shape, "b", nranks=backend.nranks)``): a
        rechunk is a dask-side copy, so choose ``nranks`` chunks to avoid it.
    backend : Backend, optional
        Default: the current backend.

    Notes
    -----
    Each process computes only the chunks of its own ranks, in one
    ``dask.compute`` call, so shared parts of the graph run once and every
    chunk is computed exactly once. The computed chunks become the local
    blocks without a further copy (so a chunk that dask returns as a view of
    other data stays one, as with ``from_dask(a.to_dask())``), except
    read-only chunks, which are copied so that the array is writeable.
    Under MPI every process must pass the same dask array (built the same
    way, with the same seeds), since each computes its own chunk from its
    own copy of the graph.

    Examples
    --------
    >>> import dask.array as da, dapx
    >>> a = dapx.from_dask(da.arange(10, chunks=(6, 4)), backend=dapx.simulated(2))
    >>> a.local(1)
    array([6, 7, 8, 9])
    >>> dapx.from_dask(da.ones((4, 4), chunks=4), backend=dapx.simulated(4)).distribution
    Distribution(shape=(4, 4), grid=(4, 1), dims=[b, n])
    """
    import dask
    import dask.array as da

    backend = resolve_backend(backend)
    if not isinstance(x, da.Array):
        raise TypeError(f"from_dask needs a dask.array.Array, got {type(x).__name__}")
    if any(math.isnan(c) for chunks in x.chunks for c in chunks):
        raise ValueError(
            f"the dask array has unknown chunk sizes {x.chunks}: call x.compute_chunk_sizes() first"
        )
    if x.ndim and math.prod(x.numblocks) != backend.nranks:
        target = Distribution.create(x.shape, "b", nranks=backend.nranks)
        x = x.rechunk(tuple(tuple(np.diff(m.bounds).tolist()) for m in target.maps))
    grid = ProcessGrid(x.numblocks)
    local = backend.local_ranks
    wanted = sorted({tuple(int(c) for c in grid.coords(r)) for r in local}) if x.ndim else [()]
    delayed = x.to_delayed()
    values = dict(zip(wanted, dask.compute(*[delayed[pos] for pos in wanted])))
    for pos, value in values.items():
        # Note: dask's zeros/ones/full compute to read-only broadcast views; a
        # DistributedArray's blocks must be writeable, so those (only) are copied.
        if isinstance(value, np.ndarray) and not value.flags.writeable:
            values[pos] = value.copy()
    offsets = [np.concatenate(([0], np.cumsum(c))).astype(int).tolist() for c in x.chunks]
    partitions = {}
    for r in range(grid.nranks):
        pos = tuple(int(c) for c in grid.coords(r))
        partitions[pos] = {
            "start": tuple(o[c] for o, c in zip(offsets, pos)),
            "shape": tuple(int(ch[c]) for ch, c in zip(x.chunks, pos)),
            "data": values.get(pos),
            "location": [r] if x.ndim else list(range(backend.nranks)),
        }
    desc = {
        "shape": x.shape,
        "partition_tiling": x.numblocks,
        "partitions": partitions,
        "get": get_data,
        "locals": wanted,
    }
    return from_partitioned(desc, backend)
