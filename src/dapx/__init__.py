"""dapx: distributed arrays that behave like NumPy arrays, built on the DAP.

The public namespace is assembled block by block below; every name is listed
in ``__all__``. The sub-packages are layers, each importing only those below
it (see ARCHITECTURE.md): `layout` (DAP metadata), `exchange` (plans and their
execution), `backends` (where blocks live), `core` (the array), `functions`
(NumPy's functions), `interop` (xarray, dask, ``__partitioned__``).
"""

from __future__ import annotations

import sys

from ._version import __version__

__all__ = ["__version__"]

from .errors import DAPError

__all__ += ["DAPError"]

from .layout.grid import ProcessGrid, default_grid, dims_create

__all__ += ["ProcessGrid", "default_grid", "dims_create"]

from .layout.maps import BlockMap, CyclicMap, Map, UnstructuredMap

__all__ += ["BlockMap", "CyclicMap", "Map", "UnstructuredMap"]

from .layout.distribution import Distribution

__all__ += ["Distribution"]

from .layout import protocol

__all__ += ["protocol"]

from .errors import GatherWarning, RankError

__all__ += ["GatherWarning", "RankError"]

from .config import config

__all__ += ["config"]

from .backends import (
    Backend,
    dask_backend,
    default_backend,
    get_backend,
    set_backend,
    simulated,
    use_backend,
)
from .backends import (
    mpi_backend as mpi,
)

__all__ += [
    "Backend",
    "dask_backend",
    "default_backend",
    "get_backend",
    "mpi",
    "set_backend",
    "simulated",
    "use_backend",
]

from .core import remote as _remote  # noqa: F401 (registers the dask client's array handles)
from .core.array import DistributedArray

__all__ += ["DistributedArray"]

from .core.creation import (
    arange,
    asarray,
    empty,
    empty_like,
    from_distarray,
    from_local,
    fromfunction,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)

__all__ += [
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "from_distarray",
    "from_local",
    "fromfunction",
    "full",
    "full_like",
    "linspace",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]

from . import functions as _functions  # noqa: F401 (registers the np.* implementations)
from . import testing
from .functions import random

__all__ += ["random", "testing"]

from .interop.dask_array import from_dask
from .interop.partitioned import from_partitioned

__all__ += ["from_dask", "from_partitioned"]

from .functions.overlap import map_overlap

__all__ += ["map_overlap"]

from .interop import array_api  # noqa: F401 (x.__array_namespace__())
from .interop.io import from_array, from_hdf5, from_zarr, open_zarr

__all__ += ["from_array", "from_hdf5", "from_zarr", "open_zarr"]

# The public modules keep the import paths they had before the layers were sub-packages.
sys.modules[f"{__name__}.protocol"] = protocol
sys.modules[f"{__name__}.random"] = random

from .interop.xarray.hook import register_accessor_with_xarray as _register_xarray_accessor

_register_xarray_accessor()  # the .dap accessor, without importing xarray (see interop.xarray.hook)
