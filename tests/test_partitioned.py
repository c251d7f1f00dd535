"""The ``__partitioned__`` protocol (shared/specs/partitioned-protocol.md) and dask interop.

Producer side: every rule of the spec checked on dapx's exports. Consumer
side: hand-built producers (SPMD with NumPy data, handle-based with dask
futures, delayed objects and plain handles, objects NumPy views through
``__array_interface__``, DLPack or ``__array__``), bad dicts each raising
`dapx.DAPError` naming the partition, round trips and dask conversions, all
against NumPy on the same data.
"""

from __future__ import annotations

import itertools
import math
import pickle
import re
import threading

import numpy as np
import pytest

import dapx
from dapx.backends.base import Backend
from dapx.backends.simulated import SimulatedBackend
from dapx.interop.partitioned import check_partitioned, get_data
from dapx.layout.maps import even_bounds
from dapx.testing import assert_eq, layout

DTYPES = [np.float64, np.float32, np.int64, np.bool_, np.complex128]
BLOCK_SHAPES = [(0,), (1,), (13,), (4, 5), (0, 3), (5, 1), (2, 3, 4)]


def data(shape, dtype=np.float64) -> np.ndarray:
    x = np.arange(math.prod(shape)).reshape(shape) * 3 - 5
    if np.dtype(dtype).kind == "b":
        return (x % 3 == 0).astype(dtype)
    if np.dtype(dtype).kind == "c":
        return x * (0.5 - 1j)
    return x.astype(dtype)


def block_layouts(shape, nranks):
    """Block layouts of `shape` on `nranks`: even, irregular (empty blocks), one
    dimension only, and block-cyclic with ceil(n/P) blocks (a block layout in fact)."""
    yield layout("b", shape, nranks)
    yield layout("b-irregular", shape, nranks, seed=len(shape))
    yield {"dist": ("b",) + ("n",) * (len(shape) - 1), "grid": (nranks,) + (1,) * (len(shape) - 1)}
    yield layout("c-ceil", shape, nranks)


def all_blocks_here(backend):
    if len(backend.local_ranks) != backend.nranks:
        pytest.skip("to_dask needs every block in this process")


def slices(start, shape):
    return tuple(slice(s, s + n) for s, n in zip(start, shape))


def producer(x, bounds, local, *, handles=False, get=None, wrap=None, extra=False) -> dict:
    """A hand-built producer of `x` cut at `bounds` (one boundary list per dimension).

    Partitions are numbered like dapx ranks (row-major); SPMD producers give
    data for the ranks in `local` and None elsewhere, handle-based producers
    (``handles=True``) give every partition and no ``locals``.
    """
    tiling = tuple(len(b) - 1 for b in bounds)
    grid = dapx.ProcessGrid(tiling)
    parts = {}
    for r in range(grid.nranks):
        pos = grid.coords(r)
        start = tuple(int(b[c]) for b, c in zip(bounds, pos))
        shape = tuple(int(b[c + 1] - b[c]) for b, c in zip(bounds, pos))
        block = np.ascontiguousarray(x[slices(start, shape)])
        present = handles or r in local
        value = None if not present else (wrap(block) if wrap else block)
        parts[pos] = {"start": start, "shape": shape, "data": value, "location": [r]}
        if extra:
            parts[pos]["labels"] = [f"row {i}" for i in range(shape[0])]
    desc = {
        "shape": x.shape,
        "partition_tiling": tiling,
        "partitions": parts,
        "get": get or (lambda handle: handle),
    }
    if not handles:
        desc["locals"] = [grid.coords(r) for r in local]
    if extra:
        desc["dtype"] = str(x.dtype)
        desc["producer"] = "hand-built"
    return desc


def grid_bounds(shape, nranks, irregular=False, seed=0):
    tiling = dapx.dims_create(nranks, len(shape))
    rng = np.random.default_rng(seed)
    if not irregular:
        return [even_bounds(n, p).tolist() for n, p in zip(shape, tiling)]
    return [[0, *np.sort(rng.integers(0, n + 1, p - 1)).tolist(), n] for n, p in zip(shape, tiling)]


def block_distribution(bounds):
    return dapx.Distribution([dapx.BlockMap(b[-1], b) for b in bounds])


# -- producer side: every rule of the spec -----------------------------------------------------


def check_spec_rules(p, a, x):
    """Every rule of partitioned-protocol.md on the export `p` of `a`, which holds `x`."""
    backend, dist = a.backend, a.distribution
    assert {"shape", "partition_tiling", "partitions", "get", "locals"} <= set(p)
    # shape: a tuple of the global sizes
    assert isinstance(p["shape"], tuple) and p["shape"] == x.shape
    # partition_tiling: a tuple, same dimensionality, partitions per dimension
    tiling = p["partition_tiling"]
    assert isinstance(tiling, tuple) and len(tiling) == x.ndim
    assert tiling == dist.grid_shape and math.prod(tiling) == backend.nranks
    # partitions: every grid position is a key, a tuple of the grid's dimensionality
    positions = set(itertools.product(*(range(t) for t in tiling)))
    assert set(p["partitions"]) == positions
    cover = np.zeros(x.shape, np.intp)
    dtypes = set()
    for pos, part in p["partitions"].items():
        assert isinstance(pos, tuple) and all(type(c) is int for c in pos)
        assert {"start", "shape", "data", "location"} <= set(part)
        start, shape = part["start"], part["shape"]
        assert isinstance(start, tuple) and isinstance(shape, tuple)
        assert len(start) == len(shape) == x.ndim
        assert all(s + n <= size for s, n, size in zip(start, shape, x.shape))
        cover[slices(start, shape)] += 1
        # location: a sequence of ranks; dapx numbers grid positions row-major
        rank = dist.grid.rank(pos)
        assert list(part["location"]) == [rank]
        if backend.is_local(rank):
            block = part["data"]
            assert isinstance(block, np.ndarray) and block.shape == shape
            np.testing.assert_array_equal(block, x[slices(start, shape)])
            assert block.size == 0 or np.shares_memory(block, a.local(rank))
            dtypes.add(block.dtype)
        else:
            assert part["data"] is None  # SPMD: remote partitions are None
    # the partitions tile the shape exactly along the grid
    assert (cover == 1).all()
    assert len(dtypes) <= 1  # all data of the same type
    # locals: this process's positions, keys of partitions
    assert p["locals"] == [dist.coords(r) for r in backend.local_ranks]
    # get: handles (one or a sequence) to data; here the data are arrays already
    local = [p["partitions"][pos]["data"] for pos in p["locals"]]
    assert all(get_data(d) is d for d in local) and p["get"](local) == local
    # the dict pickles, get included (a module-level function)
    q = pickle.loads(pickle.dumps(p))
    assert q["get"] is get_data and q["shape"] == p["shape"]
    for pos in p["locals"]:
        np.testing.assert_array_equal(q["partitions"][pos]["data"], p["partitions"][pos]["data"])
    # and it agrees with the layout checks of the consumer
    layout_ = check_partitioned(p)
    for m, b in zip(dist.maps, layout_.bounds):
        if isinstance(m, dapx.BlockMap):
            assert list(b) == m.bounds.tolist()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
def test_export_follows_every_rule_of_the_spec(backend, dtype):
    for shape in BLOCK_SHAPES:
        x = data(shape, dtype)
        for kw in block_layouts(shape, backend.nranks):
            a = dapx.asarray(x, backend=backend, **kw)
            check_spec_rules(a.__partitioned__, a, x)


class OneRankOfMany(Backend):
    """The view of one process holding one rank of `nranks` (no collectives needed here)."""

    def __init__(self, nranks, rank):
        self._n, self._r = nranks, rank

    nranks = property(lambda self: self._n)
    local_ranks = property(lambda self: (self._r,))

    def allgather(self, values):
        raise AssertionError("a one-process view cannot communicate")

    alltoallv = bcast = barrier = allgather


def test_export_on_one_rank_of_many_gives_none_for_remote_partitions():
    x = data((7, 4))
    dist = dapx.Distribution.create(x.shape, grid=(3, 2))
    for rank in range(6):
        backend = OneRankOfMany(6, rank)
        block = x[np.ix_(*dist.global_indices(rank))].copy()
        a = dapx.DistributedArray(dist, {rank: block}, backend)
        p = a.__partitioned__
        check_spec_rules(p, a, x)
        assert p["locals"] == [dist.coords(rank)]
        assert [pos for pos, q in p["partitions"].items() if q["data"] is not None] == p["locals"]


@pytest.mark.parametrize("nranks", [1, 4, 6])
def test_export_needs_no_communication(nranks):
    class Silent(SimulatedBackend):
        def allgather(self, values):
            raise AssertionError("__partitioned__ must not communicate")

        alltoallv = bcast = barrier = allgather

    x = data((6, 5))
    a = dapx.asarray(x, backend=dapx.simulated(nranks), **layout("b-irregular", x.shape, nranks))
    quiet = dapx.DistributedArray(a.distribution, dict(a.locals), Silent(nranks))
    check_spec_rules(quiet.__partitioned__, quiet, x)


@pytest.mark.parametrize("periodic", [False, True])
@pytest.mark.parametrize("kind", ["padding", "halo"])
def test_export_of_padded_array_holds_the_interior(backend, kind, periodic):
    x = data((12, 5))
    a = dapx.asarray(
        x, dist=("b", "n"), periodic=[periodic, False], backend=backend, **{kind: [1, 0]}
    )
    assert any(m.is_padded for m in a.distribution.maps)
    p = a.__partitioned__
    check_spec_rules(p, a, x)
    for r in backend.local_ranks:
        c = a.distribution.coords(r)
        part = p["partitions"][c]
        assert part["shape"] == (a.distribution.maps[0].num_owned(c[0]), 5)
        if kind == "halo" or periodic:  # ghost cells on both sides, none in the partition
            assert part["shape"][0] == a.local(r).shape[0] - 2
    b = dapx.from_partitioned(p, backend=backend)
    assert_eq(b, x)
    assert not any(m.is_padded for m in b.distribution.maps)
    for r in backend.local_ranks:
        assert a.local(r).size == 0 or np.shares_memory(b.local(r), a.local(r))


@pytest.mark.parametrize("kind", ["c", "c2", "u"])
def test_cyclic_and_unstructured_layouts_say_redistribute_first(backend, kind):
    if backend.nranks == 1:
        pytest.skip("one rank: every layout is one block")
    x = data((9, 4))
    a = dapx.asarray(x, backend=backend, **layout(kind, x.shape, backend.nranks, seed=1))
    with pytest.raises(ValueError, match="redistribute to block first"):
        _ = a.__partitioned__
    with pytest.raises(ValueError, match="redistribute to block first"):
        a.to_dask()
    b = a.redistribute("b")
    check_spec_rules(b.__partitioned__, b, x)


def test_zero_d_is_one_partition_everywhere(backend):
    a = dapx.asarray(np.float32(2.5), backend=backend)
    p = a.__partitioned__
    assert p["shape"] == () and p["partition_tiling"] == () and p["locals"] == [()]
    (part,) = p["partitions"].values()
    assert part["start"] == () and part["shape"] == ()
    assert part["location"] == list(range(backend.nranks))
    b = dapx.from_partitioned(p, backend=backend)
    assert b.shape == () and b.dtype == np.float32 and float(b) == 2.5
    assert np.shares_memory(b.local(backend.local_ranks[0]), a.local(backend.local_ranks[0]))


# -- consumer side -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
def test_spmd_producer_with_numpy_data(backend, dtype):
    for shape in BLOCK_SHAPES:
        x = data(shape, dtype)
        for irregular in (False, True):
            bounds = grid_bounds(shape, backend.nranks, irregular, seed=len(shape))
            desc = producer(x, bounds, backend.local_ranks)
            a = dapx.from_partitioned(desc, backend=backend)
            assert_eq(a, x)
            assert a.distribution == block_distribution(bounds)
            for r in backend.local_ranks:
                given = desc["partitions"][a.distribution.coords(r)]["data"]
                assert a.local(r) is given or np.shares_memory(a.local(r), given)


class Handle:
    """An opaque reference, resolved only by the producer's ``get``."""

    def __init__(self, value):
        self._value = value


def test_handles_with_a_lambda_get_and_extra_keys(backend):
    x = data((7, 6))
    bounds = grid_bounds(x.shape, backend.nranks, irregular=True, seed=3)
    desc = producer(x, bounds, (), handles=True, wrap=Handle, extra=True, get=lambda h: h._value)
    a = dapx.from_partitioned(desc, backend=backend)
    assert_eq(a, x)
    for r in backend.local_ranks:
        assert a.local(r) is desc["partitions"][a.distribution.coords(r)]["data"]._value
    spmd = producer(x, bounds, backend.local_ranks, extra=True, get=lambda h: h)
    assert_eq(dapx.from_partitioned(spmd, backend=backend), x)


class ArrayInterface:
    def __init__(self, a):
        self._a = a

    @property
    def __array_interface__(self):
        return self._a.__array_interface__


class DLPack:
    """What a CPU torch tensor offers NumPy (without __array__)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class ArrayMethod:
    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a


def _never(handle):
    raise AssertionError("data NumPy can view must not go through get")


@pytest.mark.parametrize("wrap", [ArrayInterface, DLPack, ArrayMethod])
def test_data_numpy_can_view_is_used_without_copying(backend, wrap):
    x = data((6, 4), np.float32)
    bounds = grid_bounds(x.shape, backend.nranks)
    for handles in (False, True):
        desc = producer(x, bounds, backend.local_ranks, handles=handles, wrap=wrap, get=_never)
        a = dapx.from_partitioned(desc, backend=backend)
        assert_eq(a, x)
        for r in backend.local_ranks:
            source = desc["partitions"][a.distribution.coords(r)]["data"]._a
            assert source.size == 0 or np.shares_memory(a.local(r), source)


def test_method_style_producer_and_objects(backend):
    x = data((5, 3))
    a = dapx.asarray(x, backend=backend)

    class MethodStyle:  # the spec's draft calls __partitioned__ a method
        def __partitioned__(self):
            return a.__partitioned__

    assert_eq(dapx.from_partitioned(MethodStyle(), backend=backend), x)
    assert_eq(dapx.from_partitioned(a, backend=backend), x)
    with pytest.raises(TypeError, match="needs an object with __partitioned__"):
        dapx.from_partitioned(x, backend=backend)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=2, processes=False, dashboard_address=":0") as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client


@pytest.mark.parametrize("shape", [(11,), (5, 6)])
def test_handle_based_producer_with_dask_futures(backend, dask_client, shape):
    x = data(shape)
    bounds = grid_bounds(shape, backend.nranks, irregular=True, seed=5)
    desc = producer(x, bounds, (), handles=True)
    positions = list(desc["partitions"])
    futures = dask_client.scatter([desc["partitions"][p]["data"] for p in positions], hash=False)
    where = dask_client.who_has(futures)
    for pos, future in zip(positions, futures):
        desc["partitions"][pos]["data"] = future
        desc["partitions"][pos]["location"] = list(where[future.key])  # worker addresses
    for get in (lambda f: f.result(), dask_client.gather):
        desc["get"] = get
        a = dapx.from_partitioned(desc, backend=backend)
        assert_eq(a, x)
        assert a.distribution == block_distribution(bounds)


def test_handle_based_producer_with_dask_delayed(backend):
    dask = pytest.importorskip("dask")
    x = data((6, 7), np.int64)
    bounds = grid_bounds(x.shape, backend.nranks, seed=2)
    desc = producer(
        x,
        bounds,
        (),
        handles=True,
        wrap=dask.delayed(np.negative).__call__,
        get=lambda d: d.compute(),
    )
    assert_eq(dapx.from_partitioned(desc, backend=backend), -x)


# -- bad dicts: each raises DAPError naming the partition --------------------------------------


def _valid_1d():
    return producer(np.arange(10.0), [[0, 3, 6, 8, 10]], range(4))


def _valid_2d():
    return producer(np.arange(20.0).reshape(4, 5), [[0, 2, 4], [0, 3, 5]], range(4))


def _set(pos, key, value, make=_valid_1d):
    def mutate():
        d = make()
        d["partitions"][pos][key] = value
        return d

    return mutate


def _delete_position():
    d = _valid_2d()
    del d["partitions"][(1, 0)]
    return d


def _rename(old, new, make=_valid_1d):
    def mutate():
        d = make()
        d["partitions"][new] = d["partitions"].pop(old)
        return d

    return mutate


def _overlap():
    d = _valid_1d()
    d["partitions"][(2,)].update(start=(5,), shape=(3,))
    return d


def _gap():
    d = _valid_1d()
    d["partitions"][(2,)].update(start=(7,), shape=(1,))
    return d


def _tail_gap():
    d = _valid_1d()
    d["shape"] = (11,)
    return d


def _not_a_grid():
    d = _valid_2d()
    d["partitions"][(1, 1)].update(start=(2, 2), shape=(2, 3))
    return d


def _drop_key(pos, key):
    def mutate():
        d = _valid_1d()
        del d["partitions"][pos][key]
        return d

    return mutate


def _dtype_mismatch():
    d = _valid_1d()
    d["partitions"][(3,)]["data"] = d["partitions"][(3,)]["data"].astype(np.float32)
    return d


def _none_data(handles):
    def mutate():
        d = _valid_1d()
        if handles:
            del d["locals"]
        d["partitions"][(1,)]["data"] = None
        return d

    return mutate


class GPUArray:
    def __dlpack__(self, **kwargs):
        raise BufferError("device memory cannot be exported to the CPU")

    def __dlpack_device__(self):
        return (2, 0)


def _bad_locals():
    d = _valid_1d()
    d["locals"] = [(0,), (4,)]
    return d


BAD = {
    "missing position": (_delete_position, "partition (1, 0) is missing"),
    "position outside the grid": (_rename((3,), (4,)), "partition key (4,)"),
    "position not a tuple": (_rename((3,), 3), "partition key 3"),
    "overlap": (
        _overlap,
        "partition (2,) starts at 5 along dim 0, but the partition before it "
        "((1,)) ends at 6: they overlap",
    ),
    "gap": (_gap, "partition (2,) starts at 7 along dim 0, leaving indices 6..6"),
    "gap at the end": (_tail_gap, "(the last is partition (3,)) but the shape says 11"),
    "not on a grid": (
        _not_a_grid,
        "partition (1, 1) covers indices 2..4 of dim 1 but partition (0, 1)",
    ),
    "beyond the shape": (_set((3,), "shape", (5,)), "partition (3,) covers indices 8..12"),
    "data shape mismatch": (_set((1,), "data", np.zeros(4)), "partition (1,): its data has shape"),
    "start of wrong length": (_set((0,), "start", (0, 0)), "partition (0,): 'start' (0, 0)"),
    "negative start": (_set((0,), "start", (-1,)), "partition (0,): 'start' must be"),
    "float shape": (_set((1,), "shape", (3.0,)), "partition (1,): 'shape' must be"),
    "missing location": (_drop_key((2,), "location"), "partition (2,) lacks required key(s)"),
    "missing data": (_drop_key((0,), "data"), "partition (0,) lacks required key(s) ['data']"),
    "start not a tuple": (_set((1,), "start", None), "partition (1,): 'start' must be"),
    "location not a sequence": (_set((1,), "location", 1), "partition (1,): 'location'"),
    "empty location": (_set((1,), "location", []), "partition (1,): 'location'"),
    "SPMD location not a rank": (
        _set((2,), "location", ["node-a"]),
        "partition (2,): location ['node-a'] is not a list of ranks",
    ),
    "SPMD location out of range": (_set((2,), "location", [9]), "partition (2,): location [9]"),
    "unsupported data": (_set((0,), "data", [0.0, 1.0, 2.0]), "partition (0,): unsupported data"),
    "string data": (_set((0,), "data", "abc"), "partition (0,): unsupported data"),
    "device data": (_set((3,), "data", GPUArray()), "partition (3,): NumPy cannot view"),
    "dtype mismatch": (_dtype_mismatch, "partition (3,) has dtype float32"),
    "SPMD data missing here": (_none_data(False), "partition (1,): data is None in this process"),
    "handle missing": (_none_data(True), "partition (1,): data is None, but a producer without"),
    "locals outside the grid": (_bad_locals, "'locals' entry (4,)"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_dict_raises_dap_error_naming_the_partition(case):
    make, message = BAD[case]
    with pytest.raises(dapx.DAPError, match=re.escape(message)):
        dapx.from_partitioned(make(), backend=dapx.simulated(4))


def _info_not_dict():
    d = _valid_1d()
    d["partitions"][(1,)] = [0, 3]
    return d


def _top(key, value):
    def mutate():
        d = _valid_1d()
        if value is KeyError:
            del d[key]
        else:
            d[key] = value
        return d

    return mutate


BAD_TOP = {
    "partition not a dict": (_info_not_dict, "partition (1,) must map to a dict"),
    "no get": (_top("get", KeyError), "lacks required key(s) ['get']"),
    "no partitions": (_top("partitions", KeyError), "lacks required key(s) ['partitions']"),
    "get not callable": (_top("get", "identity"), "'get' must be callable"),
    "negative shape": (_top("shape", (-10,)), "'shape' must be a tuple of integers >= 0"),
    "tiling of wrong length": (_top("partition_tiling", (4, 1)), "one entry per dimension"),
    "zero tiling": (_top("partition_tiling", (0,)), "'partition_tiling' must be a tuple of"),
    "partitions not a dict": (_top("partitions", [1, 2]), "'partitions' must be a dict"),
    "locals not positions": (_top("locals", (0,)), "'locals' entry 0"),
}


@pytest.mark.parametrize("case", sorted(BAD_TOP))
def test_bad_dict_top_level(case):
    make, message = BAD_TOP[case]
    with pytest.raises(dapx.DAPError, match=re.escape(message)):
        dapx.from_partitioned(make(), backend=dapx.simulated(4))


def test_not_a_dict():
    class ListProducer:
        __partitioned__ = [(0,), (1,)]

    with pytest.raises(dapx.DAPError, match="__partitioned__ must be a dict, got list"):
        dapx.from_partitioned(ListProducer(), backend=dapx.simulated(4))


def test_partition_count_must_equal_the_ranks():
    for nranks in (1, 3, 6):
        with pytest.raises(dapx.DAPError, match=r"4 partitions .* ranks: dapx holds exactly one"):
            dapx.from_partitioned(_valid_2d(), backend=dapx.simulated(nranks))
    assert_eq(
        dapx.from_partitioned(_valid_2d(), backend=dapx.simulated(4)), np.arange(20.0).reshape(4, 5)
    )


# -- round trips -----------------------------------------------------------------------------------


def test_round_trip_shares_memory_and_agrees_with_the_dap(backend):
    for shape in BLOCK_SHAPES:
        x = data(shape)
        for kw in block_layouts(shape, backend.nranks):
            a = dapx.asarray(x, backend=backend, **kw)
            b = dapx.from_partitioned(a.__partitioned__, backend=backend)
            assert_eq(b, x)
            for r in backend.local_ranks:
                assert a.local(r).size == 0 or np.shares_memory(b.local(r), a.local(r))
            via_dap = dapx.from_distarray(
                [a.distarray(r) for r in backend.local_ranks], backend=backend
            )
            if all(m.dist_type == "b" for m in a.distribution.maps):
                assert b.distribution == a.distribution
            assert via_dap.distribution.global_shape == b.distribution.global_shape
            if via_dap.distribution.dist_types == b.distribution.dist_types:
                assert via_dap.distribution == b.distribution
            np.testing.assert_array_equal(via_dap.gather(), b.gather())


def test_unpickled_export_is_a_valid_producer(backend):
    x = data((9, 4), np.complex128)
    a = dapx.asarray(x, backend=backend, **layout("b-irregular", x.shape, backend.nranks))
    p = pickle.loads(pickle.dumps(a.__partitioned__))
    b = dapx.from_partitioned(p, backend=backend)
    assert_eq(b, x)
    assert b.distribution == a.distribution
    assert not any(np.shares_memory(b.local(r), a.local(r)) for r in backend.local_ranks)


# -- dask ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0,), (13,), (6, 5), (0, 4)])
def test_to_dask_chunks_are_the_blocks(backend, shape):
    all_blocks_here(backend)
    dask = pytest.importorskip("dask")
    x = data(shape)
    for kw in (layout("b", shape, backend.nranks), layout("b-irregular", shape, backend.nranks)):
        a = dapx.asarray(x, backend=backend, **kw)
        d = a.to_dask()
        assert d.chunks == tuple(tuple(np.diff(m.bounds).tolist()) for m in a.distribution.maps)
        assert d.dtype == x.dtype
        np.testing.assert_array_equal(d.compute(), x)
        if x.size:  # dask itself fails to sum several empty chunks along an axis
            np.testing.assert_allclose((d * 2 + 1).sum(axis=0).compute(), (x * 2 + 1).sum(axis=0))
        blocks = dask.compute(*d.to_delayed().ravel().tolist())
        grid = a.distribution.grid
        for pos, block in zip(itertools.product(*map(range, d.numblocks)), blocks):
            r = grid.rank(pos)
            assert block.size == 0 or np.shares_memory(block, a.local(r))  # no copy
        for r in backend.local_ranks:
            a.local(r)[...] += 1  # later writes show in the dask array
        np.testing.assert_array_equal(d.compute(), x + 1)


@pytest.mark.parametrize("shape", [(13,), (6, 5)])
def test_from_dask_keeps_a_chunk_grid_of_nranks_chunks(backend, shape):
    da = pytest.importorskip("dask.array")
    x = data(shape, np.int64)
    bounds = grid_bounds(shape, backend.nranks, irregular=True, seed=7)
    chunks = tuple(tuple(np.diff(b).tolist()) for b in bounds)
    a = dapx.from_dask(da.from_array(x, chunks=chunks), backend=backend)
    assert_eq(a, x)
    assert a.distribution == block_distribution(bounds)


@pytest.mark.parametrize("shape", [(13,), (6, 5), (3,), (0, 2)])
def test_from_dask_rechunks_other_grids_and_computes_each_chunk_once(backend, shape):
    da = pytest.importorskip("dask.array")
    x = data(shape)
    calls = []
    lock = threading.Lock()

    def double(block):
        with lock:
            calls.append(block.shape)
        return block * 2

    source = da.from_array(x, chunks=tuple(max(1, n // 5 + 1) for n in shape))
    y = source.map_blocks(double, meta=np.empty((0,) * x.ndim, x.dtype))
    nchunks = math.prod(y.numblocks)
    a = dapx.from_dask(y, backend=backend)
    assert_eq(a, 2 * x)
    expected = dapx.Distribution.create(shape, "b", nranks=backend.nranks)
    if nchunks != backend.nranks:
        assert a.distribution == expected
    if len(backend.local_ranks) == backend.nranks and x.size:  # dask skips empty arrays
        assert len(calls) == nchunks  # every chunk computed once


def test_from_dask_round_trip_and_writeable_blocks(backend):
    all_blocks_here(backend)
    da = pytest.importorskip("dask.array")
    x = data((7, 3))
    a = dapx.asarray(x, backend=backend, **layout("b-irregular", x.shape, backend.nranks))
    b = dapx.from_dask(a.to_dask(), backend=backend)
    assert b.distribution == a.distribution
    assert_eq(b, x)
    for r in backend.local_ranks:
        assert a.local(r).size == 0 or np.shares_memory(b.local(r), a.local(r))
    z = dapx.from_dask(da.zeros((5, 4), chunks=2), backend=backend)  # read-only broadcasts
    z[1, :] = 3.0
    expected = np.zeros((5, 4))
    expected[1, :] = 3.0
    assert_eq(z, expected)
    s = dapx.from_dask(da.from_array(np.array(4.5)), backend=backend)
    assert s.shape == () and float(s) == 4.5
    assert float(dapx.asarray(1.5, backend=backend).to_dask().compute()) == 1.5


def test_from_dask_rejects_what_it_cannot_use():
    da = pytest.importorskip("dask.array")
    x = da.arange(10, chunks=5)
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        dapx.from_dask(x[x > 3], backend=dapx.simulated(2))
    with pytest.raises(TypeError, match=r"needs a dask\.array\.Array"):
        dapx.from_dask(np.arange(3), backend=dapx.simulated(2))
    one_rank_view = dapx.DistributedArray(
        dapx.Distribution.create((4,), nranks=2), {1: np.arange(2.0, 4.0)}, OneRankOfMany(2, 1)
    )
    with pytest.raises(ValueError, match="holds only ranks \\[1\\] of 2"):
        one_rank_view.to_dask()
