"""Rearranging, grids and along-axis functions of NumPy on DistributedArrays, against NumPy.

Every common layout, 1 to 6 simulated ranks (or under mpiexec), empty arrays
and empty local blocks included; a hidden gather fails the test.
"""

from __future__ import annotations

import numpy as np
import pytest

import dapx
from dapx.testing import assert_eq
from dapx.testing import distribute as dist

LAYOUTS = ("b", "b-irregular", "c", "c2", "u")


@pytest.fixture(params=LAYOUTS)
def kind(request):
    return request.param


def data(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iub":
        return rng.integers(0, 4, shape).astype(dtype)
    return (rng.standard_normal(shape) * 3).astype(dtype)


def assert_all(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_eq(g, w)


# -- rearranging ----------------------------------------------------------------------------------


def test_rollaxis_unstack_take_along_axis(backend, kind):
    x = data((3, 4, 5))
    a = dist(x, kind, backend)
    for axis, start in ((2, 0), (0, 3), (1, 1), (-1, -2)):
        assert_eq(np.rollaxis(a, axis, start), np.rollaxis(x, axis, start))
    for axis in range(3):
        assert_all(np.unstack(a, axis=axis), np.unstack(x, axis=axis))
        order = np.argsort(x, axis=axis)
        assert_eq(np.take_along_axis(a, order, axis), np.take_along_axis(x, order, axis))
        distributed = np.argsort(a, axis=axis)
        assert_eq(np.take_along_axis(a, distributed, axis), np.take_along_axis(x, order, axis))
    flat_order = np.argsort(x, axis=None)
    assert_eq(np.take_along_axis(a, flat_order, None), np.take_along_axis(x, flat_order, None))


@pytest.mark.parametrize("new_shape", [7, (2, 9), 0, (3, 0), (40,)], ids=str)
def test_resize(backend, kind, new_shape):
    x = data((4, 5))
    assert_eq(np.resize(dist(x, kind, backend), new_shape), np.resize(x, new_shape))
    empty = np.zeros((0,))
    assert_eq(np.resize(dist(empty, kind, backend), new_shape), np.resize(empty, new_shape))


def test_block(backend, kind):
    x, y, z = data((2, 3)), data((2, 2), seed=1), data((3, 5), seed=2)
    a, b, c = dist(x, kind, backend), dist(y, kind, backend), dist(z, kind, backend)
    assert_eq(np.block([[a, b], [c]]), np.block([[x, y], [z]]))
    assert_eq(np.block([a, b]), np.block([x, y]))
    v = data((4,), seed=3)
    assert_eq(np.block([[dist(v, kind, backend)], [v]]), np.block([[v], [v]]))
    with pytest.raises(ValueError, match="depths are mismatched"):
        np.block([[a], b])


@pytest.mark.parametrize("reps", [2, (2, 1), (1, 3), (2, 2, 2), 0], ids=str)
def test_tile_and_repeat(backend, kind, reps):
    x = data((3, 4))
    a = dist(x, kind, backend)
    assert_eq(np.tile(a, reps), np.tile(x, reps))
    for axis in (None, 0, 1):
        assert_eq(np.repeat(a, 2, axis), np.repeat(x, 2, axis))
    counts = np.array([1, 0, 3])
    assert_eq(np.repeat(a, counts, axis=0), np.repeat(x, counts, axis=0))


@pytest.mark.parametrize("shape", [(8,), (4, 5)], ids=str)
def test_insert_and_delete(backend, kind, shape):
    x = data(shape, np.int64)
    a = dist(x, kind, backend)
    for axis in (None, 0, -1):
        n = x.size if axis is None else shape[axis]
        for obj in (0, 2, n, -1, [1, 1, 3], slice(0, n, 2), np.array([0, n - 1])):
            assert_eq(np.delete(a, obj, axis), np.delete(x, obj, axis)) if not (
                isinstance(obj, int) and obj == n
            ) else None
            assert_eq(np.insert(a, obj, 9, axis), np.insert(x, obj, 9, axis))
        if axis is None or x.ndim == 1:  # several values at one position
            assert_eq(np.insert(a, 1, [7, 8], axis), np.insert(x, 1, [7, 8], axis))
        else:  # a row or column of values at one position
            row = np.arange(x.shape[1 - (axis % 2)])
            assert_eq(np.insert(a, 1, row, axis), np.insert(x, 1, row, axis))
        mask = np.arange(n) % 3 == 0
        assert_eq(np.delete(a, mask, axis), np.delete(x, mask, axis))
    with pytest.raises(IndexError):
        np.delete(a, x.size + 3)


def test_trim_zeros(backend, kind):
    x = np.array([0, 0, 3, 0, 5, 0, 0, 0], dtype=float)
    a = dist(x, kind, backend)
    for trim in ("fb", "f", "b", "FB"):
        assert_eq(np.trim_zeros(a, trim), np.trim_zeros(x, trim))
    zeros = np.zeros(5)
    assert_eq(np.trim_zeros(dist(zeros, kind, backend)), np.trim_zeros(zeros))
    m = np.zeros((4, 5))
    m[1:3, 2] = 1.0
    assert_eq(np.trim_zeros(dist(m, kind, backend)), np.trim_zeros(m))
    assert_eq(np.trim_zeros(dist(m, kind, backend), axis=1), np.trim_zeros(m, axis=1))


# -- grids ----------------------------------------------------------------------------------------


def test_meshgrid_and_ix(backend, kind):
    x, y, z = data((5,)), data((3,), seed=1), data((2,), seed=2)
    a, b = dist(x, kind, backend), dist(y, kind, backend)
    for indexing in ("xy", "ij"):
        for sparse in (False, True):
            assert_all(
                np.meshgrid(a, b, z, indexing=indexing, sparse=sparse),
                np.meshgrid(x, y, z, indexing=indexing, sparse=sparse),
            )
    mask = x > 0
    assert_all(np.ix_(a, b), np.ix_(x, y))
    assert_all(np.ix_(dist(mask, kind, backend), y), np.ix_(mask, y))


def test_spaced_values(backend, kind):
    start, stop = data((4,)), data((4,), seed=1) + 10
    s, t = dist(start, kind, backend), dist(stop, kind, backend)
    for num, endpoint in ((5, True), (5, False), (1, True), (0, True)):
        assert_eq(np.linspace(s, t, num, endpoint), np.linspace(start, stop, num, endpoint))
        assert_eq(
            np.linspace(s, 3.0, num, endpoint, axis=1),
            np.linspace(start, 3.0, num, endpoint, axis=1),
        )
        assert_eq(
            np.logspace(s, t, num, endpoint, base=2.0),
            np.logspace(start, stop, num, endpoint, base=2.0),
        )
    y, step = np.linspace(s, t, 4, retstep=True)
    ref, ref_step = np.linspace(start, stop, 4, retstep=True)
    assert_eq(y, ref)
    assert_eq(step, ref_step)
    positive = np.abs(start) + 1
    p = dist(positive, kind, backend)
    assert_eq(np.geomspace(p, 100.0, 6), np.geomspace(positive, 100.0, 6))
    assert_eq(
        np.geomspace(-p, -1.0, 3, endpoint=False), np.geomspace(-positive, -1.0, 3, endpoint=False)
    )
    assert_eq(np.linspace(s, t, 3, dtype=np.float32), np.linspace(start, stop, 3, dtype=np.float32))


@pytest.mark.parametrize(
    ("sa", "sb"), [((3,), (4,)), ((2, 3), (3, 2)), ((2, 2), (3,)), ((0, 2), (2, 2))], ids=str
)
def test_kron(backend, kind, sa, sb):
    x, y = data(sa), data(sb, seed=1)
    assert_eq(np.kron(dist(x, kind, backend), y), np.kron(x, y))
    # Two distributed factors: the second is needed whole on every rank (an outer product).
    with pytest.warns(dapx.GatherWarning, match="outer"):
        got = np.kron(dist(x, kind, backend), dist(y, kind, backend))
    assert_eq(got, np.kron(x, y))


# -- along whole axes -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(6,), (3, 5), (2, 3, 4)], ids=str)
def test_apply_along_axis(backend, kind, shape):
    x = data(shape)
    a = dist(x, kind, backend)
    for axis in range(len(shape)):
        for func in (np.cumsum, np.sum, lambda v: np.outer(v[:2], v[:3])):
            with pytest.warns(dapx.GatherWarning) if len(shape) == 1 else _no_warning():
                got = np.apply_along_axis(func, axis, a)
            assert_eq(got, np.apply_along_axis(func, axis, x))


def _no_warning():
    import contextlib

    return contextlib.nullcontext()


def test_apply_over_axes(backend, kind):
    x = data((3, 4, 5))
    a = dist(x, kind, backend)
    assert_eq(np.apply_over_axes(np.sum, a, [0, 2]), np.apply_over_axes(np.sum, x, [0, 2]))
    assert_eq(np.apply_over_axes(np.max, a, 1), np.apply_over_axes(np.max, x, 1))


@pytest.mark.parametrize("shape", [(19,), (3, 10), (2, 3, 9)], ids=str)
def test_packbits_unpackbits(backend, kind, shape):
    bits = data(shape, np.uint8) % 2
    a = dist(bits, kind, backend)
    for bitorder in ("big", "little"):
        with pytest.warns(dapx.GatherWarning, match="whole on one process"):  # flattened
            assert_eq(np.packbits(a, bitorder=bitorder), np.packbits(bits, bitorder=bitorder))
        for axis in range(1, len(shape)):
            packed = np.packbits(a, axis=axis, bitorder=bitorder)
            assert_eq(packed, np.packbits(bits, axis=axis, bitorder=bitorder))
            back = np.unpackbits(packed, axis=axis, count=shape[axis], bitorder=bitorder)
            assert_eq(back, bits)


@pytest.mark.parametrize("shape", [(12,), (3, 10)], ids=str)
def test_unwrap(backend, kind, shape):
    phase = np.cumsum(data(shape, seed=4), axis=-1)
    a = dist(phase, kind, backend)
    for axis in range(len(shape)):
        assert_eq(np.unwrap(a, axis=axis), np.unwrap(phase, axis=axis))
        assert_eq(
            np.unwrap(a, discont=4.0, axis=axis, period=5.0),
            np.unwrap(phase, discont=4.0, axis=axis, period=5.0),
        )
    ints = (data(shape, np.int64) * 7) % 13
    assert_eq(np.unwrap(dist(ints, kind, backend), period=6), np.unwrap(ints, period=6))
