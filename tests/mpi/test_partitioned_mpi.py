"""``__partitioned__`` on real processes: each rank exports and imports its own partition.

Run under mpiexec by tests/test_mpi.py (the ``-n 4`` subset selects the
tests named ``redistribute`` and ``bad_dict``). Every check compares with
NumPy on the same data, which every process builds.
"""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest

import dapx

pytestmark = pytest.mark.mpi


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _slices(start, shape):
    return tuple(slice(s, s + n) for s, n in zip(start, shape))


def _producer(x, bounds, rank, *, handles=False):
    """A hand-built producer of `x` cut at `bounds`; SPMD unless `handles`."""
    tiling = tuple(len(b) - 1 for b in bounds)
    grid = dapx.ProcessGrid(tiling)
    parts = {}
    for r in range(grid.nranks):
        pos = grid.coords(r)
        start = tuple(b[c] for b, c in zip(bounds, pos))
        shape = tuple(b[c + 1] - b[c] for b, c in zip(bounds, pos))
        block = x[_slices(start, shape)].copy()
        value = Handle(block) if handles else (block if r == rank else None)
        parts[pos] = {
            "start": start,
            "shape": shape,
            "data": value,
            "location": [r],
            "note": "extra key",
        }
    desc = {"shape": x.shape, "partition_tiling": tiling, "partitions": parts}
    if handles:
        desc["get"] = lambda h: h.value
    else:
        desc["get"] = lambda d: d
        desc["locals"] = [grid.coords(rank)]
    return desc


class Handle:
    def __init__(self, value):
        self.value = value


@pytest.mark.parametrize("shape", [(13,), (7, 5), (3, 4, 5)])
def test_partitioned_after_redistribute_is_spmd(backend, shape):
    rank = backend.comm.rank
    x = _data(shape)
    a = dapx.asarray(x, dist="c", backend=backend).redistribute("b")
    dist = a.distribution
    p = a.__partitioned__
    assert p["shape"] == x.shape and p["partition_tiling"] == dist.grid_shape
    assert set(p["partitions"]) == set(itertools.product(*map(range, dist.grid_shape)))
    assert p["locals"] == [dist.coords(rank)]
    cover = np.zeros(shape, int)
    for pos, part in p["partitions"].items():
        owner = dist.grid.rank(pos)
        assert part["location"] == [owner]
        cover[_slices(part["start"], part["shape"])] += 1
        if owner == rank:
            np.testing.assert_array_equal(part["data"], x[_slices(part["start"], part["shape"])])
            assert part["data"].size == 0 or np.shares_memory(part["data"], a.local())
        else:
            assert part["data"] is None
    assert (cover == 1).all()
    q = pickle.loads(pickle.dumps(p))
    assert q["get"] is p["get"] and q["locals"] == p["locals"]

    b = dapx.from_partitioned(p, backend=backend)
    assert b.distribution == dist
    assert a.local().size == 0 or np.shares_memory(b.local(), a.local())
    np.testing.assert_array_equal(b.gather(), x)
    via_dap = dapx.from_distarray(a, backend=backend)
    assert via_dap.distribution == b.distribution
    np.testing.assert_array_equal(via_dap.gather(), b.gather())
    if backend.nranks > 1:  # rank 0 owns 0, n, 2n: not a block
        c = dapx.asarray(_data(2 * backend.nranks + 1), dist="c", backend=backend)
        with pytest.raises(ValueError, match="redistribute to block first"):
            _ = c.__partitioned__


def test_from_partitioned_spmd_and_handle_based(backend):
    rank, n = backend.comm.rank, backend.nranks
    x = _data((9, 4), seed=1)
    bounds = [[0, *range(2, 2 + n - 1), 9], [0, 4]]  # irregular, rows 0..1 on rank 0
    for handles in (False, True):
        desc = _producer(x, bounds, rank, handles=handles)
        a = dapx.from_partitioned(desc, backend=backend)
        mine = desc["partitions"][(rank, 0)]["data"]
        assert np.shares_memory(a.local(), mine.value if handles else mine)
        np.testing.assert_array_equal(a.gather(), x)
        expected = dapx.Distribution([dapx.BlockMap(9, bounds[0]), dapx.BlockMap(4, bounds[1])])
        assert a.distribution == expected


def test_from_partitioned_bad_dict_raises_on_every_rank(backend):
    rank, n = backend.comm.rank, backend.nranks
    x = _data(10, seed=2)
    bounds = [[int(b) for b in dapx.layout.maps.even_bounds(10, n)]]

    desc = _producer(x, bounds, rank)
    if rank == n - 1:
        desc["partitions"][(rank,)]["data"] = np.zeros(11)
    where = f"rank {n - 1}: " if n > 1 else ""  # one process: nothing to say who
    with pytest.raises(dapx.DAPError, match=rf"^{where}partition \({n - 1},\): its data"):
        dapx.from_partitioned(desc, backend=backend)

    if n > 1:
        desc = _producer(x, bounds, rank)
        if rank == 0:  # claims rank 1's partition
            desc["locals"] = [(1,)]
            desc["partitions"][(1,)]["data"] = x[bounds[0][1] : bounds[0][2]].copy()
        with pytest.raises(dapx.DAPError, match=r"rank 0: partition \(1,\) is local to this"):
            dapx.from_partitioned(desc, backend=backend)

    if n > 2:  # the last rank moves a boundary between partitions that are not its own
        other = [[0, 1, *bounds[0][2:]]]
        desc = _producer(x, other if rank == n - 1 else bounds, rank)
        with pytest.raises(dapx.DAPError, match="every process must describe the same"):
            dapx.from_partitioned(desc, backend=backend)

    a = dapx.from_partitioned(_producer(x, bounds, rank), backend=backend)  # still usable
    np.testing.assert_array_equal((a + 1).gather(), x + 1)
