"""The dask backend: ranks as actors on dask.distributed workers, checked against NumPy.

The array test files also run whole on this backend (``DAPX_BACKEND=dask``,
see tests/test_dask_suite.py); this file covers what is particular to it:
handles on the client, blocks fetched from workers, failures, futures in
``__partitioned__``, and worker processes.
"""

from __future__ import annotations

import os
import pickle
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dapx
from dapx.core.elision import ELISION_ENABLED
from dapx.testing import assert_eq
from tests import _processes

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.skipif(
    dapx.testing.pytest_plugin.uses_mpi(), reason="the dask backend runs without mpiexec"
)


@pytest.fixture(scope="module")
def cluster():
    with (
        distributed.LocalCluster(n_workers=3, threads_per_worker=1, dashboard_address=":0") as c,
        distributed.Client(c) as client,
    ):
        yield client


@pytest.fixture(scope="module", params=[1, 3])
def dask(cluster, request):
    backend = dapx.dask_backend(cluster, nranks=request.param)
    yield backend
    backend.close()


def test_arrays_are_handles_whose_blocks_live_on_the_workers(dask):
    x = np.arange(30.0).reshape(6, 5)
    a = dapx.asarray(x, backend=dask)
    assert isinstance(a, dapx.DistributedArray) and dask.local_ranks == ()
    assert a.shape == (6, 5) and a.dtype == x.dtype and a.distribution.nranks == dask.nranks
    dist = a.distribution
    for r in range(dask.nranks):
        np.testing.assert_array_equal(a.local(r), x[np.ix_(*dist.global_indices(r))])
        assert a.distarray(r)["dim_data"] == dist.dim_data(r)
    assert_eq(a, x)
    assert "RemoteArray" in repr(a) and "DaskBackend" in a._repr_html_()
    with pytest.raises(ValueError, match="rank must be one of"):
        a.local()
    with pytest.raises(TypeError, match="holds none"):
        a.__distarray__()
    import numpy.lib.recfunctions as rf

    with pytest.raises(TypeError, match="no implementation found"):  # as on every backend
        rf.structured_to_unstructured(a)


def test_every_kind_of_operation(dask):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((7, 6)), rng.standard_normal((7, 6))
    a, b = dapx.asarray(x, backend=dask), dapx.asarray(y, dist=("c", "b"), backend=dask)
    assert_eq(a * b + 1.5, x * y + 1.5)  # elementwise, aligned across layouts
    assert_eq(np.sin(a), np.sin(x))
    assert np.isclose(float(np.sum(a)), x.sum())  # reductions
    assert_eq(np.mean(a, axis=0), x.mean(axis=0))
    assert_eq(np.std(b, axis=1), y.std(axis=1))
    assert int(np.argmax(a)) == int(np.argmax(x))
    assert_eq(np.cumsum(a, axis=1), np.cumsum(x, axis=1))  # scans
    assert_eq(a[2:, ::2], x[2:, ::2])  # slicing and fancy indexing
    assert_eq(a[[0, 5, 3]], x[[0, 5, 3]])
    assert_eq(a[a > 0], x[x > 0])
    assert_eq(a.T, x.T)  # manipulation
    assert_eq(a.reshape(6, 7), x.reshape(6, 7))
    assert_eq(np.concatenate([a, b]), np.concatenate([x, y]))
    assert_eq(np.sort(a, axis=0), np.sort(x, axis=0))
    assert_eq(a.redistribute("c"), x)  # redistribution
    assert_eq(a @ b.T, x @ y.T)  # linear algebra
    assert_eq(np.einsum("ij,ij->i", a, b), np.einsum("ij,ij->i", x, y))
    r = dapx.random.default_rng(3).random((5, 4), backend=dask)  # random numbers
    np.testing.assert_array_equal(
        r.gather(), dapx.random.default_rng(3).random((5, 4), backend=dapx.simulated(2)).gather()
    )


def test_arrays_no_handle_refers_to_are_released_on_the_ranks(dask, cluster):
    a = dapx.arange(100.0, backend=dask)

    def stored(dask_worker):
        return [len(actor._store) for actor in dask_worker.state.actors.values()]

    for _ in range(3):
        r = a * 2 + a  # a temporary and a result each time
    before = sum(sum(v) for v in cluster.run(stored).values())
    for _ in range(10):
        r = a * 2 + a
    assert_eq(r, np.arange(100.0) * 3)
    assert sum(sum(v) for v in cluster.run(stored).values()) <= before


def _worker_peaks(cluster, expression, *args):
    """Each worker's peak of traced memory while `expression` runs (the ranks allocate there)."""
    import tracemalloc

    cluster.run(tracemalloc.start)
    try:
        cluster.run(tracemalloc.reset_peak)
        result = expression(*args)
        peaks = cluster.run(lambda: tracemalloc.get_traced_memory()[1])
    finally:
        cluster.run(tracemalloc.stop)
    return result, max(peaks.values())


@pytest.mark.skipif(not ELISION_ENABLED, reason="no elision on this interpreter")
def test_a_temporary_s_blocks_are_reused_on_the_ranks(dask, cluster):
    """The client sees the temporary, each rank whether its block is private (core/elision.py)."""
    n = 1 << 21
    block = n * 8 // dask.nranks
    a = dapx.arange(float(n), backend=dask)
    result, peak = _worker_peaks(cluster, lambda x: x * 2 + 1, a)
    assert peak < 1.5 * block, (peak, block)
    assert_eq(result, np.arange(float(n)) * 2 + 1)
    named, peak_named = _worker_peaks(cluster, lambda x: (x * 2, x + 1), a)
    assert peak_named > 1.9 * block, (peak_named, block)  # two results: no temporary
    assert_eq(named[0], np.arange(float(n)) * 2)
    assert_eq(a, np.arange(float(n)))  # the named operand is never written into


def test_a_temporary_that_views_a_named_array_is_not_written_into(dask):
    x = np.arange(24.0).reshape(6, 4)
    a = dapx.asarray(x, backend=dask)
    assert_eq(a[:] + 1, x + 1)
    assert_eq(a.reshape(4, 6) * 2, x.reshape(4, 6) * 2)
    assert_eq(np.transpose(a) - 1, x.T - 1)
    c = dapx.asarray(x[::-1].copy(), backend=dask)
    assert_eq(a[1:] * 2 + c[1:], x[1:] * 2 + x[::-1][1:])
    assert_eq(a, x)
    assert_eq(c, x[::-1])


def test_in_place_operations_change_the_ranks_arrays(dask):
    x = np.arange(12.0).reshape(3, 4)
    a = dapx.asarray(x, backend=dask)
    view = a
    a += 1
    assert view is a
    a[1] = -1.0
    x = x + 1
    x[1] = -1.0
    assert_eq(a, x)
    out = dapx.zeros((3, 4), backend=dask)
    np.multiply(a, 2, out=out)
    assert_eq(out, 2 * x)


@pytest.mark.parametrize("boundary", ["none", "reflect", "periodic", 2.0])
def test_halos_and_map_overlap(dask, boundary):
    from tests.test_halo import NP_MODE

    x = np.random.default_rng(1).standard_normal((9, 8))
    u = dapx.asarray(x, halo=1, backend=dask)
    u.update_halos(boundary=boundary)
    kw = (
        {"mode": NP_MODE[boundary]}
        if NP_MODE.get(boundary)  # "none" leaves the zeros the halo starts with
        else {"mode": "constant", "constant_values": 0.0 if boundary == "none" else boundary}
    )
    padded = np.pad(x, 1, **kw)
    dist = u.distribution
    for r in range(dask.nranks):
        rows, cols = dist.global_indices(r)
        got = u.local_with_halo(r)
        inner = (
            (slice(None), slice(None))
            if boundary != "none"
            else (
                slice(1 if rows[0] < 0 else 0, None if rows[-1] < 9 else -1),
                slice(1 if cols[0] < 0 else 0, None if cols[-1] < 8 else -1),
            )
        )
        np.testing.assert_array_equal(got[inner], padded[np.ix_(rows + 1, cols + 1)][inner])

    def laplace(p):
        q = np.zeros_like(p)
        q[1:-1, 1:-1] = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * p[1:-1, 1:-1]
        return q

    if boundary != "none":
        r = dapx.map_overlap(laplace, dapx.asarray(x, backend=dask), depth=1, boundary=boundary)
        assert_eq(r, laplace(padded)[1:-1, 1:-1])


def test_jacobi_with_map_overlap_equals_numpy(dask):
    from dapx.cli.demo import jacobi_kernel

    def step(p):
        q = p.copy()
        jacobi_kernel(p, q)
        return q

    x = np.random.default_rng(2).random((12, 10))
    u = dapx.asarray(x, halo=1, backend=dask)
    p = np.pad(x, 1, constant_values=1.0)
    q = p.copy()
    for _ in range(6):
        u = dapx.map_overlap(step, u, depth=1, boundary=1.0, trim=False)
        jacobi_kernel(p, q)
        p, q = q, p
    np.testing.assert_array_equal(u.interior.gather(), p[1:-1, 1:-1])


def test_the_demo_solver_refuses_a_client_without_ranks(dask):
    from dapx.cli.demo import solve

    with pytest.raises(ValueError, match="holds none"):
        solve(8, 2, backend=dask)


def test_a_failure_on_one_rank_reaches_every_rank(dask):
    a = dapx.arange(12.0, backend=dask)
    first_of_rank_1 = float(a.distribution.maps[0].bounds[1]) - 1  # with its ghost cell

    def fails_on_rank_1(block):
        if block.size and block[0] == first_of_rank_1:
            raise ZeroDivisionError("rank 1's block is bad")
        return block

    def captures_the_array(block):
        return block + a.shape[0]

    with pytest.raises(TypeError, match="cannot send"):
        dapx.map_overlap(captures_the_array, a, depth=1, boundary=0.0)

    if dask.nranks > 1:
        with pytest.raises(dapx.RankError, match="rank 1 failed: ZeroDivisionError"):
            dapx.map_overlap(fails_on_rank_1, a, depth=1, boundary=0.0)
    with pytest.raises(ValueError, match="broadcast"):  # fails alike everywhere: as it is
        a + np.ones(5)
    assert_eq(a + 1, np.arange(12.0) + 1)  # the backend is still usable


def test_an_error_that_cannot_travel_to_the_client_is_still_reported(dask):
    def fails_with_an_error_that_does_not_pickle(block):
        class Unsendable(Exception):
            def __reduce__(self):
                raise TypeError("this error does not pickle")

        raise Unsendable("bad block")

    a = dapx.arange(12.0, backend=dask)
    unsent = r"Unsendable: bad block \(the error itself could not be sent to the client"
    with pytest.raises(RuntimeError, match=unsent):
        dapx.map_overlap(fails_with_an_error_that_does_not_pickle, a, depth=1, boundary=0.0)
    assert_eq(a + 1, np.arange(12.0) + 1)  # the backend is still usable


def test_a_step_the_client_stopped_waiting_for_does_not_answer_the_next(dask, monkeypatch):
    from dapx.backends import dask as dask_module

    a = dapx.arange(12.0, backend=dask)

    def interrupted(self, step):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(dask_module.DaskBackend, "_outcomes", interrupted)
        with pytest.raises(KeyboardInterrupt):
            a + 1  # sent to the ranks, its outcomes never read
    assert_eq(a * 2, np.arange(12.0) * 2)
    assert_eq(a - 1, np.arange(12.0) - 1)


def test_a_step_longer_than_the_poll_interval_succeeds(dask):
    """The client awaits a step's outcomes a short wait at a time (`_POLL`): ranks still
    running after a wait are waited for again, not failed."""
    from dapx.backends import dask as dask_module

    def slow_double(block):
        import time

        time.sleep(0.5)
        return 2 * block

    assert dask_module._POLL < 0.5
    x = np.arange(20.0).reshape(5, 4)
    r = dapx.map_overlap(slow_double, dapx.asarray(x, backend=dask), depth=1, boundary=0.0)
    assert_eq(r, 2 * x)


def test_partitioned_carries_futures_and_worker_addresses(dask, cluster):
    x = np.arange(24.0).reshape(6, 4)
    a = dapx.asarray(x, backend=dask)
    p = a.__partitioned__
    assert "locals" not in p and p["shape"] == (6, 4)
    assert p["partition_tiling"] == a.distribution.grid_shape
    for pos, part in p["partitions"].items():
        assert isinstance(part["data"], distributed.Future)
        assert part["location"] == [dask.workers[a.distribution.grid.rank(pos)]]
        start, shape = part["start"], part["shape"]
        want = x[tuple(slice(s, s + n) for s, n in zip(start, shape))]
        np.testing.assert_array_equal(p["get"](part["data"]), want)
    both = p["get"]([part["data"] for part in p["partitions"].values()])
    assert len(both) == len(p["partitions"])
    pickle.dumps(p["get"])
    assert_eq(dapx.from_partitioned(p, backend=dapx.simulated(dask.nranks)), x)
    assert np.array_equal(a.to_dask().compute(), x)


def test_worker_processes_and_a_cluster_of_its_own():
    """The default: a LocalCluster with one worker process per core, closed on exit."""
    script = textwrap.dedent(
        """
        import numpy as np, dapx
        with dapx.dask_backend() as b:
            x = np.arange(40.0).reshape(8, 5)
            a = dapx.asarray(x, halo=1, backend=b)
            a.update_halos(boundary="periodic")
            r = dapx.map_overlap(lambda p: p * 2, a, depth=1)
            assert np.array_equal(r.gather(), 2 * x), r.gather()
            assert float(np.sum(a)) == x.sum()
            print("ok", b.nranks, len(set(b.workers)))
        """
    )
    result = _processes.run([sys.executable, "-c", script], timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ok")


def test_a_scalar_of_the_last_step_converts_without_another_step(dask, monkeypatch):
    """``float(np.sum(a))`` is one step: the step that makes a 0-d array sends its value."""
    x = np.arange(30.0).reshape(6, 5)
    a = dapx.asarray(x, backend=dask)
    i = dapx.asarray(np.arange(12).reshape(3, 4), backend=dask)
    steps = []
    run = type(dask)._outcomes
    monkeypatch.setattr(dask, "_outcomes", lambda *args: steps.append(1) or run(dask, *args))

    def stepped(fn):
        steps.clear()
        value = fn()
        return value, len(steps)

    s, n = stepped(lambda: np.sum(a))
    assert n == 1
    assert stepped(lambda: float(s)) == (x.sum(), 0)
    assert stepped(lambda: (int(s), bool(s), complex(s))) == ((435, True, 435 + 0j), 0)
    k = np.max(i)
    assert stepped(lambda: int(k)) == (11, 0)
    s2 = np.sum(a, axis=0)  # not 0-d: converting it is a step (that raises)
    with pytest.raises(TypeError, match="only 0-d"):
        float(s2)
    # Another step may change any array: the value is fetched again.
    s = np.sum(a)
    s[()] = -1.0
    assert stepped(lambda: float(s)) == (-1.0, 1)
    s += 2.0  # in place on the ranks
    assert stepped(lambda: float(s)) == (1.0, 1)
    t = np.sum(a)
    a[0, 0] = 100.0  # t is a result, not a view: still 435 on the ranks
    assert stepped(lambda: float(t)) == (435.0, 1)
    assert float(np.sum(a)) == x.sum() + 100.0


def test_worker_environ_passes_malloc_settings_and_one_arena(monkeypatch):
    from dapx.backends.dask import worker_environ

    monkeypatch.setenv("MALLOC_MMAP_MAX_", "0")
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    assert worker_environ() == {"MALLOC_MMAP_MAX_": "0", "MALLOC_ARENA_MAX": "1"}

    # dapx.dask_backend() starts its workers with it (dask's own settings kept).
    import dask

    seen = {}

    class Started(Exception):
        pass

    def local_cluster(**kwargs):
        seen.update(dask.config.get("distributed.nanny.pre-spawn-environ"))
        raise Started

    monkeypatch.setattr(distributed, "LocalCluster", local_cluster)
    with pytest.raises(Started):
        dapx.dask_backend()
    assert seen["MALLOC_ARENA_MAX"] == "1" and seen["MALLOC_MMAP_MAX_"] == "0"
    assert (
        seen["OMP_NUM_THREADS"]
        == dask.config.get("distributed.nanny.pre-spawn-environ")["OMP_NUM_THREADS"]
    )


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.confstr("CS_GNU_LIBC_VERSION") is None,
    reason="glibc's malloc arenas and RUSAGE_THREAD",
)
def test_large_operations_reuse_the_memory_of_freed_results(monkeypatch):
    """Under `worker_environ` (MALLOC_MMAP_MAX_=0 as for MPI), a rank's step thread gets
    the memory of freed blocks back: ``a*b+c`` on 72 MB blocks, again and again, makes
    no page fault there (a fresh mmap per result would make hundreds per call)."""
    import dask

    from dapx.backends.dask import worker_environ

    for name, value in [("MALLOC_MMAP_MAX_", "0"), ("MALLOC_TRIM_THRESHOLD_", str(2**36))]:
        monkeypatch.setenv(name, value)
    # The nanny writes these into this process's environment too: restored at teardown.
    monkeypatch.setenv("MALLOC_ARENA_MAX", os.environ.get("MALLOC_ARENA_MAX", "1"))
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    environ = {**dask.config.get("distributed.nanny.pre-spawn-environ"), **worker_environ()}

    def step_thread_page_faults() -> int:  # shipped by value: this module stays here
        import resource

        return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt

    n = 2 * 9 * 10**6  # two blocks of 72 MB: above the 64 MB heaps of a thread's own arena
    with (
        dask.config.set({"distributed.nanny.pre-spawn-environ": environ}),
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as c,
        distributed.Client(c) as client,
        dapx.dask_backend(client) as backend,
    ):
        a = dapx.arange(float(n), backend=backend)
        b, c = a * 0.5, a + 1.0
        for _ in range(2):  # the heap grows to its working size
            r = a * b + c
        before = backend.call(step_thread_page_faults)
        for _ in range(3):
            r = a * b + c
        faults = backend.call(step_thread_page_faults) - before
        assert float(r[n - 1]) == (n - 1) * (n - 1) * 0.5 + n
    assert faults < 50, f"{faults} page faults in 3 calls of a*b+c on 72 MB blocks"


#: What the array test files run on the dask backend: tests that check their results through
#: the public API (gathered results compared with NumPy), a few of each kind of operation.
#: Tests that inspect a process's own blocks or call collectives themselves are SPMD tests.
DASK_SUBSET = [
    "test_redistribute_between_every_pair_of_layouts",
    "test_mixed_layouts_align_to_the_first_distributed_operand",
    "test_ufunc_keywords",
    "test_asarray",
    "test_reductions_match_numpy and (b-1 or mixed-2 or us-3)",
    "test_statistics_match_numpy and (ib-2 or c-1)",
    "test_nan_functions_match_numpy",
    "test_scans_match_numpy",
    "test_ufunc_reduce_match_numpy",
    "test_ufunc_outer",
    "test_where_and_initial and (b or us)",
    "test_out",
    "test_arg_ties_and_nans_pick_the_first_global_index",
    "test_transpose_family",
    "test_reshape",
    "test_concatenate",
    "test_pad_2d",
    "test_roll",
    "test_diff",
    "test_where_clip_round",
    "test_nonzero_family",
    "test_isclose_allclose_array_equal",
    "test_sort_1d",
    "test_sort_nd",
    "test_searchsorted",
    "test_einsum",
    "test_random_matches_the_stream_on_every_layout",
    "test_every_method_is_layout_independent",
    "test_map_overlap_matches_the_numpy_stencil",
    "test_map_overlap_matches_dask",
    "test_matmul_of_two_distributed_matrices and float64",
    "test_tensordot",
    "test_inner_outer_vdot_dot",
    "test_zarr_round_trip",
    "test_hdf5_round_trip",
    "test_dataset_netcdf_round_trip_matches_xarray_file",
    "test_dataset_zarr_round_trip",
    "test_distribute_reads_lazy_and_dask_variables_per_rank",
    "test_from_array_on_the_workers",
]
ARRAY_FILES = [
    "array",
    "creation",
    "reductions",
    "indexing",
    "manipulation",
    "random",
    "halo",
    "linalg",
    "io",
]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_array_suite_subset_on_the_dask_backend():
    """The array tests with ``dapx_backend`` = a dask backend of 3 ranks (worker processes).

    DASK_SUBSET's tests, each on a third of its cases (``--test-sample``, tests/conftest.py): every
    kind of operation reaches the ranks, as under mpiexec; all of its cases run in-process.
    """
    root = Path(__file__).resolve().parent.parent
    select = " or ".join(f"({k})" for k in DASK_SUBSET)
    env = {**os.environ, "DAPX_BACKEND": "dask", "DAPX_RANKS": "3"}
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "timeout=120",
        *(f"tests/test_{name}.py" for name in ARRAY_FILES),
        "-k",
        select,
        "--test-sample",
        "0/3",
    ]
    result = _processes.run(args, timeout=800, env=env, cwd=root)  # a timeout shows the output
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    passed = int(re.findall(r"(\d+) passed", result.stdout)[-1])
    assert passed >= 250, result.stdout[-2000:]


def test_a_lost_worker_raises_rank_error_naming_it():
    import signal
    import threading
    import time

    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as c,
        distributed.Client(c) as client,
    ):
        backend = dapx.dask_backend(client)
        a = dapx.arange(10.0, backend=backend)

        def sleep_on_rank_1_then_exchange(a):
            import time

            import dapx

            if dapx.get_backend().local_ranks == (1,):
                time.sleep(60)
            return a.redistribute("c")  # the other rank waits here for rank 1's pieces

        victim = backend.workers[1]
        pid = client.run(os.getpid)[victim]
        threading.Timer(2.0, os.kill, (pid, signal.SIGKILL)).start()
        start = time.monotonic()
        with pytest.raises(dapx.RankError, match=rf"rank 1 failed: its dask worker {victim}"):
            backend.call(sleep_on_rank_1_then_exchange, (a,))
        assert time.monotonic() - start < 20
        with pytest.raises(RuntimeError, match="lost a rank"):
            a + 1
