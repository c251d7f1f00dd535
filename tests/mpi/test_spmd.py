"""The array features on real processes: each rank holds one block.

Every check compares the gathered result with NumPy on the same data, which
every process can build because it is seeded.
"""

from __future__ import annotations

import numpy as np
import pytest

import dapx

pytestmark = pytest.mark.mpi

LAYOUTS = ["b", "c", {"dist": "c", "block_size": 2}]


def _data(shape, dtype=float, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape) * 10
    return values.astype(dtype)


@pytest.mark.parametrize("dist", LAYOUTS, ids=str)
@pytest.mark.parametrize("shape", [(0,), (7,), (13,), (5, 6), (3, 4, 5)])
def test_elementwise_and_alignment(backend, dist, shape):
    x, y = _data(shape), _data(shape, seed=1)
    a = dapx.asarray(x, dist=dist, backend=backend)
    b = dapx.asarray(y, backend=backend)  # a different layout: aligned by exchange
    np.testing.assert_array_equal((a * b + 1.5).gather(), x * y + 1.5)
    np.testing.assert_array_equal(np.sin(a).gather(), np.sin(x))
    tail = x[..., -1:]  # broadcasts along the last axis
    np.testing.assert_array_equal((a + tail).gather(), x + tail)


@pytest.mark.parametrize("src", LAYOUTS, ids=str)
@pytest.mark.parametrize("dst", [*LAYOUTS, "u"], ids=str)
def test_redistribute(backend, src, dst):
    x = _data(23)
    a = dapx.asarray(x, dist=src, backend=backend)
    if dst == "u":
        perm = np.random.default_rng(3).permutation(23)
        dst = {"dist": "u", "indices": np.array_split(perm, backend.nranks)}
    np.testing.assert_array_equal(a.redistribute(dst).gather(), x)


def test_dap_round_trip_zero_copy(backend):
    a = dapx.asarray(_data((6, 5)), backend=backend)
    d = a.__distarray__()
    assert np.shares_memory(d["buffer"], a.local())
    b = dapx.from_distarray(a, backend=backend)
    assert np.shares_memory(b.local(), a.local())
    np.testing.assert_array_equal(b.gather(), a.gather())


def test_from_distarray_bad_dict_raises_everywhere(backend):
    a = dapx.asarray(_data(8), backend=backend)
    d = dict(a.__distarray__())
    if backend.comm.rank == backend.nranks - 1:
        d["dim_data"] = ({**d["dim_data"][0], "start": -1},)
    with pytest.raises(dapx.DAPError, match=f"rank {backend.nranks - 1}"):
        dapx.from_distarray(d, backend=backend)
    np.testing.assert_array_equal((a + 1).gather(), _data(8) + 1)  # still usable


def test_from_local_uneven_and_empty(backend):
    rank = backend.comm.rank

    def block_of(r):  # rank r holds r rows; rank 0 none
        return np.arange(r * 10, r * 10 + r, dtype=float).reshape(r, 1) * np.ones(3)

    block = block_of(rank)
    a = dapx.from_local(block, backend=backend)
    assert block.size == 0 or np.shares_memory(a.local(), block)
    expected = np.concatenate([block_of(r) for r in range(backend.nranks)])
    np.testing.assert_array_equal(a.gather(), expected)


def test_from_local_mismatch_raises_on_every_rank(backend):
    if backend.nranks == 1:
        pytest.skip("a mismatch needs two ranks")
    shape = (2, 3) if backend.comm.rank == 0 else (2, 4)
    with pytest.raises(ValueError, match="may differ only along axis 0"):
        dapx.from_local(np.zeros(shape), backend=backend)


def test_shape_error_is_consistent_and_recoverable(backend):
    a = dapx.asarray(_data(5), backend=backend)
    b = dapx.asarray(_data(6), backend=backend)
    with pytest.raises(ValueError):
        a + b
    np.testing.assert_array_equal((a + a).gather(), 2 * _data(5))


def test_reductions(backend):
    x = _data((7, 9))
    for dist in LAYOUTS:
        a = dapx.asarray(x, dist=dist, backend=backend)
        np.testing.assert_allclose(float(np.sum(a)), np.sum(x), rtol=1e-12)
        np.testing.assert_allclose(float(np.std(a)), np.std(x), rtol=1e-12)
        np.testing.assert_allclose(np.mean(a, axis=0).gather(), np.mean(x, axis=0), rtol=1e-12)
        np.testing.assert_allclose(np.max(a, axis=1).gather(), np.max(x, axis=1))
        assert int(np.argmax(a)) == int(np.argmax(x))
        np.testing.assert_allclose(np.cumsum(a, axis=0).gather(), np.cumsum(x, axis=0))


def test_indexing(backend):
    x = _data((8, 7))
    for dist in LAYOUTS:
        a = dapx.asarray(x, dist=dist, backend=backend)
        np.testing.assert_array_equal(a[1:7:2, ::-1].gather(), x[1:7:2, ::-1])
        np.testing.assert_array_equal(a[3].gather(), x[3])
        assert float(a[2, 3]) == x[2, 3]
        np.testing.assert_array_equal(a[x > 0].gather(), x[x > 0])
        a[:, 2] = 5.0
        y = x.copy()
        y[:, 2] = 5.0
        np.testing.assert_array_equal(a.gather(), y)


def test_manipulation(backend):
    x = _data((6, 5))
    a = dapx.asarray(x, backend=backend)
    np.testing.assert_array_equal(np.transpose(a).gather(), x.T)
    np.testing.assert_array_equal(a.reshape(5, 6).gather(), x.reshape(5, 6))
    np.testing.assert_array_equal(np.roll(a, 2, axis=0).gather(), np.roll(x, 2, axis=0))
    np.testing.assert_array_equal(np.diff(a, axis=0).gather(), np.diff(x, axis=0))
    np.testing.assert_array_equal(np.concatenate([a, a], axis=1).gather(), np.hstack([x, x]))


@pytest.mark.parametrize("sparse", [False, True])
def test_alltoallv_ring(backend, sparse):
    n, me = backend.nranks, backend.comm.rank
    right, left = (me + 1) % n, (me - 1) % n
    counts = np.zeros(n, np.intp)
    counts[right] += 3
    buffer = np.full(3, me, dtype=np.int64) * 10 + np.arange(3)
    recvcounts = np.zeros(n, np.intp)
    recvcounts[left] += 3
    got = backend.alltoallv({me: (buffer, counts)}, {me: recvcounts}, sparse=sparse)
    np.testing.assert_array_equal(got[me][left], left * 10 + np.arange(3))


@pytest.mark.parametrize("boundary", ["none", "reflect", "nearest", "periodic", 2.5], ids=str)
def test_halos(backend, boundary):
    from tests.test_halo import _check_update, _laplacian

    for shape, h in [((13,), 2), ((9, 11), 1), ((6, 7, 8), 1)]:
        for periodic in (False, True):
            a = dapx.empty(shape, halo=h, periodic=periodic, backend=backend)
            _check_update(a, _data(shape), [(h, h)] * len(shape), boundary)
    x = _data((12, 10))
    if boundary != "none":
        mode = {"reflect": "symmetric", "nearest": "edge", "periodic": "wrap"}.get(boundary)
        kw = {"mode": mode} if mode else {"mode": "constant", "constant_values": boundary}
        r = dapx.map_overlap(
            _laplacian, dapx.asarray(x, backend=backend), depth=1, boundary=boundary
        )
        np.testing.assert_array_equal(r.gather(), _laplacian(np.pad(x, 1, **kw))[1:-1, 1:-1])


@pytest.mark.parametrize(
    ("periodic", "boundary", "pad"),
    [
        (False, "reflect", {"mode": "symmetric"}),
        (False, 2.5, {"mode": "constant", "constant_values": 2.5}),
        (True, None, {"mode": "wrap"}),
    ],
    ids=["reflect", "constant", "periodic"],
)
def test_halo_exchange_runs_on_a_cartesian_communicator(backend, periodic, boundary, pad):
    """A 2-D grid's halo update, corners included, runs over its Cartesian communicator.

    The grid is 2 x n/2 on an even number of processes (2 x 2 on 4: every
    rank has a neighbour across a corner), n x 1 otherwise. Each rank's
    block, ghost cells included, must equal its part of ``numpy.pad`` of the
    whole array, found from the rank's coordinates on the Cartesian
    communicator (MPI's numbering, not dapx's).
    """
    n, me = backend.nranks, backend.comm.rank
    grid = (2, n // 2) if n % 2 == 0 else (n, 1)
    x = _data((9, 11))
    a = dapx.asarray(x, grid=grid, halo=1, periodic=periodic, backend=backend)
    assert a.distribution.grid_shape == grid
    block = a.local()
    block[0, :] = block[-1, :] = block[:, 0] = block[:, -1] = np.nan  # no stale ghost passes
    a.update_halos(boundary)
    if n > 1:  # one process exchanges nothing
        assert (grid, (periodic,) * 2) in backend._carts
    cart = backend.cart_comm(grid, (periodic,) * 2)
    assert cart.Get_rank() == me and tuple(cart.Get_topo()[0]) == grid
    coords = tuple(cart.Get_coords(me))
    assert coords == a.distribution.coords(me)
    # np.array_split's blocks, shifted by the one ghost cell numpy.pad adds in front.
    starts = [
        np.cumsum([0, *(len(c) for c in np.array_split(np.arange(size), p))])
        for size, p in zip(x.shape, grid)
    ]
    part = tuple(slice(s[c], s[c + 1] + 2) for s, c in zip(starts, coords))
    np.testing.assert_array_equal(block, np.pad(x, 1, **pad)[part], err_msg=f"rank {me}")


def test_halo_demo_equals_numpy(backend):
    from dapx.cli.demo import numpy_solution, solve

    expected = numpy_solution(21, 40)
    grids = [None] + ([(2, backend.nranks // 2)] if backend.nranks % 2 == 0 else [])
    for grid in grids:  # the default grid (row slabs), and 2 x n with corners
        u, _ = solve(21, 40, backend=backend, grid=grid)
        np.testing.assert_array_equal(u.interior.gather(), expected)


def test_object_arrays_raise_instead_of_sending_pointers(backend):
    """Object elements are pointers: sent as bytes they would crash another process."""
    x = np.array([f"s{i}" for i in range(9)], dtype=object)
    a = dapx.asarray(x, backend=backend)  # each rank keeps its own slice: nothing moves
    assert list(a.local()) == list(x[a.distribution.global_indices(backend.comm.rank)[0]])
    if backend.nranks == 1:  # nothing leaves the process
        assert list(a.redistribute("c").gather()) == list(x)
        return
    with pytest.raises(TypeError, match="cannot move arrays of dtype object"):
        a.redistribute("c")
    with pytest.raises(TypeError, match="cannot move arrays of dtype object"):
        dapx.asarray(x, halo=1, periodic=True, backend=backend).update_halos()
    np.testing.assert_array_equal(
        (dapx.arange(6.0, backend=backend) + 1).gather(), np.arange(1.0, 7.0)
    )
