"""The one executor of exchanges: pack, `Backend.alltoallv`, unpack.

Redistribution plans (`dapx.exchange.plans`) and halo plans
(`dapx.exchange.halo`) both describe an exchange as, for each local source
rank, the regions of its block to send (packed back to back in destination
rank order, one copy each), and for each local destination rank, where
every received segment goes. `execute` runs either; `run_plan` adapts an
`ExchangePlan` to it and allocates the destination blocks (or fills given ones).

Copies are avoided where the memory already has the packed layout: a source
whose pieces lie back to back in its (C-contiguous) block is sent from the
block itself, and with ``adopt=True`` a destination that is exactly the
received memory (one piece covering it, possibly reversed along axes, or the
backend's receive buffer in order) becomes that memory instead of being
copied into, unless the memory is a local source block's (the simulated
backend hands pieces over without copying, and a result never aliases an
input).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..layout.distribution import Distribution
from .plans import (
    ExchangePlan,
    FlatSide,
    exchange_plan,
    flat_recvs,
    flat_sends,
    many_pieces,
    received_shape,
)

__all__ = ["Blocks", "RecvItem", "SendItem", "execute", "move", "run_flat", "run_plan"]

#: The local blocks of an array: rank -> NumPy array.
Blocks = dict[int, np.ndarray]
#: A region of a source block: (key, offset in the packed buffer, element count, shape).
SendItem = tuple[tuple, int, int, tuple[int, ...]]
#: A received segment: (source rank, key in the destination, offset, element count, shape).
RecvItem = tuple[int, tuple, int, int, tuple[int, ...]]


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _packed_in_place(block: np.ndarray, items: Sequence[SendItem], total: int, dtype):
    """`block`'s own memory as the packed buffer, when its pieces already lie back to back.

    The pieces must be basic-index views, C-contiguous, each at its packing
    offset from the first; then the buffer is a 1-d view of the block.
    """
    if block.dtype != dtype or not block.flags.c_contiguous or not total:
        return None
    start = None
    for key, offset, n, _ in items:
        if not n:
            continue
        if not all(isinstance(k, slice) for k in key):
            return None  # an index array would copy just to be checked
        view = block[key]
        if not view.flags.c_contiguous:
            return None
        here = (_address(view) - _address(block)) // block.itemsize
        if start is None:
            start = here - offset
        elif here - offset != start:
            return None
    if start is None:
        return None
    return block.reshape(-1)[start : start + total]


def _whole_orientation(key, shape: tuple[int, ...]):
    """For a key covering a block of `shape` once (full slices, step 1 or -1): its inverse."""
    if not isinstance(key, tuple) or len(key) != len(shape):
        return None
    inverse = []
    for k, n in zip(key, shape):
        if not isinstance(k, slice):
            return None
        r = range(n)[k]
        if len(r) != n:
            return None
        inverse.append(slice(None) if r.step == 1 or n < 2 else slice(None, None, -1))
    return tuple(inverse)


def _received_block(segments: Sequence[np.ndarray], items, shape, dtype):
    """The destination block as received memory, if the segments are exactly it (else None)."""
    if len(items) == 1:
        (_, key, offset, n, _), seg = items[0], segments[0]
        inverse = _whole_orientation(key, shape)
        if inverse is None or seg.dtype != dtype:
            return None
        return seg[offset : offset + n].reshape(shape)[inverse]
    # Several segments: the backend's one receive buffer, in the block's C order.
    base = segments[0].base
    if (
        not isinstance(base, np.ndarray)
        or base.ndim != 1
        or base.dtype != dtype
        or not base.flags.c_contiguous
    ):
        return None
    expected, lead = _address(segments[0]) + items[0][2] * base.itemsize, 0
    for (_, key, offset, n, piece), seg in zip(items, segments):
        if seg.base is not base or _address(seg) + offset * base.itemsize != expected:
            return None
        if not isinstance(key, tuple) or len(key) != len(shape) or not shape:
            return None
        first = key[0]
        if not isinstance(first, slice) or range(shape[0])[first] != range(lead, lead + piece[0]):
            return None
        rest = zip(key[1:], shape[1:])
        if any(_whole_orientation((k,), (m,)) != (slice(None),) for k, m in rest):
            return None
        expected += n * base.itemsize
        lead += piece[0]
    if lead != shape[0]:
        return None
    start = (_address(segments[0]) - _address(base)) // base.itemsize + items[0][2]
    return base[start : start + math.prod(shape)].reshape(shape)


def execute(
    sources: Mapping[int, np.ndarray],
    sends: Mapping[int, tuple[np.ndarray, Sequence[SendItem]]],
    recvcounts: Mapping[int, np.ndarray],
    recvs: Mapping[int, Sequence[RecvItem]],
    destinations: Mapping[int, np.ndarray],
    dtype,
    backend,
    sparse=False,
    send_buffer: Callable[[int, np.dtype], np.ndarray] | None = None,
    adopt: bool = False,
) -> None:
    """Move the regions `sends` names from `sources` into `destinations`, in one exchange.

    ``sends[s] = (counts, items)``: per destination rank, how many elements
    local source `s` sends, and the regions in packing order.
    ``recvs[d]`` places each received segment; ``recvcounts[d]`` is what
    `d` expects from every rank. `send_buffer(s, dtype)` may supply a
    reusable pack buffer (halo plans keep one per rank). With `adopt`,
    `destinations` must be a dict of fresh blocks, any of which may be
    replaced by the received memory that would have been copied into it.
    """
    packed = {}
    dtype = np.dtype(dtype)
    for s, (counts, items) in sends.items():
        block = sources[s]
        total = int(counts.sum())
        buffer = None
        if send_buffer is None:
            buffer = _packed_in_place(block, items, total, dtype)
        if buffer is None:
            buffer = np.empty(total, dtype) if send_buffer is None else send_buffer(s, dtype)
            for key, offset, n, shape in items:
                np.copyto(buffer[offset : offset + n].reshape(shape), block[key])
        packed[s] = (buffer, counts)
    if sparse:
        received = backend.alltoallv(packed, recvcounts, sparse=sparse)
    else:  # the plain call, which wrappers of the three-argument form take too
        received = backend.alltoallv(packed, recvcounts)
    for d, items in recvs.items():
        block = destinations[d]
        live = [item for item in items if item[3]]
        if adopt and live:
            segments = [received[d][item[0]] for item in live]
            whole = _received_block(segments, live, block.shape, block.dtype)
            # Received memory must be writable (deserialised buffers may not be) and must
            # not be an input's block (the simulated backend passes pieces as views).
            if (
                whole is not None
                and whole.flags.writeable
                and not any(np.may_share_memory(whole, src) for src in sources.values())
            ):
                destinations[d] = whole
                continue
        for s, key, offset, n, shape in live:
            block[key] = received[d][s][offset : offset + n].reshape(shape)


def run_plan(
    plan: ExchangePlan,
    blocks: Mapping[int, np.ndarray],
    dtype,
    backend,
    out: Mapping[int, np.ndarray] | None = None,
) -> Blocks:
    """Execute `plan` on the local `blocks`; return the destination blocks.

    Each source packs its pieces into one buffer with one copy per piece
    (none when they lie back to back in its block); each destination copies
    every received piece into place once (none when the received memory is
    the block). `out`, when given, holds the destination blocks (views into
    larger arrays, say) to write into, and is returned.
    """
    nranks = backend.nranks
    sends = {}
    for s, pieces in plan.sends.items():
        counts = np.zeros(nranks, np.intp)
        items, offset = [], 0
        for d in sorted(pieces):
            p = pieces[d]
            n = counts[d] = math.prod(p.shape)
            items.append((p.src_key, offset, n, p.shape))
            offset += n
        sends[s] = (counts, items)
    given = out
    recvcounts, recvs, out = {}, {}, ({} if given is None else given)
    for r, pieces in plan.recvs.items():
        counts = np.zeros(nranks, np.intp)
        items = []
        for s, p in pieces.items():
            n = counts[s] = math.prod(p.shape)
            items.append((s, p.dst_key, 0, n, p.shape))
        recvcounts[r], recvs[r] = counts, items
        if given is None:
            shape = plan.dst_local_shapes[r]
            covered = int(counts.sum()) == math.prod(shape)
            out[r] = np.empty(shape, dtype) if covered else np.zeros(shape, dtype)
    execute(blocks, sends, recvcounts, recvs, out, dtype, backend, adopt=given is None)
    return out


@functools.lru_cache(maxsize=8)
def _all_flat(src: Distribution, dst: Distribution):
    """Every rank's `FlatSide` s (sends, receives) and received shapes: built once per pair."""
    ranks = range(src.nranks)
    sends = {r: flat_sends(src, dst, r) for r in ranks}
    recvs = {r: flat_recvs(src, dst, r) for r in ranks}
    shapes = {r: received_shape(src, dst, r) for r in ranks}
    return sends, recvs, shapes


def run_flat(
    sends: Mapping[int, FlatSide],
    recvs: Mapping[int, FlatSide],
    shapes: Mapping[int, tuple[int, ...]],
    blocks: Mapping[int, np.ndarray],
    dtype,
) -> Blocks:
    """Execute flat plans of *every* rank in this process: gathers instead of messages.

    Each source packs with one gather (its `FlatSide` index); the packed
    buffers lie back to back, and each destination takes its segments from
    every source (a ragged range, built with NumPy from the P x P count
    matrix) and scatters them with one assignment: O(P) NumPy work per rank
    plus the data, whatever the number of pieces.
    """
    dtype = np.dtype(dtype)
    order = sorted(sends)
    packed = np.concatenate(
        [np.asarray(blocks[s]).reshape(-1)[sends[s].index] for s in order] or [np.zeros(0, dtype)],
        dtype=dtype,
        casting="same_kind",
    )
    matrix = np.stack([sends[s].counts for s in order])  # [source, destination]
    starts = (np.cumsum(matrix.reshape(-1)) - matrix.reshape(-1)).reshape(matrix.shape)
    out = {}
    for d, side in recvs.items():
        lens = matrix[:, d]
        if not np.array_equal(lens, side.counts):
            raise AssertionError(f"rank {d} expects {side.counts}, the sources send {lens}")
        total = int(lens.sum())
        ends = np.cumsum(lens)
        take = np.repeat(starts[:, d] - (ends - lens), lens) + np.arange(total, dtype=np.intp)
        shape = shapes[d]
        block = np.empty(shape, dtype) if total == math.prod(shape) else np.zeros(shape, dtype)
        block.reshape(-1)[side.index] = packed[take]
        out[d] = block
    return out


#: Ranks from which a process holding them all runs many-small-piece exchanges as one flat
#: gather: below it the piece plan is cheap, and running every exchange through the backend's
#: all-to-all keeps it observable (tests count what each rank receives there).
FLAT_MIN_RANKS = 64


def move(
    src: Distribution, dst: Distribution, blocks: Mapping[int, np.ndarray], dtype, backend
) -> Blocks:
    """The local blocks of `dst`'s layout, from `blocks` laid out by `src`: one exchange.

    When this process holds every rank (the simulated backend), there are at
    least `FLAT_MIN_RANKS` of them and the pieces are many and small (block ->
    cyclic: a piece per rank pair),
    every rank's flat plan is built once and run with gathers, without a
    Python object per piece; otherwise the piece plan runs through the
    backend's all-to-all. Both move the same elements to the same places.
    """
    local = tuple(backend.local_ranks)
    if len(local) == backend.nranks == src.nranks >= FLAT_MIN_RANKS and many_pieces(src, dst):
        sends, recvs, shapes = _all_flat(src, dst)
        return run_flat(sends, recvs, shapes, blocks, dtype)
    return run_plan(exchange_plan(src, dst, local), blocks, dtype, backend)
