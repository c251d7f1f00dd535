"""Dimension names <-> axes, and the implementation behind the ``.dap`` accessor.

`dapx.interop.xarray.accessor` defines the accessor classes; this module holds what they
share: turning arguments by dimension name (``x=2``, ``dist={"x": "c"}``,
``halo={"y": 1}``) into dapx's per-axis layouts and back (`resolve_layout`,
`map_spec`, `map_halo`), and distributing, gathering, redistributing and
taking local blocks of one DataArray (or every variable of a Dataset),
coordinates included. It imports xarray, so like `dapx.interop.xarray.accessor` it is
imported only once xarray is.

Examples
--------
>>> from dapx.interop.xarray.layout import _split_layout
>>> _split_layout({"y": 2, "x": "c"}, None)
({'y': 2}, {'x': 'c'})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from ...core.array import DistributedArray
from ...core.creation import asarray
from ...layout.grid import default_grid
from ...layout.maps import BlockMap, CyclicMap, Map, UnstructuredMap
from ..io.reading import from_array

__all__ = [
    "array_of",
    "by_name",
    "check_names",
    "distribute_array",
    "gather_all",
    "in_spmd_order",
    "local_dataarray",
    "map_halo",
    "map_spec",
    "per_dim_name",
    "redistribute_array",
    "resolve_layout",
    "to_axes",
    "with_data",
]


# -- helpers: names <-> axes -----------------------------------------------------------------------


def by_name(positional: Any, keywords: Mapping, what: str) -> dict:
    """xarray's ``either_dict_or_kwargs``: a dict argument or keyword arguments, not both."""
    if positional is None:
        return dict(keywords)
    if keywords:
        raise ValueError(f"pass {what} either as a dict or as keyword arguments, not both")
    if not isinstance(positional, Mapping):
        raise TypeError(f"{what} must be a dict by dimension name, got {positional!r}")
    return dict(positional)


def check_names(names, dims: tuple, what: str) -> None:
    unknown = [n for n in names if n not in dims]
    if unknown:
        raise ValueError(
            f"{what} names dimension(s) {unknown} that are not among the dimensions {dims}"
        )


def per_dim_name(value, dims: tuple, what: str) -> dict:
    """A dict by dimension name, from a dict or one value for every dimension."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        check_names(value, dims, what)
        return dict(value)
    return dict.fromkeys(dims, value)


def to_axes(by_dim: Mapping, dims: tuple) -> dict:
    return {dims.index(d): v for d, v in by_dim.items() if d in dims}


def array_of(obj) -> DistributedArray:
    data = obj.variable._data
    if not isinstance(data, DistributedArray):
        raise TypeError(
            f"this {type(obj).__name__} holds a {type(data).__name__}, not a DistributedArray; "
            "call .dap.distribute(...) first"
        )
    return data


def with_data(obj, data):
    """`obj` (a DataArray) with `data` in place of its data: same coords, attrs and name."""
    return obj.copy(deep=False, data=data)


def map_spec(m: Map) -> str | dict:
    """The ``dist`` spec of one map, as `distribute` and `redistribute` take it."""
    if isinstance(m, UnstructuredMap):
        return "u"
    if m.nprocs == 1:
        return "n"
    if isinstance(m, CyclicMap):
        return "c" if m.block_size == 1 else {"dist": "c", "block_size": m.block_size}
    return "b"


def _exact_spec(m: Map) -> dict:
    """A ``dist`` spec that rebuilds map `m` exactly (halo excepted)."""
    if isinstance(m, BlockMap):
        return {"dist": "b", "bounds": np.asarray(m.bounds).tolist(), "periodic": m.periodic}
    if isinstance(m, CyclicMap):
        return {"dist": "c", "block_size": m.block_size}
    if isinstance(m, UnstructuredMap):
        return {
            "dist": "u",
            "indices": [m.indices(c) for c in range(m.nprocs)],
            "one_to_one": m.one_to_one,
        }
    raise TypeError(f"unknown map type {type(m).__name__}")


def map_halo(m: Map) -> tuple[int, int]:
    """The (lo, hi) ghost widths of a dimension (the widest over its ranks)."""
    if not (isinstance(m, BlockMap) and m.is_padded):
        return (0, 0)
    widths = np.array([m.ghost_widths(c) for c in range(m.nprocs)])
    return int(widths[:, 0].max()), int(widths[:, 1].max())


def _split_layout(layout: Mapping, dist) -> tuple[dict, dict]:
    """Grid sizes and dist specs by name, from ``x=2`` / ``x="c"`` keywords and ``dist=``."""
    grid, specs = {}, {}
    for d, v in layout.items():
        if isinstance(v, (bool, np.bool_)):
            raise TypeError(f"dimension {d!r}: give a number of ranks or a dist spec, not {v!r}")
        if isinstance(v, (int, np.integer)):
            grid[d] = int(v)
        elif isinstance(v, (str, Mapping)) or v is None:
            specs[d] = v
        else:
            raise TypeError(
                f"dimension {d!r}: give a number of ranks (int) or a dist spec ('b', 'c', "
                f"'n', a dict), got {v!r}"
            )
    if isinstance(dist, Mapping):
        for d, v in dist.items():
            if d in specs and specs[d] != v:
                raise ValueError(f"dimension {d!r} has two dist specs: {specs[d]!r} and {v!r}")
            specs[d] = v
    return grid, specs


def resolve_layout(
    dims: tuple, shape: tuple, layout: Mapping, dist, nranks: int, halo: Mapping
) -> tuple[list, list]:
    """(specs, grid sizes) per dimension for `distribute`.

    Named dimensions (by a rank count, a spec, or ``dist=``) are distributed;
    the others are not, unless none is named: then every dimension is, over
    dapx's default grid (`dapx.layout.grid.default_grid`: the last of `dims` is
    split only when the others cannot hold every rank).
    """
    grid, specs = _split_layout(layout, dist)
    check_names([*grid, *specs], dims, "distribute")
    named = set(grid) | set(specs)
    default = dist if isinstance(dist, (str, type(None))) else None
    sizes, kinds = [], []
    for d in dims:
        spec = specs.get(d, default)
        if d in grid:
            sizes.append(grid[d])
        elif not named or d in specs:
            sizes.append(1 if spec in ("n", None) and d in specs else 0)
        else:
            sizes.append(1)
            spec = "n"
        kinds.append("b" if spec is None else spec)
    if not dims:  # a 0-d array is replicated: there is no grid to make
        return None, None
    widths = [max(np.atleast_1d(halo.get(d, 1))) for d in dims]
    return kinds, list(default_grid(shape, nranks, sizes, min_extent=widths))


# -- the shared implementation ---------------------------------------------------------------------


def distribute_array(obj, dims, kinds, sizes, halo, periodic, backend):
    """`obj` with its data distributed; lazily loaded or dask data is read by each rank."""
    data = obj.variable._data
    options = {}
    if halo:
        options["halo"] = to_axes(halo, dims)
    if periodic:
        options["periodic"] = [bool(periodic.get(d, False)) for d in dims]
    if isinstance(data, DistributedArray):
        return with_data(obj, data.redistribute(kinds, sizes, **options))
    if isinstance(data, np.ndarray):
        return with_data(obj, asarray(data, dist=kinds, grid=sizes, backend=backend, **options))
    # Lazily loaded (a file) or dask-backed: each rank reads only its own block.
    source = obj.variable.copy(deep=False)
    return with_data(obj, from_array(source, dist=kinds, grid=sizes, backend=backend, **options))


def in_spmd_order(variables) -> list:
    """(name, variable) pairs in an order every process agrees on (by name).

    Collective loops over a Dataset's variables must visit them in one order
    on every process; a Dataset read from a store need not list them in one
    order (zarr lists a group's members concurrently).
    """
    return sorted(variables.items(), key=lambda item: str(item[0]))


def _gathered(var: xr.Variable) -> xr.Variable:
    return var.copy(deep=False, data=var._data.gather())


def gather_all(obj):
    """`obj` with every DistributedArray (data and coordinates) gathered into NumPy."""
    out = obj.copy(deep=False)
    if isinstance(obj, xr.DataArray):
        if isinstance(obj.variable._data, DistributedArray):
            out = with_data(out, obj.variable._data.gather())
        variables = {name: c.variable for name, c in obj.coords.items()}
    else:
        variables = obj.variables
    # Every process must gather in the same order; a store's listing need not give the
    # variables in one order (zarr lists a group's members concurrently), so sort by name.
    for name, var in in_spmd_order(variables):
        if isinstance(var._data, DistributedArray):
            if name in obj.coords:
                out = out.assign_coords({name: _gathered(var)})
            else:
                out[name] = _gathered(var)
    return out


def redistribute_array(obj, layout: Mapping, dist, halo, periodic):
    a = array_of(obj)
    dims = obj.dims
    grid, specs = _split_layout(layout, dist)
    if isinstance(dist, str):
        specs.update(dict.fromkeys(dims, dist))
    check_names([*grid, *specs, *(halo or {}), *(periodic or {})], dims, "redistribute")
    named = set(grid) | set(specs)
    kinds, sizes, halos = [], [], []
    for d, m in zip(dims, a.distribution.maps):
        current = map_halo(m)
        if d in named:
            kind = specs.get(d, "b")
            sizes.append(grid.get(d, m.nprocs))
            if (kind.get("dist", "b") if isinstance(kind, Mapping) else kind) not in ("b", "block"):
                current = (0, 0)  # only block dimensions take a halo
        else:
            kind = _exact_spec(m)
            sizes.append(m.nprocs)
        kinds.append(kind)
        halos.append((halo or {}).get(d, current if any(current) else None))
    options = {}
    if any(h is not None for h in halos):
        options["halo"] = {k: h for k, h in enumerate(halos) if h is not None}
    if periodic:
        for k, d in enumerate(dims):
            if d in periodic:
                spec = kinds[k] if isinstance(kinds[k], dict) else {"dist": kinds[k]}
                kinds[k] = {**spec, "periodic": bool(periodic[d])}
    if np.prod(sizes) != a.backend.nranks:
        raise ValueError(
            f"the grid {dict(zip(dims, sizes))} has {int(np.prod(sizes))} ranks, not the "
            f"backend's {a.backend.nranks}: give every dimension's number of ranks"
        )
    return with_data(obj, a.redistribute(kinds, sizes, **options))


def _coord_take(values: np.ndarray, positions: list, extrapolate: bool) -> np.ndarray:
    """`values` at integer `positions` per axis; positions outside the axis are clipped.

    With `extrapolate` (a 1-D numeric or time coordinate), positions outside
    continue the first and last spacing instead (the coordinates of ghost
    cells beyond a non-periodic edge).
    """
    clipped = [np.clip(p, 0, max(n - 1, 0)) for p, n in zip(positions, values.shape)]
    out = values[np.ix_(*clipped)] if clipped else values
    if not (
        extrapolate and values.ndim == 1 and values.size >= 2 and values.dtype.kind in "iufcmM"
    ):
        return out
    p, n = positions[0], values.size
    out = out.copy()
    before, after = p < 0, p >= n
    out[before] = values[0] + p[before] * (values[1] - values[0])
    out[after] = values[-1] + (p[after] - (n - 1)) * (values[-1] - values[-2])
    return out


def _local_positions(a: DistributedArray, rank: int, padded: bool):
    """(block, global index per axis) of `rank`: with its halo, or its own elements only."""
    if padded:
        return a.local_with_halo(rank), list(a.distribution.global_indices(rank))
    if a.distribution.is_padded:
        inner = a.interior
        return inner.local(rank), list(inner.distribution.global_indices(rank))
    return a.local(rank), list(a.distribution.global_indices(rank))


def local_dataarray(obj, rank, padded):
    a = array_of(obj)
    rank = a._rank(rank)
    block, positions = _local_positions(a, rank, padded)
    where = dict(zip(obj.dims, positions))
    coords = {}
    for name, coord in obj.coords.items():
        var = coord.variable
        if isinstance(var._data, DistributedArray):
            if not all(d in where for d in var.dims) or any(
                var._data.distribution.maps[k] != a.distribution.maps[obj.dims.index(d)]
                for k, d in enumerate(var.dims)
            ):
                raise ValueError(
                    f"coordinate {name!r} is distributed differently from the data; "
                    "redistribute it like the data (or gather it) to take local blocks"
                )
            values = _local_positions(var._data, rank, padded)[0]
        else:
            idx = [where[d] if d in where else np.arange(n) for d, n in zip(var.dims, var.shape)]
            values = _coord_take(var.values, idx, extrapolate=var.dims == (name,))
        coords[name] = xr.Variable(var.dims, values, var.attrs)
    return xr.DataArray(block, dims=obj.dims, coords=coords, attrs=obj.attrs, name=obj.name)
