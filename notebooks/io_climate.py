"""Files in and out in parallel, SPMD: the workflow of notebooks/io.ipynb as a script.

Write a climate-style Dataset (time, lat, lon) to zarr and netCDF, open it distributed,
compute anomalies and a zonal mean, write the results, read them back; every result is
checked against the same computation by xarray on NumPy data.

    mpiexec -n 4 .venv/bin/python notebooks/io_climate.py /tmp/io-demo
    .venv/bin/python notebooks/io_climate.py /tmp/io-demo     # 4 simulated ranks, one process

Every process runs the whole script. `dapx.default_backend()` is MPI under mpiexec (one
rank per process), else the simulated backend (`DAPX_RANKS` ranks, default 4). dapx's
reads and writes are collective: every process calls them, and each reads and writes only
its own ranks' blocks. The reference data is generated identically (seeded) on every
process; only the process of rank 0 writes the input files, with plain xarray.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

import dapx

# zarr 3 notes, on every consolidated write, that consolidated metadata (which xarray reads
# first) is not in its spec yet.
warnings.filterwarnings("ignore", "Consolidated metadata", UserWarning)


def climate() -> xr.Dataset:
    """Two years of monthly temperature and precipitation, 24 x 36 x 72, the same everywhere."""
    rng = np.random.default_rng(0)
    time = pd.date_range("2000-01-01", periods=24, freq="MS")
    lat = np.arange(-87.5, 90.0, 5.0)
    lon = np.arange(0.0, 360.0, 5.0)
    month = time.month.to_numpy()
    t2m = (
        288.0
        - 30.0 * np.sin(np.deg2rad(lat))[None, :, None] ** 2
        + 10.0 * np.cos(2 * np.pi * (month[:, None, None] - 7) / 12) * np.sign(lat)[None, :, None]
        + 3.0 * np.sin(np.deg2rad(lon))[None, None, :]
        + rng.normal(0.0, 0.5, (time.size, lat.size, lon.size))
    )
    return xr.Dataset(
        {
            "t2m": (
                ("time", "lat", "lon"),
                t2m.astype("f4"),
                {"units": "K", "long_name": "2 m temperature"},
            ),
            "precip": (("time", "lat", "lon"), rng.gamma(2.0, 1.5, t2m.shape), {"units": "mm/day"}),
        },
        coords={
            "time": time,
            "lat": ("lat", lat, {"units": "degrees_north"}),
            "lon": ("lon", lon, {"units": "degrees_east"}),
        },
        attrs={"title": "toy monthly climate"},
    )


def main(directory: str) -> None:
    backend = dapx.default_backend()
    dapx.set_backend(backend)
    root = Path(directory)
    leader = 0 in backend.local_ranks  # the process that holds rank 0
    n = backend.nranks
    # lat x lon over a grid of ranks: 2 x n/2 when the ranks pair up, else n x 1.
    grid = {"lat": 2, "lon": n // 2} if n % 2 == 0 else {"lat": n, "lon": 1}

    def say(*args):
        if leader:
            print(*args, flush=True)

    ds = climate()
    expected_anomaly = ds - ds.mean("time")
    expected_zonal = expected_anomaly.mean("lon")
    say(f"{backend!r}, grid {grid}, files in {root}")

    # The input files, written once by plain xarray (as a model would have), then read by all.
    if leader:
        root.mkdir(parents=True, exist_ok=True)
        ds.to_zarr(root / "climate.zarr", mode="w")
        ds.to_netcdf(root / "climate.nc")
    backend.barrier()

    # Open distributed: each rank reads only its block of each variable.
    with xr.open_dataset(root / "climate.nc") as lazy:
        from_netcdf = lazy.dap.distribute(**grid, backend=backend)
        xr.testing.assert_identical(from_netcdf.dap.gather(), ds)
    d = dapx.open_zarr(root / "climate.zarr", **grid, backend=backend)
    xr.testing.assert_identical(d.dap.gather(), ds)
    # Each process describes its own ranks' blocks; rank 0 prints them all, in rank order.
    described = {}
    for rank in backend.local_ranks:
        block = d.t2m.dap.local(rank)
        described[rank] = (
            f"rank {rank}: block {dict(block.sizes)}, "
            f"lat {block.lat.values[0]}..{block.lat.values[-1]}, "
            f"lon {block.lon.values[0]}..{block.lon.values[-1]}"
        )
    say("\n".join(backend.allgather(described)))

    # Anomalies and the zonal mean, distributed; nothing is gathered.
    anomaly = d - d.mean("time")
    zonal = anomaly.mean("lon")
    xr.testing.assert_allclose(anomaly.dap.gather(), expected_anomaly)
    xr.testing.assert_allclose(zonal.dap.gather(), expected_zonal)
    say("anomaly", anomaly.t2m.dap.grid, "zonal mean", zonal.t2m.dap.grid)

    # Write the results (collective: every process calls, each writes its own regions).
    anomaly.dap.to_zarr(root / "anomaly.zarr", mode="w")
    zonal.dap.to_netcdf(root / "zonal_mean.nc")
    anomaly.t2m.data.to_hdf5(root / "anomaly.h5", "t2m", mode="w")

    # Read them back, distributed, in the same layout and in another one.
    back = dapx.open_zarr(root / "anomaly.zarr", **grid, backend=backend)
    xr.testing.assert_identical(back.dap.gather(), anomaly.dap.gather())
    xr.testing.assert_allclose(back.dap.gather(), expected_anomaly)
    by_month = dapx.open_zarr(root / "anomaly.zarr", time=n, backend=backend)
    xr.testing.assert_allclose(by_month.dap.gather(), expected_anomaly)
    with xr.open_dataset(root / "zonal_mean.nc") as lazy:
        zonal_back = lazy.dap.distribute(time=n, backend=backend)
        xr.testing.assert_allclose(zonal_back.dap.gather(), expected_zonal)
    h = dapx.from_hdf5(root / "anomaly.h5", "t2m", grid=(n, 1, 1), backend=backend)
    np.testing.assert_allclose(h.gather(), expected_anomaly.t2m.values, rtol=1e-6)

    # And as plain xarray reads them, on one process.
    if leader:
        with xr.open_zarr(root / "anomaly.zarr") as stored:
            xr.testing.assert_allclose(stored.load(), expected_anomaly)
        with xr.open_dataset(root / "zonal_mean.nc") as stored:
            xr.testing.assert_allclose(stored.load(), expected_zonal)
    backend.barrier()
    say(
        f"all results equal xarray's on NumPy data; files: {sorted(p.name for p in root.iterdir())}"
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} DIRECTORY  (e.g. mpiexec -n 4 ... /tmp/io-demo)")
    main(sys.argv[1])
