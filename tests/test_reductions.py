"""Reductions, scans, statistics and ufunc methods, checked against NumPy on the same data.

Every numerical test runs the NumPy function on the whole array and the dapx
function on the distributed one, and compares results, dtypes, raised
exception types and warning categories (`like_numpy`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dapx
from dapx import Distribution
from dapx.layout.grid import dims_create
from dapx.layout.maps import BlockMap, CyclicMap, UnstructuredMap

SHAPES = {1: (11,), 2: (5, 7), 3: (3, 4, 5)}
LAYOUTS = ["b", "ib", "c", "bc", "u", "us", "mixed"]
DTYPES = [np.float64, np.float32, np.int64, np.bool_, np.complex128]


# -- helpers ---------------------------------------------------------------------------------------
def _map(kind: str, n: int, p: int, rng) -> dapx.Map:
    if kind == "b":
        return BlockMap(n, nprocs=p)
    if kind == "ib":  # irregular, the first rank empty when there are several
        cuts = sorted(rng.integers(0, n + 1, p - 1).tolist())
        bounds = [0, *cuts, n]
        if p > 1:
            bounds[1] = 0
        return BlockMap(n, np.array(bounds))
    if kind == "c":
        return CyclicMap(n, p)
    if kind == "bc":
        return CyclicMap(n, p, block_size=2)
    parts = np.array_split(rng.permutation(n), p)
    if kind == "u":
        return UnstructuredMap(n, parts)
    # "us": unstructured with shared copies (not one-to-one)
    shared = []
    for part in parts:
        extra = rng.choice(n, size=min(2, n), replace=False) if n else part
        shared.append(rng.permutation(np.union1d(part, extra)))
    return UnstructuredMap(n, shared, one_to_one=None)


def distribute(x: np.ndarray, layout: str, backend, seed: int = 0) -> dapx.DistributedArray:
    """`x` laid out by one of LAYOUTS over all ranks of `backend`."""
    rng = np.random.default_rng(seed)
    grid = dims_create(backend.nranks, [0] * x.ndim) if x.ndim else ()
    if layout == "mixed":
        grid = tuple(reversed(grid))
        kinds = ["c", "u", "ib", "b", "bc"][: x.ndim]
    else:
        kinds = [layout] * x.ndim
    maps = [_map(k, n, p, rng) for k, n, p in zip(kinds, x.shape, grid)]
    dist = Distribution(maps, grid)
    return dapx.asarray(x, dist=dist, backend=backend)


def data(shape, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(-3, 4, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


def check_layout(a: dapx.DistributedArray) -> None:
    """Every local block has the shape its distribution says."""
    for r, block in a.locals.items():
        expected = a.distribution.local_shape(r) if a.ndim else ()
        assert block.shape == expected, (r, block.shape, expected)
        assert block.dtype == a.dtype


def check(got, want) -> None:
    """`got` (a DistributedArray, or a tuple of them) equals NumPy's `want`."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w)
        return
    want = np.asarray(want)
    assert isinstance(got, dapx.DistributedArray), type(got)
    check_layout(got)
    g = got.gather()
    assert g.shape == want.shape, (g.shape, want.shape)
    assert g.dtype == want.dtype, (g.dtype, want.dtype)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(g, want)
        return
    rtol = 1e-5 if want.dtype in (np.float32, np.complex64) else 1e-12
    finite = np.abs(want[np.isfinite(want)]) if want.size else np.zeros(0)
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    np.testing.assert_allclose(g, want, rtol=rtol, atol=rtol * scale, equal_nan=True)


def _np(v):
    return v.gather() if isinstance(v, dapx.DistributedArray) else v


def like_numpy(func, x, a, *args, **kwargs):
    """``func(a, ...)`` behaves as ``func(x, ...)``: same result, exception type, warnings."""
    np_args = [_np(v) for v in args]
    np_kwargs = {k: _np(v) for k, v in kwargs.items()}
    with warnings.catch_warnings(record=True) as caught_np:
        warnings.simplefilter("always")
        try:
            want, error = func(x, *np_args, **np_kwargs), None
        except Exception as e:
            error = e
    with warnings.catch_warnings(record=True) as caught_dx:
        warnings.simplefilter("always")
        if error is not None:
            with pytest.raises(type(error)):
                func(a, *args, **kwargs)
        else:
            got = func(a, *args, **kwargs)
    kinds_np = {w.category for w in caught_np}
    kinds_dx = {w.category for w in caught_dx}
    assert kinds_dx == kinds_np, (func, args, kwargs, [str(w.message) for w in caught_dx])
    if error is None:
        check(got, want)


def some_dtypes(layout: str, ndim: int, others=tuple(DTYPES[1:])) -> tuple:
    """float64 and one other dtype, rotating over the cases so every dtype meets every
    backend and many layouts (all five dtypes everywhere would be slow)."""
    return np.float64, others[(LAYOUTS.index(layout) + ndim) % len(others)]


def axes_for(ndim: int) -> list:
    axes = [None, 0, -1]
    if ndim > 1:
        axes += [(0, ndim - 1), tuple(range(ndim)), (-1, 0)]
    if ndim > 2:
        axes += [1, (1, 2)]
    return axes


# -- reductions over every layout, backend, dimensionality and dtype -------------------------------
@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_reductions_match_numpy(backend, layout, ndim):
    for dtype in some_dtypes(layout, ndim):
        x = data(SHAPES[ndim], dtype, seed=ndim)
        a = distribute(x, layout, backend, seed=ndim)
        for axis in axes_for(ndim):
            for keepdims in (False, True):
                for f in (np.sum, np.max, np.any):
                    like_numpy(f, x, a, axis=axis, keepdims=keepdims)
            for f in (np.prod, np.min, np.all, np.amax, np.amin):
                like_numpy(f, x, a, axis=axis)
            like_numpy(np.count_nonzero, x, a, axis=axis)
            if dtype is not np.bool_:
                like_numpy(np.ptp, x, a, axis=axis)
        for axis in (None, 0, -1):
            for f in (np.argmin, np.argmax):
                like_numpy(f, x, a, axis=axis)
                like_numpy(f, x, a, axis=axis, keepdims=True)


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_statistics_match_numpy(backend, layout, ndim):
    for dtype in some_dtypes(layout, ndim, (np.float32, np.int64, np.complex128)):
        x = data(SHAPES[ndim], dtype, seed=ndim + 10)
        a = distribute(x, layout, backend, seed=ndim)
        for axis in axes_for(ndim):
            like_numpy(np.mean, x, a, axis=axis)
            like_numpy(np.var, x, a, axis=axis, keepdims=True)
            like_numpy(np.std, x, a, axis=axis, ddof=1)
            if dtype is not np.complex128:
                like_numpy(np.median, x, a, axis=axis)
        if dtype is not np.complex128:
            like_numpy(np.quantile, x, a, [0.1, 0.5, 0.9], axis=-1)
            like_numpy(np.percentile, x, a, 30, axis=None, keepdims=True)
            like_numpy(np.quantile, x, a, 0.25, axis=0, method="nearest")
    x = data(SHAPES[ndim], np.float64, seed=3)
    a = distribute(x, layout, backend, seed=5)
    like_numpy(np.average, x, a)
    w = np.abs(data(SHAPES[ndim], np.float64, seed=4)) + 0.1
    like_numpy(np.average, x, a, axis=-1, weights=w, returned=True)
    like_numpy(np.average, x, a, axis=0, weights=w[(slice(None),) + (0,) * (ndim - 1)])
    # distributed weights, laid out differently from `a`
    like_numpy(np.average, x, a, axis=None, weights=distribute(w, "c", backend))


def _with_nans(shape, seed):
    x = data(shape, np.float64, seed)
    rng = np.random.default_rng(seed)
    x[rng.random(shape) < 0.3] = np.nan
    return x


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_nan_functions_match_numpy(backend, layout, ndim):
    x = _with_nans(SHAPES[ndim], seed=ndim)
    x.flat[0] = 1.0  # at least one number
    a = distribute(x, layout, backend, seed=ndim)
    for axis in axes_for(ndim):
        for f in (np.nansum, np.nanprod, np.nanmean, np.nanmax, np.nanmin):
            like_numpy(f, x, a, axis=axis)
        like_numpy(np.nanvar, x, a, axis=axis, ddof=1)
        like_numpy(np.nanstd, x, a, axis=axis, keepdims=True)
        like_numpy(np.nanmedian, x, a, axis=axis)
        like_numpy(np.nanquantile, x, a, [0.2, 0.8], axis=axis)
        like_numpy(np.nanpercentile, x, a, 40, axis=axis)
    for axis in (None, 0, -1):
        like_numpy(np.nanargmin, x, a, axis=axis)
        like_numpy(np.nanargmax, x, a, axis=axis, keepdims=True)
    for dtype in (np.int64, np.float32):  # exact dtypes take the plain path
        y = data(SHAPES[ndim], dtype)
        b = distribute(y, layout, backend)
        for f in (np.nansum, np.nanmean, np.nanvar, np.nanmax, np.nanargmin, np.nanmedian):
            like_numpy(f, y, b, axis=0)


def test_all_nan_slices_warn_or_raise_like_numpy(backend):
    x = np.arange(12.0).reshape(3, 4)
    x[1] = np.nan
    x[:, 2] = np.nan
    a = distribute(x, "ib", backend)
    for axis in (None, 0, 1):
        for f in (
            np.nanmax,
            np.nanmin,
            np.nanmean,
            np.nanvar,
            np.nanstd,
            np.nanmedian,
            np.nanargmin,
            np.nanargmax,
            np.nansum,
        ):
            like_numpy(f, x, a, axis=axis)
        like_numpy(np.nanquantile, x, a, 0.5, axis=axis)


# -- scans -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_scans_match_numpy(backend, layout, ndim):
    for dtype in some_dtypes(layout, ndim):
        x = data(SHAPES[ndim], dtype, seed=ndim)
        a = distribute(x, layout, backend, seed=ndim)
        for axis in (None, 0, -1, *range(1, ndim - 1)):
            like_numpy(np.cumsum, x, a, axis=axis)
            like_numpy(np.cumprod, x, a, axis=axis)
        for axis in (0, -1):
            like_numpy(np.maximum.accumulate, x, a, axis=axis)
            if dtype is not np.bool_:
                like_numpy(np.subtract.accumulate, x, a, axis=axis)
            like_numpy(np.logical_xor.accumulate, x, a, axis=axis)
    x = _with_nans(SHAPES[ndim], seed=1)
    a = distribute(x, layout, backend)
    for axis in (None, 0, -1):
        like_numpy(np.nancumsum, x, a, axis=axis)
        like_numpy(np.nancumprod, x, a, axis=axis)
    like_numpy(np.cumsum, x, a, axis=0, dtype=np.float32)


def test_scan_of_a_scalar_and_scalar_errors(backend):
    x = np.array(3.5)
    a = dapx.asarray(x, backend=backend)
    like_numpy(np.cumsum, x, a)
    like_numpy(np.add.accumulate, x, a)
    like_numpy(np.cumsum, np.arange(4), dapx.arange(4, backend=backend), axis=1)


# -- ufunc methods ---------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
def test_ufunc_reduce_match_numpy(backend, layout):
    x = data((6, 5), np.float64, seed=2) + 3.0
    a = distribute(x, layout, backend)
    xi = data((6, 5), np.int64) + 5
    ai = distribute(xi, layout, backend)
    for axis in (0, 1, None, (0, 1), -1):
        like_numpy(np.add.reduce, x, a, axis=axis)
        like_numpy(np.hypot.reduce, x, a, axis=axis)
        like_numpy(np.logaddexp.reduce, x, a, axis=axis, keepdims=True)
        like_numpy(np.bitwise_or.reduce, xi, ai, axis=axis)
        like_numpy(np.fmax.reduce, x, a, axis=axis)
        # not reorderable: only one axis; folded in order along a whole axis
        like_numpy(np.subtract.reduce, x, a, axis=axis)
        like_numpy(np.divide.reduce, x, a, axis=axis, keepdims=True)
        like_numpy(np.power.reduce, xi % 3, ai % 3, axis=axis)
    like_numpy(np.add.reduce, x, a)  # default axis=0
    like_numpy(np.subtract.reduce, x[:, 0], distribute(x[:, 0], layout, backend), axis=None)
    like_numpy(np.subtract.reduce, x, a, axis=0, initial=100.0)
    like_numpy(np.multiply.reduce, x, a, axis=1, dtype=np.float32)
    like_numpy(np.add.reduce, xi, ai, axis=0, dtype=np.int8)


@pytest.mark.parametrize("layout", ["b", "c", "us", "mixed"])
def test_ufunc_outer(backend, layout, monkeypatch):
    x = data((4, 3), np.float64)
    y = np.arange(5.0)
    a = distribute(x, layout, backend)
    like_numpy(np.add.outer, x, a, y)
    r = np.multiply.outer(a, y)
    assert r.distribution.maps[:2] == a.distribution.maps
    assert r.distribution.maps[2] == BlockMap(5, nprocs=1)
    check(np.divmod.outer(a, y + 1), np.divmod.outer(x, y + 1))
    # a NumPy first operand: the result follows the distributed second one
    check(np.subtract.outer(y, a), np.subtract.outer(y, x))
    # a distributed second operand is gathered: quietly when small ...
    monkeypatch.setattr(dapx.config, "gather_warning_threshold", 1000)
    check(np.add.outer(a, distribute(y, "c", backend)), np.add.outer(x, y))
    # ... with a GatherWarning above the threshold
    monkeypatch.setattr(dapx.config, "gather_warning_threshold", 4)
    with pytest.warns(dapx.GatherWarning, match="add.outer"):
        r = np.add.outer(a, distribute(y, "c", backend))
    check(r, np.add.outer(x, y))
    # out= in the result layout and in another layout; where=
    out = dapx.zeros((4, 3, 5), backend=backend)
    assert np.add.outer(a, y, out=out) is out
    check(out, np.add.outer(x, y))
    mask = np.arange(5) % 2 == 0
    want = np.full((4, 3, 5), -1.0)
    np.add.outer(x, y, out=want, where=mask)
    out = dapx.full((4, 3, 5), -1.0, backend=backend)
    np.add.outer(a, y, out=out, where=mask)
    check(out, want)


def test_outer_of_scalars(backend):
    a = dapx.asarray(np.float64(2.0), backend=backend)
    check(np.multiply.outer(a, 3.0), np.multiply.outer(2.0, 3.0))
    check(np.add.outer(np.arange(3.0), a), np.add.outer(np.arange(3.0), 2.0))


# -- where=, initial=, dtype=, out= ----------------------------------------------------------------
@pytest.mark.parametrize("layout", ["b", "ib", "c", "us", "mixed"])
def test_where_and_initial(backend, layout):
    x = data((5, 6), np.float64, seed=7)
    a = distribute(x, layout, backend)
    rows = np.random.default_rng(1).random((5, 6)) < 0.6
    cols = np.arange(6) % 3 != 0
    rows_dist = distribute(rows, "c", backend, seed=3)  # another layout: aligned first
    for where, mask in ((rows, rows), (cols, cols), (rows_dist, rows), (False, False)):
        for axis in (None, 0, 1):
            for f in (np.sum, np.prod, np.any, np.all, np.nansum):
                assert_where(f, x, a, axis, where, mask)
            for f in (np.max, np.min, np.nanmax):
                assert_where(f, x, a, axis, where, mask, initial=-5.0)
            for f in (np.mean, np.var, np.std, np.nanmean, np.nanvar):
                assert_where(f, x, a, axis, where, mask)
    like_numpy(np.sum, x, a, axis=0, initial=10.0)
    like_numpy(np.max, x, a, axis=1, initial=0.5)
    like_numpy(np.min, x, a, initial=-10.0, keepdims=True)
    like_numpy(np.max, x, a, where=rows)  # NumPy: a where mask needs an initial
    like_numpy(np.sum, x, a, axis=1, dtype=np.float32)
    like_numpy(np.mean, x, a, axis=0, dtype=np.float32)


def assert_where(f, x, a, axis, where, mask, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            want, error = f(x, axis=axis, where=mask, **kwargs), None
        except Exception as e:
            error = e
    with warnings.catch_warnings(record=True) as caught_dx:
        warnings.simplefilter("always")
        if error is not None:
            with pytest.raises(type(error)):
                f(a, axis=axis, where=where, **kwargs)
            return
        got = f(a, axis=axis, where=where, **kwargs)
    assert {w.category for w in caught_dx} == {w.category for w in caught}
    check(got, want)


def test_out(backend):
    x = data((6, 4), np.float64)
    a = distribute(x, "c", backend)
    out = dapx.zeros((4,), backend=backend, dist="c")  # another layout than the result's
    assert np.sum(a, axis=0, out=out) is out
    check(out, x.sum(axis=0))
    out0 = dapx.zeros((), backend=backend)
    assert np.max(a, out=out0) is out0
    check(out0, np.asarray(x.max()))
    out_np = np.zeros(())
    assert np.add.reduce(a, axis=None, out=out_np) is out_np
    assert np.isclose(out_np, x.sum(), rtol=1e-12)
    outi = dapx.zeros((6,), dtype=np.intp, backend=backend)
    assert np.argmax(a, axis=1, out=outi) is outi
    check(outi, np.argmax(x, axis=1))
    for f in (np.mean, np.std, np.median, np.cumsum):
        kw = {"axis": 0}
        want = f(x, **kw)
        o = dapx.zeros(want.shape, backend=backend)
        assert f(a, out=o, **kw) is o
        check(o, want)
    o = dapx.zeros((6,), np.int64, backend=backend)
    assert np.sum(a, axis=1, out=o) is o  # computed in out's dtype, as NumPy does
    check(o, np.sum(x, axis=1, out=np.zeros(6, np.int64)))
    with pytest.raises(ValueError, match="shape"):
        np.sum(a, axis=1, out=dapx.zeros((5,), backend=backend))
    with pytest.raises(TypeError, match="DistributedArray"):
        np.sum(a, axis=1, out=np.zeros(6))


def test_methods(backend):
    x = data((4, 5), np.float64)
    a = distribute(x, "mixed", backend)
    for name in (
        "sum",
        "prod",
        "mean",
        "std",
        "var",
        "min",
        "max",
        "argmin",
        "argmax",
        "any",
        "all",
        "cumsum",
        "cumprod",
        "ptp",
    ):
        check(getattr(a, name)(), np.asarray(getattr(np, name)(x)))
        check(getattr(a, name)(axis=1), getattr(np, name)(x, axis=1))
    check(a.sum(0, keepdims=True), x.sum(0, keepdims=True))
    check(a.std(axis=0, ddof=1), x.std(axis=0, ddof=1))
    check(a.max(axis=1, initial=2.0), x.max(axis=1, initial=2.0))


# -- padding, empty sections, size-0 arrays --------------------------------------------------------
def test_padding_is_ignored(backend):
    x = data((9, 4), np.float64, seed=2)
    a = dapx.asarray(x, dist=("b", "n"), padding=[1, 0], backend=backend)
    if not any(m.is_padded for m in a.distribution.maps):
        pytest.skip("one rank: no padding")
    from dapx.exchange.plans import owned_positions

    for r, block in a.locals.items():  # garbage in the padding
        owned = np.zeros(block.shape, bool)
        local, _ = owned_positions(a.distribution, r)
        owned[local] = True
        block[~owned] = 1e300
    for f in (np.sum, np.max, np.argmax, np.mean, np.var, np.median, np.cumsum):
        for axis in (None, 0, 1):
            like_numpy(f, x, a, axis=axis)


@pytest.mark.parametrize("shape", [(0,), (0, 4), (4, 0), (2, 0, 3), (1,), (1, 1)])
def test_empty_and_tiny_arrays(backend, shape):
    x = data(shape, np.float64)
    xi = data(shape, np.int64)
    for layout in ("ib", "u"):
        a = distribute(x, layout, backend)
        ai = distribute(xi, layout, backend)
        for axis in axes_for(len(shape)):
            for f in (
                np.sum,
                np.prod,
                np.max,
                np.any,
                np.all,
                np.mean,
                np.var,
                np.nansum,
                np.nanmax,
                np.nanmean,
                np.nanvar,
                np.count_nonzero,
            ):
                like_numpy(f, x, a, axis=axis)
            # NumPy raises where its multi-axis reshape meets an empty kept dimension: so must dapx.
            for f, args in ((np.median, ()), (np.quantile, (0.5,)), (np.percentile, ([10, 90],))):
                like_numpy(f, x, a, *args, axis=axis)
            like_numpy(np.max, xi, ai, axis=axis, initial=-7)
        for axis in (None, 0, -1):
            for f in (np.argmin, np.nanargmax, np.cumsum, np.nancumprod):
                like_numpy(f, x, a, axis=axis)
            like_numpy(np.quantile, x, a, 0.5, axis=axis)


def test_scalar_inputs(backend):
    x = np.array(2.5)
    a = dapx.asarray(x, backend=backend)
    for f in (
        np.sum,
        np.max,
        np.argmin,
        np.mean,
        np.var,
        np.median,
        np.any,
        np.ptp,
        np.nanmean,
        np.count_nonzero,
        np.nanargmax,
    ):
        like_numpy(f, x, a)
    like_numpy(np.quantile, x, a, [0.5])
    like_numpy(np.average, x, a, weights=np.array(2.0), returned=True)
    like_numpy(np.add.reduce, x, a, axis=None)


# -- errors like NumPy's ---------------------------------------------------------------------------
def test_bad_input_raises_numpy_errors(backend):
    x = data((3, 4), np.float64)
    a = distribute(x, "c", backend)
    cases = [
        (np.sum, {"axis": 2}),
        (np.sum, {"axis": -3}),
        (np.sum, {"axis": (0, 0)}),
        (np.mean, {"axis": (1, 5)}),
        (np.argmin, {"axis": (0, 1)}),
        (np.argmax, {"axis": 2}),
        (np.cumsum, {"axis": 2}),
        (np.var, {"ddof": 1, "correction": 1}),
        (np.subtract.reduce, {"axis": (0, 1)}),
        (np.maximum.reduce, {"axis": 0, "where": np.ones((3, 4), bool)}),
        (np.median, {"axis": 3}),
    ]
    for f, kw in cases:
        like_numpy(f, x, a, **kw)
    like_numpy(np.quantile, x, a, 1.5)
    like_numpy(np.percentile, x, a, -1)
    like_numpy(np.quantile, x, a, 0.5, method="no-such-method")
    z = data((3, 4), np.complex128)
    like_numpy(np.quantile, z, distribute(z, "b", backend), 0.5)
    like_numpy(np.average, x, a, weights=np.ones(4))  # axis needed
    like_numpy(np.average, x, a, axis=1, weights=np.zeros(4))  # weights sum to zero
    like_numpy(np.nanmean, x, a, dtype=np.int64)
    with pytest.raises(ValueError, match="broadcast"):
        np.sum(a, where=np.ones(5, bool))


# -- design properties -----------------------------------------------------------------------------
def test_same_grid_gives_bitwise_identical_results(backend):
    x = data((40, 30), np.float64, seed=9) * 1e3
    results = []
    for _ in range(2):
        a = distribute(x, "mixed", backend, seed=1)
        results.append(
            [
                np.sum(a).gather(),
                np.sum(a, axis=0).gather(),
                np.var(a, axis=1).gather(),
                np.mean(a).gather(),
                np.cumsum(a, axis=0).gather(),
                np.nansum(a, axis=1).gather(),
            ]
        )
    for first, second in zip(*results):
        assert first.tobytes() == second.tobytes()


def test_result_layouts(backend):
    x = data((6, 8), np.float64)
    grid = dims_create(backend.nranks, [0, 1])
    a = dapx.asarray(x, dist=("c", "b"), grid=grid, backend=backend)
    s = np.sum(a, axis=1)  # axis 1 is undistributed: purely local, keeps dim 0's map
    assert s.distribution.maps == (a.distribution.maps[0],)
    assert np.sum(a, axis=1, keepdims=True).distribution.maps[0] == a.distribution.maps[0]
    full = np.sum(a)
    assert full.ndim == 0 and all(b.shape == () for b in full.locals.values())
    kept = np.sum(a, keepdims=True)
    assert kept.shape == (1, 1) and kept.distribution.nranks == backend.nranks
    s0 = np.sum(a, axis=0)  # distributed axis: reduce-scattered over all ranks
    assert s0.distribution.nranks == backend.nranks
    check(s0, x.sum(axis=0))


@pytest.mark.parametrize("layout", ["c", "u", "mixed", "ib"])
def test_arg_ties_and_nans_pick_the_first_global_index(backend, layout):
    x = np.tile(np.array([3.0, 1.0, 2.0, 1.0]), (3, 4))  # ties everywhere, on every rank
    a = distribute(x, layout, backend, seed=4)
    for f in (np.argmin, np.argmax, np.nanargmin, np.nanargmax):
        for axis in (None, 0, 1):
            like_numpy(f, x, a, axis=axis)
    y = x.copy()
    y[1, 5] = y[2, 0] = y[0, 9] = np.nan  # NaN wins argmin/argmax, the first one in C order
    b = distribute(y, layout, backend, seed=4)
    for f in (np.argmin, np.argmax, np.nanargmin, np.nanargmax, np.max, np.nanmin):
        for axis in (None, 0, 1):
            like_numpy(f, y, b, axis=axis)
    z = y + 1j * np.tile([0.0, 1.0], (3, 8))
    z[0, 3] = complex(1.0, np.nan)
    c = distribute(z, layout, backend, seed=4)
    for f in (np.argmin, np.argmax, np.max, np.min):
        for axis in (None, 0, 1):
            like_numpy(f, z, c, axis=axis)


def test_reduce_scatter_moves_only_partials(backend):
    """A partial reduction over a distributed axis exchanges one partial per rank, not data."""
    x = data((backend.nranks * 50, 6), np.float64)
    a = dapx.asarray(x, dist=("b", "n"), grid=(backend.nranks, 1), backend=backend)
    moved = dict.fromkeys(backend.local_ranks, 0)  # elements each local rank sent
    original = type(backend).alltoallv

    def counting(self, sends, *args):
        for r, (buffer, _) in sends.items():
            moved[r] += buffer.size
        return original(self, sends, *args)

    def total_moved():  # over every rank, also those of other processes
        return sum(backend.allgather(moved))

    type(backend).alltoallv = counting
    try:
        check(np.sum(a, axis=0), x.sum(axis=0))
        check(np.median(a, axis=1), np.median(x, axis=1))  # axis 1 is already whole
        assert total_moved() <= backend.nranks * 6
        moved.update(dict.fromkeys(moved, 0))
        # along the distributed axis the columns move, each element at most once
        check(np.median(a, axis=0), np.median(x, axis=0))
        assert total_moved() <= x.size
    finally:
        type(backend).alltoallv = original
