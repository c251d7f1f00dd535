"""Halos on arrays: `update_halos` and the interior view.

The plans (which ghost cell copies which element, boundary conditions) are
pure metadata in `dapx.exchange.halo`, whose notes describe halo arrays.
"""

from __future__ import annotations

from ..exchange.halo import cached_halo_plan, interior_distribution, interior_key, run_halo_plan
from .array import new_array
from .guard import collective

__all__ = ["interior", "update_halos"]


@collective
def update_halos(a, boundary=None) -> None:
    """Fill the ghost cells of every rank of `a` in place, in one exchange.

    See `dapx.DistributedArray.update_halos`.
    """
    if not a.ndim or not a._dist.is_padded:
        return
    plan, values = cached_halo_plan(a._dist, boundary, a._backend.local_ranks)
    run_halo_plan(plan, a._locals, a._dtype, a._backend, values)


def interior(a):
    """`a` without its halo: an array whose local blocks are views of `a`'s interiors."""
    if not a.ndim or not a._dist.is_padded:
        return a
    dist = interior_distribution(a._dist)
    blocks = {r: b[interior_key(a._dist, r)] for r, b in a._locals.items()}
    return new_array(dist, blocks, a._backend, a._dtype)
