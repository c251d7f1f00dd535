"""`np.isin` against a large distributed test set and weighted quantiles, on real processes.

Each rank holds only its blocks; the largest number of elements one rank
receives in one all-to-all is recorded by wrapping the MPI backend's
``alltoallv``, and must stay near its share of the data (the test set is not
copied to every rank, the weighted array not moved to rank 0).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import dapx
from dapx.functions import sets

pytestmark = pytest.mark.mpi


def _largest_receive(backend, monkeypatch, func):
    sizes = []
    original = type(backend).alltoallv

    def alltoallv(self, sends, recvcounts, *args, **kwargs):
        received = original(self, sends, recvcounts, *args, **kwargs)
        sizes.extend(sum(p.size for p in pieces.values()) for pieces in received.values())
        return received

    monkeypatch.setattr(type(backend), "alltoallv", alltoallv)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dapx.GatherWarning)
        result = func()
    monkeypatch.undo()
    return result, max(backend.allgather({backend.comm.rank: max(sizes, default=0)}))


@pytest.mark.parametrize("keys", ["random", "all_equal", "strings"])
def test_isin_with_a_distributed_test_set(backend, keys, monkeypatch):
    P = backend.nranks
    rng = np.random.default_rng(11)
    if keys == "random":
        x, t = rng.integers(0, 9000, 3001), rng.integers(0, 9000, sets.ISIN_GATHER_LIMIT + 2000)
    elif keys == "all_equal":
        x, t = np.full(3001, 7.0), np.full(sets.ISIN_GATHER_LIMIT + 2000, 7.0)
    else:
        x = rng.integers(0, 9000, 3001).astype("U4")
        t = rng.integers(0, 9000, sets.ISIN_GATHER_LIMIT + 2000).astype("U5")
    a = dapx.asarray(x, backend=backend, dist="c")
    ta = dapx.asarray(t, backend=backend)
    for invert in (False, True):
        found, largest = _largest_receive(
            backend, monkeypatch, lambda invert=invert: np.isin(a, ta, invert=invert)
        )
        np.testing.assert_array_equal(found.gather(), np.isin(x, t, invert=invert))
        assert largest <= 2 * math.ceil((x.size + t.size) / P) + 4 * P
        if keys == "all_equal":
            assert largest <= 2 * P
    np.testing.assert_array_equal(np.isin(x[:50], ta), np.isin(x[:50], t))


@pytest.mark.parametrize("func", [np.quantile, np.nanpercentile])
def test_weighted_quantiles_stay_distributed(backend, func, monkeypatch):
    rng = np.random.default_rng(12)
    n = 4001
    x = rng.standard_normal(n)
    x[::17] = np.nan
    w = rng.random(n)  # float weights: the exact scan goes from rank to rank
    q = [0.0, 0.25, 0.5, 0.9, 1.0]
    q = q if func is np.quantile else np.multiply(q, 100)
    a = dapx.asarray(x, backend=backend, dist="c")
    wd = dapx.asarray(w, backend=backend, dist="b")
    kw = {"method": "inverted_cdf"}
    result, largest = _largest_receive(backend, monkeypatch, lambda: func(a, q, weights=wd, **kw))
    np.testing.assert_array_equal(result.gather(), func(x, q, weights=w, **kw))
    assert largest <= 1.5 * math.ceil(n / backend.nranks) + backend.nranks
    y = np.where(np.isnan(x), 0.5, x)
    b = dapx.asarray(y, backend=backend, dist="c")
    ints = rng.integers(0, 5, n)
    got = np.quantile(b, [0.3, 0.6], weights=dapx.asarray(ints, backend=backend), **kw)
    np.testing.assert_array_equal(got.gather(), np.quantile(y, [0.3, 0.6], weights=ints, **kw))
