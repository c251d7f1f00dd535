"""`numpy.linalg` on DistributedArrays, against NumPy, on every common layout.

Stacks of matrices keep their batch axes distributed (each matrix whole on
one rank); a single matrix is made whole on one process, which the suite's
gather threshold of 0 turns into an expected `dapx.GatherWarning`, except
where tall-skinny QR applies (`tall_skinny`: qr/svd/svdvals/lstsq/pinv/
matrix_rank/cond and the singular-value norms of one matrix; see
tests/test_tall_skinny.py), which gathers nothing.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import dapx
from dapx.testing import assert_eq, layout

LAYOUTS = ("b", "b-irregular", "c", "c2", "u")
la = np.linalg


@pytest.fixture(params=LAYOUTS)
def kind(request):
    return request.param


def matrices(shape, dtype=np.float64, seed=0, spd=False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    x = x.astype(dtype)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        x = x + shape[-1] * np.eye(shape[-1], dtype=dtype)  # well conditioned
        if spd:
            x = x @ np.conjugate(np.swapaxes(x, -1, -2))
    return x


def dist(x, kind, backend, seed=0):
    return dapx.asarray(x, backend=backend, **layout(kind, x.shape, backend.nranks, seed=seed))


def whole(x):
    """The warning a single matrix made whole on one process gives (threshold 0 in the suite)."""
    return (
        pytest.warns(dapx.GatherWarning, match="whole on one")
        if x.ndim == 2
        else (contextlib.nullcontext())
    )


def factorized(x):
    """No warning for a single square matrix factorized on a block-cyclic grid (nor a stack).

    `cholesky`, `solve`, `inv`, `det`, `slogdet` (tests/test_factorizations.py); the
    suite's warnings-as-errors makes any GatherWarning fail.
    """
    return contextlib.nullcontext()


def tall_skinny(x, tall=True):
    """No warning where a single matrix goes through TSQR (`tall` says whether it does)."""
    return contextlib.nullcontext() if x.ndim == 2 and tall else whole(x)


SQUARE = [(4, 4), (5, 3, 3), (2, 3, 4, 4), (0, 3, 3)]
RTOL = 1e-9


@pytest.mark.parametrize("shape", SQUARE, ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_square_matrix_functions(backend, kind, shape, dtype):
    x = matrices(shape, dtype)
    a = dist(x, kind, backend)
    for f in (la.inv, la.det, la.eigvals, la.matrix_rank, la.cond, la.pinv):
        # A single square matrix is tall: rank, cond and pinv go through TSQR; inv and det
        # through LU on a block-cyclic grid.
        if f in (la.matrix_rank, la.cond, la.pinv):
            expect = tall_skinny(a)
        else:
            expect = factorized(a) if f in (la.inv, la.det) else whole(a)
        with expect:
            got = f(a)
        assert_eq(got, f(x), rtol=RTOL, atol=1e-12, check_dtype=f is not la.eigvals)
    with factorized(a):
        sign, logdet = la.slogdet(a)
    assert_eq(sign, la.slogdet(x).sign, rtol=RTOL)
    assert_eq(logdet, la.slogdet(x).logabsdet, rtol=RTOL)
    spd = matrices(shape, dtype, spd=True)
    s = dist(spd, kind, backend)
    for upper in (False, True):
        with factorized(s):
            assert_eq(la.cholesky(s, upper=upper), la.cholesky(spd, upper=upper), rtol=RTOL)
    with factorized(s):  # a single matrix: Householder or block Jacobi (tests/test_eigen.py)
        w, v = la.eigh(s)
    assert_eq(w, la.eigh(spd).eigenvalues, rtol=RTOL)
    with factorized(s):
        assert_eq(la.eigvalsh(s, "U"), la.eigvalsh(spd, "U"), rtol=RTOL)
    # Eigenvectors are unique up to a phase: check the decomposition instead.
    assert_eq(np.matmul(s, v), np.matmul(spd, v.gather()), rtol=1e-8)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 5, 3)], ids=str)
def test_qr_and_svd(backend, kind, shape):
    x = matrices(shape)
    a = dist(x, kind, backend)
    tall = shape[-2] >= shape[-1]
    for mode in ("reduced", "complete"):
        # TSQR: a tall matrix's reduced QR; the complete one needs an m x m Q (made whole).
        with tall_skinny(a, tall and mode == "reduced"):
            q, r = la.qr(a, mode)
        assert_eq(np.matmul(q, r), x, rtol=1e-9, atol=1e-12)
        assert_eq(r, np.triu(r.gather()))
    with tall_skinny(a, tall):
        assert_eq(np.abs(la.qr(a, "r")), np.abs(la.qr(x, "r")), rtol=1e-9, atol=1e-12)
    with tall_skinny(a):  # wide ones too, through the adjoint
        u, s, vh = la.svd(a, full_matrices=False)
    assert_eq(s, la.svd(x).S, rtol=RTOL)
    product = np.matmul(u.gather() * s.gather()[..., None, :], vh.gather())
    np.testing.assert_allclose(product, x, atol=1e-10)
    with tall_skinny(a):
        assert_eq(la.svdvals(a), la.svdvals(x), rtol=RTOL)
    with tall_skinny(a):
        assert_eq(la.svd(a, compute_uv=False), la.svd(x, compute_uv=False), rtol=RTOL)


@pytest.mark.parametrize("shape", [(4, 4), (3, 4, 4)], ids=str)
def test_solve(backend, kind, shape):
    x = matrices(shape)
    a = dist(x, kind, backend)
    rhs = matrices((*shape[:-1], 2), seed=1)
    with factorized(a):
        assert_eq(la.solve(a, dist(rhs, kind, backend)), la.solve(x, rhs), rtol=1e-9)
    with factorized(a):
        assert_eq(la.solve(a, rhs), la.solve(x, rhs), rtol=1e-9)  # a NumPy right-hand side
    vector = matrices((shape[-1],), seed=2)
    with factorized(a):
        assert_eq(la.solve(a, dist(vector, kind, backend)), la.solve(x, vector), rtol=1e-9)


def test_singular_matrix_raises_linalg_error_on_every_rank(backend):
    x = np.zeros((3, 4, 4))
    x[:] = np.eye(4)
    x[1, 2] = 0.0  # one singular matrix in the stack
    a = dapx.asarray(x, backend=backend)
    with pytest.raises((la.LinAlgError, dapx.RankError), match=r"[Ss]ingular"):
        la.inv(a)
    with pytest.raises(la.LinAlgError, match="square"):
        la.inv(dapx.asarray(np.ones((2, 3)), backend=backend))


def test_lstsq_and_tensor_solvers(backend, kind):
    x, y = matrices((7, 3)), matrices((7, 2), seed=1)
    a = dist(x, kind, backend)
    sol, residuals, rank, s = la.lstsq(a, dist(y, kind, backend))  # tall: TSQR, no gather
    ref = la.lstsq(x, y)
    assert_eq(sol, ref[0], rtol=1e-9)
    assert_eq(residuals, ref[1], rtol=1e-9)
    assert rank == ref[2]
    assert_eq(s, ref[3], rtol=1e-9)
    t = matrices((2, 3, 6))
    # Through inv and solve of one reshaped matrix: LU on a block-cyclic grid, no gather.
    assert_eq(la.tensorinv(dist(t, kind, backend), ind=2), la.tensorinv(t, ind=2), rtol=1e-9)
    b = matrices((2, 3), seed=3)
    got = la.tensorsolve(dist(t, kind, backend), dist(b, kind, backend))
    assert_eq(got, la.tensorsolve(t, b), rtol=1e-9)


@pytest.mark.parametrize("shape", [(6,), (4, 5), (3, 4, 5)], ids=str)
def test_norms(backend, kind, shape):
    x = matrices(shape, np.complex128)
    a = dist(x, kind, backend)
    for ord in (None, 1, 2, np.inf, -np.inf, 0, 3, -1):
        if len(shape) == 1 or ord in (None,):
            assert_eq(la.norm(a, ord), la.norm(x, ord), rtol=1e-10)
        assert_eq(
            la.vector_norm(a, ord=ord if ord is not None else 2),
            la.vector_norm(x, ord=ord if ord is not None else 2),
            rtol=1e-10,
        )
        assert_eq(
            la.vector_norm(a, axis=-1, keepdims=True, ord=2),
            la.vector_norm(x, axis=-1, keepdims=True, ord=2),
            rtol=1e-10,
        )
    if len(shape) >= 2:
        for ord in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
            # The singular values of a single matrix come from TSQR: nothing is gathered.
            with tall_skinny(a):
                assert_eq(la.matrix_norm(a, ord=ord), la.matrix_norm(x, ord=ord), rtol=1e-10)
            with tall_skinny(a):
                assert_eq(
                    la.norm(a, ord, axis=(-1, -2), keepdims=True),
                    la.norm(x, ord, axis=(-1, -2), keepdims=True),
                    rtol=1e-10,
                )
    with pytest.raises(ValueError, match="Invalid norm order"):
        la.norm(a, "fro", axis=0)


def test_products_transposes_diagonals(backend, kind):
    x, y = matrices((3, 4, 5)), matrices((3, 5, 2), seed=1)
    a, b = dist(x, kind, backend), dist(y, kind, backend)
    assert_eq(la.matmul(a, b), la.matmul(x, y), rtol=1e-12)
    assert_eq(la.matrix_transpose(a), la.matrix_transpose(x))
    assert_eq(la.trace(a, offset=1), la.trace(x, offset=1), rtol=1e-12)
    assert_eq(la.diagonal(a, offset=-1), la.diagonal(x, offset=-1))
    v, w = matrices((5,)), matrices((4,), seed=2)
    assert_eq(la.outer(dist(v, kind, backend), dist(w, kind, backend)), la.outer(v, w))
    assert_eq(la.vecdot(a, a), la.vecdot(x, x), rtol=1e-12)
    m = matrices((5, 2), seed=4)
    assert_eq(
        la.tensordot(a, dist(m, kind, backend), axes=1), la.tensordot(x, m, axes=1), rtol=1e-12
    )
    c, d = matrices((4, 3)), matrices((4, 3), seed=5)
    assert_eq(la.cross(dist(c, kind, backend), dist(d, kind, backend)), la.cross(c, d), rtol=1e-12)
    assert_eq(np.cross(dist(c, kind, backend), d, axisa=-1, axisb=1), np.cross(c, d), rtol=1e-12)
    chain = [
        matrices((6, 3)),
        matrices((3, 7), seed=1),
        matrices((7, 2), seed=2),
        matrices((2,), seed=3),
    ]
    got = la.multi_dot([dist(m, kind, backend) for m in chain])
    assert_eq(got, la.multi_dot(chain), rtol=1e-10)
    sq = matrices((2, 4, 4))
    s = dist(sq, kind, backend)
    for n in (0, 1, 3, -2):
        assert_eq(la.matrix_power(s, n), la.matrix_power(sq, n), rtol=1e-9, atol=1e-12)
