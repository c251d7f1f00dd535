"""Chunked variances and NaN statistics (`dapx.functions.statistics`) against NumPy.

The module's chunk size is set to 64 elements (and the fused dot's row to 16) so
that small arrays make several chunks per block, a partial last chunk, and
slabs cut inside rows; every layout of `dapx.testing.LAYOUTS`, the usual dtypes,
``ddof``, ``where=``, ``keepdims``, full and axis reductions.

Tolerances are `dapx.testing.assert_eq`'s defaults: ``rtol=1e-12`` for float64
and complex128, ``1e-5`` for float32. NumPy sums pairwise; the chunked kernel
sums each chunk pairwise (or with one BLAS dot per row, whose error grows with the
row length, at most `chunked_moments.ROW` = 8192 elements) and then the chunk totals
pairwise, so both errors are a few ulps times a logarithm of the size, far below
1e-12 relative at the sizes used here.
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest

import dapx
from dapx.functions import chunked_moments
from dapx.testing import LAYOUTS, assert_eq, layout

#: 1-D: several chunks per block and a partial last one; 2-D: rows shorter than a
#: chunk (several rows per slab) and rows longer than one (slabs inside rows).
SHAPES = [(1001,), (37, 29), (3, 211)]
DTYPES = [np.float64, np.float32, np.complex128, np.int64, np.bool_]


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(chunked_moments, "CHUNK", 64)
    monkeypatch.setattr(chunked_moments, "ROW", 16)


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.3
    if dtype.kind == "i":
        return rng.integers(-50, 50, shape).astype(dtype)
    x = rng.standard_normal(shape) + 3.0
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _dist(x, kind, backend, seed=0):
    return dapx.asarray(x, backend=backend, **layout(kind, x.shape, backend.nranks, seed=seed))


def _same(got, want, err_msg=""):
    want = np.asarray(want)
    assert_eq(got, want, err_msg=err_msg)


@pytest.mark.parametrize("kind", LAYOUTS)
def test_var_std_mean_match_numpy(backend, kind):
    for k, shape in enumerate(SHAPES):
        for dtype in DTYPES:
            x = _data(shape, dtype, seed=k)
            a = _dist(x, kind, backend, seed=k)
            for axis in (None, 0, -1):
                msg = f"{shape} {np.dtype(dtype)} axis={axis}"
                _same(np.var(a, axis=axis), np.var(x, axis=axis), msg)
                _same(np.std(a, axis=axis, ddof=1), np.std(x, axis=axis, ddof=1), msg)
                _same(np.mean(a, axis=axis), np.mean(x, axis=axis), msg)
            _same(np.var(a, keepdims=True), np.var(x, keepdims=True))
            _same(np.std(a, axis=0, keepdims=True), np.std(x, axis=0, keepdims=True))


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # empty slices of where=: as NumPy
def test_dtype_promotion_and_where(backend, kind):
    x = _data((37, 29), np.float32, seed=4)
    a = _dist(x, kind, backend)
    for axis in (None, 0, 1):
        for f in (np.mean, np.var, np.std):
            _same(f(a, axis=axis, dtype=np.float64), f(x, axis=axis, dtype=np.float64))
    i = _data((1001,), np.int64, seed=5)
    b = _dist(i, kind, backend)
    _same(np.mean(b, dtype=np.float32), np.mean(i, dtype=np.float32))
    _same(np.var(b, dtype=np.float64), np.var(i, dtype=np.float64))
    y = _data((37, 29), np.float64, seed=6)
    c = _dist(y, kind, backend)
    mask = np.random.default_rng(7).random(y.shape) < 0.7
    cols = np.arange(29) % 4 != 0
    for where in (mask, cols):
        for axis in (None, 0, 1):
            for f in (np.mean, np.var, np.std):
                _same(f(c, axis=axis, where=where), f(y, axis=axis, where=where))
            _same(
                np.var(c, axis=axis, where=where, ddof=1, keepdims=True),
                np.var(y, axis=axis, where=where, ddof=1, keepdims=True),
            )
    z = _data((37, 29), np.complex128, seed=8)
    _same(np.std(_dist(z, kind, backend), where=mask), np.std(z, where=mask))


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # empty slices of where=: as NumPy
def test_nan_statistics_match_numpy(backend, kind):
    for k, shape in enumerate(SHAPES):
        for dtype in (np.float64, np.float32, np.complex128):
            x = _data(shape, dtype, seed=k)
            x[np.random.default_rng(k).random(shape) < 0.2] = np.nan
            a = _dist(x, kind, backend, seed=k)
            for axis in (None, 0, -1):
                for f in (np.nanmean, np.nanvar, np.nanstd):
                    _same(f(a, axis=axis), f(x, axis=axis), f"{f.__name__} {shape} {axis}")
            _same(np.nanstd(a, ddof=1, keepdims=True), np.nanstd(x, ddof=1, keepdims=True))
    y = _data((37, 29), np.float64, seed=9)
    y[::3, ::2] = np.nan
    c = _dist(y, kind, backend)
    mask = np.random.default_rng(10).random(y.shape) < 0.7
    for axis in (None, 0, 1):
        for f in (np.nanmean, np.nanvar, np.nanstd):
            _same(f(c, axis=axis, where=mask), f(y, axis=axis, where=mask))
    f32 = y.astype(np.float32)
    _same(np.nanvar(_dist(f32, kind, backend), dtype=np.float64), np.nanvar(f32, dtype=np.float64))


def test_given_mean_and_all_nan_slices(backend):
    x = _data((37, 29), np.float64, seed=11)
    a = _dist(x, "c", backend)
    m = np.mean(x, axis=1, keepdims=True)
    _same(np.var(a, axis=1, mean=m), np.var(x, axis=1, mean=m))
    _same(np.std(a, mean=np.mean(x, keepdims=True)), np.std(x, mean=np.mean(x, keepdims=True)))
    x[:, 3] = np.nan
    a = _dist(x, "b-irregular", backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for f in (np.nanvar, np.nanstd, np.nanmean):
            _same(f(a, axis=0), f(x, axis=0))


def test_same_grid_same_bits(backend):
    x = _data((1001,), np.float64, seed=12)
    x[::17] = np.nan
    a, b = _dist(x, "c2", backend), _dist(x.copy(), "c2", backend)
    for f in (np.std, np.nanstd, np.nanmean):
        assert f(a).gather().tobytes() == f(b).gather().tobytes()
    assert np.std(a, where=~np.isnan(x)).gather().tobytes() == (
        np.std(b, where=~np.isnan(x)).gather().tobytes()
    )


def test_no_full_size_temporaries(backend, monkeypatch):
    """A rank's temporaries stay chunk-sized: the peak is far below one block."""
    monkeypatch.setattr(chunked_moments, "CHUNK", 1 << 12)
    monkeypatch.setattr(chunked_moments, "ROW", 1 << 10)
    n = 400_000 * backend.nranks  # 3.2 MB per rank of float64
    x = _data((n,), np.float64, seed=13)
    x[::101] = np.nan
    a = dapx.asarray(x, backend=backend)
    a32 = dapx.asarray(x.astype(np.float32), backend=backend)
    mask = dapx.asarray(np.arange(n) % 3 != 0, backend=backend)  # the same layout as `a`
    calls = {
        "std": lambda: np.std(a),
        "var(where=)": lambda: np.var(a, where=mask),
        "mean(where=)": lambda: np.mean(a, where=mask),
        "nanstd": lambda: np.nanstd(a),
        "nanmean": lambda: np.nanmean(a),
        "mean(f32, dtype=f8)": lambda: np.mean(a32, dtype=np.float64),
        "std(f32, dtype=f8)": lambda: np.std(a32, dtype=np.float64),
    }
    for name, call in calls.items():
        call()  # caches filled outside the measurement
        tracemalloc.start()
        try:
            call()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 400_000, (name, peak)  # one rank's block is 3.2 MB (f8), 1.6 MB (f4)


def test_fused_kernel_on_any_memory_order():
    """A block in Fortran order or strided (a view) sums the same squares."""
    rng = np.random.default_rng(14)
    x = rng.standard_normal((23, 41))
    z = x + 1j * rng.standard_normal(x.shape)
    w = rng.random(x.shape) < 0.5
    for v, dev in ((x, np.dtype("f8")), (z, np.dtype("c16"))):
        m = np.mean(v)
        want = np.sum(np.abs(v - m) ** 2)
        for block in (v, np.asfortranarray(v), v[::2, 1::3]):
            expected = np.sum(np.abs(block - m) ** 2) if block.shape != v.shape else want
            got = chunked_moments._fused_full(block, np.asarray(m), None, False, dev)
            np.testing.assert_allclose(got, expected, rtol=1e-12)
        masked = chunked_moments._fused_full(np.asfortranarray(v), np.asarray(m), w, False, dev)
        np.testing.assert_allclose(masked, np.sum(np.abs(v - m) ** 2, where=w), rtol=1e-12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf - inf inside where=: as NumPy
def test_infinities_outside_where_are_left_out(backend):
    """where= zeroes by multiplying (fast); an inf or NaN outside the mask is redone exactly."""
    x = _data((40, 25), np.float64, seed=15)
    x[3, 4], x[17, 0], x[30, 24] = np.inf, np.nan, -np.inf
    w = np.isfinite(x)
    for kind in ("b", "c2"):
        a = _dist(x, kind, backend)
        for axis in (None, 0, 1):
            for f in (np.mean, np.var, np.std, np.nanvar, np.nanmean):
                _same(f(a, axis=axis, where=w), f(x, axis=axis, where=w), f"{f.__name__} {axis}")
            _same(np.var(a, axis=axis, where=~w), np.var(x, axis=axis, where=~w))
