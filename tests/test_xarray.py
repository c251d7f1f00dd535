"""xarray on DistributedArrays, and the ``.dap`` accessor, checked against NumPy-backed xarray.

Every operation runs on a NumPy-backed DataArray or Dataset (the oracle) and
on the same object distributed with ``.dap.distribute`` in several layouts;
results must stay distributed and, once gathered, equal the oracle
(``xr.testing.assert_allclose``). While an operation runs, any gather
fails the test: the gather warning threshold is 0 with `dapx.GatherWarning`
as an error (hidden ``np.asarray``), and `dapx.core.redistribution.gather` itself
(behind every explicit gather) is replaced by a function that raises.

The tests take ``backend`` (1 to 6 simulated ranks, or ``dapx.mpi()``
under mpiexec), so they run unchanged with one rank per process.
"""

from __future__ import annotations

import contextlib
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import dapx
from dapx.testing import layout
from tests import _processes

xr = pytest.importorskip("xarray")

LAYOUTS = ("b", "c2", "u")


# -- data and helpers ------------------------------------------------------------------------------


def climate(seed: int = 0) -> xr.DataArray:
    """A small (time, lat, lon) field with coordinates, attrs, a NaN and non-dimension coords."""
    rng = np.random.default_rng(seed)
    values = 15 + 10 * rng.standard_normal((8, 6, 10))
    values[3, 2, 4] = np.nan
    time = pd.date_range("2000-01-01", periods=8, freq="D")
    return xr.DataArray(
        values,
        dims=("time", "lat", "lon"),
        coords={
            "time": time,
            "lat": np.array([-60.0, -35.0, -10.0, 10.0, 40.0, 70.0]),  # not evenly spaced
            "lon": np.arange(0.0, 360.0, 36.0),
            "season": ("time", np.array(["DJF", "DJF", "MAM", "MAM", "MAM", "JJA", "JJA", "SON"])),
            "band": ("lon", np.arange(10) % 3),
        },
        attrs={"units": "degC", "long_name": "air temperature"},
        name="t2m",
    )


def dataset(seed: int = 0) -> xr.Dataset:
    t = climate(seed)
    rng = np.random.default_rng(seed + 1)
    return xr.Dataset(
        {
            "t2m": t,
            "precip": (t.dims, rng.gamma(2.0, 1.5, t.shape), {"units": "mm"}),
            "orography": (("lat", "lon"), rng.uniform(0, 3000, t.shape[1:])),
            "index": ("time", np.arange(8)),
        },
        attrs={"title": "toy climate"},
    )


def distribute(obj, kind: str, backend):
    """`obj` (DataArray) laid out by a `dapx.testing.layout` kind over all ranks."""
    kw = layout(kind, obj.shape, backend.nranks, seed=3)
    return obj.copy(data=dapx.asarray(obj.values, backend=backend, **kw))


def gathered(obj):
    return obj.dap.gather()


def assert_distributed(result) -> None:
    if isinstance(result, xr.Dataset):
        assert result.dap.is_distributed
        return
    assert isinstance(result.data, dapx.DistributedArray), type(result.data)


@contextlib.contextmanager
def no_gather(monkeypatch):
    """Fail on any gather: hidden conversions (GatherWarning at threshold 0) and explicit ones."""

    def refuse(x):
        raise AssertionError(f"an operation gathered a {x.shape} array")

    with monkeypatch.context() as m, warnings.catch_warnings():
        warnings.simplefilter("error", dapx.GatherWarning)
        m.setattr(dapx.config, "gather_warning_threshold", 0)
        m.setattr(dapx.core.redistribution, "gather", refuse)
        yield


# -- the table of operations -----------------------------------------------------------------------

WEIGHTS = xr.DataArray(
    np.cos(np.deg2rad([-60.0, -35.0, -10.0, 10.0, 40.0, 70.0])),
    dims="lat",
    coords={"lat": [-60.0, -35.0, -10.0, 10.0, 40.0, 70.0]},
)
LON_SUBSET = xr.DataArray(np.arange(7.0), dims="lon", coords={"lon": np.arange(72.0, 288.1, 36.0)})

OPERATIONS = {
    # arithmetic and ufuncs
    "add": lambda v: v + 1,
    "square": lambda v: v * v,
    "ufunc": lambda v: np.exp(v / 10),
    "anomaly": lambda v: v - v.mean("time"),
    "abs_round": lambda v: abs(v).round(2),
    # reductions over one or several named dims
    "mean": lambda v: v.mean("time"),
    "mean_all": lambda v: v.mean(),
    "mean_noskip": lambda v: v.mean("lon", skipna=False),
    "sum_two": lambda v: v.sum(["lat", "lon"]),
    "sum_min_count": lambda v: v.sum("time", min_count=8),
    "std": lambda v: v.std("time"),
    "var_ddof": lambda v: v.var(["time", "lat"], ddof=1),
    "min": lambda v: v.min("lat"),
    "max": lambda v: v.max("lon"),
    "argmin": lambda v: v.argmin("time"),
    "argmax": lambda v: v.argmax("lon"),
    "argmin_two": lambda v: v.argmin(["lat", "lon"])["lon"],
    "median": lambda v: v.median("time"),
    "median_two": lambda v: v.median(["lat", "lon"]),
    "quantile": lambda v: v.quantile(0.25, dim="time"),
    "quantiles_two": lambda v: v.quantile([0.1, 0.9], dim=["lat", "lon"]),
    "cumsum": lambda v: v.cumsum("time"),
    "cumsum_two": lambda v: v.cumsum(["lat", "lon"]),
    "count": lambda v: v.count("lat"),
    # selection
    "isel_slice": lambda v: v.isel(lon=slice(2, 8), time=slice(None, None, -2)),
    "isel_int": lambda v: v.isel(lat=3),
    "isel_array": lambda v: v.isel(lon=[7, 0, 3], time=[1, 5]),
    "isel_vectorized": lambda v: v.isel(
        lat=xr.DataArray([0, 2, 5], dims="p"), lon=xr.DataArray([9, 1, 4], dims="p")
    ),
    "sel_slice": lambda v: v.sel(lat=slice(-40, 50), time=slice("2000-01-03", "2000-01-06")),
    "sel_label": lambda v: v.sel(lon=144.0),
    "sel_array": lambda v: v.sel(lon=[36.0, 252.0], time=["2000-01-02", "2000-01-08"]),
    "sel_nearest": lambda v: v.sel(lat=[0.0, 33.0], method="nearest"),
    "sel_bool": lambda v: v.sel(lon=v.lon > 100),
    "where": lambda v: v.where(v > 15),
    "where_other": lambda v: v.where(v > 15, -1.0),
    "xr_where": lambda v: xr.where(v > 15, v, 0.0),
    "fillna": lambda v: v.fillna(0.0),
    "astype": lambda v: v.astype(np.float32),
    "astype_int": lambda v: v.fillna(0).astype(np.int64),
    "transpose": lambda v: v.transpose("lon", "time", "lat"),
    # broadcasting and alignment with NumPy-backed arrays
    "broadcast": lambda v: xr.broadcast(v.isel(time=0), xr.DataArray(np.ones(3), dims="z"))[0],
    "broadcast_like": lambda v: v.isel(lat=0).broadcast_like(v),
    "expand_dims": lambda v: v.expand_dims(member=2),
    "align_numpy": lambda v: v * WEIGHTS,
    "align_inner": lambda v: v + LON_SUBSET,
    # joining and moving
    "concat": lambda v: xr.concat([v, v.isel(time=slice(0, 3))], dim="time"),
    "concat_new_dim": lambda v: xr.concat([v, v + 1], dim="run"),
    "shift": lambda v: v.shift(time=2),
    "shift_back": lambda v: v.shift(lon=-3, fill_value=0.0),
    "roll": lambda v: v.roll(lon=4),
    "roll_coords": lambda v: v.roll(time=-1, roll_coords=True),
    "diff": lambda v: v.diff("time"),
    "diff_two": lambda v: v.diff("lon", n=2),
    # neighbours
    "differentiate": lambda v: v.differentiate("lat"),
    "differentiate_time": lambda v: v.differentiate("time", datetime_unit="h"),
    "differentiate_order2": lambda v: v.differentiate("lon", edge_order=2),
    "rolling": lambda v: v.rolling(time=3).mean(),
    "rolling_center": lambda v: v.rolling(lon=3, center=True).mean(),
    "rolling_two": lambda v: v.rolling(lat=2, lon=3).mean(),
    "rolling_sum_min_periods": lambda v: v.rolling(time=4, min_periods=1).sum(),
    "coarsen": lambda v: v.coarsen(lon=2).mean(),
    "coarsen_two": lambda v: v.drop_vars("season").coarsen(time=2, lat=3).mean(),
    # groups over coordinates that are not distributed
    "groupby": lambda v: v.groupby("season").mean(),
    "groupby_lon": lambda v: v.groupby("band").sum(),
    # contractions
    "dot_self": lambda v: v.dot(v, dim="lon"),
    "dot_numpy": lambda v: v.dot(WEIGHTS),
    "weighted": lambda v: v.fillna(0).weighted(WEIGHTS).mean(["lat", "lon"]),
}


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_operation_matches_numpy_backed_xarray(backend, name, monkeypatch):
    func = OPERATIONS[name]
    v = climate()
    expected = func(v)
    for kind in LAYOUTS:
        d = distribute(v, kind, backend)
        with no_gather(monkeypatch):
            result = func(d)
        assert_distributed(result)
        xr.testing.assert_allclose(gathered(result), expected)
        assert result.dims == expected.dims


DTYPE_OPERATIONS = {
    "add": lambda v: v + 1,
    "sum": lambda v: v.sum(["x", "y"]),
    "max": lambda v: v.max("y"),
    "rolling": lambda v: v.rolling(x=2).sum(),
    "shift": lambda v: v.shift(y=1, fill_value=0),  # a NaN fill makes bool object: see below
    "where": lambda v: v.where(v.x > 1),
    "cumsum": lambda v: v.cumsum("x"),
    "differentiate": lambda v: v.differentiate("y"),
    "groupby": lambda v: v.groupby("g").mean(),
    "dot": lambda v: v.dot(v),
}


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.bool_, np.complex128])
def test_operations_keep_numpy_dtypes(backend, dtype, monkeypatch):
    rng = np.random.default_rng(5)
    values = rng.standard_normal((5, 7)) * 10
    if dtype is np.complex128:
        values = values + 1j * rng.standard_normal((5, 7))
    v = xr.DataArray(
        values.astype(dtype),
        dims=("x", "y"),
        coords={"y": np.arange(7.0) ** 1.5, "g": ("x", [0, 1, 0, 1, 1])},
    )
    d = v.dap.distribute(backend=backend)
    for name, func in DTYPE_OPERATIONS.items():
        if dtype is np.bool_ and name == "differentiate":
            with pytest.raises(TypeError, match="boolean subtract"):
                func(d)
            continue
        expected = func(v)
        with no_gather(monkeypatch):
            result = func(d)
        assert result.dtype == expected.dtype, name
        xr.testing.assert_allclose(gathered(result), expected)


def test_object_dtype_from_a_nan_fill(backend):
    """A NaN shift makes bool data object; the shift is local, moving objects is not.

    Under MPI an object array cannot leave its process (its elements are
    pointers): redistributing one raises instead of crashing.
    """
    v = xr.DataArray(np.arange(35).reshape(5, 7) % 3 == 0, dims=("x", "y"))
    d = v.dap.distribute(backend=backend)
    for dim in ("x", "y"):
        expected = v.shift({dim: -2})
        assert expected.dtype == object
        result = d.shift({dim: -2})
        assert_distributed(result)
        assert result.dtype == object and result.dap.gather().identical(expected)

    def move():
        return d.shift(y=1).dap.redistribute(x=1, y=backend.nranks)

    if backend.name == "mpi" and backend.nranks > 1:
        with pytest.raises(TypeError, match="cannot move arrays of dtype object"):
            move()
    else:
        assert move().dap.gather().identical(v.shift(y=1))


def test_scalars_empty_dimensions_and_empty_blocks(backend, monkeypatch):
    s = xr.DataArray(3.0, attrs={"units": "K"})
    d = s.dap.distribute(backend=backend)
    assert d.dap.grid == {} and float(d.data) == 3.0
    xr.testing.assert_identical(d.dap.gather(), s)
    e = xr.DataArray(np.zeros((0, 4)), dims=("x", "y"))
    d = e.dap.distribute(backend=backend)
    xr.testing.assert_identical(d.sum("x").dap.gather(), e.sum("x"))
    t = xr.DataArray(np.arange(4.0) ** 2, dims="x", coords={"x": np.arange(4)})
    d = t.dap.distribute(x=backend.nranks, backend=backend)  # blocks of 0 or 1 element
    for func in (
        lambda v: v.rolling(x=3).mean(),
        lambda v: v.rolling(x=4, center=True).mean(),
        lambda v: v.differentiate("x"),
        lambda v: v.diff("x"),
        lambda v: v.coarsen(x=2).mean(),
    ):
        with no_gather(monkeypatch):
            result = func(d)
        xr.testing.assert_allclose(gathered(result), func(t))
    for r in backend.local_ranks:
        assert d.dap.local(r).size == d.data.local(r).size


DATASET_OPERATIONS = {
    "mean": lambda ds: ds.mean("time"),
    "anomaly": lambda ds: ds - ds.mean("time"),
    "zonal_mean": lambda ds: ds.mean("lon"),
    "isel": lambda ds: ds.isel(lon=slice(2, 8), lat=[0, 4]),
    "rolling": lambda ds: ds.rolling(time=3, center=True).mean(),
    "groupby": lambda ds: ds.groupby("season").mean(),
    "concat": lambda ds: xr.concat([ds, ds.isel(time=slice(0, 2))], "time", data_vars="minimal"),
    "differentiate": lambda ds: ds.differentiate("lon"),
    "where": lambda ds: ds.where(ds.t2m > 15),
    "quantile": lambda ds: ds.quantile(0.5, dim="time"),
}


@pytest.mark.parametrize("name", list(DATASET_OPERATIONS))
def test_dataset_operation_matches_numpy_backed_xarray(backend, name, monkeypatch):
    func = DATASET_OPERATIONS[name]
    ds = dataset()
    expected = func(ds)
    for grid in ({"lat": backend.nranks}, {"lon": backend.nranks}):
        d = ds.dap.distribute(grid, backend=backend, dist={"lon": "c"})
        with no_gather(monkeypatch):
            result = func(d)
        assert_distributed(result)
        xr.testing.assert_allclose(gathered(result), expected)


ERRORS = [
    # (id, operation on the distributed DataArray v, exception, message pattern)
    ("implicit conversion", lambda v: v.values, dapx.GatherWarning, "gathers the whole"),
    (
        "numpy coordinate indexed by distributed positions",
        lambda v: v.idxmax("lat"),
        dapx.GatherWarning,
        "gathers the whole",
    ),
    (
        "outer product of distributed arrays",
        lambda v: xr.dot(v.isel(lon=0), v.isel(lat=0), dim=[]),
        NotImplementedError,
        "no distributed operand",
    ),
    (
        "pad mode not an index map",
        lambda v: v.pad(lon=1, mode="linear_ramp"),
        NotImplementedError,
        "linear_ramp",
    ),
    (
        "spacing as a DistributedArray",
        lambda v: np.gradient(v.data, v.isel(time=0, lat=0).data, axis=2),
        TypeError,
        "NumPy array",
    ),
    ("unknown dimension", lambda v: v.dap.distribute(height=2), ValueError, "height"),
    ("dims named twice", lambda v: v.dap.distribute({"lat": 1}, lon=1), ValueError, "not both"),
    (
        "grid of the wrong size",
        lambda v: v.dap.redistribute(lat=v.dap.backend.nranks + 1),
        ValueError,
        "ranks",
    ),
    (
        "halo on a cyclic dimension",
        lambda v: v.dap.distribute(lon="c", halo={"lon": 1}),
        dapx.DAPError,
        "block",
    ),
    (
        "boundary names an unknown dimension",
        lambda v: v.dap.update_halos(boundary={"z": 0}),
        ValueError,
        "'z'",
    ),
]


@pytest.mark.parametrize("case", ERRORS, ids=[e[0] for e in ERRORS])
def test_what_cannot_be_done_distributed_says_so(backend, case):
    _, func, exception, match = case
    d = distribute(climate(), "b", backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dapx.GatherWarning)
        with pytest.raises(exception, match=match):
            func(d)


def test_hidden_gather_is_caught_by_the_guard(backend, monkeypatch):
    """The guard used above does catch a gather, hidden or explicit."""
    d = distribute(climate(), "b", backend)
    with no_gather(monkeypatch), pytest.raises((dapx.GatherWarning, AssertionError)):
        np.asarray(d.data)
    with no_gather(monkeypatch), pytest.raises(AssertionError, match="gathered"):
        d.data.gather()


# -- the duck array --------------------------------------------------------------------------------


def test_dataarray_keeps_the_distributed_array(backend):
    a = dapx.asarray(np.arange(12.0).reshape(3, 4), backend=backend)
    da = xr.DataArray(a, dims=("y", "x"))
    assert da.data is a
    assert da.variable._data is a
    assert not hasattr(a, "chunks")
    assert da.chunks is None  # xarray does not take dapx for dask
    mean = da.mean()
    assert type(mean.data) is dapx.DistributedArray  # 0-d results stay distributed
    assert float(mean.data) == 5.5


def test_zero_d_results_convert_without_a_gather_warning(backend, monkeypatch):
    """A 0-d DistributedArray is replicated: converting it to NumPy gathers nothing."""
    v = climate()
    d = distribute(v, "b", backend)
    monkeypatch.setattr(dapx.config, "gather_warning_threshold", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dapx.GatherWarning)
        mean, total = d.mean(), d.sum()
        assert type(mean.data) is dapx.DistributedArray and mean.data.ndim == 0
        np.testing.assert_allclose(mean.values, v.mean().values, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(total.data), v.sum().values, rtol=1e-12)
        np.testing.assert_allclose(total.data.__array__(np.float32), np.float32(v.sum().values))
        assert isinstance(mean.values, np.ndarray) and mean.values.shape == ()
        with pytest.raises(dapx.GatherWarning, match="gathers the whole"):
            np.asarray(d.isel(time=0, lat=0, lon=slice(0, 1)).data)  # one element, but 1-d


def test_repr_needs_no_communication(backend, monkeypatch):
    d = distribute(climate(), "b", backend)
    ds = dataset().dap.distribute(lat=backend.nranks, backend=backend)

    def refuse(*args, **kwargs):
        raise AssertionError("repr communicated")

    with monkeypatch.context() as m:  # undone before the MPI plugin shares the outcome
        for method in ("allgather", "allgather_array", "alltoallv", "bcast", "barrier", "combine"):
            m.setattr(type(backend), method, refuse)
        text = repr(d)
        texts = [repr(ds), d._repr_html_(), d.dap._repr_html_(), ds.dap._repr_html_()]
    assert "DistributedArray<shape=(8, 6, 10)" in text and "degC" in text
    assert "dapx float64" in texts[0]
    assert "<svg" in texts[1]  # xarray shows the array's own picture
    assert "<svg" in texts[2] and "time by lat" in texts[2]
    assert "t2m" in texts[3] and "<svg" in texts[3]


# -- the accessor ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dist",
    [None, "c", {"lat": "b", "lon": {"dist": "c", "block_size": 2}}],
    ids=["default", "c", "mixed"],
)
def test_distribute_gather_round_trip_is_identical(backend, dist):
    v = climate()
    v.encoding["dtype"] = "float32"
    grid = {} if dist is None else {"lat": 1, "lon": backend.nranks}
    d = v.dap.distribute(grid, dist=dist, backend=backend)
    assert d.dap.is_distributed and not v.dap.is_distributed
    assert d.attrs == v.attrs and d.name == v.name
    xr.testing.assert_identical(d.coords.to_dataset(), v.coords.to_dataset())
    back = d.dap.gather()
    assert isinstance(back.data, np.ndarray)
    xr.testing.assert_identical(back, v)
    if dist is None:
        assert np.prod(list(d.dap.grid.values())) == backend.nranks
    else:
        assert d.dap.grid == {"time": 1, "lat": 1, "lon": backend.nranks}


def test_dataset_round_trip_and_consistent_layout(backend):
    ds = dataset()
    n = backend.nranks
    d = ds.dap.distribute(lat=n, dist="c", backend=backend)
    for name in ("t2m", "precip", "orography"):
        assert d[name].dap.is_distributed
        assert d[name].dap.grid["lat"] == n and d[name].dap.dist["lat"] == ("c" if n > 1 else "n")
    assert not d["index"].dap.is_distributed  # it has no lat dimension
    assert not d.lat.dap.is_distributed  # coordinates stay NumPy
    assert d.dap.grid == {"time": 1, "lat": n, "lon": 1}
    xr.testing.assert_identical(d.dap.gather(), ds)
    moved = d.dap.redistribute(lat=1, lon=n, dist={"lon": "c"})
    assert moved.dap.grid == {"time": 1, "lat": 1, "lon": n}
    assert moved.dap.dist["lon"] == ("c" if n > 1 else "n")
    assert not moved["index"].dap.is_distributed
    xr.testing.assert_identical(moved.dap.gather(), ds)
    ds = ds.drop_vars("orography")
    default = ds.dap.distribute(backend=backend)  # the dimension every variable shares: time
    assert default.dap.grid == {"time": n, "lat": 1, "lon": 1}
    assert [k for k, v in default.data_vars.items() if v.dap.is_distributed] == [
        "t2m",
        "precip",
        "index",
    ]
    xr.testing.assert_identical(default.dap.gather(), ds)


def test_dataset_layout_properties_disagree(backend):
    ds = dataset().dap.distribute(lat=backend.nranks, backend=backend)
    shuffled = np.array_split(np.random.default_rng(0).permutation(6), backend.nranks)
    ds["precip"] = ds.precip.dap.redistribute(lat={"dist": "u", "indices": shuffled})
    with pytest.raises(ValueError, match="'t2m' and 'precip' have different distributions"):
        ds.dap.dist
    assert ds.dap.grid["lat"] == backend.nranks


def test_layout_by_dimension_name_and_redistribute(backend):
    v = climate()
    n = backend.nranks
    d = v.dap.distribute(lat=1, lon=n, dist={"lon": "c"}, backend=backend)
    assert d.dap.grid == {"time": 1, "lat": 1, "lon": n}
    assert d.dap.dist == {"time": "n", "lat": "n", "lon": "c" if n > 1 else "n"}
    assert d.dap.halo == {"time": (0, 0), "lat": (0, 0), "lon": (0, 0)}
    r = d.dap.redistribute(lon="b")
    assert r.dap.dist["lon"] == ("b" if n > 1 else "n") and r.dap.grid == d.dap.grid
    r2 = r.dap.redistribute(time=n, lon=1)
    assert r2.dap.grid == {"time": n, "lat": 1, "lon": 1}
    for x in (r, r2):
        xr.testing.assert_identical(x.dap.gather(), v)
    bc = d.dap.redistribute(lon={"dist": "c", "block_size": 3})
    assert bc.dap.dist["lon"] == ({"dist": "c", "block_size": 3} if n > 1 else "n")
    again = d.dap.distribute(time=n)  # distribute on distributed data redistributes
    assert again.dap.grid == {"time": n, "lat": 1, "lon": 1}
    xr.testing.assert_identical(again.dap.gather(), v)


def test_default_backend_is_the_current_one(backend):
    d = climate().dap.distribute(lon=backend.nranks)
    assert d.dap.backend is backend or d.dap.backend == backend


def test_local_blocks_come_with_their_coordinates(backend):
    v = climate()
    for kind in ("b", "c2", "u"):
        d = distribute(v, kind, backend)
        dist = d.data.distribution
        for r in backend.local_ranks:
            local = d.dap.local(r)
            idx = dist.global_indices(r)
            assert np.shares_memory(local.data, d.data.local(r)) or local.size == 0
            expected = v.isel(dict(zip(v.dims, idx)))
            xr.testing.assert_identical(local, expected)
            dap = d.dap.distarray(r)
            assert dap["buffer"] is d.data.local(r)
    if len(backend.local_ranks) == 1:
        xr.testing.assert_identical(d.dap.local(), d.dap.local(backend.local_ranks[0]))
    else:
        with pytest.raises(ValueError, match="pass rank="):
            d.dap.local()


def test_dataset_local_and_distarray(backend):
    ds = dataset().dap.distribute(lon=backend.nranks, backend=backend)
    r = backend.local_ranks[-1]
    local = ds.dap.local(r)
    lon = ds.t2m.data.distribution.global_indices(r)[2]
    assert set(local.data_vars) == {"t2m", "precip", "orography"}
    xr.testing.assert_identical(local.t2m, ds.t2m.dap.gather().isel(lon=lon))
    assert local.attrs == ds.attrs
    assert set(ds.dap.distarray(r)) == {"t2m", "precip", "orography"}


def test_accessor_needs_distributed_data(backend):
    v = climate()
    with pytest.raises(TypeError, match="distribute"):
        v.dap.grid
    assert "not distributed" in v.dap._repr_html_()
    pytest.importorskip("dask")
    # Dask-backed (like lazily loaded) data is read rank by rank (tests/test_io.py).
    d = v.chunk({"time": 3}).dap.distribute(lon=backend.nranks)
    xr.testing.assert_identical(d.dap.gather(), v)


# -- registration on import dapx, without importing xarray ----------------------------------------

USE_ACCESSOR = """
import sys
import numpy as np
import xarray as xr
import dapx
d = xr.DataArray(np.arange(6.0), dims="x", attrs={"u": 1}).dap.distribute(
    x=2, backend=dapx.simulated(2))
assert isinstance(d.data, dapx.DistributedArray) and d.dap.grid == {"x": 2}, d
assert xr.Dataset({"t": d}).dap.is_distributed
xr.testing.assert_identical(d.dap.gather(), xr.DataArray(np.arange(6.0), dims="x", attrs={"u": 1}))
assert xr.__spec__.loader is xr.__loader__ and "dapx" not in type(xr.__loader__).__module__
assert not any(type(f).__name__ == "_XarrayHook" for f in sys.meta_path)
print("registered")
"""


def _fresh_python(code: str, tmp_path) -> str:
    result = _processes.run([sys.executable, "-c", code], timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_import_dapx_does_not_import_xarray(tmp_path):
    out = _fresh_python("import dapx, sys; print('xarray' in sys.modules)", tmp_path)
    assert out == "False"


@pytest.mark.parametrize("first", ["dapx", "xarray"])
def test_accessor_is_registered_in_either_import_order(first, tmp_path):
    """``import dapx; import xarray`` (via the import hook) and ``import xarray; import dapx``."""
    lines = USE_ACCESSOR.strip().splitlines()
    order = ["import dapx", "import xarray as xr"]
    if first == "xarray":
        order.reverse()
    code = "\n".join([*order, *(line for line in lines if line not in order)])
    assert _fresh_python(code, tmp_path) == "registered"
    if first == "dapx":  # a submodule first imports the package through the hook too
        code = "import dapx\nfrom xarray.core.dataarray import DataArray\n" + USE_ACCESSOR
        assert _fresh_python(code, tmp_path) == "registered"


# -- halos by dimension name -----------------------------------------------------------------------


@pytest.mark.parametrize("boundary", ["nearest", 0.0, "periodic", "reflect"])
def test_halos_by_dimension_name(backend, boundary):
    v = climate().fillna(1.0)
    n = backend.nranks
    d = v.dap.distribute(lat=1, lon=n, halo={"lon": 1}, backend=backend)
    assert d.dap.halo == {"time": (0, 0), "lat": (0, 0), "lon": (1, 1)}
    xr.testing.assert_identical(d.dap.gather(), v)
    assert d.dap.update_halos(boundary={"lon": boundary}) is d
    mode = {"nearest": "edge", "periodic": "wrap", "reflect": "symmetric"}.get(boundary, "constant")
    padded = np.pad(v.values, [(0, 0), (0, 0), (1, 1)], mode=mode)
    for r in backend.local_ranks:
        local = d.dap.local(r, padded=True)
        lon = d.data.distribution.global_indices(r)[2]
        np.testing.assert_array_equal(local.values, padded[:, :, lon + 1])
        # ghost cells past the domain edge continue the coordinate's spacing
        np.testing.assert_allclose(local.lon.values, 36.0 * lon)
        inner = d.dap.local(r)
        xr.testing.assert_identical(
            inner, v.isel(lon=d.dap.interior.data.distribution.global_indices(r)[2])
        )
    interior = d.dap.interior
    assert interior.dap.halo["lon"] == (0, 0)
    xr.testing.assert_identical(interior.dap.gather(), v)
    # the halo survives xarray operations that keep the array
    assert (d + 0).dap.gather().equals(v)


def test_map_overlap_by_dimension_name(backend):
    v = climate().fillna(0.0)
    d = v.dap.distribute(lat=1, lon=backend.nranks, backend=backend)

    def laplacian(block):
        return np.roll(block, 1, axis=2) + np.roll(block, -1, axis=2) - 2 * block

    result = d.dap.map_overlap(laplacian, depth={"lon": 1}, boundary="periodic")
    assert result.dims == v.dims and result.attrs == v.attrs
    expected = v.copy(data=laplacian(v.values))
    xr.testing.assert_allclose(result.dap.gather(), expected)
    ds = xr.Dataset({"a": d, "b": d * 2})
    out = ds.dap.map_overlap(laplacian, depth={"lon": 1}, boundary={"lon": "periodic"})
    xr.testing.assert_allclose(out.dap.gather().b, 2 * expected)


def test_dataset_halo_methods(backend):
    ds = dataset().fillna(0.0)
    d = ds.dap.distribute(
        lon=backend.nranks, halo={"lon": 1}, periodic={"lon": True}, backend=backend
    )
    assert d.dap.halo == {"time": (0, 0), "lat": (0, 0), "lon": (1, 1)}
    assert d.dap.update_halos() is d
    for r in backend.local_ranks:
        lon = d.t2m.data.distribution.global_indices(r)[2]
        np.testing.assert_array_equal(
            d.dap.local(r, padded=True).precip.values, ds.precip.values[:, :, lon]
        )
    xr.testing.assert_identical(d.dap.interior.dap.gather(), ds)


# -- the NumPy functions xarray calls, against NumPy -----------------------------------------------
