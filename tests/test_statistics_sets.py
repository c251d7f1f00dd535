"""Unique values, sets, histograms, covariance, convolution and polynomials, against NumPy.

Every common layout on 1 to 6 simulated ranks (or under mpiexec); data with
many repeats and NaNs, empty arrays and empty local blocks. Hypothesis draws
histogram bins and unique inputs.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dapx
from dapx.testing import assert_eq
from dapx.testing import distribute as dist

LAYOUTS = ("b", "b-irregular", "c", "c2", "u")


@pytest.fixture(params=LAYOUTS)
def kind(request):
    return request.param


def data(shape, dtype=np.float64, seed=0, high=5):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iub":
        return rng.integers(0, high, shape).astype(dtype)
    return (rng.standard_normal(shape) * 3).astype(dtype)


def assert_all(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_eq(g, w)


# -- unique ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0,), (1,), (17,), (4, 6)], ids=str)
@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_unique(backend, kind, shape, dtype):
    x = data(shape, dtype)
    if dtype == np.float64 and x.size > 3:
        x.flat[[0, 2]] = np.nan
        x.flat[1] = x.flat[3]
    a = dist(x, kind, backend)
    assert_eq(np.unique(a), np.unique(x))
    got = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    assert_all(got, np.unique(x, return_index=True, return_inverse=True, return_counts=True))
    assert_eq(np.unique(a, equal_nan=False), np.unique(x, equal_nan=False))
    # The array API's unique_*: NumPy leaves the order unspecified, dapx sorts.
    values = np.unique_values(a).gather()
    np.testing.assert_array_equal(np.sort(values), np.sort(np.unique_values(x)))
    v, c = np.unique_counts(a)
    ref = np.unique_counts(x)
    order = np.argsort(ref.values, kind="stable")
    np.testing.assert_array_equal(v.gather(), ref.values[order])
    np.testing.assert_array_equal(c.gather(), ref.counts[order])
    result = np.unique_all(a)
    values, inverse = result.values.gather(), result.inverse_indices.gather()
    assert inverse.shape == x.shape
    np.testing.assert_array_equal(values[inverse], x)  # NaNs compare equal here
    np.testing.assert_array_equal(x.ravel()[result.indices.gather()], values)
    _, inv = np.unique_inverse(a)
    assert inv.shape == x.shape


def test_unique_result_layout_is_balanced(backend):
    x = np.repeat(np.arange(7), 5)
    u = np.unique(dapx.asarray(x, dist="c", backend=backend))
    assert u.distribution == dapx.Distribution.create(7, "b", nranks=backend.nranks)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-3, 3), max_size=40))
def test_unique_property(values):
    x = np.array(values, dtype=np.int64)
    for nranks in (1, 3):
        a = dapx.asarray(x, dist="c", backend=dapx.simulated(nranks))
        got = np.unique(a, return_inverse=True, return_counts=True)
        assert_all(got, np.unique(x, return_inverse=True, return_counts=True))


def test_unique_along_an_axis_is_refused(backend):
    with pytest.raises(NotImplementedError, match="axis"):
        np.unique(dapx.asarray(np.ones((2, 2)), backend=backend), axis=0)


# -- set operations -------------------------------------------------------------------------------


@pytest.mark.parametrize(("na", "nb"), [(0, 5), (9, 0), (12, 7), (5, 16)])
def test_set_operations(backend, kind, na, nb):
    x, y = data((na,), np.int64, high=8), data((nb,), np.int64, seed=1, high=8)
    a, b = dist(x, kind, backend), dist(y, kind, backend, seed=1)
    for f in (np.union1d, np.intersect1d, np.setxor1d, np.setdiff1d):
        assert_eq(f(a, b), f(x, y))
        assert_eq(f(a, y), f(x, y))
    ux, uy = np.unique(x), np.unique(y)
    a_unique = dist(ux, kind, backend)
    for f in (np.intersect1d, np.setxor1d):
        assert_eq(
            f(a_unique, dist(uy, kind, backend), assume_unique=True), f(ux, uy, assume_unique=True)
        )
    shuffled = np.random.default_rng(2).permutation(ux)
    got = np.setdiff1d(dist(shuffled, kind, backend), b, assume_unique=True)
    assert_eq(got, np.setdiff1d(shuffled, y, assume_unique=True))  # keeps ar1's order


# -- histograms and bincount ----------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0,), (25,), (5, 7)], ids=str)
def test_histogram(backend, kind, shape):
    x = data(shape)
    a = dist(x, kind, backend)
    for bins, rng in ((10, None), (4, (-2.0, 2.0)), (np.array([-5.0, -1.0, 0.0, 0.5, 9.0]), None)):
        hist, edges = np.histogram(a, bins=bins, range=rng)
        ref_hist, ref_edges = np.histogram(x, bins=bins, range=rng)
        assert_eq(hist, ref_hist)
        assert_eq(edges, ref_edges)
        assert_eq(np.histogram_bin_edges(a, bins, rng), np.histogram_bin_edges(x, bins, rng))
    w = data(shape, seed=3)
    with np.errstate(invalid="ignore"):  # an empty histogram's density is 0/0, as NumPy's
        hist, _ = np.histogram(a, 6, weights=dist(w, kind, backend, seed=1), density=True)
        assert_eq(hist, np.histogram(x, 6, weights=w, density=True)[0], rtol=1e-12)


@pytest.mark.parametrize("estimator", ["auto", "fd", "doane", "scott", "rice", "sturges"])
def test_histogram_bin_estimators(backend, kind, estimator):
    _estimates_match_numpy(backend, kind, estimator)


def test_histogram_stone_estimator(backend):
    _estimates_match_numpy(backend, "c", "stone")  # 100 histograms: one layout is enough


def _estimates_match_numpy(backend, kind, estimator):
    x = data((40,))
    cases = [(x, None), (x, (-1.0, 1.5)), (data((40,), np.int64, high=9), None), (x[:0], None)]
    for values, rng in cases if estimator != "stone" else cases[:2]:  # stone: 100 histograms
        a = dist(values, kind, backend)
        with warnings.catch_warnings(record=True) as expected:
            warnings.simplefilter("always")
            ref_hist, ref_edges = np.histogram(values, bins=estimator, range=rng)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            hist, edges = np.histogram(a, bins=estimator, range=rng)
            assert_eq(np.histogram_bin_edges(a, estimator, rng), ref_edges)
        assert {w.category for w in got} == {w.category for w in expected}  # stone's warning
        assert_eq(edges, ref_edges)
        assert_eq(hist, ref_hist)
    with pytest.raises(ValueError, match="not a valid estimator"):
        np.histogram(dist(x, kind, backend), bins="nonsense")
    with pytest.raises(TypeError, match="weighted data"):
        np.histogram(dist(x, kind, backend), estimator, weights=dist(x, kind, backend))


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 12), st.floats(-3, 0), st.floats(0.1, 3))
def test_histogram_property(bins, low, width):
    x = data((30,), seed=bins)
    for nranks in (2, 4):
        a = dapx.asarray(x, dist="c", backend=dapx.simulated(nranks))
        hist, edges = np.histogram(a, bins, range=(low, low + width))
        ref = np.histogram(x, bins, range=(low, low + width))
        assert_eq(hist, ref[0])
        assert_eq(edges, ref[1])


def test_histogram2d_and_dd(backend, kind):
    x, y, z = data((20,)), data((20,), seed=1), data((20,), seed=2)
    a, b, c = (dist(v, kind, backend) for v in (x, y, z))
    hist, xe, ye = np.histogram2d(a, b, bins=(3, 4))
    ref = np.histogram2d(x, y, bins=(3, 4))
    assert_eq(hist, ref[0])
    assert_eq(xe, ref[1])
    assert_eq(ye, ref[2])
    hist, edges = np.histogramdd([a, b, c], bins=3, range=[(-3, 3)] * 3, density=True)
    ref = np.histogramdd(np.stack([x, y, z], -1), bins=3, range=[(-3, 3)] * 3, density=True)
    assert_eq(hist, ref[0], rtol=1e-12)
    assert_all(edges, ref[1])
    sample = np.stack([x, y], -1)
    hist, _ = np.histogramdd(dist(sample, kind, backend), bins=2)
    assert_eq(hist, np.histogramdd(sample, bins=2)[0])


@pytest.mark.parametrize("n", [0, 1, 30])
def test_bincount(backend, kind, n):
    x = data((n,), np.int64, high=9)
    a = dist(x, kind, backend)
    assert_eq(np.bincount(a), np.bincount(x))
    assert_eq(np.bincount(a, minlength=12), np.bincount(x, minlength=12))
    w = data((n,), seed=4)
    assert_eq(
        np.bincount(a, weights=dist(w, kind, backend, seed=2)),
        np.bincount(x, weights=w),
        rtol=1e-12,
    )
    with pytest.raises(ValueError, match="negative"):
        np.bincount(dist(np.array([1, -1, 2]), kind, backend))


# -- covariance and convolution -------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(12,), (3, 10), (10, 3)], ids=str)
def test_cov_and_corrcoef(backend, kind, shape):
    x = data(shape)
    a = dist(x, kind, backend)
    for rowvar in (True, False):
        for bias, ddof in ((False, None), (True, None), (False, 2)):
            assert_eq(
                np.cov(a, rowvar=rowvar, bias=bias, ddof=ddof),
                np.cov(x, rowvar=rowvar, bias=bias, ddof=ddof),
                rtol=1e-10,
            )
        assert_eq(np.corrcoef(a, rowvar=rowvar), np.corrcoef(x, rowvar=rowvar), rtol=1e-10)
    y = data(shape, seed=1)
    assert_eq(np.cov(a, dist(y, kind, backend)), np.cov(x, y), rtol=1e-10)
    assert_eq(np.corrcoef(a, y), np.corrcoef(x, y), rtol=1e-10)
    z = data(shape) + 1j * data(shape, seed=5)
    assert_eq(np.cov(dist(z, kind, backend)), np.cov(z), rtol=1e-10)


@pytest.mark.parametrize("n", [1, 5, 23])
@pytest.mark.parametrize("m", [1, 3, 4])
def test_convolve_and_correlate(backend, kind, n, m):
    x, v = data((n,)), data((m,), seed=1)
    a = dist(x, kind, backend)
    # A distributed signal shorter than the kernel is gathered (it is the small operand).
    small = pytest.warns(dapx.GatherWarning) if m > n else contextlib.nullcontext()
    for mode in ("full", "same", "valid"):
        if mode == "valid" and m > n:
            continue
        with small:
            assert_eq(np.convolve(a, v, mode), np.convolve(x, v, mode), rtol=1e-12, atol=1e-12)
        with small:
            assert_eq(np.correlate(a, v, mode), np.correlate(x, v, mode), rtol=1e-12, atol=1e-12)
    z = data((n,)) + 1j * data((n,), seed=3)
    k = v + 1j
    with small:
        got = np.correlate(dist(z, kind, backend), k, "full")
    assert_eq(got, np.correlate(z, k, "full"), rtol=1e-12, atol=1e-12)


# -- polynomials ----------------------------------------------------------------------------------


def test_polyfit(backend, kind):
    x = np.linspace(-2, 2, 30)
    y = 1.5 * x**3 - x + 0.25 + data((30,)) * 0.01
    a, b = dist(x, kind, backend), dist(y, kind, backend)
    got = np.polyfit(a, b, 3)  # tall-skinny QR: nothing gathered (tests/test_tall_skinny.py)
    assert_eq(got, np.polyfit(x, y, 3), rtol=1e-9)
    w = np.abs(data((30,), seed=2)) + 0.1
    got = np.polyfit(a, b, 2, w=dist(w, kind, backend))
    assert_eq(got, np.polyfit(x, y, 2, w=w), rtol=1e-9)
    y2 = np.stack([y, -y], axis=1)
    got, _, rank, _, _ = np.polyfit(a, dist(y2, kind, backend), 1, full=True)
    ref = np.polyfit(x, y2, 1, full=True)
    assert_eq(got, ref[0], rtol=1e-9)
    assert rank == ref[2]


def test_coefficient_functions(backend):
    p, q = np.array([1.0, -3.0, 2.0]), np.array([2.0, 1.0])
    a, b = dapx.asarray(p, backend=backend), dapx.asarray(q, backend=backend)
    with pytest.warns(dapx.GatherWarning):
        for f in (np.polyadd, np.polysub, np.polymul):
            assert_eq(f(a, b), f(p, q))
        quotient, remainder = np.polydiv(a, b)
        assert_eq(quotient, np.polydiv(p, q)[0])
        assert_eq(remainder, np.polydiv(p, q)[1])
        assert_eq(np.polyder(a, 2), np.polyder(p, 2))
        assert_eq(np.polyint(a, k=1.0), np.polyint(p, k=1.0))
        assert_eq(np.roots(a), np.roots(p), rtol=1e-12)
        assert_eq(np.poly(b), np.poly(q))
