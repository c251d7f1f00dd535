"""Indexing and assignment of distributed arrays, with NumPy on the gathered data as oracle."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dapx
from dapx.core import indexing
from dapx.core.redistribution import gather
from dapx.layout.distribution import Distribution
from dapx.layout.maps import BlockMap

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
DTYPES = [np.float64, np.float32, np.int64, np.bool_, np.complex128]


# -- strategies ---------------------------------------------------------------------------------


def _factorisations(n: int, k: int):
    if k == 1:
        return [(n,)]
    return [
        (d, *rest) for d in range(1, n + 1) if n % d == 0 for rest in _factorisations(n // d, k - 1)
    ]


@st.composite
def dim_specs(draw, n: int, p: int):
    """A dimension spec of one kind: block, irregular block, cyclic, block-cyclic, unstructured."""
    kind = draw(st.sampled_from(["b", "irregular", "c", "bc", "u"]))
    if kind == "b":
        return "b"
    if kind == "irregular":
        cuts = sorted(draw(st.lists(st.integers(0, n), min_size=p - 1, max_size=p - 1)))
        return {"dist": "b", "bounds": [0, *cuts, n]}
    if kind == "c":
        return "c"
    if kind == "bc":
        return {"dist": "c", "block_size": draw(st.integers(2, 4))}
    owner = draw(st.lists(st.integers(0, p - 1), min_size=n, max_size=n))
    perm = np.array(draw(st.permutations(range(n))), dtype=np.intp)
    member = np.zeros((p, n), bool)
    member[owner, np.arange(n)] = True
    if draw(st.booleans()):  # not one-to-one: extra copies
        extra = draw(st.lists(st.integers(0, p - 1), min_size=n, max_size=n))
        member[extra, np.arange(n)] = True
    return {"dist": "u", "indices": [perm[member[c, perm]] for c in range(p)]}


@st.composite
def arrays(draw, backend, min_ndim=1, max_ndim=3, max_size=12, dtype=None):
    """(distributed array, the same data in NumPy)."""
    ndim = draw(st.integers(min_ndim, max_ndim))
    shape = tuple(draw(st.lists(st.integers(0, max_size), min_size=ndim, max_size=ndim)))
    grid = draw(st.sampled_from(_factorisations(backend.nranks, ndim)))
    specs = [draw(dim_specs(n, p)) for n, p in zip(shape, grid)]
    dist = Distribution.create(shape, specs, grid)
    dtype = np.dtype(draw(st.sampled_from(DTYPES)) if dtype is None else dtype)
    data = np.arange(1, math.prod(shape) + 1).reshape(shape)
    data = (data % 2 == 1) if dtype.kind == "b" else (data * (1 + 1j if dtype.kind == "c" else 1))
    data = data.astype(dtype)
    return dapx.asarray(data, dist=dist, backend=backend), data


def _slices(n):
    ends = st.one_of(st.none(), st.integers(-n - 3, n + 3))
    steps = st.one_of(st.none(), st.integers(-4, 4).filter(bool))
    return st.builds(slice, ends, ends, steps)


def _basic_entry(n):
    return st.one_of(st.integers(-n, n - 1), _slices(n)) if n else _slices(n)


@st.composite
def basic_keys(draw, shape):
    """Random basic keys: ints, slices, at most one Ellipsis, None anywhere."""
    ndim = len(shape)
    front = draw(st.integers(0, ndim))
    key = [draw(_basic_entry(n)) for n in shape[:front]]
    if draw(st.booleans()):
        back = draw(st.integers(0, ndim - front))
        key += [Ellipsis] + [draw(_basic_entry(n)) for n in shape[ndim - back :]]
    for _ in range(draw(st.integers(0, 2))):
        key.insert(draw(st.integers(0, len(key))), None)
    if len(key) == 1 and draw(st.booleans()):
        return key[0]
    return tuple(key)


def check_layout(r):
    """Local blocks match the result's distribution."""
    if r.ndim:
        for k in r.backend.local_ranks:
            assert r.local(k).shape == r.distribution.local_shape(k)
            assert r.local(k).dtype == r.dtype


def check_get(a, data, key):
    expected = data[key]
    r = a[key]
    assert isinstance(r, dapx.DistributedArray)
    assert r.shape == np.shape(expected)
    assert r.dtype == data.dtype
    check_layout(r)
    np.testing.assert_array_equal(gather(r), expected)
    return r


def check_set(a, data, key, value):
    expected = data.copy()
    expected[key] = gather(value) if isinstance(value, dapx.DistributedArray) else value
    a[key] = value
    np.testing.assert_array_equal(gather(a), expected)
    data[...] = expected


def values_for(draw, backend, shape, dtype, lead=True):
    """A scalar, a NumPy array or a distributed array broadcastable to `shape`."""
    kind = draw(st.sampled_from(["scalar", "numpy", "row", "dist"]))
    if kind == "scalar":
        return dtype.type(draw(st.integers(-5, 5)))
    full = (np.arange(math.prod(shape)).reshape(shape) + 100).astype(dtype)
    if kind == "row" and shape:
        row = (np.arange(shape[-1]) + 100).astype(dtype)
        return row[None] if lead else row  # broadcasts (with an extra leading 1)
    if kind == "dist" and shape:
        grid = draw(st.sampled_from(_factorisations(backend.nranks, len(shape))))
        specs = [draw(dim_specs(n, p)) for n, p in zip(shape, grid)]
        return dapx.asarray(full, dist=Distribution.create(shape, specs, grid), backend=backend)
    return full


# -- basic indexing -------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_basic_getitem_matches_numpy(backend, data):
    a, x = data.draw(arrays(backend))
    key = data.draw(basic_keys(x.shape))
    r = check_get(a, x, key)
    if r.ndim and all(isinstance(m, BlockMap) for m in a.distribution.maps):
        for k in backend.local_ranks:
            if r.local(k).size:
                assert np.shares_memory(r.local(k), a.local(k))


@SETTINGS
@given(data=st.data())
def test_basic_getitem_moves_no_data(backend, data, monkeypatch):
    a, x = data.draw(arrays(backend))
    key = data.draw(basic_keys(x.shape))

    def fail(*args):
        raise AssertionError("basic indexing must not exchange data")

    with monkeypatch.context() as m:
        m.setattr(backend, "alltoallv", fail)
        m.setattr(backend, "allgather", fail)
        r = a[key]
    np.testing.assert_array_equal(gather(r), x[key])


def test_views_write_through(backend):
    x = np.arange(48.0).reshape(6, 8)
    a = dapx.asarray(x, grid=(backend.nranks, 1), backend=backend)
    v = a[1::2, ::-3]
    for k in backend.local_ranks:
        if v.local(k).size:
            assert np.shares_memory(v.local(k), a.local(k))
        v.local(k)[...] = -1
    x[1::2, ::-3] = -1
    np.testing.assert_array_equal(gather(a), x)


def test_full_slice_keeps_distribution(backend):
    a = dapx.asarray(np.arange(30).reshape(5, 6), dist=("c", "b"), backend=backend)
    for key in [(), Ellipsis, slice(None), (slice(None), Ellipsis)]:
        r = a[key]
        assert r.distribution == a.distribution
        for k in backend.local_ranks:
            assert np.shares_memory(r.local(k), a.local(k)) or not a.local(k).size


def test_slices_of_blocks_stay_blocks(backend):
    P = backend.nranks
    bounds = np.sort(np.r_[0, np.arange(1, P) * 13 % 40, 40])  # irregular, some empty
    a = dapx.asarray(np.arange(40), dist={"dist": "b", "bounds": bounds}, backend=backend)
    for key in [slice(3, 37, 4), slice(None, 5), slice(38, None)]:
        r = a[key]
        assert isinstance(r.distribution.maps[0], BlockMap)
        np.testing.assert_array_equal(gather(r), np.arange(40)[key])


def test_integer_index_merges_grid_axes(backend):
    x = np.arange(7 * 9).reshape(7, 9)
    a = dapx.asarray(x, grid=(backend.nranks, 1), backend=backend)
    r = a[:, 4]
    assert r.distribution.nranks == backend.nranks
    assert isinstance(r.distribution.maps[0], BlockMap)
    np.testing.assert_array_equal(gather(r), x[:, 4])
    r = a[5]  # the dropped axis merges into the following dimension
    owner = a.distribution.owner((5, 0))[0]
    assert [r.local(k).size for k in backend.local_ranks] == [
        9 if k == owner else 0 for k in backend.local_ranks
    ]
    np.testing.assert_array_equal(gather(r), x[5])


def test_scalar_results_are_replicated(backend):
    x = np.arange(24.0).reshape(2, 3, 4)
    a = dapx.asarray(x, dist=("b", "c", "b"), backend=backend)
    r = a[1, -2, 3]
    assert r.ndim == 0 and r.distribution.ndim == 0
    assert all(r.local(k)[()] == x[1, -2, 3] for k in backend.local_ranks)
    assert float(r) == x[1, -2, 3]


def test_zero_d_source(backend):
    a = dapx.asarray(np.float64(2.5), backend=backend)
    assert float(a[()]) == 2.5
    assert float(a[...]) == 2.5
    r = a[None, None]
    assert r.shape == (1, 1)
    check_layout(r)
    np.testing.assert_array_equal(gather(r), [[2.5]])
    a[...] = 4
    assert float(a) == 4.0
    a[None] = dapx.asarray(np.array([5.0]), backend=backend)
    assert all(a.local(k)[()] == 5.0 for k in backend.local_ranks)


# -- advanced indexing -------------------------------------------------------------------------


@st.composite
def fancy_keys(draw, shape, unique=False):
    """Keys with 1-2 integer arrays (or a boolean mask) among ints, slices, None."""
    ndim = len(shape)
    where = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=2, unique=True))
    key = []
    for d, n in enumerate(shape):
        if d in where:
            if len(where) == 1 and draw(st.booleans()):
                key.append(
                    np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
                )
            elif unique:
                key.append(draw(st.permutations(range(n))).copy())
                key[-1] = np.array(key[-1][: draw(st.integers(0, n))], np.intp)
            else:
                values = draw(st.lists(st.integers(-n, max(n - 1, -n)), max_size=4 if n else 0))
                if draw(st.integers(0, 9)) == 0:
                    values.append(draw(st.sampled_from([n, -n - 1])))  # out of bounds
                key.append(np.array(values, np.intp))
        elif n and not unique and draw(st.booleans()):
            key.append(draw(st.integers(-n, n - 1)))
        else:
            key.append(draw(_slices(n)))
    arrays_ = [k for k in key if isinstance(k, np.ndarray) and k.dtype != bool]
    if unique and len(arrays_) == 2:  # unique pairs: one array, the other a rearrangement
        m = min(a.size for a in arrays_)
        for i, k in enumerate(key):
            if isinstance(k, np.ndarray):
                key[i] = k[:m]
    elif len(arrays_) == 2 and draw(st.booleans()):
        i = next(i for i, k in enumerate(key) if k is arrays_[1])
        key[i] = arrays_[1][: min(1, arrays_[1].size)]  # broadcast a length-1 array
    if draw(st.booleans()):
        key.insert(draw(st.integers(0, len(key))), None)
    return tuple(key)


@SETTINGS
@given(data=st.data())
def test_fancy_getitem_matches_numpy(backend, data):
    a, x = data.draw(arrays(backend))
    key = data.draw(fancy_keys(x.shape))
    try:
        # NumPy before 2.3 only warns about an out-of-bounds index into an empty result; later
        # NumPy raises, as dapx does on every NumPy.
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            expected = x[key]
    except (IndexError, DeprecationWarning):
        with pytest.raises(IndexError):
            a[key]
        return
    r = a[key]
    check_layout(r)
    np.testing.assert_array_equal(gather(r), expected)


@SETTINGS
@given(data=st.data())
def test_distributed_index_arrays(backend, data, monkeypatch):
    a, x = data.draw(arrays(backend))
    n = x.shape[0]
    if not n:
        return
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=8)), np.intp)
    grid = (backend.nranks,)
    d = dapx.asarray(
        idx, dist=data.draw(dim_specs(idx.size, backend.nranks)), grid=grid, backend=backend
    )
    tails = [(), (slice(None, None, -1),), (0,), (np.array([0]),), (slice(None), 0)]
    tail = data.draw(st.sampled_from([t for t in tails if len(t) < x.ndim]))
    if any(not isinstance(t, slice) for t in tail) and not x.shape[len(tail)]:
        tail = ()
    key = (d, *tail)
    with monkeypatch.context() as m:
        if data.draw(st.booleans()):
            m.setattr(indexing, "SMALL_INDEX_LIMIT", -1)
            m.setattr(dapx.DistributedArray, "gather", _no_gather)
        r = a[key]
        check_layout(r)
        np.testing.assert_array_equal(gather(r), x[(idx, *tail)])
        uniq = np.unique(np.where(idx < 0, idx + n, idx))
        du = dapx.asarray(uniq, dist="c", backend=backend)
        shape = x[(uniq, *tail)].shape
        value = values_for(data.draw, backend, shape, x.dtype, lead=False)
        a[(du, *tail)] = value
        x[(uniq, *tail)] = gather(value) if isinstance(value, dapx.DistributedArray) else value
        np.testing.assert_array_equal(gather(a), x)


def _no_gather(self):
    raise AssertionError("a large index array must not be gathered")


@SETTINGS
@given(data=st.data())
def test_distributed_masks(backend, data):
    a, x = data.draw(arrays(backend))
    k = data.draw(st.integers(1, x.ndim))
    mx = (np.arange(math.prod(x.shape[:k])).reshape(x.shape[:k]) * 7) % 3 == 1
    same = k == x.ndim and data.draw(st.booleans())
    if same:
        m = dapx.asarray(mx, dist=a.distribution, backend=backend)
    else:
        grid = data.draw(st.sampled_from(_factorisations(backend.nranks, k)))
        specs = [data.draw(dim_specs(n, p)) for n, p in zip(mx.shape, grid)]
        m = dapx.asarray(mx, dist=Distribution.create(mx.shape, specs, grid), backend=backend)
    key = m if data.draw(st.booleans()) else (m, Ellipsis)
    r = a[key]
    check_layout(r)
    assert isinstance(r.distribution.maps[0], BlockMap)
    np.testing.assert_array_equal(gather(r), x[mx])
    value = data.draw(st.sampled_from(["scalar", "numpy", "dist"]))
    if value == "scalar":
        v = x.dtype.type(3)
    else:
        v = (np.arange(r.size).reshape(r.shape) + 9).astype(x.dtype)
        if value == "dist":
            v = dapx.asarray(v, backend=backend)
    a[key] = v
    x[mx] = gather(v) if isinstance(v, dapx.DistributedArray) else v
    np.testing.assert_array_equal(gather(a), x)


def test_mask_elsewhere_is_gathered_when_small(backend):
    x = np.arange(24).reshape(4, 6)
    a = dapx.asarray(x, dist=("c", "b"), backend=backend)
    mx = np.arange(6) % 4 == 1
    m = dapx.asarray(mx, backend=backend)
    np.testing.assert_array_equal(gather(a[1:, m]), x[1:, mx])


def test_large_mask_elsewhere_raises(backend, monkeypatch):
    a = dapx.asarray(np.arange(24).reshape(4, 6), backend=backend)
    m = dapx.asarray(np.ones(6, bool), backend=backend)
    monkeypatch.setattr(indexing, "SMALL_INDEX_LIMIT", -1)
    with pytest.raises(NotImplementedError, match="leading dimensions"):
        a[:, m]


def test_index_entry_kinds(backend):
    x = np.arange(20).reshape(4, 5)
    a = dapx.asarray(x, dist=("c", "b"), backend=backend)
    check_get(a, x, (np.array(2), np.int8(-1)))
    check_get(a, x, ([],))
    check_get(a, x, ([[0, 1], [3, 2]], slice(None, None, 2)))
    check_get(a, x, (np.uint8(3), [True, False, True, True, False]))

    class Index:
        def __index__(self):
            return 1

    check_get(a, x, (Index(), 2))
    i = dapx.asarray(np.int64(3), backend=backend)
    np.testing.assert_array_equal(gather(a[i]), x[3])
    other = dapx.asarray(np.array([1]), backend=dapx.simulated(backend.nranks % 6 + 1))
    with pytest.raises(ValueError, match="lives on"):
        a[other]
    with pytest.raises(ValueError, match="lives on"):
        a[0] = dapx.asarray(np.ones(5), backend=dapx.simulated(backend.nranks % 6 + 1))


def test_scalar_booleans(backend):
    x = np.arange(12).reshape(3, 4)
    a = dapx.asarray(x, backend=backend)
    for key in [True, False, (Ellipsis, True), (True, [0, 2]), (np.True_, 1)]:
        check_get(a, x, key)
    check_set(a, x, (Ellipsis, True), 5)


# -- assignment ----------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_basic_setitem_matches_numpy(backend, data):
    a, x = data.draw(arrays(backend))
    key = data.draw(basic_keys(x.shape))
    shape = np.shape(x[key])
    value = values_for(data.draw, backend, shape, x.dtype)
    check_set(a, x, key, value)


@SETTINGS
@given(data=st.data())
def test_fancy_setitem_matches_numpy(backend, data):
    a, x = data.draw(arrays(backend))
    key = data.draw(fancy_keys(x.shape, unique=True))
    shape = x[key].shape
    value = values_for(data.draw, backend, shape, x.dtype, lead=False)
    check_set(a, x, key, value)


def test_setitem_with_repeated_indices_keeps_the_last(backend):
    x = np.zeros(7)
    a = dapx.asarray(x, dist="c", backend=backend)
    a[[1, 5, 1, 1]] = np.array([1.0, 2.0, 3.0, 4.0])
    x[[1, 5, 1, 1]] = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(gather(a), x)


def test_setitem_casts_like_numpy(backend):
    a = dapx.zeros(5, dtype=np.int64, backend=backend)
    a[1:3] = 2.7
    a[[4]] = np.array([9.9])
    np.testing.assert_array_equal(gather(a), [0, 2, 2, 0, 9])


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ((5,), "index 5 is out of bounds for axis 0 with size 3"),
        ((0, -5), "index -5 is out of bounds for axis 1 with size 4"),
        (([0, 3],), "index 3 is out of bounds for axis 0 with size 3"),
        ((0, 0, 0), "too many indices for array: array is 2-dimensional, but 3 were indexed"),
        ((Ellipsis, Ellipsis), "an index can only have a single ellipsis"),
        (([True, False],), "boolean index did not match indexed array along axis 0"),
        (([0, 1], [0, 1, 2]), "shape mismatch: indexing arrays could not be broadcast"),
        ((1.0,), "only integers, slices"),
        ((np.array([1.0]),), "arrays used as indices must be of integer"),
    ],
)
def test_index_errors_match_numpy(backend, key, message):
    x = np.zeros((3, 4))
    a = dapx.asarray(x, backend=backend)
    with pytest.raises(IndexError, match=message.replace("(", r"\(").replace(")", r"\)")):
        x[key]
    with pytest.raises(IndexError, match=message.replace("(", r"\(").replace(")", r"\)")):
        a[key]
    with pytest.raises(IndexError):
        a[key] = 1


def test_out_of_bounds_distributed_index(backend, monkeypatch):
    a = dapx.asarray(np.arange(5), backend=backend)
    d = dapx.asarray(np.array([0, 7, 1, 2]), backend=backend)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        a[d]
    monkeypatch.setattr(indexing, "SMALL_INDEX_LIMIT", -1)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        a[d]


def test_value_shape_errors_match_numpy(backend):
    x = np.zeros((3, 4))
    a = dapx.asarray(x, dist="c", backend=backend)
    for key, value, message in [
        (1, np.ones((2, 4)), "could not broadcast input array from shape (2,4) into shape (4,)"),
        ([1, 2], np.ones(3), "value array of shape (3,) could not be broadcast to indexing"),
        ((1, 2), np.ones(1), "setting an array element with a sequence"),
    ]:
        pattern = message.replace("(", r"\(").replace(")", r"\)")
        with pytest.raises(ValueError, match=pattern):
            x[key] = value
        with pytest.raises(ValueError, match=pattern):
            a[key] = value
        with pytest.raises(ValueError, match=pattern):
            a[key] = dapx.asarray(value, backend=backend)


def test_padded_arrays_are_not_supported(backend):
    a = dapx.asarray(np.arange(12.0), padding=1, backend=backend)
    with pytest.raises(NotImplementedError, match="padded"):
        a[1:3]


def test_empty_masks_match_any_axis_only_where_numpy_lets_them(backend):
    # NumPy: a mask axis of length 0 matches an axis of any length; any other mismatch raises.
    for x_shape in [(0,), (2,), (0, 0), (2, 0), (0, 2), (3, 2)]:
        x = np.zeros(x_shape)
        for k_shape in [(0,), (1,), (2,), (0, 0), (0, 1), (1, 0), (2, 0), (0, 2), (3, 0)]:
            if len(k_shape) > len(x_shape):
                continue
            k = np.zeros(k_shape, bool)
            a = dapx.asarray(x, backend=backend)
            for key in (k, dapx.asarray(k, backend=backend)):
                try:
                    expected = x[k]
                except IndexError:
                    with pytest.raises(IndexError, match="did not match"):
                        a[key]
                else:
                    result = a[key]
                    assert result.shape == expected.shape
                    np.testing.assert_array_equal(result.gather(), expected)
