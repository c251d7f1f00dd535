"""Properties of the 1-D maps (`dapx.layout.maps`), checked against the DAP rules."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dapx import DAPError, protocol
from dapx.layout.maps import (
    BlockMap,
    CyclicMap,
    Map,
    UnstructuredMap,
    even_bounds,
    map_from_dim_dicts,
)
from tests._strategies import (
    SETTINGS,
    block_maps,
    cyclic_maps,
    dicts_equal,
    maps,
    to_v09,
    unstructured_maps,
)

# -- oracles written from the spec, independently of dapx -------------------------------


def comm_flags(m: BlockMap, r: int) -> tuple[bool, bool]:
    """Whether the (lo, hi) padding of grid rank `r` is communication padding (spec rule)."""
    if m.periodic:
        return True, True
    return r > 0, r < m.nprocs - 1


def owned_positions(m: Map, r: int) -> np.ndarray:
    """Local positions (padding included) that grid rank `r` owns."""
    if isinstance(m, BlockMap):
        lo = int(m.padding[r][0]) if comm_flags(m, r)[0] else 0
        count = int(m.bounds[r + 1] - m.bounds[r])
        return np.arange(lo, lo + count)
    if isinstance(m, CyclicMap):
        return np.arange(m.local_length(r))
    # Unstructured: a shared index is owned by the lowest grid rank that holds it.
    mine = np.asarray(m.global_indices(r))
    lower = [np.asarray(m.global_indices(q)) for q in range(r)]
    taken = np.concatenate(lower) if lower else np.empty(0, np.intp)
    return np.flatnonzero(~np.isin(mine, taken))


def spec_num_owned(d: dict) -> int:
    """``num_owned_indices`` of the v0.10 appendix, periodic-aware for block dims."""
    if d["dist_type"] == "b":
        count = d["stop"] - d["start"]
        lo, hi = d["padding"]
        if d["periodic"] or d["proc_grid_rank"] != 0:
            count -= lo
        if d["periodic"] or d["proc_grid_rank"] != d["proc_grid_size"] - 1:
            count -= hi
        return count
    if d["dist_type"] == "c":
        g = np.arange(d["size"])
        return int(
            np.count_nonzero((g // d["block_size"]) % d["proc_grid_size"] == d["proc_grid_rank"])
        )
    return len(d["indices"])


# -- index translation --------------------------------------------------------------------


@SETTINGS
@given(maps())
def test_local_global_local_round_trip(m):
    for r in range(m.nprocs):
        n = m.local_length(r)
        gi = m.global_indices(r)
        assert gi.shape == (n,)
        assert gi.dtype.kind == "i"
        np.testing.assert_array_equal(m.local_to_global(r, np.arange(n)), gi)
        for loc in range(n):
            assert int(m.local_to_global(r, loc)) == gi[loc]
        pos = owned_positions(m, r)
        np.testing.assert_array_equal(gi[pos], m.owned_indices(r))
        assert m.num_owned(r) == pos.size
        ranks, local = m.owner(gi[pos])
        np.testing.assert_array_equal(ranks, np.full(pos.size, r))
        np.testing.assert_array_equal(local, pos)
        for loc in pos:
            rk, lc = m.owner(m.local_to_global(r, loc))
            assert (int(rk), int(lc)) == (r, loc)


@SETTINGS
@given(maps())
def test_owner_of_every_index_holds_it(m):
    g = np.arange(m.size)
    ranks, local = m.owner(g)
    assert ranks.shape == local.shape == g.shape
    for i in range(m.size):
        assert m.global_indices(int(ranks[i]))[local[i]] == i
    # Negative indices count from the end, as in NumPy.
    r2, l2 = m.owner(g - m.size)
    np.testing.assert_array_equal(r2, ranks)
    np.testing.assert_array_equal(l2, local)
    with pytest.raises(IndexError):
        m.owner(m.size)
    with pytest.raises(IndexError):
        m.owner(-m.size - 1)
    with pytest.raises(TypeError):
        m.owner(np.array([0.0]))


@SETTINGS
@given(maps())
def test_local_to_global_rejects_out_of_range(m):
    for r in range(m.nprocs):
        with pytest.raises(IndexError):
            m.local_to_global(r, m.local_length(r))
        with pytest.raises(IndexError):
            m.local_to_global(r, -1)
    with pytest.raises(ValueError):
        m.local_to_global(m.nprocs, 0)


@SETTINGS
@given(maps())
def test_owned_indices_partition_the_dimension(m):
    owned = [np.asarray(m.owned_indices(r)) for r in range(m.nprocs)]
    everything = np.concatenate(owned) if owned else np.empty(0, np.intp)
    np.testing.assert_array_equal(np.bincount(everything, minlength=m.size), np.ones(m.size))
    assert sum(m.num_owned(r) for r in range(m.nprocs)) == m.size
    for r in range(m.nprocs):
        assert m.num_owned(r) == owned[r].size
        # The owned indices are a subset of what the rank holds.
        assert np.isin(owned[r], m.global_indices(r)).all()


@SETTINGS
@given(maps())
def test_num_owned_matches_spec_appendix(m):
    # The appendix counts every listed index of an unstructured dim as owned, which
    # only adds up to size when the dim is one-to-one; dapx gives a shared index to
    # the lowest rank holding it (see test_shared_indices_are_owned_by_the_lowest_rank).
    if isinstance(m, UnstructuredMap) and not m.one_to_one:
        return
    for r in range(m.nprocs):
        assert m.num_owned(r) == spec_num_owned(m.dim_dict(r))


# -- padding --------------------------------------------------------------------------------


@SETTINGS
@given(block_maps())
def test_global_indices_include_padding(m):
    size, P = m.size, m.nprocs
    owned = [m.owned_indices(r) for r in range(P)]
    total_comm = 0
    for r in range(P):
        gi = m.global_indices(r)
        lo, hi = (int(w) for w in m.padding[r])
        comm_lo, comm_hi = comm_flags(m, r)
        clo, chi = (lo if comm_lo else 0), (hi if comm_hi else 0)
        total_comm += clo + chi
        assert m.local_length(r) == len(gi) == m.num_owned(r) + clo + chi
        expected = np.arange(m.bounds[r] - clo, m.bounds[r + 1] + chi)
        if m.periodic and size:
            expected %= size
        np.testing.assert_array_equal(gi, expected)
        # Communication padding holds copies of the neighbours' edge indices ...
        if clo:
            np.testing.assert_array_equal(gi[:clo], owned[(r - 1) % P][-clo:])
        if chi:
            np.testing.assert_array_equal(gi[-chi:], owned[(r + 1) % P][:chi])
        # ... while boundary padding is owned (it is counted in size).
        np.testing.assert_array_equal(gi[clo : len(gi) - chi], owned[r])
        if not comm_lo and lo:
            assert m.owned_indices(r)[:lo].tolist() == list(range(lo))
        if not comm_hi and hi:
            assert m.owned_indices(r)[-hi:].tolist() == list(range(size - hi, size))
    assert sum(m.local_length(r) for r in range(P)) == size + total_comm


def test_padded_example_of_the_spec():
    # v0.10 docs, "Block with padding": 18 indices over 2 ranks, padding (1, 1).
    m = BlockMap(18, nprocs=2, padding=[(1, 1), (1, 1)])
    assert [(m.dim_dict(r)["start"], m.dim_dict(r)["stop"]) for r in (0, 1)] == [(0, 10), (8, 18)]
    assert m.global_indices(0).tolist() == list(range(10))
    assert m.global_indices(1).tolist() == list(range(8, 18))
    assert m.owned_indices(0).tolist() == list(range(9))
    assert [m.num_owned(r) for r in (0, 1)] == [9, 9]
    # v0.9 wrote the same layout with start/stop excluding communication padding.
    v09 = [to_v09(m.dim_dict(r)) for r in (0, 1)]
    assert [(d["start"], d["stop"]) for d in v09] == [(0, 9), (9, 18)]


def test_padding_table_of_the_spec():
    # Spec: left boundary 4, right boundary 0, communication widths 1, 2, 3.
    m = BlockMap(20, [0, 6, 10, 14, 20], padding=[(4, 1), (1, 2), (2, 3), (3, 0)])
    assert [m.is_comm_padding(r) for r in range(4)] == [
        (False, True),
        (True, True),
        (True, True),
        (True, False),
    ]
    assert [m.num_owned(r) for r in range(4)] == [6, 4, 4, 6]
    assert [m.local_length(r) for r in range(4)] == [7, 7, 9, 9]
    assert m.global_indices(1).tolist() == [5, 6, 7, 8, 9, 10, 11]


@pytest.mark.parametrize(
    ("size", "bounds", "padding", "periodic", "match"),
    [
        (6, [0, 3, 6], [(0, 1), (2, 0)], False, "match between neighbours"),
        (6, [0, 1, 6], [(0, 2), (2, 0)], False, "wider"),
        (6, [0, 3, 6], [(4, 0), (0, 0)], False, "boundary padding"),
        (4, [0, 4], [(3, 2)], False, "boundary padding"),
        (4, [0, 4], [(1, 2)], True, "match"),
        (4, [0, 4], [(-1, 0)], False, ">= 0"),
        (4, [0, 4], [(1, 1), (1, 1)], False, "one \\(lo, hi\\) pair"),
        (4, [0, 2, 5], None, False, "cover"),
        (4, [1, 2, 4], None, False, "cover"),
        (4, [0, 3, 2, 4], None, False, "grid-rank order"),
    ],
)
def test_invalid_block_maps_raise(size, bounds, padding, periodic, match):
    with pytest.raises(DAPError, match=match):
        BlockMap(size, bounds, padding=padding, periodic=periodic)


# -- DAP dimension dictionaries ------------------------------------------------------------


@SETTINGS
@given(maps())
def test_dim_dict_round_trip(m):
    dicts = [m.dim_dict(r) for r in range(m.nprocs)]
    for r, d in enumerate(dicts):
        assert d["dist_type"] == m.dist_type
        assert (d["size"], d["proc_grid_size"], d["proc_grid_rank"]) == (m.size, m.nprocs, r)
    back = type(m).from_dim_dicts(dicts)
    assert back == m
    assert hash(back) == hash(m)
    assert map_from_dim_dicts(dicts) == m
    # Through the protocol's normal form, with the buffer length of each rank.
    normal = [protocol.normalize_dim_dict(d, m.local_length(r)) for r, d in enumerate(dicts)]
    for d, n in zip(dicts, normal):
        assert dicts_equal(d, n), (d, n)
    assert map_from_dim_dicts(normal) == m


@SETTINGS
@given(maps())
def test_dim_dict_rejects_a_wrong_buffer_length(m):
    for r in range(m.nprocs):
        with pytest.raises(DAPError):
            protocol.normalize_dim_dict(m.dim_dict(r), m.local_length(r) + 1)


@SETTINGS
@given(maps(), st.booleans(), st.booleans())
def test_v09_v010_round_trip(m, use_n, omit_defaults):
    for r in range(m.nprocs):
        d10 = m.dim_dict(r)
        d09 = to_v09(d10, use_n=use_n, omit_defaults=omit_defaults)
        back = protocol.normalize_dim_dict(d09, m.local_length(r), minor=9)
        assert dicts_equal(back, d10), (d09, back, d10)


@SETTINGS
@given(block_maps(), st.booleans())
def test_v09_owned_range_excludes_communication_padding(m, use_n):
    for r in range(m.nprocs):
        d09 = to_v09(m.dim_dict(r), use_n=use_n)
        if d09["dist_type"] == "b":
            assert (d09["start"], d09["stop"]) == (int(m.bounds[r]), int(m.bounds[r + 1]))
            if r + 1 < m.nprocs:  # v0.9: adjacent ranks have adjacent ranges
                assert d09["stop"] == to_v09(m.dim_dict(r + 1))["start"]


# -- cyclic -------------------------------------------------------------------------------


@SETTINGS
@given(cyclic_maps())
def test_cyclic_matches_definition(m):
    g = np.arange(m.size)
    expected_rank = (g // m.block_size) % m.nprocs
    ranks, local = m.owner(g)
    np.testing.assert_array_equal(ranks, expected_rank)
    for r in range(m.nprocs):
        # Local order is increasing global order (NumPy boolean-mask order).
        mine = np.flatnonzero(expected_rank == r)
        np.testing.assert_array_equal(m.global_indices(r), mine)
        np.testing.assert_array_equal(local[mine], np.arange(mine.size))
        assert m.local_length(r) == m.num_owned(r) == mine.size
        d = m.dim_dict(r)
        assert d["start"] == (mine[0] if mine.size else m.size)
        if m.block_size == 1:
            np.testing.assert_array_equal(mine, g[d["start"] :: m.nprocs])


@SETTINGS
@given(st.integers(0, 50), st.integers(1, 6))
def test_cyclic_with_block_size_ceil_is_a_block_distribution(size, P):
    bs = max(1, -(-size // P))
    c = CyclicMap(size, P, bs)
    b = BlockMap(size, [min(r * bs, size) for r in range(P + 1)])
    for r in range(P):
        np.testing.assert_array_equal(c.global_indices(r), b.global_indices(r))
    assert c != b  # different dist_types never compare equal


def test_block_cyclic_example():
    m = CyclicMap(9, 2, block_size=2)
    assert m.global_indices(0).tolist() == [0, 1, 4, 5, 8]
    assert m.global_indices(1).tolist() == [2, 3, 6, 7]


# -- unstructured -------------------------------------------------------------------------


@SETTINGS
@given(unstructured_maps())
def test_unstructured_keeps_given_indices(m):
    for r in range(m.nprocs):
        raw = m.indices(r)
        np.testing.assert_array_equal(m.global_indices(r), np.where(raw < 0, raw + m.size, raw))
        np.testing.assert_array_equal(m.dim_dict(r)["indices"], raw)
    counts = np.bincount(
        np.concatenate([m.global_indices(r) for r in range(m.nprocs)]), minlength=m.size
    )
    if m.one_to_one:
        assert (counts == 1).all()
    assert m.dim_dict(0)["one_to_one"] is m.one_to_one


@SETTINGS
@given(unstructured_maps(one_to_one=False))
def test_shared_indices_are_owned_by_the_lowest_rank(m):
    holders = {}
    for r in range(m.nprocs):
        for g in m.global_indices(r).tolist():
            holders.setdefault(g, r)
    ranks, _ = m.owner(np.arange(m.size))
    assert ranks.tolist() == [holders[g] for g in range(m.size)]


def test_unstructured_copies_its_input():
    idx = np.array([2, 0])
    m = UnstructuredMap(3, [idx, [1]])
    idx[0] = 1
    assert m.global_indices(0).tolist() == [2, 0]


@pytest.mark.parametrize(
    ("indices", "one_to_one", "match"),
    [
        ([[0, 1], [1, 2]], True, "more than one rank"),
        ([[0], [2]], None, "held by no rank"),
        ([[0, 0], [1, 2]], None, "locally unique"),
        ([[0, -3], [1, 2]], None, "locally unique"),
        ([[0, 3], [1, 2]], None, "outside"),
        ([[[0, 1]], [2]], None, "1-D"),
        ([[0.0, 1.0], [2]], None, "integers"),
    ],
)
def test_invalid_unstructured_maps_raise(indices, one_to_one, match):
    with pytest.raises(DAPError, match=match):
        UnstructuredMap(3, indices, one_to_one)


# -- value semantics ----------------------------------------------------------------------


@SETTINGS
@given(maps())
def test_maps_are_immutable(m):
    for name in ("size", "nprocs", "_size", "_nprocs", "new_attribute"):
        with pytest.raises(AttributeError):
            setattr(m, name, 1)
    for r in range(m.nprocs):
        before = m.global_indices(r).copy()
        arrays = [m.global_indices(r), m.owned_indices(r)]
        if isinstance(m, UnstructuredMap):
            arrays += [m.indices(r), m.dim_dict(r)["indices"]]
        for a in arrays:
            if a.size and a.flags.writeable:
                a[...] = -7  # a copy: must not change the map
            elif a.size:
                with pytest.raises(ValueError):
                    a[0] = 0
        np.testing.assert_array_equal(m.global_indices(r), before)
    if isinstance(m, BlockMap):
        for a in (m.bounds, m.padding):
            with pytest.raises(ValueError):
                a[...] = 0


@pytest.mark.parametrize(
    "make",
    [
        lambda: BlockMap(10, nprocs=2, padding=[(0, 1), (1, 0)]),
        lambda: CyclicMap(10, 3, 2),
        lambda: UnstructuredMap(3, [[2, 0], [1]]),
    ],
    ids=["block", "cyclic", "unstructured"],
)
@pytest.mark.parametrize("name", ["_size", "_nprocs", "size"])
def test_maps_attributes_cannot_be_deleted(make, name):
    m = make()
    before = m.global_indices(0).copy()
    with pytest.raises(AttributeError):
        delattr(m, name)
    np.testing.assert_array_equal(m.global_indices(0), before)  # still intact


@SETTINGS
@given(maps())
def test_pickle_and_copy_round_trip(m):
    for other in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m), copy.copy(m)):
        assert type(other) is type(m)
        assert other == m
        assert hash(other) == hash(m)
        for r in range(m.nprocs):
            np.testing.assert_array_equal(other.global_indices(r), m.global_indices(r))
            assert other.num_owned(r) == m.num_owned(r)


@SETTINGS
@given(maps(), maps())
def test_equality_and_hash(a, b):
    assert a == a
    assert a != "not a map"
    assert a != None  # noqa: E711
    same_layout = (
        type(a) is type(b)
        and all(dicts_equal(a.dim_dict(r), b.dim_dict(r)) for r in range(a.nprocs))
        if a.nprocs == b.nprocs
        else False
    )
    assert (a == b) == same_layout
    if a == b:
        assert hash(a) == hash(b)
    assert len({a, type(a).from_dim_dicts([a.dim_dict(r) for r in range(a.nprocs)])}) == 1


def test_equality_distinguishes_layouts():
    assert BlockMap(10, nprocs=2) == BlockMap(10, [0, 5, 10])
    assert BlockMap(10, nprocs=2) != BlockMap(10, [0, 4, 10])
    assert BlockMap(10, nprocs=2) != BlockMap(10, nprocs=2, periodic=True)
    assert BlockMap(10, nprocs=2) != BlockMap(10, nprocs=2, padding=[(0, 1), (1, 0)])
    assert CyclicMap(10, 2) != CyclicMap(10, 2, 2)
    assert CyclicMap(10, 2) != CyclicMap(10, 5)
    assert UnstructuredMap(2, [[0], [1]]) != UnstructuredMap(2, [[1], [0]])
    assert UnstructuredMap(2, [[0], [1]]) != UnstructuredMap(2, [[0], [1]], one_to_one=False)
    assert even_bounds(10, 4).tolist() == [0, 3, 6, 8, 10]


@pytest.mark.parametrize(
    "make",
    [
        lambda: CyclicMap(10, 2, 2.5),
        lambda: CyclicMap(10.5, 2),
        lambda: CyclicMap(10, 2.0),
        lambda: CyclicMap(True, 2),
        lambda: BlockMap(10.5, nprocs=2),
        lambda: BlockMap(10, nprocs=2.5),
        lambda: BlockMap(4, [0, 4], periodic="no"),
        lambda: UnstructuredMap(3.5, [[0, 1, 2]]),
    ],
    ids=[
        "cyclic-block_size-2.5",
        "cyclic-size-10.5",
        "cyclic-nprocs-2.0",
        "cyclic-size-True",
        "block-size-10.5",
        "block-nprocs-2.5",
        "block-periodic-str",
        "unstructured-size-3.5",
    ],
)
def test_map_constructors_reject_non_integer_arguments(make):
    # Silently truncating 2.5 to 2 (or reading "no" as True) would build a map other
    # than the one asked for; the protocol layer rejects such values too.
    with pytest.raises((TypeError, ValueError)):
        make()
