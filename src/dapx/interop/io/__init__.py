"""Files in and out in parallel: every rank reads and writes only its own block.

`from_array` reads any NumPy-indexable object piecewise; `zarr` and `hdf5`
read and write single arrays; the xarray side (Datasets to zarr and netCDF,
the chunk manager) is in `dapx.interop.xarray.io` and
`dapx.interop.xarray.chunkmanager`.
"""

from __future__ import annotations

from .hdf5 import from_hdf5, parallel_hdf5, to_hdf5
from .reading import from_array, read_block
from .sources import FileSource
from .writing import chunk_aligned, in_turn, owned_regions
from .zarr import from_zarr, open_zarr, to_zarr

__all__ = [
    "FileSource",
    "chunk_aligned",
    "from_array",
    "from_hdf5",
    "from_zarr",
    "in_turn",
    "open_zarr",
    "owned_regions",
    "parallel_hdf5",
    "read_block",
    "to_hdf5",
    "to_zarr",
]
