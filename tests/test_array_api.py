"""The array API namespace (``x.__array_namespace__()``) against NumPy, on the usual layouts.

The standard's own suite (../shared/tools/array-api-tests) is a tool run by
hand; these tests cover every function of the namespace against NumPy's
same-named function on distributed inputs in every common layout.
"""

from __future__ import annotations

import numpy as np
import pytest

import dapx
from dapx.testing import assert_eq
from dapx.testing import distribute as dist

LAYOUTS = ("b", "b-irregular", "c", "c2", "u")
xp = dapx.asarray(0).__array_namespace__()


@pytest.fixture(params=LAYOUTS)
def kind(request):
    return request.param


def data(shape, low=0.1, high=0.9, seed=0):
    return np.random.default_rng(seed).uniform(low, high, shape)


UNARY = [
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "ceil",
    "conj",
    "cos",
    "cosh",
    "exp",
    "expm1",
    "floor",
    "imag",
    "isfinite",
    "isinf",
    "isnan",
    "log",
    "log1p",
    "log2",
    "log10",
    "logical_not",
    "negative",
    "positive",
    "real",
    "round",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "square",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
    "reciprocal",
]
BINARY = [
    "add",
    "atan2",
    "copysign",
    "divide",
    "equal",
    "floor_divide",
    "greater",
    "greater_equal",
    "hypot",
    "less",
    "less_equal",
    "logaddexp",
    "maximum",
    "minimum",
    "multiply",
    "nextafter",
    "not_equal",
    "pow",
    "remainder",
    "subtract",
]
INTEGER_BINARY = [
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "logical_and",
    "logical_or",
    "logical_xor",
]


def test_namespace_identity_and_info():
    a = dapx.arange(3)
    assert a.__array_namespace__() is xp
    assert a.__array_namespace__(api_version="2024.12") is xp
    with pytest.raises(ValueError, match=r"2021\.12"):
        a.__array_namespace__(api_version="2021.12")
    assert xp.__array_api_version__ == "2025.12"
    info = xp.__array_namespace_info__()
    assert info.capabilities()["boolean indexing"]
    assert info.default_dtypes()["real floating"] == np.float64
    assert set(info.dtypes(kind="integral")) == {
        f"{p}int{n}" for p in ("", "u") for n in (8, 16, 32, 64)
    }
    assert info.default_device() in info.devices()
    for name in xp.__all__:
        assert hasattr(xp, name), name


@pytest.mark.parametrize("name", UNARY)
def test_unary(backend, kind, name):
    x = data((3, 5)) + (1.0 if name == "acosh" else 0.0)
    a = dist(x, kind, backend)
    f = getattr(xp, name)
    expected = np.reciprocal(x) if name == "reciprocal" else getattr(np, name)(x)
    assert_eq(f(a), expected, rtol=1e-12)


@pytest.mark.parametrize("name", BINARY)
def test_binary(backend, kind, name):
    x, y = data((4, 5), seed=1), data((4, 5), seed=2)
    a, b = dist(x, kind, backend), dist(y, kind, backend, seed=1)
    assert_eq(getattr(xp, name)(a, b), getattr(np, name)(x, y), rtol=1e-12)


@pytest.mark.parametrize("name", INTEGER_BINARY)
def test_integer_binary(backend, kind, name):
    rng = np.random.default_rng(3)
    x, y = rng.integers(0, 8, (4, 5)), rng.integers(0, 4, (4, 5))
    if name.startswith("logical"):
        x, y = x > 3, y > 1
    a, b = dist(x, kind, backend), dist(y, kind, backend, seed=1)
    assert_eq(getattr(xp, name)(a, b), getattr(np, name)(x, y))
    assert_eq(xp.bitwise_invert(dist(x, kind, backend)), np.bitwise_invert(x))


def test_standard_special_cases_where_numpy_differs(backend):
    x = xp.asarray([np.inf, -np.inf, 1.0, -1.0], device=backend)
    y = xp.asarray([2.0, 2.0, -np.inf, np.inf], device=backend)
    got = xp.floor_divide(x, y).gather()
    np.testing.assert_array_equal(got, [np.inf, -np.inf, -0.0, -0.0])
    assert np.signbit(got[2:]).all()
    z = xp.asarray([complex(-0.0, 0.0), complex(np.inf, 0.0)], device=backend)
    with np.errstate(invalid="ignore"):  # NumPy warns for expm1(inf + 0j) too
        e = xp.expm1(z).gather()
    assert e[0] == 0 and not np.signbit(e[0].real)
    assert (
        xp.eigvals(xp.eye(2, device=backend)).dtype.kind == "c" if hasattr(xp, "eigvals") else True
    )
    with pytest.warns(dapx.GatherWarning, match="whole on one process"):
        assert xp.linalg.eigvals(xp.eye(2, device=backend) + 0.0).dtype == np.complex128


def test_reductions_and_statistics(backend, kind):
    x = data((4, 6))
    a = dist(x, kind, backend)
    for axis in (None, 0, 1, (0, 1)):
        for keepdims in (False, True):
            kw = {"axis": axis, "keepdims": keepdims}
            for name in ("sum", "prod", "max", "min", "mean"):
                assert_eq(getattr(xp, name)(a, **kw), getattr(np, name)(x, **kw), rtol=1e-12)
            for name in ("std", "var"):
                got = getattr(xp, name)(a, correction=1, **kw)
                assert_eq(got, getattr(np, name)(x, ddof=1, **kw), rtol=1e-12)
            assert_eq(xp.all(a > 0.2, **kw), np.all(x > 0.2, **kw))
            assert_eq(xp.any(a > 0.8, **kw), np.any(x > 0.8, **kw))
    assert_eq(
        xp.cumulative_sum(a, axis=1, include_initial=True),
        np.cumulative_sum(x, axis=1, include_initial=True),
        rtol=1e-12,
    )
    assert_eq(xp.cumulative_prod(a, axis=0), np.cumulative_prod(x, axis=0), rtol=1e-12)
    ints = dist(np.arange(24).reshape(4, 6) % 7, kind, backend)
    assert xp.sum(ints).dtype == np.int64
    assert_eq(xp.diff(a, axis=1), np.diff(x, axis=1))


def test_manipulation(backend, kind):
    x = data((2, 3, 4))
    a = dist(x, kind, backend)
    assert_eq(xp.concat([a, a], axis=1), np.concat([x, x], axis=1))
    assert_eq(xp.stack([a, a], axis=-1), np.stack([x, x], axis=-1))
    assert_eq(xp.reshape(a, (6, 4)), x.reshape(6, 4))
    assert_eq(xp.reshape(a, (-1,), copy=True), x.reshape(-1))
    assert_eq(xp.permute_dims(a, (2, 0, 1)), np.permute_dims(x, (2, 0, 1)))
    assert_eq(xp.flip(a, axis=1), np.flip(x, axis=1))
    assert_eq(xp.roll(a, 2, axis=2), np.roll(x, 2, axis=2))
    assert_eq(xp.squeeze(xp.expand_dims(a, axis=0), axis=0), x)
    assert_eq(xp.moveaxis(a, 0, -1), np.moveaxis(x, 0, -1))
    assert_eq(xp.repeat(a, 2, axis=1), np.repeat(x, 2, axis=1))
    assert_eq(xp.tile(a, (1, 2, 1)), np.tile(x, (1, 2, 1)))
    for got, want in zip(xp.unstack(a, axis=2), np.unstack(x, axis=2)):
        assert_eq(got, want)
    assert_eq(xp.broadcast_to(a[:, :1], (2, 3, 4)), np.broadcast_to(x[:, :1], (2, 3, 4)))
    for got, want in zip(xp.broadcast_arrays(a, a[0]), np.broadcast_arrays(x, x[0])):
        assert_eq(got, want)
    assert xp.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert_eq(xp.astype(a, xp.float32), x.astype(np.float32))
    assert_eq(xp.clip(a, 0.3, 0.6), np.clip(x, 0.3, 0.6))
    assert_eq(xp.matrix_transpose(a), np.matrix_transpose(x))
    assert_eq(a.mT, np.matrix_transpose(x))


def test_searching_sorting_sets(backend, kind):
    rng = np.random.default_rng(7)
    x = rng.integers(0, 5, 17)
    a = dist(x, kind, backend)
    assert_eq(xp.argmax(a), np.argmax(x))
    assert_eq(xp.argmin(a), np.argmin(x))
    assert_eq(xp.count_nonzero(a), np.count_nonzero(x))
    (nz,) = xp.nonzero(a)
    assert_eq(nz, np.nonzero(x)[0])
    assert_eq(xp.where(a > 2, a, -a), np.where(x > 2, x, -x))
    for descending in (False, True):
        assert_eq(xp.sort(a, descending=descending), np.sort(x)[::-1] if descending else np.sort(x))
        order = xp.argsort(a, descending=descending).gather()
        reference = np.argsort(-x if descending else x, kind="stable")
        np.testing.assert_array_equal(order, reference)  # ties in their original order
    s = np.sort(x)
    # v distributed: a and v sorted together, nothing gathered (the suite's threshold is 0)
    assert_eq(xp.searchsorted(dist(s, kind, backend), a), np.searchsorted(s, x))
    assert_eq(
        xp.searchsorted(dist(s, kind, backend), xp.asarray(3, device=backend), side="right"),
        np.searchsorted(s, 3, side="right"),
    )
    with pytest.warns(dapx.GatherWarning, match="test set"):
        assert_eq(xp.isin(a, xp.asarray([1, 4], device=backend)), np.isin(x, [1, 4]))
    values, counts = xp.unique_counts(a)
    assert_eq(values, np.unique(x))
    assert_eq(counts, np.unique(x, return_counts=True)[1])
    assert_eq(xp.unique_values(a), np.unique(x))
    values, inverse = xp.unique_inverse(a)
    np.testing.assert_array_equal(values.gather()[inverse.gather()], x)
    assert_eq(xp.take(a, xp.asarray([0, 3], device=backend)), np.take(x, [0, 3]))
    order = xp.argsort(a)
    assert_eq(xp.take_along_axis(a, order, axis=0), np.sort(x))


def test_creation(backend):
    assert_eq(xp.arange(2, 11, 3, device=backend), np.arange(2, 11, 3))
    assert_eq(xp.asarray([1.0, 2.0], device=backend), np.array([1.0, 2.0]))
    assert xp.asarray(True, device=backend).dtype == np.bool_
    assert xp.asarray(3, device=backend).dtype == np.int64
    for f in ("zeros", "ones", "empty"):
        a = getattr(xp, f)((3, 4), device=backend)
        assert a.shape == (3, 4) and a.dtype == np.float64 and a.device is backend
    assert_eq(xp.full((2, 3), 7, device=backend), np.full((2, 3), 7))
    a = xp.ones((4, 3), dtype=xp.int32, device=backend)
    assert_eq(xp.zeros_like(a), np.zeros((4, 3), np.int32))
    assert_eq(xp.full_like(a, 5), np.full((4, 3), 5, np.int32))
    assert xp.empty_like(a).shape == (4, 3)
    assert_eq(xp.ones_like(a, dtype=xp.float32), np.ones((4, 3), np.float32))
    for n, m, k in ((3, None, 0), (4, 6, 1), (5, 2, -2)):
        assert_eq(xp.eye(n, m, k=k, device=backend), np.eye(n, m, k))
    assert_eq(xp.eye(3, dtype=xp.bool, device=backend), np.eye(3, dtype=bool))
    assert_eq(xp.linspace(0, 1, 7, device=backend), np.linspace(0, 1, 7))
    x, _ = xp.meshgrid(xp.arange(3, device=backend), xp.arange(2, device=backend))
    assert_eq(x, np.meshgrid(np.arange(3), np.arange(2))[0])
    assert_eq(xp.tril(xp.ones((3, 3), device=backend), k=-1), np.tril(np.ones((3, 3)), -1))
    assert_eq(xp.triu(xp.ones((3, 3), device=backend)), np.triu(np.ones((3, 3))))
    assert_eq(xp.from_dlpack(np.arange(4.0), device=backend), np.arange(4.0))
    assert_eq(xp.fft.fftfreq(8, d=0.5, device=backend), np.fft.fftfreq(8, 0.5))
    assert_eq(xp.fft.rfftfreq(9, device=backend), np.fft.rfftfreq(9))


def test_array_object(backend):
    a = xp.asarray([[1.0, 2.0], [3.0, 4.0]], device=backend)
    assert a.device is backend and a.to_device(backend) is a
    with pytest.raises(ValueError, match="backends"):
        a.to_device(dapx.simulated(backend.nranks + 1))
    with pytest.raises(BufferError, match="local"):
        a.__dlpack__()
    with pytest.raises(BufferError):
        a.__dlpack_device__()
    s = xp.sum(a)
    assert float(s) == 10.0 and int(s) == 10 and complex(s) == 10 and bool(s)
    assert xp.finfo(xp.float32).eps == float(np.finfo(np.float32).eps)
    assert isinstance(xp.finfo(a).max, float) and isinstance(xp.iinfo(xp.int8).max, int)
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1, 2], device=backend, copy=False)


def test_extensions(backend):
    x = np.eye(3) * 2 + data((3, 3))
    a = xp.asarray(x, device=backend)
    dapx.config.gather_warning_threshold, old = 10**9, dapx.config.gather_warning_threshold
    try:
        assert_eq(xp.linalg.inv(a), np.linalg.inv(x), rtol=1e-10)
        assert_eq(xp.linalg.vector_norm(a), np.linalg.vector_norm(x), rtol=1e-12)
        w, v = xp.linalg.eig(a)
        assert w.dtype == np.complex128 and v.dtype == np.complex128
        assert_eq(xp.fft.fft(a, axis=0), np.fft.fft(x, axis=0), rtol=1e-10, atol=1e-12)
    finally:
        dapx.config.gather_warning_threshold = old
