"""DistributedArray's ndarray methods: NumPy's signatures, docstrings and results."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import dapx
from dapx import DistributedArray

# method -> the NumPy function whose parameters (after the array) it takes
FUNCTIONS = {
    "sum": np.sum,
    "prod": np.prod,
    "mean": np.mean,
    "std": np.std,
    "var": np.var,
    "min": np.min,
    "max": np.max,
    "argmin": np.argmin,
    "argmax": np.argmax,
    "any": np.any,
    "all": np.all,
    "ptp": np.ptp,
    "cumsum": np.cumsum,
    "cumprod": np.cumprod,
    "argsort": np.argsort,
    "searchsorted": np.searchsorted,
    "squeeze": np.squeeze,
    "swapaxes": np.swapaxes,
    "round": np.round,
}
OTHERS = ["astype", "copy", "conj", "conjugate", "transpose", "reshape", "ravel", "flatten"]
OTHERS += ["nonzero", "clip"]


#: Parameters newer NumPy releases added that dapx does not implement yet (keyword-only, so
#: the methods' other parameters keep their positions): NumPy 2.5's sort order.
NOT_YET = {"descending"}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_methods_take_the_numpy_functions_parameters(name):
    method = inspect.signature(getattr(DistributedArray, name))
    function = inspect.signature(FUNCTIONS[name])
    expected = [p for p in list(function.parameters.values())[1:] if p.name not in NOT_YET]
    assert list(method.parameters)[1:] == [p.name for p in expected]
    for p in expected:
        assert method.parameters[p.name].kind == p.kind, p.name


@pytest.mark.parametrize("name", sorted(FUNCTIONS) + OTHERS)
def test_methods_have_docstrings_and_no_bare_varargs(name):
    method = getattr(DistributedArray, name)
    assert method.__doc__ and method.__doc__.strip()
    kinds = [p.kind for p in inspect.signature(method).parameters.values()]
    if name not in ("transpose", "reshape", "clip"):  # NumPy's own *axes, *shape, **kwargs
        assert inspect.Parameter.VAR_POSITIONAL not in kinds
        assert inspect.Parameter.VAR_KEYWORD not in kinds


def _compare(got, expected):
    got = got.gather() if isinstance(got, DistributedArray) else got
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12, atol=0)
    assert np.asarray(got).dtype == np.asarray(expected).dtype


CALLS = [
    ("sum", (), {"axis": 0, "keepdims": True}),
    ("sum", (1,), {"dtype": np.float32}),
    ("sum", (), {"initial": 5.0, "where": "mask"}),
    ("prod", (), {"axis": 1, "initial": 2.0}),
    ("mean", (), {"axis": (0, 1), "keepdims": True}),
    ("mean", (), {"where": "mask"}),
    ("std", (), {"axis": 0, "ddof": 1}),
    ("std", (), {"correction": 1, "keepdims": True}),
    ("var", (0,), {}),
    ("min", (), {"axis": 1, "initial": -1.0}),
    ("max", (), {"axis": 0, "where": "mask", "initial": -100.0}),
    ("argmin", (), {"axis": 1, "keepdims": True}),
    ("argmax", (0,), {}),
    ("any", (), {"axis": 0, "keepdims": True}),
    ("all", (), {"where": "mask"}),
    ("ptp", (), {"axis": 1, "keepdims": True}),
    ("cumsum", (), {"axis": 0, "dtype": np.float32}),
    ("cumprod", (1,), {}),
    ("argsort", (), {"axis": 1, "stable": True}),
    ("round", (), {"decimals": 1}),
    ("clip", (0.2, 0.7), {}),
    ("clip", (), {"min": 0.2}),
    ("reshape", (6, 4), {}),
    ("reshape", ((4, 6),), {"order": "C"}),
    ("transpose", (1, 0), {}),
    ("transpose", ((1, 0),), {}),
    ("swapaxes", (0, 1), {}),
    ("ravel", (), {}),
    ("flatten", (), {}),
    ("astype", (np.float32,), {}),
    ("copy", (), {}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), CALLS, ids=lambda v: str(v))
def test_methods_match_numpy(name, args, kwargs):
    x = np.random.default_rng(7).random((4, 6))
    mask = x > 0.3
    kwargs = {k: (mask if v == "mask" else v) for k, v in kwargs.items()}
    a = dapx.asarray(x, grid=(3, 1), backend=dapx.simulated(3))
    # NumPy's function where there is one (ndarray's methods take fewer keywords, e.g. no
    # `correction`), else the ndarray method.
    expected = FUNCTIONS[name](x, *args, **kwargs) if name in FUNCTIONS else None
    if name not in FUNCTIONS:
        expected = getattr(x, name)(*args, **kwargs)
    _compare(getattr(a, name)(*args, **kwargs), expected)
