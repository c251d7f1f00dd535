"""Tall-skinny linear algebra: TSQR and what is built on it, without gathering the matrix.

A matrix of ``m x n`` with ``m >= n`` whose rows are spread over the ranks
(any row map: block, irregular block with empty blocks, cyclic,
unstructured) and whose columns are whole on every rank is factorized by
TSQR (Demmel, Grigori, Hoemmen, Langou, 2012):

1. each rank factorizes its own rows, ``A_r = Q_r R_r``, itself a TSQR over
   cache-sized chunks of rows (a tree of small LAPACK QRs: one pass over the
   block instead of LAPACK's ``n`` passes over a block that does not fit the
   cache);
2. the small factors ``R_r`` (at most ``n x n`` each) are gathered to every
   rank in rank order and stacked, and every rank computes the same QR of
   the stack, ``S = Q_S R``, from the same bits;
3. ``Q``'s rows on rank ``r`` are ``Q_r @ Q_S[rows of r]``: the big blocks
   never move, and ``Q`` keeps ``A``'s row layout (its rows are ``A``'s rows,
   whatever the row map is: a row permutation of ``A`` only permutes ``Q``).

``R`` is normalised to a real non-negative diagonal (unique for a matrix of
full column rank), so it does not depend on the number of ranks beyond
rounding. LAPACK's ``R`` (NumPy's) may have negative diagonal entries: the
two agree up to the signs (phases) of ``R``'s rows and ``Q``'s columns.

The SVD is the SVD of ``R`` (``R = U_R S V^H``, so ``U = Q U_R`` with
``A``'s row layout); least squares, the pseudo-inverse, the rank, the
condition number and the 2- and nuclear norms follow from it. Least squares
never forms ``Q``: the TSQR of ``[A | b]`` holds ``Q^H b`` and the residuals
in its last columns.

Memory bound: each rank holds its own block, the blocks of the results it
owns (``Q`` or ``U``, laid out like ``A``), the local factors of its chunks
(as large as its block), and ``O(P n^2)`` elements for the stacked ``R``
factors of the ``P`` ranks (``O(P (n + k)^2)`` for least squares with ``k``
right-hand sides): the only collective is one allgather of the ``R``
factors (``tests/test_tall_skinny.py`` measures it). The stack is never
larger than the matrix itself (``sum(min(rows_r, n)) <= m``).

Like NumPy, the factorizations compute in double precision (complex128 or
float64) and return the input's precision.

Examples
--------
>>> import numpy as np, dapx
>>> x = np.arange(24.0).reshape(8, 3) ** 2
>>> a = dapx.asarray(x, dist=("c", "n"), grid=(2, 1), backend=dapx.simulated(2))
>>> f = TSQR(a, want_q=True)
>>> q = f.q_array()
>>> bool(np.allclose(q.gather() @ f.r, x)), q.distribution.dist_types
(True, ('c', 'b'))
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..core.array import DistributedArray, new_array
from ..core.redistribution import align
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap
from .reduction_engine import from_replicated, owned_only
from .shaping import matrix_transpose

__all__ = [
    "CHUNK_BYTES",
    "TSQR",
    "cond_svd",
    "inverse_transpose",
    "lstsq",
    "matrix_rank",
    "pinv",
    "qr",
    "qualifies",
    "qualifies_either_way",
    "result_dtype",
    "rows_layout",
    "svd",
    "svd_parts",
    "svdvals",
]

#: The size of the chunks of rows each rank factorizes at the leaves of its local tree:
#: a few MiB, so that LAPACK's passes over a chunk stay in the cache.
CHUNK_BYTES = 1 << 21


def qualifies(a) -> bool:
    """Whether `a` is a single tall (``m >= n >= 1``) matrix for TSQR.

    Any layout qualifies: rows already spread with whole columns are used as
    they are; otherwise `rows_layout` redistributes once (no gather).

    >>> import dapx
    >>> qualifies(dapx.zeros((5, 3), backend=dapx.simulated(2)))
    True
    >>> qualifies(dapx.zeros((3, 5), backend=dapx.simulated(2)))
    False
    """
    return isinstance(a, DistributedArray) and a.ndim == 2 and a.shape[0] >= a.shape[1] >= 1


def qualifies_either_way(a) -> bool:
    """Whether `a` or its transpose `qualifies` (for what the transpose leaves unchanged).

    >>> import dapx
    >>> qualifies_either_way(dapx.zeros((3, 5), backend=dapx.simulated(2)))
    True
    """
    return isinstance(a, DistributedArray) and a.ndim == 2 and min(a.shape) >= 1


def _adjoint(a: DistributedArray) -> DistributedArray:
    """The conjugate transpose (a transpose of the layout, no communication)."""
    t = matrix_transpose(a)
    return np.conjugate(t) if t.dtype.kind == "c" else t


def _real(dtype: np.dtype) -> np.dtype:
    return np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype


def rows_layout(a: DistributedArray) -> DistributedArray:
    """`a` with its columns whole on every rank and only owned rows (no padding or copies).

    Rows spread by any map are kept as they are (no communication); a
    distributed column axis is redistributed to even row blocks over all
    ranks (one exchange: each rank receives its share, nothing is gathered).

    >>> import numpy as np, dapx
    >>> a = dapx.zeros((6, 4), dist=("n", "b"), grid=(1, 2), backend=dapx.simulated(2))
    >>> rows_layout(a).distribution.grid_shape
    (2, 1)
    """
    columns = a.distribution.maps[1]
    if columns.nprocs != 1:
        nranks = a.backend.nranks
        return a.redistribute(Distribution.create(a.shape, ("b", "n"), grid=(nranks, 1)))
    a = owned_only(a)
    if not np.array_equal(columns.global_indices(0), np.arange(a.shape[1])):
        # Whole but out of order (an unstructured map on one process): put the columns in
        # order, rank by rank (the exchange plan stays local).
        maps = [a.distribution.maps[0], BlockMap(a.shape[1], nprocs=1)]
        a = a.redistribute(Distribution(maps, a.distribution.grid))
    return a


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """NumPy's computation type for linalg: double precision, complex if `dtype` is."""
    return np.dtype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)


def result_dtype(*dtypes) -> np.dtype:
    """NumPy's linalg result type: single precision only when every input is single."""
    for d in dtypes:
        # NumPy's own check, with its error (float16, objects, ...).
        np.linalg.qr(np.zeros((1, 1), d), "r")
    complex_ = any(np.dtype(d).kind == "c" for d in dtypes)
    single = all(np.dtype(d) in (np.float32, np.complex64) for d in dtypes)
    if single:
        return np.dtype(np.complex64 if complex_ else np.float32)
    return np.dtype(np.complex128 if complex_ else np.float64)


class _Tree:
    """The TSQR of one rank's block: QRs of chunks of rows, then the TSQR of their stacked R's.

    ``r`` is ``min(rows, n) x n``; ``q_times(w)`` is ``Q @ w`` and
    ``qh_times(c)`` is ``Q^H @ c`` with the block's ``Q`` (``rows x len(r)``)
    kept implicitly as the chunks' factors.
    """

    __slots__ = ("children", "q", "r", "spans", "top")

    def __init__(self, block: np.ndarray, want_q: bool, chunk: int):
        rows = block.shape[0]
        self.children = self.top = None
        self.q = None
        if rows <= chunk:
            if want_q:
                self.q, self.r = np.linalg.qr(block)
            else:
                self.r = np.linalg.qr(block, "r")
            return
        starts = range(0, rows, chunk)
        self.children = [_Tree(block[i : i + chunk], want_q, chunk) for i in starts]
        self.spans = [(i, min(i + chunk, rows)) for i in starts]
        stack = np.concatenate([c.r for c in self.children])
        self.top = _Tree(stack, want_q, chunk)
        self.r = self.top.r

    def q_times(self, w: np.ndarray) -> np.ndarray:
        if self.children is None:
            return self.q @ w
        v = self.top.q_times(w)
        out = np.empty((self.spans[-1][1], w.shape[1]), np.result_type(v, self.children[0].q))
        offset = 0
        for (lo, hi), child in zip(self.spans, self.children):
            k = child.r.shape[0]
            out[lo:hi] = child.q_times(v[offset : offset + k])
            offset += k
        return out


def _chunk_rows(n: int, dtype: np.dtype) -> int:
    # At least 2n rows, so that every level of the local tree at least halves the rows.
    return max(2 * n, CHUNK_BYTES // max(1, n * dtype.itemsize))


class TSQR:
    """The TSQR factorization ``A = Q R`` of a tall matrix distributed by rows.

    Parameters
    ----------
    a : DistributedArray
        A 2-D array with ``m >= n >= 1`` (any layout; see `rows_layout`).
    want_q : bool
        Keep what `q_blocks` needs (the chunks' ``Q`` factors); without it
        only ``R`` is computed (LAPACK's cheaper ``mode='r'`` at the leaves).
    dtype : dtype, optional
        The computation dtype (default: double precision of `a`'s kind).

    Attributes
    ----------
    a : DistributedArray
        `a` in the row layout the factorization used (`Q`'s layout).
    r : numpy.ndarray
        ``n x n``, upper triangular with a real non-negative diagonal, the
        same on every rank.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.random.default_rng(0).standard_normal((9, 2))
    >>> f = TSQR(dapx.asarray(x, backend=dapx.simulated(3)))
    >>> bool(np.allclose(np.abs(f.r), np.abs(np.linalg.qr(x, "r"))))
    True
    """

    def __init__(self, a: DistributedArray, want_q: bool = False, dtype=None):
        a = rows_layout(a)
        self.a = a
        self.dtype = _compute_dtype(a.dtype) if dtype is None else np.dtype(dtype)
        n = a.shape[1]
        chunk = _chunk_rows(n, self.dtype)
        self.trees = {
            r: _Tree(b.astype(self.dtype, copy=False), want_q, chunk) for r, b in a.locals.items()
        }
        # The one collective: every rank's small R in rank order, so that every rank stacks
        # the same bits and computes the same top-level factorization.
        factors = a.backend.allgather({r: t.r for r, t in self.trees.items()})
        sizes = [f.shape[0] for f in factors]
        self.offsets = dict(enumerate(np.cumsum([0, *sizes]).tolist()))
        self.top = _Tree(np.concatenate(factors), want_q, chunk)
        r = self.top.r[:n]
        # Real non-negative diagonal: R is then unique (full column rank); the phases go to Q.
        d = np.diagonal(r)
        magnitude = np.abs(d)
        self.phase = np.where(magnitude == 0, 1, d / np.where(magnitude == 0, 1, magnitude))
        self.r = np.triu(np.conjugate(self.phase)[:, None] * r)
        self.sizes = sizes

    def q_blocks(self, w: np.ndarray | None = None) -> dict[int, np.ndarray]:
        """Each local rank's rows of ``Q @ w`` (``w`` small, ``n x p``; default ``Q``).

        Every rank applies its chunks' factors to its share of ``Q_S @ w``: the
        big blocks never move.
        """
        w = np.diag(self.phase) if w is None else self.phase[:, None] * w
        top = self.top.q_times(w)
        blocks = {}
        for rank, tree in self.trees.items():
            lo = self.offsets[rank]
            blocks[rank] = tree.q_times(top[lo : lo + self.sizes[rank]])
        return blocks

    def rows_array(self, blocks: Mapping[int, np.ndarray], dtype) -> DistributedArray:
        """Blocks of ``m x p`` rows laid out like `a`'s rows, as a DistributedArray."""
        sample = next(iter(blocks.values()))
        dist = Distribution(
            [self.a.distribution.maps[0], BlockMap(sample.shape[1], nprocs=1)],
            self.a.distribution.grid,
        )
        out = {r: b.astype(dtype, copy=False) for r, b in blocks.items()}
        return new_array(dist, out, self.a.backend, dtype)

    def q_array(self, w: np.ndarray | None = None, dtype=None) -> DistributedArray:
        """``Q @ w`` (default ``Q``) as a DistributedArray with `a`'s row layout."""
        return self.rows_array(self.q_blocks(w), self.dtype if dtype is None else dtype)


def svd_parts(a: DistributedArray, want_u: bool):
    """``(factorization, U_R, s, Vh)``: the TSQR of `a` and the SVD of its ``R``.

    ``U = factorization.q_array(U_R)``; `s` and `Vh` are NumPy arrays known on
    every rank (computed in double precision).
    """
    f = TSQR(a, want_q=want_u)
    if want_u:
        u, s, vh = np.linalg.svd(f.r, full_matrices=False)
        return f, u, s, vh
    return f, None, np.linalg.svd(f.r, compute_uv=False), None


def lstsq(a: DistributedArray, b: DistributedArray, rcond=None) -> tuple:
    """NumPy's least squares through the TSQR of ``[A | b]``: ``(x, residuals, rank, s)``.

    ``Q^H b`` and the residuals are read off the last columns of the
    factorization's ``R`` (``Q`` is never formed); the minimum-norm solution
    is ``V S^+ U_R^H Q^H b`` with NumPy's cut-off ``s > rcond * s[0]`` and
    its default ``rcond = eps * max(m, n)``. The results are NumPy arrays,
    the same on every rank. `b` is 1-d or 2-d, its rows laid out in any way.

    >>> import numpy as np, dapx
    >>> x = np.vander(np.linspace(0, 1, 12), 3)
    >>> y = np.cos(np.arange(12.0))
    >>> backend = dapx.simulated(3)
    >>> got = lstsq(dapx.asarray(x, backend=backend), dapx.asarray(y, backend=backend))
    >>> bool(np.allclose(got[0], np.linalg.lstsq(x, y)[0])), got[2]
    (True, 3)
    """
    m, n = a.shape
    vector = b.ndim == 1
    a = rows_layout(a)
    rhs = b.shape[1] if not vector else 1
    result_t = result_dtype(a.dtype, b.dtype)
    work = _compute_dtype(result_t)
    target = Distribution(
        [a.distribution.maps[0], BlockMap(rhs, nprocs=1)]
        if not vector
        else [a.distribution.maps[0]],
        a.distribution.grid if not vector else None,
    )
    b_blocks = align(b, target)
    blocks = {}
    for r, block in a.locals.items():
        y = b_blocks[r].reshape(block.shape[0], rhs)
        joined = np.empty((block.shape[0], n + rhs), work)
        joined[:, :n] = block
        joined[:, n:] = y
        blocks[r] = joined
    joined = new_array(
        Distribution([a.distribution.maps[0], BlockMap(n + rhs, nprocs=1)], a.distribution.grid),
        blocks,
        a.backend,
        work,
    )
    full = TSQR(joined).r
    r, c, tail = full[:n, :n], full[:n, n:], full[n:, n:]
    u, s, vh = np.linalg.svd(r, full_matrices=False)
    if rcond is None:
        rcond = np.finfo(work).eps * max(m, n)
    rank = int(np.count_nonzero(s > rcond * s[0])) if s.size else 0
    projected = np.conjugate(u[:, :rank]).T @ c / s[:rank, None]
    x = np.conjugate(vh[:rank]).T @ projected
    real_t = _real(result_t)
    # b - A x = Q_2 R_22: the residuals are the column sums of |R_22|^2 (no cancellation).
    full_rank = rank == n and m > n
    residuals = np.sum(np.abs(tail) ** 2, axis=0) if full_rank else np.array([], real_t)
    if vector:
        x = x[:, 0]
    return (
        x.astype(result_t),
        residuals.astype(real_t, copy=False),
        rank,
        s.astype(real_t, copy=False),
    )


# -- NumPy's functions on a tall (or, through the transpose, wide) matrix -----------------------


def qr(a: DistributedArray, mode: str = "reduced"):
    """`numpy.linalg.qr` of a tall matrix, ``mode`` 'reduced' (``(Q, R)``) or 'r' (``R``).

    ``Q`` has `a`'s row layout; ``R`` (``n x n``, small) is on every rank. ``R``'s
    diagonal is real and non-negative (see the module notes on NumPy's signs).

    >>> import numpy as np, dapx
    >>> x = np.random.default_rng(1).standard_normal((7, 3))
    >>> q, r = qr(dapx.asarray(x, backend=dapx.simulated(2)))
    >>> bool(np.allclose((q @ r).gather(), x)), bool(np.all(np.diagonal(r.gather()) > 0))
    (True, True)
    """
    dtype = result_dtype(a.dtype)
    f = TSQR(a, want_q=mode != "r")
    r = from_replicated(f.r.astype(dtype), a.backend)
    if mode == "r":
        return r
    return f.q_array(dtype=dtype), r


def svd(a: DistributedArray):
    """`numpy.linalg.svd` with ``full_matrices=False``: ``(U, S, Vh)``.

    For a tall matrix ``U`` has `a`'s row layout and ``S``, ``Vh`` are on every
    rank; a wide matrix is the adjoint of a tall one (``Vh`` then has the
    layout of `a`'s columns, ``U`` is on every rank).

    >>> import numpy as np, dapx
    >>> x = np.random.default_rng(2).standard_normal((3, 8))
    >>> u, s, vh = svd(dapx.asarray(x, backend=dapx.simulated(2)))
    >>> bool(np.allclose((u * s) @ vh.gather(), x)), vh.shape
    (True, (3, 8))
    """
    dtype = result_dtype(a.dtype)
    real_t = _real(dtype)
    wide = a.shape[0] < a.shape[1]
    f, u, s, vh = svd_parts(_adjoint(a) if wide else a, True)
    big = f.q_array(u, dtype)
    s = from_replicated(s.astype(real_t), a.backend)
    if wide:  # a^H = U S Vh, so a = Vh^H S U^H
        return from_replicated(np.conjugate(vh).T.astype(dtype), a.backend), s, _adjoint(big)
    return big, s, from_replicated(vh.astype(dtype), a.backend)


def _singular_values(a: DistributedArray) -> np.ndarray:
    """The singular values of `a` (double precision, descending), on every rank."""
    return svd_parts(_adjoint(a) if a.shape[0] < a.shape[1] else a, False)[2]


def svdvals(a: DistributedArray) -> DistributedArray:
    """`numpy.linalg.svdvals` of a tall or wide matrix, on every rank.

    >>> import numpy as np, dapx
    >>> x = np.arange(12.0).reshape(6, 2)
    >>> bool(np.allclose(svdvals(dapx.asarray(x, backend=dapx.simulated(3))).gather(),
    ...                  np.linalg.svdvals(x)))
    True
    """
    s = _singular_values(a).astype(_real(result_dtype(a.dtype)))
    return from_replicated(s, a.backend)


def pinv(a: DistributedArray, rcond) -> DistributedArray:
    """`numpy.linalg.pinv` with a scalar `rcond` (NumPy's rule: ``s > rcond * max(s)``).

    The result is ``V S^+ U^H``; its adjoint ``U S^+ V^H = Q (U_R S^+ V^H)`` is
    built row by row like `a`, so the result has `a`'s row layout along its
    columns (a layout transpose, no communication). For a wide matrix the
    roles swap: the pseudo-inverse of ``a^H`` is the adjoint of `a`'s.

    >>> import numpy as np, dapx
    >>> x = np.random.default_rng(3).standard_normal((9, 2))
    >>> got = pinv(dapx.asarray(x, backend=dapx.simulated(2)), 1e-15)
    >>> bool(np.allclose(got.gather(), np.linalg.pinv(x))), got.shape
    (True, (2, 9))
    """
    dtype = result_dtype(a.dtype)
    wide = a.shape[0] < a.shape[1]
    f, u, s, vh = svd_parts(_adjoint(a) if wide else a, True)
    cutoff = np.asarray(rcond) * (np.max(s) if s.size else 0.0)
    large = s > cutoff
    inverse = np.where(large, 1.0 / np.where(large, s, 1.0), 0.0)
    adjoint = f.q_array((u * inverse) @ vh, dtype)  # pinv(a)^H (of the tall one)
    return adjoint if wide else _adjoint(adjoint)


def matrix_rank(a: DistributedArray, tol=None, rtol=None) -> DistributedArray:
    """`numpy.linalg.matrix_rank` of a matrix with scalar `tol` / `rtol`, on every rank.

    >>> import numpy as np, dapx
    >>> x = np.outer(np.arange(6.0), [1.0, 2.0, 3.0])
    >>> int(matrix_rank(dapx.asarray(x, backend=dapx.simulated(2))))
    1
    """
    s = _singular_values(a).astype(_real(result_dtype(a.dtype)))
    if tol is None:
        if rtol is None:
            rtol = max(a.shape) * np.finfo(s.dtype).eps
        tol = np.max(s) * np.asarray(rtol)
    return from_replicated(np.asarray(np.count_nonzero(s > tol), np.intp), a.backend)


def cond_svd(a: DistributedArray, p) -> float:
    """NumPy's condition number for ``p`` None, 2 or -2 (ratio of singular values).

    Returns the ratio in `a`'s real result dtype, NaN where NumPy's would be (the
    caller turns it into infinity unless `a` holds NaN, as NumPy does).
    """
    s = _singular_values(a).astype(_real(result_dtype(a.dtype)))
    with np.errstate(all="ignore"):
        return s[-1] / s[0] if p == -2 else s[0] / s[-1]


def inverse_transpose(a: DistributedArray) -> DistributedArray | None:
    """``inv(a)^T`` of a square matrix with `a`'s row layout, or None when ``R`` is singular.

    ``inv(a) = R^-1 Q^H``, so ``inv(a)^T = conj(Q) R^-T``: each rank builds the
    rows of its own rows of `a`. Its norms give the condition numbers of
    orders 1, -1, inf, -inf and 'fro' without gathering.

    >>> import numpy as np, dapx
    >>> x = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> got = inverse_transpose(dapx.asarray(x, backend=dapx.simulated(2)))
    >>> bool(np.allclose(got.gather(), np.linalg.inv(x).T))
    True
    """
    dtype = result_dtype(a.dtype)
    f = TSQR(a, want_q=True)
    try:
        inverse = np.linalg.inv(f.r)
    except np.linalg.LinAlgError:
        return None
    # conj(Q) M = conj(Q conj(M)) with M = R^-T.
    b = f.q_array(np.conjugate(inverse).T, dtype)
    return np.conjugate(b) if b.dtype.kind == "c" else b
