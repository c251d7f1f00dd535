"""Matrix products (``@``, dot, inner, outer, vdot, tensordot, vecdot...) against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import dapx
from dapx.testing import assert_eq, layout
from tests.test_manipulation import data, dist

LAYOUTS = ("b", "b-irregular", "c", "c2", "u")
DTYPES = (np.float64, np.int64, np.bool_, np.complex128)


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("m", "k", "n"), [(7, 5, 6), (4, 1, 3), (2, 9, 1), (0, 3, 4), (5, 0, 3)])
def test_matmul_of_two_distributed_matrices(backend, kind, dtype, m, k, n):
    x, y = data((m, k), dtype), data((k, n), dtype, seed=1)
    a, b = dist(x, kind, backend), dist(y, kind, backend, seed=1)
    assert_eq(a @ b, x @ y)
    assert_eq(np.matmul(a, b), np.matmul(x, y))
    assert_eq(np.dot(a, b), np.dot(x, y))


@pytest.mark.parametrize("kind", LAYOUTS)
def test_matmul_with_vectors_and_numpy_operands(backend, kind):
    x, v, w = data((6, 4)), data(4, seed=1), data(6, seed=2)
    a = dist(x, kind, backend)
    av, aw = dist(v, kind, backend), dist(w, kind, backend)
    assert_eq(a @ v, x @ v)
    assert_eq(a @ av, x @ v)
    assert_eq(aw @ a, w @ x)
    assert_eq(w @ a, w @ x)
    assert_eq(a @ x.T, x @ x.T)
    assert_eq(x.T @ a, x.T @ x)
    assert_eq(av @ av, v @ v)
    assert_eq(a.T @ a, x.T @ x)


@pytest.mark.parametrize("kind", ("b", "c"))
def test_stacked_matmul_with_one_distributed_operand(backend, kind):
    x, y = data((3, 5, 4)), data((4, 2), seed=1)
    a = dist(x, kind, backend)
    assert_eq(a @ y, x @ y)
    assert_eq(np.matmul(a, data(4, seed=2)), x @ data(4, seed=2))
    z = data((3, 4, 2), seed=3)
    assert_eq(a @ z, x @ z)


def test_matmul_errors_name_the_problem(backend):
    a = dapx.asarray(data((4, 3)), backend=backend)
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        a @ a
    with pytest.raises(ValueError, match="not have enough dimensions"):
        np.matmul(a, dapx.asarray(np.float64(2.0), backend=backend))
    x, y = data((2, 4, 3)), data((2, 3, 4), seed=1)
    # Two distributed stacks: each pair of matrices is made whole on one rank.
    stack = dapx.asarray(x, backend=backend) @ dapx.asarray(y, backend=backend)
    assert_eq(stack, x @ y, rtol=1e-12)


def test_matmul_out_and_dtype(backend):
    x, y = data((5, 4)), data((4, 3), seed=1)
    a, b = dapx.asarray(x, backend=backend), dapx.asarray(y, backend=backend)
    out = dapx.zeros((5, 3), backend=backend)
    result = np.matmul(a, b, out=out)
    assert result is out
    assert_eq(out, x @ y)
    assert_eq(np.matmul(a, b, dtype=np.float32), np.matmul(x, y, dtype=np.float32), rtol=1e-5)


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize(
    ("sa", "sb", "axes"),
    [
        ((3, 4, 5), (4, 5, 2), 2),
        ((3, 4, 5), (4, 6), ([1], [0])),
        ((2, 3), (3, 2), 0),
        ((4, 3), (3, 4), ([0, 1], [1, 0])),
        ((6,), (6,), 1),
    ],
)
def test_tensordot(backend, kind, sa, sb, axes):
    x, y = data(sa), data(sb, seed=1)
    a, b = dist(x, kind, backend), dist(y, kind, backend, seed=1)
    assert_eq(np.tensordot(a, b, axes=axes), np.tensordot(x, y, axes=axes))
    assert_eq(np.tensordot(a, y, axes=axes), np.tensordot(x, y, axes=axes))


def test_tensordot_rejects_mismatched_axes(backend):
    a = dapx.asarray(data((3, 4)), backend=backend)
    with pytest.raises(ValueError, match="shape-mismatch"):
        np.tensordot(a, a, axes=([0], [1]))
    with pytest.raises(ValueError, match="axes of a"):
        np.tensordot(a, a, axes=([0, 1], [1]))


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("dtype", (np.float64, np.complex128), ids=lambda d: np.dtype(d).name)
def test_inner_outer_vdot_dot(backend, kind, dtype):
    x, y = data((5, 3), dtype), data((4, 3), dtype, seed=1)
    v, w = data(7, dtype, seed=2), data(6, dtype, seed=3)
    a, b = dist(x, kind, backend), dist(y, kind, backend, seed=1)
    av, aw = dist(v, kind, backend), dist(w, kind, backend)
    assert_eq(np.inner(a, b), np.inner(x, y))
    assert_eq(np.inner(a, y), np.inner(x, y))
    assert_eq(np.outer(av, aw), np.outer(v, w))
    assert_eq(np.outer(a, aw), np.outer(x, w))
    assert_eq(np.vdot(a, a), np.vdot(x, x))
    assert_eq(np.dot(av, av), np.dot(v, v))
    assert_eq(np.dot(a, 2.0), np.dot(x, 2.0))
    assert_eq(np.dot(data((2, 3, 5), dtype), a), np.dot(data((2, 3, 5), dtype), x))


@pytest.mark.parametrize("kind", ("b", "c2", "u"))
def test_vector_gufuncs(backend, kind):
    x, v = data((5, 4), np.complex128), data(4, np.complex128, seed=1)
    a, av = dist(x, kind, backend), dist(v, kind, backend)
    assert_eq(np.vecdot(a, a), np.vecdot(x, x))
    assert_eq(np.matvec(a, av), np.matvec(x, v))
    u = data(5, np.complex128, seed=2)
    assert_eq(np.vecmat(dist(u, kind, backend), a), np.vecmat(u, x))


def test_unsupported_gufunc_is_a_clear_error(backend):
    a = dapx.asarray(data((2, 3, 3)), backend=backend)
    gufunc = np.linalg._umath_linalg.det  # a generalized ufunc without a dapx method
    with pytest.raises(NotImplementedError, match="generalized ufunc"):
        gufunc(a)


def test_metadata_functions_need_no_data(backend):
    a = dapx.zeros((3, 5), np.complex64, backend=backend)
    assert np.ndim(a) == 2 and np.shape(a) == (3, 5) and np.size(a) == 15
    assert np.size(a, -1) == 5
    assert np.iscomplexobj(a) and not np.isrealobj(a)
    assert np.can_cast(a, np.complex128) and not np.can_cast(a, np.float64)
    x = np.array([1 + 2j, 3.0, 0j, -1j])
    c = dapx.asarray(x, backend=backend)
    assert_eq(np.iscomplex(c), np.iscomplex(x))
    assert_eq(np.isreal(c), np.isreal(x))
    assert_eq(np.isreal(dapx.arange(3, backend=backend)), np.isreal(np.arange(3)))
    with pytest.raises(np.exceptions.AxisError):
        np.size(a, 2)


def test_ring_result_is_the_same_bits_on_every_run(backend):
    x, y = data((9, 8)), data((8, 7), seed=1)
    a, b = dapx.asarray(x, backend=backend), dapx.asarray(y, backend=backend)
    first = (a @ b).gather()
    assert np.array_equal(first, (a @ b).gather())
    np.testing.assert_allclose(first, x @ y, rtol=1e-12)


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _dist(x, kind, backend):
    return dapx.asarray(x, backend=backend, **layout(kind, x.shape, backend.nranks, seed=1))


def test_einsum_with_ellipses_is_the_contraction_module():
    """One einsum: `dapx.functions.contraction` spells out ellipses (no module of its own)."""
    import importlib.util

    from dapx.core.dispatch import HANDLED_FUNCTIONS
    from dapx.functions import contraction

    assert HANDLED_FUNCTIONS[np.einsum] is contraction.einsum
    assert contraction.expand_ellipsis("...ab,...b->...a", [(4, 2, 3), (3,)]) == "Aab,b->Aa"
    assert importlib.util.find_spec("dapx.subscripts") is None


@pytest.mark.parametrize(
    "subscripts, shapes",
    [
        ("...ij,...j->...i", [(2, 3, 4), (4,)]),
        ("...i,...i->...", [(1, 3), (5, 3)]),
        ("...ab,...b->...a", [(5, 2, 3), (5, 3)]),
        ("...a,...a", [(6, 4), (6, 4)]),
        ("i...,i...->...", [(6, 2), (6, 2)]),
    ],
)
def test_einsum_with_ellipsis(backend, subscripts, shapes):
    xs = [_data(s, seed=k) for k, s in enumerate(shapes)]
    expected = np.einsum(subscripts, *xs)
    a = _dist(xs[0], "b", backend)
    assert_eq(np.einsum(subscripts, a, *xs[1:]), expected)
    others = [dapx.asarray(x, backend=backend) for x in xs[1:]]
    assert_eq(np.einsum(subscripts, a, *others), expected)
    sublists = np.einsum(a, [Ellipsis, 0], a, [Ellipsis, 0], [Ellipsis])
    assert_eq(sublists, np.einsum(xs[0], [Ellipsis, 0], xs[0], [Ellipsis, 0], [Ellipsis]))
    with pytest.raises(ValueError, match=r"no '\.\.\.' ellipsis"):
        np.einsum("...i->i", dapx.zeros((3, 3), backend=backend))
