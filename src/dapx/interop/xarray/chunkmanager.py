"""dapx as an xarray chunk manager: ``chunked_array_type="dapx"`` opens files distributed.

With the ``xarray.chunkmanagers`` entry point (in pyproject.toml),

    xr.open_dataset(path, chunked_array_type="dapx", chunks={"lat": 45})
    xr.open_zarr(store, chunked_array_type="dapx", chunks={"lat": 45})
    ds.chunk({"lat": 45}, chunked_array_type="dapx")

give variables whose data is a `DistributedArray`, each rank reading only
its own block (`dapx.from_array`). Pass the backend with
``from_array_kwargs={"backend": b}`` (default: the current backend).

What ``chunks=`` means for dapx: **block sizes, from which the grid
follows**, as for dask. Each dimension is cut into the given blocks (an int
``c`` gives blocks of ``c``, the last possibly shorter; a tuple gives them
explicitly; ``-1`` or None leaves the dimension whole); the number of blocks
per dimension is the process grid, so the product must equal the number of
ranks. ``"auto"`` dimensions share out the ranks that the others leave,
over dapx's default grid; ``chunks={}`` means the file's own chunks, as in xarray. A variable that
none of the chunked dimensions cuts (a coordinate, a bounds variable) is
read into NumPy, as ``.dap.distribute`` leaves it; any other variable must
come out as exactly one block per rank, or a ValueError says how many.
The backend is ``from_array_kwargs={"backend": b}`` or the current one;
``"auto"`` dimensions are resolved for the current one, so with several
backends prefer ``with dapx.use_backend(b):``.

Like the arkouda chunk manager this one is eager: reading happens when the
variable is made. A DistributedArray has no ``.chunks`` attribute, so xarray
treats it as an in-memory duck array afterwards: its operations stay
distributed through dapx, and ``.compute()``/``.load()`` do not gather (use
``.dap.gather()``, an explicit collective). This manager's own `compute`
gathers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from xarray.namedarray.parallelcompat import ChunkManagerEntrypoint

from ...backends import get_backend, resolve_backend
from ...core.array import DistributedArray
from ...layout.grid import default_grid
from ...layout.maps import BlockMap
from ..io.reading import from_array

__all__ = ["DapxChunkManager", "grid_of_chunks"]


def _even(n: int, p: int) -> tuple[int, ...]:
    return tuple(n // p + (1 if k < n % p else 0) for k in range(p))


def _blocks(chunk, n: int) -> tuple[int, ...] | None:
    """One dimension's block sizes from an int, -1/None or a tuple; None for "auto"."""
    if chunk == "auto":
        return None
    if chunk is None or chunk == -1:
        return (n,)
    if isinstance(chunk, (int, np.integer)) and not isinstance(chunk, bool):
        if chunk <= 0:
            raise ValueError(f"a chunk size must be positive (or -1 for whole), got {chunk}")
        c = int(chunk)
        return (c,) * (n // c) + ((n % c,) if n % c else ()) if n else (0,)
    sizes = tuple(int(s) for s in chunk)
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise ValueError(f"chunks {sizes} do not add up to the dimension's length {n}")
    return sizes


def grid_of_chunks(chunks, shape: tuple[int, ...], nranks: int) -> tuple[tuple[int, ...], ...]:
    """Block sizes per dimension for `chunks` (see the module notes).

    ``"auto"`` dimensions share out the `nranks` that the explicit ones
    leave (over dapx's default grid); the result is not checked against
    `nranks` (`DapxChunkManager.from_array` does that).

    Examples
    --------
    >>> grid_of_chunks((45, -1), (180, 360), 4)
    ((45, 45, 45, 45), (360,))
    >>> grid_of_chunks(("auto", 180), (10, 360), 4)
    ((5, 5), (180, 180))
    """
    if isinstance(chunks, dict):
        chunks = tuple(chunks.get(k, "auto") for k in range(len(shape)))
    elif not isinstance(chunks, (tuple, list)):
        chunks = (chunks,) * len(shape)
    if len(chunks) != len(shape):
        raise ValueError(f"chunks {chunks} do not match the {len(shape)}-d shape {shape}")
    blocks = [_blocks(c, n) for c, n in zip(chunks, shape)]
    free = [k for k, b in enumerate(blocks) if b is None]
    if free:
        fixed = math.prod(len(b) for b in blocks if b is not None)
        left = max(nranks // fixed, 1) if nranks % fixed == 0 else 1
        grid = default_grid(shape, left, [0 if b is None else 1 for b in blocks])
        for k in free:
            blocks[k] = _even(shape[k], grid[k])
    return tuple(blocks)


def _specs(blocks) -> list[dict]:
    return [{"dist": "b", "bounds": np.concatenate(([0], np.cumsum(b))).tolist()} for b in blocks]


def _check_count(blocks, shape, nranks: int) -> None:
    count = math.prod(len(b) for b in blocks)
    if count != nranks:
        raise ValueError(
            f"chunks {tuple(blocks)} cut the shape {tuple(shape)} into {count} blocks, but dapx "
            f"needs one block per rank and the backend has {nranks} ranks"
        )


_DASK_ONLY = ("name", "lock", "inline_array", "asarray", "meta", "fancy", "getitem")


class DapxChunkManager(ChunkManagerEntrypoint):
    """xarray's interface to dapx as a chunked array type (see the module notes)."""

    def __init__(self) -> None:
        self.array_cls = DistributedArray
        self.available = True

    def is_chunked_array(self, data: Any) -> bool:
        return isinstance(data, DistributedArray)

    def chunks(self, data: DistributedArray) -> tuple[tuple[int, ...], ...]:
        """Each dimension's block sizes (a non-block dimension: its ranks' element counts)."""
        out = []
        for m in data.distribution.maps:
            if isinstance(m, BlockMap):
                out.append(tuple(int(s) for s in np.diff(m.bounds)))
            else:
                out.append(tuple(int(m.num_owned(c)) for c in range(m.nprocs)))
        return tuple(out)

    def normalize_chunks(self, chunks, shape=None, limit=None, dtype=None, previous_chunks=None):
        if shape is None:
            raise ValueError("dapx needs the shape to normalize chunks")
        return grid_of_chunks(chunks, tuple(shape), get_backend().nranks)

    def from_array(self, data: Any, chunks, **kwargs: Any) -> DistributedArray:
        backend = resolve_backend(kwargs.pop("backend", None))
        for name in _DASK_ONLY:  # what xarray passes for dask; meaningless for dapx
            kwargs.pop(name, None)
        if kwargs:
            raise TypeError(f"unexpected from_array_kwargs for dapx: {sorted(kwargs)}")
        blocks = grid_of_chunks(chunks, tuple(data.shape), backend.nranks)
        if math.prod(len(b) for b in blocks) == 1 and backend.nranks > 1:
            # Note: a variable that none of the chunked dimensions cut stays NumPy-backed,
            # as the accessor leaves variables that lack the distributed dimensions.
            return np.asarray(data)
        _check_count(blocks, data.shape, backend.nranks)
        return from_array(data, dist=_specs(blocks), grid=[len(b) for b in blocks], backend=backend)

    def rechunk(self, data: DistributedArray, chunks, **kwargs: Any) -> DistributedArray:
        blocks = grid_of_chunks(chunks, data.shape, data.backend.nranks)
        _check_count(blocks, data.shape, data.backend.nranks)
        return data.redistribute(_specs(blocks), [len(b) for b in blocks])

    def compute(self, *data: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Every array gathered on every process (an explicit, collective gather)."""
        return tuple(d.gather() if isinstance(d, DistributedArray) else d for d in data)

    def apply_gufunc(self, func, signature, *args, **kwargs):
        raise NotImplementedError(
            "dapx arrays run NumPy functions distributed themselves: call xarray's operations "
            "(or apply_ufunc with dask='allowed') on them instead of dask='parallelized'"
        )
