"""N-D properties of `dapx.Distribution`, checked against the DAP rules."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from dapx import DAPError, Distribution
from dapx.layout.maps import BlockMap, CyclicMap, UnstructuredMap
from tests._strategies import SETTINGS, dicts_equal, distributions, to_v09


def distbuffers(d: Distribution, version: str = "0.10.0") -> list[dict]:
    return [
        {"__version__": version, "buffer": np.empty(d.local_shape(k)), "dim_data": d.dim_data(k)}
        for k in range(d.nranks)
    ]


# -- round trips through the protocol ----------------------------------------------------


@SETTINGS
@given(distributions())
def test_from_distbuffers_reproduces_the_distribution(d):
    back = Distribution.from_distbuffers(distbuffers(d))
    assert back == d
    assert hash(back) == hash(d)
    assert back.grid == d.grid
    assert back.global_shape == d.global_shape
    for k in range(d.nranks):
        assert back.local_shape(k) == d.local_shape(k)
        for a, b in zip(back.dim_data(k), d.dim_data(k)):
            assert dicts_equal(a, b)
    # from_dim_data takes the dicts directly.
    assert Distribution.from_dim_data([d.dim_data(k) for k in range(d.nranks)]) == d


@SETTINGS
@given(distributions(), st.booleans(), st.booleans())
def test_from_v09_distbuffers_reproduces_the_distribution(d, use_n, omit_defaults):
    dbs = distbuffers(d, "0.9.0")
    for db in dbs:
        db["dim_data"] = tuple(
            to_v09(dd, use_n=use_n, omit_defaults=omit_defaults) for dd in db["dim_data"]
        )
    assert Distribution.from_distbuffers(dbs) == d


@SETTINGS
@given(distributions())
def test_empty_dim_dict_alias_means_undistributed(d):
    # The DAP alias: {} is an undistributed, unpadded, non-periodic block dimension.
    plain = [m == BlockMap(m.size, nprocs=1) for m in d.maps]
    dbs = distbuffers(d)
    for db in dbs:
        db["dim_data"] = tuple({} if p else dd for p, dd in zip(plain, db["dim_data"]))
    assert Distribution.from_distbuffers(dbs) == d


@SETTINGS
@given(distributions(min_ndim=1), st.data())
def test_from_distbuffers_rejects_a_wrong_number_of_ranks(d, data):
    dbs = distbuffers(d)
    if d.nranks > 1:
        with pytest.raises(DAPError, match="proc_grid_size"):
            Distribution.from_distbuffers(dbs[:-1])
    with pytest.raises(DAPError):
        Distribution.from_distbuffers([*dbs, dbs[0]])
    if d.nranks > 1:
        # Swapping two ranks breaks the row-major rule (or the dicts along an axis).
        i = data.draw(st.integers(0, d.nranks - 2))
        swapped = list(dbs)
        swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
        with pytest.raises(DAPError):
            Distribution.from_distbuffers(swapped)


# -- the global index space --------------------------------------------------------------


@SETTINGS
@given(distributions())
def test_owned_blocks_partition_the_global_index_space(d):
    count = np.zeros(d.global_shape, dtype=np.intp)
    held = np.zeros(d.global_shape, dtype=np.intp)
    for k in range(d.nranks):
        owned = d.owned_indices(k)
        gi = d.global_indices(k)
        assert len(owned) == len(gi) == d.ndim
        assert tuple(len(g) for g in gi) == d.local_shape(k)
        count[np.ix_(*owned)] += 1
        np.add.at(held, np.ix_(*gi), 1)
    np.testing.assert_array_equal(count, np.ones(d.global_shape, dtype=np.intp))
    assert (held >= 1).all()
    assert held.sum() == sum(int(np.prod(d.local_shape(k))) for k in range(d.nranks))


@SETTINGS
@given(distributions(), st.data())
def test_owner_of_random_indices(d, data):
    assume(all(d.global_shape))
    for _ in range(5):
        idx = tuple(data.draw(st.integers(0, n - 1)) for n in d.global_shape)
        rank, local = d.owner(idx)
        assert type(rank) is int
        assert 0 <= rank < d.nranks
        assert len(local) == d.ndim
        gi = d.global_indices(rank)
        assert tuple(int(g[i]) for g, i in zip(gi, local)) == idx
        for g, o in zip(d.owned_indices(rank), idx):
            assert o in g
        # Negative indices count from the end.
        neg = tuple(i - n for i, n in zip(idx, d.global_shape))
        assert d.owner(neg) == (rank, local)


@SETTINGS
@given(distributions(min_ndim=1), st.data())
def test_owner_is_vectorised(d, data):
    assume(all(d.global_shape))
    n = data.draw(st.integers(0, 8))
    idx = [
        np.array(data.draw(st.lists(st.integers(0, s - 1), min_size=n, max_size=n)), np.intp)
        for s in d.global_shape
    ]
    ranks, local = d.owner(tuple(idx))
    assert ranks.shape == (n,)
    for j in range(n):
        r, loc = d.owner(tuple(int(a[j]) for a in idx))
        assert int(ranks[j]) == r
        assert tuple(int(a[j]) for a in local) == loc


def test_owner_errors():
    d = Distribution.create((4, 5), grid=(2, 2))
    with pytest.raises(IndexError):
        d.owner((4, 0))
    with pytest.raises(IndexError):
        d.owner((0, -6))
    with pytest.raises(IndexError):
        d.owner((0,))
    with pytest.raises(TypeError):
        d.owner((0.5, 1))


def test_zero_dimensional_distribution():
    d = Distribution.create(())
    assert (d.global_shape, d.grid_shape, d.nranks) == ((), (), 1)
    assert d.local_shape(0) == ()
    assert d.dim_data(0) == ()
    assert d.owner(()) == (0, ())
    assert Distribution.from_distbuffers(distbuffers(d)) == d


# -- create ------------------------------------------------------------------------------


@SETTINGS
@given(st.integers(0, 60), st.integers(1, 8))
def test_create_even_split_gives_the_first_ranks_one_more(size, P):
    d = Distribution.create(size, grid=(P,))
    counts = [d.local_shape(r)[0] for r in range(P)]
    assert counts == [size // P + (r < size % P) for r in range(P)]
    stops = np.cumsum([0, *counts])
    for r in range(P):
        assert d.global_indices(r)[0].tolist() == list(range(stops[r], stops[r + 1]))
        dd = d.dim_data(r)[0]
        assert (dd["start"], dd["stop"]) == (stops[r], stops[r + 1])


@SETTINGS
@given(
    st.lists(st.integers(0, 12), min_size=1, max_size=3),
    st.lists(st.integers(1, 3), min_size=3, max_size=3),
)
def test_create_even_split_n_d(shape, grid):
    grid = grid[: len(shape)]
    d = Distribution.create(tuple(shape), grid=tuple(grid))
    assert d.grid_shape == tuple(grid)
    assert d.dist_types == ("b",) * len(shape)
    for k in range(d.nranks):
        c = d.coords(k)
        expected = tuple(n // p + (ci < n % p) for n, p, ci in zip(shape, grid, c))
        assert d.local_shape(k) == expected


def test_create_kinds():
    d = Distribution.create(
        (10, 9, 4), dist=("c", {"dist": "c", "block_size": 2}, "n"), grid=(2, 3, None)
    )
    assert d.grid_shape == (2, 3, 1)
    assert d.maps[0] == CyclicMap(10, 2)
    assert d.maps[1] == CyclicMap(9, 3, 2)
    assert d.maps[2] == BlockMap(4, nprocs=1)
    d = Distribution.create(5, dist={"dist": "u", "indices": [[4, 0], [1, 2, 3]]})
    assert d.maps[0] == UnstructuredMap(5, [[4, 0], [1, 2, 3]])
    d = Distribution.create(7, dist={"dist": "b", "bounds": [0, 0, 5, 7]})
    assert [d.local_shape(r) for r in range(3)] == [(0,), (5,), (2,)]
    d = Distribution.create((18,), grid=(2,), padding=1)
    assert d.maps[0] == BlockMap(18, nprocs=2, padding=[(1, 1), (1, 1)])
    d = Distribution.create(12, grid=(None,), nranks=3, padding=[(2, 2)], periodic=True)
    assert d.maps[0] == BlockMap(12, nprocs=3, padding=[(2, 2)] * 3, periodic=True)
    assert Distribution.create((6, 6), nranks=4).grid_shape == (4, 1)  # rows stay whole
    assert Distribution.create((3, 6), nranks=4).grid_shape == (2, 2)  # 3 rows, 4 ranks
    assert Distribution.create((8, 6), nranks=4, halo=3).grid_shape == (2, 2)  # 2 < halo


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"shape": (-1,)}, ValueError, "non-negative"),
        ({"shape": (4.0,)}, (ValueError, TypeError), "shape"),
        ({"shape": 4, "dist": "x"}, ValueError, "unknown distribution"),
        ({"shape": 4, "dist": 5}, (ValueError, TypeError), "dist"),
        ({"shape": (4, 4), "dist": ("b",)}, ValueError, "one entry per dimension"),
        ({"shape": 4, "dist": "n", "grid": (2,)}, ValueError, "grid size"),
        ({"shape": 4, "dist": "c", "padding": 1, "grid": (2,)}, DAPError, "padding"),
        ({"shape": 4, "dist": "c", "periodic": True, "grid": (2,)}, DAPError, "periodic"),
        ({"shape": 4, "dist": "u", "padding": 1, "grid": (2,)}, DAPError, "padding"),
        ({"shape": 4, "dist": {"dist": "b", "bounds": [0, 3, 2, 4]}}, DAPError, "grid rank"),
        ({"shape": 5, "dist": {"dist": "b", "bounds": [0, 2, 4]}}, DAPError, "cover"),
        ({"shape": 4, "dist": "u", "grid": (2,)}, ValueError, "indices"),
        ({"shape": 4, "dist": {"dist": "u", "indices": [[0], [1, 2]]}}, DAPError, "no rank"),
        (
            {"shape": 4, "dist": {"dist": "u", "indices": [[0, 1, 2], [2, 3]], "one_to_one": True}},
            DAPError,
            "one_to_one",
        ),
        ({"shape": 4, "dist": {"dist": "u", "indices": [[0, 1], [2, 5]]}}, DAPError, "outside"),
        ({"shape": 4, "dist": {"dist": "b", "block_size": 2}}, ValueError, "block_size"),
        ({"shape": 4, "dist": "c", "block_size": 0, "grid": (2,)}, DAPError, "block_size"),
        ({"shape": 4, "dist": "c", "block_size": -1, "grid": (2,)}, DAPError, "block_size"),
        (
            {"shape": 4, "dist": "c", "block_size": 1.5, "grid": (2,)},
            (ValueError, TypeError),
            "block_size",
        ),
        (
            {"shape": 6, "dist": {"dist": "b", "bounds": [0, 3, 6]}, "grid": (3,)},
            ValueError,
            "conflicts",
        ),
        ({"shape": (4, 4), "grid": (3, None), "nranks": 4}, ValueError, "cannot be split"),
        ({"shape": (4,), "grid": (2, 2)}, ValueError, "one entry per dimension"),
        ({"shape": 4, "grid": (-1,)}, ValueError, "grid"),
        ({"shape": 4, "grid": (0,), "nranks": 0}, ValueError, "nranks"),
        ({"shape": 6, "grid": (2,), "padding": [(1, 1, 1)]}, ValueError, "padding"),
        ({"shape": 4, "grid": (2,), "padding": 3}, DAPError, "padding"),
        ({"shape": 4, "grid": (2,), "padding": -1}, DAPError, "padding"),
        ({"shape": 4, "grid": (2,), "padding": 1.5}, (ValueError, TypeError), "padding"),
        ({"shape": 6, "grid": (2,), "padding": [[(0, 1), (2, 0)]]}, DAPError, "match"),
        ({"shape": 4, "dist": {"dist": "b", "foo": 1}}, ValueError, "unknown key"),
        ({"shape": 4, "grid": (2,), "periodic": "yes"}, (ValueError, TypeError), "periodic"),
    ],
    ids=lambda v: ",".join(f"{k}={v[k]}" for k in v if k != "shape") if isinstance(v, dict) else "",
)
def test_create_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        Distribution.create(**kwargs)


# -- value semantics ---------------------------------------------------------------------


@SETTINGS
@given(distributions(max_ndim=3))
def test_distribution_value_semantics(d):
    for other in (pickle.loads(pickle.dumps(d)), copy.deepcopy(d)):
        assert other == d
        assert hash(other) == hash(d)
        assert other.grid == d.grid
    assert d != "not a distribution"
    with pytest.raises(AttributeError):
        d.maps = ()
    with pytest.raises(AttributeError):
        d._maps = ()
    with pytest.raises(AttributeError):
        d.anything = 1
    assert Distribution(d.maps) == d


def test_distribution_equality_distinguishes_layouts():
    a = Distribution.create((6, 4), grid=(2, 1))
    assert a == Distribution.create((6, 4), grid=(2, 1))
    assert a != Distribution.create((6, 4), grid=(1, 2))
    assert a != Distribution.create((6, 4), dist=("c", "b"), grid=(2, 1))
    assert a != Distribution.create((6, 5), grid=(2, 1))


def test_distribution_attributes_cannot_be_deleted():
    d = Distribution.create((6, 4), grid=(2, 1))
    with pytest.raises(AttributeError):
        del d._maps
    assert d.global_shape == (6, 4)


def test_distribution_rejects_a_mismatched_grid():
    with pytest.raises(DAPError, match="grid"):
        Distribution([BlockMap(4, nprocs=2)], grid=(3,))
    with pytest.raises(TypeError, match="Map"):
        Distribution([object()])
