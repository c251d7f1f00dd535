"""The ``.dap`` accessor: dapx for xarray users, by dimension name.

A `DistributedArray` is an xarray duck array: ``xr.DataArray(a, dims=...)``
keeps it as it is, and xarray's operations reach dapx through
``__array_function__`` and ``__array_ufunc__``. This module adds the
``.dap`` accessor to `xarray.DataArray` and `xarray.Dataset`: thin methods
over public dapx functions that speak in dimension names instead of axis
numbers. ``import dapx`` registers it without importing xarray itself (which
would cost every MPI process seconds): dapx imports this module at once if
xarray is already imported, or else as soon as xarray is (see
``dapx/__init__.py``), so in either order ``da.dap`` is there.

The accessor holds no state of its own (xarray caches accessors per object):
the layout, the halo and the data live on the DistributedArray inside. The
translation between dimension names and axes, and the distribute, gather,
redistribute and local-block code the two accessors share, are in
`dapx.interop.xarray.layout`.

Examples
--------
>>> import numpy as np, xarray as xr, dapx
>>> da = xr.DataArray(np.arange(24.0).reshape(4, 6), dims=("y", "x"),
...                   coords={"x": np.linspace(0, 1, 6)}, attrs={"units": "K"})
>>> d = da.dap.distribute(y=2, x=2, backend=dapx.simulated(4))
>>> d.dap.grid, d.dap.dist
({'y': 2, 'x': 2}, {'y': 'b', 'x': 'b'})
>>> float((d - d.mean("y")).sum().data)  # the 0-d result is still distributed
0.0
>>> xr.testing.assert_identical(d.dap.gather(), da)
"""

from __future__ import annotations

import html
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import xarray as xr

from ...backends import Backend, get_backend
from ...core.array import DistributedArray
from .layout import (
    array_of,
    by_name,
    check_names,
    distribute_array,
    gather_all,
    in_spmd_order,
    local_dataarray,
    map_halo,
    map_spec,
    per_dim_name,
    redistribute_array,
    resolve_layout,
    to_axes,
    with_data,
)

__all__ = ["DataArrayAccessor", "DatasetAccessor"]


# -- the accessors ---------------------------------------------------------------------------------


class _Accessor:
    __slots__ = ("_obj",)

    def __init__(self, obj):
        self._obj = obj


@xr.register_dataarray_accessor("dap")
class DataArrayAccessor(_Accessor):
    """``da.dap``: dapx on a DataArray, by dimension name.

    Examples
    --------
    >>> import numpy as np, xarray as xr, dapx
    >>> da = xr.DataArray(np.arange(12.0).reshape(3, 4), dims=("y", "x"))
    >>> d = da.dap.distribute(x=2, backend=dapx.simulated(2))
    >>> d.dap.is_distributed, d.dap.grid
    (True, {'y': 1, 'x': 2})
    >>> d.dap.local(1).values
    array([[ 2.,  3.],
           [ 6.,  7.],
           [10., 11.]])
    """

    __slots__ = ()

    # -- making and unmaking -----------------------------------------------------------------
    def distribute(
        self,
        grid: Mapping[Hashable, Any] | None = None,
        *,
        dist=None,
        halo=None,
        periodic=None,
        backend: Backend | None = None,
        **grid_kwargs: Any,
    ) -> xr.DataArray:
        """The same DataArray (coords, attrs, name) with its data distributed.

        Parameters
        ----------
        grid, **grid_kwargs : dict or keywords by dimension name
            For each dimension to distribute, its number of ranks (``x=2``)
            or a dist spec (``x="c"``, its number of ranks then chosen by
            `dapx.default_grid`). Dimensions not named here or in `dist` are
            not distributed; when none is named, every dimension is, by
            block over dapx's default grid (balanced over the leading
            dimensions, the last one split only when they cannot hold every
            rank).
        dist : str or dict by dimension name, optional
            ``"b"`` (block, default), ``"c"`` (cyclic), ``"n"`` (not
            distributed), or a dict spec such as ``{"dist": "c",
            "block_size": 2}``; one value for every named dimension or a dict.
        halo : int or dict by dimension name, optional
            Ghost cells around every rank's block: an int or a ``(lo, hi)``
            pair per dimension (see `dapx.Distribution.create`).
        periodic : bool or dict by dimension name, optional
            Whether block dimensions wrap around (for halos).
        backend : dapx.Backend, optional
            Default: the current backend.

        Returns
        -------
        xarray.DataArray
            Already distributed data is redistributed.

        Examples
        --------
        >>> import numpy as np, xarray as xr, dapx
        >>> da = xr.DataArray(np.zeros((4, 6)), dims=("y", "x"))
        >>> d = da.dap.distribute(y=2, x=2, dist={"x": "c"}, backend=dapx.simulated(4))
        >>> d.dap.dist
        {'y': 'b', 'x': 'c'}
        """
        obj = self._obj
        layout = by_name(grid, grid_kwargs, "grid")
        backend = get_backend() if backend is None else backend
        if isinstance(obj.variable._data, DistributedArray):
            backend = obj.variable._data.backend
        halo = per_dim_name(halo, obj.dims, "halo")
        kinds, sizes = resolve_layout(obj.dims, obj.shape, layout, dist, backend.nranks, halo)
        return distribute_array(
            obj,
            obj.dims,
            kinds,
            sizes,
            halo,
            per_dim_name(periodic, obj.dims, "periodic"),
            backend,
        )

    def to_zarr(self, store, *, mode: str = "w-", encoding=None, progress: bool = False, **kwargs):
        """Write to a zarr store as `xarray.DataArray.to_zarr` does, every rank its own chunks.

        See `DatasetAccessor.to_zarr`; the DataArray is written as a Dataset
        with one variable (its name, or xarray's default name), so
        ``xr.open_dataarray(store, engine="zarr")`` reads it back.
        """
        from .io import dataset_to_zarr  # here: io imports xarray, which imports this module

        dataset_to_zarr(
            _as_dataset(self._obj), store, mode=mode, encoding=encoding, progress=progress, **kwargs
        )

    def to_netcdf(self, path, *, mode: str = "w", encoding=None, progress: bool = False, **kwargs):
        """Write to a netCDF4 file as `xarray.DataArray.to_netcdf` does, the ranks in turn.

        See `DatasetAccessor.to_netcdf`.
        """
        from .io import dataset_to_netcdf  # here: io imports xarray, which imports this module

        dataset_to_netcdf(
            _as_dataset(self._obj), path, mode=mode, encoding=encoding, progress=progress, **kwargs
        )

    def gather(self) -> xr.DataArray:
        """The NumPy-backed DataArray, identical to the one that was distributed.

        Every process gets the whole array (an explicit, collective gather).
        """
        return gather_all(self._obj)

    def redistribute(
        self,
        layout: Mapping[Hashable, Any] | None = None,
        *,
        dist=None,
        halo=None,
        periodic=None,
        **layout_kwargs: Any,
    ) -> xr.DataArray:
        """The same DataArray laid out anew, in one exchange.

        Parameters
        ----------
        layout, **layout_kwargs : dict or keywords by dimension name
            A number of ranks (``x=4``) or a dist spec (``x="c"``) per
            dimension to change. Dimensions not named keep their layout;
            named dimensions keep their number of ranks unless given one.
            Every dimension keeps its halo unless `halo` gives another (0 to
            drop it) or it becomes cyclic or unstructured.
        dist, halo, periodic
            As in `distribute` (`dist` may also name the dimensions to change).

        Examples
        --------
        >>> import numpy as np, xarray as xr, dapx
        >>> da = xr.DataArray(np.arange(8.0), dims="x")
        >>> d = da.dap.distribute(x=2, backend=dapx.simulated(2)).dap.redistribute(x="c")
        >>> d.dap.dist, d.dap.local(0).values
        ({'x': 'c'}, array([0., 2., 4., 6.]))
        """
        return redistribute_array(
            self._obj,
            by_name(layout, layout_kwargs, "layout"),
            dist,
            per_dim_name(halo, self._obj.dims, "halo"),
            per_dim_name(periodic, self._obj.dims, "periodic"),
        )

    # -- the layout by dimension name ---------------------------------------------------------
    @property
    def is_distributed(self) -> bool:
        """Whether the data is a DistributedArray."""
        return isinstance(self._obj.variable._data, DistributedArray)

    @property
    def array(self) -> DistributedArray:
        """The DistributedArray inside (raises if the data is not distributed)."""
        return array_of(self._obj)

    @property
    def backend(self) -> Backend:
        """The backend of the DistributedArray inside (raises if the data is not distributed)."""
        return array_of(self._obj).backend

    @property
    def grid(self) -> dict:
        """Number of ranks along each dimension, e.g. ``{"x": 2, "y": 2}``."""
        a = array_of(self._obj)
        return {d: m.nprocs for d, m in zip(self._obj.dims, a.distribution.maps)}

    @property
    def dist(self) -> dict:
        """The distribution of each dimension: ``"b"``, ``"c"``, ``"u"``, ``"n"`` or a spec dict."""
        a = array_of(self._obj)
        return {d: map_spec(m) for d, m in zip(self._obj.dims, a.distribution.maps)}

    @property
    def halo(self) -> dict:
        """The (lo, hi) halo width of each dimension, e.g. ``{"x": (1, 1), "y": (0, 0)}``."""
        a = array_of(self._obj)
        return {d: map_halo(m) for d, m in zip(self._obj.dims, a.distribution.maps)}

    # -- halos -------------------------------------------------------------------------------------
    def update_halos(self, boundary=None) -> xr.DataArray:
        """Fill the halos from the neighbours (`dapx.DistributedArray.update_halos`).

        `boundary` is one condition (``"none"``, a number, ``"reflect"``,
        ``"nearest"``, ``"periodic"``) or a dict by dimension name. The halos
        are filled in place; the DataArray is returned for chaining.
        """
        obj = self._obj
        a = array_of(obj)
        if isinstance(boundary, Mapping):
            check_names(boundary, obj.dims, "boundary")
            boundary = to_axes(boundary, obj.dims)
        a.update_halos(boundary=boundary)
        return obj

    @property
    def interior(self) -> xr.DataArray:
        """The DataArray without halos (its data a view: `DistributedArray.interior`)."""
        return with_data(self._obj, array_of(self._obj).interior)

    def map_overlap(
        self, func: Callable, depth, boundary=None, dtype=None, **kwargs
    ) -> xr.DataArray:
        """`dapx.map_overlap` by dimension name: `func` on each rank's block with halos.

        Parameters
        ----------
        func : callable
            Takes a padded NumPy block, returns a block of the same shape.
        depth : int or dict by dimension name
            Halo width per dimension (``{"x": 1}``); an int for every dimension.
        boundary : condition or dict by dimension name, optional
            As in `update_halos`.
        dtype : optional
            The dtype of the result (default: the input's).

        Returns
        -------
        xarray.DataArray
            Same coords and attrs, the data `func`'s result without halos.
        """
        from ...functions.overlap import map_overlap

        obj = self._obj
        a = array_of(obj)
        depth = to_axes(per_dim_name(depth, obj.dims, "depth"), obj.dims)
        if isinstance(boundary, Mapping):
            check_names(boundary, obj.dims, "boundary")
            boundary = to_axes(boundary, obj.dims)
        result = map_overlap(func, a, depth=depth, boundary=boundary, dtype=dtype, **kwargs)
        return with_data(obj, result)

    # -- local data -----------------------------------------------------------------------------
    def local(self, rank: int | None = None, padded: bool = False) -> xr.DataArray:
        """The local block of `rank` as a NumPy-backed DataArray with its coordinates.

        Parameters
        ----------
        rank : int, optional
            Default: this process's only rank.
        padded : bool
            Include the halo (`DistributedArray.local_with_halo`). Ghost
            cells beyond a non-periodic edge get coordinates that continue
            the edge spacing (1-D numeric or time coordinates; others repeat
            the edge value).

        The data is the block itself (no copy); coordinates are the matching
        slices of every coordinate.
        """
        return local_dataarray(self._obj, rank, padded)

    def distarray(self, rank: int | None = None) -> dict:
        """The DAP ``__distarray__`` dict of `rank` (`DistributedArray.distarray`)."""
        return array_of(self._obj).distarray(rank)

    def _repr_html_(self) -> str:
        from ...core.display import html_repr

        obj = self._obj
        if not self.is_distributed:
            return f"<pre>{html.escape(type(obj.variable._data).__name__)} (not distributed)</pre>"
        return html_repr(array_of(obj), dim_names=[str(d) for d in obj.dims])


@xr.register_dataset_accessor("dap")
class DatasetAccessor(_Accessor):
    """``ds.dap``: dapx on every data variable of a Dataset, by dimension name.

    Examples
    --------
    >>> import numpy as np, xarray as xr, dapx
    >>> ds = xr.Dataset({"t": (("y", "x"), np.zeros((4, 6))), "h": ("x", np.ones(6)),
    ...                  "n": ("z", np.arange(3))})
    >>> d = ds.dap.distribute(x=2, backend=dapx.simulated(2))
    >>> sorted(n for n, v in d.data_vars.items() if v.dap.is_distributed)
    ['h', 't']
    >>> d.dap.grid
    {'y': 1, 'x': 2}
    """

    __slots__ = ()

    def _distributed(self) -> dict:
        return {
            n: v
            for n, v in self._obj.data_vars.items()
            if isinstance(v.variable._data, DistributedArray)
        }

    def _each(self, func: Callable) -> xr.Dataset:
        out = self._obj.copy(deep=False)
        for name, var in in_spmd_order(self._distributed()):
            out[name] = func(var)
        return out

    def distribute(
        self,
        grid: Mapping[Hashable, Any] | None = None,
        *,
        dist=None,
        halo=None,
        periodic=None,
        backend: Backend | None = None,
        **grid_kwargs: Any,
    ) -> xr.Dataset:
        """The same Dataset with every data variable that has the named dimensions distributed.

        Arguments as in `DataArrayAccessor.distribute`, for the Dataset's
        dimensions. The grid is resolved once, so every variable is laid out
        the same way along a shared dimension; a variable that lacks one of
        the named dimensions stays NumPy-backed. With no dimension named,
        the dimensions shared by every data variable are distributed.
        """
        obj = self._obj
        dims = tuple(obj.sizes)
        layout = by_name(grid, grid_kwargs, "grid")
        backend = get_backend() if backend is None else backend
        halo, periodic = per_dim_name(halo, dims, "halo"), per_dim_name(periodic, dims, "periodic")
        if not layout and not isinstance(dist, Mapping):
            shared = [d for d in dims if all(d in v.dims for v in obj.data_vars.values())]
            if not shared:
                raise ValueError(
                    "the data variables share no dimension; name the dimensions to "
                    "distribute, e.g. ds.dap.distribute(lat=2, lon=2)"
                )
            layout = dict.fromkeys(shared, dist if isinstance(dist, str) else "b")
        # The dimension that comes last in the variables (contiguous in memory) goes last.
        lasts = {v.dims[-1] for v in obj.data_vars.values() if v.dims}
        dims = tuple(sorted(dims, key=lambda d: d in lasts))
        shape = tuple(obj.sizes[d] for d in dims)
        kinds, sizes = resolve_layout(dims, shape, layout, dist, backend.nranks, halo)
        kind_of, size_of = dict(zip(dims, kinds)), dict(zip(dims, sizes))
        named = [d for d in dims if d in layout or (isinstance(dist, Mapping) and d in dist)]
        out = obj.copy(deep=False)
        count = 0
        for name, var in in_spmd_order(obj.data_vars):
            if not all(d in var.dims for d in named):
                continue
            vdims = var.dims
            out[name] = distribute_array(
                var,
                vdims,
                [kind_of[d] for d in vdims],
                [size_of[d] for d in vdims],
                {d: h for d, h in halo.items() if d in vdims},
                {d: p for d, p in periodic.items() if d in vdims},
                backend,
            )
            count += 1
        if not count:
            raise ValueError(f"no data variable has all the dimensions {named}")
        return out

    def to_zarr(self, store, *, mode: str = "w-", encoding=None, progress: bool = False, **kwargs):
        """Write to a zarr store as `xarray.Dataset.to_zarr` does, every rank its own chunks.

        The process of rank 0 writes the metadata, coordinates, attributes and
        NumPy-backed variables once; every rank then writes the chunks of its
        own block of each distributed variable (the zarr chunks are chosen, or
        the ``encoding`` chunks checked, so that no two ranks share a chunk:
        a layout that does not fall on chunk boundaries is first redistributed
        in one exchange); consolidated metadata is written last, so a failed
        write (`dapx.RankError` on every rank) does not look complete. The
        halo is never written.

        Parameters
        ----------
        store : str, path or zarr store
            A new store (``mode="w-"``) or one to overwrite (``mode="w"``).
        encoding : dict, optional
            Per variable, as xarray's (``chunks`` included).
        progress : bool
            A progress bar (tqdm) on the process of rank 0.
        **kwargs
            Passed to `xarray.Dataset.to_zarr` for the metadata.

        Examples
        --------
        >>> import numpy as np, xarray as xr, dapx, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "t.zarr")
        >>> ds = xr.Dataset({"t": ("x", np.arange(6.0))}, attrs={"title": "demo"})
        >>> ds.dap.distribute(x="c", backend=dapx.simulated(2)).dap.to_zarr(path)
        >>> xr.testing.assert_identical(xr.open_zarr(path).load(), ds)
        """
        from .io import dataset_to_zarr  # here: io imports xarray, which imports this module

        dataset_to_zarr(self._obj, store, mode=mode, encoding=encoding, progress=progress, **kwargs)

    def to_netcdf(self, path, *, mode: str = "w", encoding=None, progress: bool = False, **kwargs):
        """Write to a netCDF4 file as `xarray.Dataset.to_netcdf` does, the ranks in turn.

        The HDF5 under netCDF4 from PyPI has no MPI-IO, so the process of
        rank 0 writes the file's metadata and NumPy-backed variables, then the
        ranks write their own regions of each distributed variable one after
        another (no rank ever holds more than its own block), CF-encoded as
        xarray encodes them. The file is marked incomplete until all have
        written. ``**kwargs`` go to `xarray.Dataset.to_netcdf` (engine netcdf4).

        Examples
        --------
        >>> import numpy as np, xarray as xr, dapx, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "t.nc")
        >>> ds = xr.Dataset({"t": (("y", "x"), np.ones((2, 3), "f4"))}, coords={"x": [1, 2, 3]})
        >>> ds.dap.distribute(y=2, backend=dapx.simulated(2)).dap.to_netcdf(path)
        >>> with xr.open_dataset(path) as back:
        ...     xr.testing.assert_identical(back.load(), ds)
        """
        from .io import dataset_to_netcdf  # here: io imports xarray, which imports this module

        dataset_to_netcdf(
            self._obj, path, mode=mode, encoding=encoding, progress=progress, **kwargs
        )

    def gather(self) -> xr.Dataset:
        """The NumPy-backed Dataset, identical to the one that was distributed."""
        return gather_all(self._obj)

    def redistribute(
        self,
        layout: Mapping[Hashable, Any] | None = None,
        *,
        dist=None,
        halo=None,
        periodic=None,
        **layout_kwargs: Any,
    ) -> xr.Dataset:
        """Every distributed data variable laid out anew (see `DataArrayAccessor.redistribute`).

        Each variable changes the named dimensions it has.
        """
        layout = by_name(layout, layout_kwargs, "layout")
        dims = tuple(self._obj.sizes)
        check_names(layout, dims, "redistribute")
        halo, periodic = per_dim_name(halo, dims, "halo"), per_dim_name(periodic, dims, "periodic")
        dist = dist if not isinstance(dist, Mapping) else dict(dist)
        check_names(dist if isinstance(dist, Mapping) else (), dims, "dist")

        def one(var):
            def mine(m):
                return {d: v for d, v in m.items() if d in var.dims}

            d = mine(dist) if isinstance(dist, Mapping) else dist
            try:
                return redistribute_array(var, mine(layout), d, mine(halo), mine(periodic))
            except ValueError as e:
                raise ValueError(f"data variable {var.name!r}: {e}") from None

        return self._each(one)

    @property
    def is_distributed(self) -> bool:
        """Whether any data variable is distributed."""
        return bool(self._distributed())

    def _merged(self, what: str, read: Callable) -> dict:
        merged: dict = {}
        source: dict = {}
        for name, var in self._distributed().items():  # metadata only: no collective
            for d, value in read(var.dap).items():
                if d in merged and merged[d] != value:
                    raise ValueError(
                        f"data variables {source[d]!r} and {name!r} have different {what} "
                        f"along {d!r}: {merged[d]!r} and {value!r}"
                    )
                merged.setdefault(d, value)
                source.setdefault(d, name)
        return {d: merged[d] for d in self._obj.sizes if d in merged}

    @property
    def grid(self) -> dict:
        """Ranks along each dimension of the distributed variables (which must agree)."""
        return self._merged("grids", lambda acc: acc.grid)

    @property
    def dist(self) -> dict:
        """The distribution of each dimension of the distributed variables."""
        return self._merged("distributions", lambda acc: acc.dist)

    @property
    def halo(self) -> dict:
        """The (lo, hi) halo of each dimension of the distributed variables."""
        return self._merged("halos", lambda acc: acc.halo)

    def update_halos(self, boundary=None) -> xr.Dataset:
        """Fill the halos of every distributed data variable (in place); returns the Dataset."""
        check_names(
            boundary if isinstance(boundary, Mapping) else (), tuple(self._obj.sizes), "boundary"
        )
        for var in self._distributed().values():
            b = (
                {d: v for d, v in boundary.items() if d in var.dims}
                if isinstance(boundary, Mapping)
                else boundary
            )
            var.dap.update_halos(boundary=b)
        return self._obj

    @property
    def interior(self) -> xr.Dataset:
        """The Dataset with every distributed variable's halo dropped (views)."""
        return self._each(lambda var: var.dap.interior)

    def map_overlap(self, func: Callable, depth, boundary=None, dtype=None, **kwargs) -> xr.Dataset:
        """`DataArrayAccessor.map_overlap` on every distributed data variable."""
        dims = tuple(self._obj.sizes)
        depth = per_dim_name(depth, dims, "depth")
        check_names(boundary if isinstance(boundary, Mapping) else (), dims, "boundary")

        def one(var):
            b = (
                {d: v for d, v in boundary.items() if d in var.dims}
                if isinstance(boundary, Mapping)
                else boundary
            )
            return var.dap.map_overlap(
                func,
                {d: n for d, n in depth.items() if d in var.dims},
                boundary=b,
                dtype=dtype,
                **kwargs,
            )

        return self._each(one)

    def local(self, rank: int | None = None, padded: bool = False) -> xr.Dataset:
        """The local blocks of `rank` of every distributed data variable, as one Dataset.

        The variables must agree on the layout of the dimensions they share;
        variables that are not distributed are left out.
        """
        parts = [var.dap.local(rank, padded) for var in self._distributed().values()]
        if not parts:
            raise TypeError("no data variable is distributed; call .dap.distribute(...) first")
        local = xr.merge(parts, join="exact", compat="no_conflicts", combine_attrs="override")
        local.attrs = dict(self._obj.attrs)
        return local

    def distarray(self, rank: int | None = None) -> dict:
        """The DAP dict of `rank` of every distributed data variable, by name."""
        return {name: var.dap.distarray(rank) for name, var in self._distributed().items()}

    def _repr_html_(self) -> str:
        parts = [
            f"<h4>{html.escape(str(name))}</h4>{var.dap._repr_html_()}"
            for name, var in self._distributed().items()
        ]
        return "<div>" + "".join(parts) + "</div>" if parts else "<pre>not distributed</pre>"


def _as_dataset(da: xr.DataArray) -> xr.Dataset:
    """The Dataset that xarray writes for a DataArray (its name, or xarray's default name)."""
    name = da.name if da.name is not None else "__xarray_dataarray_variable__"
    return da.to_dataset(name=name, promote_attrs=False)
