"""Small collectives without pickle: `allgather_array`, `bcast_array`, the byte slots of partials.

The MPI side runs in tests/mpi/test_small_collectives.py; here the simulated
backend (the ABC's default) and the codec, whose exact round trip is what keeps
results bitwise identical across backends.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import dapx
from dapx.backends import Backend, SimulatedBackend
from dapx.functions.small_partials import SLOT, decode, encode, gather_values


class Counting(SimulatedBackend):
    """A simulated backend that counts pickled and buffer allgathers separately."""

    def __init__(self, nranks):
        super().__init__(nranks)
        self.calls = {"allgather": 0, "allgather_array": 0}

    def allgather(self, values):
        self.calls["allgather"] += 1
        return super().allgather(values)

    def allgather_array(self, values):
        self.calls["allgather_array"] += 1
        return np.stack([np.asarray(values[r]) for r in self.local_ranks])


# -- allgather_array ---------------------------------------------------------------------------


def test_the_default_is_the_abc_s_and_only_mpi_overrides_it():
    from dapx.backends.mpi import MPIBackend

    assert SimulatedBackend.allgather_array is Backend.allgather_array
    assert MPIBackend.allgather_array is not Backend.allgather_array
    assert SimulatedBackend.bcast_array is Backend.bcast_array
    assert MPIBackend.bcast_array is not Backend.bcast_array


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.int8, "M8[s]"])
def test_bcast_array_gives_the_roots_array_in_the_agreed_shape_and_dtype(dtype):
    b = dapx.simulated(3)
    value = np.arange(6).astype(dtype)
    got = b.bcast_array(value, 2, (2, 3), dtype)
    assert got.shape == (2, 3) and got.dtype == np.dtype(dtype)
    assert got.tobytes() == value.tobytes()
    with pytest.raises(TypeError, match="fixed-size data only"):
        b.bcast_array(np.array([None]), 0, (1,), object)


@pytest.mark.parametrize(
    "dtype", [np.float64, np.float32, np.int8, np.uint64, np.bool_, np.complex128, "M8[s]"]
)
@pytest.mark.parametrize("shape", [(), (3,), (2, 2), (0,)])
def test_allgather_array_stacks_in_rank_order(dtype, shape):
    b = dapx.simulated(3)
    values = {
        r: (np.arange(int(np.prod(shape))).reshape(shape) + 10 * r).astype(dtype) for r in (2, 0, 1)
    }
    got = b.allgather_array(values)
    assert got.shape == (3, *shape) and got.dtype == np.dtype(dtype)
    for r in range(3):
        assert got[r].tobytes() == values[r].tobytes()


def test_allgather_array_takes_scalars_and_structured_dtypes():
    b = dapx.simulated(2)
    got = b.allgather_array({0: np.float32(1.5), 1: np.float32(-2.0)})
    assert got.dtype == np.float32 and got.tolist() == [1.5, -2.0]
    rec = np.dtype([("x", "<i4"), ("y", "<f8")])
    got = b.allgather_array({0: np.array((1, 2.0), rec), 1: np.array((3, 4.0), rec)})
    assert got.dtype == rec and got["x"].tolist() == [1, 3] and got["y"].tolist() == [2.0, 4.0]


def test_allgather_array_refuses_mismatches_and_objects():
    b = dapx.simulated(2)
    with pytest.raises(ValueError, match="rank 1 passes shape \\(3,\\)"):
        b.allgather_array({0: np.zeros(2), 1: np.zeros(3)})
    with pytest.raises(ValueError, match="dtype float32"):
        b.allgather_array({0: np.zeros(2), 1: np.zeros(2, np.float32)})
    with pytest.raises(TypeError, match="fixed-size data only"):
        b.allgather_array({0: np.array([None]), 1: np.array([None])})
    with pytest.raises(ValueError, match="needs a value for ranks \\[1\\]"):
        b.allgather_array({0: np.zeros(2)})


# -- the slots of partials -----------------------------------------------------------------------

ROUND_TRIP = [
    np.float64(2.5),
    np.float64(-0.0),
    np.float64(np.nan),
    np.float32(1e-30),
    np.float16(3.0),
    np.longdouble(1) / 3,
    np.complex64(1 - 2j),
    np.complex128(np.inf + 1j),
    np.int8(-7),
    np.uint64(2**64 - 1),
    np.int_(5),
    np.longlong(5),
    np.intc(-3),
    np.bool_(True),
    np.array(4.0),
    np.array(7, np.int16),
    True,
    -(2**63),
    2**63 - 1,
    2.5,
    1 - 1j,
    None,
]


@pytest.mark.parametrize("value", ROUND_TRIP, ids=repr)
@pytest.mark.parametrize("warned", [False, True])
def test_a_slot_gives_back_the_same_type_and_bits(value, warned):
    slot = encode(value, warned)
    assert slot.dtype == np.uint8 and slot.shape == (SLOT,)
    back = decode(slot.tobytes())
    assert type(back) is type(value)
    if value is not None:
        assert np.asarray(back).tobytes() == np.asarray(value).tobytes()
        assert np.asarray(back).dtype == np.asarray(value).dtype
    if isinstance(value, np.ndarray):
        back[...] = 0  # a writable copy, not a view of the received bytes
        assert value != 0


def test_a_slot_holds_a_tuple_of_mixed_components():
    value = (np.float32(1.5), np.array(3, np.intp), 7, False)
    back = decode(encode(value).tobytes())
    assert [type(c) for c in back] == [type(c) for c in value]
    assert [np.asarray(c).tobytes() for c in back] == [np.asarray(c).tobytes() for c in value]
    assert decode(encode((np.int8(1),)).tobytes()) == (np.int8(1),)  # a 1-tuple stays one


@pytest.mark.parametrize(
    "value",
    [
        2**63,
        np.zeros(2),
        (1, 2, 3, 4, 5),
        "text",
        np.clongdouble(1),
        np.datetime64(1, "s"),
        np.zeros((), ">f8"),
        np.array(None),
    ],
    ids=repr,
)
def test_values_no_slot_holds_are_marked(value):
    with pytest.raises(ValueError, match="travels pickled"):
        decode(encode(value).tobytes())


def test_gather_values_uses_one_buffer_collective():
    b = Counting(3)
    values = {0: np.float64(1.0), 1: None, 2: (np.int8(2), 3)}
    got, warned = gather_values(b, values)
    assert got == [np.float64(1.0), None, (np.int8(2), 3)] and warned == []
    assert b.calls == {"allgather": 0, "allgather_array": 1}


def test_gather_values_falls_back_to_pickle_when_one_rank_needs_it():
    b = Counting(3)
    values = {0: np.float64(1.0), 1: 2**70, 2: np.float64(3.0)}
    got, warned = gather_values(b, values, [(RuntimeWarning, "w")])
    assert got == [1.0, 2**70, 3.0] and type(got[1]) is int
    assert warned == [[(RuntimeWarning, "w")]] * 3
    assert b.calls == {"allgather": 1, "allgather_array": 1}


def test_warnings_travel_only_when_some_rank_recorded_any():
    b = Counting(2)
    values = {0: np.float64(1.0), 1: np.float64(2.0)}
    assert gather_values(b, values, [])[1] == []
    assert b.calls == {"allgather": 0, "allgather_array": 1}
    seen = [(RuntimeWarning, "overflow encountered in reduce")]
    assert gather_values(b, values, seen)[1] == [seen, seen]
    assert b.calls == {"allgather": 1, "allgather_array": 2}


# -- the engine on top ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16, np.complex64, np.bool_])
def test_sum_combines_the_gathered_partials_in_rank_order(dtype):
    b = Counting(4)
    x = (np.random.default_rng(1).standard_normal(1001) * 1e3).astype(dtype)
    a = dapx.asarray(x, backend=b, dist="c")
    b.calls.update(allgather=0, allgather_array=0)
    got = np.sum(a)
    assert b.calls == {"allgather": 0, "allgather_array": 1}
    partials = [np.add.reduce(a.locals[r], axis=None) for r in range(4)]
    expected = functools.reduce(np.add, partials)
    assert got.dtype == expected.dtype and np.asarray(got).tobytes() == expected.tobytes()


def test_full_reductions_of_the_engine_use_the_buffer_path():
    b = Counting(3)
    x = np.arange(20.0)
    a = dapx.asarray(x, backend=b)
    b.calls.update(allgather=0, allgather_array=0)
    # argmax (value and index), mean with where= (sums and counts), max (no identity): each
    # gathers its partials once, as bytes; the warnings flag is a second byte collective.
    assert int(np.argmax(a)) == 19
    assert float(np.mean(a, where=x > 4)) == np.mean(x, where=x > 4)
    assert float(np.max(a)) == 19.0
    assert b.calls["allgather"] == 0 and b.calls["allgather_array"] >= 3


def test_a_warning_on_one_rank_reaches_every_rank_once():
    b = Counting(3)
    x = np.array([1.0, 2.0, 3.0, 4.0, 1e308, 1e308])  # only rank 2 overflows
    a = dapx.asarray(x, backend=b)
    b.calls.update(allgather=0, allgather_array=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert np.isinf(float(np.sum(a)))
    assert [str(w.message) for w in caught] == ["overflow encountered in reduce"]
    assert b.calls == {"allgather": 1, "allgather_array": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="overflow"):
            np.sum(a)


def test_an_empty_rank_of_a_reduction_without_identity_sends_none():
    b = Counting(4)
    a = dapx.asarray(np.array([3.0, -1.0]), backend=b)  # ranks 2 and 3 hold nothing
    b.calls.update(allgather=0, allgather_array=0)
    assert float(np.min(a)) == -1.0
    assert b.calls["allgather"] == 0
    with pytest.raises(ValueError, match="zero-size array"):
        np.min(dapx.asarray(np.zeros(0), backend=b))


def test_shared_warnings_send_a_flag_and_the_text_only_when_needed():
    b = Counting(3)
    x = np.array([1.0, 2.0, 3.0, 4.0, 1e308, 1e308])  # only rank 2 overflows
    a = dapx.asarray(x, backend=b)
    b.calls.update(allgather=0, allgather_array=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        total = np.sum(a, keepdims=True)  # the general path
    assert [str(w.message) for w in caught] == ["overflow encountered in reduce"]
    # the partials and the warnings flags as bytes, then the warnings' text
    assert b.calls == {"allgather": 1, "allgather_array": 2}
    assert np.isinf(total.gather()).all()
    b.calls.update(allgather=0, allgather_array=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.sum(dapx.asarray(np.ones(6), backend=b), keepdims=True)
    assert caught == [] and b.calls == {"allgather": 0, "allgather_array": 2}
