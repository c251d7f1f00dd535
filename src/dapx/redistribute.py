"""Moving data between layouts: redistribution, alignment and gathering.

Plans come from `dapx.plans` (pure metadata); this module executes them
through the backend's all-to-all, packing each piece with one copy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from .distribution import Distribution
from .maps import BlockMap
from .plans import ExchangePlan, exchange_plan, outer_index, simplify_index

__all__ = ["align", "expand_dims_distribution", "gather", "redistribute", "run_plan"]


def run_plan(plan: ExchangePlan, blocks: Mapping[int, np.ndarray], dtype, backend):
    """Execute `plan` on the local `blocks`; return the destination blocks.

    Each source packs its pieces into one buffer with one copy per piece;
    each destination copies every received piece into place once.
    """
    nranks = backend.nranks
    sends = {}
    for s, pieces in plan.sends.items():
        counts = np.zeros(nranks, np.intp)
        for d, p in pieces.items():
            counts[d] = math.prod(p.shape)
        buffer = np.empty(int(counts.sum()), dtype)
        offset = 0
        for d in sorted(pieces):
            p, n = pieces[d], int(counts[d])
            np.copyto(buffer[offset : offset + n].reshape(p.shape), blocks[s][p.src_key])
            offset += n
        sends[s] = (buffer, counts)
    recvcounts = {}
    for r, pieces in plan.recvs.items():
        counts = np.zeros(nranks, np.intp)
        for s, p in pieces.items():
            counts[s] = math.prod(p.shape)
        recvcounts[r] = counts
    received = backend.alltoallv(sends, recvcounts)
    out = {}
    for r, pieces in plan.recvs.items():
        shape = plan.dst_local_shapes[r]
        covered = int(recvcounts[r].sum()) == math.prod(shape)
        dst = np.empty(shape, dtype) if covered else np.zeros(shape, dtype)
        for s, p in pieces.items():
            if math.prod(p.shape):
                dst[p.dst_key] = received[r][s].reshape(p.shape)
        out[r] = dst
    return out


def expand_dims_distribution(dist: Distribution, ndim: int) -> Distribution:
    """`dist` with undistributed size-1 dimensions prepended up to `ndim`."""
    extra = ndim - dist.ndim
    if extra <= 0:
        return dist
    return Distribution((*(BlockMap(1, nprocs=1) for _ in range(extra)), *dist.maps))


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
    plan = exchange_plan(src, target, x.backend.local_ranks)
    return run_plan(plan, blocks, x.dtype, x.backend)


def _with_halo(dist: Distribution, halo, periodic) -> Distribution:
    """`dist`'s blocks (even blocks for other dimensions) on its grid, with a new halo."""
    from .errors import DAPError
    from .layout_spec import _halo_pair, _per_dim, _per_dim_halo

    halos = _per_dim_halo(halo, dist.ndim)
    periodics = _per_dim(periodic, dist.ndim, "periodic")
    maps = []
    for k, (m, h, p) in enumerate(zip(dist.maps, halos, periodics)):
        lo, hi = _halo_pair(h, k) or (0, 0)
        block = isinstance(m, BlockMap)
        p = (m.periodic if block else False) if p is None else bool(p)
        if lo != hi and (m.nprocs > 1 or p):
            raise DAPError(
                f"dim {k}: the halo {(lo, hi)} is asymmetric, which the DAP allows only on an "
                f"undistributed, non-periodic dimension: use a symmetric halo {max(lo, hi)}"
            )
        padding = np.tile(np.array([lo, hi], np.intp), (m.nprocs, 1))
        try:
            maps.append(BlockMap(m.size, m.bounds if block else None, nprocs=m.nprocs,
                                 padding=padding, periodic=p, ghost_edges=True))  # fmt: skip
        except DAPError as e:
            raise DAPError(f"dim {k}: {e}") from None
    return Distribution(maps, dist.grid)


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
    elif dist is None and grid is None and "halo" in options and x.ndim and (
        set(options) <= {"halo", "periodic"}
    ):
        target = _with_halo(x.distribution, options["halo"], options.get("periodic"))
    else:
        target = Distribution.create(
            x.shape, dist, grid, nranks=x.backend.nranks, **options
        )
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
        return x._new(target, {r: b.copy() for r, b in x._locals.items()})
    plan = exchange_plan(x.distribution, target, x.backend.local_ranks)
    return x._new(target, run_plan(plan, x._locals, x.dtype, x.backend))


def owned_positions(dist: Distribution, rank: int):
    """(local index, global index) per dimension of what `rank` owns, as slices when possible."""
    local, glob = [], []
    for m, c in zip(dist.maps, dist.coords(rank)):
        owned = m.owned_indices(c)
        _, loc = m.owner(owned) if owned.size else (None, owned)
        local.append(simplify_index(loc))
        glob.append(simplify_index(owned))
    return tuple(local), tuple(glob)


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
