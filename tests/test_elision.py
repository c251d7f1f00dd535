"""Temporary elision: results may reuse a temporary's blocks, never a named array's."""

from __future__ import annotations

import sys
import tracemalloc

import numpy as np
import pytest

import dapx
from dapx.core.array import new_array
from dapx.core.elision import ELISION_ENABLED, refcounts_are_exact

N = 1 << 20  # elements: large enough that one block allocation dominates the peak


@pytest.fixture
def backend():
    return dapx.simulated(2)


@pytest.mark.parametrize(
    ("implementation", "version", "gil", "exact"),
    [
        ("cpython", (3, 10), True, True),
        ("cpython", (3, 13), True, True),
        ("cpython", (3, 13), False, False),  # free-threaded: deferred reference counts
        ("cpython", (3, 14), True, False),  # borrowed references on the stack
        ("cpython", (3, 9), True, False),
        ("pypy", (3, 10), True, False),
    ],
)
def test_elision_only_where_reference_counts_are_exact(implementation, version, gil, exact):
    assert refcounts_are_exact(implementation, version, gil) is exact


def test_this_interpreter_is_judged_by_the_same_rule():
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    assert refcounts_are_exact(sys.implementation.name, sys.version_info[:2], gil) is (
        ELISION_ENABLED
    )


def _unchanged(x: dapx.DistributedArray, expected: np.ndarray) -> None:
    np.testing.assert_array_equal(x.gather(), expected)


def test_module_level_names_are_never_written_into(backend):
    namespace = {"dapx": dapx, "backend": backend}
    exec(
        "x = dapx.arange(12.0, backend=backend)\ny = x + 1\nz = x * 2 - x\n",
        namespace,
    )
    _unchanged(namespace["x"], np.arange(12.0))
    np.testing.assert_array_equal(namespace["y"].gather(), np.arange(12.0) + 1)
    np.testing.assert_array_equal(namespace["z"].gather(), np.arange(12.0))


def test_names_inside_a_function_are_never_written_into(backend):
    def f():
        x = dapx.arange(12.0, backend=backend)
        y = x + 1
        w = x - 1
        return x, y, w

    x, y, w = f()
    _unchanged(x, np.arange(12.0))
    np.testing.assert_array_equal(y.gather(), np.arange(12.0) + 1)
    np.testing.assert_array_equal(w.gather(), np.arange(12.0) - 1)
    for r in backend.local_ranks:
        assert not np.shares_memory(x.local(r), y.local(r))


def test_arguments_are_never_written_into(backend):
    def add_one(x):
        return x + 1

    x = dapx.arange(12.0, backend=backend)
    assert add_one(x) is not x
    _unchanged(x, np.arange(12.0))


def test_comprehension_variables_are_never_written_into(backend):
    arrays = [dapx.full(6, float(k), backend=backend) for k in range(3)]
    shifted = [a + 10 for a in arrays]
    for k, (a, s) in enumerate(zip(arrays, shifted)):
        _unchanged(a, np.full(6, float(k)))
        np.testing.assert_array_equal(s.gather(), np.full(6, k + 10.0))


def test_an_array_also_held_in_a_list_is_never_written_into(backend):
    def f():
        x = dapx.arange(12.0, backend=backend)
        held = [x]
        del x
        y = held[0] * 3
        return held, y

    held, y = f()
    _unchanged(held[0], np.arange(12.0))
    np.testing.assert_array_equal(y.gather(), np.arange(12.0) * 3)


def test_a_view_of_a_temporary_block_keeps_it_from_being_written_into(backend):
    x = dapx.arange(12.0, backend=backend)
    t = x * 2
    view = t.local(0)[:]
    y = t + 1  # `t` is named, and a view of its block is alive
    np.testing.assert_array_equal(view, np.arange(12.0)[:6] * 2)
    np.testing.assert_array_equal(y.gather(), np.arange(12.0) * 2 + 1)


def _peak_of(expression, *args) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = expression(*args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak


@pytest.mark.skipif(not ELISION_ENABLED, reason="no elision on this interpreter")
def test_a_temporary_left_operand_is_reused(backend):
    # `x * 2 + 1` needs one result's worth of blocks when the sum is written into the product.
    x = dapx.arange(float(N), backend=backend)
    result_bytes = N * 8
    peak = _peak_of(lambda a: a * 2 + 1, x)
    assert peak < 1.5 * result_bytes, peak
    # Without a temporary (two named operands) two results' worth are live.
    peak_named = _peak_of(lambda a: (a * 2, a + 1), x)
    assert peak_named > 1.9 * result_bytes, peak_named


def _adopted_like(x):
    """`x`'s values in blocks that view the whole of fresh buffers (reversed), as an exchange
    that adopts its received memory leaves them."""
    blocks = {r: np.ascontiguousarray(x.local(r)[::-1])[::-1] for r in x.backend.local_ranks}
    return new_array(x.distribution, blocks, x.backend, x.dtype)


@pytest.mark.skipif(not ELISION_ENABLED, reason="no elision on this interpreter")
def test_blocks_that_view_a_whole_private_buffer_are_temporaries_too(backend):
    x = dapx.arange(float(N), backend=backend)
    assert all(_adopted_like(x).local(r).base is not None for r in backend.local_ranks)
    result_bytes = N * 8
    peak = _peak_of(lambda a: _adopted_like(a) * 2 + 1, x)
    assert peak < 1.5 * result_bytes, peak  # the one buffer, reused by * and +
    np.testing.assert_array_equal((_adopted_like(x) * 2 + 1).gather(), np.arange(N) * 2.0 + 1)


def test_a_view_of_an_adopted_block_keeps_it_from_being_written_into(backend):
    x = dapx.arange(12.0, backend=backend)
    t = _adopted_like(x)
    view = t.local(0)[1:]
    before = view.copy()
    y = t * 2  # `t` is named, and a view of its buffer is alive
    z = _adopted_like(x)[:] + 1  # a view of the temporary (`[:]`) holds its buffer
    np.testing.assert_array_equal(view, before)
    np.testing.assert_array_equal(y.gather(), np.arange(12.0) * 2)
    np.testing.assert_array_equal(z.gather(), np.arange(12.0) + 1)


def test_into_private_blocks_writes_only_into_blocks_nobody_else_sees(backend):
    """What a rank does for a client's temporary (the dask backend): a new array either way."""
    from dapx.core.elision import into_private_blocks

    x = dapx.arange(12.0, backend=backend)
    t = x * 2
    result = into_private_blocks(np.add, t, 1)
    assert result is not t
    np.testing.assert_array_equal(result.gather(), np.arange(12.0) * 2 + 1)
    for r in backend.local_ranks:  # the blocks were private: written into
        assert np.shares_memory(result.local(r), t.local(r))
    view = x[:]  # blocks that view x's
    assert all(np.shares_memory(view.local(r), x.local(r)) for r in backend.local_ranks)
    result = into_private_blocks(np.multiply, view, 3.0)
    _unchanged(x, np.arange(12.0))
    np.testing.assert_array_equal(result.gather(), np.arange(12.0) * 3)
    for r in backend.local_ranks:
        assert not np.shares_memory(result.local(r), x.local(r))
