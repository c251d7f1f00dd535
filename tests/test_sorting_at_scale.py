"""The sorting family on skewed keys: results against NumPy, balance, memory bound.

Inputs are the ones that break naive sample sorts: 90% of the keys equal, all
equal, sorted descending, mostly NaN, a few distinct integers. The memory
bound is asserted on a measured quantity: the backend's `alltoallv` is
wrapped and the largest number of elements any local rank receives in one
exchange is recorded; it must stay within ``2 * ceil(N / P)`` (or twice the
largest input block, for layouts whose blocks are themselves uneven, since
the result comes back in the input's layout).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import dapx
from dapx.testing import assert_eq, layout

N = 601  # not divisible by any rank count 2-6
C = 2  # the allowed factor over one rank's share


def inputs(kind: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    if kind == "random":
        return rng.standard_normal(N)
    if kind == "ninety_equal":
        return np.where(rng.random(N) < 0.9, 1.5, rng.standard_normal(N))
    if kind == "all_equal":
        return np.full(N, 3.0)
    if kind == "descending":
        return np.arange(N, 0, -1) * 0.5
    if kind == "nan_heavy":
        return np.where(rng.random(N) < 0.7, np.nan, rng.standard_normal(N))
    if kind == "few_ints":
        return rng.integers(0, 4, N)
    raise ValueError(kind)


SKEWED = ["ninety_equal", "all_equal", "descending", "nan_heavy", "few_ints"]
KINDS = ["random", *SKEWED]
LAYOUTS = ["b", "c", "b-irregular", "u"]


class Received:
    """Wraps the backend class's ``alltoallv``; records the elements each rank receives."""

    def __init__(self, backend, monkeypatch):
        self.sizes: list[int] = []
        original = type(backend).alltoallv
        recorder = self

        def alltoallv(self, sends, recvcounts, *args, **kwargs):
            received = original(self, sends, recvcounts, *args, **kwargs)
            for pieces in received.values():
                recorder.sizes.append(sum(p.size for p in pieces.values()))
            return received

        monkeypatch.setattr(type(backend), "alltoallv", alltoallv)

    @property
    def largest(self) -> int:
        return max(self.sizes, default=0)


def distributed(x, backend, kind="b"):
    return dapx.asarray(x, backend=backend, **layout(kind, x.shape, backend.nranks, seed=3))


def share(a) -> int:
    """One rank's share of `a`: ceil(N / P), or its largest block if that is larger."""
    blocks = a.backend.allgather({r: b.size for r, b in a.locals.items()})
    return max(math.ceil(a.size / a.backend.nranks), max(blocks))


def measured(func, a, monkeypatch):
    """`func(a)` and the largest number of elements a rank received in one exchange."""
    rec = Received(a.backend, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dapx.GatherWarning)
        result = func(a)
    monkeypatch.undo()
    largest = max(a.backend.allgather(dict.fromkeys(a.backend.local_ranks, rec.largest)))
    return result, largest


@pytest.mark.parametrize("lay", LAYOUTS)
@pytest.mark.parametrize("kind", KINDS)
def test_sort_and_argsort(backend, kind, lay, monkeypatch):
    x = inputs(kind)
    a = distributed(x, backend, lay)
    s, largest = measured(np.sort, a, monkeypatch)
    assert largest <= C * share(a)
    assert s.distribution == a.distribution  # the input's layout: balanced as the input
    assert_eq(s, np.sort(x))
    i, largest = measured(np.argsort, a, monkeypatch)
    assert largest <= C * share(a)
    assert_eq(i, np.argsort(x, kind="stable"))
    assert_eq(np.sort(a, kind="stable"), np.sort(x, kind="stable"))


def test_all_equal_keys_spread_evenly(backend, monkeypatch):
    """Ties are split by global index: every rank receives about its share of equal keys."""
    x = np.full(6 * 1000, 2)
    a = distributed(x, backend)
    rec = Received(backend, monkeypatch)
    s = np.sort(a)
    monkeypatch.undo()
    largest = max(backend.allgather(dict.fromkeys(backend.local_ranks, rec.largest)))
    assert largest <= math.ceil(x.size / backend.nranks)
    assert_eq(s, x)


@pytest.mark.parametrize("kind", KINDS)
def test_unique(backend, kind, monkeypatch):
    x = inputs(kind)
    a = distributed(x, backend, "c")
    u, largest = measured(np.unique, a, monkeypatch)
    assert largest <= C * share(a)
    assert_eq(u, np.unique(x))
    sizes = backend.allgather({r: b.size for r, b in u.locals.items()})
    assert max(sizes) - min(sizes) <= 1  # even blocks
    (values, counts), largest = measured(lambda b: np.unique(b, return_counts=True), a, monkeypatch)
    assert largest <= C * share(a)
    ev, ec = np.unique(x, return_counts=True)
    assert_eq(values, ev)
    assert_eq(counts, ec)


def test_unique_heavy_duplicates_deduplicates_before_exchanging(backend, monkeypatch):
    """Integers in 0..9 among 6,000: no rank receives more than P copies of each value."""
    x = np.random.default_rng(1).integers(0, 10, 6000)
    a = distributed(x, backend)
    u, largest = measured(np.unique, a, monkeypatch)
    assert largest <= 10 * backend.nranks
    assert_eq(u, np.unique(x))


STATISTICS = {
    "median": (np.median, {}),
    "nanmedian": (np.nanmedian, {}),
    "quantile": (np.quantile, {"q": [0.0, 0.1, 0.5, 0.95, 1.0]}),
    "quantile_scalar": (np.quantile, {"q": 0.3}),
    "quantile_nearest": (np.quantile, {"q": [0.25, 0.75], "method": "nearest"}),
    "quantile_inverted_cdf": (np.quantile, {"q": [0.25, 0.5], "method": "inverted_cdf"}),
    "quantile_median_unbiased": (np.quantile, {"q": 0.4, "method": "median_unbiased"}),
    "percentile": (np.percentile, {"q": [5, 50, 99]}),
    "nanquantile": (np.nanquantile, {"q": [0.2, 0.8]}),
    "nanpercentile": (np.nanpercentile, {"q": 10}),
}


@pytest.mark.parametrize("name", list(STATISTICS))
@pytest.mark.parametrize("kind", KINDS)
def test_order_statistics_over_everything(backend, kind, name, monkeypatch):
    func, kw = STATISTICS[name]
    x = inputs(kind)
    a = distributed(x, backend, "b-irregular")
    result, largest = measured(lambda b: func(b, **kw), a, monkeypatch)
    assert largest <= C * share(a)  # not the whole array on rank 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = func(x, **kw)
    assert_eq(result, expected, rtol=0, atol=0)


def test_order_statistics_two_dimensional_keepdims(backend, monkeypatch):
    x = inputs("ninety_equal")[:600].reshape(20, 30)
    a = distributed(x, backend)
    result, largest = measured(lambda b: np.median(b, keepdims=True), a, monkeypatch)
    assert largest <= C * share(a)
    assert_eq(result, np.median(x, keepdims=True))
    assert_eq(np.quantile(a, [0.1, 0.9], keepdims=True), np.quantile(x, [0.1, 0.9], keepdims=True))


@pytest.mark.parametrize("kind", SKEWED)
def test_partition_lexsort_isin_searchsorted(backend, kind, monkeypatch):
    x = inputs(kind)
    a = distributed(x, backend, "c")
    p, largest = measured(lambda b: np.partition(b, 7), a, monkeypatch)
    assert largest <= C * share(a)
    expected = np.partition(x, 7)
    got = p.gather()
    np.testing.assert_array_equal(got[7], expected[7])
    assert np.all(got[:7] <= got[7]) and not np.any(got[8:] < got[7])
    i, largest = measured(lambda b: np.argpartition(b, 7), a, monkeypatch)
    assert largest <= C * share(a)
    np.testing.assert_array_equal(x[i.gather()][7], expected[7])
    second = np.arange(N) % 3
    b2 = distributed(second, backend, "c")
    order, largest = measured(lambda b: np.lexsort((b2, b)), a, monkeypatch)
    assert largest <= C * share(a)
    assert_eq(order, np.lexsort((second, x)))
    test_set = x[:5]
    assert_eq(np.isin(a, test_set), np.isin(x, test_set))
    srt = np.sort(x)
    s = distributed(srt, backend, "b-irregular")
    v = np.array([srt[0], srt[N // 2], srt[-1], 0.0, np.nan])
    for side in ("left", "right"):
        found = np.searchsorted(s, v, side=side)  # a NumPy `v`: a NumPy answer
        np.testing.assert_array_equal(found, np.searchsorted(srt, v, side=side))
        vd = distributed(v, backend, "c")
        found, largest = measured(
            lambda b, side=side, vd=vd: np.searchsorted(b, vd, side=side), s, monkeypatch
        )
        assert largest <= C * share(s)
        assert_eq(found, np.searchsorted(srt, v, side=side))
