"""Exchange plans: every element a destination rank holds arrives, from the right source."""

from __future__ import annotations

import numpy as np
import pytest

import dapx
from dapx import Distribution, UnstructuredMap
from dapx.exchange.plans import exchange_plan, simplify_index


@pytest.mark.parametrize(
    "idx",
    [[], [4], [2, 4, 6], [9, 6, 3, 0], [0, 1, 3], [5, 5]],
)
def test_simplify_index_selects_the_same_elements(idx):
    x = np.arange(20) * 10
    idx = np.asarray(idx, dtype=np.intp)
    np.testing.assert_array_equal(x[simplify_index(idx)], x[idx])


def test_shared_unstructured_copies_are_all_filled():
    backend = dapx.simulated(3)
    shared = UnstructuredMap(7, [[6, 0, 1], [1, 2, 3, 6], [3, 4, 5, 0]])
    target = Distribution([shared])
    x = np.arange(7.0) * 1.5
    a = dapx.asarray(x, backend=backend).redistribute(target)
    for r in backend.local_ranks:
        np.testing.assert_array_equal(a.local(r), x[shared.global_indices(r)])
    back = a.redistribute("c")
    np.testing.assert_array_equal(back.gather(), x)


def test_shared_unstructured_in_two_dimensions_as_alignment_target():
    backend = dapx.simulated(4)
    rows = UnstructuredMap(5, [[0, 1, 4], [4, 2, 3]])
    target = Distribution([rows, Distribution.create(6, "c", grid=(2,)).maps[0]])
    x = np.arange(30.0).reshape(5, 6)
    a = dapx.asarray(x, backend=backend).redistribute(target)
    b = dapx.asarray(x, dist="b", grid=(4, 1), backend=backend)
    c = a + b  # b aligned to a's layout, shared rows included
    for r in backend.local_ranks:
        expected = 2 * x[np.ix_(*target.global_indices(r))]
        np.testing.assert_array_equal(c.local(r), expected)


def test_plan_pieces_cover_each_destination_exactly_once():
    src = Distribution.create((9, 7), ("c", "b"), grid=(2, 3))
    dst = Distribution.create((9, 7), ("b", {"dist": "c", "block_size": 2}), grid=(3, 2))
    plan = exchange_plan(src, dst, tuple(range(6)))
    for r, pieces in plan.recvs.items():
        hits = np.zeros(dst.local_shape(r), int)
        for p in pieces.values():
            hits[p.dst_key] += 1
        assert (hits == 1).all()
    sent = sum(int(np.prod(p.shape)) for s in plan.sends.values() for p in s.values())
    assert sent == 9 * 7


def _selected(idx, n):
    return np.arange(n)[idx]


_PAIRS = [("b", "c", 3), ("c", "b", 4), ("b", "b", 5), ("b", "c", 1), ("c", "b", 2)]


@pytest.mark.parametrize(
    "size, src_spec, dst_spec, nprocs, halo",
    [
        (size, *pair, halo)
        for size in (0, 1, 7, 23, 64)
        for pair in _PAIRS
        for halo in (0, 1)
        if not halo or size >= 2 * pair[2]
    ],  # a halo needs neighbours owning its width
)
def test_arithmetic_plan_matches_the_element_by_element_plan(
    size, src_spec, dst_spec, nprocs, halo, monkeypatch
):
    """Block/cyclic pairs take an O(1) path; it must select what the general path selects."""
    from dapx.exchange import plans

    def maps(spec, h):
        if spec == "b" and h:
            return Distribution.create(size, spec, grid=(nprocs,), halo=h).maps[0]
        return Distribution.create(size, spec, grid=(nprocs,)).maps[0]

    src, dst = maps(src_spec, halo), maps(dst_spec, 0 if src_spec == "b" else halo)
    assert plans._fast_pairs(src, dst)
    fast_sends = [plans._dim_sends(src, dst, a) for a in range(nprocs)]
    fast_recvs = [plans._dim_recvs(src, dst, b) for b in range(nprocs)]
    monkeypatch.setattr(plans, "_fast_pairs", lambda s, d: False)
    slow_sends = [plans._dim_sends(src, dst, a) for a in range(nprocs)]
    slow_recvs = [plans._dim_recvs(src, dst, b) for b in range(nprocs)]
    for fast, slow in [*zip(fast_sends, slow_sends), *zip(fast_recvs, slow_recvs)]:
        assert fast.keys() == slow.keys()
        for k in fast:
            n_src, n_dst = size + 2 * halo, size + 2 * halo
            assert fast[k].count == slow[k].count
            np.testing.assert_array_equal(
                _selected(fast[k].src, n_src), _selected(slow[k].src, n_src)
            )
            np.testing.assert_array_equal(
                _selected(fast[k].dst, n_dst), _selected(slow[k].dst, n_dst)
            )
