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


# -- isin against a large distributed test set, weighted quantiles --------------------------------


def _elements(value) -> int:
    """How many array elements an allgathered value holds (scalars count one)."""
    if isinstance(value, np.ndarray):
        return value.size
    if isinstance(value, (tuple, list)):
        return sum(_elements(v) for v in value)
    return 1


class Counted(Received):
    """`Received`, and the elements each rank receives from every ``allgather``."""

    def __init__(self, backend, monkeypatch):
        super().__init__(backend, monkeypatch)
        self.gathered: list[int] = []
        original = type(backend).allgather
        recorder = self

        def allgather(self, values):
            result = original(self, values)
            recorder.gathered.append(_elements(result))
            return result

        monkeypatch.setattr(type(backend), "allgather", allgather)


def counted(func, backend, monkeypatch):
    """`func()` and the largest receive of one rank: (in an all-to-all, in an allgather)."""
    rec = Counted(backend, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dapx.GatherWarning)
        result = func()
    monkeypatch.undo()
    largest = backend.allgather(dict.fromkeys(backend.local_ranks, rec.largest))
    return result, max(largest), max(rec.gathered, default=0)


def test_isin_above_the_limit_gathers_nothing(backend, monkeypatch):
    """The default limit: a test set of 6,000 is never gathered, nor copied to every rank."""
    from dapx.functions import sets

    P = backend.nranks
    rng = np.random.default_rng(4)
    x, t = rng.integers(0, 20000, 3000), rng.integers(0, 20000, sets.ISIN_GATHER_LIMIT + 1904)
    a, ta = distributed(x, backend, "c"), distributed(t, backend, "b-irregular")
    found, largest, gathered = counted(lambda: np.isin(a, ta), backend, monkeypatch)
    assert_eq(found, np.isin(x, t))
    assert found.distribution == a.distribution
    assert largest <= C * math.ceil((x.size + t.size) / P) + 4 * P + C * share(ta)
    assert gathered <= 40 * P * P + 64  # samples and counts: nothing that grows with the data
    if P >= 3:
        assert largest < t.size


TEST_SETS = {
    "random": lambda rng, x: np.concatenate([x[::3], rng.standard_normal(1500)]),
    "all_equal": lambda rng, x: np.full(2000, 1.5),
    "few_ints": lambda rng, x: rng.integers(0, 3, 2000).astype(float),
    "nan_heavy": lambda rng, x: np.where(
        rng.random(2000) < 0.5, np.nan, x[rng.integers(0, N, 2000)]
    ),
}


@pytest.mark.parametrize("test_set", list(TEST_SETS))
@pytest.mark.parametrize("kind", KINDS)
def test_isin_distributed_test_set(backend, kind, test_set, monkeypatch):
    from dapx.functions import sets

    P = backend.nranks
    monkeypatch.setattr(sets, "ISIN_GATHER_LIMIT", 64)
    x = inputs(kind).astype(float)
    t = TEST_SETS[test_set](np.random.default_rng(5), x)
    a, ta = distributed(x, backend, "u"), distributed(t, backend, "b-irregular")
    for invert in (False, True):
        found, largest, gathered = counted(
            lambda invert=invert: np.isin(a, ta, invert=invert), backend, monkeypatch
        )
        monkeypatch.setattr(sets, "ISIN_GATHER_LIMIT", 64)
        assert_eq(found, np.isin(x, t, invert=invert))
        # Each rank sends every distinct value once per operand: about 1.3 times a share of
        # both, plus 2P copies of one value around each splitter, whatever the keys.
        assert largest <= C * math.ceil((x.size + t.size) / P) + 4 * P + C * share(ta)
        assert gathered <= 40 * P * P + 64
        if P >= 3:
            assert largest < t.size  # not the test set on every rank
        if kind == "all_equal" and test_set == "all_equal":
            assert largest <= 2 * P  # one value from each rank and each operand


DTYPE_PAIRS = [
    ("i8", "i8"),
    ("i4", "u2"),
    ("u1", "i8"),
    ("?", "?"),
    ("?", "i4"),
    ("f8", "f8"),
    ("f4", "f8"),
    ("i8", "f8"),
    ("f8", "c16"),
    ("c8", "c8"),
    ("U3", "U5"),
    ("S2", "S4"),
    ("M8[s]", "M8[ms]"),
    ("m8[s]", "m8[s]"),
]


def _values(rng, n, dtype):
    ints = rng.integers(0, 40, n)
    dtype = np.dtype(dtype)
    if dtype.kind == "M":
        return ints.astype("M8[s]").astype(dtype)
    if dtype.kind == "m":
        return ints.astype("m8[s]").astype(dtype)
    if dtype.kind == "b":
        return ints % 2 == 0
    if dtype.kind in "fc":
        v = (ints / 2).astype(dtype)
        v[::11] = np.nan
        return v
    return ints.astype(dtype)


@pytest.mark.parametrize(("element_dtype", "test_dtype"), DTYPE_PAIRS)
def test_isin_dtypes_kinds_and_shapes(backend, element_dtype, test_dtype, monkeypatch):
    from dapx.functions import sets

    monkeypatch.setattr(sets, "ISIN_GATHER_LIMIT", 16)
    rng = np.random.default_rng(6)
    x, t = _values(rng, (9, 7), element_dtype), _values(rng, 50, test_dtype)
    a = dapx.asarray(x, backend=backend, **layout("c2", x.shape, backend.nranks))
    ta = distributed(t, backend, "u")
    integers = x.dtype.kind in "biu" and t.dtype.kind in "biu"
    with warnings.catch_warnings():
        warnings.simplefilter("error", dapx.GatherWarning)
        for kind in (None, "sort", "table"):
            if kind == "table" and not integers:
                with pytest.raises(ValueError, match="table"):
                    np.isin(a, ta, kind=kind)
                continue
            for invert in (False, True):
                expected = np.isin(x, t, invert=invert, kind=kind)
                assert_eq(np.isin(a, ta, invert=invert, kind=kind), expected)
        # A NumPy element: a NumPy answer; a 0-d distributed element: a 0-d distributed one.
        got = np.isin(x, ta)
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, np.isin(x, t))
        assert_eq(np.isin(dapx.asarray(x[0, 0], backend=backend), ta), np.isin(x[0, 0], t))
        # assume_unique with unique operands; empty elements.
        ux, ut = np.unique(x), np.unique(t)
        ua, uta = distributed(ux, backend, "c"), distributed(ut, backend, "b-irregular")
        if ut.size > 16:
            assert_eq(np.isin(ua, uta, assume_unique=True), np.isin(ux, ut, assume_unique=True))
        assert_eq(np.isin(a[:0], ta), np.isin(x[:0], t))


def test_isin_errors_and_the_gathering_cases(backend, monkeypatch):
    from dapx.functions import sets

    monkeypatch.setattr(sets, "ISIN_GATHER_LIMIT", 16)
    x, t = np.arange(30, dtype=np.int8), np.array([-128, 127] * 20, np.int8)
    a, ta = distributed(x, backend, "c"), distributed(t, backend, "c")
    with pytest.raises(ValueError, match="Invalid kind"):
        np.isin(a, ta, kind="bogus")
    with pytest.raises(RuntimeError, match="table"):  # the range 255 overflows int8
        np.isin(a, ta, kind="table")
    assert_eq(np.isin(a, ta), np.isin(x, t))
    # uint64 against signed integers (NumPy's answer depends on its algorithm) and test sets
    # up to the limit are gathered: with a GatherWarning above the (suite's) threshold.
    u = np.arange(40, dtype=np.uint64)
    with pytest.warns(dapx.GatherWarning, match="test set"):
        assert_eq(np.isin(a, distributed(u, backend, "c")), np.isin(x, u))
    with pytest.warns(dapx.GatherWarning, match="test set"):
        assert_eq(np.isin(a, ta[:10]), np.isin(x, t[:10]))


WEIGHTED = {
    "quantile": (np.quantile, [0.0, 0.1, 0.5, 0.95, 1.0]),
    "quantile_scalar": (np.quantile, 0.3),
    "quantile_float32": (np.quantile, np.array([0.2, 0.7], np.float32)),
    "percentile": (np.percentile, [5, 50, 99]),
    "nanquantile": (np.nanquantile, [0.2, 0.8]),
    "nanpercentile": (np.nanpercentile, 10),
}


@pytest.mark.parametrize("name", list(WEIGHTED))
@pytest.mark.parametrize("kind", KINDS)
def test_weighted_quantiles_over_everything(backend, kind, name, monkeypatch):
    func, q = WEIGHTED[name]
    x = inputs(kind)
    rng = np.random.default_rng(8)
    # Float weights where values are distinct; integer ones where ties are many (NumPy sorts
    # ties in an unspecified order, which changes a float cumsum's rounding).
    w = rng.random(N) if kind in ("random", "descending") else rng.integers(0, 4, N)
    w[:5] = 0
    a = distributed(x, backend, "c")
    wd = distributed(w, backend, "b-irregular")
    kw = {"method": "inverted_cdf"}
    for weights in (wd, w):
        result, largest = measured(
            lambda b, weights=weights: func(b, q, weights=weights, **kw), a, monkeypatch
        )
        # About 1.3 N/P + P: not the whole array on rank 0 (N > 1.5 N/P + P from 2 ranks on).
        assert largest <= 1.5 * share(a) + backend.nranks
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = func(x, q, weights=w, **kw)
        assert_eq(result, expected, rtol=0, atol=0)
    x2, w2 = x[:600].reshape(20, 30), w[:600].reshape(20, 30)
    a2 = distributed(x2, backend)
    expected = func(x2, q, weights=w2, keepdims=True, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_eq(func(a2, q, weights=distributed(w2, backend), keepdims=True, **kw), expected)


def test_weighted_quantile_bad_weights(backend):
    x = inputs("random")
    a = distributed(x, backend, "c")
    for w in (np.zeros(N), np.full(N, np.nan), np.r_[np.inf, np.ones(N - 1)]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            with pytest.raises(ValueError, match="Weights included NaN, inf or were all zero"):
                np.quantile(x, 0.5, weights=w, method="inverted_cdf")
            with pytest.raises(ValueError, match="Weights included NaN, inf or were all zero"):
                np.quantile(a, 0.5, weights=distributed(w, backend), method="inverted_cdf")
    with pytest.raises(ValueError, match="non-negative"):
        np.quantile(a, 0.5, weights=-np.ones(N), method="inverted_cdf")
    with pytest.raises(ValueError, match="inverted_cdf"):
        np.quantile(a, 0.5, weights=np.ones(N))


@pytest.mark.parametrize("lay", ["b", "b-irregular"])
def test_exact_cumsum_is_numpys_bit_for_bit(backend, lay):
    from dapx.functions.quantiles import exact_cumsum

    rng = np.random.default_rng(9)
    for w in (rng.random(N) * 10.0 ** rng.integers(-8, 8, N), rng.integers(0, 9, N) * 1.0):
        a = distributed(w, backend, lay)
        scanned, total = exact_cumsum(dict(a.locals), backend)
        expected = np.cumsum(w)
        bounds = a.distribution.maps[0].bounds
        for r, c in scanned.items():
            np.testing.assert_array_equal(c, expected[bounds[r] : bounds[r + 1]])
        assert total == expected[-1]
