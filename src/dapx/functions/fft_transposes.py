"""Slab and pencil FFTs: transform the whole axes, transpose, transform the next ones.

A multi-dimensional FFT is a sequence of 1-D transforms, one per axis, each
needing its axis whole. As in mpi4py-fft, `transform_in_stages` transforms
every transformed axis that is whole on the ranks (undistributed), then
redistributes once (an all-to-all "transpose": the grid factor of a pending
axis moves onto an axis that is already done or not transformed), transforms
the axes that became whole, and so on. A 1-D grid is a slab decomposition
(one transpose), a 2-D grid a pencil decomposition (two); the process grid
keeps its size and, where possible, the order of its factors, so that each
transpose is an all-to-all within rows or columns of the grid. Dividing an
axis over ``p`` ranks prefers axes at least ``p`` long, so that blocks stay
balanced.

Memory bound: every rank holds its block of the input, of each stage's
result and of the output, and in each exchange its send buffer (the block it
sends) and its received pieces (the block it receives): O(N/P) elements per
rank for an N-element array on P ranks when every distributed axis is at
least as long as its grid factor. No rank ever holds the whole array.
``tests/test_fft_distributed.py`` counts the largest buffer a rank receives in
one exchange and asserts it is the size of one block.

Layouts: the result is left in the layout of the last stage (the transposed
one, as mpi4py-fft's ``forward`` leaves it) unless
``dapx.config.fft_layout == "input"``, which redistributes it to the input's
layout. Each transform remembers its plan under its result's layout, so a
transform in the other direction over the same axes on an array of that
layout (``ifftn(fftn(a))``, ``irfftn(rfftn(a))``, also after elementwise
operations that keep the layout) replays the plan backwards and ends in the
original layout of ``a``. Arrays of other layouts are planned afresh.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from ..config import config
from ..core.array import DistributedArray, new_array
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap, Map

__all__ = ["Stage", "plan_stages", "transform_in_stages"]

#: ``block_call(block, axes)``: NumPy's transform of `axes`, which are whole in `block`.
BlockCall = Callable[[np.ndarray, tuple[int, ...]], np.ndarray]


class Stage(NamedTuple):
    """One step of a staged transform: the grid while it runs and the axes it transforms."""

    grid: tuple[int, ...]  # processes along each axis (1: the axis is whole)
    axes: tuple[int, ...]  # the axes transformed in this stage, in the order of the call's axes


def _crosses(grid: Sequence[int], a: int, b: int) -> bool:
    """Whether a distributed axis lies between `a` and `b` (moving past it reorders the ranks)."""
    lo, hi = sorted((a, b))
    return any(grid[k] > 1 for k in range(lo + 1, hi))


def _move(grid: list[int], pending: list[int], sizes: Sequence[int], only: int | None) -> None:
    """Move grid factors of pending distributed axes onto other axes, in place.

    Pairs each pending distributed axis with an undistributed axis that is
    done or not transformed, preferring receivers at least as long as the
    factor, then moves that keep the ranks' order (no distributed axis in
    between: an all-to-all within a row of the grid), then near ones, then
    the axis NumPy transforms first. Without such a receiver, one factor
    merges onto a neighbouring axis (its grid size multiplies).
    """
    order = {a: i for i, a in enumerate(pending)}
    movers = [a for a in pending if grid[a] > 1] if only is None else [only]
    free = [b for b in range(len(grid)) if b not in order and grid[b] == 1]

    def key(m: int, b: int, factor: int) -> tuple:
        return (sizes[b] < factor, _crosses(grid, m, b), abs(m - b), -order.get(m, 0), b)

    moved = False
    while movers and free:
        m, b = min(((m, b) for m in movers for b in free), key=lambda p: key(*p, grid[p[0]]))
        grid[b], grid[m] = grid[m], 1
        movers.remove(m)
        free.remove(b)
        moved = True
    if moved:
        return
    hosts = [b for b in range(len(grid)) if b not in order] or list(range(len(grid)))
    pairs = [(m, b) for m in movers for b in hosts if b != m]
    if not pairs:
        raise ValueError("a 1-d array's only axis cannot be transposed onto another axis")
    m, b = min(pairs, key=lambda p: key(*p, grid[p[0]] * grid[p[1]]))
    grid[b], grid[m] = grid[b] * grid[m], 1


@functools.lru_cache(maxsize=256)
def plan_stages(
    grid: tuple[int, ...],
    axes: tuple[int, ...],
    shape_in: tuple[int, ...],
    shape_out: tuple[int, ...],
    special: str | None = None,
) -> tuple[Stage, ...]:
    """The stages of a transform of `axes` starting from process grid `grid`.

    Parameters
    ----------
    grid : tuple of int
        Processes along each axis of the input.
    axes : tuple of int
        The transformed axes (non-negative, distinct), in the order of the call.
    shape_in, shape_out : tuple of int
        The array's shape before and after the transform.
    special : {None, "r2c", "c2r"}
        A real transform of the last of `axes`: ``"r2c"`` must run before
        the others, ``"c2r"`` after them.

    Returns
    -------
    tuple of Stage
        The first stage runs on `grid` (it may transform nothing when no
        transformed axis is whole there); each later one follows one
        exchange. Every axis is transformed in exactly one stage.

    Examples
    --------
    A pencil decomposition (grid 2 x 3 x 1): two transposes.

    >>> for s in plan_stages((2, 3, 1), (0, 1, 2), (8, 9, 10), (8, 9, 10)):
    ...     print(s.grid, s.axes)
    (2, 3, 1) (2,)
    (2, 1, 3) (1,)
    (1, 2, 3) (0,)
    """
    grid_now = list(grid)
    pending = list(axes)
    first = axes[-1] if special == "r2c" else None
    last = axes[-1] if special == "c2r" else None
    stages = [Stage(tuple(grid), ())]  # the start, filled when some axis is whole there
    for _ in range(4 * len(grid) + 4):  # each round transforms an axis or makes one whole
        ready = [a for a in pending if grid_now[a] == 1]
        if first in pending and grid_now[first] > 1:
            ready = []
        if last in ready and len(ready) < len(pending):
            ready.remove(last)
        if ready:
            stages[-1] = Stage(tuple(grid_now), tuple(ready))
            pending = [a for a in pending if a not in ready]
        if not pending:
            return tuple(stages)
        sizes = [shape_in[k] if k in pending else shape_out[k] for k in range(len(grid))]
        _move(grid_now, pending, sizes, first if first in pending and grid_now[first] > 1 else None)
        if len(stages) > 1 and not stages[-1].axes:
            stages.pop()  # two moves without a transform between them are one exchange
        stages.append(Stage(tuple(grid_now), ()))
    raise RuntimeError(f"no transpose plan for grid {grid} and axes {axes}")  # pragma: no cover


def _fresh_map(size: int, nprocs: int) -> Map:
    return Distribution.create((size,), dist=["n" if nprocs == 1 else "b"], grid=[nprocs]).maps[0]


def layout_on(dist: Distribution, grid: Sequence[int], shape: Sequence[int]) -> Distribution:
    """`dist`'s maps where the grid factor and size are kept, even blocks elsewhere.

    >>> d = Distribution.create((6, 7), dist=[{"dist": "b", "bounds": [0, 1, 6]}, "n"], grid=[2, 1])
    >>> layout_on(d, (2, 1), (6, 4)).maps[0] == d.maps[0], layout_on(d, (1, 2), (6, 7)).grid_shape
    (True, (1, 2))
    """
    maps = []
    for m, p, n in zip(dist.maps, grid, shape):
        plain = not (isinstance(m, BlockMap) and m.is_padded)
        maps.append(m if (m.nprocs == p and m.size == n and plain) else _fresh_map(int(n), int(p)))
    return Distribution(maps, tuple(int(p) for p in grid))


def _plain(dist: Distribution, axes: Sequence[int]) -> Distribution:
    """`dist` without padding, and with the transformed axes in order where they are whole.

    Ghost cells are no part of an array's value, and a one-rank unstructured
    map holds its axis whole but permuted: such maps are replaced.
    """
    maps = list(dist.maps)
    for k, m in enumerate(maps):
        padded = isinstance(m, BlockMap) and m.is_padded
        if padded or (k in axes and m.nprocs == 1 and m.dist_type == "u"):
            maps[k] = _fresh_map(m.size, m.nprocs)
    return Distribution(maps, dist.grid_shape)


def _to(x: DistributedArray, target: Distribution) -> DistributedArray:
    return x if x.distribution == target else x.redistribute(target)


class _Plan(NamedTuple):
    stages: tuple[Stage, ...]
    source: Distribution  # the layout the transform started from


#: Plans by (result layout, axes, family, direction), for the inverse transform's replay.
_PLANS: OrderedDict[tuple, _Plan] = OrderedDict()
_PLANS_KEPT = 128


def _remember(key: tuple, plan: _Plan) -> None:
    _PLANS[key] = plan
    _PLANS.move_to_end(key)
    while len(_PLANS) > _PLANS_KEPT:
        _PLANS.popitem(last=False)


def transform_in_stages(
    a: DistributedArray,
    axes: Sequence[int],
    sizes: Sequence[int],
    block_call: BlockCall,
    *,
    special: str | None = None,
    family: str = "c",
    inverse: bool = False,
) -> DistributedArray:
    """Transform `axes` of `a` stage by stage, each stage on the axes that are whole.

    Parameters
    ----------
    a : DistributedArray
        The input, of any layout (padded ones are first made plain).
    axes : sequence of int
        Non-negative, distinct axes, in the order of the NumPy call.
    sizes : sequence of int
        The length of each transformed axis in the result.
    block_call : callable
        ``block_call(block, stage_axes)``: NumPy's transform of the whole
        `stage_axes` of a block, each to its length in `sizes`.
    special : {None, "r2c", "c2r"}
        See `plan_stages`.
    family, inverse
        Which plans replay each other: a transform of one family and
        direction on the result layout of one of the same family and the
        other direction over the same axes follows that plan backwards.

    Returns
    -------
    DistributedArray
        In the last stage's layout, or the input's with
        ``dapx.config.fft_layout == "input"``.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.arange(24.0).reshape(4, 6)
    >>> a = dapx.asarray(x, backend=dapx.simulated(2), grid=(2, 1))
    >>> f = transform_in_stages(a, (0, 1), (4, 6), lambda b, ax: np.fft.fftn(b, axes=ax))
    >>> f.distribution.grid_shape, np.allclose(f.gather(), np.fft.fftn(x))
    ((1, 2), True)
    """
    axes = tuple(int(k) for k in axes)
    original = a.distribution
    a = _to(a, _plain(original, axes))
    shape_out = list(a.shape)
    for k, n in zip(axes, sizes):
        shape_out[k] = int(n)
    shape_out = tuple(shape_out)
    family_key = axes if family != "c" else tuple(sorted(axes))
    replay = _PLANS.get((a.distribution, family_key, family, not inverse))
    if replay is not None:
        stages = replay.stages[::-1]
        end = replay.source
    else:
        stages = plan_stages(a.distribution.grid_shape, axes, a.shape, shape_out, special)
        end = None
    size_of = dict(zip(axes, (int(n) for n in sizes)))
    x = a
    for stage in stages:
        x = _to(x, layout_on(x.distribution, stage.grid, x.shape))
        if not stage.axes:
            continue
        stage_sizes = tuple(size_of[k] for k in stage.axes)
        blocks = {r: block_call(b, stage.axes) for r, b in x.locals.items()}
        shape = list(x.shape)
        for k, n in zip(stage.axes, stage_sizes):
            shape[k] = n
        dist = layout_on(x.distribution, stage.grid, shape)
        sample = next(iter(blocks.values()))
        x = new_array(dist, blocks, x.backend, sample.dtype)
    if end is not None:  # a replay ends where the transform it inverts started
        same = end.global_shape == x.shape
        return _to(x, end if same else layout_on(end, end.grid_shape, x.shape))
    if config.fft_layout == "input":
        same = original.global_shape == x.shape
        return _to(x, original if same else layout_on(original, original.grid_shape, x.shape))
    _remember((x.distribution, family_key, family, inverse), _Plan(stages, original))
    return x
