"""Python operators give NumPy's result dtypes and bits, ``**`` with its scalar fast path."""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest

import dapx

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.uint64, np.float32, np.float64]
DTYPES += [np.complex64, np.complex128]
OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv]
OPERATORS += [operator.mod, operator.pow, operator.and_, operator.or_, operator.xor]
OPERATORS += [operator.lshift, operator.rshift, operator.lt, operator.eq]
SCALARS = [2, 2.0, 0.5, -1, -1.0, 1, 3, 0, True, 1j, np.float32(2), np.int8(2)]


def _outcome(func):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = func()
        except (TypeError, ValueError, ZeroDivisionError, OverflowError) as e:
            return type(e).__name__
    result = result.gather() if isinstance(result, dapx.DistributedArray) else result
    return np.asarray(result)


def _same(got, expected):
    if isinstance(expected, str) or isinstance(got, str):
        assert got == expected
    else:
        assert got.dtype == expected.dtype
        assert got.tobytes() == expected.tobytes()  # the same bits, not just close


def _data(dtype):
    rng = np.random.default_rng(3)
    if np.dtype(dtype) == bool:
        return rng.random(7) > 0.5
    x = (rng.standard_normal(7) * 3 + 0.5).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(7).astype(dtype)
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", OPERATORS, ids=lambda o: o.__name__)
def test_operators_with_scalars_and_arrays_match_numpy(op, dtype):
    x = _data(dtype)
    a = dapx.asarray(x, backend=dapx.simulated(3))
    others = [*SCALARS, *(_data(d) for d in DTYPES)]
    for other in others:
        _same(_outcome(lambda o=other: op(a, o)), _outcome(lambda o=other: op(x, o)))
        _same(_outcome(lambda o=other: op(o, a)), _outcome(lambda o=other: op(o, x)))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("exponent", [2, 2.0, 0.5, -1, 1, 3])
def test_power_of_a_temporary_and_in_place_match_numpy(dtype, exponent):
    x = _data(dtype)
    a = dapx.asarray(x, backend=dapx.simulated(2))
    # A temporary left operand may be written into (temporary elision): still NumPy's result.
    _same(_outcome(lambda: (a + 0) ** exponent), _outcome(lambda: (x + 0) ** exponent))

    def in_place(v):
        v **= exponent
        return v

    _same(_outcome(lambda: in_place(a.copy())), _outcome(lambda: in_place(x.copy())))


def test_boolean_square_is_int8_as_in_numpy():
    a = dapx.asarray(np.array([True, False, True]), backend=dapx.simulated(2))
    assert (a**2).dtype == np.int8
    assert (a**3).dtype == np.int64
