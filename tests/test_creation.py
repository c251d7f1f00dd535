"""Creation functions against NumPy, over layouts x rank counts x shapes x dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import dapx
from dapx.testing import LAYOUTS, assert_eq, layout

SHAPES = [(0,), (1,), (7,), (13,), (4, 5), (0, 3), (3, 0), (5, 1), (2, 3, 4), (3, 1, 5)]
DTYPES = [np.float64, np.float32, np.int64, np.bool_, np.complex128]


def data(shape, dtype) -> np.ndarray:
    x = np.arange(int(np.prod(shape))).reshape(shape) * 3 - 5
    if np.dtype(dtype).kind == "b":
        return (x % 3 == 0).astype(dtype)
    if np.dtype(dtype).kind == "c":
        return x * (0.5 - 1j)
    return x.astype(dtype)


def check_blocks(a, x: np.ndarray) -> None:
    """Each rank holds exactly its global indices of `x`, in local order."""
    for r in a.backend.local_ranks:
        block = a.local(r)
        assert block.shape == a.distribution.local_shape(r)
        np.testing.assert_array_equal(block, x[np.ix_(*a.distribution.global_indices(r))])


# -- asarray -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", LAYOUTS)
def test_asarray(backend, kind):
    for shape in SHAPES:
        kw = layout(kind, shape, backend.nranks, seed=len(shape))
        for dtype in DTYPES:
            x = data(shape, dtype)
            a = dapx.asarray(x, backend=backend, **kw)
            assert_eq(a, x)
            check_blocks(a, x)
            assert a.distribution == dapx.Distribution.create(shape, nranks=backend.nranks, **kw)
            assert not any(np.shares_memory(b, x) for b in a.locals.values())


def test_asarray_conversions(backend):
    x = [[1, 2, 3], [4, 5, 6]]
    assert_eq(dapx.asarray(x, backend=backend), np.asarray(x))
    assert_eq(dapx.asarray(x, np.float32, backend=backend), np.asarray(x, np.float32))
    s = dapx.asarray(2.5, backend=backend)
    assert s.shape == () and s.dtype == np.float64 and float(s) == 2.5
    assert all(s.local(r)[()] == 2.5 for r in backend.local_ranks)
    a = dapx.asarray(np.arange(10), backend=backend)
    assert dapx.asarray(a) is a
    c = dapx.asarray(a, dist="c")
    assert c.distribution.dist_types == ("c",)
    assert_eq(c, np.arange(10))
    with pytest.raises(ValueError, match=r"grid needs one entry per dimension \(2\)"):
        dapx.asarray(np.zeros((2, 3)), backend=backend, dist="b", grid=(1, 1, 1))
    with pytest.raises(ValueError, match="dist needs one entry per dimension"):
        dapx.asarray(np.zeros((2, 3)), backend=backend, dist=("b", "c", "c"))
    with pytest.raises(TypeError, match="backend must be a dapx backend"):
        dapx.asarray([1, 2], backend="simulated")


# -- zeros, ones, empty, full and the *_like functions -------------------------------------------


@pytest.mark.parametrize("kind", LAYOUTS)
def test_filled_arrays(backend, kind):
    for shape in SHAPES:
        kw = layout(kind, shape, backend.nranks, seed=1)
        for dtype in DTYPES:
            assert_eq(dapx.zeros(shape, dtype, backend=backend, **kw), np.zeros(shape, dtype))
            assert_eq(dapx.ones(shape, dtype, backend=backend, **kw), np.ones(shape, dtype))
            assert_eq(dapx.full(shape, 3, dtype, backend=backend, **kw), np.full(shape, 3, dtype))
            e = dapx.empty(shape, dtype, backend=backend, **kw)
            assert e.shape == shape and e.dtype == np.dtype(dtype)
            assert all(e.local(r).shape == e.distribution.local_shape(r) for r in e.locals)


def test_filled_defaults(backend):
    assert_eq(dapx.zeros(5, backend=backend), np.zeros(5))
    assert_eq(dapx.ones((2, 3), backend=backend), np.ones((2, 3)))
    assert_eq(dapx.full((4,), 2.5, backend=backend), np.full((4,), 2.5))
    assert_eq(dapx.full((4,), True, backend=backend), np.full((4,), True))
    assert_eq(dapx.full((3, 2), 1 + 2j, backend=backend), np.full((3, 2), 1 + 2j))
    assert_eq(dapx.zeros((), backend=backend), np.zeros(()))
    for bad in [(-1,), (2.5,), (True, 3)]:
        with pytest.raises(ValueError, match="shape must be non-negative integers"):
            dapx.zeros(bad, backend=backend)


@pytest.mark.parametrize("kind", ["b", "b-irregular", "c2", "u"])
def test_like_functions(backend, kind):
    shape = (6, 5)
    x = data(shape, np.float32)
    a = dapx.asarray(x, backend=backend, **layout(kind, shape, backend.nranks))
    cases = [
        (dapx.zeros_like(a), np.zeros_like(x)),
        (dapx.ones_like(a), np.ones_like(x)),
        (dapx.full_like(a, 4), np.full_like(x, 4)),
        (dapx.zeros_like(a, np.int64), np.zeros_like(x, np.int64)),
        (dapx.full_like(a, 1.5, dtype=np.complex128), np.full_like(x, 1.5, np.complex128)),
    ]
    for got, expected in cases:
        assert got.distribution == a.distribution and got.backend == backend
        assert_eq(got, expected)
    e = dapx.empty_like(a)
    assert e.distribution == a.distribution and e.dtype == np.float32
    reshaped = dapx.ones_like(a, shape=(3, 4, 2))
    assert_eq(reshaped, np.ones_like(x, shape=(3, 4, 2)))
    cyclic = dapx.zeros_like(a, dist="c")
    assert cyclic.distribution.dist_types == ("c", "c")
    assert_eq(cyclic, np.zeros_like(x))
    other = dapx.simulated(2)
    moved = dapx.zeros_like(a, backend=other, dist="b")
    assert moved.backend == other
    assert_eq(moved, np.zeros_like(x))


# -- arange, linspace ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", LAYOUTS)
def test_arange(backend, kind):
    cases = [
        ((10,), {}),
        ((0,), {}),
        ((3, 17), {}),
        ((17, 3, -2), {}),
        ((2, 3), {}),
        ((5, 2), {}),
        ((0.5, 4.0, 0.25), {}),
        ((1, 11, 3), {"dtype": np.float32}),
        ((-3, 3), {"dtype": np.complex128}),
        ((20,), {"dtype": np.int32}),
    ]
    for args, kwargs in cases:
        expected = np.arange(*args, **kwargs)
        kw = layout(kind, expected.shape, backend.nranks, seed=expected.size)
        a = dapx.arange(*args, backend=backend, **kwargs, **kw)
        assert_eq(a, expected)
        check_blocks(a, expected)
    with pytest.raises(ZeroDivisionError):
        dapx.arange(0, 5, 0, backend=backend)


@pytest.mark.parametrize("kind", LAYOUTS)
def test_linspace(backend, kind):
    cases = [
        ((0, 1), {"num": 7}),
        ((0, 1), {"num": 0}),
        ((2, 3), {"num": 1}),
        ((2, 3), {"num": 1, "endpoint": False}),
        ((-1, 5), {}),
        ((-1, 5), {"num": 10, "endpoint": False}),
        ((3, 3), {"num": 4}),
        ((0, 10), {"num": 13, "dtype": np.int64}),
        ((1, -1), {"num": 9, "dtype": np.float32}),
        ((0, 1j), {"num": 5}),
    ]
    for args, kwargs in cases:
        expected = np.linspace(*args, **kwargs)
        kw = layout(kind, expected.shape, backend.nranks, seed=expected.size)
        a = dapx.linspace(*args, backend=backend, **kwargs, **kw)
        assert_eq(a, expected)
    with pytest.raises(ValueError, match="-1"):
        dapx.linspace(0, 1, -1, backend=backend)


# -- fromfunction --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", LAYOUTS)
def test_fromfunction_calls_each_rank_with_its_own_indices(backend, kind):
    for shape in [(7,), (4, 5), (0, 3), (2, 3, 4)]:
        calls: list = []

        def f(*idx, scale=1, calls=calls):
            calls.append([i.copy() for i in idx])
            return scale * sum(i * 10**k for k, i in enumerate(idx))

        kw = layout(kind, shape, backend.nranks, seed=2)
        a = dapx.fromfunction(f, shape, backend=backend, scale=2, **kw)
        expected = np.fromfunction(
            lambda *idx: 2 * sum(i * 10**k for k, i in enumerate(idx)), shape
        )
        assert_eq(a, expected)
        assert len(calls) == len(backend.local_ranks)
        for r, idx in zip(backend.local_ranks, calls):
            own = np.meshgrid(*a.distribution.global_indices(r), indexing="ij")
            assert len(idx) == len(shape)
            for got, want in zip(idx, own):
                assert got.dtype == np.float64 and got.shape == a.distribution.local_shape(r)
                np.testing.assert_array_equal(got, want)


def test_fromfunction_dtype(backend):
    a = dapx.fromfunction(lambda i, j: i * 3 + j, (4, 3), dtype=int, backend=backend, dist="c")
    assert_eq(a, np.fromfunction(lambda i, j: i * 3 + j, (4, 3), dtype=int))
    flags = dapx.fromfunction(lambda i: i % 2 == 0, (5,), backend=backend)
    assert_eq(flags, np.fromfunction(lambda i: i % 2 == 0, (5,)))


# -- from_distarray and the DAP export -----------------------------------------------------------


class Producer:
    """A minimal DAP producer: one rank's dict."""

    def __init__(self, distbuffer):
        self._distbuffer = distbuffer

    def __distarray__(self):
        return self._distbuffer


@pytest.mark.parametrize("kind", LAYOUTS)
def test_from_distarray_round_trip_without_copies(backend, kind):
    shape = (5, 4)
    x = data(shape, np.float64)
    a = dapx.asarray(x, backend=backend, **layout(kind, shape, backend.nranks))
    ranks = backend.local_ranks
    exports = [a.distarray(r) for r in ranks]
    for source in (exports, [Producer(d) for d in exports]):
        b = dapx.from_distarray(source, backend=backend)
        assert b.distribution == a.distribution and b.dtype == a.dtype
        assert_eq(b, x)
        for r in ranks:
            if a.local(r).size:
                assert np.shares_memory(b.local(r), a.local(r))  # import: no copy
                assert np.shares_memory(b.distarray(r)["buffer"], b.local(r))  # export: no copy
    for r in ranks:
        a.local(r)[...] = -1  # writes show through the wrapped buffers
        assert (b.local(r) == -1).all()
    assert_eq(b, np.full(shape, -1.0))


def test_from_distarray_single_rank_forms():
    one = dapx.simulated(1)
    x = np.arange(12.0).reshape(3, 4)
    a = dapx.asarray(x, backend=one)
    exported = a.__distarray__()
    assert exported["__version__"] == "0.10.0"
    assert np.shares_memory(exported["buffer"], a.local())
    for source in (a, exported, Producer(exported), [exported]):
        b = dapx.from_distarray(source, backend=one)
        assert np.shares_memory(b.local(), a.local())
        assert_eq(b, x)


def test_from_distarray_zero_d(backend):
    s = dapx.asarray(np.float32(1.5), backend=backend)
    b = dapx.from_distarray([s.distarray(r) for r in backend.local_ranks], backend=backend)
    assert b.shape == () and b.dtype == np.float32 and float(b) == 1.5


def test_dunder_distarray_needs_one_local_rank():
    a = dapx.arange(8, backend=dapx.simulated(4))
    with pytest.raises(ValueError, match=r"holds 4 .*call a\.distarray\(rank\)"):
        a.__distarray__()
    with pytest.raises(ValueError, match="pass rank= to choose one"):
        a.distarray()
    with pytest.raises(ValueError, match="rank 7 is not held by this process"):
        a.distarray(7)


def test_from_distarray_rejects_bad_input():
    b = dapx.simulated(2)
    a = dapx.arange(6.0, backend=b)
    good0, good1 = a.distarray(0), a.distarray(1)
    bad_cases = [
        ([dict(good0, __version__="9.9"), good1], "__version__"),
        ([{k: v for k, v in good0.items() if k != "buffer"}, good1], "lacks required key"),
        ([dict(good0, buffer=np.zeros(5)), good1], "stop - start"),
        ([good0, 5], "must be a dict"),
        ([good0, good0], "proc_grid_rank"),
        ([good0, dict(good1, buffer=good1["buffer"].astype(np.float32))], "disagree on the buffer"),
    ]
    for dicts, match in bad_cases:
        with pytest.raises(dapx.DAPError, match=match):
            dapx.from_distarray(dicts, backend=b)
    with pytest.raises(ValueError, match="needs one distbuffer for each, got 1"):
        dapx.from_distarray([good0], backend=b)
