"""Slab and pencil FFTs (`dapx.functions.fft_transposes`) against NumPy.

Grids: slab (every rank along one axis, first or last), pencil (a 2-D grid
from `dapx.dims_create`, non-square at 3 and 6 ranks) and a grid that
distributes every axis of a 2-D array. Sizes are not divisible by the grids.
The memory bound is checked on a measured quantity: the bytes each rank
receives in one exchange, counted by wrapping the backend's `alltoallv`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import dapx
from dapx.functions.fft_transposes import plan_stages
from dapx.functions.fourier import fft_layout
from dapx.testing import assert_eq, layout
from tests._received import ReceivedSizes

F = np.fft


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def grid_of(kind: str, ndim: int, nranks: int) -> tuple[int, ...]:
    if kind == "slab":
        return (nranks,) + (1,) * (ndim - 1)
    if kind == "slab-last":
        return (1,) * (ndim - 1) + (nranks,)
    if kind == "pencil":
        return (*dapx.dims_create(nranks, 2), *(1,) * (ndim - 2))
    return tuple(dapx.dims_create(nranks, ndim))  # "every": all axes distributed


def on(x, backend, grid, dist="b"):
    return dapx.asarray(x, backend=backend, dist=dist, grid=grid)


def tol(dtype):
    single = np.dtype(dtype) in (np.float32, np.complex64)
    return {"rtol": 2e-4, "atol": 2e-4} if single else {"rtol": 1e-10, "atol": 1e-10}


@pytest.mark.parametrize("grid_kind", ["slab", "slab-last", "pencil", "every"])
@pytest.mark.parametrize("dtype", [np.complex128, np.float32])
def test_transforms_against_numpy(backend, grid_kind, dtype):
    shape = (7, 5, 6)
    x = data(shape, dtype)
    a = on(x, backend, grid_of(grid_kind, 3, backend.nranks))
    c = x.astype(np.complex64 if dtype == np.float32 else np.complex128)
    ac = a.astype(c.dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dapx.GatherWarning)  # nothing is made whole
        cases = [
            (F.fftn, ac, c, {}),
            (F.ifftn, ac, c, {"norm": "ortho"}),
            (F.rfftn, a, x, {}) if dtype == np.float32 else (F.fftn, ac, c, {"axes": (2, 0)}),
            (F.irfftn, ac, c, {"s": (7, 5, 9), "axes": (0, 1, 2)}),
            (F.fftn, ac, c, {"s": (4, 8), "axes": (1, 0), "norm": "forward"}),
            (F.rfft2, a.real, x.real, {"s": (6, 3)}),
            (F.irfft2, ac, c, {"axes": (0, 2)}),
            (F.fft, ac, c, {"axis": 0, "n": 9}),
            (F.rfft, a.real, x.real, {"axis": 1}),
            (F.hfft, ac, c, {"axis": 0, "n": 6}),
            (F.ihfft, a.real, x.real, {"axis": 0}),
        ]
        for f, arr, ref, kw in cases:
            got, want = f(arr, **kw), f(ref, **kw)
            assert got.shape == want.shape and got.dtype == want.dtype, (f, kw)
            assert_eq(got, want, **tol(dtype))


@pytest.mark.parametrize("grid_kind", ["slab", "slab-last", "pencil", "every"])
def test_round_trip_returns_to_the_layout(backend, grid_kind):
    x = data((6, 7, 5), np.float64)
    a = on(x, backend, grid_of(grid_kind, 3, backend.nranks))
    f = F.fftn(a)
    back = F.ifftn(f)
    assert back.distribution == a.distribution
    assert_eq(back.real, x, rtol=1e-10, atol=1e-12)
    r = F.rfftn(a, axes=(2, 0, 1))
    assert r.shape == (6, 4, 5)
    back = F.irfftn(2 * r, s=(5, 6, 7), axes=(2, 0, 1))  # elementwise ops keep the layout
    assert back.distribution == a.distribution
    assert_eq(back, 2 * x, rtol=1e-10, atol=1e-12)
    # the inverse of an inverse transform returns too
    assert F.fft2(F.ifft2(a)).distribution == a.distribution


def test_two_dimensional_array_on_a_two_dimensional_grid(backend):
    x = data((9, 10), np.complex128)
    a = on(x, backend, grid_of("every", 2, backend.nranks))
    f = F.fft2(a)
    assert_eq(f, F.fft2(x), rtol=1e-10, atol=1e-10)
    assert F.ifft2(f).distribution == a.distribution
    assert_eq(F.irfft2(F.rfft2(a.real), s=(9, 10)), x.real, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["b-irregular", "c", "c2", "u"])
def test_other_layouts_round_trip(backend, kind):
    x = data((5, 8, 6), np.complex128)
    a = dapx.asarray(x, backend=backend, **layout(kind, x.shape, backend.nranks))
    f = F.fftn(a)
    assert_eq(f, F.fftn(x), rtol=1e-10, atol=1e-10)
    back = F.ifftn(f)
    assert back.distribution == a.distribution
    assert_eq(back, x, rtol=1e-10, atol=1e-12)
    with fft_layout("input"):
        g = F.fftn(a, axes=(0, 2))
    assert g.distribution == a.distribution
    assert_eq(g, F.fftn(x, axes=(0, 2)), rtol=1e-10, atol=1e-10)


def test_input_layout_option(backend):
    x = data((6, 5, 8), np.float64)
    a = on(x, backend, grid_of("pencil", 3, backend.nranks))
    with fft_layout("input"):
        f = F.fftn(a)
        r = F.rfftn(a)
    assert f.distribution == a.distribution
    assert r.distribution.grid_shape == a.distribution.grid_shape and r.shape == (6, 5, 5)
    assert_eq(f, F.fftn(x), rtol=1e-10, atol=1e-10)
    assert_eq(r, F.rfftn(x), rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="fft_layout"):
        dapx.config.fft_layout = "whole"


@pytest.mark.parametrize("grid_kind", ["slab", "pencil"])
def test_memory_bound(backend, grid_kind, monkeypatch):
    """Each rank receives at most its share, N/P elements, in any exchange."""
    shape = (12, 12, 12)  # divisible by every grid of 1-6 ranks
    x = data(shape, np.complex128)
    grid = grid_of(grid_kind, 3, backend.nranks)
    a = on(x, backend, grid)
    received_bytes = ReceivedSizes(backend, monkeypatch).exchanges
    with warnings.catch_warnings():
        warnings.simplefilter("error", dapx.GatherWarning)
        f = F.fftn(a)
    monkeypatch.undo()
    share = math.ceil(math.prod(shape) / backend.nranks) * 16
    exchanges = sum(p > 1 for p in grid)  # one transpose per distributed axis
    assert len(received_bytes) == exchanges * len(backend.local_ranks)
    assert max(received_bytes, default=0) <= share
    assert_eq(f, F.fftn(x), rtol=1e-10, atol=1e-10)


def test_one_dimensional_arrays(backend):
    """A 1-d array's n-d transforms are its 1-d ones: four-step, or whole for a prime length."""
    for n in (12, 13):
        x = data((n,), np.complex128)
        a = on(x, backend, (backend.nranks,))
        gathered = backend.nranks > 1 and n == 13
        for f in (F.fftn, F.ifftn, F.irfftn):  # s=(n,): irfftn's length n, not 2 (n - 1)
            warn = pytest.warns(dapx.GatherWarning) if gathered else warnings.catch_warnings()
            with warn:
                assert_eq(f(a, s=(n,), axes=(0,)), f(x, s=(n,), axes=(0,)), rtol=1e-10, atol=1e-10)
        r = on(x.real.copy(), backend, (backend.nranks,))
        warn = pytest.warns(dapx.GatherWarning) if gathered else warnings.catch_warnings()
        with warn:
            assert_eq(F.rfftn(r, norm="ortho"), F.rfftn(x.real, norm="ortho"), atol=1e-10)


def test_bad_input(backend):
    a = on(data((4, 6), np.complex128), backend, grid_of("slab", 2, backend.nranks))
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        F.fftn(a, s=(0, 3), axes=(0, 1))
    with pytest.raises(ValueError, match="repeated axes"):
        F.fftn(a, axes=(0, 0))
    with pytest.raises(ValueError, match="different lengths"):
        F.fftn(a, s=(2, 2), axes=(0,))


def test_plans():
    slab = plan_stages((4, 1, 1), (0, 1, 2), (8, 8, 8), (8, 8, 8))
    assert [(s.grid, s.axes) for s in slab] == [((4, 1, 1), (1, 2)), ((1, 4, 1), (0,))]
    real = plan_stages((1, 1, 4), (0, 1, 2), (8, 8, 8), (8, 8, 5), "r2c")
    assert real[0].axes == () and 2 in real[1].axes  # the real axis is transformed first
    inverse = plan_stages((4, 1, 1), (0, 1, 2), (8, 8, 5), (8, 8, 8), "c2r")
    assert inverse[-1].axes[-1] == 2 and len(inverse[-1].axes) >= 1
    every = plan_stages((2, 2), (0, 1), (8, 8), (8, 8))
    assert [s.grid for s in every] == [(2, 2), (4, 1), (1, 4)]


# -- the four-step 1-D FFT (`dapx.functions.fft_four_step`) ---------------------------------------

ONE_D = [
    (F.fft, "c"),
    (F.ifft, "c"),
    (F.rfft, "r"),
    (F.irfft, "c"),
    (F.hfft, "c"),
    (F.ihfft, "r"),
]


def close_1d(got, want, n, dtype):
    """``|got - want| <= c * log2(n) * eps * ||x||``-style bound, relative to ``||want||``."""
    assert got.shape == want.shape and got.dtype == want.dtype
    g = got.gather()
    eps = np.finfo(np.result_type(want.dtype, np.float32)).eps
    scale = max(np.linalg.norm(want), np.finfo(float).tiny)
    assert np.linalg.norm(g - want) <= 8 * max(math.log2(n), 1) * eps * scale


@pytest.mark.parametrize("m", [144, 35, 30])
@pytest.mark.parametrize("dist", ["b", "c"])
@pytest.mark.parametrize(("func", "kind"), ONE_D, ids=[f.__name__ for f, _ in ONE_D])
def test_four_step_against_numpy(backend, m, dist, func, kind):
    x = data((m,), np.complex128 if kind == "c" else np.float64, seed=m)
    a = on(x, backend, (backend.nranks,), dist)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dapx.GatherWarning)
        for n in (None, m - m // 3, m + m // 2):  # truncated and padded; none prime
            for norm in (None, "ortho", "forward", "backward"):
                want = func(x, n=n, norm=norm)
                close_1d(func(a, n=n, norm=norm), want, want.size, x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32])
def test_four_step_dtypes(backend, dtype):
    x = data((48,), dtype) if dtype != np.int32 else np.arange(48, dtype=np.int32) % 7
    a = on(x, backend, (backend.nranks,))
    for func, kind in ONE_D:
        if kind == "r" and np.dtype(dtype).kind == "c":
            with pytest.raises(TypeError):
                func(a)
            continue
        want = func(x)
        close_1d(func(a), want, 48, dtype)


def test_four_step_layouts_and_round_trips(backend):
    x = data((96,), np.float64)
    a = on(x, backend, (backend.nranks,), "c")
    f = F.fft(a)
    assert backend.nranks == 1 or f.distribution.maps[0].dist_type == "b"  # the last exchange
    assert_eq(F.ifft(f).real, x, rtol=1e-12, atol=1e-12)
    assert_eq(F.irfft(2 * F.rfft(a), n=96), 2 * x, rtol=1e-12, atol=1e-12)
    with fft_layout("input"):
        g = F.fft(a, norm="ortho")
        h = F.fft(a, n=90)  # another length: even blocks on the input's grid
    assert g.distribution == a.distribution
    assert_eq(g, F.fft(x, norm="ortho"), rtol=1e-10, atol=1e-10)
    assert h.distribution.grid_shape == a.distribution.grid_shape
    assert_eq(h, F.fft(x, n=90), rtol=1e-10, atol=1e-10)
    out = dapx.zeros(96, dtype=np.complex128, backend=backend)
    assert F.fft(a, out=out) is out
    assert_eq(out, F.fft(x), rtol=1e-10, atol=1e-10)


def test_four_step_factors():
    from dapx.functions.fft_four_step import factors

    assert factors(2**24, 2) == (4096, 4096)
    assert factors(2**25, 4) == (8192, 4096)
    assert factors(144, 6) == (12, 12) and factors(36, 6) == (6, 6)
    assert factors(2 * 97, 4) == (97, 2)  # no split with both >= 4: the nearest
    assert factors(97, 2) is None and factors(3, 1) is None


@pytest.mark.parametrize("func", [F.fft, F.ifft, F.rfft, F.ihfft])
def test_four_step_memory_bound(backend, func, monkeypatch):
    """Three exchanges, each rank receiving at most its share of the complex values."""
    n = 144  # 12 x 12, divisible by every count of 1-6 ranks
    x = data((n,), np.float64)
    a = on(x, backend, (backend.nranks,))
    received_bytes = ReceivedSizes(backend, monkeypatch).exchanges
    with warnings.catch_warnings():
        warnings.simplefilter("error", dapx.GatherWarning)
        f = func(a)
    monkeypatch.undo()
    share = n // backend.nranks * 16
    if backend.nranks > 1:
        assert len(received_bytes) == 3 * len(backend.local_ranks)
    assert max(received_bytes, default=0) <= share
    close_1d(f, func(x), n, x.dtype)


def test_one_dimensional_prime_length_is_made_whole(backend, monkeypatch):
    monkeypatch.setattr(dapx.config, "gather_warning_threshold", 1)
    x = data((13,), np.complex128)
    a = on(x, backend, (backend.nranks,))
    warn = pytest.warns(dapx.GatherWarning) if backend.nranks > 1 else warnings.catch_warnings()
    with warn:
        assert_eq(F.fft(a), F.fft(x), rtol=1e-10, atol=1e-10)
