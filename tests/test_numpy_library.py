"""NumPy's library functions on DistributedArrays, against NumPy, on every common layout.

Element-by-element functions, in-place writers, partitions and lexsort, and
the functions about arrays (memory overlap, types, printing, refusals). A
hidden gather fails the test (tests/conftest.py): parameters that dapx needs
whole are passed as NumPy arrays here, and gathering a distributed one is
checked to warn.
"""

from __future__ import annotations

import contextlib

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


def data(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 5, shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    return (rng.standard_normal(shape) * 3).astype(dtype)


SHAPES = [(0,), (9,), (4, 5), (2, 3, 4)]


# -- element by element ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_choose_select_piecewise(backend, kind, shape):
    idx = data(shape, np.int64) % 3
    x, y, z = data(shape, seed=1), data(shape, seed=2), data(shape, seed=3)
    i, a, b = dist(idx, kind, backend), dist(x, kind, backend), dist(y, kind, backend, seed=4)
    assert_eq(np.choose(i, [a, b, z]), np.choose(idx, [x, y, z]))
    assert_eq(np.choose(i, [1.5, b, -2.0]), np.choose(idx, [1.5, y, -2.0]))
    assert_eq(np.select([a > 1, b < 0], [a, b], -1.0), np.select([x > 1, y < 0], [x, y], -1.0))
    got = np.piecewise(a, [a < 0, a > 2], [lambda v: -v, lambda v: v**2, 7.0])
    assert_eq(got, np.piecewise(x, [x < 0, x > 2], [lambda v: -v, lambda v: v**2, 7.0]))
    with pytest.raises(ValueError, match="same length"):
        np.select([a > 0], [a, b])


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_digitize_interp_isin_polyval(backend, kind, shape):
    x = data(shape)
    a = dist(x, kind, backend)
    bins = np.array([-3.0, -1.0, 0.0, 2.5])
    for right in (False, True):
        assert_eq(np.digitize(a, bins, right), np.digitize(x, bins, right))
    xp, fp = np.linspace(-4, 4, 9), np.linspace(-4, 4, 9) ** 2
    assert_eq(np.interp(a, xp, fp), np.interp(x, xp, fp))
    assert_eq(np.interp(a, xp, fp, left=-1, right=99), np.interp(x, xp, fp, left=-1, right=99))
    ints = data(shape, np.int64)
    b = dist(ints, kind, backend)
    for invert in (False, True):
        assert_eq(np.isin(b, [0, 3], invert=invert), np.isin(ints, [0, 3], invert=invert))
    coefficients = [2.0, -1.0, 0.5]
    assert_eq(np.polyval(coefficients, a), np.polyval(coefficients, x))
    with pytest.warns(dapx.GatherWarning):
        np.digitize(a, dapx.asarray(bins, backend=backend))


def test_vander_and_ravel_multi_index(backend, kind):
    x = data((7,))
    a = dist(x, kind, backend)
    for n, inc in ((None, False), (3, True), (0, False)):
        assert_eq(np.vander(a, n, inc), np.vander(x, n, inc))
    rows, cols = data((10,), np.int64) % 3, data((10,), np.int64, seed=1) % 4
    got = np.ravel_multi_index((dist(rows, kind, backend), dist(cols, kind, backend)), (3, 4))
    assert_eq(got, np.ravel_multi_index((rows, cols), (3, 4)))
    assert_eq(
        np.ravel_multi_index((dist(rows + 5, kind, backend), cols), (3, 4), mode="wrap"),
        np.ravel_multi_index((rows + 5, cols), (3, 4), mode="wrap"),
    )


def test_datetimes(backend, kind):
    days = np.datetime64("2024-01-01") + np.arange(20).astype("timedelta64[D]")
    d = dist(days, kind, backend)
    assert_eq(np.is_busday(d), np.is_busday(days))
    offsets = np.arange(20) % 5
    assert_eq(
        np.busday_offset(d, offsets, roll="forward"),
        np.busday_offset(days, offsets, roll="forward"),
    )
    assert_eq(
        np.busday_count(d, d + np.timedelta64(9, "D")),
        np.busday_count(days, days + np.timedelta64(9, "D")),
    )
    assert_eq(np.datetime_as_string(d), np.datetime_as_string(days))


# -- partitions, lexsort, sort_complex ------------------------------------------------------------


@pytest.mark.parametrize("shape", [(11,), (4, 6)], ids=str)
def test_partition_and_argpartition(backend, kind, shape):
    x = data(shape)
    a = dist(x, kind, backend)
    for axis in (-1, 0, None):
        n = x.size if axis is None else shape[axis]
        for kth in (0, n // 2, -1, [1, n - 2]):
            got = np.partition(a, kth, axis).gather()
            ref = np.partition(x, kth, axis)
            for k in np.atleast_1d(kth):  # the kth elements are where a sort puts them
                np.testing.assert_array_equal(
                    np.take(got, k, axis=axis if axis is not None else 0),
                    np.take(ref, k, axis=axis if axis is not None else 0),
                )
            order = np.argpartition(a, kth, axis).gather()
            flat = x.ravel() if axis is None else x
            picked = np.take_along_axis(flat, order, axis=axis if axis is not None else 0)
            np.testing.assert_array_equal(picked, got)
    with pytest.raises(ValueError, match="out of bounds"):
        np.partition(a, x.size + 5, axis=None)


def test_lexsort_and_sort_complex(backend, kind):
    k1, k2 = data((15,), np.int64), data((15,), np.int64, seed=2)
    # Note: NumPy dispatches lexsort on a tuple of keys (a list is one opaque argument).
    keys = (dist(k1, kind, backend), dist(k2, kind, backend, seed=1))
    assert_eq(np.lexsort(keys), np.lexsort((k1, k2)))
    assert_eq(np.lexsort(keys[:1]), np.lexsort((k1,)))
    z = data((9,)) + 1j * data((9,), seed=5)
    assert_eq(np.sort_complex(dist(z, kind, backend)), np.sort_complex(z))
    assert_eq(np.sort_complex(dist(k1, kind, backend)), np.sort_complex(k1))


# -- writing in place -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(9,), (4, 5)], ids=str)
def test_put_place_putmask_copyto(backend, kind, shape):
    x = data(shape)
    for mode in ("raise", "wrap", "clip"):
        a, y = dist(x, kind, backend), x.copy()
        ind = [0, 3, -1] if mode == "raise" else [0, 3, x.size + 4, -x.size - 2]
        np.put(a, ind, [7.0, 8.0], mode=mode)
        np.put(y, ind, [7.0, 8.0], mode=mode)
        assert_eq(a, y)
    mask = x > 0
    for vals in ([1.0, 2.0], [5.0]):
        a, y = dist(x, kind, backend), x.copy()
        np.place(a, dist(mask, kind, backend), vals)
        np.place(y, mask, vals)
        assert_eq(a, y)
    for values in ([1.0, 2.0, 3.0], 9.0, data(shape, seed=7)):
        a, y = dist(x, kind, backend), x.copy()
        np.putmask(a, dist(mask, kind, backend), values)
        np.putmask(y, mask, values)
        assert_eq(a, y)
    a, y = dist(x, kind, backend), x.copy()
    src = data(shape, seed=3)
    np.copyto(a, dist(src, kind, backend, seed=2), where=dist(mask, kind, backend))
    np.copyto(y, src, where=mask)
    assert_eq(a, y)
    np.copyto(a, 4.0)
    np.copyto(y, 4.0)
    assert_eq(a, y)
    with pytest.raises(TypeError, match="Cannot cast"):
        np.copyto(dist(data(shape, np.int64), kind, backend), a)
    with pytest.raises(IndexError):
        np.put(dist(x, kind, backend), [x.size], [1.0])


@pytest.mark.parametrize("shape", [(4, 4), (7, 3), (3, 7), (3, 3, 3)], ids=str)
def test_fill_diagonal(backend, kind, shape):
    x = data(shape)
    for wrap in (False, True):
        for val in (5.0, [1.0, 2.0]):
            a, y = dist(x, kind, backend), x.copy()
            np.fill_diagonal(a, val, wrap)
            np.fill_diagonal(y, val, wrap)
            assert_eq(a, y)


def test_put_along_axis(backend, kind):
    x = data((4, 6))
    for axis in (0, 1):
        order = np.argsort(x, axis=axis)
        a, y = dist(x, kind, backend), x.copy()
        np.put_along_axis(a, order[:2] if axis == 0 else order[:, :2], -1.0, axis)
        np.put_along_axis(y, order[:2] if axis == 0 else order[:, :2], -1.0, axis)
        assert_eq(a, y)


# -- about arrays ---------------------------------------------------------------------------------


def test_memory_types_paths_and_printing(backend, kind):
    x = data((6, 5))
    a = dist(x, kind, backend)
    # Note: whether a slice is a view depends on the layout (an unstructured one copies);
    # .real is a view of the blocks on every layout.
    assert np.shares_memory(a, a.real) and np.shares_memory(a, a)
    assert np.may_share_memory(a, a.real)
    assert not np.shares_memory(a, a.copy())
    assert not np.shares_memory(a, x)
    assert np.min_scalar_type(a) == x.dtype
    assert np.min_scalar_type(dapx.asarray(np.int64(300), backend=backend)) == np.min_scalar_type(
        300
    )
    assert np.common_type(a, dist(data((3,), np.float32), kind, backend)) == np.common_type(
        x, x.astype(np.float32)
    )
    path, _ = np.einsum_path("ij,jk->ik", a, x.T, optimize="greedy")
    assert path == np.einsum_path("ij,jk->ik", x, x.T, optimize="greedy")[0]
    assert np.array_equiv(a, x) and np.array_equiv(a[:1], x[:1])
    assert np.array_equiv(a, np.broadcast_to(x[0], x.shape)) == np.array_equiv(x, x[0])
    assert not np.array_equiv(a, x[:, :2])
    assert np.array_repr(a) == repr(a) and np.array_str(a) == str(a)
    with pytest.raises(TypeError, match="gather explicitly"):
        np.array2string(a)


def test_index_arrays_from_shapes(backend):
    x = data((4, 4))
    a = dapx.asarray(x, backend=backend)
    for got, want in zip(np.tril_indices_from(a, 1), np.tril_indices_from(x, 1)):
        assert_eq(got, want)
    for got, want in zip(np.triu_indices_from(a), np.triu_indices_from(x)):
        assert_eq(got, want)
    for got, want in zip(np.diag_indices_from(a), np.diag_indices_from(x)):
        assert_eq(got, want)


def test_saving_points_to_the_parallel_writers(backend, tmp_path):
    a = dapx.arange(4.0, backend=backend)
    for save in (np.save, np.savez, np.savez_compressed, np.savetxt):
        with pytest.raises(TypeError, match="to_zarr"):
            save(tmp_path / "x", a)


# -- ufunc.at and ufunc.reduceat ------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(9,), (4, 5)], ids=str)
def test_ufunc_at(backend, kind, shape):
    x = data(shape)
    rng = np.random.default_rng(9)
    index = tuple(rng.integers(0, n, 12) for n in shape)  # repeats apply repeatedly
    for ufunc, b in ((np.add, 1.5), (np.multiply, data((12,), seed=4)), (np.negative, None)):
        a, y = dist(x, kind, backend), x.copy()
        if b is None:
            ufunc.at(a, index)
            ufunc.at(y, index)
        else:
            ufunc.at(a, index, b)
            ufunc.at(y, index, b)
        assert_eq(a, y)
    a, y = dist(x, kind, backend), x.copy()
    np.add.at(a, (slice(None),) * (len(shape) - 1) + ([0, 0, 1],), 2.0)
    np.add.at(y, (slice(None),) * (len(shape) - 1) + ([0, 0, 1],), 2.0)
    assert_eq(a, y)
    h = dapx.asarray(x, halo=1, backend=backend)
    np.add.at(h, index, 1.0)
    y = x.copy()
    np.add.at(y, index, 1.0)
    assert_eq(h, y)


@pytest.mark.parametrize("shape", [(10,), (4, 6)], ids=str)
def test_ufunc_reduceat(backend, kind, shape):
    x = data(shape)
    a = dist(x, kind, backend)
    # A 1-d array has no other axis to spread: it is made whole on one process.
    whole = pytest.warns(dapx.GatherWarning) if len(shape) == 1 else contextlib.nullcontext()
    for axis in range(len(shape)):
        n = shape[axis]
        for indices in ([0, 2, 3], [1, 0, n - 1], [0]):
            for ufunc in (np.add, np.maximum):
                with whole:
                    got = ufunc.reduceat(a, indices, axis=axis)
                assert_eq(got, ufunc.reduceat(x, indices, axis=axis))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.floats(-10, 10), min_size=1, max_size=30),
    st.lists(st.floats(-8, 8), min_size=2, max_size=12, unique=True),
)
def test_interp_property(points, sample):
    """Any query points against any increasing sample points, on 1 to 4 ranks."""
    x = np.array(points)
    xp = np.sort(np.array(sample))
    fp = np.cos(xp)
    for nranks in (1, 4):
        a = dapx.asarray(x, dist="c", backend=dapx.simulated(nranks))
        assert_eq(np.interp(a, xp, fp), np.interp(x, xp, fp))
        assert_eq(np.interp(a, xp, fp, left=-5.0, right=5.0), np.interp(x, xp, fp, -5.0, 5.0))
