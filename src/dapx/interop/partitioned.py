"""The ``__partitioned__`` protocol: export block layouts, import any conforming producer.

``__partitioned__`` (``shared/specs/partitioned-protocol.md``) describes an
array cut into rectangular partitions on a grid: the global ``shape``, the
grid (``partition_tiling``), every grid position's ``start``, ``shape``,
``data`` and ``location``, a ``get`` that turns handles into data, and, for
SPMD producers, the ``locals`` of this process.

* `partitioned` exports a block-distributed `DistributedArray`: partition
  ``(i, j, ...)`` is the block of the rank at those grid coordinates, its
  ``location`` is ``[rank]`` and its ``data`` a view of the rank's owned
  elements (halo padding excluded) where the rank is local, None elsewhere.
  It is read from the `Distribution` alone, without communication.
* `from_partitioned` wraps any conforming producer, SPMD or handle-based,
  without copying data that is already in this process, after checking that
  the partitions tile the shape along a grid (`check_partitioned`, in
  `dapx.interop.partitioned_check`).

The ``dask.array`` conversions (`to_dask`, `from_dask`) and the dask
backend's export of futures (`partitioned_futures`, `get_futures`) live in
`dapx.interop.dask_array`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..backends import Backend, resolve_backend
from ..core.array import SCALAR, DistributedArray, new_array
from ..core.dispatch import implements_method
from ..core.guard import collective
from ..errors import DAPError
from ..exchange.plans import owned_positions
from ..layout.distribution import Distribution
from ..layout.grid import ProcessGrid
from ..layout.maps import BlockMap, Map
from .partitioned_check import _Layout, _position, check_partitioned

__all__ = ["check_partitioned", "from_partitioned", "get_data", "partitioned"]

# -- export ---------------------------------------------------------------------------------


def get_data(handles: Any) -> Any:
    """The ``get`` of dapx's SPMD exports: their data are arrays already, returned as given.

    Works on one handle or a sequence of them, as the protocol asks.

    >>> get_data([1, 2])
    [1, 2]
    """
    return handles


def _block_bounds(m: Map, dim: int) -> list[int]:
    """Owned boundaries of each grid rank along one dimension, or a clear error.

    Block maps give them directly; other maps are accepted only when their
    owned indices happen to form contiguous ranges in grid-rank order (one
    rank, or few indices), which is a block layout in fact.
    """
    if isinstance(m, BlockMap):
        return [int(b) for b in m.bounds]
    bounds = [0]
    for c in range(m.nprocs):
        owned = m.owned_indices(c)
        if owned.size and (owned[0] != bounds[-1] or (np.diff(owned) != 1).any()):
            kind = {"c": "cyclic", "u": "unstructured"}.get(m.dist_type, m.dist_type)
            raise ValueError(
                f"__partitioned__ describes rectangular blocks on a grid, but dim {dim} of this "
                f"array is {kind} ({m!r}), whose ranks do not own contiguous ranges in rank "
                "order: redistribute to block first, e.g. a.redistribute('b')"
            )
        bounds.append(bounds[-1] + int(owned.size))
    return bounds


@implements_method("__partitioned__")
def partitioned(a: DistributedArray) -> dict:
    """The ``__partitioned__`` dict of a block-distributed array (no communication).

    Parameters
    ----------
    a : DistributedArray
        Block-distributed along any number of dimensions, regular or
        irregular, padded or not.

    Returns
    -------
    dict
        ``shape``, ``partition_tiling`` (the process grid), ``partitions``
        (grid coordinates -> ``start``, ``shape``, ``data``, ``location``),
        ``get`` (`get_data`, module-level so the dict pickles) and ``locals``
        (the grid coordinates of this process's ranks). ``data`` is a view of
        a rank's owned elements, halo padding excluded, for the ranks of this
        process and None for the others; ``location`` is ``[rank]``. A 0-d
        array, replicated on every rank, is one partition located on all.

    Raises
    ------
    ValueError
        If a dimension is cyclic or unstructured (other than in the
        degenerate cases where its ranks own contiguous ranges in rank
        order): redistribute to block first.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.arange(12.0).reshape(3, 4), grid=(1, 2), backend=dapx.simulated(2))
    >>> p = a.__partitioned__
    >>> p["shape"], p["partition_tiling"], p["locals"]
    ((3, 4), (1, 2), [(0, 0), (0, 1)])
    >>> q = p["partitions"][(0, 1)]
    >>> q["start"], q["shape"], q["location"], np.shares_memory(q["data"], a.local(1))
    ((0, 2), (3, 2), [1], True)
    """
    dist = a.distribution
    backend = a.backend
    local = backend.local_ranks
    if a.ndim == 0:
        part = {
            "start": (),
            "shape": (),
            "data": a.locals[local[0]],
            "location": list(range(backend.nranks)),
        }
        return {
            "shape": (),
            "partition_tiling": (),
            "partitions": {(): part},
            "get": get_data,
            "locals": [()],
        }
    bounds = [_block_bounds(m, i) for i, m in enumerate(dist.maps)]
    partitions = {}
    for r in range(dist.nranks):
        pos = tuple(int(c) for c in dist.coords(r))
        partitions[pos] = {
            "start": tuple(b[c] for b, c in zip(bounds, pos)),
            "shape": tuple(b[c + 1] - b[c] for b, c in zip(bounds, pos)),
            "data": None,
            "location": [r],
        }
    for r in local:
        positions, _ = owned_positions(dist, r)
        pos = tuple(int(c) for c in dist.coords(r))
        partitions[pos]["data"] = a.locals[r][positions]
    return {
        "shape": a.shape,
        "partition_tiling": dist.grid_shape,
        "partitions": partitions,
        "get": get_data,
        "locals": [tuple(int(c) for c in dist.coords(r)) for r in local],
    }


# -- import -----------------------------------------------------------------------------------


def _description(obj: Any) -> Mapping:
    if isinstance(obj, Mapping):
        return obj
    if not hasattr(obj, "__partitioned__"):
        raise TypeError(
            f"from_partitioned needs an object with __partitioned__ or its dict, "
            f"got {type(obj).__name__}"
        )
    desc = obj.__partitioned__
    if callable(desc) and not isinstance(desc, Mapping):  # the spec's draft calls it a method
        desc = desc()
    return desc


def _view(data: Any, pos: tuple[int, ...]) -> np.ndarray | None:
    """`data` as a NumPy array without copying, or None if NumPy cannot view it."""
    if isinstance(data, np.ndarray):
        return data
    try:
        if isinstance(data, np.generic) or hasattr(data, "__array_interface__"):
            return np.asarray(data)
        if hasattr(data, "__array_struct__"):
            return np.asarray(data)
        if hasattr(data, "__dlpack__"):
            return np.from_dlpack(data)
        if hasattr(type(data), "__array__"):
            return np.asarray(data)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        raise DAPError(
            f"partition {pos}: NumPy cannot view its data of type {type(data).__name__} "
            f"({e}); only data in this process's memory (CPU) is supported"
        ) from None
    return None


def _resolve(pos: tuple[int, ...], info: Mapping, get) -> np.ndarray:
    """The data of one partition as a NumPy array: as given if NumPy can view it, else
    through the producer's ``get``."""
    data = info["data"]
    array = _view(data, pos)
    if array is None:
        value = get(data)
        array = _view(value, pos)
        if array is None:
            raise DAPError(
                f"partition {pos}: unsupported data of type {type(data).__name__} (resolved "
                f"by 'get' to {type(value).__name__}): expected a NumPy array or an object "
                "with __array_interface__, __dlpack__ or __array__"
            )
    if array.shape != info["shape"]:
        raise DAPError(
            f"partition {pos}: its data has shape {array.shape} but the partition's 'shape' "
            f"is {info['shape']} (shape mismatch)"
        )
    return array


def _check_spmd_locations(layout: _Layout, nranks: int) -> None:
    for pos, info in sorted(layout.partitions.items()):
        for loc in info["location"]:
            if isinstance(loc, (bool, np.bool_)) or not isinstance(loc, (int, np.integer)):
                raise DAPError(
                    f"partition {pos}: location {list(info['location'])!r} is not a list of "
                    "ranks, as an SPMD producer (one with 'locals') must give (unsupported "
                    "location)"
                )
            if not 0 <= loc < nranks:
                raise DAPError(
                    f"partition {pos}: location {list(info['location'])!r} names rank {loc}, "
                    f"outside this backend's ranks 0..{nranks - 1} (unsupported location)"
                )


def _needed(desc: Mapping, layout: _Layout, backend: Backend) -> dict[int, tuple[int, ...]]:
    """The partition each local rank takes, after the SPMD checks."""
    grid = ProcessGrid(layout.tiling)
    local = backend.local_ranks
    needed = {r: tuple(int(c) for c in grid.coords(r)) for r in local}
    if "locals" not in desc:
        for pos, info in sorted(layout.partitions.items()):
            if info["data"] is None:
                raise DAPError(
                    f"partition {pos}: data is None, but a producer without 'locals' "
                    "(handle-based) must give a handle for every partition"
                )
        return needed
    mine = desc["locals"]
    if isinstance(mine, (str, bytes)) or not isinstance(mine, (Sequence, np.ndarray)):
        raise DAPError(f"'locals' must be a list of partition positions, got {mine!r}")
    mine = [_position(p, layout.tiling, "'locals' entry") for p in mine]
    _check_spmd_locations(layout, backend.nranks)
    if len(local) < backend.nranks:  # one rank per process: it takes its locals
        (rank,) = local
        want = needed[rank]
        if len(mine) != 1:
            raise DAPError(
                f"this process (rank {rank}) has {len(mine)} local partitions {mine}, but a "
                "dapx rank holds exactly one: the producer needs one partition per process"
            )
        if mine[0] != want:
            raise DAPError(
                f"partition {mine[0]} is local to this process (rank {rank}), but dapx puts "
                f"grid position {want} on rank {rank} (ranks in row-major order of the "
                f"partition grid {layout.tiling}): the producer's ranks must follow that order"
            )
        location = layout.partitions[want]["location"]
        if rank not in [int(v) for v in location]:
            raise DAPError(
                f"partition {want} is listed in 'locals' of rank {rank}, but its location "
                f"{list(location)!r} does not name rank {rank}"
            )
    for pos in needed.values():
        if layout.partitions[pos]["data"] is None:
            raise DAPError(
                f"partition {pos}: data is None in this process, which holds its rank: "
                + (
                    "this process holds every rank, so it needs every partition's data"
                    if len(local) == backend.nranks
                    else "a local partition must carry its data"
                )
            )
    return needed


def _raise_everywhere(backend: Backend, error: Exception | None) -> None:
    """Raise `error` on every process when it happened on any (as a `DAPError`)."""
    local = backend.local_ranks
    if len(local) == backend.nranks:
        if error is not None:
            raise error
        return
    messages = backend.allgather({r: None if error is None else str(error) for r in local})
    for rank, message in enumerate(messages):
        if message is not None:
            raise DAPError(message if message.startswith("rank ") else f"rank {rank}: {message}")


def _from_scalar(desc: Mapping, layout: _Layout, backend: Backend) -> DistributedArray:
    info = layout.partitions[()]
    if info["data"] is None:
        raise DAPError(
            "partition (): data is None, but a 0-d array is replicated and every process "
            "needs its value"
        )
    value = _resolve((), info, desc["get"])
    return new_array(SCALAR, dict.fromkeys(backend.local_ranks, value), backend)


@collective
def from_partitioned(obj: Any, backend: Backend | None = None) -> DistributedArray:
    """Wrap a ``__partitioned__`` producer as a block-distributed array, without copying.

    Parameters
    ----------
    obj : object with ``__partitioned__``, or its dict
        Any conforming producer. SPMD producers (with ``locals``): under MPI
        each process takes its local partition; on the simulated backend
        every partition must have its data here. Handle-based producers (no
        ``locals``: dask futures, Ray refs, delayed objects, ...): every
        partition's ``data`` is a handle, resolved with the producer's
        ``get`` (any callable, lambdas included), one handle at a time.
        Data that NumPy can view without copying (NumPy arrays, objects
        with ``__array_interface__``, DLPack on the CPU such as torch
        tensors, ``__array__``) is used as it is, without calling ``get``.
        Extra keys, in the dict or in partitions, are ignored.
    backend : Backend, optional
        Default: the current backend. It must have one rank per partition.

    Returns
    -------
    DistributedArray
        Block-distributed over the grid ``partition_tiling``; the rank at
        grid coordinates ``p`` holds partition ``p`` (ranks in row-major
        order, as dapx numbers them). Its blocks share memory with the
        producer's data where that data was in this process.

    Raises
    ------
    DAPError
        Naming the partition, when the dict breaks the protocol: missing
        keys or grid positions, positions outside the grid, partitions that
        overlap, leave gaps or do not line up on a grid, data whose shape is
        not the partition's, data or location of an unsupported kind, a
        number of partitions other than the backend's ranks, or (under MPI)
        local partitions that are not this rank's grid position. Under MPI
        every process raises when any does.

    Examples
    --------
    A hand-built SPMD producer with the data of both partitions in this process:

    >>> import numpy as np, dapx
    >>> left, right = np.zeros((2, 3)), np.ones((2, 2))
    >>> desc = {
    ...     "shape": (2, 5), "partition_tiling": (1, 2), "get": lambda x: x,
    ...     "partitions": {
    ...         (0, 0): {"start": (0, 0), "shape": (2, 3), "data": left, "location": [0]},
    ...         (0, 1): {"start": (0, 3), "shape": (2, 2), "data": right, "location": [1]},
    ...     },
    ...     "locals": [(0, 0), (0, 1)],
    ... }
    >>> a = dapx.from_partitioned(desc, backend=dapx.simulated(2))
    >>> a.gather()
    array([[0., 0., 0., 1., 1.],
           [0., 0., 0., 1., 1.]])
    >>> np.shares_memory(a.local(1), right)
    True
    """
    backend = resolve_backend(backend)
    desc = _description(obj)
    error, result, blocks = None, None, {}
    try:
        layout = check_partitioned(desc)
        if layout.shape:
            blocks = _local_blocks(desc, layout, backend)
        else:
            result = _from_scalar(desc, layout, backend)
    except DAPError as e:
        if len(backend.local_ranks) == backend.nranks:
            raise
        error = e
    _raise_everywhere(backend, error)
    if result is not None:
        return result
    key = (layout.shape, layout.tiling, layout.bounds)
    meta = backend.allgather({r: (key, blocks[r].dtype.str) for r in backend.local_ranks})
    for rank, (other, dtype) in enumerate(meta):
        if other != key:
            raise DAPError(
                f"rank {rank}'s __partitioned__ describes shape {other[0]} with tiling "
                f"{other[1]} and bounds {other[2]}, but this process's describes shape "
                f"{key[0]} with tiling {key[1]} and bounds {key[2]}: every process must "
                "describe the same partitions"
            )
        if dtype != meta[0][1]:
            raise DAPError(
                f"rank {rank}'s partition has dtype {np.dtype(dtype)} but rank 0's has "
                f"{np.dtype(meta[0][1])}: all partitions must have the same type"
            )
    maps = [BlockMap(n, np.asarray(b, np.intp)) for n, b in zip(layout.shape, layout.bounds)]
    return new_array(Distribution(maps, layout.tiling), blocks, backend, check=True)


def _local_blocks(desc: Mapping, layout: _Layout, backend: Backend) -> dict[int, np.ndarray]:
    """The NumPy block of each local rank, after the count, SPMD and dtype checks."""
    count = math.prod(layout.tiling)
    if count != backend.nranks:
        raise DAPError(
            f"the producer has {count} partitions (partition_tiling {layout.tiling}) but the "
            f"backend has {backend.nranks} ranks: dapx holds exactly one partition per rank, "
            f"so use a backend with {count} ranks (dapx.simulated({count}), or mpiexec -n "
            f"{count})"
        )
    needed = _needed(desc, layout, backend)
    blocks = {r: _resolve(pos, layout.partitions[pos], desc["get"]) for r, pos in needed.items()}
    first = min(needed)
    for r, block in blocks.items():
        if block.dtype != blocks[first].dtype:
            raise DAPError(
                f"partition {needed[r]} has dtype {block.dtype} but partition "
                f"{needed[first]} has {blocks[first].dtype}: all partitions must have the "
                "same type"
            )
    return blocks
