"""SUMMA: the product of two 2-D distributed matrices on a 2-D process grid.

``C = A @ B`` with ``A`` (M, K) and ``B`` (K, N) distributed, after van de
Geijn and Watts, *SUMMA: Scalable Universal Matrix Multiplication Algorithm*
(1997):

* **Grid.** The ``P`` ranks form a ``pr x pc`` grid whose sizes are the
  balanced factors of `dapx.layout.grid.dims_create` (``P = 6`` gives 3 x 2,
  a prime ``P`` gives ``P x 1``). An operand that already lies in plain 2-D
  blocks (block or undistributed dimensions, no halo) on a grid with those
  factors, in either orientation, lends its grid and is used as it is;
  otherwise the grid puts the larger factor along the longer of M and N
  (a rank receives about ``M K / pr + K N / pc`` elements in all).
* **Layout.** ``A`` is split by (pr, pc) over (M, K), ``B`` by (pr, pc) over
  (K, N), ``C`` by (pr, pc) over (M, N): C's rows are A's row blocks and its
  columns B's column blocks. An operand in any other layout (row or column
  blocks, cyclic, ScaLAPACK's block-cyclic ``'c'`` with ``block_size``,
  unstructured) is redistributed once to even blocks on that grid.
* **Panels.** The K axis is cut at the union of A's column bounds and B's
  row bounds, so each panel of K lies in one grid column of ``A`` and one
  grid row of ``B`` (``pc`` panels when ``pr == pc`` and the bounds agree, at
  most ``pr + pc - 1`` otherwise). At step ``t`` the owners of A's panel
  broadcast it along their grid row, the owners of B's panel along their
  grid column, and every rank adds ``A_panel @ B_panel`` to its block of C.
* **Broadcasts.** Each is a binomial tree within the row (or column), one
  sparse `Backend.alltoallv` per round, ``ceil(log2(pc))`` rounds for A's
  panels and ``ceil(log2(pr))`` for B's: no rank sends or receives more than
  one panel in a call, and nobody packs a panel more than once. With a
  ``P x 1`` grid A never moves and B's row blocks are broadcast down the one
  column: the same traffic per rank as a ring of row blocks, so this is
  dapx's one algorithm for distributed matrix products.

Memory per rank: its blocks of A, B and C, plus one panel of A (``M / pr x
kb``) and one of B (``kb x N / pc``) with ``kb`` at most a K-block, plus one
temporary product of C's block size (NumPy has no ``C += A @ B`` in place).
Before the loop an operand not in the layout is redistributed once, which
moves at most a block per rank.

Determinism: every rank adds its products in panel order ``0, 1, ...`` and
each product sees the same operands on every backend, so the simulated and
MPI backends give bitwise identical results for the same grid (different
grids cut K differently and may round differently).
"""

from __future__ import annotations

import numpy as np

from ..core.array import DistributedArray, new_array
from ..layout.distribution import Distribution
from ..layout.grid import ProcessGrid, dims_create
from ..layout.maps import BlockMap, even_bounds

__all__ = ["summa", "summa_grid", "summa_panels", "tree_broadcast"]


def _plain_blocks(dist: Distribution) -> bool:
    """Whether `dist` is 2-D blocks as they are: block maps without padding or halo."""
    return dist.ndim == 2 and all(isinstance(m, BlockMap) and not m.is_padded for m in dist.maps)


def summa_grid(a: DistributedArray, b: DistributedArray) -> tuple[int, int]:
    """The ``(pr, pc)`` process grid on which `summa` multiplies `a` (M, K) by `b` (K, N).

    The balanced two-factor grid of the backend's ranks; an operand already
    in plain 2-D blocks on such a grid (either orientation) decides the
    orientation, else the larger factor goes along the longer of M and N.

    Examples
    --------
    >>> import dapx
    >>> be = dapx.simulated(6)
    >>> summa_grid(dapx.zeros((90, 10), backend=be), dapx.zeros((10, 20), backend=be))
    (3, 2)
    >>> summa_grid(dapx.zeros((9, 10), backend=be), dapx.zeros((10, 20), backend=be))
    (2, 3)
    """
    big, small = dims_create(a.backend.nranks, 2)
    for x in (a, b):
        grid = x.distribution.grid_shape
        if _plain_blocks(x.distribution) and grid in ((big, small), (small, big)):
            return grid
    return (big, small) if a.shape[0] >= b.shape[1] else (small, big)


def summa_panels(a_dist: Distribution, b_dist: Distribution) -> np.ndarray:
    """The panel bounds along K: the union of A's column bounds and B's row bounds.

    Examples
    --------
    >>> a = Distribution.create((4, 11), ("b", "b"), grid=(3, 2))
    >>> b = Distribution.create((11, 5), ("b", "b"), grid=(3, 2))
    >>> summa_panels(a, b).tolist()
    [0, 4, 6, 8, 11]
    """
    return np.union1d(a_dist.maps[1].bounds, b_dist.maps[0].bounds)


def _layouts(a: DistributedArray, b: DistributedArray, grid: tuple[int, int]):
    """The distributions of A, B and C on `grid`, keeping what is already in place."""
    (m, k), n = a.shape, b.shape[1]
    pr, pc = grid
    a_ok = _plain_blocks(a.distribution) and a.distribution.grid_shape == grid
    b_ok = _plain_blocks(b.distribution) and b.distribution.grid_shape == grid
    a_dist = a.distribution if a_ok else None
    b_dist = b.distribution if b_ok else None
    if a_dist is None:
        # Cut K where B's rows are cut when the counts agree: fewer, wider panels.
        cut_k = b_dist.maps[0].bounds if b_ok and pr == pc else even_bounds(k, pc)
        a_dist = Distribution([BlockMap(m, even_bounds(m, pr)), BlockMap(k, cut_k)], grid)
    if b_dist is None:
        cut_k = a_dist.maps[1].bounds if pr == pc else even_bounds(k, pr)
        b_dist = Distribution([BlockMap(k, cut_k), BlockMap(n, even_bounds(n, pc))], grid)
    rows = BlockMap(m, a_dist.maps[0].bounds)
    cols = BlockMap(n, b_dist.maps[1].bounds)
    return a_dist, b_dist, Distribution([rows, cols], grid)


def tree_broadcast(
    held: dict, shapes: dict, dtype, grid: ProcessGrid, axis: int, root: int, backend
) -> dict:
    """Broadcast each line's panel along grid `axis` from grid coordinate `root`.

    `held` maps every local rank to its panel (the roots) or None, `shapes`
    to the panel's shape in its line; returns every local rank's panel. A
    binomial tree: in round ``s`` (``s = 1, 2, 4, ...``) the ranks ``s`` to
    ``2 s - 1`` places after the root receive the panel from the rank ``s``
    places before them, so each rank sends and receives at most one panel
    per call, and a root packs its panel once (forwarders send the received
    memory itself).
    """
    g, nranks = grid.shape[axis], backend.nranks
    flat = {r: None if p is None else np.ascontiguousarray(p).reshape(-1) for r, p in held.items()}
    step = 1
    while step < g:
        sends, recvcounts, sources = {}, {}, {}
        for r, panel in flat.items():
            coords = list(grid.coords(r))
            place = (coords[axis] - root) % g
            counts = np.zeros(nranks, np.intp)
            expect = np.zeros(nranks, np.intp)
            size = int(np.prod(shapes[r]))
            if place < step and place + step < g:
                coords[axis] = (coords[axis] + step) % g
                counts[grid.rank(coords)] = size
            elif step <= place < 2 * step:
                coords[axis] = (coords[axis] - step) % g
                sources[r] = grid.rank(coords)
                expect[sources[r]] = size
            buffer = panel if counts.any() else np.empty(0, dtype)
            sends[r], recvcounts[r] = (buffer, counts), expect
        received = backend.alltoallv(sends, recvcounts, sparse=True)
        for r, src in sources.items():
            # Zero-length pieces are not delivered: an empty panel then.
            flat[r] = received[r].get(src, np.empty(0, dtype))
        step *= 2
    return {r: flat[r].reshape(shapes[r]) for r in flat}


def _product(left: np.ndarray, right: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    # Operands sharing memory as each other's transpose send NumPy to syrk instead of gemm;
    # whether a received panel shares memory depends on the backend, so never let it.
    if np.may_share_memory(left, right):
        left = left.copy()
    return np.matmul(left, right, out=out)


def summa(a: DistributedArray, b: DistributedArray) -> DistributedArray:
    """``a @ b`` for 2-D distributed `a` (M, K) and `b` (K, N), by SUMMA.

    Parameters
    ----------
    a, b : DistributedArray
        2-D distributed matrices on the same backend, ``a.shape[1] == b.shape[0]``.

    Returns
    -------
    DistributedArray
        The (M, N) product, of NumPy's `numpy.matmul` dtype (the operands
        are cast to it first, as NumPy's loops do), in 2-D blocks on the
        grid of `summa_grid`: rows as A's row blocks, columns as B's column
        blocks.

    Notes
    -----
    Per rank at most: its blocks of A, B and C, one panel of A
    (``M / pr x kb``), one panel of B (``kb x N / pc``) and one product of
    C's block size; ``kb`` is at most a K-block. See the module docstring
    for the grid, the panels and the broadcasts.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> be = dapx.simulated(4)
    >>> x, y = np.arange(35.0).reshape(7, 5), np.arange(30.0).reshape(5, 6)
    >>> c = summa(dapx.asarray(x, backend=be), dapx.asarray(y, backend=be))
    >>> c.distribution.grid_shape, np.array_equal(c.gather(), x @ y)
    ((2, 2), True)
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"summa multiplies (M, K) by (K, N) matrices, got {a.shape} @ {b.shape}")
    if a.backend is not b.backend:
        raise ValueError("summa: the operands live on different backends")
    # NumPy's own answer for the dtype (and its error for dtypes without a matmul loop).
    dtype = np.matmul(np.empty((0, 0), a.dtype), np.empty((0, 0), b.dtype)).dtype
    backend = a.backend
    grid_shape = summa_grid(a, b)
    a_dist, b_dist, c_dist = _layouts(a, b, grid_shape)
    if a.distribution != a_dist:
        a = a.redistribute(a_dist)
    if b.distribution != b_dist:
        b = b.redistribute(b_dist)
    grid = c_dist.grid
    rows, a_cuts = a_dist.maps[0].bounds, a_dist.maps[1].bounds
    b_cuts, cols = b_dist.maps[0].bounds, b_dist.maps[1].bounds
    ranks = backend.local_ranks
    where = {r: grid.coords(r) for r in ranks}
    height = {r: int(rows[i + 1] - rows[i]) for r, (i, _) in where.items()}
    width = {r: int(cols[j + 1] - cols[j]) for r, (_, j) in where.items()}
    blocks_a = {r: np.asarray(a.locals[r], dtype) for r in ranks}
    blocks_b = {r: np.asarray(b.locals[r], dtype) for r in ranks}
    panels = summa_panels(a_dist, b_dist)
    result: dict[int, np.ndarray] = {}
    scratch: dict[int, np.ndarray] = {}
    for k0, k1 in zip(panels[:-1].tolist(), panels[1:].tolist()):
        kb = k1 - k0
        owner_a = int(np.searchsorted(a_cuts, k0, side="right")) - 1  # A's grid column
        owner_b = int(np.searchsorted(b_cuts, k0, side="right")) - 1  # B's grid row
        held_a, held_b = {}, {}
        for r, (i, j) in where.items():
            held_a[r] = held_b[r] = None
            if j == owner_a:  # a view: copied only if it has to travel
                off = k0 - int(a_cuts[owner_a])
                held_a[r] = blocks_a[r][:, off : off + kb]
            if i == owner_b:
                off = k0 - int(b_cuts[owner_b])
                held_b[r] = blocks_b[r][off : off + kb]
        # Every process takes part in every round: the calls are collective.
        if grid_shape[1] > 1:
            shapes = {r: (height[r], kb) for r in ranks}
            held_a = tree_broadcast(held_a, shapes, dtype, grid, 1, owner_a, backend)
        if grid_shape[0] > 1:
            shapes = {r: (kb, width[r]) for r in ranks}
            held_b = tree_broadcast(held_b, shapes, dtype, grid, 0, owner_b, backend)
        for r in ranks:
            left, right = held_a[r], held_b[r]
            if r not in result:
                result[r] = _product(left, right, None)
            else:
                scratch[r] = _product(left, right, scratch.get(r))
                np.add(result[r], scratch[r], out=result[r])
        del held_a, held_b  # the panels go before the next step's arrive
    for r in ranks:
        if r not in result:  # K == 0: no panels, an empty sum
            result[r] = np.zeros(c_dist.local_shape(r), dtype)
    return new_array(c_dist, result, backend, dtype)
