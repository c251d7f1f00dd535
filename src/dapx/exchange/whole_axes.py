"""Making axes whole on every rank: the redistribution behind folds that need a whole axis.

Partials (`dapx.functions.reduction_engine`) reduce where the data lie; some operations cannot:
folds by ufuncs that cannot be reordered, medians and quantiles, scans along
distributed axes. `move_axes` redistributes their operands so that the given
axes are undistributed (whole on every rank) and the other dimensions are
spread over all ranks, moving only 1-D slices along those axes; `move_back`
returns blocks to the original layout, and `holder_value` reads a result that
reduced every axis (held by rank 0 alone) on every process. Exchange plans are
computed once per distribution (`functools.lru_cache`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from ..layout.distribution import Distribution
from .execute import Blocks, run_plan
from .plans import exchange_plan, expand_dims_distribution

__all__ = ["Moved", "holder_value", "move_axes", "move_back"]


class Moved(NamedTuple):
    """Blocks redistributed so that the reduced axes are whole on every rank."""

    dist: Distribution  # target layout (a leading dummy dimension when all axes reduce)
    blocks: list  # one dict of blocks per operand moved
    axes: tuple[int, ...]  # the reduced axes in the target layout
    dummy: bool


@functools.lru_cache(maxsize=256)
def _move_layout(dist, axes, ranks, nranks):
    dummy = len(axes) == dist.ndim
    src = expand_dims_distribution(dist, dist.ndim + 1) if dummy else dist
    ax = tuple(k + dummy for k in axes)
    target = Distribution.create(
        src.global_shape,
        dist=["n" if k in ax else "b" for k in range(src.ndim)],
        grid=[1 if k in ax else 0 for k in range(src.ndim)],
        nranks=nranks,
    )
    forward = None if target == src else exchange_plan(src, target, ranks)
    return src, target, ax, dummy, forward


def move_axes(dist: Distribution, backend, axes, operands) -> Moved:
    """Redistribute `operands` (blocks by `dist`) so that `axes` are undistributed.

    The other dimensions are spread over all ranks. When every dimension is
    reduced, a leading dummy dimension of size 1 is added and rank 0 holds
    everything: the only 1-D slice there is, never a copy on every rank.
    """
    _, target, ax, dummy, plan = _move_layout(
        dist, tuple(axes), backend.local_ranks, backend.nranks
    )
    out = []
    for blocks in operands:
        if blocks is None:
            out.append(None)
            continue
        if dummy:
            blocks = {r: b.reshape((1, *b.shape)) for r, b in blocks.items()}
        if plan is not None:
            dtype = blocks[backend.local_ranks[0]].dtype
            blocks = run_plan(plan, blocks, dtype, backend)
        out.append(blocks)
    return Moved(target, out, ax, dummy)


def move_back(dist: Distribution, axes: tuple[int, ...], blocks: Blocks, backend) -> Blocks:
    """Blocks laid out by ``move_axes(dist, backend, axes, ...)`` back in layout `dist`."""
    src, target, _, dummy, plan = _move_layout(
        dist, tuple(axes), backend.local_ranks, backend.nranks
    )
    if plan is not None:
        back = exchange_plan(target, src, backend.local_ranks)
        blocks = run_plan(back, blocks, blocks[backend.local_ranks[0]].dtype, backend)
    if dummy:
        blocks = {r: b.reshape(b.shape[1:]) for r, b in blocks.items()}
    return blocks


def holder_value(moved: Moved, blocks: Mapping[int, np.ndarray], backend, axis: int = 0):
    """The part of a dummy-layout result held by rank 0, as a NumPy array on every process."""
    pieces = backend.allgather(
        {r: (b if moved.dist.local_shape(r)[0] else None) for r, b in blocks.items()}
    )
    piece = next(p for p in pieces if p is not None)
    return np.take(piece, 0, axis=axis)
