"""LU with partial pivoting on a 2-D block-cyclic grid: `solve`, `inv`, `det`, `slogdet`.

The grid, the layout, the panels and the memory bound are those of
`dapx.functions.factorizations` (see there). Per block column ``k``: the
panel's grid column factors the gathered panel by recursive LU (Toledo
1997: halves, a triangular solve, a GEMM; LAPACK's pivots, the largest
``|re| + |im|``, the first on ties) and broadcasts it with its pivots along
the grid rows; every rank applies the panel's row swaps to its other columns
(one sparse exchange within each grid column, at most ``2 nb`` rows of its
columns); the owners of block row ``k`` form ``U12 = L11^{-1} A12`` and
broadcast it down their grid columns; every rank updates its trailing blocks
with one GEMM. Right-hand sides ride along as extra columns of ``[A | B]``
(the forward substitution is the factorization itself); the back
substitution walks ``U``'s block columns backwards with the same two
broadcasts. Every rank holds every panel's pivots and ``U``'s whole
diagonal, so singularity (an exactly zero pivot) is raised on every rank and
the determinant is the same on every rank, without communication.

Examples
--------
>>> import numpy as np, dapx
>>> x = np.array([[0.0, 2.0, 1.0], [3.0, 1.0, 0.0], [1.0, 1.0, 4.0]])
>>> a = dapx.asarray(x, backend=dapx.simulated(4))
>>> bool(np.isclose(slogdet(a)[1].gather(), np.linalg.slogdet(x)[1]))
True
"""

from __future__ import annotations

import numpy as np

from ..core.array import DistributedArray, new_array
from ..layout.distribution import Distribution
from ..layout.maps import UnstructuredMap
from .factorizations import PanelGrid, factor_layout, work_dtype
from .reduction_engine import from_replicated
from .summa import tree_broadcast

__all__ = ["det", "inv", "lu_solve", "slogdet"]

LinAlgError = np.linalg.LinAlgError

#: The panel LU's base case: columns factored one by one below this width.
_BASE_WIDTH = 16


def _magnitude(x: np.ndarray) -> np.ndarray:
    # LAPACK's i?amax: |re| + |im| for complex numbers.
    return np.abs(x.real) + np.abs(x.imag) if x.dtype.kind == "c" else np.abs(x)


def _swap_rows(x: np.ndarray, pivots: list[int]) -> None:
    """Swap row ``c`` with row ``pivots[c]`` for ``c = 0, 1, ...`` in turn, in one move."""
    source: dict[int, int] = {}  # position -> the original row that ends there
    for c, p in enumerate(pivots):
        if p != c:
            source[c], source[p] = source.get(p, p), source.get(c, c)
    if source:
        rows = np.fromiter(source, np.intp, len(source))
        x[rows] = x[np.fromiter(source.values(), np.intp, len(source))]


def _unit_lower(x: np.ndarray) -> np.ndarray:
    return np.tril(x, -1) + np.eye(len(x), dtype=x.dtype)


def _panel_lu(f: np.ndarray) -> list[int]:
    """LU with partial pivoting of the tall `f` in place; LAPACK's pivots (row swaps in order)."""
    w = f.shape[1]
    if w <= _BASE_WIDTH:
        # Column by column on a transposed copy: each column contiguous (not one cache line
        # per element of a row-major panel), the row swaps short.
        t = f.T.copy()
        pivots = []
        for c in range(w):
            p = c + int(np.argmax(_magnitude(t[c, c:])))
            pivots.append(p)
            if p != c:
                t[:, [c, p]] = t[:, [p, c]]
            if t[c, c] != 0:  # a zero column: LAPACK goes on (the matrix is singular)
                t[c, c + 1 :] /= t[c, c]
            if c + 1 < w:
                t[c + 1 :, c + 1 :] -= np.multiply.outer(t[c + 1 :, c], t[c, c + 1 :])
        f[...] = t.T
        return pivots
    h = w // 2
    first = _panel_lu(f[:, :h])
    _swap_rows(f[:, h:], first)
    f[:h, h:] = np.linalg.solve(_unit_lower(f[:h, :h]), f[:h, h:])
    f[h:, h:] -= f[h:, :h] @ f[:h, h:]
    second = _panel_lu(f[h:, h:])
    _swap_rows(f[h:, :h], second)
    return first + [p + h for p in second]


def _factored_panel(panel: np.ndarray) -> np.ndarray:
    """The panel's LU in place of it, and a row of its pivots (exact in double precision)."""
    out = np.empty((len(panel) + 1, panel.shape[1]), panel.dtype)
    out[:-1] = panel
    out[-1] = _panel_lu(out[:-1])
    return out


def _interchange(g: PanelGrid, blocks: dict, k0: int, pivots: list[int]) -> None:
    """Apply one panel's row swaps to every local column: one exchange in each grid column."""
    order = np.arange(g.n - k0)
    _swap_rows(order, pivots)
    moved = np.flatnonzero(order != np.arange(len(order)))
    if not moved.size:
        return
    dst, src = moved + k0, order[moved] + k0
    (dst_row, dst_local), (src_row, src_local) = g.row_owner(dst), g.row_owner(src)
    nranks = g.backend.nranks
    sends, expect, plans = {}, {}, {}
    for r, (i, j) in g.where.items():
        blk = blocks[r]
        counts, wanted = np.zeros(nranks, np.intp), np.zeros(nranks, np.intp)
        buffers = []
        for other in range(g.pr):
            if other == i:
                continue
            out = (src_row == i) & (dst_row == other)
            counts[g.grid.rank((other, j))] = out.sum() * blk.shape[1]
            buffers.append(blk[src_local[out]].reshape(-1))
            wanted[g.grid.rank((other, j))] = ((dst_row == i) & (src_row == other)).sum() * (
                blk.shape[1]
            )
        here = (dst_row == i) & (src_row == i)
        plans[r] = (dst_local[here], blk[src_local[here]])  # copied before anything is written
        sends[r] = (np.concatenate(buffers) if buffers else np.empty(0, blk.dtype), counts)
        expect[r] = wanted
    received = g.backend.alltoallv(sends, expect, sparse=True) if g.pr > 1 else {}
    for r, (i, j) in g.where.items():
        blk = blocks[r]
        rows, values = plans[r]
        blk[rows] = values
        for other in range(g.pr):
            into = (dst_row == i) & (src_row == other)
            if other != i and into.any():
                piece = received[r][g.grid.rank((other, j))]
                blk[dst_local[into]] = piece.reshape(-1, blk.shape[1])


def _lu(
    a: DistributedArray, rhs, block_size: int | None, work_t: np.dtype
) -> tuple[PanelGrid, dict, np.ndarray, int]:
    """Factor ``[A | B]`` in place: ``(grid, blocks, U's diagonal, number of row swaps)``.

    `rhs` is None, ``"eye"`` or a DistributedArray ``(n, m)``; B's columns
    follow A's in the augmented block-cyclic column map.
    """
    dist = factor_layout(a, block_size)
    m = 0 if rhs is None else (a.shape[0] if isinstance(rhs, str) else rhs.shape[1])
    g = PanelGrid(dist, a.backend, m)
    if a.distribution != dist:
        a = a.redistribute(dist)
    b_cols = [c[c >= g.n] - g.n for c in g.col_idx]
    if m and not isinstance(rhs, str):
        b_dist = Distribution([dist.maps[0], UnstructuredMap(m, b_cols)], dist.grid_shape)
        rhs = rhs.redistribute(b_dist) if rhs.distribution != b_dist else rhs
    blocks = {}
    for r, (i, j) in g.where.items():  # [A | B] in one buffer per rank: A's block copied once
        rows, width = len(g.row_idx[i]), a.distribution.local_shape(r)[1]
        blk = blocks[r] = np.empty((rows, width + len(b_cols[j])), work_t)
        blk[:, :width] = a.locals[r]
        if isinstance(rhs, str):  # the identity: each rank writes its own part
            blk[:, width:] = g.row_idx[i][:, None] == b_cols[j][None, :]
        elif m:
            blk[:, width:] = rhs.locals[r]
    diagonal, swaps, nb = [], 0, g.nb
    for k0 in range(0, g.n, nb):
        k1 = min(k0 + nb, g.n)
        kb, ir, jc = k1 - k0, (k0 // nb) % g.pr, (k0 // nb) % g.pc
        panel = g.factor_panel(blocks, k0, k1, _factored_panel)
        pivots = panel[-1].real.astype(np.intp).tolist()
        panel = panel[:-1]
        diagonal.append(np.diagonal(panel[:kb]).copy())
        swaps += sum(p != c for c, p in enumerate(pivots))
        _interchange(g, blocks, k0, pivots)
        # L11 is unit lower with multipliers |l| <= 1 (partial pivoting): its inverse is
        # well conditioned, and one GEMM with it is faster than LAPACK's general solve.
        l11_inv = np.linalg.inv(_unit_lower(panel[:kb]))
        held, shapes = {}, {}
        for r, (i, j) in g.where.items():
            rows, cols, blk = g.row_idx[i], g.col_idx[j], blocks[r]
            lr, lc1 = int(np.searchsorted(rows, k0)), int(np.searchsorted(cols, k1))
            if j == jc:
                lc = int(np.searchsorted(cols, k0))
                blk[lr:, lc : lc + kb] = panel[rows[lr:] - k0]
            shapes[r], held[r] = (kb, len(cols) - lc1), None
            if i == ir:  # U12 = L11^{-1} A12 on the owners of the block row
                u12 = blk[lr : lr + kb, lc1:]
                if u12.shape[1]:
                    u12[...] = l11_inv @ u12
                held[r] = u12
        if g.pr > 1:
            held = tree_broadcast(held, shapes, work_t, g.grid, 0, ir, g.backend)
        for r, (i, j) in g.where.items():
            rows, cols, blk = g.row_idx[i], g.col_idx[j], blocks[r]
            lr1, lc1 = int(np.searchsorted(rows, k1)), int(np.searchsorted(cols, k1))
            if lr1 < len(rows) and lc1 < len(cols):
                blk[lr1:, lc1:] -= panel[rows[lr1:] - k0] @ held[r]
        del held
    return g, blocks, np.concatenate(diagonal), swaps


def _back_substitute(g: PanelGrid, blocks: dict, work_t: np.dtype) -> dict:
    """Solve ``U X = Y`` for the right-hand side columns of ``[U | Y]``; X's blocks."""
    nb = g.nb
    for k0 in reversed(range(0, g.n, nb)):
        k1 = min(k0 + nb, g.n)
        kb, ir, jc = k1 - k0, (k0 // nb) % g.pr, (k0 // nb) % g.pc
        held, shapes = {}, {}
        for r, (i, j) in g.where.items():  # U's block column k, rows < k1, along grid rows
            rows, cols = g.row_idx[i], g.col_idx[j]
            top = int(np.searchsorted(rows, k1))
            shapes[r], held[r] = (top, kb), None
            if j == jc:
                lc = int(np.searchsorted(cols, k0))
                held[r] = blocks[r][:top, lc : lc + kb]
        if g.pc > 1:
            held = tree_broadcast(held, shapes, work_t, g.grid, 1, jc, g.backend)
        solved, xshapes = {}, {}
        for r, (i, j) in g.where.items():
            rows, cols, blk = g.row_idx[i], g.col_idx[j], blocks[r]
            lb = int(np.searchsorted(cols, g.n))
            xshapes[r], solved[r] = (kb, len(cols) - lb), None
            if i == ir:
                lr = int(np.searchsorted(rows, k0))
                x = blk[lr : lr + kb, lb:]
                if x.shape[1]:
                    x[...] = np.linalg.solve(np.triu(held[r][lr : lr + kb]), x)
                solved[r] = x
        if g.pr > 1:
            solved = tree_broadcast(solved, xshapes, work_t, g.grid, 0, ir, g.backend)
        for r, (i, j) in g.where.items():
            rows, cols, blk = g.row_idx[i], g.col_idx[j], blocks[r]
            lb, top = int(np.searchsorted(cols, g.n)), int(np.searchsorted(rows, k0))
            if top and lb < len(cols):
                blk[:top, lb:] -= held[r][:top] @ solved[r]
    out = {}
    for r, (_, j) in g.where.items():
        out[r] = blocks[r][:, int(np.searchsorted(g.col_idx[j], g.n)) :]
    return out


def _solved(a: DistributedArray, rhs, result_t, block_size: int | None) -> DistributedArray:
    work_t = work_dtype(result_t)
    g, blocks, diagonal, _ = _lu(a, rhs, block_size, work_t)
    if not np.all(diagonal):  # every rank holds the whole diagonal: every rank raises
        raise LinAlgError("Singular matrix")
    x = _back_substitute(g, blocks, work_t)
    m = a.shape[0] if isinstance(rhs, str) else rhs.shape[1]
    b_cols = [c[c >= g.n] - g.n for c in g.col_idx]
    dist = Distribution([g.dist.maps[0], UnstructuredMap(m, b_cols)], g.dist.grid_shape)
    x = {r: v.astype(result_t) for r, v in x.items()}
    return new_array(dist, x, a.backend, result_t)


def lu_solve(
    a: DistributedArray, b: DistributedArray, block_size: int | None = None
) -> DistributedArray:
    """`numpy.linalg.solve` of one n x n system by LU with partial pivoting.

    Parameters
    ----------
    a : DistributedArray
        The n x n matrix.
    b : DistributedArray
        The right-hand side, ``(n,)`` or ``(n, m)``.
    block_size : int, optional
        ``nb`` (see `factor_layout`).

    Returns
    -------
    DistributedArray
        ``x`` of NumPy's dtype, in `b`'s layout.

    Raises
    ------
    numpy.linalg.LinAlgError
        On every rank, when `a` is singular (an exactly zero pivot).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> be = dapx.simulated(3)
    >>> x = np.array([[0.0, 2.0], [3.0, 1.0]])
    >>> lu_solve(dapx.asarray(x, backend=be), dapx.asarray([4.0, 5.0], backend=be)).gather()
    array([1., 2.])
    """
    result_t = np.linalg.solve(np.eye(1, dtype=a.dtype), np.ones(1, dtype=b.dtype)).dtype
    vector = b.ndim == 1
    rhs = b[:, None] if vector else b
    x = _solved(a, rhs, result_t, block_size)
    x = x[:, 0] if vector else x
    return x.redistribute(b.distribution) if x.distribution != b.distribution else x


def inv(a: DistributedArray, block_size: int | None = None) -> DistributedArray:
    """`numpy.linalg.inv` of one matrix: LU of ``[A | I]`` and back substitution.

    The result is in the block-cyclic layout of `factor_layout`.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.array([[0.0, 2.0], [4.0, 0.0]])
    >>> inv(dapx.asarray(x, backend=dapx.simulated(2))).gather()
    array([[0.  , 0.25],
           [0.5 , 0.  ]])
    """
    result_t = np.linalg.inv(np.eye(1, dtype=a.dtype)).dtype
    x = _solved(a, "eye", result_t, block_size)
    dist = factor_layout(a, block_size)
    return x.redistribute(dist)


def _slogdet_values(a: DistributedArray, block_size: int | None) -> tuple[np.ndarray, np.ndarray]:
    """``(sign, logabsdet)`` in double precision, and NumPy's result dtype of the sign."""
    result_t = np.linalg.slogdet(np.eye(1, dtype=a.dtype))[0].dtype
    work_t = work_dtype(result_t)
    _, _, diagonal, swaps = _lu(a, None, block_size, work_t)
    absolute = np.abs(diagonal)
    if not np.all(absolute):  # NumPy's answer for a singular matrix
        return np.zeros((), work_t), np.asarray(-np.inf), result_t
    sign = np.prod(diagonal / absolute) * (-1.0 if swaps % 2 else 1.0)
    return np.asarray(sign, work_t), np.asarray(np.sum(np.log(absolute))), result_t


def _cast(value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    with np.errstate(over="ignore"):  # NumPy's float32 results overflow to inf alike
        return np.asarray(value).astype(dtype)


def slogdet(a: DistributedArray, block_size: int | None = None) -> tuple:
    """``(sign, logabsdet)`` of one matrix by LU (`numpy.linalg.slogdet`), 0-d arrays.

    Every rank holds the whole diagonal of ``U`` and the number of row swaps
    (each factored every panel), so the result is the same on every rank
    without communication: the logarithms are summed in the diagonal's order.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.array([[0.0, 2.0], [3.0, 1.0]])
    >>> sign, logdet = slogdet(dapx.asarray(x, backend=dapx.simulated(2)))
    >>> float(sign.gather()), round(float(np.exp(logdet.gather())), 12)
    (-1.0, 6.0)
    """
    sign, logdet, result_t = _slogdet_values(a, block_size)
    real_t = np.dtype(result_t.char.lower())
    return (
        from_replicated(_cast(sign, result_t), a.backend),
        from_replicated(_cast(logdet, real_t), a.backend),
    )


def det(a: DistributedArray, block_size: int | None = None) -> DistributedArray:
    """`numpy.linalg.det` of one matrix: ``sign * exp(logabsdet)``, as NumPy computes it.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.array([[0.0, 2.0], [3.0, 1.0]])
    >>> float(np.round(det(dapx.asarray(x, backend=dapx.simulated(4))).gather(), 12))
    -6.0
    """
    sign, logdet, result_t = _slogdet_values(a, block_size)
    with np.errstate(over="ignore"):
        value = sign * np.exp(logdet)
    return from_replicated(_cast(value, result_t), a.backend)
