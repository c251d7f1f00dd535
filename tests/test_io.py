"""Files in and out in parallel: zarr, HDF5 and netCDF, each rank reading and writing its block.

Every round trip is compared bit for bit with the NumPy data it started
from (and, for Datasets, with the file xarray itself writes from NumPy
data). An instrumented source counts what each ``__getitem__`` returns, to
prove that each rank reads exactly its own elements. The tests take
``backend`` (1 to 6 simulated ranks, ``dapx.mpi()`` under mpiexec, the dask
backend with DAPX_BACKEND=dask); files go under pytest's ``tmp_path`` (rank
0's, under MPI, so that every process writes the same file).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import dapx
from dapx.core.elision import ELISION_ENABLED
from dapx.interop.io import chunk_aligned, read_block
from dapx.interop.io.reading import dim_reads
from dapx.testing import layout

zarr = pytest.importorskip("zarr")
h5py = pytest.importorskip("h5py")
xr = pytest.importorskip("xarray")
pytest.importorskip("netCDF4")

LAYOUTS = ("b", "b-irregular", "c", "c2", "u")
SHAPES = [(13,), (7, 9), (5, 4, 6)]


@pytest.fixture
def shared(tmp_path, backend):
    """A directory every process of the backend sees as the same (rank 0's tmp_path)."""
    if backend.local_ranks and len(backend.local_ranks) < backend.nranks:
        return type(tmp_path)(backend.bcast(str(tmp_path), root=0))
    return tmp_path


def on_root(backend) -> bool:
    """Whether this process makes the files the test compares against (then `sync`)."""
    return not backend.local_ranks or 0 in backend.local_ranks


def sync(backend) -> None:
    if backend.local_ranks:
        backend.barrier()


def data(shape, dtype=np.float64, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 100
    return (
        x.astype(dtype)
        if np.dtype(dtype).kind != "i"
        else np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    )


class CountingSource:
    """A NumPy array that records the global flat indices every ``__getitem__`` returns."""

    def __init__(self, x: np.ndarray):
        self._x = x
        self.shape, self.dtype = x.shape, x.dtype
        self.reads: list[np.ndarray] = []

    def __getitem__(self, key):
        flat = np.arange(self._x.size).reshape(self._x.shape)
        self.reads.append(flat[key].ravel())
        return self._x[key].copy()


# -- reading --------------------------------------------------------------------------------------


def test_dim_reads_cover_exactly_the_indices():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        idx = rng.permutation(n)[: rng.integers(1, n + 1)]
        slices, reorder = dim_reads(idx)
        read = np.concatenate([np.arange(s.start, s.stop, s.step or 1) for s in slices])
        assert len(set(read.tolist())) == read.size == idx.size  # nothing else, nothing twice
        np.testing.assert_array_equal(read if reorder is None else read[reorder], idx)
        steps = [s.step or 1 for s in slices]
        assert all(st > 0 for st in steps)


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_from_array_reads_each_rank_its_own_elements(backend, kind, shape):
    if not backend.local_ranks:
        pytest.skip("the dask client holds no rank: the workers read (see the dask tests)")
    x = data(shape)
    source = CountingSource(x)
    a = dapx.from_array(source, backend=backend, **layout(kind, shape, backend.nranks))
    np.testing.assert_array_equal(a.gather(), x)
    flat = np.arange(x.size).reshape(shape)
    owned = {
        r: set(flat[np.ix_(*a.distribution.global_indices(r))].ravel().tolist())
        for r in backend.local_ranks
    }
    read = np.concatenate(source.reads) if source.reads else np.array([], int)
    # Every element this process's ranks own is read once, and nothing else.
    assert sorted(read.tolist()) == sorted(set().union(*owned.values()))
    for part in source.reads:  # each read serves one rank only
        assert any(set(part.tolist()) <= mine for mine in owned.values())
    for r in backend.local_ranks:
        np.testing.assert_array_equal(a.local(r), x[np.ix_(*a.distribution.global_indices(r))])


def test_from_array_with_a_halo_reads_only_the_interior(backend):
    if not backend.local_ranks:
        pytest.skip("the dask client holds no rank")
    x = data((12, 10))
    source = CountingSource(x)
    a = dapx.from_array(source, halo=1, backend=backend)
    b = dapx.asarray(x, halo=1, backend=backend)
    assert a.distribution == b.distribution
    for r in backend.local_ranks:
        np.testing.assert_array_equal(a.local_with_halo(r), b.local_with_halo(r))
    assert sum(p.size for p in source.reads) == sum(
        int(np.prod([i.size for i in a.distribution.owned_indices(r)])) for r in backend.local_ranks
    )
    a.update_halos()
    np.testing.assert_array_equal(a.gather(), x)


def test_from_array_on_the_workers(backend, shared):
    """h5py and netCDF4 variables are open files: the dask workers reopen them by name."""
    import netCDF4

    from dapx.interop.io.sources import FileSource, shippable

    x = data((7, 9))
    if on_root(backend):
        with h5py.File(shared / "s.h5", "w") as f:
            f["g/x"] = x
        with netCDF4.Dataset(shared / "s.nc", "w") as nc:
            nc.createDimension("y", 7), nc.createDimension("x", 9)
            nc.createGroup("g").createVariable("x", "f8", ("y", "x"))[:] = x
    sync(backend)
    kw = layout("c2", x.shape, backend.nranks)
    with h5py.File(shared / "s.h5", "r") as f:
        assert isinstance(shippable(f["g/x"]), FileSource)
        np.testing.assert_array_equal(dapx.from_array(f["g/x"], backend=backend, **kw).gather(), x)
    with netCDF4.Dataset(shared / "s.nc", "r") as nc:
        var = nc["g"]["x"]
        assert shippable(var).name == "/g/x"
        np.testing.assert_array_equal(dapx.from_array(var, backend=backend, **kw).gather(), x)


def test_read_block_of_a_scalar_and_of_empty_blocks():
    x = np.float32(2.5)
    assert read_block(np.asarray(x), (), np.float32) == x
    empty = read_block(np.ones((3, 4)), (np.array([], int), np.arange(4)), np.float64)
    assert empty.shape == (0, 4)


def test_from_array_takes_memmaps_and_casts(backend, shared):
    x = data((9, 4))
    path = shared / "x.dat"
    if on_root(backend):
        np.asarray(x).tofile(path)
    sync(backend)
    m = np.memmap(path, dtype=x.dtype, mode="r", shape=x.shape)
    a = dapx.from_array(m, np.float32, dist="c", backend=backend)
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a.gather(), x.astype(np.float32))


class ViewSource:
    """Returns a view of a fresh array per read (as xarray's lazily indexed arrays do), or of
    one array it keeps (as a NumPy source does)."""

    def __init__(self, x: np.ndarray, keep: bool):
        self._x, self.keep = x, keep
        self.shape, self.dtype = x.shape, x.dtype

    def __getitem__(self, key):
        part = self._x[key]
        return (part if self.keep else part.copy())[...]


@pytest.mark.skipif(not ELISION_ENABLED, reason="reference counts are not exact here")
@pytest.mark.parametrize("keep", [True, False], ids=["held", "fresh"])
def test_from_array_copies_a_view_only_when_someone_else_holds_its_buffer(backend, keep):
    if not backend.local_ranks:
        pytest.skip("the dask client holds no rank: the workers read (see the dask tests)")
    x = data((12, 5))
    a = dapx.from_array(ViewSource(x, keep), dist=("b", "n"), backend=backend)
    np.testing.assert_array_equal(a.gather(), x)
    for r in backend.local_ranks:
        block = a.local(r)
        assert not np.shares_memory(block, x)
        # A fresh read is adopted (no second copy of the block at the peak), a held one copied.
        assert (block.base is not None and block.base.nbytes == block.nbytes) != keep


def test_from_array_needs_shape_dtype_and_getitem():
    with pytest.raises(TypeError, match="has no shape, dtype"):
        dapx.from_array([1, 2, 3])


# -- zarr -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_zarr_round_trip(backend, shared, kind, shape):
    x = data(shape, np.float32)
    a = dapx.asarray(x, backend=backend, **layout(kind, shape, backend.nranks))
    a.to_zarr(shared / "a.zarr", attrs={"units": "K"})
    z = zarr.open_array(shared / "a.zarr", mode="r")
    assert z.dtype == x.dtype and dict(z.attrs) == {"units": "K"}
    np.testing.assert_array_equal(z[...], x)
    back = dapx.from_zarr(shared / "a.zarr", backend=backend, **layout(kind, shape, backend.nranks))
    assert back.distribution == a.distribution
    np.testing.assert_array_equal(back.gather(), x)


@pytest.mark.parametrize("kind", LAYOUTS)
def test_chunks_are_written_by_exactly_one_rank(kind):
    for nranks, shape in itertools.product((1, 2, 3, 4, 6), [(13,), (7, 9)]):
        a = dapx.zeros(shape, backend=dapx.simulated(nranks), **layout(kind, shape, nranks))
        for chunks in (None, (2,) * len(shape), (5,) * len(shape)):
            b, c = chunk_aligned(a, chunks)
            owner = np.full(shape, -1)
            for r in range(nranks):
                owner[np.ix_(*b.distribution.owned_indices(r))] = r
            grid = [range(0, n, k) for n, k in zip(shape, c)]
            for corner in itertools.product(*grid):
                box = tuple(slice(s, s + k) for s, k in zip(corner, c))
                assert len(np.unique(owner[box])) == 1, (kind, nranks, shape, chunks)
            if chunks is None and kind == "b" and all(n % nranks == 0 for n in shape):
                assert b is a  # regular blocks are their own chunks: nothing moves


def test_zarr_with_chunks_compression_and_a_halo(backend, shared):
    x = data((16, 12), np.float64)
    a = dapx.asarray(x, halo=2, backend=backend)
    a.update_halos(boundary=-1.0)
    a.to_zarr(shared / "h.zarr", chunks=(2, 5))
    z = zarr.open_array(shared / "h.zarr")
    assert z.chunks == (2, 5)
    np.testing.assert_array_equal(z[...], x)  # the halo is never written


def test_zarr_errors_name_what_is_wrong(backend, shared):
    with pytest.raises(FileNotFoundError, match="no zarr array"):
        dapx.from_zarr(shared / "missing.zarr", backend=backend)
    dapx.arange(3, backend=backend).to_zarr(shared / "g.zarr", "x")
    with pytest.raises(FileNotFoundError, match="component 'y'"):
        dapx.from_zarr(shared / "g.zarr", "y", backend=backend)
    a = dapx.arange(10.0, backend=backend)
    a.to_zarr(shared / "a.zarr")
    with pytest.raises(Exception, match=r"exist|contains"):
        a.to_zarr(shared / "a.zarr")
    a.to_zarr(shared / "a.zarr", overwrite=True)
    with pytest.raises(ValueError, match="shape"):
        dapx.from_zarr(
            shared / "a.zarr",
            dist=dapx.Distribution.create(11, nranks=backend.nranks),
            backend=backend,
        )


class FailingStore(zarr.storage.LocalStore):
    """A local store whose disk is full for the last chunk of a 1-d array."""

    async def set(self, key, value):
        if key.endswith("c/2"):
            raise OSError("disk full")
        return await super().set(key, value)


def test_a_failed_write_does_not_look_complete(backend, shared):
    if not backend.local_ranks:
        pytest.skip("the failing store class lives in the test module, not on the workers")
    a = dapx.arange(12.0, backend=backend)
    # Under MPI the rank that writes chunk 2 fails and every rank raises RankError.
    with pytest.raises((OSError, dapx.RankError), match="disk full"):
        a.to_zarr(FailingStore(shared / "f.zarr"), chunks=(4,))
    with pytest.raises(ValueError, match="not completely written"):
        dapx.from_zarr(shared / "f.zarr", backend=backend)
    b = dapx.asarray(np.ones((4, 3)), backend=backend)
    with pytest.raises((ValueError, dapx.RankError), match="already holds"):
        for _ in range(2):
            b.to_hdf5(shared / "f.h5", "x")


# -- HDF5 -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_hdf5_round_trip(backend, shared, kind, shape):
    x = data(shape, np.int32)
    a = dapx.asarray(x, backend=backend, **layout(kind, shape, backend.nranks))
    a.to_hdf5(shared / "a.h5", "group/x", mode="w", attrs={"units": "m"})
    a.to_hdf5(shared / "a.h5", "y")
    with h5py.File(shared / "a.h5") as f:
        assert f["group/x"].dtype == x.dtype and dict(f["group/x"].attrs) == {"units": "m"}
        np.testing.assert_array_equal(f["group/x"][...], x)
        np.testing.assert_array_equal(f["y"][...], x)
    back = dapx.from_hdf5(shared / "a.h5", "group/x", backend=backend, dist="c")
    np.testing.assert_array_equal(back.gather(), x)


def test_hdf5_with_a_halo_and_errors(backend, shared):
    x = data((10, 6))
    a = dapx.asarray(x, halo=1, backend=backend)
    a.update_halos(boundary=9.0)
    a.to_hdf5(shared / "h.h5", "x", mode="w")
    with h5py.File(shared / "h.h5") as f:
        np.testing.assert_array_equal(f["x"][...], x)
    with pytest.raises(Exception, match="already holds 'x'"):
        dapx.asarray(x, backend=backend).to_hdf5(shared / "h.h5", "x")
    with pytest.raises(KeyError, match="has no dataset 'z'"):
        dapx.from_hdf5(shared / "h.h5", "z", backend=backend)


# -- xarray Datasets ------------------------------------------------------------------------------


def climate() -> xr.Dataset:
    import pandas as pd

    rng = np.random.default_rng(1)
    t = (15 + 10 * rng.standard_normal((6, 5, 8))).astype(np.float32)
    t[2, 1, 3] = np.nan
    return xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), t, {"units": "degC", "long_name": "temperature"}),
            "precip": (("time", "lat", "lon"), rng.gamma(1.0, 2.0, (6, 5, 8))),
            "orog": (("lat", "lon"), rng.uniform(0, 3000, (5, 8))),
            "station": ("time", np.arange(6)),
        },
        coords={
            "time": pd.date_range("2001-01-01", periods=6, freq="D"),
            "lat": np.linspace(-60, 60, 5),
            "lon": np.arange(0.0, 360.0, 45.0),
        },
        attrs={"title": "dapx I/O test", "history": "made by tests/test_io.py"},
    )


def _distributed(ds, backend, kind):
    """`ds` distributed over lat and lon (lon only for the irregular and unstructured kinds)."""
    n = backend.nranks
    if kind in ("b-irregular", "u"):
        spec = layout(kind, ds.sizes["lon"], n, seed=n)["dist"][0]
        return ds.dap.distribute(lon=spec, backend=backend)
    kinds = {"b": "b", "c": "c", "c2": {"dist": "c", "block_size": 2}}
    return ds.dap.distribute(lat=kinds[kind], lon=kinds[kind], backend=backend)


DATASET_LAYOUTS = ["b", "b-irregular", "c", "c2", "u"]


@pytest.mark.parametrize("kind", DATASET_LAYOUTS)
def test_dataset_zarr_round_trip(backend, shared, kind):
    ds = climate()
    d = _distributed(ds, backend, kind)
    assert d.t2m.dap.is_distributed and not d.station.dap.is_distributed
    d.dap.to_zarr(shared / "c.zarr")
    back = xr.open_zarr(shared / "c.zarr").load()
    xr.testing.assert_identical(back, ds)
    assert back.t2m.dtype == np.float32
    opened = dapx.open_zarr(shared / "c.zarr", lat=1, lon="c", backend=backend)
    assert opened.t2m.dap.is_distributed
    xr.testing.assert_identical(opened.dap.gather(), ds)


def test_dataarray_zarr_and_netcdf(backend, shared):
    da = climate().t2m
    d = da.dap.distribute(lat="c", backend=backend)
    d.dap.to_zarr(shared / "t.zarr")
    xr.testing.assert_identical(xr.open_dataarray(shared / "t.zarr", engine="zarr").load(), da)
    d.dap.to_netcdf(shared / "t.nc")
    with xr.open_dataarray(shared / "t.nc") as back:
        xr.testing.assert_identical(back.load(), da)


@pytest.mark.parametrize("kind", DATASET_LAYOUTS)
def test_dataset_netcdf_round_trip_matches_xarray_file(backend, shared, kind):
    ds = climate()
    encoding = {"precip": {"dtype": "int16", "scale_factor": 0.01, "_FillValue": -999}}
    if on_root(backend):
        ds.to_netcdf(shared / "xarray.nc", encoding=encoding)
    _distributed(ds, backend, kind).dap.to_netcdf(shared / "dapx.nc", encoding=encoding)
    with (
        xr.open_dataset(shared / "dapx.nc") as ours,
        xr.open_dataset(shared / "xarray.nc") as theirs,
        xr.open_dataset(shared / "dapx.nc", decode_cf=False) as ours_raw,
        xr.open_dataset(shared / "xarray.nc", decode_cf=False) as theirs_raw,
    ):
        xr.testing.assert_identical(ours.load(), theirs.load())
        xr.testing.assert_identical(ours_raw.load(), theirs_raw.load())  # bit for bit on disk
        for name in ds.variables:
            enc = {k: v for k, v in theirs[name].encoding.items() if k != "source"}
            mine = {k: v for k, v in ours[name].encoding.items() if k != "source"}
            np.testing.assert_equal(mine, enc)  # NaN fill values compare equal here
    with xr.open_dataset(shared / "dapx.nc") as f:
        d = f.dap.distribute(lat=2 if backend.nranks % 2 == 0 else 1, lon="c", backend=backend)
        xr.testing.assert_identical(d.dap.gather(), ds.assign(precip=ours.precip))


def test_distribute_reads_lazy_and_dask_variables_per_rank(backend, shared):
    ds = climate()
    if on_root(backend):
        ds.to_netcdf(shared / "in.nc")
    sync(backend)
    with xr.open_dataset(shared / "in.nc") as lazy:
        assert not isinstance(lazy.t2m.variable._data, np.ndarray)
        d = lazy.dap.distribute(lat="c", backend=backend)
        assert d.t2m.dap.is_distributed
        xr.testing.assert_identical(d.dap.gather(), ds)
    pytest.importorskip("dask")
    with xr.open_dataset(shared / "in.nc", chunks={"time": 2}) as chunked:
        d = chunked.t2m.dap.distribute(lon="c", backend=backend)
        xr.testing.assert_identical(d.dap.gather(), ds.t2m)


def test_dataset_writes_refuse_what_they_cannot_do(backend, shared):
    ds = climate()
    with pytest.raises(ValueError, match="no variable of this Dataset is distributed"):
        ds.dap.to_zarr(shared / "n.zarr")
    d = _distributed(ds, backend, "b")
    d.dap.to_zarr(shared / "d.zarr")
    with pytest.raises(Exception, match=r"exist|contains"):
        d.dap.to_zarr(shared / "d.zarr")
    d.dap.to_zarr(shared / "d.zarr", mode="w")
    with pytest.raises(FileNotFoundError, match="no complete zarr store"):
        dapx.open_zarr(shared / "missing.zarr", backend=backend)


def test_progress_bar_on_request(capsys, tmp_path):
    pytest.importorskip("tqdm")
    a = dapx.arange(20.0, backend=dapx.simulated(4))
    a.to_zarr(tmp_path / "p.zarr", progress=True)
    dapx.from_zarr(tmp_path / "p.zarr", backend=dapx.simulated(4), progress=True)
    err = capsys.readouterr().err
    assert "dapx: writing" in err and "dapx: reading" in err


# -- the xarray chunk manager ---------------------------------------------------------------------


def _lon_blocks(nranks: int) -> tuple[int, ...]:
    """8 longitudes in one block per rank."""
    return tuple(8 // nranks + (1 if k < 8 % nranks else 0) for k in range(nranks))


@pytest.mark.filterwarnings("ignore:The specified chunks separate the stored chunks")
def test_chunk_manager_opens_files_distributed(backend, shared):
    ds = climate()
    if on_root(backend):
        ds.to_netcdf(shared / "c.nc")
        with warnings.catch_warnings():
            # Consolidated metadata lists the variables in one order for every process; a
            # plain zarr listing need not (ranks would then distribute them in different
            # orders). zarr warns that v3 has no consolidated metadata in its spec yet.
            warnings.filterwarnings("ignore", "Consolidated metadata", UserWarning)
            ds.to_zarr(shared / "c.zarr")
    sync(backend)
    chunks = {"lon": _lon_blocks(backend.nranks)}
    expected = (ds - ds.mean("time")).mean("lon")
    with dapx.use_backend(backend):
        opened = [
            xr.open_dataset(shared / "c.nc", chunked_array_type="dapx", chunks=chunks),
            xr.open_zarr(shared / "c.zarr", chunked_array_type="dapx", chunks=chunks),
            ds.chunk(chunks, chunked_array_type="dapx"),
        ]
        for d in opened:
            assert d.t2m.dap.grid == {"time": 1, "lat": 1, "lon": backend.nranks}
            if backend.nranks > 1:  # a variable that lon does not cut stays NumPy-backed
                assert isinstance(d.station.variable._data, np.ndarray)
            result = (d - d.mean("time")).mean("lon")  # xarray's own operations
            assert result.t2m.dap.is_distributed
            xr.testing.assert_allclose(result.dap.gather(), expected)
            d.close()


def test_chunk_manager_chunks_mean_block_sizes(backend):
    from dapx.interop.xarray.chunkmanager import DapxChunkManager, grid_of_chunks

    manager = DapxChunkManager()
    n = backend.nranks
    assert grid_of_chunks((3, -1), (3 * n, 7), n) == ((3,) * n, (7,))
    auto = grid_of_chunks(("auto", "auto"), (12, 10), n)
    assert np.prod([len(b) for b in auto]) == n
    x = data((3 * n, 7))
    with dapx.use_backend(backend):
        a = manager.from_array(x, (3, -1))
        assert manager.chunks(a) == ((3,) * n, (7,))
        np.testing.assert_array_equal(manager.compute(a)[0], x)
        if n > 1:
            with pytest.raises(ValueError, match=f"one block per rank and the backend has {n}"):
                manager.from_array(x, (3 * n + 1, 1))
        b = manager.rechunk(a, (-1, tuple(7 // n + (k < 7 % n) for k in range(n))))
        assert manager.chunks(b)[0] == (3 * n,)
        np.testing.assert_array_equal(b.gather(), x)


def test_parallel_hdf5_is_detected_not_required(backend):
    from dapx.interop.io import parallel_hdf5

    assert parallel_hdf5(backend) == (backend.name == "mpi" and bool(h5py.get_config().mpi))


def test_only_thread_safe_sources_are_read_concurrently(tmp_path):
    from dapx.interop.io.reading import concurrent_safe

    x = np.arange(12.0).reshape(3, 4)
    z = zarr.create_array(tmp_path / "c.zarr", shape=x.shape, dtype=x.dtype, chunks=(1, 4))
    z[...] = x
    assert concurrent_safe(z)
    with h5py.File(tmp_path / "c.h5", "w") as f:
        f["x"] = x
        assert not concurrent_safe(f["x"])
    xr.Dataset({"x": (("a", "b"), x)}).to_zarr(tmp_path / "d.zarr", consolidated=False)
    with xr.open_zarr(tmp_path / "d.zarr", chunks=None, consolidated=False) as ds:
        assert concurrent_safe(ds.x.variable)
        got = ds.dap.distribute(a=3, backend=dapx.simulated(3))  # three reads at once
        np.testing.assert_array_equal(got.x.dap.gather().values, x)
    assert not concurrent_safe(x)
