"""The one executor of exchanges: pack, `Backend.alltoallv`, unpack.

Redistribution plans (`dapx.exchange.plans`) and halo plans
(`dapx.exchange.halo`) both describe an exchange as, for each local source
rank, the regions of its block to send (packed back to back in destination
rank order, one copy each), and for each local destination rank, where
every received segment goes. `execute` runs either; `run_plan` adapts an
`ExchangePlan` to it and allocates the destination blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .plans import ExchangePlan

__all__ = ["Blocks", "RecvItem", "SendItem", "execute", "run_plan"]

#: The local blocks of an array: rank -> NumPy array.
Blocks = dict[int, np.ndarray]
#: A region of a source block: (key, offset in the packed buffer, element count, shape).
SendItem = tuple[tuple, int, int, tuple[int, ...]]
#: A received segment: (source rank, key in the destination, offset, element count, shape).
RecvItem = tuple[int, tuple, int, int, tuple[int, ...]]


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
) -> None:
    """Move the regions `sends` names from `sources` into `destinations`, in one exchange.

    ``sends[s] = (counts, items)``: per destination rank, how many elements
    local source `s` sends, and the regions in packing order.
    ``recvs[d]`` places each received segment; ``recvcounts[d]`` is what
    `d` expects from every rank. `send_buffer(s, dtype)` may supply a
    reusable pack buffer (halo plans keep one per rank).
    """
    packed = {}
    for s, (counts, items) in sends.items():
        if send_buffer is None:
            buffer = np.empty(int(counts.sum()), dtype)
        else:
            buffer = send_buffer(s, dtype)
        block = sources[s]
        for key, offset, n, shape in items:
            np.copyto(buffer[offset : offset + n].reshape(shape), block[key])
        packed[s] = (buffer, counts)
    if sparse:
        received = backend.alltoallv(packed, recvcounts, sparse=sparse)
    else:  # the plain call, which wrappers of the three-argument form take too
        received = backend.alltoallv(packed, recvcounts)
    for d, items in recvs.items():
        block = destinations[d]
        for s, key, offset, n, shape in items:
            if n:
                block[key] = received[d][s][offset : offset + n].reshape(shape)


def run_plan(plan: ExchangePlan, blocks: Mapping[int, np.ndarray], dtype, backend) -> Blocks:
    """Execute `plan` on the local `blocks`; return the destination blocks.

    Each source packs its pieces into one buffer with one copy per piece;
    each destination copies every received piece into place once.
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
    recvcounts, recvs, out = {}, {}, {}
    for r, pieces in plan.recvs.items():
        counts = np.zeros(nranks, np.intp)
        items = []
        for s, p in pieces.items():
            n = counts[s] = math.prod(p.shape)
            items.append((s, p.dst_key, 0, n, p.shape))
        recvcounts[r], recvs[r] = counts, items
        shape = plan.dst_local_shapes[r]
        covered = int(counts.sum()) == math.prod(shape)
        out[r] = np.empty(shape, dtype) if covered else np.zeros(shape, dtype)
    execute(blocks, sends, recvcounts, recvs, out, dtype, backend)
    return out
