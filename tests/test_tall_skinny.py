"""Tall-skinny linear algebra (`dapx.functions.tall_skinny`) against NumPy.

Row layouts block, irregular block (empty blocks), cyclic and unstructured;
float64, float32, complex128; well-conditioned, ill-conditioned (1e10) and
rank-deficient matrices, and blocks with fewer rows than columns. Tolerances
come from the condition number and the precision, not fixed numbers. Nothing
is gathered (the suite's gather threshold is 0, so a `dapx.GatherWarning`
would fail), and the only large object a rank receives is the stack of the
``R`` factors, ``P n x n`` (measured).

# Note: TSQR's ``R`` has a real non-negative diagonal and LAPACK's (NumPy's)
# need not: Q and R are compared through invariants (``Q R = A``,
# ``Q^H Q = I``, ``|R|``), singular vectors up to a phase each.
"""

from __future__ import annotations

import numpy as np
import pytest

import dapx
from dapx.functions import tall_skinny
from dapx.testing import assert_eq, layout

la = np.linalg
KINDS = ("b", "b-irregular", "c", "u")
DTYPES = (np.float64, np.float32, np.complex128)


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


def eps(dtype) -> float:
    return float(np.finfo(dtype).eps)


def matrix(m, n, dtype=np.float64, cond=10.0, rank=None, seed=0) -> np.ndarray:
    """``U diag(s) V^H`` with singular values from 1 down to ``1/cond`` (distinct)."""
    rng = np.random.default_rng(seed)

    def unitary(k, p):
        x = rng.standard_normal((k, p))
        if np.dtype(dtype).kind == "c":
            x = x + 1j * rng.standard_normal((k, p))
        return la.qr(x)[0]

    s = np.logspace(0, -np.log10(cond), n)
    if rank is not None:
        s[rank:] = 0.0
    x = (unitary(m, n) * s) @ unitary(n, n).conj().T
    return x.astype(dtype)


def dist(x, kind, backend, seed=1):
    """Rows split over all ranks by the 1-D layout `kind`, columns whole."""
    rows = layout(kind, x.shape[0], backend.nranks, seed=seed)["dist"][0]
    if x.ndim == 1:
        return dapx.asarray(x, dist=(rows,), backend=backend)
    return dapx.asarray(x, dist=(rows, "n"), grid=(backend.nranks, 1), backend=backend)


def chunked(monkeypatch, tree: bool) -> None:
    """Whole blocks at the leaves, or a local tree of chunks of 2n rows (the recursion)."""
    monkeypatch.setattr(tall_skinny, "CHUNK_BYTES", 0 if tree else 1 << 21)


def check_qr(q, r, x, dtype, cond):
    """The invariants of a QR and R against NumPy's up to the signs of its rows."""
    tol = eps(dtype)
    m, n = x.shape
    scale = np.linalg.norm(x, 2)
    qg, rg = q.gather(), r.gather()
    assert qg.dtype == rg.dtype == la.qr(x)[0].dtype
    np.testing.assert_allclose(qg @ rg, x, atol=50 * tol * scale * np.sqrt(n))
    np.testing.assert_allclose(qg.conj().T @ qg, np.eye(n), atol=50 * tol * np.sqrt(m))
    assert np.array_equal(rg, np.triu(rg))
    # R is determined up to the phases of its rows (full rank): |R| against NumPy's.
    np.testing.assert_allclose(
        np.abs(rg), np.abs(la.qr(x, "r")), atol=50 * tol * cond * scale * np.sqrt(n)
    )


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_qr_and_svd_against_numpy(backend, kind, monkeypatch, dtype):
    ill = 1e4 if np.dtype(dtype) == np.float32 else 1e10  # ill-conditioned for the precision
    for cond, tree in ((10.0, False), (ill, True), (ill, False)):
        chunked(monkeypatch, tree)
        check_qr_and_svd(backend, kind, dtype, cond)


def check_qr_and_svd(backend, kind, dtype, cond):
    x = matrix(40, 5, dtype, cond)
    a = dist(x, kind, backend)
    q, r = la.qr(a)
    assert q.distribution.maps[0] == a.distribution.maps[0]  # Q keeps A's rows
    check_qr(q, r, x, dtype, cond)
    np.testing.assert_allclose(
        np.abs(la.qr(a, "r").gather()),
        np.abs(r.gather()),
        atol=10 * eps(dtype) * cond * np.linalg.norm(x, 2),
    )
    u, s, vh = la.svd(a, full_matrices=False)
    ref = la.svd(x, full_matrices=False)
    top = ref.S[0]
    assert_eq(s, ref.S, rtol=0, atol=20 * eps(dtype) * top * np.sqrt(x.shape[1]))
    ug, vhg = u.gather(), vh.gather()
    np.testing.assert_allclose((ug * s.gather()) @ vhg, x, atol=50 * eps(dtype) * top)
    # Distinct singular values: each singular vector equals NumPy's up to a phase.
    gap = np.min(-np.diff(ref.S))
    overlap = np.abs(ref.U.conj().T @ ug)
    np.testing.assert_allclose(overlap, np.eye(5), atol=100 * eps(dtype) * top / gap)
    assert_eq(la.svdvals(a), ref.S, rtol=0, atol=20 * eps(dtype) * top * np.sqrt(5))


def test_blocks_with_fewer_rows_than_columns(backend, kind):
    for dtype in DTYPES:
        x = matrix(9, 6, dtype, cond=100.0, seed=3)  # at 6 ranks every block has 1 or 2 rows
        a = dist(x, kind, backend)
        q, r = la.qr(a)
        check_qr(q, r, x, dtype, 100.0)
        u, s, vh = la.svd(a, full_matrices=False)
        np.testing.assert_allclose(s.gather(), la.svdvals(x), atol=50 * eps(dtype))
        product = (u.gather() * s.gather()) @ vh.gather()
        np.testing.assert_allclose(product, x, atol=50 * eps(dtype))


def test_rank_deficient_qr_svd_rank_pinv(backend, kind, monkeypatch):
    chunked(monkeypatch, tree=kind in ("c", "u"))
    x = matrix(30, 6, cond=10.0, rank=4, seed=5)
    a = dist(x, kind, backend)
    q, r = la.qr(a)
    np.testing.assert_allclose(q.gather() @ r.gather(), x, atol=1e-13)
    np.testing.assert_allclose(q.gather().T @ q.gather(), np.eye(6), atol=1e-13)
    assert_eq(la.svdvals(a), la.svdvals(x), rtol=0, atol=1e-14)
    assert_eq(la.matrix_rank(a), la.matrix_rank(x))
    assert_eq(la.matrix_rank(a, tol=0.5), la.matrix_rank(x, tol=0.5))
    assert_eq(la.matrix_rank(a, rtol=0.3), la.matrix_rank(x, rtol=0.3))
    # The cut-off must separate the zero singular values clearly from the others.
    for kwargs in ({"rcond": 1e-10}, {"rtol": None}):
        assert_eq(la.pinv(a, **kwargs), la.pinv(x, **kwargs), rtol=0, atol=1e-12)
    assert la.pinv(a, rcond=1e-10).distribution.maps[1] == a.distribution.maps[0]


def test_pinv_full_rank_and_wide(backend, kind):
    for dtype in DTYPES:
        check_pinv(backend, kind, dtype)


def check_pinv(backend, kind, dtype):
    x = matrix(20, 4, dtype, cond=1e3, seed=6)
    a = dist(x, kind, backend)
    ref = la.pinv(x)
    tol = 50 * eps(dtype) * 1e3 * np.linalg.norm(ref, 2)
    assert_eq(la.pinv(a), ref, rtol=0, atol=tol)
    w = dist(x.T.copy(), "b", backend)  # wide: through the adjoint
    assert_eq(la.pinv(w), la.pinv(x.T), rtol=0, atol=tol)
    assert_eq(la.svdvals(w), la.svdvals(x.T), rtol=0, atol=50 * eps(dtype))
    uw, sw, vhw = la.svd(w, full_matrices=False)
    np.testing.assert_allclose((uw.gather() * sw.gather()) @ vhw.gather(), x.T, atol=1e-4)


def test_lstsq_against_numpy(backend, kind, monkeypatch):
    for dtype in DTYPES:
        ill = 1e3 if np.dtype(dtype) == np.float32 else 1e8
        for cond, tree in ((10.0, False), (ill, True)):
            chunked(monkeypatch, tree)
            check_lstsq(backend, kind, dtype, cond)


def check_lstsq(backend, kind, dtype, cond):
    x = matrix(36, 4, dtype, cond, seed=7)
    rng = np.random.default_rng(8)
    y = (x @ rng.standard_normal((4, 2)) + 1e-3 * rng.standard_normal((36, 2))).astype(dtype)
    a = dist(x, kind, backend)
    for rhs in (y, y[:, 0]):
        ref = la.lstsq(x, rhs)
        got = la.lstsq(a, dist(rhs, "c", backend))  # b laid out unlike a: aligned first
        # Forward error of least squares: eps (cond + cond^2 |r| / (|A| |x|)).
        residual = np.sqrt(np.sum(ref[1])) if ref[1].size else 0.0
        bound = cond + cond**2 * residual / np.linalg.norm(ref[0])
        scale = np.max(np.abs(ref[0]))
        assert_eq(got[0], ref[0], rtol=0, atol=100 * np.finfo(np.float64).eps * bound * scale)
        assert_eq(got[1], ref[1], rtol=1e-6 if cond < 1e6 else 1e-2)
        assert got[2] == ref[2]
        assert_eq(got[3], ref[3], rtol=0, atol=100 * np.finfo(np.float64).eps)
    got = la.lstsq(a, y)  # a NumPy right-hand side
    assert_eq(got[0], la.lstsq(x, y)[0], rtol=0, atol=1e-3 * np.max(np.abs(got[0].gather())))


def test_lstsq_rank_deficient_is_the_minimum_norm_solution(backend, kind):
    x = matrix(25, 5, cond=10.0, rank=3, seed=9)
    y = np.random.default_rng(10).standard_normal(25)
    a = dist(x, kind, backend)
    ref = la.lstsq(x, y)
    sol, residuals, rank, s = la.lstsq(a, dist(y, kind, backend))
    assert rank == ref[2] == 3
    assert_eq(sol, ref[0], rtol=0, atol=1e-13 * 10)
    assert_eq(residuals, ref[1])  # empty: NumPy reports residuals at full rank only
    assert_eq(s, ref[3], rtol=0, atol=1e-14)
    got = la.lstsq(a, dist(y, kind, backend), rcond=0.5)  # a larger cut-off: rank 1
    assert got[2] == la.lstsq(x, y, rcond=0.5)[2]
    assert_eq(got[0], la.lstsq(x, y, rcond=0.5)[0], rtol=1e-10)


@pytest.mark.parametrize("kind", ["b-irregular", "u"])
def test_cond_and_norms(backend, kind):
    x = matrix(24, 4, np.complex128, cond=1e6, seed=11)
    a = dist(x, kind, backend)
    for p in (None, 2, -2):
        assert_eq(la.cond(a, p), la.cond(x, p), rtol=100 * eps(np.float64) * 1e6)
    for ord in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        rtol = 100 * eps(np.float64) * (1e6 if ord == -2 else 1.0)  # s_min: relative to cond
        assert_eq(la.norm(a, ord), la.norm(x, ord), rtol=rtol)
        assert_eq(la.matrix_norm(a, ord=ord), la.matrix_norm(x, ord=ord), rtol=rtol)
        assert_eq(la.norm(a, ord, axis=(1, 0)), la.norm(x, ord, axis=(1, 0)), rtol=rtol)
    for ord in (None, 1, 2, np.inf, 0, 3):
        assert_eq(la.vector_norm(a, ord=ord or 2), la.vector_norm(x, ord=ord or 2), rtol=1e-12)
    square = matrix(6, 6, cond=1e3, seed=12)
    s = dist(square, kind, backend)
    for p in (None, 1, -1, np.inf, -np.inf, "fro", "nuc", 2, -2):
        assert_eq(la.cond(s, p), la.cond(square, p), rtol=100 * eps(np.float64) * 1e3)
    singular = dist(np.zeros((6, 6)), kind, backend)
    for p in (None, 1, "fro"):
        assert_eq(la.cond(singular, p), la.cond(np.zeros((6, 6)), p))
    with pytest.raises(la.LinAlgError, match="square"):
        la.cond(a, 1)


def test_paths_that_need_an_m_by_m_factor_still_follow_numpy(backend):
    x = matrix(8, 3, seed=13)
    a = dist(x, "b", backend)
    with pytest.warns(dapx.GatherWarning):
        q, r = la.qr(a, "complete")
    np.testing.assert_allclose(q.gather() @ r.gather(), x, atol=1e-13)
    assert q.shape == (8, 8)
    with pytest.warns(dapx.GatherWarning):
        u, s, _ = la.svd(a)  # full_matrices=True: NumPy's 8 x 8 U
    assert u.shape == (8, 8)
    assert_eq(s, la.svdvals(x), rtol=1e-12)
    with pytest.raises(TypeError, match="float16"):
        la.qr(dist(x.astype(np.float16), "b", backend))


def test_a_distributed_column_axis_is_redistributed_not_gathered(backend):
    x = matrix(30, 6, seed=14)
    a = dapx.asarray(x, dist=("b", "c"), grid=dapx.dims_create(backend.nranks, 2), backend=backend)
    q, r = la.qr(a)
    check_qr(q, r, x, np.float64, 10.0)
    assert q.distribution.grid_shape == (backend.nranks, 1)


@pytest.mark.parametrize("what", ["qr", "svd", "lstsq"])
def test_memory_bound_only_the_r_factors_are_gathered(backend, monkeypatch, what):
    """The largest object any allgather returns is the stack of R factors: P (n + k)^2."""
    m, n, k = 600, 8, 2
    x = matrix(m, n, seed=15)
    a = dist(x, "b", backend)
    y = dist(np.ones((m, k)), "b", backend)
    largest = []
    original = backend.allgather

    def allgather(values):
        result = original(values)
        largest.append(sum(v.nbytes for v in result if isinstance(v, np.ndarray)))
        return result

    def alltoallv(*args, **kwargs):
        raise AssertionError("TSQR moved a block")

    monkeypatch.setattr(backend, "allgather", allgather)
    monkeypatch.setattr(backend, "alltoallv", alltoallv)
    if what == "qr":
        la.qr(a)
        bound = backend.nranks * n * n * 8
    elif what == "svd":
        la.svd(a, full_matrices=False)
        bound = backend.nranks * n * n * 8
    else:
        la.lstsq(a, y)
        bound = backend.nranks * (n + k) ** 2 * 8
    assert largest and max(largest) <= bound, (max(largest), bound)
    assert max(largest) < x.nbytes / 4  # far from the matrix


@pytest.mark.parametrize("kind", ["b", "u"])
def test_polyfit_of_distributed_samples(backend, kind):
    t = np.linspace(-1, 2, 50)
    y = np.stack([np.cos(t), t**3 - t], axis=1)
    at = dist(t, kind, backend, seed=2)
    ay = dist(y, kind, backend, seed=2)
    for w in (None, 1 + t**2):
        aw = None if w is None else dapx.asarray(w, backend=backend)
        assert_eq(np.polyfit(at, ay, 3, w=aw), np.polyfit(t, y, 3, w=w), rtol=1e-9, atol=1e-12)
    got = np.polyfit(at, ay[:, 0], 4, full=True)
    ref = np.polyfit(t, y[:, 0], 4, full=True)
    assert_eq(got[0], ref[0], rtol=1e-9)
    assert_eq(got[1], ref[1], rtol=1e-8)
    assert got[2] == ref[2]
    assert_eq(got[3], ref[3], rtol=1e-12)


def test_xarray_polyfit_of_a_distributed_dataarray(backend):
    xr = pytest.importorskip("xarray")
    t = np.arange(40.0)
    data = np.stack([np.sin(t / 7), 0.5 * t - 3.0, t**2 / 100], axis=1)
    plain = xr.DataArray(data, dims=("time", "space"), coords={"time": t})
    distributed = plain.dap.distribute(time=backend.nranks, backend=backend)
    fit = distributed.polyfit("time", 2)
    ref = plain.polyfit("time", 2)
    coefficients = fit.polyfit_coefficients.data
    if isinstance(coefficients, dapx.DistributedArray):
        coefficients = coefficients.gather()
    np.testing.assert_allclose(coefficients, ref.polyfit_coefficients.data, atol=1e-10)
