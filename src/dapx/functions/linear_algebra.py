"""`numpy.linalg` on distributed arrays, correct on every layout.

Products, transposes, traces and diagonals are in
`dapx.functions.linalg_products`; norms are
reductions (partials in rank order, nothing made whole), the ones defined by
singular values included (see below).

A single tall matrix (2-d, ``m >= n >= 1``, any layout) goes through
tall-skinny QR (`dapx.functions.tall_skinny`: the matrix never moves, each
rank holds its block plus ``O(P n^2)``): `qr` (modes 'reduced' and 'r'),
`svd` (``full_matrices=False``, or a square matrix), `svdvals`, `lstsq`,
`pinv`, `matrix_rank`, `cond` and the norms of orders 2, -2 and 'nuc'; the
functions that the adjoint leaves unchanged (`svd`, `svdvals`, `pinv`,
`matrix_rank`, `cond` with ``p`` None/2/-2) take wide matrices through it too.

A single non-empty square matrix goes through the blocked right-looking
factorizations on a 2-D block-cyclic grid: `cholesky`
(`dapx.functions.factorizations`), `solve`, `inv`, `det` and `slogdet` (LU
with partial pivoting, `dapx.functions.lu`); `eigh` and `eigvalsh` through
the blocked right-looking Householder reduction to tridiagonal form and
inverse iteration (`dapx.functions.tridiagonal`), or parallel block Jacobi
(`dapx.functions.eigen`, which chooses); nothing is made whole.

Everything else (stacks of matrices, `eig` and `eigvals`, `qr` with
``mode='complete'`` or ``'raw'`` and `svd` with ``full_matrices=True`` of a
non-square matrix, which need an ``m x m`` factor
or LAPACK's Householder form, `hermitian=True`) makes each matrix whole on
one rank with the batch axes spread over the ranks
(`dapx.functions.whole_core.on_whole_core`); a single matrix is made whole on
one process with a `dapx.GatherWarning` above the gather threshold.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray
from ..core.dispatch import implements
from . import eigen, lu
from . import factorizations as fz
from . import tall_skinny as ts
from .linalg import matmul
from .linalg_products import check_square
from .reductions import max as max_
from .reductions import min as min_
from .reductions import sum as sum_
from .scans import whole
from .shaping import from_replicated, reshape
from .whole_core import as_distributed_operand, on_rank0, on_whole_core

__all__ = [
    "cholesky",
    "cond",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "lstsq",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vector_norm",
]

LinAlgError = np.linalg.LinAlgError
la = np.linalg


def _at_least_2d(a: DistributedArray) -> None:
    if a.ndim < 2:
        raise LinAlgError(
            f"{a.ndim}-dimensional array given. Array must be at least two-dimensional"
        )


def _one(func, a, core, name, *args, **kwargs):
    (result,) = on_whole_core(lambda b: func(b, *args, **kwargs), [a], [core], name, LinAlgError)
    return result


# -- factorizations and solvers, each matrix whole on one rank ----------------------------------


@implements(la.inv)
def inv(a):
    """`numpy.linalg.inv` of each matrix (see the module notes).

    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.eye(2)[None] * [[[2.0]], [[4.0]]], backend=dapx.simulated(2))
    >>> np.linalg.inv(a).gather()[:, 0, 0]
    array([0.5 , 0.25])
    """
    check_square(a, "inv")
    if fz.qualifies(a):  # one matrix: LU on a 2-D block-cyclic grid (nothing made whole)
        return lu.inv(a)
    return _one(la.inv, a, 2, "np.linalg.inv")


@implements(la.det)
def det(a):
    """`numpy.linalg.det` of each matrix."""
    check_square(a, "det")
    if fz.qualifies(a):
        return lu.det(a)
    return _one(la.det, a, 2, "np.linalg.det")


@implements(la.slogdet)
def slogdet(a):
    """`numpy.linalg.slogdet`: ``(sign, logabsdet)`` of each matrix."""
    check_square(a, "slogdet")
    if fz.qualifies(a):
        return type(la.slogdet(np.eye(1)))(*lu.slogdet(a))
    sign, logabsdet = on_whole_core(
        lambda b: tuple(la.slogdet(b)), [a], [2], "np.linalg.slogdet", LinAlgError
    )
    return type(la.slogdet(np.eye(1)))(sign, logabsdet)


@implements(la.cholesky)
def cholesky(a, /, *, upper=False):
    """`numpy.linalg.cholesky` of each matrix."""
    check_square(a, "cholesky")
    if fz.qualifies(a):  # one matrix: blocked Cholesky on a 2-D block-cyclic grid
        return fz.cholesky(a, upper=upper)
    return _one(la.cholesky, a, 2, "np.linalg.cholesky", upper=upper)


@implements(la.qr)
def qr(a, mode="reduced"):
    """`numpy.linalg.qr` of each matrix; a single tall one by TSQR (modes 'reduced', 'r').

    # Note: dapx's TSQR gives ``R`` a real non-negative diagonal; NumPy's (LAPACK's) ``R``
    # may have negative entries there, so ``Q`` and ``R`` may differ from NumPy's by the
    # signs (phases) of ``Q``'s columns and ``R``'s rows. ``mode='complete'`` of a tall
    # non-square matrix (an ``m x m`` ``Q``) and ``mode='raw'`` take the whole-matrix path.

    >>> import numpy as np, dapx
    >>> x = np.random.default_rng(0).standard_normal((8, 3))
    >>> q, r = np.linalg.qr(dapx.asarray(x, backend=dapx.simulated(2)))
    >>> bool(np.allclose((q @ r).gather(), x)), q.distribution.grid_shape
    (True, (2, 1))
    """
    _at_least_2d(a)
    square = a.ndim == 2 and a.shape[0] == a.shape[1]
    if ts.qualifies(a) and (mode in ("reduced", "r") or (mode == "complete" and square)):
        result = ts.qr(a, "r" if mode == "r" else "reduced")
        return result if mode == "r" else type(la.qr(np.eye(1)))(*result)
    if mode in ("r", "raw"):
        out = on_whole_core(lambda b: la.qr(b, mode), [a], [2], "np.linalg.qr", LinAlgError)
        return out[0] if mode == "r" else out
    q, r = on_whole_core(lambda b: tuple(la.qr(b, mode)), [a], [2], "np.linalg.qr", LinAlgError)
    return type(la.qr(np.eye(1)))(q, r)


@implements(la.svd)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """`numpy.linalg.svd` of each matrix; a single matrix through TSQR.

    A single matrix with ``full_matrices=False`` (or a square one) is
    factorized without gathering: ``U`` keeps a tall matrix's row layout
    (``Vh`` a wide matrix's column layout). ``full_matrices=True`` of a
    non-square matrix asks for an ``m x m`` factor and takes the whole-matrix
    path (a `dapx.GatherWarning`); pass ``full_matrices=False``.

    # Note: singular vectors are unique only up to a sign (phase) each; dapx's may
    # differ from NumPy's by those.

    >>> import numpy as np, dapx
    >>> x = np.random.default_rng(0).standard_normal((9, 2))
    >>> u, s, vh = np.linalg.svd(dapx.asarray(x, backend=dapx.simulated(3)), full_matrices=False)
    >>> bool(np.allclose(s.gather(), np.linalg.svd(x).S))
    True
    """
    _at_least_2d(a)
    square = a.ndim == 2 and a.shape[0] == a.shape[1]
    if (
        compute_uv
        and not hermitian
        and ts.qualifies_either_way(a)
        and (not full_matrices or square)
    ):
        return type(la.svd(np.eye(1)))(*ts.svd(a))
    if not compute_uv:
        return (
            svdvals(a)
            if not hermitian
            else _one(la.svd, a, 2, "np.linalg.svd", compute_uv=False, hermitian=True)
        )
    u, s, vh = on_whole_core(
        lambda b: tuple(la.svd(b, full_matrices, True, hermitian)),
        [a],
        [2],
        "np.linalg.svd",
        LinAlgError,
    )
    return type(la.svd(np.eye(1)))(u, s, vh)


@implements(la.svdvals)
def svdvals(x, /):
    """`numpy.linalg.svdvals` of each matrix; a single matrix through TSQR."""
    _at_least_2d(x)
    if ts.qualifies_either_way(x):
        return ts.svdvals(x)
    return _one(la.svdvals, x, 2, "np.linalg.svdvals")


@implements(la.eig)
def eig(a):
    """`numpy.linalg.eig` of each matrix."""
    check_square(a, "eig")
    w, v = on_whole_core(lambda b: tuple(la.eig(b)), [a], [2], "np.linalg.eig", LinAlgError)
    return type(la.eig(np.eye(1)))(w, v)


@implements(la.eigh)
def eigh(a, UPLO="L"):
    """`numpy.linalg.eigh` of each matrix; a single one by parallel block Jacobi."""
    check_square(a, "eigh")
    if fz.qualifies(a):  # one matrix: block Jacobi on column blocks (nothing made whole)
        return type(la.eigh(np.eye(1)))(*eigen.eigh(a, UPLO))
    w, v = on_whole_core(lambda b: tuple(la.eigh(b, UPLO)), [a], [2], "np.linalg.eigh", LinAlgError)
    return type(la.eigh(np.eye(1)))(w, v)


@implements(la.eigvals)
def eigvals(a):
    """`numpy.linalg.eigvals` of each matrix."""
    check_square(a, "eigvals")
    return _one(la.eigvals, a, 2, "np.linalg.eigvals")


@implements(la.eigvalsh)
def eigvalsh(a, UPLO="L"):
    """`numpy.linalg.eigvalsh` of each matrix; a single one by parallel block Jacobi."""
    check_square(a, "eigvalsh")
    if fz.qualifies(a):
        return eigen.eigvalsh(a, UPLO)
    return _one(la.eigvalsh, a, 2, "np.linalg.eigvalsh", UPLO)


@implements(la.pinv)
def pinv(a, rcond=None, hermitian=False, *, rtol=np._NoValue):
    """`numpy.linalg.pinv` of each matrix; a single matrix through TSQR (scalar tolerances)."""
    _at_least_2d(a)
    if rcond is not None and rtol is not np._NoValue:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    if rcond is not None:
        cut = rcond
    elif rtol is np._NoValue:
        cut = 1e-15
    elif rtol is None:
        cut = max(a.shape[-2:]) * np.finfo(ts.result_dtype(a.dtype)).eps
    else:
        cut = rtol
    if not hermitian and ts.qualifies_either_way(a) and np.ndim(cut) == 0:
        return ts.pinv(a, cut)
    kwargs = {"hermitian": hermitian}
    if rcond is not None:
        kwargs["rcond"] = rcond
    if rtol is not np._NoValue and rtol is not None and np.ndim(rtol):
        # One tolerance per matrix: laid out with the stack, each rank its own.
        tol = as_distributed_operand(rtol, a)
        tol = np.broadcast_to(tol, a.shape[:-2]).astype(np.result_type(tol.dtype, float))
        (result,) = on_whole_core(
            lambda m, t: la.pinv(m, rtol=t, **kwargs),
            [a, tol],
            [2, 0],
            "np.linalg.pinv",
            LinAlgError,
        )
        return result
    if rtol is not np._NoValue:
        kwargs["rtol"] = rtol
    return _one(la.pinv, a, 2, "np.linalg.pinv", **kwargs)


@implements(la.matrix_rank)
def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """`numpy.linalg.matrix_rank` of each matrix (a vector's rank as NumPy's).

    A single matrix with scalar tolerances goes through TSQR's singular values.
    """
    if A.ndim < 2:
        return (np.any(A != 0)).astype(np.intp)
    if not hermitian and ts.qualifies_either_way(A) and np.ndim(tol) == 0 and np.ndim(rtol) == 0:
        return ts.matrix_rank(A, tol, rtol)
    for name, value in (("tol", tol), ("rtol", rtol)):
        if value is not None and np.ndim(value):
            t = np.broadcast_to(as_distributed_operand(value, A), A.shape[:-2]).astype(float)
            kw = {"tol": None, "rtol": None, "hermitian": hermitian}
            (result,) = on_whole_core(
                lambda m, v, name=name, kw=kw: la.matrix_rank(m, **{**kw, name: v}),
                [A, t],
                [2, 0],
                "np.linalg.matrix_rank",
                LinAlgError,
            )
            return result
    return _one(la.matrix_rank, A, 2, "np.linalg.matrix_rank", tol, hermitian, rtol=rtol)


@implements(la.cond)
def cond(x, p=None):
    """`numpy.linalg.cond` of each matrix; a single matrix through TSQR.

    ``p`` None, 2 or -2: the singular values (any single matrix). Other orders
    (square matrices): ``norm(x, p) * norm(inv(x), p)`` with ``inv(x)^T``
    built row by row from the TSQR (`dapx.functions.tall_skinny.inverse_transpose`);
    both norms are reductions. A matrix whose ``R`` is exactly singular has
    condition number infinity, as NumPy's (which tests LU's pivots instead).
    """
    _at_least_2d(x)
    if not ts.qualifies_either_way(x):
        return _one(la.cond, x, 2, "np.linalg.cond", p)
    real_t = np.dtype(ts.result_dtype(x.dtype).char.lower())
    if p is None or p in (2, -2):
        value = np.asarray(ts.cond_svd(x, p))
    else:
        if x.shape[0] != x.shape[1]:
            raise LinAlgError("Last 2 dimensions of the array must be square")
        transposed = ts.inverse_transpose(x)
        if transposed is None:
            value = np.asarray(np.inf, real_t)
        else:
            swapped = {1: np.inf, -1: -np.inf, np.inf: 1, -np.inf: -1}.get(p, p)
            with np.errstate(all="ignore"):
                product = norm(x, p) * norm(transposed, swapped)
            value = np.asarray(whole(product, "np.linalg.cond"), real_t)
    if np.isnan(value) and not whole(np.any(np.isnan(x)), "np.linalg.cond"):
        value = np.asarray(np.inf, real_t)
    return from_replicated(value.astype(real_t), x.backend)


@implements(la.solve)
def solve(a, b):
    """`numpy.linalg.solve`; ``b`` is a vector only when it is 1-d (NumPy 2)."""
    check_square(a, "solve")
    b = as_distributed_operand(b, a)
    vector = b.ndim == 1
    if fz.qualifies(a) and b.ndim in (1, 2) and b.shape[0] == a.shape[0] and b.size:
        return lu.lu_solve(a, b)  # one system: LU on a 2-D block-cyclic grid, x in b's layout
    if vector:
        if a.ndim != 2:
            b = reshape(b, (1,) * (a.ndim - 2) + b.shape)
            b = np.broadcast_to(b, (*a.shape[:-2], b.shape[-1]))
        (x,) = on_whole_core(
            lambda m, v: la.solve(m, v[..., None])[..., 0],
            [a, b],
            [2, 1],
            "np.linalg.solve",
            LinAlgError,
        )
        return x
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])  # NumPy broadcasts the stacks
    if a.shape[:-2] != batch:
        a = np.broadcast_to(a, (*batch, *a.shape[-2:]))
    if b.shape[:-2] != batch:
        b = np.broadcast_to(b, (*batch, *b.shape[-2:]))
    (x,) = on_whole_core(la.solve, [a, b], [2, 2], "np.linalg.solve", LinAlgError)
    return x


@implements(la.lstsq)
def lstsq(a, b, rcond=None):
    """`numpy.linalg.lstsq` (2-d `a`): ``(x, residuals, rank, s)``, rank a Python int.

    A tall `a` (``m >= n``) goes through the TSQR of ``[a | b]`` and the SVD
    of its ``R`` (`dapx.functions.tall_skinny.lstsq`: nothing is gathered; the
    rank-deficient solution is NumPy's minimum-norm one). A wide `a` and `b`
    are made whole on rank 0 (see `dapx.functions.whole_core.on_rank0`). The
    results (the size of the short side) are on every rank.

    >>> import numpy as np, dapx
    >>> x = np.vander(np.arange(10.0), 2)
    >>> a = dapx.asarray(x, backend=dapx.simulated(2))
    >>> sol, res, rank, s = np.linalg.lstsq(a, 3 * np.arange(10.0) + 1)
    >>> np.round(sol.gather(), 12).tolist(), rank
    ([3.0, 1.0], 2)
    """
    if not isinstance(a, DistributedArray):  # e.g. xarray's polyfit: a NumPy Vandermonde matrix
        a = as_distributed_operand(a, b)  # each rank takes its own part: no communication
    if a.ndim != 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    b = as_distributed_operand(b, a)
    if b.ndim not in (1, 2):
        raise LinAlgError(f"{b.ndim}-dimensional array given. Array must be two-dimensional")
    if b.shape[0] != a.shape[0]:
        raise LinAlgError("Incompatible dimensions")
    if ts.qualifies(a):
        x, residuals, rank, s = ts.lstsq(a, b, rcond)
        backend = a.backend
        return (
            from_replicated(x, backend),
            from_replicated(residuals, backend),
            rank,
            from_replicated(s, backend),
        )
    x, residuals, rank, s = on_rank0(
        lambda m, y: la.lstsq(m, y, rcond=rcond), [a, b], "np.linalg.lstsq", LinAlgError
    )
    backend = a.backend
    return (
        from_replicated(x, backend),
        from_replicated(residuals, backend),
        int(rank),
        from_replicated(s, backend),
    )


@implements(la.tensorinv)
def tensorinv(a, ind=2):
    """`numpy.linalg.tensorinv` through `inv` of the reshaped matrix."""
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    old = a.shape
    rows = int(np.prod(old[:ind]))
    inverse = inv(reshape(a, (rows, -1)))
    return reshape(inverse, old[ind:] + old[:ind])


@implements(la.tensorsolve)
def tensorsolve(a, b, axes=None):
    """`numpy.linalg.tensorsolve` through `solve` of the reshaped system."""
    b = as_distributed_operand(b, a)
    if axes is not None:
        order = list(range(a.ndim))
        for k in axes:
            order.remove(k)
            order.insert(a.ndim, k)
        a = np.transpose(a, order)
    shape = a.shape[-(a.ndim - b.ndim) :]
    n = int(np.prod(shape))
    x = solve(reshape(a, (n, n)), reshape(b, (n,)))
    return reshape(x, shape)


@implements(la.matrix_power)
def matrix_power(a, n):
    """`numpy.linalg.matrix_power` by repeated squaring with dapx's `matmul`."""
    check_square(a, "matrix_power")
    if not isinstance(n, (int, np.integer)):
        raise TypeError("exponent must be an integer")
    if n == 0:
        eye = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)
        return np.copy(as_distributed_operand(eye, a))
    if n < 0:
        a, n = inv(a), -n
    result, power = None, a
    while n:
        if n & 1:
            result = power if result is None else matmul(result, power)
        n >>= 1
        if n:
            power = matmul(power, power)
    return result


# -- norms: reductions, partials in rank order -------------------------------------------------


@implements(la.vector_norm)
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """`numpy.linalg.vector_norm`: a reduction of ``|x|``; nothing is made whole."""
    a = np.abs(x)
    if a.dtype.kind not in "fc":
        a = a.astype(np.result_type(a.dtype, np.float64))
    if ord == np.inf:
        return max_(a, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return min_(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return sum_((a != 0).astype(a.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return sum_(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        return np.sqrt(sum_(a * a, axis=axis, keepdims=keepdims))
    return sum_(a**ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


@implements(la.matrix_norm)
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """`numpy.linalg.matrix_norm` over the last two axes."""
    return norm(x, ord, axis=(-2, -1), keepdims=keepdims)


@implements(la.norm)
def norm(x, ord=None, axis=None, keepdims=False):
    """`numpy.linalg.norm`: reductions, except the 2-norm and nuclear norm of matrices (SVD)."""
    if axis is None:
        if ord is None:
            return vector_norm(x, axis=None, keepdims=keepdims)
        if x.ndim == 1:
            return vector_norm(x, ord=ord, keepdims=keepdims)
        if x.ndim != 2:
            raise ValueError("Improper number of dimensions to norm.")
        axis = (0, 1)
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    axes = tuple(normalize_axis_index(int(k), x.ndim) for k in axes)
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order '{ord}' for vectors")
        return vector_norm(x, axis=axes[0], keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) != 2 or axes[0] == axes[1]:
        raise ValueError("Improper number of dimensions to norm.")
    row, col = axes
    a = np.abs(x)
    if a.dtype.kind not in "fc":
        a = a.astype(np.result_type(a.dtype, np.float64))
    if ord in (None, "fro", "f"):
        result = np.sqrt(sum_(a * a, axis=axes))
    elif ord in (1, -1, np.inf, -np.inf):
        summed_axis, kept_axis = (row, col) if ord in (1, -1) else (col, row)
        sums = sum_(a, axis=summed_axis)
        kept = kept_axis - (kept_axis > summed_axis)
        result = (max_ if ord > 0 else min_)(sums, axis=kept)
    elif ord in (2, -2, "nuc"):
        moved = np.moveaxis(x, axes, (-2, -1))
        s = svdvals(moved)
        result = sum_(s, axis=-1) if ord == "nuc" else (max_ if ord == 2 else min_)(s, axis=-1)
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        for k in sorted(axes):
            result = np.expand_dims(result, k)
    return result
