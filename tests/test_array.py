"""DistributedArray: attributes, conversion, redistribution, repr, backends, elementwise ops.

NumPy on the same data is the oracle throughout.
"""

from __future__ import annotations

import operator
import re
import warnings
from types import MappingProxyType

import numpy as np
import pytest

import dapx
from dapx.backends import SimulatedBackend
from dapx.testing import LAYOUTS, assert_eq, layout

DTYPES = [np.float64, np.float32, np.int64, np.bool_, np.complex128]


def distinct(shape, dtype=np.float64, seed: int = 0) -> np.ndarray:
    """Every element different (a shuffled range), so a misplaced element cannot go unseen."""
    n = int(np.prod(shape))
    values = np.random.default_rng(seed).permutation(n).reshape(shape)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return values % 2 == 1  # two values at most: the tests that move data use others too
    if dtype.kind == "c":
        return (values + 1j * (n - values)).astype(dtype)
    return (values - n // 2 if dtype.kind == "i" else values).astype(dtype)


def data(shape, dtype, offset: int = 0) -> np.ndarray:
    """Deterministic values of `dtype`; with offset > 0, never zero (safe divisors)."""
    n = int(np.prod(shape))
    x = (np.arange(n).reshape(shape) * 7 + 3) % 11 - 5
    if offset:
        x = np.where(x >= 0, x + offset, x)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return (x % 2 == 1) if not offset else np.ones(shape, bool)
    if dtype.kind == "c":
        return (x + 0.5j * (x - 1)).astype(dtype) if not offset else (x + 1j * x).astype(dtype)
    if dtype.kind == "f":
        return (x * 0.75).astype(dtype)
    return x.astype(dtype)


def check_blocks(a, x: np.ndarray) -> None:
    for r in a.backend.local_ranks:
        block = a.local(r)
        assert block.shape == a.distribution.local_shape(r)
        np.testing.assert_array_equal(block, x[np.ix_(*a.distribution.global_indices(r))])


# -- attributes ----------------------------------------------------------------------------------


def test_attributes(backend):
    x = np.arange(30.0).reshape(5, 6)
    a = dapx.asarray(x, backend=backend, dist=("b", "c"))
    assert a.shape == (5, 6) and a.ndim == 2 and a.size == 30 and len(a) == 5
    assert isinstance(a.dtype, np.dtype) and a.dtype == np.float64
    assert a.nbytes == x.nbytes and a.itemsize == 8
    assert isinstance(a.distribution, dapx.Distribution)
    assert a.distribution.dist_types == ("b", "c")
    assert a.distribution.nranks == backend.nranks
    assert a.backend is backend
    assert isinstance(a.locals, MappingProxyType)
    assert sorted(a.locals) == list(backend.local_ranks)
    with pytest.raises(TypeError):
        a.locals[0] = np.zeros(3)
    assert not hasattr(a, "chunks")
    assert not hasattr(a, "__dict__")
    s = dapx.asarray(np.int32(4), backend=backend)
    assert s.shape == () and s.ndim == 0 and s.size == 1 and s.dtype == np.int32
    with pytest.raises(TypeError, match="len"):
        len(s)
    assert dapx.zeros((3, 0), backend=backend).size == 0


def test_local_is_the_block_itself(backend):
    x = np.arange(10)
    a = dapx.asarray(x, backend=backend, dist="c")
    for r in backend.local_ranks:
        assert a.local(r) is a.locals[r]
        np.testing.assert_array_equal(a.local(r), x[r :: backend.nranks])
    if len(backend.local_ranks) > 1:
        with pytest.raises(ValueError, match="pass rank= to choose one"):
            a.local()
    else:
        assert a.local() is a.locals[backend.local_ranks[0]]
    with pytest.raises(ValueError, match=f"rank {backend.nranks} is not held"):
        a.local(backend.nranks)


# -- conversion to NumPy -------------------------------------------------------------------------


def test_gather_and_to_numpy(backend):
    for kind in LAYOUTS:
        x = distinct((4, 7), np.complex128)
        a = dapx.asarray(x, backend=backend, **layout(kind, x.shape, backend.nranks))
        for g in (a.gather(), a.to_numpy()):
            assert type(g) is np.ndarray and g.dtype == x.dtype
            np.testing.assert_array_equal(g, x)
            assert not any(np.shares_memory(g, b) for b in a.locals.values())
    s = dapx.asarray(np.float64(2.5), backend=backend)
    assert s.gather().shape == () and s.gather()[()] == 2.5


def test_implicit_conversion_warns_above_the_threshold(backend, monkeypatch):
    x = np.arange(12.0).reshape(3, 4)
    a = dapx.asarray(x, backend=backend, dist="c")
    with pytest.warns(dapx.GatherWarning, match=r"gathers the whole \(3, 4\) array"):
        got = np.asarray(a)
    np.testing.assert_array_equal(got, x)
    monkeypatch.setattr(dapx.config, "gather_warning_threshold", 12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(np.asarray(a), x)
        np.testing.assert_array_equal(np.asarray(a, dtype=np.float32), x.astype(np.float32))
    monkeypatch.setattr(dapx.config, "gather_warning_threshold", 11)
    with pytest.warns(dapx.GatherWarning):
        np.array(a)
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(a, copy=False)


# -- redistribution ------------------------------------------------------------------------------


@pytest.mark.parametrize("src", LAYOUTS)
def test_redistribute_between_every_pair_of_layouts(backend, src):
    for shape in [(13,), (1,), (0,), (6, 5), (7, 0)]:
        x = distinct(shape, np.float64)
        a = dapx.asarray(x, backend=backend, **layout(src, shape, backend.nranks, seed=1))
        for dst in LAYOUTS:
            kw = layout(dst, shape, backend.nranks, seed=2)
            b = a.redistribute(**kw)
            assert b.distribution == dapx.Distribution.create(shape, nranks=backend.nranks, **kw)
            assert b.backend is backend and b.dtype == a.dtype
            assert_eq(b, x)
            check_blocks(b, x)
    assert_eq(a, x)  # the source is untouched


def test_redistribute_grids_dtypes_and_distribution_objects(backend):
    for dtype in DTYPES:
        x = distinct((6, 4), dtype)
        a = dapx.asarray(x, backend=backend, dist=("b", "n"), grid=(backend.nranks, 1))
        b = a.redistribute(("n", "c"), grid=(1, backend.nranks))
        assert b.distribution.grid_shape == (1, backend.nranks)
        assert_eq(b, x)
        check_blocks(b, x)
    target = dapx.Distribution.create((6, 4), ("c", "b"), nranks=backend.nranks)
    c = a.redistribute(target)
    assert c.distribution == target
    assert_eq(c, x)
    with pytest.raises(ValueError, match=r"shape \(6, 4\) to a distribution of shape \(4, 6\)"):
        a.redistribute(dapx.Distribution.create((4, 6), nranks=backend.nranks))
    with pytest.raises(ValueError, match=f"has {backend.nranks + 1} ranks"):
        a.redistribute(dapx.Distribution.create((6, 4), nranks=backend.nranks + 1))
    s = dapx.asarray(np.float64(1.5), backend=backend).redistribute()
    assert s.shape == () and float(s) == 1.5


# -- scalars -------------------------------------------------------------------------------------


def test_python_scalars_from_0d(backend):
    f = dapx.asarray(np.float64(2.75), backend=backend)
    assert float(f) == 2.75 and int(f) == 2 and bool(f) and complex(f) == 2.75
    assert f.item() == 2.75 and type(f.item()) is float
    i = dapx.asarray(np.int64(-3), backend=backend)
    assert int(i) == -3 and operator.index(i) == -3 and float(i) == -3.0
    assert [10, 20, 30, 40][i] == 20
    assert not bool(dapx.asarray(False, backend=backend))
    assert not bool(dapx.asarray(0.0, backend=backend))
    with pytest.raises(TypeError, match="only integer arrays"):
        operator.index(f)
    a = dapx.arange(4.0, backend=backend)
    with pytest.raises(TypeError, match=r"shape \(4,\)"):
        float(a)
    with pytest.raises(TypeError, match=r"shape \(4,\)"):
        int(a)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(a)


# -- repr ----------------------------------------------------------------------------------------


class NoCollectives(SimulatedBackend):
    """A simulated backend whose collectives fail: for code that must not communicate."""

    def allgather(self, values):
        raise AssertionError("allgather called")

    def alltoallv(self, sends):
        raise AssertionError("alltoallv called")

    def bcast(self, value, root):
        raise AssertionError("bcast called")

    def barrier(self):
        raise AssertionError("barrier called")


def test_repr_shows_the_layout_and_a_preview():
    b = dapx.simulated(4)
    a = dapx.asarray(np.arange(45.0).reshape(5, 9), backend=b, dist=("b", "c"), grid=(2, 2))
    text = repr(a)
    # Rank 0 holds rows 0-2 and the even columns: 0, 2, 4, 6, 8, 9, 11, ...
    preview = "rank 0: [0., 2., 4., 6., 8., 9., ...]"
    for part in [
        "shape=(5, 9)",
        "dtype=float64",
        "dist=(b, c)",
        "grid=(2, 2)",
        "SimulatedBackend(nranks=4)",
        preview,
    ]:
        assert part in text, (part, text)
    c2 = dapx.zeros(10, np.int32, backend=b, dist={"dist": "c", "block_size": 2})
    assert "dist=(c2)" in repr(c2) and "dtype=int32" in repr(c2)
    u = dapx.zeros(6, backend=dapx.simulated(2), **layout("u", (6,), 2))
    assert "dist=(u)" in repr(u)
    assert "rank 0: []" in repr(dapx.zeros((0, 3), backend=b))
    assert repr(dapx.asarray(np.float64(1.5), backend=b)) == (
        "DistributedArray(np.float64(1.5), dtype=float64)"
    )


def test_repr_and_pictures_need_no_collectives():
    quiet = NoCollectives(4)
    dist = dapx.Distribution.create((6, 8), ("c", "b"), nranks=4)
    x = np.arange(48).reshape(6, 8)
    locals_ = {r: x[np.ix_(*dist.global_indices(r))] for r in range(4)}
    a = dapx.DistributedArray(dist, locals_, quiet)
    assert "shape=(6, 8)" in repr(a)
    assert "<svg" in a._repr_html_()
    assert "int64" in a._repr_inline_(80)
    with pytest.raises(AssertionError, match="allgather called"):
        a.gather()  # the guard works


def test_repr_html_colours_each_rank(backend):
    for shape, dist in [((12,), "c"), ((6, 8), ("b", "c")), ((3, 4, 5), "b")]:
        a = dapx.zeros(shape, backend=backend, dist=dist)
        html = a._repr_html_()
        assert html.count("<svg") == 1 and "</svg>" in html
        fills = set(re.findall(r'fill="(#[0-9a-fA-F]{6})"', html))
        assert len(fills) == backend.nranks
        for r in range(backend.nranks):
            assert f"rank {r}" in html
    assert "<pre>" in dapx.asarray(1.0, backend=backend)._repr_html_()


def test_repr_inline():
    a = dapx.zeros((4, 4), np.float32, backend=dapx.simulated(4), dist=("b", "c"), grid=(2, 2))
    text = a._repr_inline_(100)
    assert text == "dapx float32 dist=(b, c) grid=(2, 2)"
    short = a._repr_inline_(12)
    assert len(short) <= 12 and short.endswith("...")


# -- backends ------------------------------------------------------------------------------------


def test_simulated_backend():
    b = dapx.simulated(3)
    assert b.nranks == 3 and b.local_ranks == (0, 1, 2)
    assert b == dapx.simulated(3) and b != dapx.simulated(2)
    assert dapx.simulated(grid=(2, 3)).nranks == 6
    assert b.allgather({0: "x", 1: "y", 2: "z"}) == ["x", "y", "z"]
    for bad in [0, -2, 1.5, True]:
        with pytest.raises(ValueError, match="nranks must be a positive integer"):
            dapx.simulated(bad)
    with pytest.raises(ValueError, match="disagrees with grid"):
        dapx.simulated(4, grid=(2, 3))


def test_default_backend_reads_the_environment(monkeypatch):
    monkeypatch.setenv("DAPX_RANKS", "3")
    monkeypatch.setenv("DAPX_BACKEND", "simulated")
    assert dapx.default_backend() == dapx.simulated(3)
    assert dapx.simulated().nranks == 3
    monkeypatch.delenv("DAPX_BACKEND")
    monkeypatch.setenv("DAPX_RANKS", "5")
    assert dapx.default_backend() == dapx.simulated(5)
    monkeypatch.setenv("DAPX_BACKEND", "carrier-pigeon")
    with pytest.raises(ValueError, match="'carrier-pigeon'"):
        dapx.default_backend()


def test_set_backend_and_use_backend(monkeypatch):
    monkeypatch.setattr(dapx.backends, "_current", None)
    monkeypatch.setenv("DAPX_RANKS", "2")
    monkeypatch.delenv("DAPX_BACKEND", raising=False)
    assert dapx.get_backend() == dapx.simulated(2)
    six = dapx.simulated(6)
    dapx.set_backend(six)
    assert dapx.get_backend() is six
    assert dapx.zeros(12).backend is six
    three = dapx.simulated(3)
    with dapx.use_backend(three) as b:
        assert b is three and dapx.get_backend() is three
        assert dapx.arange(5).distribution.nranks == 3
    assert dapx.get_backend() is six
    with pytest.raises(RuntimeError, match="boom"), dapx.use_backend(three):
        raise RuntimeError("boom")
    assert dapx.get_backend() is six
    with pytest.raises(TypeError, match="expected a dapx backend"):
        dapx.set_backend("simulated")
    with pytest.raises(TypeError, match="expected a dapx backend"), dapx.use_backend(4):
        pass


# -- elementwise operations ----------------------------------------------------------------------


def warned_on_some_rank(backend, caught) -> set[str]:
    """The warning categories in `caught` on any rank (collective)."""
    mine = {w.category.__name__ for w in caught}
    return set().union(*backend.allgather(dict.fromkeys(backend.local_ranks, mine)))


def same(f, dx_args, np_args):
    """``f`` on dapx operands equals ``f`` on NumPy operands, with the same warnings,
    or raises the same error."""
    with warnings.catch_warnings(record=True) as caught_np:
        warnings.simplefilter("always")
        try:
            expected = f(*np_args)
        except Exception as e:  # NumPy refuses: dapx must refuse the same way
            with pytest.raises(type(e)):
                f(*dx_args)
            return None
    with warnings.catch_warnings(record=True) as caught_dx:
        warnings.simplefilter("always")
        got = f(*dx_args)
    expected_warnings = {w.category.__name__ for w in caught_np}
    if expected_warnings:
        # A floating-point warning comes from the ranks whose blocks hold the
        # offending values, so it is looked for on all ranks (NumPy's warnings
        # are the same on every rank, so every rank makes this collective call).
        backend = next(a.backend for a in dx_args if isinstance(a, dapx.DistributedArray))
        assert warned_on_some_rank(backend, caught_dx) == expected_warnings
    else:
        assert not caught_dx, [str(w.message) for w in caught_dx]
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_eq(g, np.asarray(e))
        return got
    assert_eq(got, np.asarray(expected))
    return got


BINARY = [
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.floordiv,
    operator.mod,
    operator.pow,
    operator.lt,
    operator.le,
    operator.eq,
    operator.ne,
    operator.gt,
    operator.ge,
    operator.and_,
    operator.or_,
    operator.xor,
    operator.lshift,
    operator.rshift,
    np.maximum,
    np.arctan2,
    np.hypot,
    np.logical_and,
]
UNARY = [
    operator.neg,
    operator.pos,
    abs,
    operator.invert,
    np.sin,
    np.exp,
    np.sqrt,
    np.square,
    np.negative,
    np.isnan,
    np.sign,
    np.floor,
    np.conj,
    np.logical_not,
    np.rint,
]


@pytest.mark.parametrize("kind", ["b", "b-irregular", "c", "c2", "u"])
def test_operators_and_ufuncs_match_numpy(backend, kind):
    for shape in [(7,), (4, 5), (0, 3)]:
        kw = layout(kind, shape, backend.nranks, seed=3)
        for dtype in DTYPES:
            x, y = data(shape, dtype), data(shape, dtype, offset=1)
            if np.dtype(dtype).kind in "iu":
                y = np.abs(y) % 4 + 1  # small positive: valid shifts, powers and divisors
            a = dapx.asarray(x, backend=backend, **kw)
            b = dapx.asarray(y, backend=backend, **kw)
            for f in BINARY:
                got = same(f, (a, b), (x, y))
                if got is not None:
                    assert got.distribution == a.distribution
                same(f, (a, 2), (x, 2))  # scalar right (``x ** 2`` is np.square, as NumPy's)
                same(f, (3, b), (3, y))  # reflected
                same(f, (a, y), (x, y))  # NumPy right
            for f in UNARY:
                same(f, (a,), (x,))


def test_reflected_operators_keep_the_distributed_layout(backend):
    x = np.abs(data((4, 6), np.float64, offset=1))
    a = dapx.asarray(x, backend=backend, dist="c")
    for f in [
        operator.add,
        operator.sub,
        operator.mul,
        operator.truediv,
        operator.pow,
        operator.floordiv,
        operator.mod,
        operator.lt,
    ]:
        for left in (2.5, np.float32(2), x[0], x):
            got = f(left, a)
            assert isinstance(got, dapx.DistributedArray)
            assert got.distribution == a.distribution
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                assert_eq(got, f(left, x))


def test_in_place_operators(backend):
    x = data((5, 4), np.float64, offset=1)
    a = dapx.asarray(x, backend=backend, dist=("c", "b"))
    blocks = dict(a.locals)
    a += 1
    a *= x
    a /= 2
    a -= dapx.asarray(x, backend=backend)  # other layout, aligned to a's
    expected = (x + 1) * x / 2 - x
    assert_eq(a, expected)
    assert all(a.locals[r] is blocks[r] for r in blocks)  # written in place
    i = dapx.asarray(np.arange(6), backend=backend)
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output"):
        i += 1.5
    assert_eq(i, np.arange(6))


def test_ufunc_keywords(backend):
    x, y = data((6, 5), np.float64), data((6, 5), np.float64, offset=1)
    a = dapx.asarray(x, backend=backend, dist="c")
    b = dapx.asarray(y, backend=backend, dist="b")
    # out=: written into, returned, and in the layout of out.
    out = dapx.zeros((6, 5), backend=backend, dist="b")
    res = np.add(a, b, out=out)
    assert res is out
    assert_eq(out, x + y)
    out_t = dapx.zeros((6, 5), backend=backend, dist="b")
    assert np.multiply(a, 2, out=(out_t,)) is out_t
    assert_eq(out_t, x * 2)
    # where=: only selected elements change.
    mask = (np.arange(30).reshape(6, 5) % 3) == 0
    target = dapx.full((6, 5), -1.0, backend=backend, dist="c")
    np.subtract(a, b, out=target, where=mask)
    expected = np.full((6, 5), -1.0)
    np.subtract(x, y, out=expected, where=mask)
    assert_eq(target, expected)
    dmask = dapx.asarray(mask, backend=backend, dist="b")
    target2 = dapx.full((6, 5), -1.0, backend=backend)
    np.subtract(a, b, out=target2, where=dmask)
    assert_eq(target2, expected)
    # dtype= and casting=.
    assert_eq(np.add(a, b, dtype=np.float32), np.add(x, y, dtype=np.float32))
    i = dapx.asarray(np.arange(30).reshape(6, 5), backend=backend)
    iout = dapx.zeros((6, 5), np.int64, backend=backend)
    with pytest.raises(TypeError, match="Cannot cast"):
        np.add(i, 1.5, out=iout, casting="same_kind")
    np.add(i, 1.5, out=iout, casting="unsafe")
    assert_eq(iout, np.add(np.arange(30).reshape(6, 5), 1.5, casting="unsafe", dtype=np.int64))
    with pytest.raises(TypeError, match="Cannot cast"):
        np.add(i, 1.5, casting="no")
    # out= must be distributed.
    with pytest.raises(TypeError, match="out= must be DistributedArrays"):
        np.add(a, b, out=np.zeros((6, 5)))


def test_multiple_outputs(backend):
    x = data((7, 3), np.float64, offset=1)
    a = dapx.asarray(x, backend=backend, dist="c")
    for f in (np.divmod, np.modf, np.frexp):
        args_dx, args_np = ((a, 1.5), (x, 1.5)) if f is np.divmod else ((a,), (x,))
        got = same(f, args_dx, args_np)
        assert all(g.distribution == a.distribution for g in got)
    q = dapx.zeros((7, 3), backend=backend, dist="b")
    r = dapx.zeros((7, 3), backend=backend, dist="b")
    result = np.divmod(a, 2.0, out=(q, r))
    assert result[0] is q and result[1] is r
    assert_eq(q, x // 2.0)
    assert_eq(r, x % 2.0)
    ints = dapx.asarray(np.arange(-6, 6), backend=backend)
    assert_eq(divmod(ints, 4)[1], np.arange(-6, 6) % 4)


def test_broadcasting(backend):
    x = data((4, 5), np.float64)
    a = dapx.asarray(x, backend=backend, dist=("c", "b"))
    cases = [
        (a + np.arange(5.0), x + np.arange(5.0)),
        (a * np.arange(4.0)[:, None], x * np.arange(4.0)[:, None]),
        (np.ones((1, 5)) - a, np.ones((1, 5)) - x),
        (a + np.float64(2), x + 2),
    ]
    for got, expected in cases:
        assert got.distribution == a.distribution
        assert_eq(got, expected)
    row = dapx.asarray(np.arange(5.0), backend=backend, dist="c")
    assert_eq(a + row, x + np.arange(5.0))
    grown = row + np.zeros((3, 1, 5))
    assert grown.shape == (3, 1, 5)
    assert_eq(grown, np.arange(5.0) + np.zeros((3, 1, 5)))
    assert_eq(row * a, np.arange(5.0) * x)
    s = dapx.asarray(np.float64(3.0), backend=backend)
    assert_eq(a * s, x * 3.0)
    assert_eq(s - a, 3.0 - x)
    assert_eq(s + s, np.float64(6.0))
    assert (s + 1).shape == ()


def test_mixed_layouts_align_to_the_first_distributed_operand(backend):
    x, y = distinct((6, 7), seed=1), distinct((6, 7), seed=2) + 1.0
    layouts = [layout(k, (6, 7), backend.nranks, seed=5) for k in LAYOUTS]
    arrays = [dapx.asarray(x, backend=backend, **kw) for kw in layouts]
    others = [dapx.asarray(y, backend=backend, **kw) for kw in layouts]
    for a in arrays:
        for b in others:
            got = a * b - b
            assert got.distribution == a.distribution
            assert_eq(got, x * y - y)
            assert (y + b * a).distribution == b.distribution


def test_mismatches_raise(backend):
    a = dapx.zeros((4, 5), backend=backend)
    with pytest.raises(ValueError, match="broadcast"):
        a + np.ones(3)
    with pytest.raises(ValueError, match="broadcast"):
        a + dapx.zeros((5, 4), backend=backend)
    with pytest.raises(ValueError, match="non-broadcastable output"):
        np.add(a, 1, out=dapx.zeros((4, 1), backend=backend))
    other = dapx.simulated(backend.nranks + 1)
    with pytest.raises(ValueError, match="different backends"):
        a + dapx.zeros((4, 5), backend=other)
    with pytest.raises(ValueError, match="one entry per ufunc output"):
        np.divmod(a, 2, out=(dapx.zeros((4, 5), backend=backend),))


def test_unsupported_functions_raise_type_error(backend):
    """A dispatched NumPy function dapx does not implement: NumPy's TypeError, no gather."""
    import numpy.lib.recfunctions as rf

    a = dapx.ones((4, 4), backend=backend)
    with pytest.raises(TypeError, match="no implementation found"):
        rf.structured_to_unstructured(a)
    with pytest.raises(TypeError, match="gather"):
        np.save("unused.npy", a)  # refused with a pointer to the parallel writers
