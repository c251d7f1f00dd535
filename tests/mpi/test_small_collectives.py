"""Small collectives as raw bytes on real processes: `allgather_array`, `bcast_array`, partials.

Each rank builds every rank's expected value from the rank number, so the
received rows can be checked byte for byte.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import dapx
from dapx.functions.small_partials import gather_values

pytestmark = pytest.mark.mpi


def _value(rank, shape, dtype):
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) * 3 + 100 * rank + 1).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.int8, np.bool_, np.complex64, "M8[ms]"])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (0,)])
def test_allgather_array_gives_every_rank_every_row_in_order(backend, dtype, shape):
    me = backend.comm.rank
    got = backend.allgather_array({me: _value(me, shape, dtype)})
    assert got.shape == (backend.nranks, *shape) and got.dtype == np.dtype(dtype)
    for r in range(backend.nranks):
        assert got[r].tobytes() == _value(r, shape, dtype).tobytes()


def test_allgather_array_of_a_structured_scalar(backend):
    me = backend.comm.rank
    rec = np.dtype([("x", "<i2"), ("y", "<f8")])
    got = backend.allgather_array({me: np.array((me, me / 3), rec)})
    assert got["x"].tolist() == list(range(backend.nranks))
    assert got["y"].tolist() == [r / 3 for r in range(backend.nranks)]


def test_allgather_array_refuses_objects_on_every_rank(backend):
    me = backend.comm.rank
    with pytest.raises(TypeError, match="fixed-size data only"):
        backend.allgather_array({me: np.array([None])})
    assert backend.allgather_array({me: np.int64(me)}).tolist() == list(range(backend.nranks))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.bool_, "M8[ms]"])
@pytest.mark.parametrize("shape", [(), (7,), (3, 2), (0, 4)])
def test_bcast_array_gives_every_rank_the_roots_bits(backend, dtype, shape):
    me = backend.comm.rank
    for root in range(backend.nranks):
        mine = _value(me, shape, dtype) if me == root else None
        got = backend.bcast_array(mine, root, shape, dtype)
        assert got.shape == shape and got.dtype == np.dtype(dtype)
        assert got.tobytes() == _value(root, shape, dtype).tobytes()
    with pytest.raises(TypeError, match="fixed-size data only"):
        backend.bcast_array(None, 0, (1,), object)


def test_gathered_values_keep_types_and_bits(backend):
    me = backend.comm.rank
    value = (np.float32(me / 7), np.longlong(-me), me, np.array(me * 0.1)) if me % 2 else None
    got, warned = gather_values(backend, {me: value})
    assert warned == []
    for r, v in enumerate(got):
        if r % 2 == 0:
            assert v is None
            continue
        expected = (np.float32(r / 7), np.longlong(-r), r, np.array(r * 0.1))
        assert [type(c) for c in v] == [type(c) for c in expected]
        assert [np.asarray(c).tobytes() for c in v] == [np.asarray(c).tobytes() for c in expected]


def test_one_rank_that_needs_pickle_takes_every_rank_along(backend):
    me = backend.comm.rank
    value = 2**80 + me if me == backend.nranks - 1 else np.float64(me)
    got, _ = gather_values(backend, {me: value})
    last = backend.nranks - 1
    assert got == [np.float64(r) for r in range(last)] + [2**80 + last]


def test_sum_is_the_rank_order_fold_of_the_local_partials(backend):
    me = backend.comm.rank
    x = np.random.default_rng([7, me]).standard_normal(333 + me) * 1e6
    a = dapx.from_local(x, backend=backend)
    partials = [np.add.reduce(p) for p in backend.comm.allgather(x)]
    expected = functools.reduce(np.add, partials)
    assert np.asarray(np.sum(a)).tobytes() == expected.tobytes()


def test_a_warning_raised_on_one_rank_reaches_every_rank(backend):
    me = backend.comm.rank
    last = backend.nranks - 1
    x = np.full(4, 1e308 if me == last else 1.0)  # only the last rank overflows
    a = dapx.from_local(x, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        total = float(np.sum(a))
    assert np.isinf(total)
    assert [str(w.message) for w in caught] == ["overflow encountered in reduce"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        float(np.sum(dapx.from_local(np.ones(4), backend=backend)))
    assert caught == []


def test_a_warning_in_a_shared_warnings_block_reaches_every_rank(backend):
    me = backend.comm.rank
    x = np.full(4, 1e308 if me == backend.nranks - 1 else 1.0)
    a = dapx.from_local(x, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        total = np.sum(a, keepdims=True)  # the general path, inside `shared_warnings`
    assert np.isinf(total.gather()).all()
    assert [str(w.message) for w in caught] == ["overflow encountered in reduce"]
