"""Datasets to and from zarr and netCDF, every rank writing and reading only its own block.

Writing is three collective steps: the process of rank 0 writes the
metadata, the coordinates and every NumPy-backed variable once, marked
incomplete (`create_once`); every rank writes its own region of each
distributed variable; rank 0 removes the mark (and consolidates zarr
metadata, which is what `xr.open_zarr` and `dapx.open_zarr` read). A write
that fails on any rank raises `dapx.RankError` on every rank and leaves the
mark, so the store does not look complete.

- zarr: the metadata is xarray's own (``to_zarr(compute=False)`` of a
  template whose distributed variables are empty dask arrays with the
  chunks that dapx's layout makes rank-exclusive), and every rank writes
  with xarray's ``to_zarr(region=...)``, so CF encoding is xarray's.
- netCDF (netCDF4): the template without the distributed variables is
  written by xarray, those are then defined with the attributes and dtype
  that xarray's CF encoding gives them, and the ranks write their encoded
  regions one after the other (HDF5 without MPI-IO admits one writer).

Reading needs nothing special: ``xr.open_dataset(...)`` or ``xr.open_zarr``
give lazily loaded variables, and ``.dap.distribute(...)`` reads each
rank's block from them (see `dapx.interop.io.reading`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import xarray as xr

from ...backends import Backend
from ...core.array import DistributedArray
from ...core.guard import collective
from ..io.progress import progress_bar
from ..io.threads import io_threads, zarr_in_flight
from ..io.writing import INCOMPLETE, chunk_aligned, in_turn, once, owned_regions
from .layout import in_spmd_order

__all__ = ["create_once", "dataset_to_netcdf", "dataset_to_zarr", "open_zarr"]


@collective
def create_once(create: Callable[[], None], *, backend: Backend) -> None:
    """Run `create` on the process of rank 0 while every other rank waits for it."""
    once(backend, create)


def _distributed(ds: xr.Dataset) -> dict[str, xr.Variable]:
    # In one order on every process (see `in_spmd_order`): the writes are collective.
    return {n: v for n, v in in_spmd_order(ds.variables) if isinstance(v._data, DistributedArray)}


def _backend(variables: dict) -> Backend:
    backends = {id(v._data.backend): v._data.backend for v in variables.values()}
    if len(backends) > 1:
        raise ValueError("the distributed variables live on different backends")
    return next(iter(backends.values()))


def _aligned(ds, encoding: dict, chunk_key: str) -> tuple[dict, dict]:
    """Each distributed variable laid out in rank-exclusive chunks, and the encoding to say so."""
    arrays, encoding = {}, {n: dict(e) for n, e in (encoding or {}).items()}
    for name, var in _distributed(ds).items():
        wanted = encoding.get(name, {}).get(chunk_key)
        arrays[name], chunks = chunk_aligned(var._data, wanted)
        encoding.setdefault(name, {})[chunk_key] = chunks
    return arrays, encoding


# -- zarr ---------------------------------------------------------------------------------------


def dataset_to_zarr(
    ds: xr.Dataset,
    store,
    *,
    mode: str = "w-",
    encoding: dict | None = None,
    consolidated: bool = True,
    progress: bool = False,
    **kwargs: Any,
) -> None:
    """Write `ds` to a zarr store, every rank its own chunks (see the module notes)."""
    import zarr

    variables = _distributed(ds)
    if not variables:
        raise ValueError("no variable of this Dataset is distributed: use Dataset.to_zarr")
    if mode not in ("w", "w-"):
        raise ValueError(f"mode must be 'w' or 'w-' (a new store), got {mode!r}")
    backend = _backend(variables)
    arrays, encoding = _aligned(ds, encoding, "chunks")
    template = _template(ds, encoding)

    def create():
        template.to_zarr(
            store, mode=mode, compute=False, consolidated=False, encoding=encoding, **kwargs
        )

    create_once(create, backend=backend)
    names = list(arrays)
    _write_zarr_regions(
        store, names, [ds.variables[n].dims for n in names], [arrays[n] for n in names], progress
    )

    def finish():
        group = zarr.open_group(store, mode="r+")
        group.attrs.put({k: v for k, v in group.attrs.asdict().items() if k != INCOMPLETE})
        if consolidated:
            with warnings.catch_warnings():
                # zarr warns that v3 has no consolidated metadata in its spec yet;
                # xarray's readers look for it first, and it marks the write complete.
                warnings.filterwarnings("ignore", "Consolidated metadata", UserWarning)
                zarr.consolidate_metadata(store)

    create_once(finish, backend=backend)


def _template(ds: xr.Dataset, encoding: dict) -> xr.Dataset:
    """`ds`, each distributed variable an empty dask array in its zarr chunks (never written)."""
    try:
        import dask.array
    except ImportError as e:
        raise ImportError("writing a Dataset to zarr needs dask: pip install 'dapx[io]'") from e
    out = ds.copy(deep=False)
    for name, var in _distributed(ds).items():
        empty = dask.array.empty(var.shape, dtype=var.dtype, chunks=encoding[name]["chunks"])
        out[name] = var.copy(deep=False, data=empty)
    out.attrs = {**ds.attrs, INCOMPLETE: True}
    return out


@collective
def _write_zarr_regions(store, names, dims, arrays, progress) -> None:
    work = [
        (name, d, region, values)
        for name, d, a in zip(names, dims, arrays)
        for _, region, values in owned_regions(a)
    ]
    shown = progress and 0 in arrays[0].backend.local_ranks

    def write(item):
        name, d, region, values = item
        block = xr.Dataset({name: xr.Variable(d, values)})
        block.to_zarr(store, region=dict(zip(d, region)), mode="r+", consolidated=False)

    threads = io_threads(len(work))
    # Several regions here (ranks of the simulated backend, or variables): written at once,
    # as their chunks are disjoint.
    with zarr_in_flight(threads), ThreadPoolExecutor(threads) as pool:
        list(progress_bar(pool.map(write, work), shown, "writing zarr", len(work)))
    # Every rank has written before rank 0 consolidates the metadata (which rewrites the
    # group's metadata that the other ranks' region writes read).
    arrays[0].backend.barrier()


def open_zarr(
    store,
    grid=None,
    *,
    dist=None,
    halo=None,
    periodic=None,
    backend: Backend | None = None,
    consolidated: bool | None = True,
    open_kwargs: dict | None = None,
    **grid_kwargs: Any,
) -> xr.Dataset:
    """A Dataset from a zarr store, its data variables distributed, each rank reading its block.

    `grid`, `dist`, `halo`, `periodic` and keywords by dimension name as
    ``Dataset.dap.distribute``; `open_kwargs` go to `xarray.open_zarr`. A
    store without consolidated metadata (which a dapx write writes last) or
    that a dapx write left incomplete is refused.

    Examples
    --------
    >>> import numpy as np, xarray as xr, dapx, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "t.zarr")
    >>> ds = xr.Dataset({"t": (("y", "x"), np.arange(12.0).reshape(3, 4))})
    >>> ds.dap.distribute(x=2, backend=dapx.simulated(2)).dap.to_zarr(path)
    >>> d = dapx.open_zarr(path, y=2, backend=dapx.simulated(2))
    >>> d.t.dap.grid
    {'y': 2, 'x': 1}
    >>> xr.testing.assert_identical(d.dap.gather(), ds)
    """
    try:
        ds = xr.open_zarr(store, chunks=None, consolidated=consolidated, **(open_kwargs or {}))
    except (FileNotFoundError, KeyError) as e:
        raise FileNotFoundError(f"no complete zarr store at {store!s}: {e}") from e
    if ds.attrs.get(INCOMPLETE):
        raise ValueError(
            f"the zarr store {store!s} was not completely written (a dapx write failed)"
        )
    return ds.dap.distribute(
        grid, dist=dist, halo=halo, periodic=periodic, backend=backend, **grid_kwargs
    )


# -- netCDF -------------------------------------------------------------------------------------


def dataset_to_netcdf(
    ds: xr.Dataset,
    path,
    *,
    mode: str = "w",
    encoding: dict | None = None,
    progress: bool = False,
    **kwargs: Any,
) -> None:
    """Write `ds` to a netCDF4 file, the ranks writing their own regions in turn."""
    import netCDF4

    variables = _distributed(ds)
    if not variables:
        raise ValueError("no variable of this Dataset is distributed: use Dataset.to_netcdf")
    if mode != "w":
        raise ValueError(f"mode must be 'w' (a new file), got {mode!r}")
    backend = _backend(variables)
    encoding = {n: dict(e) for n, e in (encoding or {}).items()}
    arrays = {n: chunk_aligned(v._data)[0] for n, v in variables.items()}
    encoded = _netcdf_definitions(ds, encoding)
    rest = ds.drop_vars(list(variables))  # holds no distributed array: it can travel
    rest.attrs = {**ds.attrs, INCOMPLETE: 1}
    rest_encoding = {n: e for n, e in encoding.items() if n not in variables}

    def create():
        rest.to_netcdf(path, mode="w", engine="netcdf4", encoding=rest_encoding, **kwargs)
        with netCDF4.Dataset(path, "a") as nc:
            for name, var in encoded.items():
                for d, n in zip(var.dims, var.shape):
                    if d not in nc.dimensions:
                        nc.createDimension(d, n)
                attrs = dict(var.attrs)
                fill = attrs.pop("_FillValue", None)
                storage = _netcdf_storage(var.encoding)
                # zarr gives explicitly little-endian dtypes; netCDF4 wants native ones spelled so.
                dtype = var.dtype.newbyteorder("=") if var.dtype.isnative else var.dtype
                v = nc.createVariable(name, dtype, var.dims, fill_value=fill, **storage)
                v.setncatts(attrs)

    if backend.local_ranks:
        backend.barrier()  # nobody still has the file open from before (HDF5 locks it)
    create_once(create, backend=backend)
    names = list(arrays)
    _write_netcdf_regions(
        path,
        names,
        [encoded[n] for n in names],
        [encoding.get(n, {}) for n in names],
        [arrays[n] for n in names],
        progress,
    )

    def finish():
        with netCDF4.Dataset(path, "a") as nc:
            nc.delncattr(INCOMPLETE)

    create_once(finish, backend=backend)


def _netcdf_definitions(ds: xr.Dataset, encoding: dict) -> dict[str, xr.Variable]:
    """The CF-encoded definition (dims, dtype, attrs, storage) of each distributed variable.

    xarray's encoding of a one-element sample of the variable: the dtype and
    attributes (fill value, scale, time units) every rank's block is then
    encoded to.
    """
    from xarray.conventions import encode_cf_variable, encode_dataset_coordinates

    names = list(_distributed(ds))
    variables, _ = encode_dataset_coordinates(ds)  # attributes only ("coordinates")
    out = {}
    for name in names:
        var = variables[name]
        enc = {**var.encoding, **encoding.get(name, {})}
        sample = xr.Variable(var.dims, np.zeros((1,) * var.ndim, var.dtype), var.attrs, enc)
        encoded = encode_cf_variable(sample, name=name)
        out[name] = xr.Variable(
            var.dims,
            np.broadcast_to(encoded.values, var.shape),
            encoded.attrs,
            encoded.encoding,
        )
    return out


_STORAGE = ("zlib", "complevel", "shuffle", "fletcher32", "contiguous", "chunksizes", "compression")


def _netcdf_storage(encoding: dict) -> dict:
    return {k: encoding[k] for k in _STORAGE if k in encoding}


def _block_encoding(definition: xr.Variable, encoding: dict) -> dict:
    """The encoding that turns a block into `definition`'s dtype and attributes."""
    attrs = definition.attrs
    fixed = {
        k: attrs[k]
        for k in ("units", "calendar", "scale_factor", "add_offset", "_FillValue")
        if k in attrs
    }
    return {**encoding, **fixed, "dtype": definition.dtype}


@collective
def _write_netcdf_regions(path, names, definitions, encodings, arrays, progress) -> None:
    import netCDF4
    from xarray.conventions import encode_cf_variable

    backend = arrays[0].backend
    blocks: dict[int, list] = {r: [] for r in backend.local_ranks}
    for name, definition, encoding, a in zip(names, definitions, encodings, arrays):
        block_encoding = _block_encoding(definition, encoding)
        for rank, region, values in owned_regions(a):
            blocks[rank].append((name, definition.dims, block_encoding, region, values))

    def write_ranks(nc, ranks):
        for rank in ranks:
            for name, dims, block_encoding, region, values in blocks[rank]:
                var = xr.Variable(dims, values, {}, block_encoding)
                target = nc[name]
                target.set_auto_maskandscale(False)
                target[region] = np.asarray(encode_cf_variable(var, name=name).values)

    shown = progress and 0 in backend.local_ranks
    ranks = progress_bar(backend.local_ranks, shown, "writing netCDF")
    if len(backend.local_ranks) == backend.nranks:
        with netCDF4.Dataset(path, "a") as nc:
            write_ranks(nc, ranks)
        return

    def write(rank):
        with netCDF4.Dataset(path, "a") as nc:
            write_ranks(nc, [rank])

    in_turn(arrays[0], write)
