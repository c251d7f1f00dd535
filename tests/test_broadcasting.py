"""broadcast_to, broadcast_arrays and unravel_index on distributed arrays, against NumPy."""

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


@pytest.mark.parametrize("kind", ("b", "c", "u"))
def test_broadcast_to_and_arrays(backend, kind):
    x = _data((1, 6))
    a = _dist(x, kind, backend)
    for shape in [(1, 6), (4, 6), (2, 3, 6), (3, 1, 6)]:
        assert_eq(np.broadcast_to(a, shape), np.broadcast_to(x, shape))
    y, z = np.broadcast_arrays(a, np.ones((5, 1)))
    assert isinstance(z, np.ndarray)
    assert_eq(y, np.broadcast_to(x, (5, 6)))
    s = dapx.asarray(np.float64(3.0), backend=backend)
    assert_eq(np.broadcast_to(s, (3, 2)), np.full((3, 2), 3.0))
    with pytest.raises(ValueError, match="broadcast"):
        np.broadcast_to(a, (6, 2))


def test_unravel_index(backend):
    flat = np.array([0, 5, 7, 11, 3, 8])
    i = _dist(flat, "c", backend)
    for order in ("C", "F"):
        for r, e in zip(
            np.unravel_index(i, (3, 4), order=order), np.unravel_index(flat, (3, 4), order=order)
        ):
            assert_eq(r, e)
    with pytest.raises(ValueError, match="out of bounds"):
        np.unravel_index(i, (2, 3))
