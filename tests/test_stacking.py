"""Stacking, splitting, flipping and NumPy's Python-level elementwise functions, against NumPy.

Each function runs on the same data as a NumPy array (the oracle) and as a
DistributedArray in every common layout (even and irregular block, cyclic,
block-cyclic, unstructured) on 1 to 6 simulated ranks (or under mpiexec),
0-d to 3-d where the function allows, size-0 arrays and empty local blocks
included. A hidden gather fails the test (tests/conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import dapx
from dapx.testing import assert_eq
from dapx.testing import distribute as dist

LAYOUTS = ("b", "b-irregular", "c", "c2", "u")
DTYPES = (np.float64, np.int64, np.bool_, np.complex128)
SHAPES = [(0,), (7,), (1, 4), (5, 6), (3, 4, 5), (2, 0, 3)]


@pytest.fixture(params=LAYOUTS)
def kind(request):
    return request.param


def data(shape, dtype=np.float64, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind == "i":
        return rng.integers(-20, 20, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def assert_all(got, expected):
    assert type(got) is type(expected) or isinstance(got, dapx.DistributedArray)
    if isinstance(expected, (list, tuple)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_eq(g, e)
    else:
        assert_eq(got, expected)


# -- atleast_nd, stacks, append -------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (4,), (3, 5), (2, 3, 4)], ids=str)
def test_atleast_nd(backend, kind, shape):
    x = data(shape, seed=len(shape))
    a = dist(x, kind, backend)
    for f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
        assert_eq(f(a), f(x))
        got, want = f(a, a), f(x, x)
        assert len(got) == 2
        for g, w in zip(got, want):
            assert_eq(g, w)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6,), (4, 5), (3, 4, 2)], ids=str)
def test_stacks(backend, kind, shape, dtype):
    x, y = data(shape, dtype, 1), data(shape, dtype, 2)
    a, b = dist(x, kind, backend), dist(y, kind, backend, seed=3)
    for f in (np.hstack, np.vstack, np.dstack):
        assert_eq(f([a, b]), f([x, y]))
        assert_eq(f((a, y, b)), f((x, y, y)))  # NumPy operands mixed in
    if len(shape) <= 2:
        assert_eq(np.column_stack([a, b]), np.column_stack([x, y]))
    assert_eq(np.append(a, b), np.append(x, y))
    assert_eq(np.append(a, b, axis=-1), np.append(x, y, axis=-1))
    assert_eq(np.hstack([a, b], dtype=np.complex128), np.hstack([x, y], dtype=np.complex128))


def test_stacks_refuse_what_numpy_refuses(backend):
    a = dapx.arange(4, backend=backend)
    with pytest.raises(TypeError, match="sequence"):
        np.hstack(a)
    with pytest.raises(ValueError, match="dimension"):
        np.vstack([a, dapx.arange(5, backend=backend)])


# -- splitting ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_array_split_and_split(backend, kind, shape):
    x = data(shape, np.int64)
    a = dist(x, kind, backend)
    for axis in range(len(shape)):
        for sections in (1, 2, 3, [1, 3], [0, 2, 2, 9]):
            assert_all(np.array_split(a, sections, axis), np.array_split(x, sections, axis))
        n = shape[axis]
        if n and n % 2 == 0:
            assert_all(np.split(a, 2, axis), np.split(x, 2, axis))
        elif n:
            with pytest.raises(ValueError, match="equal division"):
                np.split(a, 2, axis)


def test_hsplit_vsplit_dsplit(backend, kind):
    x = data((4, 6, 2))
    a = dist(x, kind, backend)
    assert_all(np.hsplit(a, 3), np.hsplit(x, 3))
    assert_all(np.vsplit(a, [1, 3]), np.vsplit(x, [1, 3]))
    assert_all(np.dsplit(a, 2), np.dsplit(x, 2))
    v = dist(data((6,)), kind, backend)
    assert_all(np.hsplit(v, 2), np.hsplit(data((6,)), 2))
    with pytest.raises(ValueError, match="2 or more"):
        np.vsplit(v, 2)
    with pytest.raises(ValueError, match="3 or more"):
        np.dsplit(dist(data((4, 6)), kind, backend), 2)
    with pytest.raises(ValueError, match="larger than 0"):
        np.array_split(v, 0)


# -- flipping -------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_flips(backend, kind, shape):
    x = data(shape, np.complex128)
    a = dist(x, kind, backend)
    assert_eq(np.flip(a), np.flip(x))
    for axis in range(len(shape)):
        assert_eq(np.flip(a, axis), np.flip(x, axis))
        assert_eq(np.flip(a, -axis - 1), np.flip(x, -axis - 1))
    assert_eq(np.flipud(a), np.flipud(x))
    if len(shape) >= 2:
        assert_eq(np.fliplr(a), np.fliplr(x))
        assert_eq(np.flip(a, (0, 1)), np.flip(x, (0, 1)))
        for k in range(-1, 6):
            assert_eq(np.rot90(a, k), np.rot90(x, k))
            assert_eq(np.rot90(a, k, axes=(1, 0)), np.rot90(x, k, axes=(1, 0)))
    else:
        with pytest.raises(ValueError, match=">= 2-d"):
            np.fliplr(a)


def test_flip_mirrors_the_blocks(backend):
    """A flipped block axis mirrors its bounds: each rank gets its mirror rank's block, reversed."""
    x = np.arange(11.0)
    a = dapx.asarray(x, backend=backend)
    f = np.flip(a)
    P = backend.nranks
    bounds = np.asarray(a.distribution.maps[0].bounds)
    assert np.array_equal(f.distribution.maps[0].bounds, x.size - bounds[::-1])
    for r in backend.local_ranks:
        assert np.array_equal(f.local(r), x[bounds[P - 1 - r] : bounds[P - r]][::-1])
        f.local(r)[...] = -1.0  # a new array: the input is untouched
    assert np.array_equal(a.gather(), x)


def test_flip_2d_grid_mirrors_only_the_flipped_axis(backend):
    if backend.nranks != 4:
        pytest.skip("a 2 x 2 grid")
    x = data((5, 7))
    a = dapx.asarray(x, dist=("b", "b"), grid=(2, 2), backend=backend)
    for axis in (0, 1, None):
        f = np.flip(a, axis)
        assert_eq(f, np.flip(x, axis))
        flipped = (0, 1) if axis is None else (axis,)
        for k in range(2):
            bounds = np.asarray(a.distribution.maps[k].bounds)
            want = x.shape[k] - bounds[::-1] if k in flipped else bounds
            assert np.array_equal(f.distribution.maps[k].bounds, want)


def test_rot90_errors(backend):
    a = dist(data((3, 4)), "b", backend)
    with pytest.raises(ValueError, match="len"):
        np.rot90(a, axes=(0,))
    with pytest.raises(ValueError, match="different"):
        np.rot90(a, axes=(1, 1))


# -- elementwise functions NumPy writes in Python -------------------------------------------------


@pytest.mark.parametrize("shape", [(), (0,), (9,), (4, 5)], ids=str)
@pytest.mark.filterwarnings("ignore:(invalid value|overflow) encountered:RuntimeWarning")
def test_mathematical(backend, kind, shape):
    x = data(shape) * 3
    if x.size > 3:
        x.flat[:4] = [np.nan, np.inf, -np.inf, 0.0]
    z = data(shape, np.complex128)
    a = dist(x, kind, backend) if shape else dapx.asarray(x, backend=backend)
    c = dist(z, kind, backend) if shape else dapx.asarray(z, backend=backend)
    for f in (np.sinc, np.fix, np.isposinf, np.isneginf, np.nan_to_num):
        assert_eq(f(a), f(x))
    assert_eq(np.i0(np.nan_to_num(a)), np.i0(np.nan_to_num(x)))
    assert_eq(np.angle(c), np.angle(z))
    assert_eq(np.angle(c, deg=True), np.angle(z, deg=True))
    assert_eq(np.angle(a), np.angle(x))
    kw = {"nan": -1.0, "posinf": 7.0, "neginf": -7.0}
    assert_eq(np.nan_to_num(a, **kw), np.nan_to_num(x, **kw))
    b = a.copy()
    assert np.nan_to_num(b, copy=False, **kw) is b
    assert_eq(b, np.nan_to_num(x, **kw))
    assert_eq(np.nan_to_num(c), np.nan_to_num(z))


def test_real_if_close(backend, kind):
    z = data((10,), np.complex128)
    c = dist(z, kind, backend)
    assert_eq(np.real_if_close(c), np.real_if_close(z))  # stays complex
    almost = z.real + 1e-18j
    d = dist(almost, kind, backend)
    assert_eq(np.real_if_close(d), np.real_if_close(almost))  # becomes real
    assert_eq(np.real_if_close(d, tol=1e-20), np.real_if_close(almost, tol=1e-20))
    x = dist(z.real, kind, backend)
    assert np.real_if_close(x) is x


# -- triangles and diagonals ----------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4,), (5, 6), (0, 3), (3, 4, 5)], ids=str)
def test_tril_triu(backend, kind, shape):
    x = data(shape, np.int64)
    a = dist(x, kind, backend)
    for k in (-2, 0, 1, 7):
        assert_eq(np.tril(a, k), np.tril(x, k))
        assert_eq(np.triu(a, k), np.triu(x, k))


def test_tril_keeps_the_layout(backend):
    a = dist(data((6, 6)), "c2", backend)
    assert np.tril(a).distribution == a.distribution


@pytest.mark.parametrize("shape", [(5, 6), (6, 4), (0, 3), (3, 4, 5), (2, 3, 3, 2)], ids=str)
def test_diagonal_and_trace(backend, kind, shape):
    x = data(shape, np.complex128)
    a = dist(x, kind, backend)
    for offset in (-7, -1, 0, 2):
        for axes in [(0, 1), (1, 0), (-1, 0)] if len(shape) > 2 else [(0, 1), (1, 0)]:
            assert_eq(np.diagonal(a, offset, *axes), np.diagonal(x, offset, *axes))
            assert_eq(np.trace(a, offset, *axes), np.trace(x, offset, *axes))
    assert_eq(np.trace(a, dtype=np.complex64), np.trace(x, dtype=np.complex64))
    with pytest.raises(ValueError, match="cannot be the same"):
        np.diagonal(a, 0, 1, 1)
    with pytest.raises(ValueError, match="at least two"):
        np.diagonal(dist(data((4,)), kind, backend))


@pytest.mark.parametrize("n", [0, 1, 6])
def test_diag_and_diagflat(backend, kind, n):
    v = data((n,), np.int64)
    a = dist(v, kind, backend)
    for k in (-2, 0, 3):
        assert_eq(np.diag(a, k), np.diag(v, k))
        assert_eq(np.diagflat(a, k), np.diagflat(v, k))
    m = data((4, 5))
    assert_eq(np.diag(dist(m, kind, backend), 1), np.diag(m, 1))
    assert_eq(np.diagflat(dist(m, kind, backend)), np.diagflat(m))
    with pytest.raises(ValueError, match="1- or 2-d"):
        np.diag(dist(data((2, 2, 2)), kind, backend))


# -- take, compress, extract ----------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(9,), (4, 6), (3, 4, 5)], ids=str)
def test_take(backend, kind, shape):
    x = data(shape, np.float64)
    a = dist(x, kind, backend)
    rng = np.random.default_rng(5)
    for axis in (None, *range(len(shape))):
        n = x.size if axis is None else shape[axis]
        idx = rng.integers(-n, n, 7)
        assert_eq(np.take(a, idx, axis), np.take(x, idx, axis))
        assert_eq(np.take(a, [[0, n - 1], [1, 1]], axis), np.take(x, [[0, n - 1], [1, 1]], axis))
        wide = rng.integers(-3 * n, 3 * n, 5)
        for mode in ("wrap", "clip"):
            assert_eq(np.take(a, wide, axis, mode=mode), np.take(x, wide, axis, mode=mode))
        positive = np.abs(idx) % n
        distributed = dapx.asarray(positive, backend=backend)
        assert_eq(np.take(a, distributed, axis), np.take(x, positive, axis))
    with pytest.raises(IndexError):
        np.take(a, [x.size])
    with pytest.raises(ValueError, match="clipmode"):
        np.take(a, [0], mode="bogus")


@pytest.mark.parametrize("shape", [(9,), (4, 6)], ids=str)
def test_compress_and_extract(backend, kind, shape):
    x = data(shape, np.int64)
    a = dist(x, kind, backend)
    for axis in (None, *range(len(shape))):
        n = x.size if axis is None else shape[axis]
        for cond in (x.ravel()[:n] > 0, (x.ravel()[: max(n - 2, 0)] > 0)):
            assert_eq(np.compress(cond, a, axis), np.compress(cond, x, axis))
            d = dapx.asarray(cond, backend=backend)
            assert_eq(np.compress(d, a, axis), np.compress(cond, x, axis))
    with pytest.raises(IndexError):
        np.compress(np.ones(x.size + 1, bool), a)
    mask = x % 3 == 0
    assert_eq(np.extract(mask, a), np.extract(mask, x))
    assert_eq(np.extract(dist(mask, kind, backend), a), np.extract(mask, x))


# -- cumulative_sum/prod, ediff1d, trapezoid ------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5)], ids=str)
def test_cumulative(backend, kind, shape):
    x = data(shape, np.int64)
    a = dist(x, kind, backend) if shape else dapx.asarray(x, backend=backend)
    axes = [None] if len(shape) <= 1 else [0, 1, -1]
    for axis in axes:
        for f in (np.cumulative_sum, np.cumulative_prod):
            for initial in (False, True):
                kw = {"axis": axis, "include_initial": initial}
                assert_eq(f(a, **kw), f(x, **kw))
            assert_eq(f(a, axis=axis, dtype=np.float32), f(x, axis=axis, dtype=np.float32))
    if len(shape) > 1:
        with pytest.raises(ValueError, match="axis"):
            np.cumulative_sum(a)


@pytest.mark.parametrize("shape", [(1,), (8,), (3, 4)], ids=str)
def test_ediff1d(backend, kind, shape):
    x = data(shape, np.int64)
    a = dist(x, kind, backend)
    assert_eq(np.ediff1d(a), np.ediff1d(x))
    assert_eq(np.ediff1d(a, to_end=[9, 8], to_begin=-1), np.ediff1d(x, to_end=[9, 8], to_begin=-1))
    ends = dapx.asarray(np.array([5, 6]), backend=backend)
    assert_eq(np.ediff1d(a, to_end=ends), np.ediff1d(x, to_end=[5, 6]))
    with pytest.raises(TypeError, match="same_kind"):
        np.ediff1d(a, to_end=[0.5])


@pytest.mark.parametrize("shape", [(2,), (9,), (4, 6), (2, 3, 4)], ids=str)
def test_trapezoid(backend, kind, shape):
    y = data(shape)
    a = dist(y, kind, backend)
    for axis in range(-len(shape), len(shape)):
        n = shape[axis]
        assert_eq(np.trapezoid(a, axis=axis), np.trapezoid(y, axis=axis))
        assert_eq(np.trapezoid(a, dx=0.5, axis=axis), np.trapezoid(y, dx=0.5, axis=axis))
        xs = np.sort(data((n,), seed=9))
        assert_eq(np.trapezoid(a, xs, axis=axis), np.trapezoid(y, xs, axis=axis))
        distributed = dapx.asarray(xs, backend=backend, dist="c")
        assert_eq(np.trapezoid(a, distributed, axis=axis), np.trapezoid(y, xs, axis=axis))
    full = data(shape, seed=4)
    assert_eq(np.trapezoid(a, dist(full, kind, backend)), np.trapezoid(y, full))
