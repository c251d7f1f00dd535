"""Cholesky and LU on a 2-D block-cyclic grid (`dapx.functions.factorizations`, `.lu`) vs NumPy.

Tolerances come from the condition number: a backward-stable factorization
has ``||A - L L^H|| / ||A|| <= c n eps`` and a forward error of at most
``c n eps cond(A)`` (Higham, *Accuracy and Stability of Numerical
Algorithms*, 10.1 and 9.3), with ``eps`` the result dtype's.
"""

from __future__ import annotations

import numpy as np
import pytest

import dapx
from dapx.functions import factorizations as fz
from dapx.functions import lu
from tests._received import ReceivedSizes

la = np.linalg
DTYPES = (np.float64, np.float32, np.complex128)


def _unitary(n: int, dtype, rng) -> np.ndarray:
    x = rng.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((n, n))
    return la.qr(x)[0]


def spd(n: int, dtype=np.float64, cond: float = 10.0, seed: int = 0) -> np.ndarray:
    """A Hermitian positive-definite matrix with condition number `cond`."""
    rng = np.random.default_rng(seed)
    q = _unitary(n, dtype, rng)
    x = (q * np.logspace(0, -np.log10(cond), n)) @ q.conj().T
    return ((x + x.conj().T) / 2).astype(dtype)


def general(n: int, dtype=np.float64, cond: float = 10.0, seed: int = 0) -> np.ndarray:
    """A non-symmetric matrix with condition number `cond` (pivoting needed)."""
    rng = np.random.default_rng(seed)
    u, v = _unitary(n, dtype, rng), _unitary(n, dtype, rng)
    return ((u * np.logspace(0, -np.log10(cond), n)) @ v.conj().T).astype(dtype)


def eps(dtype) -> float:
    return float(np.finfo(np.dtype(dtype)).eps)


def relative(got: np.ndarray, expected: np.ndarray) -> float:
    return float(la.norm(got - expected) / max(la.norm(expected), np.finfo(float).tiny))


def block_cyclic(x, backend, nb: int, transposed: bool = False):
    """`x` in ScaLAPACK's layout with block size `nb` (on the transposed grid if asked)."""
    grid = dapx.dims_create(backend.nranks, 2)
    grid = grid[::-1] if transposed else grid
    spec = {"dist": "c", "block_size": nb}
    return dapx.asarray(x, backend=backend, dist=(spec, spec), grid=grid)


SIZES = [(1, None), (7, None), (29, 4), (37, 3), (20, 20)]  # (n, nb): n % nb != 0 too


# -- Cholesky -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("n", "nb"), SIZES, ids=str)
def test_cholesky_matches_numpy(backend, dtype, n, nb):
    x = spd(n, dtype, cond=100.0)
    a = dapx.asarray(x, backend=backend)  # default layout: redistributed once
    bound = 20 * n * eps(dtype)
    for upper in (False, True):
        got = fz.cholesky(a, upper=upper, block_size=nb)
        expected = la.cholesky(x, upper=upper)
        g = got.gather()
        assert g.dtype == expected.dtype
        assert np.array_equal(g, np.triu(g) if upper else np.tril(g))
        product = g.conj().T @ g if upper else g @ g.conj().T
        assert relative(product, x) <= bound
        assert relative(g, expected) <= bound * 100  # cond(A) = 100
        layout = fz.factor_layout(a, nb)
        shape = layout.grid_shape[::-1] if upper else layout.grid_shape
        assert got.distribution.grid_shape == shape
        assert got.distribution.dist_types == ("c", "c")
    assert np.array_equal(la.cholesky(a).gather(), fz.cholesky(a).gather())  # the dispatch


@pytest.mark.parametrize("cond", [1e6, 1e12])
def test_cholesky_of_ill_conditioned_matrices(backend, cond):
    n = 40
    x = spd(n, np.float64, cond=cond, seed=3)
    for a in (block_cyclic(x, backend, 4), block_cyclic(x, backend, 6, transposed=True)):
        nb = a.distribution.maps[0].block_size
        chol = fz.cholesky(a, block_size=nb)
        assert chol.distribution == a.distribution  # either grid orientation, kept
        g = chol.gather()
        assert relative(g @ g.T, x) <= 20 * n * eps(np.float64)
        # L's forward error grows at most like sqrt(cond) times the backward error.
        assert relative(g, la.cholesky(x)) <= 20 * n * eps(np.float64) * np.sqrt(cond)


def test_cholesky_reads_numpys_triangle(backend):
    x = spd(9, seed=4)
    lower, upper = np.tril(x), np.triu(x)  # the other triangle is garbage
    assert np.allclose(la.cholesky(block_cyclic(lower, backend, 2)).gather(), la.cholesky(x))
    u = la.cholesky(block_cyclic(upper + 5 * np.tril(x, -1), backend, 2), upper=True)
    assert np.allclose(u.gather(), la.cholesky(x, upper=True))


@pytest.mark.parametrize("n", [1, 6, 33])
def test_not_positive_definite_raises_on_every_rank(backend, n):
    x = spd(n, seed=5)
    x[n // 2, n // 2] = -1.0  # a non-positive pivot at step n // 2 (or earlier)
    with pytest.raises(la.LinAlgError, match="Matrix is not positive definite"):
        la.cholesky(x)  # NumPy's message ...
    with pytest.raises(la.LinAlgError, match="Matrix is not positive definite"):
        la.cholesky(block_cyclic(x, backend, 4))  # ... on every rank (else a hang)


# -- LU: solve, inv, det, slogdet ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("n", "nb"), SIZES, ids=str)
def test_solve_matches_numpy(backend, dtype, n, nb):
    cond = 100.0
    x = general(n, dtype, cond=cond, seed=1)
    a = dapx.asarray(x, backend=backend)
    rng = np.random.default_rng(2)
    rhs = rng.standard_normal((n, 3)).astype(dtype)
    bound = 20 * n * eps(dtype) * cond
    for b in (rhs, rhs[:, 0]):  # a matrix and a vector right-hand side
        expected = la.solve(x, b)
        db = dapx.asarray(b, backend=backend)
        got = lu.lu_solve(a, db, block_size=nb)
        assert got.distribution == db.distribution  # x comes in b's layout
        g = got.gather()
        assert g.dtype == expected.dtype and g.shape == expected.shape
        assert relative(g, expected) <= bound
        assert relative(x @ g, b) <= bound
        assert relative(la.solve(a, b).gather(), expected) <= bound  # dispatch, NumPy's b
        assert relative(la.solve(a, db).gather(), expected) <= bound


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("n", "nb"), SIZES, ids=str)
def test_inv_det_slogdet_match_numpy(backend, dtype, n, nb):
    cond = 50.0
    x = general(n, dtype, cond=cond, seed=6) * 3  # |det| far from 1
    a = dapx.asarray(x, backend=backend)
    inverse = lu.inv(a, block_size=nb)
    assert inverse.distribution == fz.factor_layout(a, nb)
    got, expected = inverse.gather(), la.inv(x)
    assert got.dtype == expected.dtype
    assert relative(got, expected) <= 20 * n * eps(dtype) * cond
    assert relative(la.inv(a).gather(), expected) <= 20 * n * eps(dtype) * cond
    sign, logdet = lu.slogdet(a, block_size=nb)
    ref = la.slogdet(x)
    assert sign.gather().dtype == ref.sign.dtype and logdet.gather().dtype == ref.logabsdet.dtype
    assert abs(sign.gather() - ref.sign) <= 20 * n * eps(dtype)
    assert abs(logdet.gather() - ref.logabsdet) <= 20 * n * eps(dtype) * max(1, abs(ref.logabsdet))
    s, lg = la.slogdet(a)
    assert abs(s.gather() - ref.sign) <= 20 * n * eps(dtype)
    assert abs(lg.gather() - ref.logabsdet) <= 20 * n * eps(dtype) * max(1, abs(ref.logabsdet))
    d = lu.det(a, block_size=nb).gather()
    assert d.dtype == la.det(x).dtype
    assert abs(d - la.det(x)) <= 20 * n * eps(dtype) * abs(la.det(x)) * max(1, abs(ref.logabsdet))
    assert abs(la.det(a).gather() - la.det(x)) <= 1e3 * n * eps(dtype) * abs(la.det(x))


@pytest.mark.parametrize("n", [5, 13, 26])
def test_det_sign_of_permutations_and_scalings(backend, n):
    rng = np.random.default_rng(n)
    for _ in range(3):
        perm = rng.permutation(n)
        x = np.eye(n)[perm] * rng.choice([-2.0, 0.5, 3.0], n)
        a = block_cyclic(x, backend, 3)
        expected = la.slogdet(x)
        sign, logdet = la.slogdet(a)
        assert sign.gather() == expected.sign  # a permutation's sign exactly
        assert np.isclose(logdet.gather(), expected.logabsdet, rtol=1e-13)
        assert np.isclose(la.det(a).gather(), la.det(x), rtol=1e-13)
    z = np.eye(n) * np.exp(1j * rng.uniform(0, 2 * np.pi, n))  # complex phases
    sign, _ = la.slogdet(block_cyclic(z[::-1], backend, 2))
    assert np.isclose(sign.gather(), la.slogdet(z[::-1]).sign, rtol=1e-13)


@pytest.mark.parametrize("transposed", [False, True], ids=["pr>=pc", "pr<=pc"])
def test_ill_conditioned_solve(backend, transposed):
    n, cond = 48, 1e10
    x = general(n, np.float64, cond=cond, seed=7)
    b = np.random.default_rng(8).standard_normal(n)
    a = block_cyclic(x, backend, 5, transposed)
    assert fz.factor_layout(a, 5) == a.distribution  # this grid, as it is
    got = lu.lu_solve(a, dapx.asarray(b, backend=backend), block_size=5).gather()
    assert relative(x @ got, b) <= 20 * n * eps(np.float64) * cond  # residual, normwise
    assert relative(got, la.solve(x, b)) <= 20 * n * eps(np.float64) * cond
    inverse = lu.inv(a, block_size=5)
    assert inverse.distribution == a.distribution
    assert relative(inverse.gather(), la.inv(x)) <= 20 * n * eps(np.float64) * cond
    assert relative(la.solve(a, b).gather(), la.solve(x, b)) <= 20 * n * eps(np.float64) * cond


@pytest.mark.parametrize("n", [4, 17])
def test_singular_matrices_raise_on_every_rank(backend, n):
    x = general(n, seed=9)
    x[:, n // 2] = 0.0  # an exactly zero pivot column
    a = block_cyclic(x, backend, 3)
    for f in (lambda m: la.solve(m, np.ones(n)), la.inv):
        with pytest.raises(la.LinAlgError, match="Singular matrix"):
            f(x)
        with pytest.raises(la.LinAlgError, match="Singular matrix"):
            f(a)
    assert la.det(a).gather() == la.det(x) == 0.0  # NumPy: no error, a zero determinant
    sign, logdet = la.slogdet(a)
    assert (sign.gather(), logdet.gather()) == tuple(la.slogdet(x))


# -- layouts, determinism, memory ---------------------------------------------------------------


def test_layout_is_kept_or_chosen(backend):
    p = backend.nranks
    big, small = dapx.dims_create(p, 2)
    a = block_cyclic(spd(30), backend, 16, transposed=True)  # kept: ScaLAPACK's, either way
    assert fz.factor_layout(a) == a.distribution
    small_blocks = block_cyclic(spd(30), backend, 2)  # too many steps: redistributed
    assert fz.factor_layout(small_blocks).maps[0].block_size != 2
    d = fz.factor_layout(dapx.asarray(spd(30), backend=backend))
    assert d.grid_shape == (big, small) and d.dist_types == ("c", "c")
    assert d.maps[0].block_size == min(fz.NB, -(-30 // (2 * big)))
    assert la.cholesky(a).distribution == a.distribution


def test_same_bits_as_the_simulated_backend(backend):
    # Under mpiexec this compares dapx.mpi() with a simulated backend of the same size.
    sim = dapx.simulated(backend.nranks)
    x, y = spd(27, np.complex128, seed=10), general(27, seed=11)
    b = np.arange(54.0).reshape(27, 2)
    for be in (backend, sim):
        be_results = [
            la.cholesky(block_cyclic(x, be, 4)).gather(),
            la.solve(block_cyclic(y, be, 4), b).gather(),
            la.inv(block_cyclic(y, be, 4)).gather(),
            la.slogdet(block_cyclic(y, be, 4)).logabsdet.gather(),
        ]
        if be is backend:
            first = be_results
    for got, expected in zip(first, be_results):
        assert np.array_equal(got, expected)


def test_memory_bound_one_panel(backend, monkeypatch):
    n, nb = 60, 4
    x, b = general(n, seed=12), np.ones((n, 2))
    rows = dapx.asarray(x, backend=backend)  # row blocks: the first call redistributes
    d = fz.factor_layout(rows, nb)
    block = max(int(np.prod(d.local_shape(r))) for r in range(backend.nranks))
    panel = (n + 1) * nb  # n x nb and a row of pivots; LU swaps <= 2 nb rows of its columns
    swaps = 2 * nb * max(d.maps[1].local_length(j) + nb for j in range(d.grid_shape[1]))
    a, s = block_cyclic(x, backend, nb), block_cyclic(spd(n), backend, nb)  # in place already
    rec = ReceivedSizes(backend, monkeypatch)
    fz.cholesky(s, block_size=nb)
    assert 0 < rec.largest <= panel or backend.nranks == 1
    lu.lu_solve(a, dapx.asarray(b, backend=backend), block_size=nb)  # b: n x 2 moves once
    lu.slogdet(a, block_size=nb)
    assert rec.largest <= max(panel, swaps)
    assert max(panel, swaps) < n * n // 4  # the bound is far from the whole matrix
    fz.cholesky(dapx.asarray(spd(n), backend=backend), block_size=nb)
    lu.inv(rows, block_size=nb)
    assert rec.largest <= max(panel, swaps, block)  # plus the initial redistribution


def test_stacks_and_empty_matrices_keep_the_whole_path(backend):
    x = np.stack([spd(4, seed=s) for s in range(3)])
    a = dapx.asarray(x, backend=backend)
    assert np.allclose(la.cholesky(a).gather(), la.cholesky(x))
    assert np.allclose(la.inv(a).gather(), la.inv(x))
    empty = dapx.asarray(np.zeros((0, 0)), backend=backend)
    assert la.cholesky(empty).shape == (0, 0) and la.det(empty).gather() == 1.0
