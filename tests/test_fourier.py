"""`numpy.fft` on DistributedArrays, against NumPy, on every common layout.

Transforms run in slab or pencil stages (tests/test_fft_distributed.py checks
those grids and the memory bound); nothing is made whole on one process
except a 1-d array whose only axis is distributed and whose length does not
split for the four-step FFT (and its multi-axis transforms), which the suite's
gather threshold of 0 turns into an expected `dapx.GatherWarning`. Any other
GatherWarning fails the suite (``filterwarnings = ["error"]``).
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import dapx
from dapx.functions.fft_four_step import factors
from dapx.testing import assert_eq, layout

LAYOUTS = ("b", "b-irregular", "c", "c2", "u")
F = np.fft


@pytest.fixture(params=LAYOUTS)
def kind(request):
    return request.param


def data(shape, complex_=False, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


def dist(x, kind, backend):
    return dapx.asarray(x, backend=backend, **layout(kind, x.shape, backend.nranks))


def whole(a, n=None):
    """A GatherWarning is expected for a distributed 1-d array whose length does not split.

    1-axis transforms of length `n` (default: the array's) that split use the
    four-step FFT; multi-axis ones (``n=0``) are always made whole.
    """
    p = a.distribution.grid_shape[0] if a.ndim else 1
    split = n != 0 and factors(a.shape[0] if n is None else n, p) is not None
    gathered = a.ndim == 1 and p > 1 and not split
    return pytest.warns(dapx.GatherWarning) if gathered else contextlib.nullcontext()


@pytest.mark.parametrize("shape", [(8,), (5, 6), (3, 4, 6), (0, 4)], ids=str)
def test_one_axis_transforms(backend, kind, shape):
    x = data(shape, complex_=True)
    r = data(shape)
    a, b = dist(x, kind, backend), dist(r, kind, backend)
    for axis in range(-len(shape), len(shape)):
        if shape[axis] == 0:
            continue
        for n, norm in ((None, None), (5, "ortho"), (11, "forward")):
            kw = {"n": n, "axis": axis, "norm": norm}
            with whole(a, n):
                assert_eq(F.fft(a, **kw), F.fft(x, **kw), rtol=1e-10, atol=1e-12)
            with whole(a, n):
                assert_eq(F.ifft(a, **kw), F.ifft(x, **kw), rtol=1e-10, atol=1e-12)
            with whole(a, n):
                assert_eq(F.rfft(b, **kw), F.rfft(r, **kw), rtol=1e-10, atol=1e-12)
            with whole(a, n):
                assert_eq(F.irfft(a, **kw), F.irfft(x, **kw), rtol=1e-10, atol=1e-12)
            with whole(a, n):
                assert_eq(F.hfft(a, **kw), F.hfft(x, **kw), rtol=1e-10, atol=1e-12)
            with whole(a, n):
                assert_eq(F.ihfft(b, **kw), F.ihfft(r, **kw), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 6), (3, 4, 6), (2, 3, 4, 5)], ids=str)
def test_many_axes_transforms(backend, kind, shape):
    x = data(shape, complex_=True)
    r = data(shape)
    a, b = dist(x, kind, backend), dist(r, kind, backend)
    for f, g, src, src_np in (
        (F.fft2, F.fft2, a, x),
        (F.ifft2, F.ifft2, a, x),
        (F.rfft2, F.rfft2, b, r),
        (F.irfft2, F.irfft2, a, x),
    ):
        with whole(a, 0):
            assert_eq(f(src), g(src_np), rtol=1e-10, atol=1e-12)
        with whole(a, 0):
            assert_eq(f(src, axes=(1, 0)), g(src_np, axes=(1, 0)), rtol=1e-10, atol=1e-12)
        with whole(a, 0):
            assert_eq(f(src, s=(3, 8)), g(src_np, s=(3, 8)), rtol=1e-10, atol=1e-12)
    for f, src, src_np in ((F.fftn, a, x), (F.ifftn, a, x), (F.rfftn, b, r), (F.irfftn, a, x)):
        assert_eq(f(src), f(src_np), rtol=1e-10, atol=1e-12)
        axes = (0, len(shape) - 1)
        with whole(a, 0):
            assert_eq(
                f(src, axes=axes, norm="ortho"),
                f(src_np, axes=axes, norm="ortho"),
                rtol=1e-10,
                atol=1e-12,
            )
    with pytest.raises(ValueError, match="different lengths"):
        F.fftn(a, s=(2, 2), axes=(0,))


def test_round_trip_keeps_the_layout(backend, kind):
    x = data((6, 8, 5))
    a = dist(x, kind, backend)
    back = F.ifftn(F.fftn(a, axes=(1, 2)), axes=(1, 2))
    assert_eq(back.real, x, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(7,), (4, 5), (0, 3)], ids=str)
def test_shifts(backend, kind, shape):
    x = data(shape)
    a = dist(x, kind, backend)
    for f in (F.fftshift, F.ifftshift):
        assert_eq(f(a), f(x))
        assert_eq(f(a, axes=0), f(x, axes=0))
        assert_eq(f(a, axes=-1), f(x, axes=-1))
    assert_eq(F.ifftshift(F.fftshift(a)), x)
