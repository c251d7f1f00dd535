"""dapx.random: values are a pure function of (seed, call, flat index), whatever the layout.

The oracle is NumPy's own Philox stream read from the start: word ``i`` of
the stream of call ``n``, stream ``s`` is the raw value of element ``i``.
"""

from __future__ import annotations

import dapx.random as dr
import numpy as np
import pytest

import dapx
from dapx.testing import LAYOUTS, assert_eq, layout

SHAPES = [(0,), (1,), (17,), (5, 7), (0, 3), (3, 4, 5), (2, 0, 3)]


def oracle_raw(seed, call: int, stream: int, n: int) -> np.ndarray:
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    key = np.random.SeedSequence(
        ss.entropy, spawn_key=(*ss.spawn_key, call, stream)
    ).generate_state(2, np.uint64)
    return np.random.Philox(key=key).random_raw(n)


def oracle_unit(raw: np.ndarray) -> np.ndarray:
    return (raw >> np.uint64(11)).astype(np.float64) * 2.0**-53


def oracle_normal(seed, call, n) -> np.ndarray:
    u1 = oracle_unit(oracle_raw(seed, call, 0, n))
    u2 = oracle_unit(oracle_raw(seed, call, 1, n))
    return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)


def oracle_integers(seed, call, n, low, high) -> np.ndarray:
    raw = oracle_raw(seed, call, 0, n)
    span = high - low
    return np.array([low + ((int(w) * span) >> 64) for w in raw], dtype=object)


def check_blocks(a, expected: np.ndarray) -> None:
    """Every local block (padding and shared indices included) equals the oracle there."""
    for r in a.backend.local_ranks:
        idx = a.distribution.global_indices(r)
        np.testing.assert_array_equal(a.local(r), expected[np.ix_(*idx)])


# -- the core property: independent of ranks and distribution --------------------------------


@pytest.mark.parametrize("kind", LAYOUTS)
def test_random_matches_the_stream_on_every_layout(backend, kind):
    for shape in SHAPES:
        rng = dr.default_rng(2024)
        a = rng.random(shape, backend=backend, **layout(kind, shape, backend.nranks))
        n = int(np.prod(shape))
        expected = oracle_unit(oracle_raw(2024, 0, 0, n)).reshape(shape)
        assert_eq(a, expected, rtol=0)
        check_blocks(a, expected)


@pytest.mark.parametrize("kind", ["b", "c", "c2", "u"])
def test_every_method_is_layout_independent(backend, kind):
    shape = (7, 6)
    kw = layout(kind, shape, backend.nranks, seed=3)
    draws = {
        "random": lambda g, **k: g.random(shape, **k),
        "random32": lambda g, **k: g.random(shape, np.float32, **k),
        "uniform": lambda g, **k: g.uniform(-3.0, 5.0, shape, **k),
        "standard_normal": lambda g, **k: g.standard_normal(shape, **k),
        "normal32": lambda g, **k: g.standard_normal(shape, dtype=np.float32, **k),
        "normal": lambda g, **k: g.normal(2.0, 0.5, shape, **k),
        "integers": lambda g, **k: g.integers(-5, 9, shape, **k),
        "uint8": lambda g, **k: g.integers(0, 255, shape, dtype=np.uint8, endpoint=True, **k),
    }
    for name, draw in draws.items():
        reference = draw(dr.default_rng(11), backend=dapx.simulated(1)).gather()
        a = draw(dr.default_rng(11), backend=backend, **kw)
        assert_eq(a, reference, rtol=0, err_msg=name)
        check_blocks(a, reference)


def test_default_layout_and_current_backend():
    with dapx.use_backend(dapx.simulated(3)):
        a = dr.default_rng(0).random((4, 9))
    assert a.backend == dapx.simulated(3)
    assert a.distribution.grid_shape == dapx.dims_create(3, 2)
    assert_eq(a, oracle_unit(oracle_raw(0, 0, 0, 36)).reshape(4, 9), rtol=0)


def test_distribution_object_and_options(backend):
    d = dapx.Distribution.create((10, 4), ("c", "b"), nranks=backend.nranks)
    a = dr.default_rng(8).random((10, 4), dist=d, backend=backend)
    assert a.distribution == d
    b = dr.default_rng(8).random((10, 4), dist="c", block_size=3, backend=backend)
    assert b.distribution.maps[0].block_size == 3
    expected = oracle_unit(oracle_raw(8, 0, 0, 40)).reshape(10, 4)
    assert_eq(a, expected, rtol=0)
    assert_eq(b, expected, rtol=0)


def test_padded_layout_fills_halos_with_the_owners_values():
    b = dapx.simulated(3)
    d = dapx.Distribution.create(
        (12, 5), ("b", "n"), nranks=3, padding=[1, 0], periodic=[True, False]
    )
    a = dr.default_rng(4).random((12, 5), dist=d, backend=b)
    expected = oracle_unit(oracle_raw(4, 0, 0, 60)).reshape(12, 5)
    assert a.local(0).shape == (6, 5)
    check_blocks(a, expected)
    assert_eq(a, expected, rtol=0)


def test_shared_unstructured_indices_get_the_same_values():
    b = dapx.simulated(2)
    dist = {"dist": "u", "indices": [[0, 3, 1], [1, 2, 4, 0]], "one_to_one": False}
    a = dr.default_rng(6).integers(0, 1000, 5, dist=(dist,), backend=b)
    expected = oracle_integers(6, 0, 5, 0, 1000).astype(np.int64)
    np.testing.assert_array_equal(a.local(0), expected[[0, 3, 1]])
    np.testing.assert_array_equal(a.local(1), expected[[1, 2, 4, 0]])


def test_zero_d_when_size_is_none(backend):
    a = dr.default_rng(9).random(backend=backend)
    assert a.shape == () and a.dtype == np.float64
    assert float(a) == oracle_unit(oracle_raw(9, 0, 0, 1))[0]
    assert all(a.local(r)[()] == float(a) for r in backend.local_ranks)


# -- calls, seeds and keys ---------------------------------------------------------------------


def test_successive_calls_differ_and_replay():
    b = dapx.simulated(2)
    rng = dr.default_rng(5)
    first, second = rng.random(50, backend=b).gather(), rng.random(50, backend=b).gather()
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(second, oracle_unit(oracle_raw(5, 1, 0, 50)))
    again = dr.default_rng(5)
    np.testing.assert_array_equal(again.random(50, backend=b).gather(), first)
    assert "calls=1" in repr(again)
    other = dr.default_rng(6).random(50, backend=b).gather()
    assert not np.array_equal(other, first)


def test_seed_forms():
    b = dapx.simulated(2)
    by_int = dr.default_rng(77).random(20, backend=b).gather()
    by_seq = dr.default_rng(np.random.SeedSequence(77)).random(20, backend=b).gather()
    np.testing.assert_array_equal(by_int, by_seq)
    by_list = dr.default_rng([1, 2, 3]).random(20, backend=b).gather()
    np.testing.assert_array_equal(by_list, oracle_unit(oracle_raw([1, 2, 3], 0, 0, 20)))
    spawned = np.random.SeedSequence(77).spawn(1)[0]
    child = dr.default_rng(spawned).random(20, backend=b).gather()
    np.testing.assert_array_equal(child, oracle_unit(oracle_raw(spawned, 0, 0, 20)))
    assert not np.array_equal(child, by_int)


def test_seed_none_draws_entropy_once():
    rng = dr.default_rng()
    assert "not yet drawn" in repr(rng)
    first = rng.random(30, backend=dapx.simulated(3)).gather()
    second = rng.random(30, backend=dapx.simulated(2)).gather()
    replay = dr.Generator(np.random.SeedSequence(rng._entropy))
    np.testing.assert_array_equal(replay.random(30, backend=dapx.simulated(1)).gather(), first)
    np.testing.assert_array_equal(replay.random(30, backend=dapx.simulated(4)).gather(), second)
    assert not np.array_equal(
        dr.default_rng().random(30, backend=dapx.simulated(1)).gather(), first
    )


@pytest.mark.parametrize(
    ("seed", "error", "match"),
    [
        (np.random.default_rng(0), TypeError, "Generator"),
        (np.random.PCG64(0), TypeError, "PCG64"),
        (-1, ValueError, "-1"),
        (1.5, TypeError, "1.5"),
        ([1, "a"], ValueError, "'a'"),
    ],
)
def test_bad_seeds(seed, error, match):
    with pytest.raises(error, match=match):
        dr.default_rng(seed)


# -- distributions against their NumPy formulas -------------------------------------------------


def test_random_float32_has_24_bits_and_stays_below_one(backend):
    a = dr.default_rng(12).random((40, 25), dtype=np.float32, backend=backend)
    raw = oracle_raw(12, 0, 0, 1000)
    expected = ((raw >> np.uint64(40)).astype(np.float32) * np.float32(2.0**-24)).reshape(40, 25)
    assert_eq(a, expected, rtol=0)
    all_ones = np.full(3, np.iinfo(np.uint64).max, dtype=np.uint64)
    assert (dr._unit_float32(all_ones) < 1).all() and (dr._unit_float64(all_ones) < 1).all()
    assert dr._unit_float32(all_ones).dtype == np.float32


def test_uniform_scalars_and_arrays(backend):
    x = dr.default_rng(1).uniform(-2.0, 3.0, (6, 5), dist="c", backend=backend)
    u = oracle_unit(oracle_raw(1, 0, 0, 30)).reshape(6, 5)
    assert_eq(x, -2.0 + (3.0 - -2.0) * u, rtol=0)
    assert x.distribution.dist_types == ("c", "c")
    low, high = np.arange(5.0), np.arange(5.0) * 2 + 1
    y = dr.default_rng(1).uniform(low, high, (6, 5), backend=backend)
    assert_eq(y, low + (high - low) * u, rtol=0)
    z = dr.default_rng(1).uniform(low.reshape(1, 5), 10.0, backend=backend)
    assert_eq(z, low + (10.0 - low) * u[:1], rtol=0)
    dlow = dapx.asarray(np.ones((6, 5)), dist="c", backend=backend)
    w = dr.default_rng(1).uniform(dlow, 4.0, (6, 5), backend=backend)
    assert_eq(w, 1.0 + 3.0 * u, rtol=0)
    g = x.gather()
    assert g.min() >= -2 and g.max() < 3


def test_uniform_bad_broadcast():
    with pytest.raises(ValueError, match=r"do not broadcast to size \(4,\)"):
        dr.default_rng(0).uniform(np.zeros(3), 1.0, 4, backend=dapx.simulated(2))
    with pytest.raises(ValueError, match=r"do not broadcast to size \(3,\)"):
        dr.default_rng(0).uniform(np.zeros((2, 3)), 1.0, 3, backend=dapx.simulated(2))


def test_standard_normal_matches_box_muller(backend):
    z = dr.default_rng(21).standard_normal((30, 11), backend=backend, dist="c")
    expected = oracle_normal(21, 0, 330).reshape(30, 11)
    assert_eq(z, expected, rtol=0)
    z32 = dr.default_rng(21).standard_normal((30, 11), dtype=np.float32, backend=backend)
    assert_eq(z32, expected.astype(np.float32), rtol=0)


def test_normal_moments_and_formula():
    b = dapx.simulated(4)
    x = dr.default_rng(2).normal(3.0, 2.0, 200_000, backend=b)
    g = x.gather()
    assert abs(g.mean() - 3.0) < 0.02 and abs(g.std() - 2.0) < 0.02
    assert np.isfinite(g).all()
    scale = np.linspace(0, 1, 4)
    y = dr.default_rng(2).normal(1.0, scale, (3, 4), backend=b)
    assert_eq(y, 1.0 + scale * oracle_normal(2, 0, 12).reshape(3, 4), rtol=0)


def test_normal_rejects_negative_scale():
    b = dapx.simulated(3)
    with pytest.raises(ValueError, match="scale must be non-negative"):
        dr.default_rng(0).normal(0.0, -1.0, 5, backend=b)
    with pytest.raises(ValueError, match="scale must be non-negative"):
        dr.default_rng(0).normal(0.0, np.array([1.0, -0.5]), 2, backend=b)
    scale = dapx.asarray(np.array([1.0, 2.0, -1.0, 3.0]), backend=b)
    with pytest.raises(ValueError, match="scale must be non-negative"):
        dr.default_rng(0).normal(0.0, scale, backend=b)


@pytest.mark.parametrize(
    ("low", "high", "dtype", "endpoint"),
    [
        (0, 10, np.int64, False),
        (-7, 3, np.int64, True),
        (-128, 127, np.int8, True),
        (0, 2**64 - 1, np.uint64, True),
        (-(2**63), 2**63 - 1, np.int64, True),
        (5, 2**40 + 5, np.int64, False),
        (0, 1, np.bool_, True),
        (100, 101, np.int32, False),
    ],
)
def test_integers_match_multiply_shift(backend, low, high, dtype, endpoint):
    a = dr.default_rng(13).integers(
        low, high, (9, 4), dtype=dtype, endpoint=endpoint, dist="c", backend=backend
    )
    top = high + 1 if endpoint else high
    expected = oracle_integers(13, 0, 36, low, top).reshape(9, 4)
    assert a.dtype == np.dtype(dtype)
    assert_eq(a, expected.astype(dtype), rtol=None)
    g = a.gather().astype(object)
    assert (g >= low).all() and (g < top).all()


def test_integers_single_argument_and_frequencies():
    b = dapx.simulated(3)
    k = dr.default_rng(3).integers(6, size=60_000, backend=b).gather()
    np.testing.assert_array_equal(k, oracle_integers(3, 0, 60_000, 0, 6).astype(np.int64))
    counts = np.bincount(k, minlength=6)
    assert counts.size == 6 and (abs(counts - 10_000) < 400).all()


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((5, 5), {}, ValueError, "low >= high"),
        ((5, 2), {}, ValueError, "low >= high"),
        ((-1, 3), {"dtype": np.uint8}, ValueError, "low=-1 is out of bounds for uint8"),
        ((0, 300), {"dtype": np.uint8}, ValueError, "high=300 is out of bounds for uint8"),
        ((0, 255), {"dtype": np.uint8, "endpoint": True}, None, None),
        ((0, 3), {"dtype": np.float64}, TypeError, "unsupported dtype float64"),
        ((0.5, 3), {}, TypeError, "low must be an integer"),
        ((0, np.array([3, 4])), {}, TypeError, "high must be an integer"),
    ],
)
def test_integers_argument_errors(args, kwargs, error, match):
    rng = dr.default_rng(0)
    if error is None:
        rng.integers(*args, size=3, backend=dapx.simulated(2), **kwargs)
        return
    with pytest.raises(error, match=match):
        rng.integers(*args, size=3, backend=dapx.simulated(2), **kwargs)


@pytest.mark.parametrize("method", ["random", "standard_normal"])
def test_float_methods_reject_other_dtypes(method):
    with pytest.raises(TypeError, match="unsupported dtype int64"):
        getattr(dr.default_rng(0), method)(3, dtype=np.int64, backend=dapx.simulated(1))


# -- the counter-based core ---------------------------------------------------------------------


@pytest.mark.parametrize(("max_gap", "chunk"), [(1024, 1 << 18), (0, 8), (3, 16), (50, 1 << 18)])
def test_raw_at_any_index_set(monkeypatch, max_gap, chunk):
    monkeypatch.setattr(dr, "MAX_GAP", max_gap)
    monkeypatch.setattr(dr, "CHUNK", chunk)
    keys = [np.random.SeedSequence(k).generate_state(2, np.uint64) for k in (1, 2)]
    streams = [np.random.Philox(key=k).random_raw(5000) for k in keys]
    rng = np.random.default_rng(0)
    index_sets = [
        np.arange(5000),
        np.arange(1, 4999, 7),
        rng.integers(0, 5000, 300),  # unsorted, with duplicates
        np.array([4999, 0, 3, 2, 1, 4, 4]),
        rng.permutation(5000)[:1000].reshape(10, 100),
        np.array([], dtype=np.int64),
        np.array(7),
    ]
    for idx in index_sets:
        got = dr.raw_at(keys, idx)
        for g, s in zip(got, streams):
            assert g.shape == np.shape(idx) and g.dtype == np.uint64
            np.testing.assert_array_equal(g, s[idx])


def test_raw_at_far_indices():
    key = np.random.SeedSequence(3).generate_state(2, np.uint64)
    far = 10**15 + 2
    bitgen = np.random.Philox(key=key)
    bitgen.advance(far // 4)
    expected = bitgen.random_raw(8)
    got = dr.raw_at([key], np.arange(4 * (far // 4), 4 * (far // 4) + 8))[0]
    np.testing.assert_array_equal(got, expected)


def test_cyclic_layouts_merge_into_few_spans(monkeypatch):
    calls = []
    original = dr._philox_words

    def counting(key, start, stop):
        calls.append(stop - start)
        return original(key, start, stop)

    monkeypatch.setattr(dr, "_philox_words", counting)
    n, nranks = 300_000, 4
    a = dr.default_rng(0).random(n, dist="c", backend=dapx.simulated(nranks))
    # One span per CHUNK of the index space per rank, not one per element.
    assert len(calls) <= nranks * (n // dr.CHUNK + 2)
    assert sum(calls) <= nranks * n
    assert a.local(1).shape == (n // nranks,)


def test_mulhi64_against_python_integers():
    rng = np.random.default_rng(1)
    a = np.concatenate(
        [
            rng.integers(0, 2**64, 2000, dtype=np.uint64, endpoint=False),
            np.array([0, 1, 2**32 - 1, 2**32, 2**63, 2**64 - 1], dtype=np.uint64),
        ]
    )
    for b in [0, 1, 3, 2**32 - 1, 2**32, 2**32 + 1, 10**18, 2**63, 2**64 - 1]:
        expected = [(int(x) * b) >> 64 for x in a]
        assert dr.mulhi64(a, b).tolist() == expected
