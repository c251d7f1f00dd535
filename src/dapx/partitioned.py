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
  the partitions tile the shape along a grid.
* `to_dask` and `from_dask` convert to and from ``dask.array`` along the same
  block grid.
"""

from __future__ import annotations

import itertools
import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from .array import SCALAR, DistributedArray
from .backends import Backend
from .creation import _backend
from .distribution import Distribution
from .errors import DAPError
from .grid import ProcessGrid
from .guard import collective
from .maps import BlockMap, Map
from .redistribute import owned_positions

__all__ = [
    "check_partitioned",
    "from_dask",
    "from_partitioned",
    "get_data",
    "get_futures",
    "partitioned",
    "partitioned_futures",
    "to_dask",
]

_REQUIRED_KEYS = ("shape", "partition_tiling", "partitions", "get")
_PARTITION_KEYS = ("start", "shape", "data", "location")


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
            "data": a._locals[local[0]],
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
        partitions[pos]["data"] = a._locals[r][positions]
    return {
        "shape": a.shape,
        "partition_tiling": dist.grid_shape,
        "partitions": partitions,
        "get": get_data,
        "locals": [tuple(int(c) for c in dist.coords(r)) for r in local],
    }


def get_futures(handles: Any) -> Any:
    """The ``get`` of dask-backend exports: the data of one future or of a sequence of them."""
    if isinstance(handles, (list, tuple)):
        return handles[0].client.gather(list(handles)) if handles else []
    return handles.result()


def _owned_block(actor, array_id: int) -> np.ndarray:
    return actor.owned_block(array_id).result()


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
        future = client.submit(_owned_block, backend.actors[r], a._remote_id, workers=[worker],
                               allow_other_workers=False, pure=False)  # fmt: skip
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


# -- checking a producer's dict -------------------------------------------------------------


class _Layout(NamedTuple):
    shape: tuple[int, ...]
    tiling: tuple[int, ...]
    bounds: tuple[tuple[int, ...], ...]
    partitions: dict[tuple[int, ...], Mapping]


def _ints(value: Any, what: str, minimum: int) -> tuple[int, ...]:
    bad = DAPError(f"{what} must be a tuple of integers >= {minimum}, got {value!r}")
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise bad
    out = []
    for v in value:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < minimum:
            raise bad
        out.append(int(v))
    return tuple(out)


def _position(key: Any, tiling: tuple[int, ...], what: str) -> tuple[int, ...]:
    ok = isinstance(key, tuple) and len(key) == len(tiling)
    ok = ok and all(
        isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)) for k in key
    )
    if not ok or not all(0 <= k < t for k, t in zip(key, tiling)):
        raise DAPError(
            f"{what} {key!r} is not a position in the partition grid {tiling}: positions are "
            f"tuples of {len(tiling)} integers, each below the tiling"
        )
    return tuple(int(k) for k in key)


def _check_partition(pos, info, shape) -> Mapping:
    if not isinstance(info, Mapping):
        raise DAPError(
            f"partition {pos} must map to a dict with keys {list(_PARTITION_KEYS)}, "
            f"got {type(info).__name__}"
        )
    missing = [k for k in _PARTITION_KEYS if k not in info]
    if missing:
        raise DAPError(f"partition {pos} lacks required key(s) {missing}")
    ndim = len(shape)
    start = _ints(info["start"], f"partition {pos}: 'start'", 0)
    extent = _ints(info["shape"], f"partition {pos}: 'shape'", 0)
    for key, value in (("start", start), ("shape", extent)):
        if len(value) != ndim:
            raise DAPError(
                f"partition {pos}: {key!r} {value} must have {ndim} entries, one per dimension "
                f"of the shape {shape}"
            )
    for i in range(ndim):
        if start[i] + extent[i] > shape[i]:
            raise DAPError(
                f"partition {pos} covers indices {start[i]}..{start[i] + extent[i] - 1} of "
                f"dim {i}, beyond its size {shape[i]} (shape mismatch)"
            )
    location = info["location"]
    if (
        isinstance(location, (str, bytes))
        or not isinstance(location, (Sequence, np.ndarray))
        or len(location) == 0
    ):
        raise DAPError(
            f"partition {pos}: 'location' must be a non-empty sequence of ranks or addresses, "
            f"got {location!r} (unsupported location)"
        )
    return {"start": start, "shape": extent, "data": info["data"], "location": location}


def _grid_bounds(dim: int, size: int, count: int, parts: dict) -> tuple[int, ...]:
    """Boundaries along `dim` of partitions that must form a grid tiling 0..size."""
    first: list = [None] * count
    for pos in sorted(parts):
        c, s, n = pos[dim], parts[pos]["start"][dim], parts[pos]["shape"][dim]
        if first[c] is None:
            first[c] = (s, n, pos)
        elif (s, n) != first[c][:2]:
            s0, n0, p0 = first[c]
            raise DAPError(
                f"partition {pos} covers indices {s}..{s + n - 1} of dim {dim} but partition "
                f"{p0}, at the same grid index {c} along dim {dim}, covers {s0}..{s0 + n0 - 1}: "
                "partitions must form a grid"
            )
    bounds = [0]
    for c in range(count):
        s, n, pos = first[c]
        end = bounds[-1]
        if s < end:
            raise DAPError(
                f"partition {pos} starts at {s} along dim {dim}, but the partition before it "
                f"({first[c - 1][2]}) ends at {end}: they overlap"
            )
        if s > end:
            raise DAPError(
                f"partition {pos} starts at {s} along dim {dim}, leaving indices {end}..{s - 1} "
                "covered by no partition (a gap)"
            )
        bounds.append(s + n)
    if bounds[-1] != size:
        raise DAPError(
            f"the partitions along dim {dim} end at {bounds[-1]} (the last is partition "
            f"{first[-1][2]}) but the shape says {size}: indices {bounds[-1]}..{size - 1} are "
            "covered by no partition (a gap)"
        )
    return tuple(bounds)


def check_partitioned(desc: Any) -> _Layout:
    """Check the rules of the protocol that need no data; return the layout.

    The layout holds the normalised ``shape``, ``partition_tiling``, the
    partition boundaries along each dimension and the checked partitions.

    Raises
    ------
    DAPError
        Naming the partition at fault: missing keys or positions, positions
        outside the grid, bad ``start``/``shape``/``location``, partitions
        that overlap, leave gaps, or do not line up along a grid.

    Examples
    --------
    >>> import dapx
    >>> layout = check_partitioned(dapx.arange(10, backend=dapx.simulated(3)).__partitioned__)
    >>> layout.tiling, layout.bounds
    ((3,), ((0, 4, 7, 10),))
    """
    if not isinstance(desc, Mapping):
        raise DAPError(f"__partitioned__ must be a dict, got {type(desc).__name__}")
    missing = [k for k in _REQUIRED_KEYS if k not in desc]
    if missing:
        raise DAPError(f"the __partitioned__ dict lacks required key(s) {missing}")
    shape = _ints(desc["shape"], "'shape'", 0)
    tiling = _ints(desc["partition_tiling"], "'partition_tiling'", 1)
    if len(tiling) != len(shape):
        raise DAPError(
            f"'partition_tiling' {tiling} must have one entry per dimension of 'shape' {shape}"
        )
    if not callable(desc["get"]):
        raise DAPError(f"'get' must be callable, got {desc['get']!r}")
    raw = desc["partitions"]
    if not isinstance(raw, Mapping):
        raise DAPError(f"'partitions' must be a dict, got {type(raw).__name__}")
    parts: dict[tuple[int, ...], Mapping] = {}
    for key, info in raw.items():
        pos = _position(key, tiling, "partition key")
        if pos in parts:
            raise DAPError(f"partition {pos} appears twice in 'partitions' (keys equal as ints)")
        parts[pos] = _check_partition(pos, info, shape)
    if len(parts) != math.prod(tiling):
        for pos in itertools.product(*(range(t) for t in tiling)):
            if pos not in parts:
                raise DAPError(
                    f"partition {pos} is missing: every position of the partition grid "
                    f"{tiling} must be a key of 'partitions'"
                )
    bounds = tuple(_grid_bounds(i, shape[i], tiling[i], parts) for i in range(len(shape)))
    return _Layout(shape, tiling, bounds, parts)


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
    return DistributedArray(SCALAR, dict.fromkeys(backend.local_ranks, value), backend)


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
    backend = _backend(backend)
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
    return DistributedArray(Distribution(maps, layout.tiling), blocks, backend)


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


# -- dask ------------------------------------------------------------------------------------


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

    backend = _backend(backend)
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
