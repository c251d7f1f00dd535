"""Plans at scale: the vectorised constructions select exactly what the piece plans select.

`flat_sends`/`flat_recvs` (one gather index per rank, used when a process holds
every rank and the pieces are many) must pack the same elements in the same
order as `exchange_plan`'s pieces; a halo plan's senders, found among grid
neighbours, must be those a scan of every coordinate finds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dapx
from dapx import Distribution
from dapx.exchange import halo as halo_module
from dapx.exchange.plans import (
    exchange_plan,
    flat_recvs,
    flat_sends,
    many_pieces,
    received_shape,
)
from dapx.layout.maps import BlockMap

from ._strategies import SETTINGS, distributions, maps


@st.composite
def distribution_pairs(draw):
    """(src, dst) of one shape and rank count: dst on a permuted grid, any map kinds;
    sometimes a src dimension of size 1 broadcast along dst's."""
    src = draw(distributions(min_ndim=1, max_ndim=3, max_ranks=12, max_elements=600))
    grid = draw(st.permutations(src.grid_shape))
    dst = Distribution([draw(maps(n, p)) for n, p in zip(src.shape, grid)])
    if draw(st.booleans()):
        k = draw(st.integers(0, src.ndim - 1))
        if dst.shape[k] != 1:
            one = BlockMap(1, nprocs=src.grid_shape[k])
            src = Distribution([one if j == k else m for j, m in enumerate(src.maps)])
    return src, dst


def _packed(side, pieces, key: str, shape) -> None:
    """`side` (a FlatSide) packs what `pieces` (rank -> Piece) select, in rank order."""
    flat = np.arange(math.prod(shape)).reshape(shape)
    expected_counts = np.zeros(side.counts.size, np.intp)
    expected = []
    for other in sorted(pieces):
        p = pieces[other]
        expected_counts[other] = math.prod(p.shape)
        expected.append(flat[getattr(p, key)].reshape(-1))
    np.testing.assert_array_equal(side.counts, expected_counts)
    got = side.index
    want = np.concatenate(expected) if expected else np.zeros(0, np.intp)
    np.testing.assert_array_equal(got, want)


@SETTINGS
@given(distribution_pairs())
def test_flat_plans_pack_what_the_piece_plans_pack(pair):
    src, dst = pair
    ranks = tuple(range(src.nranks))
    plan = exchange_plan(src, dst, ranks)
    for r in ranks:
        _packed(flat_sends(src, dst, r), plan.sends[r], "src_key", src.local_shape(r))
        shape = received_shape(src, dst, r)
        assert shape == plan.dst_local_shapes[r]
        _packed(flat_recvs(src, dst, r), plan.recvs[r], "dst_key", shape)


@SETTINGS
@given(distribution_pairs(), st.data())
def test_redistribution_through_either_path_matches_numpy(pair, data):
    src, dst = pair
    x = np.arange(math.prod(src.shape), dtype=np.float64).reshape(src.shape)
    backend = dapx.simulated(src.nranks)
    a = dapx.asarray(x, backend=backend).redistribute(src)
    if src.shape == dst.shape:
        b = a.redistribute(dst)
        np.testing.assert_array_equal(b.gather(), x)
        for r in backend.local_ranks:
            held = np.ix_(*dst.global_indices(r))
            if not dst.is_padded:
                np.testing.assert_array_equal(b.local(r), x[held])


def test_block_to_cyclic_takes_the_flat_path_and_matches_numpy():
    backend = dapx.simulated(64)
    x = np.random.default_rng(0).standard_normal(64 * 50)
    a = dapx.asarray(x, backend=backend)
    assert many_pieces(a.distribution, Distribution.create(x.shape, "c", nranks=64))

    def refuse(*args, **kwargs):
        raise AssertionError("the flat path does not go through the backend's all-to-all")

    with pytest.MonkeyPatch.context() as m:
        m.setattr(type(backend), "alltoallv", refuse)
        c = a.redistribute("c")
    for r in backend.local_ranks:
        np.testing.assert_array_equal(c.local(r), x[r::64])
    np.testing.assert_array_equal(c.redistribute("b").gather(), x)


@st.composite
def halo_distributions(draw):
    ndim = draw(st.integers(1, 2))
    shape = tuple(draw(st.integers(4, 24)) for _ in range(ndim))
    grid = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    periodic = tuple(draw(st.booleans()) for _ in range(ndim))
    width = draw(st.integers(1, 2))
    if any(n < w * p for n, p, w in zip(shape, grid, (width,) * ndim)):
        grid = (1,) * ndim
    return Distribution.create(shape, grid=grid, halo=width, periodic=periodic)


@SETTINGS
@given(halo_distributions(), st.sampled_from(["none", "reflect", "nearest", 0.0]))
def test_halo_senders_found_among_neighbours_are_those_a_full_scan_finds(dist, boundary):
    kinds, _ = halo_module.boundary_kinds(boundary, dist)
    for m, kind in zip(dist.maps, kinds):
        for c in range(m.nprocs):
            scan = tuple(d for d in range(m.nprocs) if c in halo_module._owners(m, d, kind))
            assert halo_module._copiers(m, c, kind) == scan
    # The per-rank plans of single ranks agree with the plan of every rank together.
    whole = halo_module.halo_plan(dist, kinds, tuple(range(dist.nranks)))
    for r in range(dist.nranks):
        alone = halo_module.halo_plan(dist, kinds, (r,))
        assert alone.fills[r] == whole.fills[r]
        sent = int(alone.sends[r][0].sum())
        received_from_r = sum(
            int(halo_module.halo_plan(dist, kinds, (d,)).recvcounts[d][r])
            for d in range(dist.nranks)
            if d != r
        )
        assert sent == received_from_r
