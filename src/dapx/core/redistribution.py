"""Moving an array between layouts: redistribution, alignment and gathering.

Plans come from `dapx.exchange.plans` (pure metadata) and run through
`dapx.exchange.execute`; this module applies them to arrays.
"""

from __future__ import annotations

import numpy as np

from ..exchange.execute import move
from ..exchange.plans import (
    expand_dims_distribution,
    outer_index,
    owned_positions,
)
from ..layout.distribution import Distribution
from ..layout.spec import with_halo
from .array import new_array

__all__ = ["align", "gather", "redistribute"]


def align(x, target: Distribution) -> dict[int, np.ndarray]:
    """The local blocks of `x` laid out like `target` (broadcastable to its local shapes).

    Returns `x`'s own blocks when it already has that layout (no copy);
    dimensions where `x` has size 1 stay length 1 for NumPy to broadcast.
    """
    if x.distribution == target:
        return dict(x._locals)
    src = expand_dims_distribution(x.distribution, target.ndim)
    blocks = x._locals
    if src.ndim != x.ndim:
        blocks = {r: b.reshape((1,) * (src.ndim - x.ndim) + b.shape) for r, b in blocks.items()}
    if x.ndim == 0:
        return dict(blocks)
    return move(src, target, blocks, x.dtype, x.backend)


def redistribute(x, dist=None, grid=None, **options):
    """`x` laid out by a new distribution (see `DistributedArray.redistribute`).

    With only ``halo=`` (and ``periodic=``), the blocks and grid of `x` are
    kept and the halo replaced (undistributed or cyclic dimensions become
    even blocks over the same grid ranks).
    """
    if isinstance(dist, Distribution):
        if grid is not None or options:
            raise TypeError("pass either a Distribution or a description, not both")
        target = dist
    elif (
        dist is None
        and grid is None
        and "halo" in options
        and x.ndim
        and (set(options) <= {"halo", "periodic"})
    ):
        target = with_halo(x.distribution, options["halo"], options.get("periodic"))
    else:
        target = Distribution.create(x.shape, dist, grid, nranks=x.backend.nranks, **options)
    if target.global_shape != x.shape:
        raise ValueError(
            f"cannot redistribute an array of shape {x.shape} to a distribution of shape "
            f"{target.global_shape}"
        )
    if x.ndim and target.nranks != x.backend.nranks:
        raise ValueError(
            f"the target grid {target.grid_shape} has {target.nranks} ranks but the backend "
            f"has {x.backend.nranks}"
        )
    if x.ndim == 0:
        blocks = {r: b.copy() for r, b in x._locals.items()}
    else:
        blocks = move(x.distribution, target, x._locals, x._dtype, x._backend)
    return new_array(target, blocks, x._backend, x._dtype)


def gather(x) -> np.ndarray:
    """The whole array on every process, assembled from every rank's owned elements."""
    if x.ndim == 0:
        return x._locals[x.backend.local_ranks[0]].copy()
    dist = x.distribution
    pieces = {}
    for r, block in x._locals.items():
        local, _ = owned_positions(dist, r)
        pieces[r] = np.ascontiguousarray(block[outer_index(local)])
    everything = x.backend.allgather(pieces)
    out = np.empty(x.shape, x.dtype)
    for r, piece in enumerate(everything):
        _, glob = owned_positions(dist, r)
        out[outer_index(glob)] = piece
    return out
