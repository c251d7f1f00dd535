"""Factorizations of a square matrix on a 2-D block-cyclic process grid (ScaLAPACK's layout).

Both are blocked right-looking algorithms (Golub and Van Loan 4.2, 3.4; ScaLAPACK's
``pdpotrf``/``pdgetrf``):

* **Grid and layout.** The ``P`` ranks form the ``pr x pc`` grid of
  `dapx.layout.grid.dims_create` (``pr >= pc``); rows and columns are dealt
  in blocks of ``nb`` (DAP ``'c'`` with ``block_size``): `factor_layout`.
  ``nb`` is at most `NB` and small enough that every grid row and column
  gets at least two blocks. An input already block-cyclic on such a grid
  (either orientation, ``nb >= 16``) is used as it is; any other layout is
  redistributed once.
* **Panels.** At step ``k`` the block column ``k`` below the diagonal (the
  *panel*, ``(n - k nb) x nb``) is made whole in its grid column (one sparse
  `Backend.alltoallv`: each rank sends its rows to the other grid rows of the
  column); the processes of that grid column factor it, each from the same
  bits, and broadcast the factored panel plus one row of metadata (LU's
  pivots, Cholesky's failure flag) along their grid rows (a binomial tree,
  `dapx.functions.summa`'s). So every rank knows the panel's factors, pivots
  and diagonal without another message, a failure (a matrix that is not
  positive definite) is raised by every rank at the same step, and only one
  grid column computes the panel (ranks sharing cores do not repeat it in
  each other's time).
* **Cholesky** (``A = L L^H``, the lower triangle is read): the diagonal
  block by `numpy.linalg.cholesky`, the panel below by one GEMM with the
  inverse of that ``nb x nb`` factor; each rank subtracts
  ``L21[its rows] L21[its columns]^H`` from its blocks of the trailing
  lower triangle (a few GEMMs on column ranges of its local trailing part).
* **LU with partial pivoting** (``P A = L U``): `dapx.functions.lu`, for
  `solve`, `inv`, `det` and `slogdet`, on the same grid and panels.

Memory per rank: its blocks of the matrix (and of the right-hand sides),
plus one panel (``(n + 1) x nb`` with its metadata row), plus the trailing
update's operands (its rows of the panel and ``nb`` rows of its columns)
and, in LU, at most ``2 nb`` rows of its local columns in a row interchange.
No call receives more than one panel (``tests/test_factorizations.py``
measures it), besides the initial redistribution (at most a block).

Determinism: every rank receives the same panel bits and runs the same
operations in the same order on every backend, so the simulated and MPI
backends give bitwise identical factors for the same grid (the processes of
a grid column factor the same panel bits with the same deterministic
LAPACK/BLAS calls, so they broadcast the same bits).

Like NumPy, the computation is in double precision (float64 or complex128)
and results are cast to NumPy's result dtype.

Examples
--------
>>> import numpy as np, dapx
>>> x = np.array([[4.0, 2.0, 0.0], [2.0, 5.0, 1.0], [0.0, 1.0, 3.0]])
>>> a = dapx.asarray(x, backend=dapx.simulated(4))
>>> bool(np.allclose(cholesky(a).gather(), np.linalg.cholesky(x)))
True
"""

from __future__ import annotations

import numpy as np

from ..core.array import DistributedArray, new_array
from ..layout.distribution import Distribution
from ..layout.grid import dims_create
from ..layout.maps import CyclicMap
from .shaping import matrix_transpose
from .summa import tree_broadcast

__all__ = [
    "NB",
    "PanelGrid",
    "cholesky",
    "factor_layout",
    "qualifies",
    "redistributed_blocks",
    "work_dtype",
]

LinAlgError = np.linalg.LinAlgError

#: The largest block size; smaller matrices get smaller blocks (two per grid row at least).
NB = 128
#: Smaller block sizes of an input layout are not kept (too many steps): it is redistributed.
_MIN_KEPT_NB = 16


def qualifies(a) -> bool:
    """Whether `a` is a single non-empty square matrix for the block-cyclic algorithms.

    >>> import dapx
    >>> qualifies(dapx.zeros((3, 3), backend=dapx.simulated(2)))
    True
    >>> qualifies(dapx.zeros((2, 3, 3), backend=dapx.simulated(2)))
    False
    """
    return (
        isinstance(a, DistributedArray) and a.ndim == 2 and a.shape[0] == a.shape[1] and a.size > 0
    )


def factor_layout(a: DistributedArray, block_size: int | None = None) -> Distribution:
    """The block-cyclic layout in which `a` (n x n) is factorized.

    Parameters
    ----------
    a : DistributedArray
        The square matrix.
    block_size : int, optional
        ``nb``; by default ``min(NB, ceil(n / (2 pr)))`` or the input's own.

    Examples
    --------
    >>> import dapx
    >>> d = factor_layout(dapx.zeros((1000, 1000), backend=dapx.simulated(6)))
    >>> d.grid_shape, d.maps[0].block_size
    ((3, 2), 128)
    """
    n, d = a.shape[0], a.distribution
    big, small = dims_create(a.backend.nranks, 2)
    maps = d.maps
    if (
        all(isinstance(m, CyclicMap) for m in maps)
        and maps[0].block_size == maps[1].block_size
        and d.grid_shape in ((big, small), (small, big))
        and not d.has_halo
        and (
            maps[0].block_size == block_size
            or (block_size is None and maps[0].block_size >= _MIN_KEPT_NB)
        )
    ):
        return d
    nb = block_size or min(NB, max(1, -(-n // (2 * big))))
    return Distribution([CyclicMap(n, big, nb), CyclicMap(n, small, nb)], (big, small))


def work_dtype(dtype: np.dtype) -> np.dtype:
    """The precision NumPy computes in: float64 or complex128."""
    return np.dtype(np.complex128 if dtype.kind == "c" else np.float64)


class PanelGrid:
    """Where each local rank sits, which global rows and columns its block holds, and the panels.

    `extra_cols` right-hand-side columns continue the matrix's block-cyclic
    columns (the augmented ``[A | B]`` of `dapx.functions.lu`).
    """

    def __init__(self, dist: Distribution, backend, extra_cols: int = 0):
        self.dist, self.backend = dist, backend
        self.grid = dist.grid
        self.pr, self.pc = dist.grid_shape
        self.n = dist.global_shape[0]
        self.nb = dist.maps[0].block_size
        # The augmented matrix [A | B]: B's columns continue A's block-cyclic columns.
        cols = CyclicMap(self.n + extra_cols, self.pc, self.nb)
        self.row_idx = [dist.maps[0].global_indices(i) for i in range(self.pr)]
        self.col_idx = [cols.global_indices(j) for j in range(self.pc)]
        self.where = {r: dist.coords(r) for r in backend.local_ranks}

    def row_owner(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Grid row and local row of global rows `g`."""
        block, within = np.divmod(g, self.nb)
        return block % self.pr, (block // self.pr) * self.nb + within

    def factor_panel(self, blocks: dict, k0: int, k1: int, factor) -> np.ndarray:
        """``factor`` of the panel (rows ``k0:`` of columns ``k0:k1``), on every process.

        The panel's grid column gathers it (each rank sends its rows to the
        other grid rows: one sparse exchange), its processes call
        ``factor(panel)``, which returns the factored panel with one more row
        of metadata (pivots, a failure flag), and they broadcast that along
        their grid rows (a binomial tree). Only one grid column computes, so
        ranks sharing cores do not repeat the work in each other's time.
        """
        jc = (k0 // self.nb) % self.pc
        kb, dtype = k1 - k0, next(iter(blocks.values())).dtype
        first = {i: int(np.searchsorted(self.row_idx[i], k0)) for i in range(self.pr)}
        height = {i: len(self.row_idx[i]) - first[i] for i in range(self.pr)}
        mine = {}
        for r, (i, j) in self.where.items():
            if j == jc:
                c = int(np.searchsorted(self.col_idx[j], k0))
                mine[i] = blocks[r][first[i] :, c : c + kb]
        received = {}
        if self.pr > 1:  # each grid row's part to the other grid rows of the grid column
            sends, expect = {}, {}
            for r, (i, j) in self.where.items():
                counts = np.zeros(self.backend.nranks, np.intp)
                expect[r] = np.zeros(self.backend.nranks, np.intp)
                piece = np.empty(0, dtype)
                if j == jc:
                    for other in range(self.pr):
                        if other != i:
                            counts[self.grid.rank((other, j))] = height[i] * kb
                            expect[r][self.grid.rank((other, j))] = height[other] * kb
                    piece = np.tile(np.ascontiguousarray(mine[i]).reshape(-1), self.pr - 1)
                sends[r] = (piece, counts)
            received = self.backend.alltoallv(sends, expect, sparse=True)
        done = None
        if mine:  # this process holds a rank of the panel's grid column
            r, (i, j) = next((r, c) for r, c in self.where.items() if c[1] == jc)
            pieces = {i: mine[i]}
            for other in range(self.pr):
                if other != i:
                    got = received[r].get(self.grid.rank((other, j)), np.empty(0, dtype))
                    pieces[other] = got.reshape(height[other], kb)
            panel = np.empty((self.n - k0, kb), dtype)
            for row, piece in pieces.items():
                panel[self.row_idx[row][first[row] :] - k0] = piece
            done = factor(panel)
        if self.pc == 1:
            return done
        held = {r: done if j == jc else None for r, (_, j) in self.where.items()}
        shapes = dict.fromkeys(held, (self.n - k0 + 1, kb))
        held = tree_broadcast(held, shapes, dtype, self.grid, 1, jc, self.backend)
        return next(iter(held.values()))  # the same bits on every local rank


def redistributed_blocks(a: DistributedArray, dist: Distribution, dtype) -> dict:
    """`a`'s local blocks in layout `dist` (one redistribution at most), as `dtype` copies."""
    if a.distribution != dist:
        a = a.redistribute(dist)
    return {r: np.array(a.locals[r], dtype=dtype, order="C") for r in a.backend.local_ranks}


# -- Cholesky ---------------------------------------------------------------------------------


def _cholesky_panel(panel: np.ndarray) -> np.ndarray:
    """``[L11; L21]`` of the panel ``[A11; A21]``, and a row flagging failure."""
    kb = panel.shape[1]
    out = np.zeros((len(panel) + 1, kb), panel.dtype)
    try:
        l11 = np.linalg.cholesky(panel[:kb])
    except LinAlgError:
        out[-1] = 1
        return out
    out[:kb] = l11
    if len(panel) > kb:  # L21 = A21 L11^{-H}; one GEMM with the small inverse is BLAS-3 fast
        np.matmul(panel[kb:], np.linalg.inv(l11).conj().T, out=out[kb:-1])
    return out


def _cholesky_lower(a: DistributedArray, block_size: int | None) -> DistributedArray:
    result_t = np.linalg.cholesky(np.eye(1, dtype=a.dtype)).dtype
    dist = factor_layout(a, block_size)
    g = PanelGrid(dist, a.backend)
    blocks = redistributed_blocks(a, dist, work_dtype(result_t))
    n, nb = g.n, g.nb
    chunk = 4 * nb  # local columns per GEMM of the lower-triangular update
    for k0 in range(0, n, nb):
        k1 = min(k0 + nb, n)
        jc = (k0 // nb) % g.pc
        panel = g.factor_panel(blocks, k0, k1, _cholesky_panel)
        if panel[-1, 0]:  # the flag: every rank raises at the same step
            raise LinAlgError("Matrix is not positive definite")
        for r, (i, j) in g.where.items():
            rows, cols, blk = g.row_idx[i], g.col_idx[j], blocks[r]
            if j == jc:
                lr, lc = int(np.searchsorted(rows, k0)), int(np.searchsorted(cols, k0))
                blk[lr:, lc : lc + k1 - k0] = panel[rows[lr:] - k0]
            lr1, lc1 = int(np.searchsorted(rows, k1)), int(np.searchsorted(cols, k1))
            if lr1 == len(rows) or lc1 == len(cols):
                continue
            left = panel[rows[lr1:] - k0]
            right = panel[cols[lc1:] - k0].conj().T
            for c0 in range(lc1, len(cols), chunk):
                c1 = min(c0 + chunk, len(cols))
                # Only rows at or below the chunk's first column: the lower triangle.
                s = max(int(np.searchsorted(rows, cols[c0])), lr1)
                if s < len(rows):
                    blk[s:, c0:c1] -= left[s - lr1 :] @ right[:, c0 - lc1 : c1 - lc1]
    out = {}
    for r, (i, j) in g.where.items():
        blk = blocks[r]
        blk[g.row_idx[i][:, None] < g.col_idx[j][None, :]] = 0  # LAPACK leaves the rest
        out[r] = blk.astype(result_t, copy=False)
    return new_array(dist, out, a.backend, result_t)


def _adjoint(a: DistributedArray) -> DistributedArray:
    t = matrix_transpose(a)
    return np.conjugate(t) if t.dtype.kind == "c" else t


def cholesky(
    a: DistributedArray, upper: bool = False, block_size: int | None = None
) -> DistributedArray:
    """`numpy.linalg.cholesky` of one Hermitian positive-definite matrix, blocked right-looking.

    Parameters
    ----------
    a : DistributedArray
        An n x n matrix (its lower triangle is read; with `upper`, its upper one, as NumPy).
    upper : bool
        Return ``U = L^H`` instead of ``L``.
    block_size : int, optional
        ``nb`` (see `factor_layout`).

    Returns
    -------
    DistributedArray
        ``L`` in the block-cyclic layout of `factor_layout` (``U``: its transpose,
        on the transposed grid).

    Raises
    ------
    numpy.linalg.LinAlgError
        On every rank, when the matrix is not positive definite.

    Notes
    -----
    Memory per rank: its blocks, one panel (``n x nb``) and its rows and
    columns of the panel for the trailing update.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> u = cholesky(dapx.asarray(x, backend=dapx.simulated(2)), upper=True)
    >>> bool(np.allclose(u.gather(), np.linalg.cholesky(x, upper=True)))
    True
    """
    if upper:  # NumPy reads the upper triangle: the lower one of the adjoint
        return _adjoint(_cholesky_lower(_adjoint(a), block_size))
    return _cholesky_lower(a, block_size)
