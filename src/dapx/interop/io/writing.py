"""What every writer shares: chunk-aligned layouts, each rank's region, turns.

A parallel write is safe when no two ranks ever write the same chunk of the
file. `chunk_aligned` lays an array out (in at most one exchange) so that
each rank owns a box of whole chunks; `owned_regions` gives each local
rank's box and the part of its block that fills it (never the halo); and
`in_turn` lets the ranks write one after the other where the file format
admits one writer at a time (HDF5 without MPI-IO).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from ...core.array import DistributedArray
from ...exchange.plans import owned_positions, simplify_index
from ...layout.maps import BlockMap

__all__ = [
    "INCOMPLETE",
    "chunk_aligned",
    "default_chunks",
    "in_turn",
    "once",
    "owned_regions",
    "writer_of",
]

#: The attribute a dapx writer puts on what it creates and removes once every rank has written.
INCOMPLETE = "dapx_write_incomplete"


def _regular(bounds: np.ndarray) -> bool:
    """Whether the blocks are equal, the last one possibly shorter (zarr's regular chunks)."""
    sizes = np.diff(bounds)
    return sizes.size <= 1 or ((sizes[:-1] == sizes[0]).all() and sizes[-1] <= sizes[0])


#: The largest default chunk: a rank's block is cut into chunks no bigger, so that encoding
#: and decoding one chunk at a time never needs much more memory than the block itself.
CHUNK_BYTES = 64 * 2**20


def default_chunks(a: DistributedArray) -> tuple[int, ...]:
    """Chunks that divide `a`'s own blocks, at most `CHUNK_BYTES` each.

    Regular blocks give the chunk shape (else ``ceil(size / ranks)`` per
    dimension); a chunk larger than `CHUNK_BYTES` is divided along its leading
    dimensions by divisors of its length, so chunk boundaries stay on block
    boundaries.

    Examples
    --------
    >>> import dapx
    >>> a = dapx.zeros((400, 100, 1000), dist=("b", "n", "n"), backend=dapx.simulated(4))
    >>> default_chunks(a)  # blocks of 100 rows are 80 MB: chunks of 50 rows
    (50, 100, 1000)
    """
    chunks = []
    for m, n in zip(a.distribution.maps, a.shape):
        if isinstance(m, BlockMap) and _regular(m.bounds):
            chunks.append(max(int(np.diff(m.bounds).max(initial=0)), 1))
        else:
            chunks.append(max(math.ceil(n / m.nprocs), 1))
    itemsize = max(a.dtype.itemsize, 1)
    for k in range(len(chunks)):
        while math.prod(chunks) * itemsize > CHUNK_BYTES and chunks[k] > 1:
            chunks[k] //= _smallest_factor(chunks[k])
    return tuple(chunks)


def _smallest_factor(n: int) -> int:
    return next((p for p in range(2, math.isqrt(n) + 1) if n % p == 0), n)


def _check_chunks(chunks, shape) -> tuple[int, ...]:
    if len(chunks) != len(shape):
        raise ValueError(f"chunks {tuple(chunks)} do not match the {len(shape)}-d shape {shape}")
    out = []
    for c, n in zip(chunks, shape):
        c = n if c in (None, -1) else c
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 0:
            raise ValueError(f"chunks must be positive integers (or -1 for whole), got {chunks}")
        out.append(max(int(c), 1))
    return tuple(out)


def _aligned(m, n: int, c: int) -> bool:
    if not isinstance(m, BlockMap):
        if m.nprocs == 1:  # one rank holds the whole dimension: aligned if in order
            held = simplify_index(m.global_indices(0))
            return isinstance(held, slice) and (held.step or 1) == 1

        return False
    inner = np.asarray(m.bounds)[1:-1]
    return bool(((inner % c == 0) | (inner == n)).all())


def _chunk_bounds(n: int, c: int, p: int) -> list[int]:
    """Block bounds over `p` ranks that fall on multiples of `c`, chunks split evenly."""
    nchunks = math.ceil(n / c)
    counts = np.full(p, nchunks // p)
    counts[: nchunks % p] += 1
    return np.minimum(np.concatenate(([0], np.cumsum(counts))) * c, n).tolist()


def chunk_aligned(
    a: DistributedArray, chunks: Sequence[int | None] | None = None
) -> tuple[DistributedArray, tuple[int, ...]]:
    """(`a`, or `a` redistributed in one exchange, so that every rank owns whole chunks; chunks).

    The grid is kept; dimensions whose blocks do not fall on chunk
    boundaries (cyclic, unstructured, irregular blocks) become blocks that
    do. The halo is dropped when `a` has to move anyway.

    Examples
    --------
    >>> import dapx
    >>> a = dapx.arange(10, dist="c", backend=dapx.simulated(3))
    >>> b, chunks = chunk_aligned(a)
    >>> chunks, b.distribution.maps[0].bounds.tolist()
    ((4,), [0, 4, 8, 10])
    """
    shape = a.shape
    chunks = default_chunks(a) if chunks is None else _check_chunks(tuple(chunks), shape)
    maps = a.distribution.maps
    if all(_aligned(m, n, c) for m, n, c in zip(maps, shape, chunks)):
        return a, chunks
    specs = [
        {"dist": "b", "bounds": _chunk_bounds(n, c, m.nprocs)}
        for m, n, c in zip(maps, shape, chunks)
    ]
    return a.redistribute(specs, [m.nprocs for m in maps]), chunks


def owned_regions(a: DistributedArray) -> Iterator[tuple[int, tuple[slice, ...], np.ndarray]]:
    """(rank, global region, the block's values there) for each local rank that owns elements.

    `a` must be laid out in blocks (see `chunk_aligned`); the values are
    views of the block without its halo.
    """
    dist = a.distribution
    for rank in a.backend.local_ranks:
        if not a.ndim:
            yield rank, (), a.local(rank)
            continue
        local, glob = owned_positions(dist, rank)
        if any(isinstance(g, np.ndarray) or (g.step or 1) != 1 for g in glob):
            raise ValueError("owned_regions needs a block layout: call chunk_aligned first")
        if all(g.stop > g.start for g in glob):
            yield rank, glob, a.local(rank)[local]


def once(backend, func: Callable[[], None]) -> None:
    """Run `func` on the process of rank 0 while every other rank waits for it (collective)."""
    if 0 in backend.local_ranks:
        func()
    backend.barrier()


def writer_of(a: DistributedArray) -> bool:
    """Whether this process creates the file (it holds rank 0)."""
    return 0 in a.backend.local_ranks


def in_turn(a: DistributedArray, write: Callable[[int], None]) -> None:
    """Call ``write(rank)`` for every local rank, the ranks strictly one after another.

    Between turns every rank waits (a barrier), so that a format that admits
    one writer at a time (HDF5 without MPI-IO) is opened by one process at a
    time; processes that hold all ranks (the simulated backend) need no wait.
    """
    backend = a.backend
    if len(backend.local_ranks) == backend.nranks:
        for rank in backend.local_ranks:
            write(rank)
        return
    for rank in range(backend.nranks):
        if backend.is_local(rank):
            write(rank)
        backend.barrier()
