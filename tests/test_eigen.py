"""`eigh` and `eigvalsh` of one distributed matrix (`dapx.functions.eigen`, `.tridiagonal`).

Both methods, Householder tridiagonalization with inverse iteration and
parallel block Jacobi, face the same checks.

Tolerances follow the perturbation theory of Hermitian matrices (Golub and
Van Loan 8.1; Parlett, *The Symmetric Eigenvalue Problem*, 11): a backward
stable method has eigenvalue errors of ``c n eps ||A||_2`` (Weyl) and
residuals ``||A V - V diag(w)||`` of the same size, and the invariant
subspace of a group of eigenvalues separated from the others by ``gap``
moves by ``c n eps ||A||_2 / gap`` (Davis-Kahan). So eigenvectors are
compared with NumPy's through the orthogonal projectors of their groups
(unique, unlike the vectors: signs, phases, bases of repeated eigenvalues),
and ``eps`` is the result dtype's where the results are cast to it.
"""

from __future__ import annotations

import numpy as np
import pytest

import dapx
from dapx.functions import eigen, tridiagonal
from dapx.testing import layout
from tests._received import ReceivedSizes

la = np.linalg
DTYPES = (np.float64, np.float32, np.complex128)
EPS = float(np.finfo(np.float64).eps)
METHODS = ("tridiagonal", "jacobi")
method = pytest.mark.parametrize("method", METHODS)


def hermitian(n: int, dtype=np.float64, values=None, seed: int = 0) -> np.ndarray:
    """A Hermitian matrix with eigenvalues `values` (default: standard normal ones)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((n, n))
    q = la.qr(x)[0]
    values = rng.standard_normal(n) if values is None else np.asarray(values, float)
    h = (q * values) @ q.conj().T
    return ((h + h.conj().T) / 2).astype(dtype)


def bound(a: np.ndarray, dtype) -> float:
    """``c n eps ||A||_2`` in double precision, plus the rounding of a cast to `dtype`."""
    n, norm = a.shape[0], float(la.norm(a.astype(np.complex128), 2))
    cast = max(float(np.finfo(np.dtype(dtype)).eps) - EPS, 0.0)  # single precision results
    return (8 * max(n, 4) * EPS + 4 * np.sqrt(n) * cast) * norm + np.finfo(float).tiny


def read(x: np.ndarray, uplo: str = "L") -> np.ndarray:
    """The Hermitian matrix LAPACK reads from the triangle `uplo` (the diagonal's real part)."""
    tri = np.tril(x, -1) if uplo == "L" else np.triu(x, 1)
    return tri + tri.conj().T + np.diag(x.diagonal().real)


def check(x: np.ndarray, w, v, uplo: str = "L", dtype=None) -> None:
    """Eigenvalues, residual, orthogonality and eigenspaces of `x` (read by `uplo`) vs NumPy."""
    dtype = np.dtype(dtype or x.dtype)
    expected_w, expected_v = la.eigh(x, uplo)
    got_w = w.gather()
    assert got_w.dtype == expected_w.dtype and got_w.shape == expected_w.shape
    a = read(x, uplo).astype(np.complex128)
    tol = bound(a, dtype)
    assert np.all(np.diff(got_w) >= 0)
    assert np.abs(got_w - expected_w).max() <= tol
    if v is None:
        return
    got_v = v.gather()
    assert got_v.dtype == expected_v.dtype
    g = got_v.astype(np.complex128)
    n = len(got_w)
    assert la.norm(a @ g - g * got_w, 2) <= 2 * tol
    assert la.norm(g.conj().T @ g - np.eye(n), 2) <= 8 * n * float(np.finfo(dtype).eps)
    # Eigenspaces: groups of eigenvalues closer than a relative 1e-6; each group's projector.
    scale = max(float(la.norm(a, 2)), 1e-300)
    cuts = np.flatnonzero(np.diff(expected_w) > 1e-6 * scale) + 1
    for group in np.split(np.arange(n), cuts):
        others = np.setdiff1d(np.arange(n), group)
        gap = (
            np.abs(expected_w[others][:, None] - expected_w[group][None, :]).min()
            if len(others)
            else scale
        )
        p_got = g[:, group] @ g[:, group].conj().T
        p_exp = expected_v[:, group] @ expected_v[:, group].conj().T
        assert la.norm(p_got - p_exp, 2) <= 4 * tol / gap + 1e-12


def dist(x, backend, kind="b"):
    return dapx.asarray(x, backend=backend, **layout(kind, x.shape, backend.nranks))


# -- against NumPy ------------------------------------------------------------------------------


@method
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("n", "nb"), [(1, None), (2, None), (7, None), (29, 4), (37, 3), (20, 20)])
def test_eigh_matches_numpy(backend, dtype, n, nb, method):
    x = hermitian(n, dtype, seed=n)
    a = dist(x, backend)
    w, v = eigen.eigh(a, block_size=nb, method=method)
    check(x, w, v)
    check(x, eigen.eigvalsh(a, block_size=nb, method=method), None)
    assert v.distribution == a.distribution  # the eigenvectors keep the input's layout


@method
@pytest.mark.parametrize("kind", ["b-irregular", "c", "c2", "u"])
def test_every_layout(backend, kind, method):
    x = hermitian(23, np.complex128, seed=3)
    a = dist(x, backend, kind)
    w, v = eigen.eigh(a, block_size=3, method=method)
    check(x, w, v)
    assert v.distribution == a.distribution


@method
@pytest.mark.parametrize("uplo", ["L", "U", "l", "u"])
def test_only_the_triangle_uplo_names_is_read(backend, uplo, method):
    x = hermitian(19, np.complex128, seed=5)
    x[np.diag_indices(19)] += 1j  # LAPACK ignores the diagonal's imaginary parts
    garbage = np.triu(np.full((19, 19), np.nan), 1)
    x = x + (garbage if uplo.upper() == "L" else garbage.T)  # NaN in the triangle not read
    a = dist(x, backend)
    w, v = eigen.eigh(a, uplo, block_size=3, method=method)
    check(x, w, v, uplo.upper())
    check(x, eigen.eigvalsh(a, uplo, block_size=3, method=method), None, uplo.upper())


SPECTRA = {
    "identity": np.ones(30),
    "zero": np.zeros(30),
    "repeated": np.repeat([-2.0, 0.0, 1.0, 3.0], [9, 6, 10, 5]),
    "cluster": np.r_[np.ones(15), -1 + 1e-8 * np.arange(15)],
    "indefinite": np.linspace(-5, 5, 30),
    "ill-conditioned": np.logspace(0, -14, 30),
    "graded": np.logspace(10, -10, 30) * np.tile([1, -1], 15),
    "rank-one": np.r_[-7.0, np.zeros(29)],
}


@method
@pytest.mark.parametrize("spectrum", SPECTRA, ids=str)
def test_hard_spectra(backend, spectrum, method):
    x = hermitian(30, values=SPECTRA[spectrum], seed=11)
    if spectrum == "identity":
        x = np.eye(30)
    w, v = eigen.eigh(dist(x, backend, "c"), block_size=4, method=method)
    check(x, w, v)


def test_numpy_dispatch_and_array_api(backend):
    x = hermitian(12, seed=2)
    a = dist(x, backend)
    result = la.eigh(a)  # warnings are errors: no GatherWarning, nothing made whole
    assert type(result) is type(la.eigh(x))
    check(x, result.eigenvalues, result.eigenvectors)
    check(x, la.eigvalsh(a, UPLO="U"), None, "U")
    xp = a.__array_namespace__()
    check(x, *xp.linalg.eigh(a))
    check(x, xp.linalg.eigvalsh(a), None)


def test_integers_and_single_precision_complex():
    backend = dapx.simulated(3)
    x = np.array([[2, -1, 0], [-1, 2, -1], [0, -1, 2]])
    check(x.astype(float), *eigen.eigh(dist(x, backend)), dtype=np.float64)
    z = hermitian(9, np.complex64, seed=1)
    w, v = eigen.eigh(dist(z, backend), block_size=2)
    assert w.dtype == np.float32 and v.dtype == np.complex64
    check(z, w, v)


def test_stacks_and_empty_matrices_keep_the_whole_path(backend):
    x = np.stack([hermitian(4, seed=s) for s in range(3)])
    a = dist(x, backend)
    w, v = la.eigh(a)  # each matrix whole on one rank: no warning for a stack
    np.testing.assert_allclose(w.gather(), la.eigh(x).eigenvalues, atol=1e-12)
    residual = x @ v.gather() - v.gather() * w.gather()[:, None, :]
    assert np.abs(residual).max() < 1e-12
    empty = dapx.asarray(np.zeros((0, 0)), backend=backend)
    assert la.eigh(empty).eigenvalues.shape == (0,)


def test_errors_and_non_finite_input(backend, monkeypatch):
    x = hermitian(10, seed=4)
    a = dist(x, backend)
    with pytest.raises(ValueError, match="UPLO"):
        eigen.eigh(a, "X")
    with pytest.raises(ValueError, match="block_size"):
        eigen.eigh(a, block_size=0)
    with pytest.raises(ValueError, match="method must be one of"):
        eigen.eigvalsh(a, method="qr")
    with pytest.raises(TypeError, match="float16"):
        eigen.eigh(dist(x.astype(np.float16), backend))
    bad = x.copy()
    bad[5, 2] = np.inf
    for name in METHODS:
        w, v = eigen.eigh(dist(bad, backend), block_size=2, method=name)
        assert np.isnan(w.gather()).all() and np.isnan(v.gather()).all()
        w, v = eigen.eigh(dist(bad, backend), "U", block_size=2, method=name)  # not read
        check(bad, w, v, "U")
    monkeypatch.setattr(eigen, "MAX_SWEEPS", 1)
    with pytest.raises(la.LinAlgError, match="did not converge"):
        eigen.eigh(a, block_size=2, method="jacobi")


@method
def test_extreme_scales(backend, method):
    x = hermitian(16, seed=6)
    for factor in (1e300, 1e-300):
        y = x * factor
        w, v = eigen.eigh(dist(y, backend), block_size=3, method=method)
        assert np.abs(w.gather() / factor - la.eigvalsh(x)).max() <= bound(x, np.float64)
        assert np.isfinite(w.gather()).all() and (w.gather() != 0).all()
        assert np.abs(np.abs(v.gather().T @ la.eigh(x).eigenvectors).max(axis=1) - 1).max() < 1e-9


@method
def test_same_bits_every_time_and_on_every_layout(backend, method):
    x = hermitian(25, seed=8)
    w1, v1 = eigen.eigh(dist(x, backend, "b"), block_size=3, method=method)
    w2, v2 = eigen.eigh(dist(x, backend, "c"), block_size=3, method=method)
    assert np.array_equal(w1.gather(), w2.gather())
    assert np.array_equal(v1.gather(), v2.gather())


# -- the schedule and the memory bound ----------------------------------------------------------


@pytest.mark.parametrize(("n", "nranks", "nb"), [(10, 1, 2), (10, 2, 2), (30, 3, 2), (5, 6, None)])
def test_round_robin_meets_every_pair_once_per_sweep(n, nranks, nb):
    t = eigen.Tournament(n, nranks, nb)
    start = (t.top.copy(), t.bot.copy())
    met = []
    for _ in range(2 * t.m - 1):
        met += [frozenset(p) for r in range(nranks) for p in t.pairs(r)]
        moves = t.advance()
        for direction in (1, -1):  # each rank sends and receives one block at most, each way
            these = [(s, d) for _, s, d in moves if (d - s) * direction > 0]
            assert all(abs(d - s) == 1 for s, d in these)
            assert len({s for s, _ in these}) == len(these) == len({d for _, d in these})
    assert len(met) == len(set(met)) == t.m * (2 * t.m - 1)
    assert np.array_equal(t.top, start[0]) and np.array_equal(t.bot, start[1])
    assert t.widths.sum() == n and t.widths.max() <= (nb or n)


def test_jacobi_memory_bound_one_block_per_exchange(backend, monkeypatch):
    """A tournament step receives one block of V and W (2 n nb); the moves at the ends a share."""
    n, nb = 60, 4
    x = hermitian(n, seed=9)
    cols = eigen.Tournament(n, backend.nranks, nb).column_bounds()
    spec = {"dist": "b", "bounds": cols.tolist()}
    a = dapx.asarray(x, backend=backend, dist=("n", spec), grid=(1, backend.nranks))
    share = n * int(np.diff(cols).max())  # the most columns a rank holds, with all rows
    rec = ReceivedSizes(backend, monkeypatch)
    w, v = eigen.eigh(a, block_size=nb, method="jacobi")
    largest, rec.largest = rec.largest, 0
    assert largest <= max(2 * n * nb, share, n) or backend.nranks == 1
    assert 2 * n * nb < n * n // 4  # the bound is far from the whole matrix
    if backend.nranks > 1:  # every tournament step: one block of V and W, nothing more
        assert 0 < rec.sparse_step <= 2 * n * nb < share
        assert rec.sparse_calls >= 2 * (2 * n // (2 * nb) - 1)
    w2, v2 = eigen.eigh(dist(x, backend), block_size=nb, method="jacobi")  # rows: moves a share
    rows = n * -(-n // backend.nranks)
    assert rec.largest <= max(2 * n * nb, share, rows, n) or backend.nranks == 1
    check(x, w, v)
    check(x, w2, v2)


def test_tridiagonal_memory_bound_a_panel_per_broadcast(backend, monkeypatch):
    """The reduction receives ``n + 3`` elements per collective; the back-transformation a panel."""
    n, nb, nranks = 60, 4, backend.nranks
    x = hermitian(n, seed=9)
    spec = {"dist": "c", "block_size": nb}  # the reduction's own layout: nothing moves first
    a = dapx.asarray(x, backend=backend, dist=("n", spec), grid=(1, nranks))
    rec = ReceivedSizes(backend, monkeypatch)
    w, v = eigen.eigh(a, block_size=nb, method="tridiagonal")
    held = max(len(a.distribution.maps[1].global_indices(r)) for r in range(nranks))
    share = n * held  # the transposed triangle, the eigenvectors' final move
    assert rec.largest_bcast <= (n + nb) * nb < n * n // 4
    assert rec.largest <= max((n + nb) * nb, n + nranks * nb, share)
    check(x, w, v)
    rec.largest = 0
    check(x, eigen.eigvalsh(a, block_size=nb, method="tridiagonal"), None)
    assert rec.largest <= max(n + nranks * nb, share)  # no panels: no vectors to transform


def _bits(result):
    return [r.gather().tobytes() for r in (result if isinstance(result, tuple) else (result,))]


def test_auto_is_the_tridiagonal_method_unless_scipy_is_missing(backend, monkeypatch):
    x = hermitian(24, np.complex128, seed=12)
    a = dist(x, backend)
    auto = _bits(eigen.eigh(a, block_size=3))
    assert auto == _bits(eigen.eigh(a, block_size=3, method="tridiagonal"))
    assert _bits(eigen.eigvalsh(a)) == _bits(eigen.eigvalsh(a, method="tridiagonal")) or (
        backend.nranks == 1  # one rank, no block size: LAPACK's own eigh
    )
    monkeypatch.setattr(tridiagonal, "scipy_lapack", lambda: None)
    assert _bits(eigen.eigh(a, block_size=3)) == _bits(eigen.eigh(a, block_size=3, method="jacobi"))
    with pytest.raises(ImportError, match="pip install scipy"):
        eigen.eigh(a, method="tridiagonal")


def test_a_cluster_too_big_for_one_rank_goes_to_jacobi(backend, monkeypatch):
    """Inverse iteration keeps a cluster on one rank: past twice a share, auto uses Jacobi."""
    n = 36
    values = np.r_[np.linspace(-3, -1, 6), 1 + 1e-5 * np.arange(n - 6)]  # one cluster of 30
    x = hermitian(n, values=values, seed=13)
    a = dist(x, backend)
    cuts = []
    found = tridiagonal.tridiagonal_eigenvectors

    def recording(*args):
        result = found(*args)
        cuts.append(result[1])  # the ranges of eigen-indices, one per rank
        return result

    monkeypatch.setattr(tridiagonal, "tridiagonal_eigenvectors", recording)
    forced = eigen.eigh(a, block_size=3, method="tridiagonal")
    check(x, *forced)
    too_big = np.diff(cuts[0]).max() > 2 * -(-n // backend.nranks)
    assert too_big == (backend.nranks >= 3)  # 30 vectors on one rank: more than 2 x 12
    other = "jacobi" if too_big else "tridiagonal"
    assert _bits(eigen.eigh(a, block_size=3)) == _bits(eigen.eigh(a, block_size=3, method=other))


def test_failed_inverse_iteration_on_one_rank_is_known_to_every_rank(backend, monkeypatch):
    x = hermitian(20, seed=14)
    a = dist(x, backend)
    lapack = tridiagonal.scipy_lapack()

    class FailingOnRankZero:
        """dstein fails for the first local rank (rank 0's call on the simulated backend)."""

        calls = 0

        def __getattr__(self, name):
            return getattr(lapack, name)

        def dstein(self, *args):
            z, info = lapack.dstein(*args)
            FailingOnRankZero.calls += 1
            return z, 1 if FailingOnRankZero.calls == 1 else info

    monkeypatch.setattr(tridiagonal, "scipy_lapack", FailingOnRankZero)
    with pytest.raises(la.LinAlgError, match="Eigenvectors did not converge"):
        eigen.eigh(a, block_size=2, method="tridiagonal")
    FailingOnRankZero.calls = 0
    jacobi = _bits(eigen.eigh(a, block_size=2, method="jacobi"))
    FailingOnRankZero.calls = 0
    assert _bits(eigen.eigh(a, block_size=2)) == jacobi


def test_ranges_are_even_and_keep_each_cluster_on_one_rank():
    backend = dapx.simulated(4)
    d, e = np.arange(20.0), np.full(19, 0.01)  # well separated: even ranges
    values, cuts, z = tridiagonal.tridiagonal_eigenvectors(d, e, backend)
    assert cuts.tolist() == [0, 5, 10, 15, 20]
    d = np.r_[np.arange(10.0), 100 + 1e-6 * np.arange(10)]  # eigenvalues 10..19: one cluster
    e = np.full(19, 1e-3)
    values, cuts, z = tridiagonal.tridiagonal_eigenvectors(d, e, backend)
    assert cuts.tolist() == [0, 5, 10, 10, 20]  # the cut at 15 moved to the nearer end
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    assert np.abs(values - la.eigvalsh(t)).max() <= 8 * 20 * EPS * la.norm(t, 2)
    vectors = np.concatenate([z[r] for r in range(4)], axis=1)
    assert la.norm(t @ vectors - vectors * values, 2) <= 16 * 20 * EPS * la.norm(t, 2)
    assert la.norm(vectors.T @ vectors - np.eye(20), 2) <= 8 * 20 * EPS
