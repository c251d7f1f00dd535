"""Windows over distributed arrays: sliding_window_view and gradient, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import dapx
from dapx.testing import assert_eq, layout


def _data(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _dist(x, kind, backend):
    return dapx.asarray(x, backend=backend, **layout(kind, x.shape, backend.nranks, seed=1))


WINDOWS = {
    1: [(1, 0), (3, 0), (9, 0), (0, 0), ((2,), None), ((2, 3), (0, 0))],
    2: [(3, 0), (7, -1), ((2, 2), (0, 0)), ((2, 3), None), ((5, 1), (0, 1)), (0, 1)],
    3: [(2, 1), ((3, 4, 2), None), ((2, 2), (-1, 0)), (6, 2)],
}


@pytest.mark.parametrize("kind", ("b", "b-irregular", "c", "c2", "u"))
@pytest.mark.parametrize("shape", [(9,), (5, 7), (3, 4, 6)])
def test_sliding_window_view(backend, kind, shape):
    swv = np.lib.stride_tricks.sliding_window_view
    x = _data(shape)
    a = _dist(x, kind, backend)
    for window, axis in WINDOWS[len(shape)]:
        result = swv(a, window, axis)
        assert_eq(result, swv(x, window, axis), err_msg=f"window {window} axis {axis}")
        assert not any(b.flags.writeable for b in result.locals.values() if b.size)
    assert_eq(swv(a, 2, 0, writeable=True), swv(x, 2, 0))
    with pytest.raises(ValueError, match="larger than input"):
        swv(a, shape[0] + 1, 0)
    with pytest.raises(ValueError, match="negative"):
        swv(a, -1, 0)


@pytest.mark.parametrize("kind", ("b", "b-irregular", "c2", "u"))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_gradient(backend, kind, dtype):
    x = _data((5, 7), dtype)
    a = _dist(x, kind, backend)
    coords = np.cumsum(np.random.default_rng(2).uniform(0.5, 2.0, 7))
    for args, kw in [
        ((), {}),
        ((0.5,), {}),
        ((2.0, coords), {}),
        ((), {"edge_order": 2}),
        ((coords,), {"axis": 1, "edge_order": 2}),
        ((np.arange(5),), {"axis": 0}),
        ((), {"axis": -1}),
    ]:
        expected = np.gradient(x, *args, **kw)
        result = np.gradient(a, *args, **kw)
        expected = expected if isinstance(expected, tuple) else (expected,)
        result = result if isinstance(result, tuple) else (result,)
        for r, e in zip(result, expected):
            assert_eq(r, e, rtol=0)  # NumPy's formulas, element by element
    with pytest.raises(ValueError, match="too small"):
        np.gradient(_dist(x[:2], kind, backend), axis=0, edge_order=2)
    with pytest.raises(ValueError, match="greater than 2"):
        np.gradient(a, edge_order=3)
