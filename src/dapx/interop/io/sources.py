"""Array sources that can travel to other processes: files reopened by name.

The dask backend runs each rank on a worker, so `from_array` ships its
source there. zarr arrays and xarray's lazily loaded variables pickle as
their location; h5py Datasets and netCDF4 Variables do not (they are open
file handles), so `shippable` replaces them with a `FileSource` that reopens
the file read-only on the worker at its first read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["FileSource", "shippable"]


class FileSource:
    """A variable in an HDF5 or netCDF file, opened read-only where it is first read.

    Parameters
    ----------
    path : str
        The file.
    name : str
        The dataset (HDF5) or variable (netCDF) path inside it.
    library : {"h5py", "netCDF4"}
        Which library opens it.
    shape, dtype
        As the variable's, so that no file is opened to learn them.

    Examples
    --------
    >>> import pickle, numpy as np
    >>> s = FileSource("data.h5", "/x", "h5py", (4, 3), np.float32)
    >>> pickle.loads(pickle.dumps(s)).shape
    (4, 3)
    """

    def __init__(self, path: str, name: str, library: str, shape, dtype) -> None:
        if library not in ("h5py", "netCDF4"):
            raise ValueError(f"library must be 'h5py' or 'netCDF4', got {library!r}")
        self.path, self.name, self.library = str(path), name, library
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self._file = self._variable = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _open(self):
        if self._variable is None:
            if self.library == "h5py":
                import h5py

                self._file = h5py.File(self.path, "r")
                self._variable = self._file[self.name]
            else:
                import netCDF4

                self._file = netCDF4.Dataset(self.path, "r")
                self._variable = self._file[self.name]
        return self._variable

    def __getitem__(self, key) -> np.ndarray:
        return np.asarray(self._open()[key])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file = self._variable = None

    def __getstate__(self) -> dict:
        return {k: v for k, v in vars(self).items() if k not in ("_file", "_variable")}

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state, _file=None, _variable=None)

    def __repr__(self) -> str:
        return f"FileSource({self.path!r}, {self.name!r}, {self.library!r})"


def shippable(obj: Any) -> Any:
    """`obj`, or a `FileSource` naming it when it is an open h5py or netCDF4 variable."""
    module = type(obj).__module__
    if module.startswith("h5py"):
        return FileSource(obj.file.filename, obj.name, "h5py", obj.shape, obj.dtype)
    if module.startswith("netCDF4"):
        path = obj.group().filepath()
        name = obj.name if obj.group().path == "/" else f"{obj.group().path}/{obj.name}"
        return FileSource(path, name, "netCDF4", obj.shape, obj.dtype)
    return obj
